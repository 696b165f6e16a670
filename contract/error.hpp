// Errors as typed values: one error type with a stable code and a message that
// names what was wrong and where, and Result<T>, the return type of every
// fallible NeatTensor operation (std::expected in spirit; C++20 has none).
// An error may carry its parts as data (the place, what was wrong, the fixes
// in the C++ and the Python API's words, the problems it collects); its
// message is composed from them, and the bindings read them, never the prose.
//
// Ownership: Error and Result are plain values. Threading: no shared state.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace neat {

/// Stable error codes. Their numeric values never change.
enum class ErrorCode : std::uint8_t {
  InvalidArgument = 1,     ///< the caller passed something malformed
  OutOfRange = 2,          ///< an index, extent or byte range lies outside what exists
  FailedPrecondition = 3,  ///< well-formed, but not allowed in the current state
  Unimplemented = 4,       ///< a valid request this build cannot serve
  ResourceExhausted = 5,   ///< memory or another resource could not be obtained
  Internal = 6,            ///< a NeatTensor bug: please report it
  Unavailable = 7,  ///< a backend or device this machine does not have (no /dev/dma_heap, no EGL)
  Cancelled = 8,    ///< stopped on request (a signal, a stop flag) before it completed
};

/// Stable lowercase name of a code, e.g. "invalid_argument".
std::string_view to_string(ErrorCode code) noexcept;

/// What would fix an error, as data: one step in the C++ API's words and, where
/// Python spells it differently, in the Python API's words.
struct Fix {
  std::string cpp;     ///< e.g. "call std::move(t).make_writable() first"
  std::string python;  ///< e.g. "call t.make_writable() first"; empty: the same words

  std::string_view in(bool python_words) const noexcept {
    return python_words && !python.empty() ? std::string_view(python) : std::string_view(cpp);
  }
};

/// Whose words an error's text is rendered in.
enum class Spelling : std::uint8_t { Cpp, Python };

/// A typed error. The message says what was wrong, where, and when it helps,
/// what would fix it.
class Error {
 public:
  /// An error whose whole text is `message` (no place or fix as data).
  Error(ErrorCode code, std::string message);
  /// An error from its parts: `where` (a stage, an edge, a call; empty when
  /// `what` says it), `what` was wrong, and the `fixes`, best first. The
  /// message reads "<where>: <what> Fix: <first>. Or <second>."
  Error(ErrorCode code, std::string where, std::string what, std::vector<Fix> fixes);
  /// An error that collects several problems (a graph's build): `headline`,
  /// then one line per cause.
  static Error collect(ErrorCode code, std::string headline, std::vector<Error> causes);

  ErrorCode code() const noexcept { return code_; }
  /// The whole text, in the C++ API's words.
  const std::string& message() const noexcept { return message_; }
  /// The whole text in `spelling`'s words (the fixes as that API calls them).
  std::string message(Spelling spelling) const;
  /// The problem alone, without place or fixes (the message when it has no parts).
  std::string_view what() const noexcept;
  /// The place ("stage 'pre'", "edge 'src->pre'"), or empty.
  std::string_view where() const noexcept;
  /// This error's own fixes, best first.
  std::span<const Fix> fixes() const noexcept;
  /// The problems a collecting error holds (empty for others).
  std::span<const Error> causes() const noexcept;
  /// The first fix of this error or, failing that, of its first cause that has one.
  const Fix* first_fix() const noexcept;

  /// "<code>: <message>", for logs.
  std::string to_string() const;

  /// Returns a copy placed inside `context` ("context: message"); the context
  /// joins the place of an error built from parts.
  Error with_context(std::string_view context) const;
  /// Returns a copy with `fix` added after the fixes already there.
  Error with_fix(Fix fix) const;

 private:
  struct Parts;
  Error(ErrorCode code, std::shared_ptr<const Parts> parts);

  ErrorCode code_;
  std::string message_;
  std::shared_ptr<const Parts> parts_;  // null: the message is the whole error
};

/// Thrown only by Result::value() on a Result that holds an error (a caller bug
/// to check). NeatTensor itself never throws across its API.
class BadResultAccess : public std::exception {
 public:
  explicit BadResultAccess(Error error);
  const char* what() const noexcept override { return what_.c_str(); }
  const Error& error() const noexcept { return error_; }

 private:
  Error error_;
  std::string what_;
};

/// Either a T or an Error. Check with ok() / operator bool before value().
template <class T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Error>, "Result<Error> is not meaningful");

 public:
  Result(T&& value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(const T& value) : v_(std::in_place_index<0>, value) {}        // NOLINT
  Result(Error&& error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT
  Result(const Error& error) : v_(std::in_place_index<1>, error) {}        // NOLINT
  /// Converting construction (e.g. Result<std::shared_ptr<Base>> from shared_ptr<Derived>).
  template <class U, class = std::enable_if_t<!std::is_same_v<std::decay_t<U>, T> &&
                                              !std::is_same_v<std::decay_t<U>, Error> &&
                                              std::is_constructible_v<T, U&&>>>
  Result(U&& value) : v_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT

  /// Replaces the value with an error.
  Result& operator=(Error&& error) {
    v_.template emplace<1>(std::move(error));
    return *this;
  }

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & {
    check();
    return *std::get_if<0>(&v_);
  }
  const T& value() const& {
    check();
    return *std::get_if<0>(&v_);
  }
  T&& value() && {
    check();
    return std::move(*std::get_if<0>(&v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  /// The error; only meaningful when !ok().
  const Error& error() const& { return *std::get_if<1>(&v_); }
  Error&& error() && { return std::move(*std::get_if<1>(&v_)); }

 private:
  void check() const {
    if (!ok()) throw BadResultAccess(*std::get_if<1>(&v_));
  }
  std::variant<T, Error> v_;
};

/// Result of an operation with no value. Success is a null pointer: cheap to
/// create, pass and destroy on hot paths; the error lives on the heap.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() noexcept = default;
  Result(Error error) : error_(std::make_unique<Error>(std::move(error))) {}  // NOLINT
  Result(Result&&) noexcept = default;
  Result& operator=(Result&&) noexcept = default;
  Result(const Result& o) : error_(o.error_ ? std::make_unique<Error>(*o.error_) : nullptr) {}
  Result& operator=(const Result& o) {
    error_ = o.error_ ? std::make_unique<Error>(*o.error_) : nullptr;
    return *this;
  }

  bool ok() const noexcept { return error_ == nullptr; }
  explicit operator bool() const noexcept { return ok(); }
  void value() const {
    if (error_) throw BadResultAccess(*error_);
  }
  /// The error; only meaningful when !ok().
  const Error& error() const& { return error_ ? *error_ : no_error(); }
  Error error() && { return error_ ? std::move(*error_) : no_error(); }

 private:
  static const Error& no_error();
  std::unique_ptr<Error> error_;
};

using Status = Result<void>;

/// Convenience constructors.
Error invalid_argument(std::string message);
Error out_of_range(std::string message);
Error failed_precondition(std::string message);
Error unimplemented(std::string message);
Error resource_exhausted(std::string message);
Error internal_error(std::string message);
Error unavailable(std::string message);
Error cancelled_error(std::string message);
/// A failed system call: "<what>: <strerror> (ENAME, errno N)", typed by errno
/// (ENOMEM/EMFILE/ENFILE/ENOSPC/EAGAIN -> ResourceExhausted; ENOENT/ENODEV/
/// ENXIO/EACCES/EPERM/ENOSYS -> Unavailable; EBADF/EINVAL -> InvalidArgument;
/// ENOTTY/EOPNOTSUPP -> Unimplemented; others -> FailedPrecondition).
Error os_error(std::string_view what, int errnum);

}  // namespace neat

/// Propagates an error from a Status-returning expression.
#define NEAT_RETURN_IF_ERROR(expr)                        \
  do {                                                    \
    if (auto neat_status_ = (expr); !neat_status_.ok()) { \
      return std::move(neat_status_).error();             \
    }                                                     \
  } while (false)

#define NEAT_CONCAT_INNER_(a, b) a##b
#define NEAT_CONCAT_(a, b) NEAT_CONCAT_INNER_(a, b)
/// `NEAT_ASSIGN_OR_RETURN(auto x, make_x());` assigns the value or returns the error.
#define NEAT_ASSIGN_OR_RETURN(lhs, expr) \
  NEAT_ASSIGN_OR_RETURN_IMPL_(NEAT_CONCAT_(neat_result_, __LINE__), lhs, expr)
#define NEAT_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return std::move(tmp).error();     \
  lhs = std::move(tmp).value()

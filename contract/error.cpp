#include "neat/contract/error.hpp"

#include <cerrno>
#include <cstring>

namespace neat {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::InvalidArgument:
      return "invalid_argument";
    case ErrorCode::OutOfRange:
      return "out_of_range";
    case ErrorCode::FailedPrecondition:
      return "failed_precondition";
    case ErrorCode::Unimplemented:
      return "unimplemented";
    case ErrorCode::ResourceExhausted:
      return "resource_exhausted";
    case ErrorCode::Internal:
      return "internal";
    case ErrorCode::Unavailable:
      return "unavailable";
    case ErrorCode::Cancelled:
      return "cancelled";
  }
  return "unknown";
}

struct Error::Parts {
  std::string where;
  std::string what;
  std::vector<Fix> fixes;
  std::vector<Error> causes;  // a collecting error: what is its headline

  std::string compose(Spelling spelling) const {
    const bool python = spelling == Spelling::Python;
    std::string out;
    if (!where.empty()) {
      out += where;
      out += ": ";
    }
    out += what;
    // A problem told over several lines (a list) gets its fixes on lines of their own.
    const bool lines = what.find('\n') != std::string::npos;
    for (std::size_t i = 0; i < fixes.size(); ++i) {
      if (i == 0 && !lines && !out.empty() && out.back() != '.' && out.back() != ':') out += '.';
      if (lines) out += "\n   ";
      out += i == 0 ? " Fix: " : " Or ";
      out += fixes[i].in(python);
      out += '.';
    }
    for (const Error& cause : causes) {
      out += "\n  - ";
      out += cause.message(spelling);
    }
    return out;
  }
};

Error::Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

Error::Error(ErrorCode code, std::string where, std::string what, std::vector<Fix> fixes)
    : Error(code, std::make_shared<const Parts>(
                      Parts{std::move(where), std::move(what), std::move(fixes), {}})) {}

Error::Error(ErrorCode code, std::shared_ptr<const Parts> parts)
    : code_(code), message_(parts->compose(Spelling::Cpp)), parts_(std::move(parts)) {}

Error Error::collect(ErrorCode code, std::string headline, std::vector<Error> causes) {
  return Error(
      code, std::make_shared<const Parts>(Parts{{}, std::move(headline), {}, std::move(causes)}));
}

std::string Error::message(Spelling spelling) const {
  return parts_ != nullptr && spelling != Spelling::Cpp ? parts_->compose(spelling) : message_;
}

std::string_view Error::what() const noexcept {
  return parts_ != nullptr ? std::string_view(parts_->what) : std::string_view(message_);
}

std::string_view Error::where() const noexcept {
  return parts_ != nullptr ? std::string_view(parts_->where) : std::string_view();
}

std::span<const Fix> Error::fixes() const noexcept {
  return parts_ != nullptr ? std::span<const Fix>(parts_->fixes) : std::span<const Fix>();
}

std::span<const Error> Error::causes() const noexcept {
  return parts_ != nullptr ? std::span<const Error>(parts_->causes) : std::span<const Error>();
}

const Fix* Error::first_fix() const noexcept {
  if (!fixes().empty()) return &fixes().front();
  for (const Error& cause : causes()) {
    if (const Fix* f = cause.first_fix(); f != nullptr) return f;
  }
  return nullptr;
}

std::string Error::to_string() const {
  std::string out(neat::to_string(code_));
  out += ": ";
  out += message_;
  return out;
}

Error Error::with_context(std::string_view context) const {
  if (parts_ == nullptr) {
    std::string m(context);
    m += ": ";
    m += message_;
    return Error(code_, std::move(m));
  }
  Parts p = *parts_;
  if (p.where.empty()) {
    p.where = context;
  } else {
    p.where = std::string(context) + ": " + p.where;
  }
  return Error(code_, std::make_shared<const Parts>(std::move(p)));
}

Error Error::with_fix(Fix fix) const {
  Parts p = parts_ != nullptr ? *parts_ : Parts{{}, message_, {}, {}};
  p.fixes.push_back(std::move(fix));
  return Error(code_, std::make_shared<const Parts>(std::move(p)));
}

BadResultAccess::BadResultAccess(Error error)
    : error_(std::move(error)), what_("neat::Result holds an error: " + error_.to_string()) {}

const Error& Result<void>::no_error() {
  static const Error e(ErrorCode::Internal, "no error: the operation succeeded");
  return e;
}

Error invalid_argument(std::string message) {
  return Error(ErrorCode::InvalidArgument, std::move(message));
}
Error out_of_range(std::string message) {
  return Error(ErrorCode::OutOfRange, std::move(message));
}
Error failed_precondition(std::string message) {
  return Error(ErrorCode::FailedPrecondition, std::move(message));
}
Error unimplemented(std::string message) {
  return Error(ErrorCode::Unimplemented, std::move(message));
}
Error resource_exhausted(std::string message) {
  return Error(ErrorCode::ResourceExhausted, std::move(message));
}
Error internal_error(std::string message) {
  return Error(ErrorCode::Internal, std::move(message));
}
Error unavailable(std::string message) {
  return Error(ErrorCode::Unavailable, std::move(message));
}
Error cancelled_error(std::string message) {
  return Error(ErrorCode::Cancelled, std::move(message));
}

Error os_error(std::string_view what, int errnum) {
  std::string m(what);
  m += ": ";
  char buf[128];
  // GNU strerror_r returns the message (possibly not in buf).
  m += ::strerror_r(errnum, buf, sizeof buf);
  m += " (";
  if (const char* name = ::strerrorname_np(errnum); name != nullptr) {
    m += name;
    m += ", ";
  }
  m += "errno ";
  m += std::to_string(errnum);
  m += ')';
  switch (errnum) {
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case ENOSPC:
    case EAGAIN:
      return Error(ErrorCode::ResourceExhausted, std::move(m));
    case ENOENT:
    case ENODEV:
    case ENXIO:
    case EACCES:
    case EPERM:
    case ENOSYS:
      return Error(ErrorCode::Unavailable, std::move(m));
    case EBADF:
    case EINVAL:
      return Error(ErrorCode::InvalidArgument, std::move(m));
    case ENOTTY:
    case EOPNOTSUPP:
      return Error(ErrorCode::Unimplemented, std::move(m));
    default:
      return Error(ErrorCode::FailedPrecondition, std::move(m));
  }
}

}  // namespace neat

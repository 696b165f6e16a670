// Dims: a fixed-capacity list of int64 extents or byte strides, held inline so
// that building or viewing a tensor never allocates for its metadata.
// DimsRef: a borrowed (pointer, count) parameter type that accepts braces,
// std::vector, std::span and Dims, so factories can report "rank too high"
// as an error instead of failing to compile.
//
// Threading: plain values.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace neat {

/// Highest tensor rank. Every rank up to this is stored inline (no heap).
inline constexpr int kMaxRank = 8;

/// Borrowed list of int64 for the duration of a call. Use it only as a
/// parameter type: a DimsRef built from braces must not outlive the call.
class DimsRef {
 public:
#if defined(__GNUC__) && !defined(__clang__)  // GCC's warning; clang has no such group
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  DimsRef(std::initializer_list<std::int64_t> v) : p_(v.begin()), n_(v.size()) {}  // NOLINT
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  DimsRef(std::span<const std::int64_t> v) : p_(v.data()), n_(v.size()) {}     // NOLINT
  DimsRef(const std::vector<std::int64_t>& v) : p_(v.data()), n_(v.size()) {}  // NOLINT
  DimsRef(const std::int64_t* p, std::size_t n) : p_(p), n_(n) {}

  std::size_t size() const noexcept {
    return n_;
  }
  const std::int64_t* begin() const noexcept {
    return p_;
  }
  const std::int64_t* end() const noexcept {
    return p_ + n_;
  }
  std::int64_t operator[](std::size_t i) const noexcept {
    return p_[i];
  }

 private:
  const std::int64_t* p_;
  std::size_t n_;
};

/// Up to kMaxRank int64 values, inline. Construction from more values is a
/// caller bug: factories check DimsRef::size() first and return an error.
class Dims {
 public:
  constexpr Dims() = default;
  Dims(std::initializer_list<std::int64_t> v) { assign(v.begin(), v.size()); }
  explicit Dims(DimsRef v) { assign(v.begin(), v.size()); }

  int size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  std::int64_t operator[](int i) const noexcept { return v_[static_cast<std::size_t>(i)]; }
  std::int64_t& operator[](int i) noexcept { return v_[static_cast<std::size_t>(i)]; }
  const std::int64_t* begin() const noexcept { return v_.data(); }
  const std::int64_t* end() const noexcept { return v_.data() + n_; }
  const std::int64_t* data() const noexcept { return v_.data(); }
  operator DimsRef() const noexcept { return DimsRef(v_.data(), static_cast<std::size_t>(n_)); }
  std::vector<std::int64_t> to_vector() const { return {begin(), end()}; }

  /// Replaces the contents (at most kMaxRank values are kept).
  void assign(DimsRef v) noexcept { assign(v.begin(), v.size()); }

  /// Appends when there is room; returns false (and changes nothing) when full.
  bool push_back(std::int64_t x) noexcept {
    if (n_ >= kMaxRank) return false;
    v_[static_cast<std::size_t>(n_++)] = x;
    return true;
  }
  void insert(int pos, std::int64_t x) noexcept {
    if (n_ >= kMaxRank) return;
    for (int i = n_; i > pos; --i)
      v_[static_cast<std::size_t>(i)] = v_[static_cast<std::size_t>(i - 1)];
    v_[static_cast<std::size_t>(pos)] = x;
    ++n_;
  }
  void erase(int pos) noexcept {
    for (int i = pos; i + 1 < n_; ++i)
      v_[static_cast<std::size_t>(i)] = v_[static_cast<std::size_t>(i + 1)];
    --n_;
  }
  void resize(int n) noexcept { n_ = static_cast<std::uint8_t>(std::clamp(n, 0, kMaxRank)); }

  friend bool operator==(const Dims& a, const Dims& b) noexcept {
    return a.n_ == b.n_ && std::equal(a.begin(), a.end(), b.begin());
  }

  /// "[2, 3, 4]"
  std::string to_string() const;

 private:
  void assign(const std::int64_t* p, std::size_t n) noexcept {
    n_ = static_cast<std::uint8_t>(std::min<std::size_t>(n, kMaxRank));
    std::copy_n(p, n_, v_.begin());
  }
  std::array<std::int64_t, kMaxRank> v_{};
  std::uint8_t n_ = 0;
};

/// "[2, 3, 4]" for any list.
std::string dims_to_string(DimsRef v);

}  // namespace neat

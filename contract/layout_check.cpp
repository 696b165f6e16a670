#include "neat/contract/layout_check.hpp"

#include <string>

namespace neat {

namespace {
// "what: " (or nothing for an empty name: the caller adds its own context).
std::string lead(std::string_view what) {
  if (what.empty()) return {};
  std::string s(what);
  s += ": ";
  return s;
}
}  // namespace

Status check_shape(DimsRef shape, std::string_view what) {
  if (shape.size() > static_cast<std::size_t>(kMaxRank)) {
    return invalid_argument(lead(what) + "rank " + std::to_string(shape.size()) +
                            " is above the maximum rank " + std::to_string(kMaxRank) + " (shape " +
                            dims_to_string(shape) + ")");
  }
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return invalid_argument(lead(what) + "shape[" + std::to_string(i) +
                              "] = " + std::to_string(shape[i]) + " is negative (shape " +
                              dims_to_string(shape) + "); extents must be >= 0");
    }
  }
  return {};
}

Result<ByteSpan> addressed_bytes(DType dtype, DimsRef shape, DimsRef strides,
                                 std::int64_t byte_offset, std::string_view what) {
  NEAT_RETURN_IF_ERROR(check_shape(shape, what));
  if (strides.size() != shape.size()) {
    return invalid_argument(lead(what) + "" + std::to_string(strides.size()) +
                            " strides given for rank " + std::to_string(shape.size()) + " (shape " +
                            dims_to_string(shape) + ", strides " + dims_to_string(strides) + ")");
  }
  for (std::int64_t e : shape) {
    if (e == 0) return ByteSpan{byte_offset, byte_offset, true};
  }
  std::int64_t lo = byte_offset;
  std::int64_t hi = byte_offset;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    std::int64_t reach = 0;
    if (!checked_mul(shape[i] - 1, strides[i], &reach)) {
      return out_of_range(lead(what) + "(shape[" + std::to_string(i) + "] - 1) x strides[" +
                          std::to_string(i) + "] = " + std::to_string(shape[i] - 1) + " x " +
                          std::to_string(strides[i]) + " overflows int64");
    }
    std::int64_t* side = reach < 0 ? &lo : &hi;
    if (!checked_add(*side, reach, side)) {
      return out_of_range(lead(what) + "the byte range of shape " + dims_to_string(shape) +
                          " with strides " + dims_to_string(strides) + " and offset " +
                          std::to_string(byte_offset) + " overflows int64");
    }
  }
  if (!checked_add(hi, item_size(dtype), &hi)) {
    return out_of_range(lead(what) + "the last addressed byte overflows int64 (offset " +
                        std::to_string(byte_offset) + ", strides " + dims_to_string(strides) + ")");
  }
  return ByteSpan{lo, hi, false};
}

namespace {

// The hot path of validation: true when the layout is well-formed and inside
// [0, storage_bytes). Any doubt (bad rank, negative extent, overflow, out of
// bounds) returns false and the caller rebuilds the precise error.
inline bool layout_fits(DType dtype, DimsRef shape, DimsRef strides, std::int64_t byte_offset,
                        std::int64_t storage_bytes) noexcept {
  const std::size_t rank = shape.size();
  if (rank > static_cast<std::size_t>(kMaxRank) || strides.size() != rank) return false;
  bool empty = false;
  for (std::size_t i = 0; i < rank; ++i) {
    if (shape[i] < 0) return false;
    empty = empty || shape[i] == 0;
  }
  if (empty) return byte_offset >= 0 && byte_offset <= storage_bytes;
  std::int64_t lo = byte_offset, hi = byte_offset;
  for (std::size_t i = 0; i < rank; ++i) {
    std::int64_t reach = 0;
    if (__builtin_mul_overflow(shape[i] - 1, strides[i], &reach)) return false;
    if (__builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi)) return false;
  }
  if (__builtin_add_overflow(hi, item_size(dtype), &hi)) return false;
  return lo >= 0 && hi <= storage_bytes;
}

}  // namespace

Status validate_layout(DType dtype, DimsRef shape, DimsRef strides, std::int64_t byte_offset,
                       std::int64_t storage_bytes, std::string_view what) {
  if (layout_fits(dtype, shape, strides, byte_offset, storage_bytes)) return {};
  NEAT_ASSIGN_OR_RETURN(ByteSpan span, addressed_bytes(dtype, shape, strides, byte_offset, what));
  if (span.empty) {
    if (byte_offset < 0 || byte_offset > storage_bytes) {
      return out_of_range(lead(what) + "byte_offset " + std::to_string(byte_offset) +
                          " lies outside the storage of " + std::to_string(storage_bytes) +
                          " bytes");
    }
    return {};
  }
  if (span.lo < 0) {
    return out_of_range(lead(what) + "shape " + dims_to_string(shape) + " with strides " +
                        dims_to_string(strides) + " and byte_offset " +
                        std::to_string(byte_offset) + " reaches byte " + std::to_string(span.lo) +
                        ", before the start of the storage");
  }
  if (span.hi > storage_bytes) {
    return out_of_range(lead(what) + "shape " + dims_to_string(shape) + " of " +
                        std::string(to_string(dtype)) + " with strides " + dims_to_string(strides) +
                        " and byte_offset " + std::to_string(byte_offset) +
                        " addresses bytes up to " + std::to_string(span.hi) +
                        " but the storage holds " + std::to_string(storage_bytes) + " bytes");
  }
  return {};
}

Result<Dims> contiguous_strides(DType dtype, DimsRef shape) {
  NEAT_RETURN_IF_ERROR(check_shape(shape, "tensor"));
  Dims strides(shape);
  std::int64_t s = item_size(dtype);
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = s;
    const std::int64_t e = shape[static_cast<std::size_t>(i)];
    if (!checked_mul(s, e == 0 ? 1 : e, &s)) {
      return out_of_range("shape " + dims_to_string(shape) + " of " +
                          std::string(to_string(dtype)) + " needs more than 2^63 bytes");
    }
  }
  return strides;
}

bool is_contiguous(DType dtype, DimsRef shape, DimsRef strides) noexcept {
  // One pass from the innermost dim; a zero extent anywhere makes the tensor
  // empty and therefore trivially packed, whatever the strides say.
  std::int64_t expected = item_size(dtype);
  bool packed = true;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    const auto u = static_cast<std::size_t>(i);
    if (shape[u] == 0) return true;
    if (shape[u] == 1 || !packed) continue;
    if (strides[u] != expected || !checked_mul(expected, shape[u], &expected)) packed = false;
  }
  return packed;
}

Result<std::int64_t> element_count(DimsRef shape) {
  std::int64_t n = 1;
  for (std::int64_t e : shape) {
    if (!checked_mul(n, e, &n)) {
      return out_of_range("shape " + dims_to_string(shape) + " has more than 2^63 elements");
    }
  }
  return n;
}

}  // namespace neat

// Layout validation in one place: dtype x shape x byte strides x byte offset
// against a storage size, with every product and sum overflow-checked.
// Every NeatTensor factory and view goes through these functions.
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "neat/contract/dims.hpp"
#include "neat/contract/dtype.hpp"
#include "neat/contract/error.hpp"

namespace neat {

/// The bytes a layout addresses, relative to the storage base: [lo, hi).
/// empty is true when some extent is 0 (then lo == hi == offset).
struct ByteSpan {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  bool empty = false;
};

/// Checks rank <= kMaxRank and extents >= 0; `what` names the tensor in messages.
Status check_shape(DimsRef shape, std::string_view what);

/// The byte span a layout addresses; OutOfRange when any intermediate
/// (extent x stride, their sums, + offset, + item size) overflows int64.
Result<ByteSpan> addressed_bytes(DType dtype, DimsRef shape, DimsRef strides,
                                 std::int64_t byte_offset, std::string_view what);

/// Full validation of a dense layout over a storage of `storage_bytes`:
/// shape, matching stride count, overflow, and every addressed byte inside
/// [0, storage_bytes). Zero-size tensors are valid when their offset lies in
/// [0, storage_bytes].
Status validate_layout(DType dtype, DimsRef shape, DimsRef strides, std::int64_t byte_offset,
                       std::int64_t storage_bytes, std::string_view what);

/// Row-major byte strides for `shape`; OutOfRange on overflow.
Result<Dims> contiguous_strides(DType dtype, DimsRef shape);

/// True when the layout is row-major and packed (extent-1 dims ignored).
bool is_contiguous(DType dtype, DimsRef shape, DimsRef strides) noexcept;

/// Number of elements; OutOfRange on overflow.
Result<std::int64_t> element_count(DimsRef shape);

/// Checked arithmetic helpers (false on overflow).
inline bool checked_mul(std::int64_t a, std::int64_t b, std::int64_t* out) noexcept {
  return !__builtin_mul_overflow(a, b, out);
}
inline bool checked_add(std::int64_t a, std::int64_t b, std::int64_t* out) noexcept {
  return !__builtin_add_overflow(a, b, out);
}

}  // namespace neat

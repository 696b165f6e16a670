// dtype conversion: convert_dtype() between U8, I8, U16, I16, U32, I32, I64,
// F16, BF16, F32, F64 and Bool, from any strides into a new contiguous
// tensor, through the copy gate (explicit convert, reason dtype).
//
// Rounding and saturation (documented contract, tested):
//  * integer -> integer: saturates to the target's range.
//  * float -> integer: rounds half to even, then saturates; NaN -> 0.
//  * -> F32 / F64: IEEE conversion (round to nearest even).
//  * -> F16 / BF16: round to nearest even, computed exactly from the source
//    value (no double rounding through F32); overflow -> +-infinity; NaN
//    stays NaN (quiet); values below half the smallest subnormal -> +-0.
//  * -> Bool: value != 0 (NaN is nonzero: true); Bool -> numbers: 0 or 1.
//
// Threading: pure functions; convert_dtype calls are independent.
#pragma once

#include <source_location>

#include "neat/contract/dtype.hpp"
#include "neat/contract/neat_tensor.hpp"
#include "neat/kernels/kernel.hpp"

namespace neat {

/// A contiguous tensor of `to` holding `src`'s values (same shape). When
/// src is already `to`, returns src itself (no copy, no event). The image
/// spec is kept only for U8 -> U8 (i.e. never changed).
Result<NeatTensor> convert_dtype(const NeatTensor& src, DType to, ConversionOptions options = {},
                                 std::source_location where = std::source_location::current());

/// Scalar conversions with the rounding above.
Half to_half(float v) noexcept;
Half to_half(double v) noexcept;
BFloat16 to_bfloat16(float v) noexcept;
BFloat16 to_bfloat16(double v) noexcept;
float to_float(Half v) noexcept;
float to_float(BFloat16 v) noexcept;

/// The exact reference: `v` rounded to nearest even into a binary format with
/// `mantissa_bits` stored mantissa bits and `exponent_bits` exponent bits
/// (F16: 10, 5; BF16: 7, 8), returned as its bit pattern.
std::uint16_t round_to_small_float(long double v, int mantissa_bits, int exponent_bits) noexcept;

}  // namespace neat

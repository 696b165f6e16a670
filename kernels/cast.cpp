#include "neat/kernels/cast.hpp"

#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

namespace neat {

// ---- scalar conversions ---------------------------------------------------------

std::uint16_t round_to_small_float(long double v, int mantissa_bits, int exponent_bits) noexcept {
  const int m = mantissa_bits;
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const int emin = 1 - bias;
  const std::uint32_t exp_ones = (1u << exponent_bits) - 1;
  const std::uint32_t sign = std::signbit(v) ? 1u << (m + exponent_bits) : 0u;
  if (std::isnan(v)) return static_cast<std::uint16_t>(sign | (exp_ones << m) | (1u << (m - 1)));
  const long double a = std::fabs(v);
  if (std::isinf(a)) return static_cast<std::uint16_t>(sign | (exp_ones << m));
  if (a < std::ldexp(1.0L, emin)) {
    // Subnormal range: count quanta of 2^(emin - m); 2^m quanta is the smallest normal.
    const long double q = std::nearbyint(std::ldexp(a, m - emin));
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(q));
  }
  int ex = 0;
  const long double f = std::frexp(a, &ex);  // a = f * 2^ex, f in [0.5, 1)
  int e = ex - 1;
  long double q = std::nearbyint(std::ldexp(f, m + 1));  // in [2^m, 2^(m+1)]
  if (q >= std::ldexp(1.0L, m + 1)) {
    q = std::ldexp(1.0L, m);
    ++e;
  }
  if (e > bias) return static_cast<std::uint16_t>(sign | (exp_ones << m));  // overflow
  const auto mant = static_cast<std::uint32_t>(q) - (1u << m);
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(e + bias) << m) | mant);
}

namespace {

inline std::uint32_t bits_of(float f) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float float_of(std::uint32_t u) noexcept {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

// Float -> half, round to nearest even, with integer arithmetic (F. Giesen's
// well-known method); tested against round_to_small_float.
Half to_half(float v) noexcept {
  std::uint32_t x = bits_of(v);
  const std::uint32_t sign = x & 0x80000000u;
  x ^= sign;
  std::uint32_t o;
  if (x >= 0x47800000u) {  // >= 65536, infinity or NaN
    o = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (x < 0x38800000u) {  // below the smallest normal half: let an FP add round it
    const float r = float_of(x) + float_of(0x3f000000u);
    o = bits_of(r) - 0x3f000000u;
  } else {
    const std::uint32_t odd = (x >> 13) & 1u;
    x += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu;
    x += odd;
    o = x >> 13;
  }
  return Half{static_cast<std::uint16_t>(o | (sign >> 16))};
}

Half to_half(double v) noexcept {
  return Half{round_to_small_float(v, 10, 5)};
}

BFloat16 to_bfloat16(float v) noexcept {
  std::uint32_t x = bits_of(v);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return BFloat16{static_cast<std::uint16_t>((x >> 16) | 0x40u)};
  x += 0x7fffu + ((x >> 16) & 1u);
  return BFloat16{static_cast<std::uint16_t>(x >> 16)};
}

BFloat16 to_bfloat16(double v) noexcept {
  return BFloat16{round_to_small_float(v, 7, 8)};
}

float to_float(Half h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
  const std::uint32_t exp = (h.bits >> 10) & 0x1fu;
  const std::uint32_t mant = h.bits & 0x3ffu;
  if (exp == 0) {
    const float f = static_cast<float>(mant) * 5.9604644775390625e-8f;  // mant * 2^-24, exact
    return sign ? -f : f;
  }
  if (exp == 31) return float_of(sign | 0x7f800000u | (mant << 13));
  return float_of(sign | ((exp + 112u) << 23) | (mant << 13));
}

float to_float(BFloat16 b) noexcept {
  return float_of(static_cast<std::uint32_t>(b.bits) << 16);
}

// ---- the kernel -------------------------------------------------------------------

namespace {

template <class T>
constexpr bool kSmallFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <class D, class S>
inline D cast_value(S v) noexcept {
  if constexpr (kSmallFloat<S>) {
    return cast_value<D>(to_float(v));
  } else if constexpr (std::is_same_v<D, S>) {
    return v;
  } else if constexpr (std::is_same_v<D, bool>) {
    return v != S(0);
  } else if constexpr (std::is_same_v<S, bool>) {
    return cast_value<D>(static_cast<std::uint8_t>(v));
  } else if constexpr (kSmallFloat<D>) {
    constexpr bool half = std::is_same_v<D, Half>;
    if constexpr (std::is_same_v<S, float> || (std::is_integral_v<S> && sizeof(S) <= 2)) {
      const float f = static_cast<float>(v);  // exact for these sources
      if constexpr (half)
        return to_half(f);
      else
        return to_bfloat16(f);
    } else {
      // double and wide integers: round once, exactly (long double holds both).
      return D{round_to_small_float(static_cast<long double>(v), half ? 10 : 7, half ? 5 : 8)};
    }
  } else if constexpr (std::is_floating_point_v<D>) {
    return static_cast<D>(v);
  } else if constexpr (std::is_floating_point_v<S>) {
    if (std::isnan(v)) return D(0);
    const S r = std::nearbyint(v);
    if (r <= static_cast<S>(std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
    if (r >= static_cast<S>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(r);
  } else {
    if (std::cmp_less(v, std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
    if (std::cmp_greater(v, std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(v);
  }
}

// Dense, contiguous destination; source with any strides (row by row).
template <class S, class D>
void cast_all(const NeatTensor& src, const std::byte* in, std::byte* out) {
  const int rank = src.rank();
  const std::int64_t inner = rank == 0 ? 1 : src.shape()[rank - 1];
  const std::int64_t inner_stride = rank == 0 ? 0 : src.strides()[rank - 1];
  const std::int64_t rows = inner == 0 ? 0 : src.numel() / inner;
  std::array<std::int64_t, kMaxRank> idx{};
  auto* d = reinterpret_cast<D*>(out);
  for (std::int64_t row = 0; row < rows; ++row) {
    std::int64_t off = 0;
    for (int k = 0; k + 1 < rank; ++k)
      off += idx[static_cast<std::size_t>(k)] * src.strides()[k];
    const std::byte* s = in + off;
    if (inner_stride == static_cast<std::int64_t>(sizeof(S))) {
      const S* sp = reinterpret_cast<const S*>(s);
      for (std::int64_t i = 0; i < inner; ++i)
        d[i] = cast_value<D>(sp[i]);
    } else {
      for (std::int64_t i = 0; i < inner; ++i) {
        S v;
        std::memcpy(&v, s + i * inner_stride, sizeof(S));
        d[i] = cast_value<D>(v);
      }
    }
    d += inner;
    for (int k = rank - 2; k >= 0; --k) {
      if (++idx[static_cast<std::size_t>(k)] < src.shape()[k]) break;
      idx[static_cast<std::size_t>(k)] = 0;
    }
  }
}

template <class F>
void with_type(DType t, F&& f) {
  switch (t) {
    case DType::U8:
      f(std::uint8_t{});
      break;
    case DType::I8:
      f(std::int8_t{});
      break;
    case DType::U16:
      f(std::uint16_t{});
      break;
    case DType::I16:
      f(std::int16_t{});
      break;
    case DType::U32:
      f(std::uint32_t{});
      break;
    case DType::I32:
      f(std::int32_t{});
      break;
    case DType::I64:
      f(std::int64_t{});
      break;
    case DType::F16:
      f(Half{});
      break;
    case DType::BF16:
      f(BFloat16{});
      break;
    case DType::F32:
      f(float{});
      break;
    case DType::F64:
      f(double{});
      break;
    case DType::Bool:
      f(bool{});
      break;
  }
}

}  // namespace

Result<NeatTensor> convert_dtype(const NeatTensor& src, DType to, ConversionOptions options,
                                 std::source_location where) {
  if (!src.defined()) return failed_precondition("convert_dtype: the tensor is undefined");
  if (src.is_composite()) {
    return failed_precondition("convert_dtype of " + src.to_string() +
                               ": a planar frame is 8-bit by definition; convert_color() it to an "
                               "interleaved image first");
  }
  if (src.device().type != DeviceType::Cpu) {
    return failed_precondition("convert_dtype of " + src.to_string() + ": not in CPU memory");
  }
  if (src.dtype() == to) return src;
  NEAT_ASSIGN_OR_RETURN(NeatTensor dst,
                        NeatTensor::allocate(to, src.shape(), destination_alloc(options)));
  const ConversionSpec spec{
      ConversionKind::Convert,
      ConversionReason::DType,
      "convert_dtype",
      "convert the tensor explicitly with convert_dtype() before this consumer",
      {}};
  return run_conversion(src, std::move(dst), spec, options, where,
                        [&](const Mapping& in, const Mapping& out) -> Status {
                          with_type(src.dtype(), [&](auto s) {
                            with_type(to, [&](auto d) {
                              cast_all<decltype(s), decltype(d)>(src, in.data(),
                                                                 out.mutable_data());
                            });
                          });
                          return {};
                        });
}

}  // namespace neat

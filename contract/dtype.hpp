// Element types of a NeatTensor: the DType enum, its item size and name, and
// the mapping from C++ element types (used by Mapping::data_ptr<T>()).
//
// Threading: all functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace neat {

enum class DType : std::uint8_t { U8, I8, U16, I16, U32, I32, I64, F16, BF16, F32, F64, Bool };

inline constexpr int kDTypeCount = 12;

/// Bytes per element (1, 2, 4 or 8).
constexpr std::int64_t item_size(DType t) noexcept {
  switch (t) {
    case DType::U8:
    case DType::I8:
    case DType::Bool:
      return 1;
    case DType::U16:
    case DType::I16:
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::U32:
    case DType::I32:
    case DType::F32:
      return 4;
    case DType::I64:
    case DType::F64:
      return 8;
  }
  return 1;
}

/// Lowercase name: "u8", "i8", ..., "f16", "bf16", "f32", "f64", "bool".
std::string_view to_string(DType t) noexcept;
/// Inverse of to_string; nullopt for an unknown name.
std::optional<DType> parse_dtype(std::string_view name) noexcept;

/// IEEE 754 binary16, stored as its bit pattern (arithmetic lives in the
/// conversion kernels, not here).
struct Half {
  std::uint16_t bits;
};
/// bfloat16, stored as its bit pattern.
struct BFloat16 {
  std::uint16_t bits;
};

namespace detail {
template <class T>
struct DTypeOf;
template <>
struct DTypeOf<std::uint8_t> {
  static constexpr DType value = DType::U8;
};
template <>
struct DTypeOf<std::int8_t> {
  static constexpr DType value = DType::I8;
};
template <>
struct DTypeOf<std::uint16_t> {
  static constexpr DType value = DType::U16;
};
template <>
struct DTypeOf<std::int16_t> {
  static constexpr DType value = DType::I16;
};
template <>
struct DTypeOf<std::uint32_t> {
  static constexpr DType value = DType::U32;
};
template <>
struct DTypeOf<std::int32_t> {
  static constexpr DType value = DType::I32;
};
template <>
struct DTypeOf<std::int64_t> {
  static constexpr DType value = DType::I64;
};
template <>
struct DTypeOf<Half> {
  static constexpr DType value = DType::F16;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::BF16;
};
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::F32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::F64;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::Bool;
};
}  // namespace detail

/// The DType of a C++ element type (cv-qualifiers ignored); ill-formed for others.
template <class T>
inline constexpr DType dtype_of = detail::DTypeOf<std::remove_cv_t<T>>::value;

}  // namespace neat

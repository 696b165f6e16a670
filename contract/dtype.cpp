#include "neat/contract/dtype.hpp"

#include <array>

namespace neat {

namespace {
constexpr std::array<std::string_view, kDTypeCount> kNames = {
    "u8", "i8", "u16", "i16", "u32", "i32", "i64", "f16", "bf16", "f32", "f64", "bool"};
}

std::string_view to_string(DType t) noexcept {
  const auto i = static_cast<std::size_t>(t);
  return i < kNames.size() ? kNames[i] : std::string_view("?");
}

std::optional<DType> parse_dtype(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<DType>(i);
  }
  return std::nullopt;
}

}  // namespace neat

#include "neat/contract/conversion.hpp"

#include <array>

namespace neat {

namespace {
constexpr std::array<std::string_view, kConversionKindCount> kKinds = {
    "reinterpret", "view", "pack", "convert", "transfer"};
constexpr std::array<std::string_view, kConversionReasonCount> kReasons = {
    "user_request", "stride_mismatch", "not_writable", "donation_refused", "dtype",
    "pixel_format", "layout",          "device",       "alignment",        "non_contiguous_export",
    "resize",       "normalize",       "decode",       "encode",           "frame_rate",
    "model_input",  "model_output"};
constexpr std::array<std::string_view, kConversionPolicyCount> kPolicies = {
    "strict", "allow_with_trace", "allow_silent"};

template <class E, std::size_t N>
std::optional<E> find(const std::array<std::string_view, N>& names, std::string_view s) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == s) return static_cast<E>(i);
  }
  return std::nullopt;
}
template <std::size_t N>
std::string_view name(const std::array<std::string_view, N>& names, std::size_t i) {
  return i < N ? names[i] : std::string_view("?");
}
}  // namespace

std::string_view to_string(ConversionKind k) noexcept {
  return name(kKinds, static_cast<std::size_t>(k));
}
std::string_view to_string(ConversionReason r) noexcept {
  return name(kReasons, static_cast<std::size_t>(r));
}
std::string_view to_string(ConversionPolicy p) noexcept {
  return name(kPolicies, static_cast<std::size_t>(p));
}
std::string_view to_string(Donation d) noexcept {
  switch (d) {
    case Donation::ReuseIfUnique:
      return "reuse_if_unique";
    case Donation::MustDonate:
      return "must_donate";
    case Donation::AlwaysCopy:
      return "always_copy";
  }
  return "?";
}

std::optional<ConversionKind> parse_conversion_kind(std::string_view s) noexcept {
  return find<ConversionKind>(kKinds, s);
}
std::optional<ConversionReason> parse_conversion_reason(std::string_view s) noexcept {
  return find<ConversionReason>(kReasons, s);
}
std::optional<ConversionPolicy> parse_conversion_policy(std::string_view s) noexcept {
  if (s == "trace") return ConversionPolicy::AllowWithTrace;
  if (s == "silent") return ConversionPolicy::AllowSilent;
  return find<ConversionPolicy>(kPolicies, s);
}

}  // namespace neat

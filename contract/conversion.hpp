// The conversion vocabulary of the contract (docs/contract.md): what kind of
// operation produced a tensor (reinterpret, view, pack, convert, transfer),
// why a copy happened (a typed reason), the policies that rule implicit
// copies, and the donation modes of operations that write.
//
// Threading: plain enums and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace neat {

enum class ConversionKind : std::uint8_t {
  Reinterpret,  ///< metadata only, provably identical bytes
  View,         ///< new shape/strides/offset over the same storage
  Pack,         ///< a copy of the same values into a new (contiguous) buffer
  Convert,      ///< dtype, pixel format or layout change into a new buffer
  Transfer,     ///< a copy to another device (with synchronisation) or into a runtime
                ///< that keeps its own memory (a model's input)
};
inline constexpr int kConversionKindCount = 5;

enum class ConversionReason : std::uint8_t {
  UserRequest,          ///< the user asked for a copy by name (clone(), always-copy)
  StrideMismatch,       ///< the bytes are not laid out as required (padding, transposed)
  NotWritable,          ///< copy-on-write: the storage is shared or read-only
  DonationRefused,      ///< a must-donate request could not be honoured
  DType,                ///< a different element type is required
  PixelFormat,          ///< a different pixel format is required
  Layout,               ///< a different layout (HWC/CHW/planar) is required
  Device,               ///< the bytes are on another device
  Alignment,            ///< the bytes are not aligned as required
  NonContiguousExport,  ///< an export format (DLPack, GstBuffer) needs other strides
  Resize,               ///< a different image size is required
  Normalize,            ///< values are rescaled (mean / std) into a new buffer
  Decode,               ///< compressed frames decoded (a GStreamer decoder)
  Encode,               ///< frames encoded (a GStreamer encoder)
  FrameRate,            ///< frames duplicated or dropped to another rate (videorate)
  ModelInput,           ///< a model's runtime takes its own copy of the input (OpenCV's setInput)
  ModelOutput,          ///< a model's output moved out of the runtime's reused buffer
};
inline constexpr int kConversionReasonCount = 17;

enum class ConversionPolicy : std::uint8_t {
  Strict,          ///< refuse implicit conversions (the default)
  AllowWithTrace,  ///< perform them, record a trace event and metrics
  AllowSilent,     ///< perform them, update counters only (prototyping)
};
inline constexpr int kConversionPolicyCount = 3;

/// How an operation that writes treats its input buffer.
enum class Donation : std::uint8_t {
  ReuseIfUnique,  ///< write in place when the buffer is held alone, else copy
  MustDonate,     ///< the buffer must be reused; a copy is an error under Strict
                  ///< and a loud (always recorded) event otherwise
  AlwaysCopy,     ///< always write into a fresh buffer
};

/// Stable snake_case names ("pack", "stride_mismatch", "allow_with_trace", ...).
std::string_view to_string(ConversionKind k) noexcept;
std::string_view to_string(ConversionReason r) noexcept;
std::string_view to_string(ConversionPolicy p) noexcept;
std::string_view to_string(Donation d) noexcept;

std::optional<ConversionKind> parse_conversion_kind(std::string_view s) noexcept;
std::optional<ConversionReason> parse_conversion_reason(std::string_view s) noexcept;
/// Accepts "strict", "trace", "silent" (the NEAT_POLICY spellings) and the
/// full names "allow_with_trace", "allow_silent"; case-sensitive.
std::optional<ConversionPolicy> parse_conversion_policy(std::string_view s) noexcept;

}  // namespace neat

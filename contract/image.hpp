// Image vocabulary: PixelFormat, Layout, PlaneRole and ImageSpec, plus the
// per-format facts (plane count, roles in order, channels, chroma rounding)
// that factories and validation share.
//
// Threading: all functions are pure and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace neat {

enum class PixelFormat : std::uint8_t {
  None,   ///< not an image (a dense tensor)
  GRAY8,  ///< 1 channel, 8 bit
  RGB,    ///< 3 channels interleaved, R first
  BGR,    ///< 3 channels interleaved, B first (OpenCV's default)
  RGBA,   ///< 4 channels interleaved
  BGRA,   ///< 4 channels interleaved
  NV12,   ///< planes [Y, UV]: full-res Y, half-res interleaved U,V
  NV21,   ///< planes [Y, VU]: as NV12 with V first
  I420,   ///< planes [Y, U, V]: full-res Y, half-res U and V
  YV12,   ///< planes [Y, V, U]: as I420 with V before U
};

enum class Layout : std::uint8_t {
  None,    ///< a dense tensor without image semantics
  HWC,     ///< [H, W, C], channels interleaved (default for interleaved images)
  CHW,     ///< [C, H, W], one channel after another
  HW,      ///< [H, W]: single-channel, or the top level of a planar composite
  Planar,  ///< a multi-plane composite (NV12, I420, ...) described by its planes
};

enum class PlaneRole : std::uint8_t {
  Y,   ///< luma
  UV,  ///< interleaved chroma, U first (NV12)
  VU,  ///< interleaved chroma, V first (NV21)
  U,   ///< chroma U (I420 / YV12)
  V,   ///< chroma V (I420 / YV12)
};

inline constexpr int kMaxPlanes = 3;

/// What a tensor is, as an image. Width and height are in pixels.
struct ImageSpec {
  PixelFormat format = PixelFormat::None;
  std::int64_t width = 0;
  std::int64_t height = 0;
  Layout layout = Layout::None;  ///< None = the format's default

  friend bool operator==(const ImageSpec&, const ImageSpec&) = default;
};

std::string_view to_string(PixelFormat f) noexcept;
std::string_view to_string(Layout l) noexcept;
std::string_view to_string(PlaneRole r) noexcept;
std::optional<PixelFormat> parse_pixel_format(std::string_view name) noexcept;
/// "NV12 1920x1080 (HW)".
std::string to_string(const ImageSpec& s);

/// True for NV12, NV21, I420, YV12: formats stored as role-tagged planes.
constexpr bool is_planar(PixelFormat f) noexcept {
  return f == PixelFormat::NV12 || f == PixelFormat::NV21 || f == PixelFormat::I420 ||
         f == PixelFormat::YV12;
}
/// True for GRAY8, RGB, BGR, RGBA, BGRA.
constexpr bool is_interleaved(PixelFormat f) noexcept {
  return f == PixelFormat::GRAY8 || f == PixelFormat::RGB || f == PixelFormat::BGR ||
         f == PixelFormat::RGBA || f == PixelFormat::BGRA;
}
/// Channels of an interleaved format (1, 3 or 4); 0 for planar or None.
constexpr int channels(PixelFormat f) noexcept {
  switch (f) {
    case PixelFormat::GRAY8:
      return 1;
    case PixelFormat::RGB:
    case PixelFormat::BGR:
      return 3;
    case PixelFormat::RGBA:
    case PixelFormat::BGRA:
      return 4;
    default:
      return 0;
  }
}
/// The layout a spec with Layout::None means for this format.
constexpr Layout default_layout(PixelFormat f) noexcept {
  if (is_planar(f)) return Layout::HW;
  if (is_interleaved(f)) return Layout::HWC;
  return Layout::None;
}

/// The fixed plane order of a planar format. count == 0 for non-planar formats.
struct PlaneOrder {
  std::array<PlaneRole, kMaxPlanes> roles{};
  int count = 0;
};
PlaneOrder plane_order(PixelFormat f) noexcept;

/// Shape of one plane of a planar frame: rows, columns and samples per pixel
/// (Y: H x W x 1; UV/VU: ceil(H/2) x ceil(W/2) x 2; U, V: ceil(H/2) x ceil(W/2) x 1).
struct PlaneGeometry {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t samples = 1;
};
PlaneGeometry plane_geometry(PixelFormat f, PlaneRole role, std::int64_t width,
                             std::int64_t height) noexcept;

/// Chroma subsampling rounds up: (n + 1) / 2.
constexpr std::int64_t chroma_extent(std::int64_t n) noexcept {
  return (n + 1) / 2;
}

}  // namespace neat

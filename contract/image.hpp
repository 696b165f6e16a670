// Image vocabulary: PixelFormat, Layout, PlaneRole, Colorimetry and ImageSpec,
// plus the per-format facts (plane count, roles in order, channels, chroma
// rounding) that factories and validation share.
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

/// The YUV <-> RGB matrix of a frame (ITU-R BT.601, BT.709, BT.2020 non-constant
/// luminance), or Unknown.
enum class YuvMatrix : std::uint8_t { Unknown, BT601, BT709, BT2020 };

/// The quantisation range of a YUV frame: Limited (Y 16-235, chroma 16-240, the
/// broadcast and camera default) or Full (0-255, JPEG), or Unknown.
enum class ColorRange : std::uint8_t { Unknown, Limited, Full };

/// The colour standard of a YUV frame: which matrix and which range its
/// samples were encoded with. Each part may be Unknown; a conversion then
/// resolves it with resolve_colorimetry() and says that it assumed it.
/// Meaningful for the YUV formats (NV12, NV21, I420, YV12); RGB images leave it
/// Unknown.
struct Colorimetry {
  YuvMatrix matrix = YuvMatrix::Unknown;
  ColorRange range = ColorRange::Unknown;

  bool known() const noexcept {
    return matrix != YuvMatrix::Unknown && range != ColorRange::Unknown;
  }
  friend bool operator==(const Colorimetry&, const Colorimetry&) = default;
};

inline constexpr Colorimetry kBT601Limited{YuvMatrix::BT601, ColorRange::Limited};
inline constexpr Colorimetry kBT709Limited{YuvMatrix::BT709, ColorRange::Limited};
inline constexpr Colorimetry kBT2020Limited{YuvMatrix::BT2020, ColorRange::Limited};

/// GStreamer's default for a YUV frame whose caps name no colorimetry (what
/// gst_video_info_from_caps() fills in, GStreamer 1.22): BT.709 above 576 rows,
/// BT.601 up to 576 rows (SD); always limited range.
Colorimetry default_colorimetry(std::int64_t width, std::int64_t height) noexcept;

/// `c` with each Unknown part taken from default_colorimetry(width, height).
Colorimetry resolve_colorimetry(Colorimetry c, std::int64_t width, std::int64_t height) noexcept;

/// What an Unknown part is taken as: the explicit override when known, else
/// the frame's own part, else GStreamer's default for the frame size.
/// `assumed` is set when any part came from the default.
Colorimetry choose_colorimetry(Colorimetry override_with, Colorimetry frame, std::int64_t width,
                               std::int64_t height, bool* assumed = nullptr) noexcept;

/// What a tensor is, as an image. Width and height are in pixels.
struct ImageSpec {
  PixelFormat format = PixelFormat::None;
  std::int64_t width = 0;
  std::int64_t height = 0;
  Layout layout = Layout::None;  ///< None = the format's default
  Colorimetry colorimetry{};     ///< YUV formats: the colour standard (Unknown if not known)

  friend bool operator==(const ImageSpec&, const ImageSpec&) = default;
};

std::string_view to_string(PixelFormat f) noexcept;
std::string_view to_string(Layout l) noexcept;
std::string_view to_string(PlaneRole r) noexcept;
std::optional<PixelFormat> parse_pixel_format(std::string_view name) noexcept;
/// "bt601", "bt709", "bt2020", "unknown".
std::string_view to_string(YuvMatrix m) noexcept;
/// "limited", "full", "unknown".
std::string_view to_string(ColorRange r) noexcept;
/// "bt709 limited", "bt601 full", "bt709 (range unknown)", "unknown".
std::string to_string(Colorimetry c);
/// Parses "bt601", "bt709", "bt2020" (limited range), each with a "-full" or
/// "-limited" suffix, and GStreamer's names "bt601" / "bt709" / "bt2020" /
/// "sdtv" / "jpeg" (bt601 full). std::nullopt for anything else.
std::optional<Colorimetry> parse_colorimetry(std::string_view text) noexcept;
/// "NV12 1920x1080 (HW)"; with a known colorimetry "NV12 1920x1080 (HW) bt709 limited".
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

#include "neat/contract/image.hpp"

namespace neat {

std::string_view to_string(PixelFormat f) noexcept {
  switch (f) {
    case PixelFormat::None:
      return "none";
    case PixelFormat::GRAY8:
      return "GRAY8";
    case PixelFormat::RGB:
      return "RGB";
    case PixelFormat::BGR:
      return "BGR";
    case PixelFormat::RGBA:
      return "RGBA";
    case PixelFormat::BGRA:
      return "BGRA";
    case PixelFormat::NV12:
      return "NV12";
    case PixelFormat::NV21:
      return "NV21";
    case PixelFormat::I420:
      return "I420";
    case PixelFormat::YV12:
      return "YV12";
  }
  return "?";
}

std::string_view to_string(Layout l) noexcept {
  switch (l) {
    case Layout::None:
      return "none";
    case Layout::HWC:
      return "HWC";
    case Layout::CHW:
      return "CHW";
    case Layout::HW:
      return "HW";
    case Layout::Planar:
      return "Planar";
  }
  return "?";
}

std::string_view to_string(PlaneRole r) noexcept {
  switch (r) {
    case PlaneRole::Y:
      return "Y";
    case PlaneRole::UV:
      return "UV";
    case PlaneRole::VU:
      return "VU";
    case PlaneRole::U:
      return "U";
    case PlaneRole::V:
      return "V";
  }
  return "?";
}

std::optional<PixelFormat> parse_pixel_format(std::string_view name) noexcept {
  for (int i = 1; i <= static_cast<int>(PixelFormat::YV12); ++i) {
    auto f = static_cast<PixelFormat>(i);
    if (to_string(f) == name) return f;
  }
  return std::nullopt;
}

std::string_view to_string(YuvMatrix m) noexcept {
  switch (m) {
    case YuvMatrix::Unknown:
      return "unknown";
    case YuvMatrix::BT601:
      return "bt601";
    case YuvMatrix::BT709:
      return "bt709";
    case YuvMatrix::BT2020:
      return "bt2020";
  }
  return "?";
}

std::string_view to_string(ColorRange r) noexcept {
  switch (r) {
    case ColorRange::Unknown:
      return "unknown";
    case ColorRange::Limited:
      return "limited";
    case ColorRange::Full:
      return "full";
  }
  return "?";
}

std::string to_string(Colorimetry c) {
  if (c.matrix == YuvMatrix::Unknown && c.range == ColorRange::Unknown) return "unknown";
  std::string out(to_string(c.matrix));
  if (c.range == ColorRange::Unknown) return out + " (range unknown)";
  out += ' ';
  out += to_string(c.range);
  return out;
}

std::optional<Colorimetry> parse_colorimetry(std::string_view text) noexcept {
  if (text == "sdtv") return kBT601Limited;
  if (text == "jpeg") return Colorimetry{YuvMatrix::BT601, ColorRange::Full};
  ColorRange range = ColorRange::Limited;
  for (std::string_view suffix : {"-full", "-limited"}) {
    if (text.size() > suffix.size() && text.substr(text.size() - suffix.size()) == suffix) {
      range = suffix == "-full" ? ColorRange::Full : ColorRange::Limited;
      text.remove_suffix(suffix.size());
      break;
    }
  }
  for (YuvMatrix m : {YuvMatrix::BT601, YuvMatrix::BT709, YuvMatrix::BT2020}) {
    if (text == to_string(m)) return Colorimetry{m, range};
  }
  return std::nullopt;
}

Colorimetry default_colorimetry(std::int64_t, std::int64_t height) noexcept {
  // As gst_video_info_from_caps() (GStreamer 1.22) decides it: by height only.
  if (height > 576) return kBT709Limited;
  return kBT601Limited;
}

Colorimetry resolve_colorimetry(Colorimetry c, std::int64_t width, std::int64_t height) noexcept {
  const Colorimetry d = default_colorimetry(width, height);
  if (c.matrix == YuvMatrix::Unknown) c.matrix = d.matrix;
  if (c.range == ColorRange::Unknown) c.range = d.range;
  return c;
}

Colorimetry choose_colorimetry(Colorimetry override_with, Colorimetry frame, std::int64_t width,
                               std::int64_t height, bool* assumed) noexcept {
  Colorimetry c = frame;
  if (override_with.matrix != YuvMatrix::Unknown) c.matrix = override_with.matrix;
  if (override_with.range != ColorRange::Unknown) c.range = override_with.range;
  if (assumed != nullptr) *assumed = !c.known();
  return resolve_colorimetry(c, width, height);
}

std::string to_string(const ImageSpec& s) {
  std::string out(to_string(s.format));
  out += ' ';
  out += std::to_string(s.width);
  out += 'x';
  out += std::to_string(s.height);
  out += " (";
  out += to_string(s.layout == Layout::None ? default_layout(s.format) : s.layout);
  out += ')';
  if (s.colorimetry != Colorimetry{}) {
    out += ' ';
    out += to_string(s.colorimetry);
  }
  return out;
}

PlaneOrder plane_order(PixelFormat f) noexcept {
  switch (f) {
    case PixelFormat::NV12:
      return {{PlaneRole::Y, PlaneRole::UV, PlaneRole::Y}, 2};
    case PixelFormat::NV21:
      return {{PlaneRole::Y, PlaneRole::VU, PlaneRole::Y}, 2};
    case PixelFormat::I420:
      return {{PlaneRole::Y, PlaneRole::U, PlaneRole::V}, 3};
    case PixelFormat::YV12:
      return {{PlaneRole::Y, PlaneRole::V, PlaneRole::U}, 3};
    default:
      return {};
  }
}

PlaneGeometry plane_geometry(PixelFormat f, PlaneRole role, std::int64_t width,
                             std::int64_t height) noexcept {
  if (role == PlaneRole::Y) return {height, width, 1};
  const std::int64_t samples = (f == PixelFormat::NV12 || f == PixelFormat::NV21) ? 2 : 1;
  return {chroma_extent(height), chroma_extent(width), samples};
}

}  // namespace neat

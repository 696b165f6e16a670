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

std::string to_string(const ImageSpec& s) {
  std::string out(to_string(s.format));
  out += ' ';
  out += std::to_string(s.width);
  out += 'x';
  out += std::to_string(s.height);
  out += " (";
  out += to_string(s.layout == Layout::None ? default_layout(s.format) : s.layout);
  out += ')';
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

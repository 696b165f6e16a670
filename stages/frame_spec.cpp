#include "neat/stages/frame_spec.hpp"

#include <algorithm>

namespace neat {

std::int64_t FrameSpec::bytes() const noexcept {
  if (is_planar(format)) {
    std::int64_t total = 0;
    const PlaneOrder order = plane_order(format);
    for (int i = 0; i < order.count; ++i) {
      const PlaneGeometry g =
          plane_geometry(format, order.roles[static_cast<std::size_t>(i)], width, height);
      total += g.rows * g.cols * g.samples;
    }
    return total;
  }
  std::int64_t n = item_size(dtype);
  for (int i = 0; i < shape.size(); ++i)
    n *= shape[i];
  return n;
}

std::string FrameSpec::to_string() const {
  std::string out;
  if (is_image()) {
    out = std::string(neat::to_string(format)) + " " + std::to_string(width) + "x" +
          std::to_string(height);
    if (dtype != DType::U8) out += " " + std::string(neat::to_string(dtype));
    if (layout != default_layout(format) && layout != Layout::None) {
      out += " " + std::string(neat::to_string(layout));
    }
    if (colorimetry != Colorimetry{}) out += " " + neat::to_string(colorimetry);
  } else {
    out = std::string(neat::to_string(dtype)) + " " + shape.to_string();
    if (layout != Layout::None) out += " " + std::string(neat::to_string(layout));
  }
  out += " " + neat::to_string(device);
  if (!contiguous) out += " strided";
  return out;
}

FrameSpec FrameSpec::of(const NeatTensor& t) {
  FrameSpec s;
  s.dtype = t.dtype();
  s.format = t.pixel_format();
  s.layout = t.layout();
  if (t.is_image()) {
    s.width = t.image().width;
    s.height = t.image().height;
    s.colorimetry = t.image().colorimetry;
  }
  s.shape = t.shape();
  s.device = t.device();
  s.contiguous = t.is_composite() ? true : t.is_contiguous();
  if (t.is_composite()) {
    for (int i = 0; i < t.plane_count(); ++i) {
      const PlaneLayout& p = t.plane_layout(i);
      if (p.row_stride != p.cols * p.samples) s.contiguous = false;
    }
  }
  return s;
}

FrameSpec FrameSpec::image(PixelFormat format, std::int64_t width, std::int64_t height) {
  FrameSpec s;
  s.format = format;
  s.width = width;
  s.height = height;
  s.layout = default_layout(format);
  if (format == PixelFormat::GRAY8) s.layout = Layout::HW;
  if (is_interleaved(format)) {
    s.shape =
        format == PixelFormat::GRAY8 ? Dims{height, width} : Dims{height, width, channels(format)};
  } else {
    s.shape = Dims{height, width};
  }
  return s;
}

Accepts Accepts::anything() {
  Accepts a;
  a.devices.clear();
  return a;
}

std::string Accepts::to_string() const {
  std::vector<std::string> parts;
  auto join = [](const auto& list, auto name) {
    std::string s;
    for (const auto& v : list)
      s += (s.empty() ? "" : "|") + std::string(name(v));
    return s;
  };
  if (!dtypes.empty())
    parts.push_back("dtype " + join(dtypes, [](DType d) { return neat::to_string(d); }));
  if (!formats.empty()) {
    parts.push_back("format " + join(formats, [](PixelFormat f) {
                      return f == PixelFormat::None ? std::string_view("dense")
                                                    : neat::to_string(f);
                    }));
  }
  if (!layouts.empty())
    parts.push_back("layout " + join(layouts, [](Layout l) { return neat::to_string(l); }));
  if (!devices.empty())
    parts.push_back(join(devices, [](DeviceType d) { return neat::to_string(d); }));
  if (contiguous) parts.push_back("contiguous");
  if (writes) parts.push_back("writes in place");
  if (parts.empty()) return "anything";
  std::string out;
  for (const auto& p : parts)
    out += (out.empty() ? "" : ", ") + p;
  return out;
}

bool same_frames(FrameSpec a, FrameSpec b) noexcept {
  a.fps_n = b.fps_n = 0;
  a.fps_d = b.fps_d = 1;
  return a == b;
}

}  // namespace neat

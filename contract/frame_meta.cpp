#include "neat/contract/frame_meta.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>

namespace neat {

FrameGeometry::Point FrameGeometry::to_source_clamped(double x, double y) const noexcept {
  Point p = to_source(x, y);
  if (source_width > 0) p.x = std::clamp(p.x, 0.0, static_cast<double>(source_width));
  if (source_height > 0) p.y = std::clamp(p.y, 0.0, static_cast<double>(source_height));
  return p;
}

std::string_view intern_stream_name(std::string_view name) {
  static std::mutex mutex;
  static auto* names = new std::set<std::string, std::less<>>;  // never freed: process lifetime
  std::lock_guard lock(mutex);
  auto it = names->find(name);
  if (it == names->end()) it = names->emplace(name).first;
  return *it;
}

std::string to_string(const FrameMeta& meta) {
  if (meta.empty()) return "no frame metadata";
  std::string out;
  auto add = [&](const std::string& part) {
    if (!out.empty()) out += ", ";
    out += part;
  };
  if (meta.stream.known()) add("stream " + std::string(meta.stream.name));
  if (meta.frame >= 0) add("frame " + std::to_string(meta.frame));
  if (meta.pts_ns >= 0) add("pts " + std::to_string(meta.pts_ns) + " ns");
  if (meta.duration_ns >= 0) add("duration " + std::to_string(meta.duration_ns) + " ns");
  if (meta.capture_ns >= 0) add("captured at " + std::to_string(meta.capture_ns) + " ns");
  const FrameGeometry& g = meta.geometry;
  if (!g.is_identity() || g.source_width > 0) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "geometry x*%g%+g y*%g%+g of %lldx%lld", g.scale_x, g.offset_x,
                  g.scale_y, g.offset_y, static_cast<long long>(g.source_width),
                  static_cast<long long>(g.source_height));
    add(buf);
  }
  return out;
}

}  // namespace neat

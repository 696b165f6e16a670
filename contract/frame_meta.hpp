// Per-frame metadata: what travels with a frame through a graph besides its
// pixels. A fixed, typed value held inside each NeatTensor handle (no
// allocation, no lock; copying a tensor copies it), kept by views, clone(),
// the conversion kernels and the stages, set by sources (frame number,
// timestamps) and by the stages that move pixels (crop, resize, letterbox:
// the geometry), and read by sinks (a gst: sink stamps its buffers with it)
// and by decoders such as `yolo` (boxes go back to source pixels).
//
// It belongs to the handle, not to the storage: two handles over one buffer
// may carry different metadata (e.g. a crop and its frame).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace neat {

/// Where a tensor's pixels lie in the source frame, per axis:
/// source = scale * position + offset, in continuous pixel coordinates
/// (pixel i covers [i, i + 1)). Identity for a frame straight from its source.
/// A crop at x adds x * scale_x to offset_x; a resize from W to w multiplies
/// scale_x by W / w; a letterbox that resizes to w and pads `pad` columns on
/// the left maps position `pad + u` to source `u * W / w`.
struct FrameGeometry {
  double scale_x = 1.0;
  double scale_y = 1.0;
  double offset_x = 0.0;
  double offset_y = 0.0;
  std::int64_t source_width = 0;   ///< 0: unknown (the source frame was not an image)
  std::int64_t source_height = 0;  ///< 0: unknown

  struct Point {
    double x = 0.0;
    double y = 0.0;
  };
  /// A position in this tensor's pixels -> the source frame's pixels.
  Point to_source(double x, double y) const noexcept {
    return {scale_x * x + offset_x, scale_y * y + offset_y};
  }
  /// As to_source(), clamped to the source frame when its size is known.
  Point to_source_clamped(double x, double y) const noexcept;
  /// The geometry of a tensor whose position p lies at `scale * p + offset`
  /// in a tensor of this geometry (crop: scale 1, offset = origin; resize
  /// from W to w: scale W / w, offset 0).
  FrameGeometry then(double sx, double sy, double ox, double oy) const noexcept {
    FrameGeometry g = *this;
    g.scale_x = scale_x * sx;
    g.scale_y = scale_y * sy;
    g.offset_x = scale_x * ox + offset_x;
    g.offset_y = scale_y * oy + offset_y;
    return g;
  }
  bool is_identity() const noexcept {
    return scale_x == 1.0 && scale_y == 1.0 && offset_x == 0.0 && offset_y == 0.0;
  }
  friend bool operator==(const FrameGeometry&, const FrameGeometry&) = default;
};

/// The stream a frame belongs to: the source (a camera) that made it, by its
/// name in the graph and its index among the graph's sources (plan order).
/// The name is interned (intern_stream_name): copying it never allocates,
/// and it lives as long as the process.
struct StreamId {
  std::int32_t index = -1;  ///< -1: not from a graph's source
  std::string_view name;
  /// Changes each time the graph restarts the stream's source (0 before the
  /// first restart): state kept per stream (a tracker's) starts over.
  std::int32_t session = 0;
  bool known() const noexcept { return index >= 0; }
  friend bool operator==(const StreamId&, const StreamId&) = default;
};

/// A process-lifetime copy of `name` (one per distinct name: a graph's
/// source names, set once at build). Thread-safe; not for per-frame use.
std::string_view intern_stream_name(std::string_view name);

/// The per-frame metadata of a tensor. Negative values mean "not known".
struct FrameMeta {
  std::int64_t frame = -1;        ///< frame number from the source (0-based)
  std::int64_t pts_ns = -1;       ///< presentation timestamp (GStreamer's PTS), nanoseconds
  std::int64_t duration_ns = -1;  ///< how long the frame is shown, nanoseconds
  /// When the frame was captured, on std::chrono::steady_clock (CLOCK_MONOTONIC),
  /// nanoseconds: a live GStreamer source's capture time (its timestamp on the
  /// pipeline clock), otherwise when the source handed the frame to the graph.
  /// Sinks measure latency from it.
  std::int64_t capture_ns = -1;
  FrameGeometry geometry;  ///< where the pixels lie in the source frame
  StreamId stream;         ///< the source it came from (set by the graph's source node)

  /// Nothing is known (what a freshly allocated tensor carries).
  bool empty() const noexcept { return *this == FrameMeta{}; }
  friend bool operator==(const FrameMeta&, const FrameMeta&) = default;
};

/// "stream cam1, frame 12, pts 400000000 ns, duration 33333333 ns, geometry x*0.5+0 y*0.5-140 of
/// 1920x1080".
std::string to_string(const FrameMeta& meta);

}  // namespace neat

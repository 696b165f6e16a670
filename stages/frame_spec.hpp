// FrameSpec and Accepts: what flows on an edge of a stage graph, and what a
// stage takes. build() compares the two on every edge to decide whether the
// edge is a plain hand-over or needs a conversion (and which one).
//
// Threading: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "neat/contract/copy_gate.hpp"
#include "neat/contract/neat_tensor.hpp"

namespace neat {

/// The frames an edge carries, as known at build() time.
struct FrameSpec {
  DType dtype = DType::U8;
  PixelFormat format = PixelFormat::None;  ///< None: a dense tensor (not an image)
  Layout layout = Layout::None;
  std::int64_t width = 0;  ///< images
  std::int64_t height = 0;
  Dims shape;  ///< dense tensors (and the pixel array of interleaved images)
  Device device = kCpu;
  bool contiguous = true;
  Colorimetry colorimetry{};  ///< YUV images: the colour standard, as far as known
  /// The stream's nominal frame rate, fps_n / fps_d frames per second (0/1:
  /// unknown or variable). Set by sources that know it (a GStreamer source,
  /// from its caps); kept through stages and edge conversions unless a stage
  /// sets its own; a gst: sink announces it in its caps. Each frame's own
  /// timestamps travel in its FrameMeta.
  int fps_n = 0;
  int fps_d = 1;

  bool is_image() const noexcept { return format != PixelFormat::None; }
  /// Bytes of one frame's elements (planes included).
  std::int64_t bytes() const noexcept;
  /// "NV12 1920x1080 bt709 limited cpu:0", "f32 [3, 640, 640] CHW cpu:0".
  std::string to_string() const;
  /// The spec of an existing tensor.
  static FrameSpec of(const NeatTensor& tensor);
  /// An image spec in the format's default layout, contiguous, on the CPU.
  static FrameSpec image(PixelFormat format, std::int64_t width, std::int64_t height);
  friend bool operator==(const FrameSpec&, const FrameSpec&) = default;
};

/// Whether frames of `a` and `b` are the same kind: all but their rate
/// match (streams a node takes in turn; a source that came back).
bool same_frames(FrameSpec a, FrameSpec b) noexcept;

/// A conversion a node performs inside itself on every frame (a GStreamer
/// element of a source or sink that converts, scales, decodes or encodes; a
/// model runtime's copies in the infer stage): named in explain() and
/// recorded once per frame as a conversion event of the node.
struct InnerConversion {
  std::string element;  ///< "videoconvert0"
  std::string what;     ///< "I420 640x480 -> NV12 640x480", "decode image/jpeg -> I420 640x480"
  ConversionKind kind = ConversionKind::Convert;
  ConversionReason reason = ConversionReason::PixelFormat;
  bool explicit_call = true;  ///< written by the user; false: inserted by the library
  std::int64_t bytes_read = 0;
  std::int64_t bytes_written = 0;   ///< per frame
  TensorDescription input, output;  ///< the frames it takes and gives (raw video)
};

/// What a stage (or sink) takes. An empty list accepts anything.
struct Accepts {
  std::vector<DType> dtypes;
  std::vector<PixelFormat> formats;  ///< PixelFormat::None in the list admits dense tensors
  std::vector<Layout> layouts;
  std::vector<DeviceType> devices = {DeviceType::Cpu};
  bool contiguous = false;  ///< needs packed row-major elements
  bool writes = false;      ///< modifies its input in place (is handed a writable buffer)

  static Accepts anything();
  /// "dtype u8, format NV12|I420, cpu, contiguous".
  std::string to_string() const;
};

}  // namespace neat

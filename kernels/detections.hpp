// Decoding a YOLO detector's output into detections in source-frame pixels.
//
// Input: the model's F32 output, either
//   * YoloLayout::V8 (YOLOv8 / v11): [1, 4 + classes, anchors], rows cx, cy,
//     w, h, then one score per class (already sigmoid-ed);
//   * YoloLayout::V5 (YOLOv5 / v7): [1, anchors, 5 + classes], columns cx, cy,
//     w, h, objectness, class scores (score = objectness x class score).
// The decoder reads the boxes and scores through views of the output (a
// slice per field, the anchor-major form as a transpose view): nothing is
// packed. A non-F32 output is converted explicitly (convert_dtype, recorded).
//
// Output: F32 [N, 6] rows (x1, y1, x2, y2, score, class), best first,
// N <= max_detections (a view of a [max_detections, 6] buffer, so a pool
// serves every frame with one size). Boxes go through the output's
// meta().geometry (set by preprocess: letterbox or stretch) back to the
// source frame and are clamped to it. Zero detections: [0, 6].
//
// Non-maximum suppression: greedy, as cv::dnn::NMSBoxes computes it (best
// score first, IoU above `iou` suppresses), per class (boxes of different
// classes never suppress each other) unless class_agnostic, on the decoder's
// reused vectors (NMSBoxes allocates on every call); max_detections limits
// the boxes kept.
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <vector>

#include "neat/contract/neat_tensor.hpp"

namespace neat {

enum class YoloLayout : std::uint8_t {
  Auto,  ///< V8 when the second dimension is the smaller one, else V5
  V8,    ///< [1, 4 + classes, anchors]
  V5,    ///< [1, anchors, 5 + classes] with objectness
};

struct YoloParams {
  float confidence = 0.25f;  ///< minimum score kept
  float iou = 0.45f;         ///< NMS overlap threshold
  int max_detections = 300;  ///< the most rows returned
  YoloLayout layout = YoloLayout::Auto;
  int num_classes = 0;          ///< 0: from the output's shape; else checked against it
  std::vector<int> classes;     ///< keep only these class ids (empty: all)
  bool class_agnostic = false;  ///< one NMS over all classes
};

/// The layout and sizes an output shape has under `params`, or why it cannot
/// be decoded (checked at build() by the yolo stage).
struct YoloShape {
  YoloLayout layout = YoloLayout::V8;
  std::int64_t anchors = 0;
  std::int64_t classes = 0;
};
Result<YoloShape> yolo_shape(DimsRef output_shape, const YoloParams& params);

/// Checks thresholds and limits; InvalidArgument naming the field.
Status check_yolo_params(const YoloParams& params);

/// A reusable decoder: its scratch (per-anchor best score and class, the
/// candidate boxes, the NMS order) is kept between frames, so a steady loop
/// allocates nothing once the vectors have grown to the busiest frame.
class YoloDecoder {
 public:
  explicit YoloDecoder(YoloParams params);
  ~YoloDecoder();
  YoloDecoder(YoloDecoder&&) noexcept;
  YoloDecoder& operator=(YoloDecoder&&) noexcept;
  const YoloParams& params() const noexcept;

  /// Detections of one output. InvalidArgument for a shape yolo_shape()
  /// refuses and for a NaN box or score (a broken model or input).
  Result<NeatTensor> decode(const NeatTensor& output, const ConversionOptions& options = {},
                            std::source_location where = std::source_location::current());

 private:
  struct Scratch;
  YoloParams params_;
  std::unique_ptr<Scratch> scratch_;
};

/// One-shot form of YoloDecoder::decode.
Result<NeatTensor> decode_yolo(const NeatTensor& output, const YoloParams& params,
                               const ConversionOptions& options = {},
                               std::source_location where = std::source_location::current());

}  // namespace neat

#include "neat/kernels/detections.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <opencv2/dnn.hpp>
#include <string>

#include "neat/contract/mapping.hpp"
#include "neat/kernels/cast.hpp"

namespace neat {

Status check_yolo_params(const YoloParams& p) {
  if (!(p.confidence >= 0.f && p.confidence <= 1.f)) {
    return invalid_argument("yolo: conf=" + std::to_string(p.confidence) +
                            " must be a score from 0 to 1");
  }
  if (!(p.iou > 0.f && p.iou <= 1.f)) {
    return invalid_argument("yolo: iou=" + std::to_string(p.iou) +
                            " must be an overlap above 0 and at most 1");
  }
  if (p.max_detections <= 0 || p.max_detections > 100000) {
    return invalid_argument("yolo: max=" + std::to_string(p.max_detections) +
                            " must be from 1 to 100000 detections");
  }
  if (p.num_classes < 0) {
    return invalid_argument("yolo: num_classes=" + std::to_string(p.num_classes) +
                            " must be 0 (from the model) or more");
  }
  for (int c : p.classes) {
    if (c < 0) return invalid_argument("yolo: class " + std::to_string(c) + " is negative");
  }
  if (p.layout != YoloLayout::Auto && p.layout != YoloLayout::V8 && p.layout != YoloLayout::V5) {
    return invalid_argument("yolo: unknown layout");
  }
  return {};
}

Result<YoloShape> yolo_shape(DimsRef s, const YoloParams& p) {
  NEAT_RETURN_IF_ERROR(check_yolo_params(p));
  // Built only on the error paths: a frame that decodes allocates nothing here.
  auto what = [&] { return "yolo: model output " + dims_to_string(s); };
  if (s.size() != 3) {
    return invalid_argument(what() +
                            " is not [1, 4 + classes, anchors] (YOLOv8) or [1, anchors, 5 + "
                            "classes] (YOLOv5): is this a detector's output?");
  }
  if (s[0] != 1) {
    return invalid_argument(what() + ": batch " + std::to_string(s[0]) +
                            "; yolo decodes one image's output at a time (batch 1)");
  }
  YoloShape out;
  out.layout = p.layout;
  if (out.layout == YoloLayout::Auto) out.layout = s[1] < s[2] ? YoloLayout::V8 : YoloLayout::V5;
  const std::int64_t fields = out.layout == YoloLayout::V8 ? s[1] : s[2];
  out.anchors = out.layout == YoloLayout::V8 ? s[2] : s[1];
  const std::int64_t extra = out.layout == YoloLayout::V8 ? 4 : 5;
  out.classes = fields - extra;
  const char* name = out.layout == YoloLayout::V8 ? "YOLOv8 [1, 4 + classes, anchors]"
                                                  : "YOLOv5 [1, anchors, 5 + classes]";
  if (out.classes < 1) {
    return invalid_argument(what() + " read as " + name + " has " + std::to_string(fields) +
                            " fields per anchor, no room for a class (set layout=v8 or v5 if the "
                            "guess is wrong)");
  }
  if (p.num_classes > 0 && p.num_classes != out.classes) {
    return invalid_argument(what() + " read as " + name + " has " + std::to_string(out.classes) +
                            " classes, not num_classes=" + std::to_string(p.num_classes) +
                            " (fix num_classes, or the layout if the guess is wrong)");
  }
  for (int c : p.classes) {
    if (c >= out.classes) {
      return invalid_argument("yolo: classes= lists class " + std::to_string(c) +
                              " but the model has " + std::to_string(out.classes) + " (ids 0.." +
                              std::to_string(out.classes - 1) + ")");
    }
  }
  return out;
}

// Greedy non-maximum suppression, as cv::dnn::NMSBoxes computes it
// (candidates above `confidence` in descending score, ties in anchor order;
// a box is dropped when its intersection over union with a kept one exceeds
// `iou`), on vectors the decoder keeps between frames: no allocation once
// they have grown (NMSBoxes allocates its sorted copy on every call). The
// limit applies to the boxes kept, not to the candidates considered.
void suppress(const std::vector<cv::Rect2d>& boxes, const std::vector<float>& scores,
              float confidence, float iou, std::size_t max_keep, std::vector<int>& order,
              std::vector<int>& kept) {
  order.clear();
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    if (scores[i] > confidence) order.push_back(static_cast<int>(i));
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const float sa = scores[static_cast<std::size_t>(a)], sb = scores[static_cast<std::size_t>(b)];
    return sa > sb || (sa == sb && a < b);
  });
  kept.clear();
  for (int i : order) {
    const cv::Rect2d& bi = boxes[static_cast<std::size_t>(i)];
    bool keep = true;
    for (int k : kept) {
      const cv::Rect2d& bk = boxes[static_cast<std::size_t>(k)];
      const double inter = (bi & bk).area();
      const double uni = bi.area() + bk.area() - inter;
      if (uni > 0 && inter / uni > iou) {
        keep = false;
        break;
      }
    }
    if (!keep) continue;
    kept.push_back(i);
    if (kept.size() >= max_keep) break;
  }
}

namespace {

// What the decoder keeps between frames (grown once, reused).
struct DecodeScratch {
  std::vector<float> best;
  std::vector<int> best_class;
  std::vector<char> class_on;
  std::vector<cv::Rect2d> boxes;  // offset per class for class-aware NMS
  std::vector<cv::Rect2d> source_boxes;
  std::vector<float> scores;
  std::vector<int> classes;
  std::vector<int> order;  // NMS candidates, best first
  std::vector<int> kept;
};

// The model output read field-major: field f of anchor a is base[f * fs + a * as].
struct FieldView {
  const float* base = nullptr;
  std::int64_t fs = 0;  // floats between fields
  std::int64_t as = 0;  // floats between anchors
  YoloShape shape;
  std::int64_t first_class() const { return shape.layout == YoloLayout::V8 ? 4 : 5; }
  float at(std::int64_t field, std::int64_t anchor) const { return base[field * fs + anchor * as]; }
};

// The best class and its score per anchor (V5: times the objectness).
// Returns whether a score read was NaN.
bool score_anchors(const FieldView& v, const YoloParams& params, DecodeScratch& s) {
  const std::int64_t A = v.shape.anchors, C = v.shape.classes;
  s.best.assign(static_cast<std::size_t>(A), -1.f);
  s.best_class.assign(static_cast<std::size_t>(A), -1);
  s.class_on.assign(static_cast<std::size_t>(C), params.classes.empty() ? 1 : 0);
  for (int c : params.classes)
    s.class_on[static_cast<std::size_t>(c)] = 1;
  bool nan = false;
  // Rows are contiguous in V8: scan class by class.
  for (std::int64_t c = 0; c < C; ++c) {
    if (!s.class_on[static_cast<std::size_t>(c)]) continue;
    const float* row = v.base + (v.first_class() + c) * v.fs;
    float* best = s.best.data();
    int* best_class = s.best_class.data();
    const int ci = static_cast<int>(c);
    if (v.as == 1) {  // V8: a contiguous row, branch-free so that it vectorizes
      int nans = 0;
      for (std::int64_t a = 0; a < A; ++a) {
        const float x = row[a];
        const bool gt = x > best[a];
        nans |= static_cast<int>(x != x);
        best[a] = gt ? x : best[a];
        best_class[a] = gt ? ci : best_class[a];
      }
      nan |= nans != 0;
    } else {
      for (std::int64_t a = 0; a < A; ++a) {
        const float x = row[a * v.as];
        nan |= std::isnan(x);
        if (x > best[a]) {
          best[a] = x;
          best_class[a] = ci;
        }
      }
    }
  }
  if (v.shape.layout == YoloLayout::V5) {  // score = objectness x class score
    for (std::int64_t a = 0; a < A; ++a) {
      const float obj = v.at(4, a);
      nan |= std::isnan(obj);
      s.best[static_cast<std::size_t>(a)] *= obj;
    }
  }
  return nan;
}

// The anchors at or above the confidence, as boxes in source pixels (and,
// for class-aware NMS, offset per class so that classes never overlap).
Status collect_candidates(const FieldView& v, const NeatTensor& raw, const YoloParams& params,
                          DecodeScratch& s) {
  const FrameGeometry& g = raw.meta().geometry;
  const double span = std::max<double>(
      {static_cast<double>(g.source_width), static_cast<double>(g.source_height), 1e6});
  s.boxes.clear();
  s.source_boxes.clear();
  s.scores.clear();
  s.classes.clear();
  for (std::int64_t a = 0; a < v.shape.anchors; ++a) {
    const float score = s.best[static_cast<std::size_t>(a)];
    if (!(score >= params.confidence) || s.best_class[static_cast<std::size_t>(a)] < 0) continue;
    const float cx = v.at(0, a), cy = v.at(1, a), w = v.at(2, a), h = v.at(3, a);
    if (std::isnan(cx) || std::isnan(cy) || std::isnan(w) || std::isnan(h)) {
      return invalid_argument("yolo: the model output " + raw.to_string() +
                              " has a NaN box at anchor " + std::to_string(a) +
                              ": the model or its input is broken");
    }
    const auto p1 = g.to_source_clamped(cx - w / 2.0, cy - h / 2.0);
    const auto p2 = g.to_source_clamped(cx + w / 2.0, cy + h / 2.0);
    const int cls = s.best_class[static_cast<std::size_t>(a)];
    const double off = params.class_agnostic ? 0.0 : static_cast<double>(cls) * 2.0 * span;
    s.source_boxes.emplace_back(p1.x, p1.y, p2.x - p1.x, p2.y - p1.y);
    s.boxes.emplace_back(p1.x + off, p1.y + off, p2.x - p1.x, p2.y - p1.y);
    s.scores.push_back(score);
    s.classes.push_back(cls);
  }
  return {};
}

// The kept boxes as [n, 6] rows (x1, y1, x2, y2, score, class) of the same
// frame, now in its source pixels.
Result<NeatTensor> detections_tensor(const NeatTensor& raw, const YoloParams& params,
                                     const DecodeScratch& s, const ConversionOptions& options) {
  const auto n = static_cast<std::int64_t>(
      std::min<std::size_t>(s.kept.size(), static_cast<std::size_t>(params.max_detections)));
  NEAT_ASSIGN_OR_RETURN(NeatTensor dets,
                        NeatTensor::allocate(DType::F32, {params.max_detections, 6},
                                             AllocOptions{false, options.allocator}));
  NEAT_ASSIGN_OR_RETURN(dets, std::move(dets).make_writable());
  {
    NEAT_ASSIGN_OR_RETURN(Mapping w, dets.map(MapMode::Write));
    auto* row = reinterpret_cast<float*>(w.mutable_data());
    for (std::int64_t i = 0; i < n; ++i, row += 6) {
      const int k = s.kept[static_cast<std::size_t>(i)];
      const cv::Rect2d& b = s.source_boxes[static_cast<std::size_t>(k)];
      row[0] = static_cast<float>(b.x);
      row[1] = static_cast<float>(b.y);
      row[2] = static_cast<float>(b.x + b.width);
      row[3] = static_cast<float>(b.y + b.height);
      row[4] = s.scores[static_cast<std::size_t>(k)];
      row[5] = static_cast<float>(s.classes[static_cast<std::size_t>(k)]);
    }
  }
  NEAT_ASSIGN_OR_RETURN(NeatTensor result, dets.narrow(0, 0, n));
  const FrameGeometry& g = raw.meta().geometry;
  FrameMeta meta = raw.meta();
  meta.geometry = FrameGeometry{};
  meta.geometry.source_width = g.source_width;
  meta.geometry.source_height = g.source_height;
  result.set_meta(meta);
  return result;
}

Status check_model_output(const NeatTensor& raw) {
  if (!raw.defined()) return failed_precondition("yolo: the model output is undefined");
  if (raw.device().type != DeviceType::Cpu) {
    return failed_precondition("yolo: the model output is not in CPU memory; cpu() it first");
  }
  if (raw.is_image()) {
    return invalid_argument("yolo: got the image " + raw.to_string() +
                            ", not a detector's output (put `infer` before `yolo`)");
  }
  return {};
}

}  // namespace

struct YoloDecoder::Scratch : DecodeScratch {};

YoloDecoder::YoloDecoder(YoloParams params)
    : params_(std::move(params)), scratch_(std::make_unique<Scratch>()) {}
YoloDecoder::~YoloDecoder() = default;
YoloDecoder::YoloDecoder(YoloDecoder&&) noexcept = default;
YoloDecoder& YoloDecoder::operator=(YoloDecoder&&) noexcept = default;
const YoloParams& YoloDecoder::params() const noexcept {
  return params_;
}

Result<NeatTensor> YoloDecoder::decode(const NeatTensor& raw, const ConversionOptions& options,
                                       std::source_location where) {
  NEAT_RETURN_IF_ERROR(check_model_output(raw));
  FieldView view;
  NEAT_ASSIGN_OR_RETURN(view.shape, yolo_shape(raw.shape(), params_));
  NeatTensor out_f32 = raw;
  if (raw.dtype() != DType::F32) {  // explicit, recorded once per frame
    NEAT_ASSIGN_OR_RETURN(out_f32, convert_dtype(raw, DType::F32, options, where));
  }
  // The field-major view [fields, anchors]: the output itself (V8) or its
  // transpose (V5). No bytes move.
  NEAT_ASSIGN_OR_RETURN(NeatTensor fields, out_f32.squeeze(0));
  if (view.shape.layout == YoloLayout::V5) {
    NEAT_ASSIGN_OR_RETURN(fields, fields.transpose(0, 1));
  }
  view.fs = fields.strides()[0] / 4;  // in floats
  view.as = fields.strides()[1] / 4;
  NEAT_ASSIGN_OR_RETURN(Mapping map, fields.map(MapMode::Read));
  view.base = reinterpret_cast<const float*>(map.data());

  Scratch& s = *scratch_;
  if (score_anchors(view, params_, s)) {
    return invalid_argument(
        "yolo: the model output " + raw.to_string() +
        " has NaN scores: the model or its input is broken (check the preprocess "
        "normalization and the model file)");
  }
  NEAT_RETURN_IF_ERROR(collect_candidates(view, raw, params_, s));
  suppress(s.boxes, s.scores, params_.confidence, params_.iou,
           static_cast<std::size_t>(params_.max_detections), s.order, s.kept);
  return detections_tensor(raw, params_, s, options);
}

Result<NeatTensor> decode_yolo(const NeatTensor& output, const YoloParams& params,
                               const ConversionOptions& options, std::source_location where) {
  YoloDecoder d(params);
  return d.decode(output, options, where);
}

}  // namespace neat

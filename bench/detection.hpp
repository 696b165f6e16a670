// The detection pipeline's parts shared by the inference benchmarks: test
// scenes (1080p NV12 with one bright object), the strongest OpenCV recipes
// for the letterbox preprocess and the YOLOv8 decode, the hand-written
// OpenCV loop, and the detection graph (push source -> preprocess -> infer
// -> yolo -> appsink) kept running between measurements.
#pragma once

#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <memory>
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>
#include <optional>
#include <string>
#include <vector>

#include <neat/neat.hpp>
#include <neat/stages/appsink.hpp>
#include <neat/stages/builtin.hpp>
#include <neat/stages/graph.hpp>
#include <neat/stages/inference.hpp>
#include <neat/stages/source.hpp>

#include "alloc_counter.hpp"
#include "frames.hpp"

namespace neat::bench {

/// A model the build generated (build/models).
inline std::string model_path(const std::string& file) {
  return std::string(NEAT_BENCH_MODEL_DIR) + "/" + file;
}
inline std::string detector_path() {
  return model_path("detector.onnx");
}

// A dark, slightly textured 1080p NV12 frame with a white square: one object
// for the detector, background it must reject.
inline neat::NeatTensor scene(int x, int y, int side) {
  auto f =
      neat::NeatTensor::allocate_image(neat::PixelFormat::NV12, 1920, 1080, {.zero_fill = false});
  auto w = std::move(*f).make_writable();
  {
    auto m = w->map(neat::MapMode::Write);
    cv::Mat luma(1080, 1920, CV_8UC1, *m->mutable_plane_data(neat::PlaneRole::Y),
                 static_cast<size_t>(w->plane_layout(0).row_stride));
    cv::randu(luma, 16, 80);
    cv::GaussianBlur(luma, luma, cv::Size(9, 9), 3);
    luma(cv::Rect(x, y, side, side)).setTo(235);
    cv::Mat chroma(540, 960, CV_8UC2, *m->mutable_plane_data(neat::PlaneRole::UV),
                   static_cast<size_t>(w->plane_layout(1).row_stride));
    chroma.setTo(cv::Scalar(128, 128));
  }
  return *std::move(w)->with_colorimetry(neat::kBT601Limited);
}

inline const std::vector<neat::NeatTensor>& scenes() {
  static const std::vector<neat::NeatTensor> frames = [] {
    std::vector<neat::NeatTensor> v;
    for (int i = 0; i < 4; ++i)
      v.push_back(scene(300 + 250 * i, 200 + 120 * i, 60 + 10 * i));
    return v;
  }();
  return frames;
}

inline neat::PreprocessParams letterbox_params() {
  neat::PreprocessParams p;
  p.resize_mode = neat::ResizeMode::Letterbox;
  p.batch_dim = true;
  return p;  // scale 1/255, no mean/std: what the detector takes
}

// The strongest OpenCV recipe for the letterbox preprocess: the Y and UV
// planes resized first to the letterboxed size (u8), cvtColorTwoPlane at
// that size, copyMakeBorder for the pad, dnn::blobFromImage (scale 1/255).
// Its Mats persist across frames.
struct LetterboxRecipe {
  void operator()(const Planes& in) {
    r = std::min(640.0 / in.y.cols, 640.0 / in.y.rows);
    const int w = static_cast<int>(std::lround(in.y.cols * r)) & ~1;
    const int h = static_cast<int>(std::lround(in.y.rows * r)) & ~1;
    left = (640 - w) / 2;
    top = (640 - h) / 2;
    cv::resize(in.y, y_small, cv::Size(w, h), 0, 0, cv::INTER_LINEAR);
    cv::resize(in.uv, uv_small, cv::Size(w / 2, h / 2), 0, 0, cv::INTER_LINEAR);
    cv::cvtColorTwoPlane(y_small, uv_small, rgb, cv::COLOR_YUV2RGB_NV12);
    cv::copyMakeBorder(rgb, boxed, top, 640 - h - top, left, 640 - w - left, cv::BORDER_CONSTANT,
                       cv::Scalar(114, 114, 114));
    cv::dnn::blobFromImage(boxed, blob, 1.0 / 255.0, cv::Size(), cv::Scalar(), false, false);
  }
  double r = 1;
  int left = 0, top = 0;
  cv::Mat y_small, uv_small, rgb, boxed, blob;  // blob: [1, 3, 640, 640] F32
};

// The usual YOLOv8 decode of a [1, 84, 8400] output: transpose, best class
// per anchor, NMSBoxes, boxes mapped back to the source.
struct YoloDecodeRecipe {
  void operator()(const float* output, int fields, int anchor_count, const LetterboxRecipe& pre) {
    cv::Mat rows(fields, anchor_count, CV_32F, const_cast<float*>(output));
    cv::transpose(rows, anchors);  // [8400, 84]
    boxes.clear();
    scores.clear();
    classes.clear();
    const auto r = static_cast<float>(pre.r);
    for (int a = 0; a < anchors.rows; ++a) {
      const float* p = anchors.ptr<float>(a);
      cv::Mat cls(1, anchors.cols - 4, CV_32F, const_cast<float*>(p + 4));
      double best = 0;
      cv::Point at;
      cv::minMaxLoc(cls, nullptr, &best, nullptr, &at);
      if (best < 0.25) continue;
      const float x = (p[0] - p[2] / 2 - static_cast<float>(pre.left)) / r;
      const float y = (p[1] - p[3] / 2 - static_cast<float>(pre.top)) / r;
      boxes.emplace_back(x, y, p[2] / r, p[3] / r);
      scores.push_back(static_cast<float>(best));
      classes.push_back(at.x);
    }
    cv::dnn::NMSBoxes(boxes, scores, 0.25f, 0.45f, keep);
    result.clear();
    for (int k : keep) {
      const cv::Rect2d& b = boxes[static_cast<std::size_t>(k)];
      result.push_back({static_cast<float>(b.x), static_cast<float>(b.y),
                        static_cast<float>(b.x + b.width), static_cast<float>(b.y + b.height),
                        scores[static_cast<std::size_t>(k)],
                        static_cast<float>(classes[static_cast<std::size_t>(k)])});
    }
    benchmark::DoNotOptimize(result.data());
  }
  cv::Mat anchors;
  std::vector<cv::Rect2d> boxes;
  std::vector<float> scores;
  std::vector<int> classes, keep;
  std::vector<std::array<float, 6>> result;
};

// The hand-written OpenCV loop: one frame in, detections [x1, y1, x2, y2,
// score, class] out: the letterbox recipe, setInput, forward, the decode.
struct OpenCvDetector {
  explicit OpenCvDetector(const std::string& path = detector_path())
      : net(cv::dnn::readNetFromONNX(path)) {
    net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
    net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
  }
  void operator()(const Planes& in) {
    pre(in);
    net.setInput(pre.blob);
    cv::Mat out = net.forward();  // [1, 84, 8400]
    post(out.ptr<float>(), out.size[1], out.size[2], pre);
  }
  const std::vector<std::array<float, 6>>& result() const { return post.result; }
  cv::dnn::Net net;
  LetterboxRecipe pre;
  YoloDecodeRecipe post;
};

// The graph, built once and kept running: each call pushes `n` frames and
// returns when the appsink has taken them all.
class DetectionGraph {
 public:
  /// The detector (default) or another model, on the backend its file takes.
  static std::unique_ptr<DetectionGraph> create(
      const std::string& model = detector_path(),
      neat::ModelBackend backend = neat::ModelBackend::Auto) {
    auto g = std::unique_ptr<DetectionGraph>(new DetectionGraph());
    return g->build(model, backend) ? std::move(g) : nullptr;
  }
  ~DetectionGraph() {
    if (!graph_) return;
    push_->end_of_stream();
    (void)graph_->wait();
  }
  bool run(std::int64_t n) {
    const auto& frames = scenes();
    const std::int64_t target = taken_.load() + n;
    for (std::int64_t i = 0; i < n; ++i) {
      if (!push_->push(frames[static_cast<std::size_t>(i) % frames.size()]).ok()) return false;
    }
    for (auto now = taken_.load(); now < target; now = taken_.load())
      taken_.wait(now);
    return true;
  }
  std::int64_t taken() const { return taken_.load(); }
  const neat::NeatTensor& last() const { return last_; }  // read when idle
  neat::Graph& graph() { return *graph_; }
  // Allocation counts at given frame numbers, read by the sink.
  std::atomic<std::int64_t> mark_from{-1}, mark_to{-1};
  std::atomic<std::uint64_t> allocs_from{0}, allocs_to{0};

 private:
  DetectionGraph() = default;
  bool build(const std::string& model, neat::ModelBackend backend) {
    push_ = neat::PushSource::create(neat::FrameSpec::of(scenes().front()), 4);
    auto infer = neat::infer_stage({.model = {.path = model, .backend = backend}});
    auto yolo = neat::yolo_stage({});
    if (!infer.ok() || !yolo.ok()) return false;
    auto out = neat::AppSink::create();
    out->set_callback([this](const neat::NeatTensorRef& t) {
      const std::int64_t k = taken_.load() + 1;
      if (k == mark_from.load()) allocs_from = allocation_count();
      if (k == mark_to.load()) allocs_to = allocation_count();
      last_ = t.to_owned();
      taken_.store(k);
      taken_.notify_all();
    });
    neat::GraphBuilder b("detect");
    b.add_source("cam", neat::shared_source(push_));
    b.add_stage("preprocess", neat::preprocess_stage(letterbox_params()));
    b.add_stage("infer", std::move(*infer));
    b.add_stage("yolo", std::move(*yolo));
    b.add_sink("out", out);
    if (!b.connect("cam", "preprocess").ok() || !b.connect("preprocess", "infer").ok() ||
        !b.connect("infer", "yolo").ok() || !b.connect("yolo", "out").ok()) {
      return false;
    }
    auto g = b.build();
    if (!g.ok()) return false;
    graph_.emplace(std::move(*g));
    return graph_->start().ok();
  }
  std::shared_ptr<neat::PushSource> push_;
  std::optional<neat::Graph> graph_;
  std::atomic<std::int64_t> taken_{0};
  neat::NeatTensor last_;
};

// Heap allocations per frame of a detection graph in steady state: the
// process-wide malloc count at frame `from` and at frame `to`, read by its
// sink. -1 (and the benchmark skipped) when the graph does not build.
inline double graph_allocs_per_frame(benchmark::State& state, const std::string& model,
                                     neat::ModelBackend backend, std::int64_t from,
                                     std::int64_t to) {
  auto graph = DetectionGraph::create(model, backend);
  if (!graph) {
    state.SkipWithError(("the detection graph did not build (is " + model + " there?)").c_str());
    return -1;
  }
  graph->mark_from = from;
  graph->mark_to = to;
  graph->run(to);
  return static_cast<double>(graph->allocs_to.load() - graph->allocs_from.load()) /
         static_cast<double>(to - from);
}

}  // namespace neat::bench

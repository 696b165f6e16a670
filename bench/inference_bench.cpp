// The detection pipeline (1080p NV12 -> letterbox preprocess 640x640 ->
// infer on the generated YOLOv8-shaped detector -> yolo decode -> appsink) as
// a stage graph, against the same work written by hand with OpenCV in one
// loop, as a skilled user writes it (target: the graph >= 1.3x its frame
// rate on 2 cores, the stages overlapping). Also the graph's heap
// allocations per frame in steady state and its bytes copied per frame
// against the plan's figure.
//
// The hand-written loop is the strongest OpenCV recipe: the Y and UV planes
// resized first to the letterboxed size (u8), cvtColorTwoPlane at that size,
// copyMakeBorder for the pad, dnn::blobFromImage (scale 1/255), setInput,
// forward, the usual YOLOv8 decode (transpose, best class per anchor,
// NMSBoxes, boxes mapped back to the source). Its Mats persist across
// frames; both sides use OpenCV's pool of 2 threads.
#include <chrono>
#include <opencv2/core/utility.hpp>

#include "detection.hpp"

namespace {

using namespace neat::bench;

// The first detection of each side on the same frame agree (same object, a
// few pixels): the two sides do the same work.
double first_box_gap(const neat::NeatTensor& ours, const OpenCvDetector& cv) {
  if (ours.rank() != 2 || ours.shape()[0] < 1 || cv.result().empty()) return -1;
  auto m = ours.map();
  const auto* p = reinterpret_cast<const float*>(m->data());
  double gap = 0;
  for (int i = 0; i < 4; ++i)
    gap = std::max(gap, static_cast<double>(std::abs(p[i] - cv.result().front()[i])));
  return gap;
}

// Paired: 24 frames through the running graph, then (or before: the order
// alternates) the same 24 frames through the hand-written loop.
void BM_Paired_DetectionGraphVsOpenCV(benchmark::State& state) {
  cv::setNumThreads(2);
  const auto& frames = scenes();
  const MappedPlanes planes(frames);
  OpenCvDetector by_hand;
  auto graph = DetectionGraph::create();
  if (!graph) {
    state.SkipWithError("the detection graph did not build (is build/models/detector.onnx there?)");
    return;
  }
  // Warm both (pools, OpenCV's first-run allocations), and check they agree.
  graph->run(4);
  for (std::size_t i = 0; i < frames.size(); ++i)
    by_hand(planes[i]);
  const double gap = first_box_gap(graph->last(), by_hand);
  constexpr std::int64_t n = 24;
  const auto before = neat::conversion_counters().snapshot();
  const std::int64_t taken_before = graph->taken();
  paired(
      state, [&] { benchmark::DoNotOptimize(graph->run(n)); },
      [&] {
        for (std::int64_t i = 0; i < n; ++i)
          by_hand(planes[static_cast<std::size_t>(i)]);
      });
  const auto d = neat::conversion_counters().snapshot().since(before);
  const double frames_run = static_cast<double>(graph->taken() - taken_before);
  const auto& plan = graph->graph().plan();
  // Copies per frame (transfers and packs: what the plan lists) against the
  // plan's figure; the preprocess's own convert is the stage's work.
  const double copied = static_cast<double>(d.total(neat::ConversionKind::Transfer).bytes +
                                            d.total(neat::ConversionKind::Pack).bytes) /
                        frames_run;
  state.counters["copied_B/frame"] = copied;
  state.counters["plan_B/frame"] =
      static_cast<double>(plan.edge_bytes_per_frame() + plan.inner_bytes_per_frame());
  state.counters["box_gap_px"] = gap;
  const double ours_us = state.counters["ours_us"];
  const double base_us = state.counters["baseline_us"];
  state.counters["fps_ours"] = ours_us > 0 ? n * 1e6 / ours_us : 0;
  state.counters["fps_opencv"] = base_us > 0 ? n * 1e6 / base_us : 0;
  state.counters["speedup"] = ours_us > 0 ? base_us / ours_us : 0;
}
BENCHMARK(BM_Paired_DetectionGraphVsOpenCV)->Unit(benchmark::kMillisecond)->Iterations(10);

// Where a frame's time goes in ours, one part after another on the calling
// thread (OpenCV's forward on its pool of 2): preprocess, Model::run, yolo decode.
void BM_Detection_Parts(benchmark::State& state) {
  cv::setNumThreads(2);
  using clock = std::chrono::steady_clock;
  const auto& frames = scenes();
  auto model = neat::Model::load({.path = detector_path()});
  if (!model.ok()) {
    state.SkipWithError("no detector model");
    return;
  }
  neat::YoloDecoder decoder({});
  double pre = 0, run = 0, dec = 0, n = 0;
  std::vector<neat::NeatTensor> outputs;
  for (auto _ : state) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
      const auto t0 = clock::now();
      auto x = neat::preprocess(frames[i], letterbox_params());
      const auto t1 = clock::now();
      (void)(*model)->run(*x, outputs);
      const auto t2 = clock::now();
      auto d = decoder.decode(outputs[0]);
      const auto t3 = clock::now();
      benchmark::DoNotOptimize(d);
      pre += std::chrono::duration<double, std::micro>(t1 - t0).count();
      run += std::chrono::duration<double, std::micro>(t2 - t1).count();
      dec += std::chrono::duration<double, std::micro>(t3 - t2).count();
      n += 1;
    }
  }
  state.counters["preprocess_us"] = pre / n;
  state.counters["model_run_us"] = run / n;
  state.counters["decode_us"] = dec / n;
}
BENCHMARK(BM_Detection_Parts)->Unit(benchmark::kMillisecond)->Iterations(10);

// Heap allocations per frame of the running detection graph in steady state:
// the process-wide malloc count at frame 20 and at frame 220.
void BM_Detection_AllocsPerFrame(benchmark::State& state) {
  cv::setNumThreads(2);
  double per_frame = -1;
  for (auto _ : state) {
    per_frame = graph_allocs_per_frame(state, detector_path(), neat::ModelBackend::Auto, 20, 220);
    if (per_frame < 0) return;
  }
  // OpenCV DNN allocates inside every forward() (per-layer bookkeeping; not
  // ours to change): measured alone on the same model, the difference is
  // what the graph itself allocates (NMSBoxes' internal vectors included).
  // Fed the graph's own inputs: the same scenes, preprocessed the same way
  // (the count can depend on the values: layers take other paths).
  cv::dnn::Net net = cv::dnn::readNetFromONNX(detector_path());
  const std::string name = net.getUnconnectedOutLayersNames()[0];
  std::vector<neat::NeatTensor> inputs;
  std::vector<neat::Mapping> maps;
  std::vector<cv::Mat> blobs;
  int dims[] = {1, 3, 640, 640};
  for (const neat::NeatTensor& scene : scenes()) {
    auto t = neat::preprocess(scene, letterbox_params());
    if (!t.ok()) {
      state.SkipWithError("preprocess failed");
      return;
    }
    inputs.push_back(*t);
  }
  maps.reserve(inputs.size());
  for (const auto& t : inputs) {
    maps.push_back(*t.map());
    blobs.emplace_back(4, dims, CV_32F, const_cast<std::byte*>(maps.back().data()));
  }
  for (int i = 0; i < 4; ++i) {
    net.setInput(blobs[static_cast<std::size_t>(i) % blobs.size()]);
    benchmark::DoNotOptimize(net.forward(name).data);
  }
  const std::uint64_t before = allocation_count();
  for (int i = 0; i < 20; ++i) {
    net.setInput(blobs[static_cast<std::size_t>(i) % blobs.size()]);
    benchmark::DoNotOptimize(net.forward(name).data);
  }
  const double forward_allocs = static_cast<double>(allocation_count() - before) / 20.0;
  state.counters["allocs/frame"] = per_frame;
  state.counters["opencv_forward_allocs"] = forward_allocs;
  state.counters["graph_own_allocs/frame"] = per_frame - forward_allocs;
}
BENCHMARK(BM_Detection_AllocsPerFrame)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

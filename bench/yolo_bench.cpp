// yolov8n, the timing model (the YOLOv8n network with fixed weights), in the
// detection graph on 1080p NV12 frames, on 2 cores:
//
// * the graph on backend=torch against the same graph on backend=opencv
//   (target: >= 2x the frame rate), both built once and kept running;
// * the graph on backend=torch against the same work written by hand on
//   libtorch the strongest way (target: >= 1.0x): the OpenCV letterbox
//   recipe, torch::from_blob over its blob, the module loaded, frozen and
//   run under InferenceMode with the graph's thread setting, the usual
//   YOLOv8 decode. The loop runs one frame after another; the graph
//   overlaps the preprocess of a frame with the model on the previous one.
//
// Also: bytes copied at the model boundary per frame (the graph's against
// the loop's: both 0), heap allocations per frame in steady state with
// torch's own (one forward of the same module, measured alone) counted
// apart, and the process's peak RSS.
#include <c10/core/CPUAllocator.h>
#include <sys/resource.h>
#include <torch/script.h>

#include <ATen/Parallel.h>
#include <chrono>
#include <opencv2/core/utility.hpp>

#include "detection.hpp"

namespace {

using namespace neat::bench;

// The hand-written libtorch loop. Its libtorch calls run on neat's torch
// thread, as docs/inference.md tells a user whose process also runs a graph:
// libtorch on a second thread would give OpenMP a second team, and with more
// team threads than cores both sides' forwards slow down by about a third.
struct TorchDetector {
  explicit TorchDetector(const std::string& path) {
    neat::on_torch_thread([&] {
      module = torch::jit::load(path);
      module.eval();
      module = torch::jit::freeze(module);
    });
  }
  void operator()(const Planes& in) {
    pre(in);
    at::Tensor out;
    neat::on_torch_thread([&] {
      c10::InferenceMode guard;
      inputs.clear();
      inputs.emplace_back(torch::from_blob(pre.blob.ptr<float>(), {1, 3, 640, 640}, torch::kFloat));
      out = module.forward(inputs).toTensor().contiguous();  // [1, 84, 8400]
      inputs.clear();
    });
    post(out.data_ptr<float>(), static_cast<int>(out.size(1)), static_cast<int>(out.size(2)), pre);
  }
  torch::jit::Module module;
  std::vector<c10::IValue> inputs;
  LetterboxRecipe pre;
  YoloDecodeRecipe post;
};

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

// Bytes the graph copied at the model boundary (model_input, model_output) since `before`.
double boundary_bytes(const neat::CountersSnapshot& d) {
  double bytes = 0;
  for (std::size_t k = 0; k < neat::kConversionKindCount; ++k) {
    for (bool e : {false, true}) {
      const auto kind = static_cast<neat::ConversionKind>(k);
      bytes += static_cast<double>(d.at(kind, neat::ConversionReason::ModelInput, e).bytes +
                                   d.at(kind, neat::ConversionReason::ModelOutput, e).bytes);
    }
  }
  return bytes;
}

void BM_Paired_Yolov8nTorchVsOpenCvGraph(benchmark::State& state) {
  auto on_torch = DetectionGraph::create(model_path("yolov8n.pt"), neat::ModelBackend::Torch);
  auto on_opencv = DetectionGraph::create(model_path("yolov8n.onnx"), neat::ModelBackend::OpenCv);
  if (!on_torch || !on_opencv) {
    state.SkipWithError("a yolov8n graph did not build (build/models/yolov8n.{pt,onnx}?)");
    return;
  }
  on_torch->run(3);  // warm: torch's first runs optimise the graph
  on_opencv->run(3);
  constexpr std::int64_t n = 4;
  const auto before = neat::conversion_counters().snapshot();
  const std::int64_t torch_before = on_torch->taken();
  paired(
      state, [&] { benchmark::DoNotOptimize(on_torch->run(n)); },
      [&] { benchmark::DoNotOptimize(on_opencv->run(n)); });
  const auto d = neat::conversion_counters().snapshot().since(before);
  const double torch_frames = static_cast<double>(on_torch->taken() - torch_before);
  const double ours_us = state.counters["ours_us"], base_us = state.counters["baseline_us"];
  state.counters["fps_torch"] = ours_us > 0 ? n * 1e6 / ours_us : 0;
  state.counters["fps_opencv"] = base_us > 0 ? n * 1e6 / base_us : 0;
  state.counters["speedup"] = ours_us > 0 ? base_us / ours_us : 0;
  // Both graphs' boundary bytes, per frame of the torch graph: OpenCV's alone.
  state.counters["opencv_boundary_B/frame"] = boundary_bytes(d) / torch_frames;
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_Paired_Yolov8nTorchVsOpenCvGraph)->Unit(benchmark::kMillisecond)->Iterations(4);

void BM_Paired_Yolov8nGraphVsLibtorchLoop(benchmark::State& state) {
  auto graph = DetectionGraph::create(model_path("yolov8n.pt"), neat::ModelBackend::Torch);
  if (!graph) {
    state.SkipWithError("the yolov8n graph did not build (build/models/yolov8n.pt?)");
    return;
  }
  const auto& frames = scenes();
  const MappedPlanes planes(frames);
  TorchDetector by_hand(model_path("yolov8n.pt"));  // the graph set torch's pool as it runs it
  graph->run(3);
  for (std::size_t i = 0; i < frames.size(); ++i)
    by_hand(planes[i]);
  constexpr std::int64_t n = 6;
  const auto before = neat::conversion_counters().snapshot();
  const std::int64_t taken_before = graph->taken();
  paired(
      state, [&] { benchmark::DoNotOptimize(graph->run(n)); },
      [&] {
        for (std::int64_t i = 0; i < n; ++i)
          by_hand(planes[static_cast<std::size_t>(i) % frames.size()]);
      });
  const auto d = neat::conversion_counters().snapshot().since(before);
  const double ours_us = state.counters["ours_us"], base_us = state.counters["baseline_us"];
  state.counters["fps_graph"] = ours_us > 0 ? n * 1e6 / ours_us : 0;
  state.counters["fps_libtorch_loop"] = base_us > 0 ? n * 1e6 / base_us : 0;
  state.counters["speedup"] = ours_us > 0 ? base_us / ours_us : 0;
  state.counters["boundary_B/frame"] =
      boundary_bytes(d) / static_cast<double>(graph->taken() - taken_before);
  state.counters["loop_boundary_B/frame"] = 0;  // from_blob over its blob; the output read in place
  int torch_threads = 0;
  neat::on_torch_thread([&] { torch_threads = at::get_num_threads(); });
  state.counters["torch_threads"] = torch_threads;
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_Paired_Yolov8nGraphVsLibtorchLoop)->Unit(benchmark::kMillisecond)->Iterations(4);

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// The block cache NeatTensor installs as libtorch's CPU allocator against
// torch's own (c10::GetDefaultCPUAllocator(), which gives every freed block
// back to the C library): yolov8n's Model::run on one preprocessed frame, 4
// forwards per side, the allocator switched at each side's start (the
// cache keeps its blocks while torch's runs). Also: page faults per forward
// on each side, and what the cache holds.
void BM_Paired_Yolov8nBlockCacheVsTorchAllocator(benchmark::State& state) {
  auto model = neat::Model::load({.path = model_path("yolov8n.pt"), .threads = 2});
  auto input = neat::preprocess(scenes().front(), letterbox_params());
  if (!model.ok() || !input.ok() || !neat::torch_block_cache_stats().installed) {
    state.SkipWithError("yolov8n.pt did not load, or the block cache is not installed");
    return;
  }
  c10::Allocator* cache = c10::GetCPUAllocator();
  c10::Allocator* torch_own = c10::GetDefaultCPUAllocator();
  std::vector<neat::NeatTensor> outputs;
  constexpr int n = 4;
  long faults[2] = {0, 0};
  auto side = [&](c10::Allocator* allocator, long& fault_count) {
    c10::SetCPUAllocator(allocator);
    const long before = minor_faults();
    for (int i = 0; i < n; ++i) {
      outputs.clear();
      benchmark::DoNotOptimize((*model)->run(*input, outputs));
    }
    outputs.clear();
    fault_count += minor_faults() - before;
  };
  side(cache, faults[0]);  // warm both
  side(torch_own, faults[1]);
  faults[0] = faults[1] = 0;
  const auto before = neat::torch_block_cache_stats();
  paired(
      state, [&] { side(cache, faults[0]); }, [&] { side(torch_own, faults[1]); });
  c10::SetCPUAllocator(cache);
  const auto after = neat::torch_block_cache_stats();
  const double forwards = static_cast<double>(state.iterations()) * n;
  state.counters["faults/forward_cache"] = static_cast<double>(faults[0]) / forwards;
  state.counters["faults/forward_torch"] = static_cast<double>(faults[1]) / forwards;
  state.counters["cache_held_MiB"] = static_cast<double>(after.held_bytes) / (1 << 20);
  state.counters["cache_from_system/forward"] =
      static_cast<double>(after.from_system - before.from_system) / forwards;
  state.counters["cache_reused/forward"] =
      static_cast<double>(after.reused - before.reused) / forwards;
}
BENCHMARK(BM_Paired_Yolov8nBlockCacheVsTorchAllocator)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(4);

// Heap allocations per frame of the running yolov8n graph on torch in steady
// state (the process-wide malloc count between frame 5 and frame 25), and
// torch's own: one forward of the same frozen module on the graph's inputs,
// measured alone. The difference is what the graph itself allocates.
void BM_Yolov8n_AllocsPerFrame(benchmark::State& state) {
  double per_frame = -1;
  for (auto _ : state) {
    per_frame =
        graph_allocs_per_frame(state, model_path("yolov8n.pt"), neat::ModelBackend::Torch, 5, 25);
    if (per_frame < 0) return;
  }
  auto model = neat::Model::load({.path = model_path("yolov8n.pt"), .threads = 2});
  auto input = neat::preprocess(scenes().front(), letterbox_params());
  if (!model.ok() || !input.ok()) {
    state.SkipWithError("yolov8n.pt did not load");
    return;
  }
  std::vector<neat::NeatTensor> outputs;
  for (int i = 0; i < 3; ++i) {
    (void)(*model)->run(*input, outputs);
    outputs.clear();
  }
  // Model::run's own share is a few objects (the output's storage and its
  // hold); the rest is torch's forward.
  const std::uint64_t before = allocation_count();
  for (int i = 0; i < 10; ++i) {
    (void)(*model)->run(*input, outputs);
    outputs.clear();
  }
  const double run_allocs = static_cast<double>(allocation_count() - before) / 10.0;
  // torch's forward alone, called as the hand-written loop calls it: what
  // Model::run adds around it is the difference.
  TorchDetector direct(model_path("yolov8n.pt"));
  auto mapped = input->map();
  std::vector<c10::IValue> args;
  auto forward = [&] {
    neat::on_torch_thread([&] {
      c10::InferenceMode guard;
      args.clear();
      args.emplace_back(torch::from_blob(const_cast<std::byte*>(mapped->data()), {1, 3, 640, 640},
                                         torch::kFloat));
      benchmark::DoNotOptimize(direct.module.forward(args).toTensor().data_ptr());
      args.clear();
    });
  };
  for (int i = 0; i < 3; ++i)
    forward();
  const std::uint64_t before_forward = allocation_count();
  for (int i = 0; i < 10; ++i)
    forward();
  const double forward_allocs = static_cast<double>(allocation_count() - before_forward) / 10.0;
  state.counters["allocs/frame"] = per_frame;
  state.counters["torch_forward_allocs"] = forward_allocs;
  state.counters["model_run_own_allocs"] = run_allocs - forward_allocs;
  state.counters["model_run_allocs"] = run_allocs;
  state.counters["graph_own_allocs/frame"] = per_frame - run_allocs;
}
BENCHMARK(BM_Yolov8n_AllocsPerFrame)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

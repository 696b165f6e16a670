// The preprocess pipeline (1080p NV12 -> fused preprocess 640x640 -> appsink)
// as a stage graph, against (a) the same work written by hand on the same
// frames in this process with the strongest recipes (recipes.hpp): OpenCV
// with the planes resized first, on OpenCV's 2 threads (target: the graph
// >= 1.5x its frame rate), and libyuv in two bands on the same pool; and
// with the NeatTensor kernel directly (the graph's own overhead); and (b) the
// stock GStreamer `videoconvert ! videoscale` pipeline to the same size
// (target: the graph >= 3x), both fed by videotestsrc. Also the heap
// allocations per frame of the graph in steady state (target 0).
#include <benchmark/benchmark.h>
#include <gst/gst.h>

#include <atomic>
#include <chrono>
#include <opencv2/core/utility.hpp>

#include <neat/neat.hpp>
#include <neat/stages/appsink.hpp>
#include <neat/stages/builtin.hpp>
#include <neat/stages/graph.hpp>
#include <neat/stages/gst_io.hpp>

#include "alloc_counter.hpp"
#include "frames.hpp"
#include "recipes.hpp"

namespace {

using namespace neat::bench;
constexpr std::int64_t kFrames = 120;

// Hands out the same few prepared frames in turn (handle copies: no bytes move).
class CyclingSource final : public neat::Source {
 public:
  CyclingSource(const std::vector<neat::NeatTensor>& frames, std::int64_t count)
      : frames_(frames), count_(count) {}
  std::string_view kind() const noexcept override { return "cycling"; }
  neat::Result<neat::FrameSpec> prepare() override { return neat::FrameSpec::of(frames_.front()); }
  neat::Result<std::optional<neat::NeatTensor>> next(const std::atomic<bool>&) override {
    if (n_ >= count_) return std::optional<neat::NeatTensor>();
    return std::optional<neat::NeatTensor>(
        frames_[static_cast<std::size_t>(n_++) % frames_.size()]);
  }

 private:
  const std::vector<neat::NeatTensor>& frames_;
  std::int64_t count_;
  std::int64_t n_ = 0;
};

const std::vector<neat::NeatTensor>& prepared_frames() {
  static const std::vector<neat::NeatTensor> frames = [] {
    std::vector<neat::NeatTensor> v;
    for (int i = 0; i < 4; ++i)
      v.push_back(nv12_1080p());
    return v;
  }();
  return frames;
}

// Runs the graph on `source`, counting frames in an appsink callback. With
// `steady`, *steady is set to the seconds between the sink's receipt of frame
// `warm` and of the last frame: the running pipeline's own rate, without
// build(), thread start-up and the first frame's pool fill.
std::int64_t run_graph(std::unique_ptr<neat::Source> source, double* steady = nullptr,
                       std::int64_t warm = 8) {
  neat::GraphBuilder b("bench");
  auto out = neat::AppSink::create();
  std::atomic<std::int64_t> n{0};
  std::chrono::steady_clock::time_point t0, t1;
  out->set_callback([&](const neat::NeatTensorRef&) {
    const std::int64_t i = ++n;
    if (i == warm) t0 = std::chrono::steady_clock::now();
    t1 = std::chrono::steady_clock::now();
  });
  b.add_source("cam", std::move(source));
  b.add_stage("pre", neat::preprocess_stage(model_params()));
  b.add_sink("out", out);
  (void)b.connect("cam", "pre");
  (void)b.connect("pre", "out");
  auto g = b.build();
  if (!g.ok() || !g->run().ok()) return -1;
  if (steady != nullptr) *steady = std::chrono::duration<double>(t1 - t0).count();
  return n.load();
}

void BM_Pipeline_Graph(benchmark::State& state) {
  cv::setNumThreads(2);
  const auto& frames = prepared_frames();
  for (auto _ : state) {
    if (run_graph(std::make_unique<CyclingSource>(frames, kFrames)) != kFrames) {
      state.SkipWithError("graph failed");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * kFrames);
}
BENCHMARK(BM_Pipeline_Graph)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_Pipeline_HandOpenCV(benchmark::State& state) {
  cv::setNumThreads(2);  // OpenCV's default here: both cores
  const auto& frames = prepared_frames();
  const MappedPlanes planes(frames);
  OpenCvRecipe chain(model_params(), true, cv::INTER_LINEAR);
  for (auto _ : state) {
    for (std::int64_t i = 0; i < kFrames; ++i)
      chain(planes[static_cast<std::size_t>(i)]);
  }
  state.SetItemsProcessed(state.iterations() * kFrames);
}
BENCHMARK(BM_Pipeline_HandOpenCV)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_Pipeline_HandLibyuv(benchmark::State& state) {
  cv::setNumThreads(2);
  const auto& frames = prepared_frames();
  const MappedPlanes planes(frames);
  LibyuvRecipe recipe(model_params(), 2);
  for (auto _ : state) {
    for (std::int64_t i = 0; i < kFrames; ++i)
      recipe(planes[static_cast<std::size_t>(i)]);
  }
  state.SetItemsProcessed(state.iterations() * kFrames);
}
BENCHMARK(BM_Pipeline_HandLibyuv)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_Pipeline_HandNeat(benchmark::State& state) {
  const auto& frames = prepared_frames();
  const auto params = model_params();
  for (auto _ : state) {
    for (std::int64_t i = 0; i < kFrames; ++i) {
      auto t = neat::preprocess(frames[static_cast<std::size_t>(i) % frames.size()], params,
                                {.threads = 2});
      benchmark::DoNotOptimize(t);
    }
  }
  state.SetItemsProcessed(state.iterations() * kFrames);
}
BENCHMARK(BM_Pipeline_HandNeat)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

// videotestsrc -> NeatTensor graph (fused preprocess) vs videotestsrc ->
// videoconvert ! videoscale to 640x640 RGB (stock GStreamer), same frames.
void BM_Pipeline_GstGraph(benchmark::State& state) {
  for (auto _ : state) {
    if (run_graph(neat::gst_source(neat::default_gst_source_description(kFrames))) != kFrames) {
      state.SkipWithError("graph failed");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * kFrames);
}
BENCHMARK(BM_Pipeline_GstGraph)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_Pipeline_GstStock(benchmark::State& state) {
  (void)neat::ensure_gstreamer();
  const std::string description = neat::default_gst_source_description(kFrames) +
                                  " ! videoconvert ! videoscale ! "
                                  "video/x-raw,format=RGB,width=640,height=640 ! fakesink";
  for (auto _ : state) {
    GstElement* p = gst_parse_launch(description.c_str(), nullptr);
    gst_element_set_state(p, GST_STATE_PLAYING);
    GstBus* bus = gst_element_get_bus(p);
    GstMessage* m = gst_bus_timed_pop_filtered(
        bus, GST_CLOCK_TIME_NONE, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    const bool ok = m != nullptr && GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS;
    if (m != nullptr) gst_message_unref(m);
    gst_object_unref(bus);
    gst_element_set_state(p, GST_STATE_NULL);
    gst_object_unref(p);
    if (!ok) {
      state.SkipWithError("stock GStreamer pipeline failed");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * kFrames);
}
BENCHMARK(BM_Pipeline_GstStock)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

// Paired, steady state: a graph run's frames 8..8+n (timed at its appsink)
// and n frames of the hand-written loop alternate, order swapped every
// iteration (machine noise hits both). The loop is the strongest OpenCV
// recipe (planes resized first), or libyuv. `setup_ms` is what a graph run
// spends before its steady state (build, threads, the first frames' pool
// fill), reported apart.
template <class Recipe>
void paired_pipeline(benchmark::State& state, Recipe& chain) {
  const auto& frames = prepared_frames();
  const MappedPlanes planes(frames);
  constexpr std::int64_t warm = 8, n = 48;
  double graph_s = 0, hand_s = 0, whole_s = 0;
  bool graph_first = true;
  for (auto _ : state) {
    for (int side = 0; side < 2; ++side) {
      if ((side == 0) == graph_first) {
        double steady = 0;
        const auto t0 = std::chrono::steady_clock::now();
        if (run_graph(std::make_unique<CyclingSource>(frames, warm + n), &steady, warm) !=
            warm + n) {
          state.SkipWithError("graph failed");
          return;
        }
        whole_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        graph_s += steady;
      } else {
        const auto t0 = std::chrono::steady_clock::now();
        for (std::int64_t i = 0; i < n; ++i)
          chain(planes[static_cast<std::size_t>(i)]);
        hand_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
    }
    graph_first = !graph_first;
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["ours_us"] = graph_s / iters / n * 1e6;  // per frame
  state.counters["baseline_us"] = hand_s / iters / n * 1e6;
  state.counters["ratio"] = graph_s / hand_s;
  state.counters["setup_ms"] = (whole_s - graph_s * (warm + n) / n) / iters * 1e3;
}
void BM_Paired_PipelineVsOpenCV(benchmark::State& state) {
  cv::setNumThreads(2);
  OpenCvRecipe chain(model_params(), true, cv::INTER_LINEAR);
  paired_pipeline(state, chain);
}
BENCHMARK(BM_Paired_PipelineVsOpenCV)->Unit(benchmark::kMillisecond)->Iterations(20);
void BM_Paired_PipelineVsLibyuv(benchmark::State& state) {
  cv::setNumThreads(2);
  LibyuvRecipe chain(model_params(), 2);
  paired_pipeline(state, chain);
}
BENCHMARK(BM_Paired_PipelineVsLibyuv)->Unit(benchmark::kMillisecond)->Iterations(20);

// Paired: videotestsrc -> graph (fused preprocess) against videotestsrc ->
// videoconvert ! videoscale (stock GStreamer), 40 frames each, alternating.
void BM_Paired_PipelineVsGstStock(benchmark::State& state) {
  (void)neat::ensure_gstreamer();
  constexpr std::int64_t n = 40;
  const std::string stock = neat::default_gst_source_description(n) +
                            " ! videoconvert ! videoscale ! "
                            "video/x-raw,format=RGB,width=640,height=640 ! fakesink";
  paired(
      state,
      [&] {
        benchmark::DoNotOptimize(
            run_graph(neat::gst_source(neat::default_gst_source_description(n))));
      },
      [&] {
        GstElement* p = gst_parse_launch(stock.c_str(), nullptr);
        gst_element_set_state(p, GST_STATE_PLAYING);
        GstBus* bus = gst_element_get_bus(p);
        GstMessage* m = gst_bus_timed_pop_filtered(
            bus, GST_CLOCK_TIME_NONE,
            static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
        if (m != nullptr) gst_message_unref(m);
        gst_object_unref(bus);
        gst_element_set_state(p, GST_STATE_NULL);
        gst_object_unref(p);
      });
}
BENCHMARK(BM_Paired_PipelineVsGstStock)->Unit(benchmark::kMillisecond)->Iterations(10);

// Heap allocations per frame in steady state: the process-wide malloc count
// read by the sink at frame 2 and at frame 1,202 of one run. (The first frame
// fills the stage's pool with every buffer the queues can hold in flight.)
void BM_Pipeline_AllocsPerFrame(benchmark::State& state) {
  const auto& frames = prepared_frames();
  double per_frame = -1;
  for (auto _ : state) {
    neat::GraphBuilder b("allocs");
    auto out = neat::AppSink::create();
    std::int64_t n = 0;
    std::uint64_t at_start = 0, at_end = 0;
    out->set_callback([&](const neat::NeatTensorRef&) {
      ++n;
      if (n == 2) at_start = allocation_count();
      if (n == 1202) at_end = allocation_count();
    });
    b.add_source("cam", std::make_unique<CyclingSource>(frames, 1202));
    b.add_stage("pre", neat::preprocess_stage(model_params()));
    b.add_sink("out", out);
    (void)b.connect("cam", "pre");
    (void)b.connect("pre", "out");
    auto g = b.build();
    if (!g.ok() || !g->run().ok()) {
      state.SkipWithError("graph failed");
      return;
    }
    per_frame = static_cast<double>(at_end - at_start) / 1200.0;
  }
  state.counters["allocs/frame"] = per_frame;
}
BENCHMARK(BM_Pipeline_AllocsPerFrame)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

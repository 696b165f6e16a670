// The fused preprocess (1080p NV12 -> 640x640 normalized F32 CHW) against
// every way a skilled user would do the same work with the best libraries,
// paired in one loop: each iteration runs every way once, in an order that
// rotates, so load and cache state hit all of them alike. Figures are
// per-way mean times and ratios to ours; the targets (issue: preprocess at
// the speed of memory) are judged on `vs_best` (ours / the fastest recipe)
// and `vs_floor` (ours / reading the frame once and writing the tensor once).
//
//   opencv     cvtColorTwoPlane (1080p RGB), resize (u8), split (u8), convertTo
//              with scale and offset straight into the CHW planes
//   blob       cvtColorTwoPlane + dnn::blobFromImage (what most detector code
//              does; blobFromImage has no per-channel std, so it does less)
//   planes     resize the Y and UV planes first (u8), cvtColorTwoPlane at
//              640x640, split, convertTo into the CHW planes
//   libyuv     NV12Scale (bilinear) to 640x640, NV12ToRAW (RGB), one float loop
//   floor      read every byte of the frame + write every byte of the tensor
//
// With 2 threads OpenCV runs its own pool; libyuv (single-threaded) and the
// floor run as two halves on OpenCV's pool, as a user would split them.
#include <benchmark/benchmark.h>

#include <libyuv/convert_argb.h>
#include <libyuv/scale.h>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <numeric>
#include <opencv2/core/utility.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include <neat/kernels/preprocess.hpp>
#include <neat/neat.hpp>

#include "alloc_counter.hpp"
#include "frames.hpp"
#include "recipes.hpp"

namespace {

using namespace neat::bench;

// Runs `ways` in rotated order every iteration; reports each way's mean time
// and ours / way (ours is ways[0]; the last way is the floor).
void paired_ways(benchmark::State& state, const std::vector<std::string>& names,
                 const std::vector<std::function<void()>>& ways) {
  const std::size_t n = ways.size();
  std::vector<double> ns(n, 0.0);
  std::size_t start = 0;
  for (auto _ : state)
    rotated_round(ways, ns, start);
  const double iters = static_cast<double>(state.iterations());
  double best = 1e300;
  for (std::size_t w = 0; w < n; ++w) {
    state.counters[names[w] + "_us"] = ns[w] / iters / 1e3;
    if (w > 0) state.counters["ours/" + names[w]] = ns[0] / ns[w];
    if (w > 0 && w + 1 < n) best = std::min(best, ns[w]);
  }
  state.counters["vs_best"] = ns[0] / best;
  state.counters["vs_floor"] = ns[0] / ns[n - 1];
}

void BM_PreprocessRecipes(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  cv::setNumThreads(threads);
  const auto f = nv12_1080p();
  auto m = f.map();
  const Planes p = mats_of(*m, f);
  const auto prm = model_params();
  OpenCvRecipe opencv(prm, false, cv::INTER_LINEAR), planes(prm, true, cv::INTER_LINEAR);
  BlobRecipe blob(prm);
  LibyuvRecipe yuv(prm, threads);
  Floor floor(3 * kOut * kOut, threads);
  const std::vector<cv::Mat> frame_planes = {p.y, p.uv};
  const neat::ConversionOptions options{.threads = threads};
  paired_ways(
      state, {"neat", "opencv", "blob", "planes", "libyuv", "floor"},
      {[&] { benchmark::DoNotOptimize(neat::preprocess(f, prm, options)); }, [&] { opencv(p); },
       [&] { blob(p); }, [&] { planes(p); }, [&] { yuv(p); }, [&] { floor(frame_planes); }});
  state.SetLabel(neat::preprocess_simd_target());
}
BENCHMARK(BM_PreprocessRecipes)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// interp=area (antialiased) against OpenCV's INTER_AREA chains.
void BM_PreprocessAreaRecipes(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  cv::setNumThreads(threads);
  const auto f = nv12_1080p();
  auto m = f.map();
  const Planes p = mats_of(*m, f);
  auto prm = model_params();
  prm.interpolation = neat::Interpolation::Area;
  OpenCvRecipe opencv(prm, false, cv::INTER_AREA), planes(prm, true, cv::INTER_AREA);
  Floor floor(3 * kOut * kOut, threads);
  const std::vector<cv::Mat> frame_planes = {p.y, p.uv};
  const neat::ConversionOptions options{.threads = threads};
  paired_ways(state, {"neat", "opencv", "planes", "floor"},
              {[&] { benchmark::DoNotOptimize(neat::preprocess(f, prm, options)); },
               [&] { opencv(p); }, [&] { planes(p); }, [&] { floor(frame_planes); }});
}
BENCHMARK(BM_PreprocessAreaRecipes)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// A ratio with no periodic pattern (1920x1080 -> 608x608: the tables' blocks)
// and the letterbox of the detection demo, against the careful OpenCV chains.
void BM_PreprocessOtherShapes(benchmark::State& state) {
  const bool letterbox = state.range(0) == 1;
  cv::setNumThreads(1);
  const auto f = nv12_1080p();
  auto m = f.map();
  const Planes p = mats_of(*m, f);
  auto prm = model_params();
  if (letterbox) {
    prm.resize_mode = neat::ResizeMode::Letterbox;
  } else {
    prm.width = prm.height = 608;
  }
  // The planes-first recipe at the content size (letterbox: 640x360 + border).
  const neat::LetterboxBox box =
      letterbox ? neat::letterbox_box(1920, 1080, 640, 640) : neat::LetterboxBox{608, 608, 0, 0};
  cv::Mat ys, uvs, rgb, padded;
  std::vector<cv::Mat> u8;
  std::vector<float> chw(3 * static_cast<std::size_t>(prm.width * prm.height));
  std::vector<cv::Mat> out;
  for (int c = 0; c < 3; ++c)
    out.emplace_back(static_cast<int>(prm.height), static_cast<int>(prm.width), CV_32F,
                     chw.data() + c * prm.width * prm.height);
  auto planes = [&] {
    cv::resize(p.y, ys, cv::Size(static_cast<int>(box.width), static_cast<int>(box.height)), 0, 0,
               cv::INTER_LINEAR);
    cv::resize(p.uv, uvs,
               cv::Size(static_cast<int>(box.width / 2), static_cast<int>(box.height / 2)), 0, 0,
               cv::INTER_LINEAR);
    cv::cvtColorTwoPlane(ys, uvs, rgb, cv::COLOR_YUV2RGB_NV12);
    const int top = static_cast<int>(box.y), left = static_cast<int>(box.x);
    cv::copyMakeBorder(rgb, padded, top, static_cast<int>(prm.height - box.height - top), left,
                       static_cast<int>(prm.width - box.width - left), cv::BORDER_CONSTANT,
                       cv::Scalar::all(114));
    cv::split(padded, u8);
    for (int c = 0; c < 3; ++c) {
      const auto u = static_cast<std::size_t>(c);
      u8[u].convertTo(out[u], CV_32F, prm.scale / prm.std[u], -prm.mean[u] / prm.std[u]);
    }
    benchmark::DoNotOptimize(chw.data());
  };
  paired(
      state, [&] { benchmark::DoNotOptimize(neat::preprocess(f, prm, {.threads = 1})); }, planes);
}
BENCHMARK(BM_PreprocessOtherShapes)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Heap allocations per call once warm (target 0): output from the pool,
// tables and scratch reused.
void BM_PreprocessAllocations(benchmark::State& state) {
  const auto f = nv12_1080p();
  const auto prm = model_params();
  for (int i = 0; i < 8; ++i)
    benchmark::DoNotOptimize(neat::preprocess(f, prm, {.threads = 2}));
  const std::uint64_t before = allocation_count();
  for (auto _ : state)
    benchmark::DoNotOptimize(neat::preprocess(f, prm, {.threads = 2}));
  state.counters["allocs/op"] =
      static_cast<double>(allocation_count() - before) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_PreprocessAllocations)->Unit(benchmark::kMillisecond);

}  // namespace

// Conversion kernels against their OpenCV equivalents on the same data, in
// the same process. Targets (issue 3): NV12 -> RGB 1080p at least as fast as
// cv::cvtColor; the fused NV12 -> 640x640 normalized CHW F32 at least 2x
// faster than the OpenCV chain cvtColor + resize + convertTo + normalize +
// split, single-threaded and with 2 threads.
#include <benchmark/benchmark.h>

#include <chrono>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>

#include <neat/neat.hpp>
#include <neat/policy/color.hpp>
#include <neat/policy/preprocess.hpp>

#include "frames.hpp"

namespace {

using namespace neat::bench;

void BM_Nv12ToRgb_OpenCV(benchmark::State& state) {
  cv::setNumThreads(static_cast<int>(state.range(0)));
  const auto f = nv12_1080p();
  auto m = f.map();
  const Planes p = mats_of(*m, f);
  cv::Mat rgb;
  for (auto _ : state) {
    cv::cvtColorTwoPlane(p.y, p.uv, rgb, cv::COLOR_YUV2RGB_NV12);
    benchmark::DoNotOptimize(rgb.data);
  }
}
BENCHMARK(BM_Nv12ToRgb_OpenCV)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_Nv12ToRgb_Neat(benchmark::State& state) {
  cv::setNumThreads(static_cast<int>(state.range(0)));
  const auto f = nv12_1080p();
  for (auto _ : state) {
    auto rgb = neat::convert_color(f, neat::PixelFormat::RGB,
                                   {.threads = static_cast<int>(state.range(0))});
    benchmark::DoNotOptimize(rgb);
  }
}
BENCHMARK(BM_Nv12ToRgb_Neat)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_Preprocess_OpenCVChain(benchmark::State& state) {
  cv::setNumThreads(static_cast<int>(state.range(0)));
  const auto f = nv12_1080p();
  auto m = f.map();
  const Planes p = mats_of(*m, f);
  OpenCvChain chain(model_params());
  for (auto _ : state)
    chain(p);
}
BENCHMARK(BM_Preprocess_OpenCVChain)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_Preprocess_NeatFused(benchmark::State& state) {
  cv::setNumThreads(static_cast<int>(state.range(0)));
  const auto f = nv12_1080p();
  const auto prm = model_params();
  for (auto _ : state) {
    auto out = neat::preprocess(f, prm, {.threads = static_cast<int>(state.range(0))});
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_Preprocess_NeatFused)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

namespace {

void BM_Paired_Nv12ToRgb(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  cv::setNumThreads(threads);
  const auto f = nv12_1080p();
  auto m = f.map();
  const Planes p = mats_of(*m, f);
  cv::Mat rgb;
  paired(
      state,
      [&] {
        benchmark::DoNotOptimize(
            neat::convert_color(f, neat::PixelFormat::RGB, {.threads = threads}));
      },
      [&] {
        cv::cvtColorTwoPlane(p.y, p.uv, rgb, cv::COLOR_YUV2RGB_NV12);
        benchmark::DoNotOptimize(rgb.data);
      });
}
BENCHMARK(BM_Paired_Nv12ToRgb)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

void BM_Paired_Preprocess(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  cv::setNumThreads(threads);
  const auto f = nv12_1080p();
  auto m = f.map();
  const Planes p = mats_of(*m, f);
  const auto prm = model_params();
  OpenCvChain chain(prm);
  paired(
      state, [&] { benchmark::DoNotOptimize(neat::preprocess(f, prm, {.threads = threads})); },
      [&] { chain(p); });
}
BENCHMARK(BM_Paired_Preprocess)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

}  // namespace

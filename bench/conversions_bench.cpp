// Conversion kernels against their OpenCV equivalents on the same data, in
// the same process. Targets (issue 3): NV12 -> RGB 1080p at least as fast as
// cv::cvtColor; the fused NV12 -> 640x640 normalized CHW F32 at least 2x
// faster than the OpenCV chain cvtColor + resize + convertTo + normalize +
// split, single-threaded and with 2 threads.
#include <benchmark/benchmark.h>

#include <chrono>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>

#include <neat/kernels/color.hpp>
#include <neat/kernels/normalize.hpp>
#include <neat/kernels/preprocess.hpp>
#include <neat/neat.hpp>

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

namespace {

// Counts the bytes of the storages it hands out that are still alive, and the peak.
class PeakAllocator final : public neat::StorageAllocator {
 public:
  neat::Result<std::shared_ptr<neat::Storage>> allocate(const neat::AllocRequest& r) override {
    NEAT_ASSIGN_OR_RETURN(std::shared_ptr<neat::Storage> s, neat::default_allocator().allocate(r));
    const std::int64_t bytes = s->size_bytes();
    live_ += bytes;
    peak_ = std::max(peak_, live_);
    // Released with the storage: a shared_ptr aliasing the original.
    auto* self = this;
    return std::shared_ptr<neat::Storage>(s.get(), [s, self, bytes](neat::Storage*) mutable {
      self->live_ -= bytes;
      s.reset();
    });
  }
  std::int64_t peak() const { return peak_; }
  void reset_peak() { peak_ = live_; }

 private:
  std::int64_t live_ = 0;
  std::int64_t peak_ = 0;
};

// Ten in-place operations (normalize into the same dtype and layout) on a
// 1000x1000 F32 tensor: handing the buffer down the chain (donation) against
// a chain that keeps every intermediate (Donation::AlwaysCopy).
void in_place_chain(benchmark::State& state, bool donate) {
  PeakAllocator alloc;
  neat::NormalizeParams p;
  p.out_dtype = neat::DType::F32;
  p.out_layout = neat::Layout::HWC;
  p.scale = 1.0f;
  p.mean = {0.5f, 0.f, 0.f, 0.f};
  p.std = {2.0f, 1.f, 1.f, 1.f};
  p.donation = donate ? neat::Donation::ReuseIfUnique : neat::Donation::AlwaysCopy;
  double peak_buffers = 0;
  for (auto _ : state) {
    auto t = neat::NeatTensor::allocate(neat::DType::F32, {1000, 1000, 1},
                                        {.zero_fill = false, .allocator = &alloc});
    alloc.reset_peak();
    const std::int64_t one = t->nbytes();
    if (donate) {
      neat::NeatTensor x = std::move(*t);
      for (int i = 0; i < 10; ++i)
        x = *neat::normalize(std::move(x), p, {.allocator = &alloc});
      benchmark::DoNotOptimize(x);
    } else {
      std::vector<neat::NeatTensor> kept{*t};
      for (int i = 0; i < 10; ++i) {
        kept.push_back(*neat::normalize(kept.back(), p, {.allocator = &alloc}));
      }
      benchmark::DoNotOptimize(kept);
    }
    peak_buffers = static_cast<double>(alloc.peak()) / static_cast<double>(one);
  }
  state.counters["peak_buffers"] = peak_buffers;
}
void BM_InPlaceChain_Donated(benchmark::State& state) {
  in_place_chain(state, true);
}
void BM_InPlaceChain_AlwaysCopy(benchmark::State& state) {
  in_place_chain(state, false);
}
BENCHMARK(BM_InPlaceChain_Donated)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_InPlaceChain_AlwaysCopy)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace

// Conversion kernels against their OpenCV (and libyuv) equivalents on the
// same data, in the same process. Targets: NV12 / I420 -> RGB 1080p at least
// 1.5x as fast as cv::cvtColor on the same thread count. The fused
// preprocess against every recipe is in preprocess_bench.cpp; the paired
// preprocess here keeps the old chain (cvtColor + resize + convertTo +
// subtract + divide + split) for comparison with earlier figures.
#include <benchmark/benchmark.h>

#include <libyuv/convert_argb.h>
#include <chrono>
#include <cstring>
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

// I420 (canonical layout, as cv::cvtColor takes it) -> RGB.
void BM_Paired_I420ToRgb(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  cv::setNumThreads(threads);
  const auto nv12 = nv12_1080p();
  auto f = neat::NeatTensor::allocate_image(neat::PixelFormat::I420, 1920, 1080);
  auto w = std::move(*f).make_writable();
  {
    auto src = nv12.map();
    auto dst = w->map(neat::MapMode::Write);
    std::memcpy(*dst->mutable_plane_data(neat::PlaneRole::Y), *src->plane_data(neat::PlaneRole::Y),
                1920 * 1080);
    const std::byte* uv = *src->plane_data(neat::PlaneRole::UV);
    std::byte* u = *dst->mutable_plane_data(neat::PlaneRole::U);
    std::byte* v = *dst->mutable_plane_data(neat::PlaneRole::V);
    for (int i = 0; i < 960 * 540; ++i) {
      u[i] = uv[2 * i];
      v[i] = uv[2 * i + 1];
    }
  }
  const neat::NeatTensor i420 = *std::move(*w).with_colorimetry(neat::kBT601Limited);
  auto m = i420.map();
  const cv::Mat all(1620, 1920, CV_8UC1,
                    const_cast<std::byte*>(*m->plane_data(neat::PlaneRole::Y)));
  cv::Mat rgb;
  paired(
      state,
      [&] {
        benchmark::DoNotOptimize(
            neat::convert_color(i420, neat::PixelFormat::RGB, {.threads = threads}));
      },
      [&] {
        cv::cvtColor(all, rgb, cv::COLOR_YUV2RGB_I420);
        benchmark::DoNotOptimize(rgb.data);
      });
}
BENCHMARK(BM_Paired_I420ToRgb)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

// NV12 -> RGB against libyuv's NV12ToRAW (BT.601 limited, 6-bit chroma
// coefficients: faster arithmetic, less exact than ours and OpenCV's).
void BM_Paired_Nv12ToRgbLibyuv(benchmark::State& state) {
  cv::setNumThreads(1);
  const auto f = nv12_1080p();
  auto m = f.map();
  const Planes p = mats_of(*m, f);
  std::vector<std::uint8_t> rgb(1920 * 1080 * 3);
  paired(
      state,
      [&] {
        benchmark::DoNotOptimize(neat::convert_color(f, neat::PixelFormat::RGB, {.threads = 1}));
      },
      [&] {
        libyuv::NV12ToRAW(p.y.data, static_cast<int>(p.y.step), p.uv.data,
                          static_cast<int>(p.uv.step), rgb.data(), 1920 * 3, 1920, 1080);
        benchmark::DoNotOptimize(rgb.data());
      });
}
BENCHMARK(BM_Paired_Nv12ToRgbLibyuv)->Unit(benchmark::kMicrosecond);

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

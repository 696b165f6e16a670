// Storage backends: wrapping a GstSample (target <= 1 us, 0 bytes copied),
// memfd allocate + map against the pooled heap, GL upload / download
// bandwidth on llvmpipe (informational: llvmpipe runs on the CPU).
#include <benchmark/benchmark.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <neat/neat.hpp>

#include "alloc_counter.hpp"
#include "meter.hpp"

namespace {

using neat::bench::allocation_count;

using neat::bench::Meter;

// A 1080p NV12 sample as an appsink hands it out.
GstSample* make_sample() {
  (void)neat::ensure_gstreamer();
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_NV12, 1920, 1080);
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_add_video_meta(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_NV12, 1920, 1080);
  GstCaps* caps = gst_video_info_to_caps(&info);
  GstSample* sample = gst_sample_new(buffer, caps, nullptr, nullptr);
  gst_buffer_unref(buffer);
  gst_caps_unref(caps);
  return sample;
}

void BM_WrapGstSample(benchmark::State& state) {
  GstSample* sample = make_sample();
  {
    Meter m(state);
    for (auto _ : state) {
      auto t = neat::wrap_gst_sample(sample);
      benchmark::DoNotOptimize(t);
    }
  }
  gst_sample_unref(sample);
}
BENCHMARK(BM_WrapGstSample);

void BM_WrapGstSampleAndMap(benchmark::State& state) {
  GstSample* sample = make_sample();
  {
    Meter m(state);
    for (auto _ : state) {
      auto t = neat::wrap_gst_sample(sample);
      auto map = t->map();
      benchmark::DoNotOptimize(map->plane_data(neat::PlaneRole::UV));
    }
  }
  gst_sample_unref(sample);
}
BENCHMARK(BM_WrapGstSampleAndMap);

// Allocate a 1080p NV12 frame, map it for writing, touch one byte per page, drop it.
void alloc_map(benchmark::State& state, neat::StorageAllocator* allocator) {
  Meter m(state);
  for (auto _ : state) {
    auto t = neat::NeatTensor::allocate_image(neat::PixelFormat::NV12, 1920, 1080,
                                              {.zero_fill = false, .allocator = allocator});
    auto w = std::move(*t).make_writable();
    auto map = w->map(neat::MapMode::Write);
    std::byte* y = *map->mutable_plane_data(neat::PlaneRole::Y);
    for (std::int64_t i = 0; i < 1920 * 1080; i += 4096)
      y[i] = std::byte{1};
    benchmark::DoNotOptimize(y);
  }
}
void BM_AllocMapHeap(benchmark::State& state) {
  alloc_map(state, &neat::default_allocator());
}
void BM_AllocMapMemfd(benchmark::State& state) {
  alloc_map(state, &neat::shm_allocator());
}
// The same on memfd objects kept by a ShmPool (what auto_allocator() uses).
void BM_AllocMapMemfdPooled(benchmark::State& state) {
  auto pool = neat::ShmPool::create();
  alloc_map(state, pool.get());
}
BENCHMARK(BM_AllocMapHeap);
BENCHMARK(BM_AllocMapMemfd);
BENCHMARK(BM_AllocMapMemfdPooled);

neat::NeatTensor rgba_1080p() {
  auto t = neat::NeatTensor::allocate(neat::DType::U8, {1080, 1920, 4});
  return *std::move(t);
}

void BM_GlUpload1080pRgba(benchmark::State& state) {
  if (!neat::GlContext::for_device(0).ok()) {
    state.SkipWithError("no EGL/GLES");
    return;
  }
  const auto host = rgba_1080p();
  for (auto _ : state) {
    auto dev = neat::upload(host, neat::Device{neat::DeviceType::Gl, 0});
    benchmark::DoNotOptimize(dev);
  }
  state.SetBytesProcessed(state.iterations() * host.nbytes());
}
BENCHMARK(BM_GlUpload1080pRgba)->Unit(benchmark::kMillisecond);

void BM_GlDownload1080pRgba(benchmark::State& state) {
  auto ctx = neat::GlContext::for_device(0);
  if (!ctx.ok()) {
    state.SkipWithError("no EGL/GLES");
    return;
  }
  const auto dev = *neat::upload(rgba_1080p(), neat::Device{neat::DeviceType::Gl, 0});
  for (auto _ : state) {
    auto host = dev.cpu();
    benchmark::DoNotOptimize(host);
  }
  state.SetBytesProcessed(state.iterations() * dev.nbytes());
}
BENCHMARK(BM_GlDownload1080pRgba)->Unit(benchmark::kMillisecond);

}  // namespace

// Micro-benchmarks of the contract: views, map/unmap, make_writable (unique
// and shared), clone of a 1080p frame against memcpy of the same bytes, the
// no-conversion check, and recording one event. Each prints ns/op plus
// heap allocations/op and bytes copied/op; pairs measured against a baseline
// in the same process are printed as ratios at the end.
//
// Targets (issue 2): views and map <= 50 ns with 0 allocations; make_writable
// on a unique tensor copies 0 bytes; the no-conversion check <= 2 ns; clone
// within 1.2x of memcpy.
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <neat/neat.hpp>
#include <neat/telemetry/jsonl_sink.hpp>

#include "alloc_counter.hpp"
#include "meter.hpp"

namespace {

using neat::bench::allocation_count;

using neat::bench::Meter;

neat::NeatTensor frame_1080p() {
  auto t = neat::NeatTensor::allocate_image(neat::PixelFormat::RGB, 1920, 1080);
  return *std::move(t);
}

// The floor under every view: copying the tensor value (metadata + one
// shared storage reference, i.e. an atomic increment and decrement).
void BM_TensorCopyBaseline(benchmark::State& state) {
  auto t = *neat::NeatTensor::allocate(neat::DType::F32, {64, 64, 3});
  Meter m(state);
  for (auto _ : state) {
    neat::NeatTensor c = t;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_TensorCopyBaseline);

void BM_ViewSlice(benchmark::State& state) {
  auto t = *neat::NeatTensor::allocate(neat::DType::F32, {64, 64, 3});
  Meter m(state);
  for (auto _ : state) {
    auto v = t.slice(1, 8, 56, 2);
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_ViewSlice);

void BM_ViewTranspose(benchmark::State& state) {
  auto t = *neat::NeatTensor::allocate(neat::DType::F32, {64, 64, 3});
  Meter m(state);
  for (auto _ : state) {
    auto v = t.transpose(0, 1);
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_ViewTranspose);

void BM_ViewReshape(benchmark::State& state) {
  auto t = *neat::NeatTensor::allocate(neat::DType::F32, {64, 64, 3});
  Meter m(state);
  for (auto _ : state) {
    auto v = t.reshape({64 * 64, 3});
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_ViewReshape);

void BM_ViewCropRgb(benchmark::State& state) {
  auto t = frame_1080p();
  Meter m(state);
  for (auto _ : state) {
    auto v = t.crop(100, 100, 640, 640);
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_ViewCropRgb);

void BM_ViewCropNv12(benchmark::State& state) {
  auto t = *neat::NeatTensor::allocate_image(neat::PixelFormat::NV12, 1920, 1080);
  Meter m(state);
  for (auto _ : state) {
    auto v = t.crop(100, 100, 640, 640);
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_ViewCropNv12);

void BM_ViewPlane(benchmark::State& state) {
  auto t = *neat::NeatTensor::allocate_image(neat::PixelFormat::NV12, 1920, 1080);
  Meter m(state);
  for (auto _ : state) {
    auto v = t.plane(neat::PlaneRole::UV);
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_ViewPlane);

void BM_MapUnmapRead(benchmark::State& state) {
  auto t = frame_1080p();
  Meter m(state);
  for (auto _ : state) {
    auto map = t.map();
    benchmark::DoNotOptimize(map->data());
  }
}
BENCHMARK(BM_MapUnmapRead);

void BM_MapUnmapWrite(benchmark::State& state) {
  auto t = *std::move(frame_1080p()).make_writable();
  Meter m(state);
  for (auto _ : state) {
    auto map = t.map(neat::MapMode::Write);
    benchmark::DoNotOptimize(map->mutable_data());
  }
}
BENCHMARK(BM_MapUnmapWrite);

void BM_MakeWritableUnique(benchmark::State& state) {
  auto t = frame_1080p();
  Meter m(state);
  for (auto _ : state) {
    auto w = std::move(t).make_writable();
    t = *std::move(w);
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_MakeWritableUnique);

void BM_MakeWritableShared(benchmark::State& state) {
  auto t = frame_1080p();
  Meter m(state);
  for (auto _ : state) {
    neat::NeatTensor other = t;  // a second holder forces copy-on-write
    auto w = std::move(other).make_writable();
    benchmark::DoNotOptimize(w);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * t.nbytes());
}
BENCHMARK(BM_MakeWritableShared)->Unit(benchmark::kMicrosecond);

void BM_Clone1080p(benchmark::State& state) {
  auto t = frame_1080p();
  Meter m(state);
  for (auto _ : state) {
    auto c = t.clone();
    benchmark::DoNotOptimize(c);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * t.nbytes());
}
BENCHMARK(BM_Clone1080p)->Unit(benchmark::kMicrosecond);

void BM_Memcpy1080p(benchmark::State& state) {
  const std::size_t n = 1920 * 1080 * 3;
  std::vector<unsigned char> src(n, 1), dst(n, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_Memcpy1080p)->Unit(benchmark::kMicrosecond);

// What a consumer runs per frame when nothing needs converting: the check,
// with no gate call and no event.
void BM_GateNoConversion(benchmark::State& state) {
  auto t = frame_1080p();
  Meter m(state);
  for (auto _ : state) {
    benchmark::DoNotOptimize(neat::satisfies_contiguous(t));
  }
}
BENCHMARK(BM_GateNoConversion);

// The whole pass-through call, including moving the tensor in and out.
void BM_AcceptContiguousPassThrough(benchmark::State& state) {
  auto t = frame_1080p();
  Meter m(state);
  for (auto _ : state) {
    auto r = neat::accept_contiguous(std::move(t));
    t = *std::move(r);
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_AcceptContiguousPassThrough);

// Recording one event: counters plus delivery to one sink.
void BM_RecordEvent(benchmark::State& state) {
  struct Counting final : neat::EventSink {
    void on_event(const neat::ConversionEvent& e) noexcept override { bytes += e.bytes_written; }
    std::int64_t bytes = 0;
  };
  auto sink = std::make_shared<Counting>();
  auto reg = neat::add_event_sink(sink);
  neat::CopyRequest request;
  request.kind = neat::ConversionKind::Pack;
  request.reason = neat::ConversionReason::StrideMismatch;
  request.bytes = 1024;
  request.operation = "bench";
  request.where = std::source_location::current();
  const neat::CopyOutcome outcome{1024, 1024, 100};
  // Names longer than the strings' inline capacity: labeled metrics must not allocate.
  neat::ScopedContext ctx({.graph = "camera-pipeline",
                           .stage = "preprocess-stage",
                           .edge = "camera->preprocess-stage",
                           .frame = 7});
  Meter m(state);
  for (auto _ : state) {
    neat::policy_gate().record(request, neat::ConversionPolicy::AllowWithTrace, outcome);
  }
  benchmark::DoNotOptimize(sink->bytes);
}
BENCHMARK(BM_RecordEvent);

}  // namespace

namespace {

// Recording one event into the JSON Lines sink (formatting + buffered write,
// the write syscall amortised over 1 MiB chunks). Target: <= 200 ns.
void BM_JsonlRecordEvent(benchmark::State& state) {
  auto sink = neat::JsonlSink::open("/dev/null");
  if (!sink) {
    state.SkipWithError(sink.error().message().c_str());
    return;
  }
  neat::ConversionEvent e;
  e.kind = neat::ConversionKind::Pack;
  e.reason = neat::ConversionReason::StrideMismatch;
  e.explicit_call = false;
  e.policy = neat::ConversionPolicy::AllowWithTrace;
  e.bytes_written = e.bytes_read = 6220800;
  e.duration_ns = 512345;
  e.timestamp_ns = 1763750000123456789;
  e.thread_id = 3;
  e.operation = "stage 'detector' input";
  e.where = std::source_location::current();
  e.graph = "camera";
  e.stage = "detector";
  e.edge = "resize->detector";
  e.frame = 12345;
  e.source = {neat::DType::U8, neat::PixelFormat::RGB,  neat::Layout::HWC,
              neat::kCpu,      neat::StorageKind::Heap, 3,
              false,           {1080, 1920, 3, 0}};
  e.destination = e.source;
  e.destination.contiguous = true;
  Meter m(state);
  for (auto _ : state)
    (*sink)->on_event(e);
  benchmark::DoNotOptimize((*sink)->events());
}
BENCHMARK(BM_JsonlRecordEvent);

}  // namespace

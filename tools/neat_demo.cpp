// neat-demo: a tour of the NeatTensor contract on a built-in synthetic frame.
// It wraps a cv::Mat frame without copying, takes views, makes tensors
// writable (donated and copy-on-write), runs explicit conversions, shows an
// implicit conversion refused under Strict and allowed under trace, and
// prints every byte that was copied, with where it was copied from.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <opencv2/core.hpp>
#include <optional>
#include <string>

#include <neat/kernels/color.hpp>
#include <neat/kernels/preprocess.hpp>
#include <neat/neat.hpp>
#include <neat/telemetry/chrome_trace_sink.hpp>
#include <neat/telemetry/jsonl_sink.hpp>
#include <neat/telemetry/metrics.hpp>

namespace {

int fail(const neat::Error& e) {
  std::fprintf(stderr, "neat-demo: %s\n", e.to_string().c_str());
  return 1;
}

void step(const char* title) {
  std::printf("\n== %s\n", title);
}

std::string mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

// What the steps share: the frame's size, the tensors the first steps make
// and the later ones use, the pool, and where the copies are recorded.
struct Demo {
  int width, height, frames;
  std::shared_ptr<neat::MemorySink> sink;
  std::shared_ptr<neat::JsonlSink> jsonl;
  std::shared_ptr<neat::ChromeTraceSink> chrome;
  std::string jsonl_path, chrome_path;
  neat::NeatTensor bgr;
  std::optional<neat::NeatTensor> roi, transposed;
  std::shared_ptr<neat::HeapPool> pool;
};

// 1: a cv::Mat frame wrapped without a copy; the tensor outlives the Mat.
neat::Status wrap_frame(Demo& d) {
  step("1. wrap a cv::Mat frame without copying");
  cv::Mat frame(d.height, d.width, CV_8UC3);
  for (int r = 0; r < d.height; ++r) {
    auto* row = frame.ptr<cv::Vec3b>(r);
    for (int c = 0; c < d.width; ++c)
      row[c] = cv::Vec3b(c & 0xff, r & 0xff, (r + c) & 0xff);
  }
  auto wrapped = neat::wrap_mat_image(frame, neat::PixelFormat::BGR);
  if (!wrapped) return wrapped.error();
  d.bgr = *std::move(wrapped);
  {
    auto m = d.bgr.map();
    if (!m) return m.error();
    std::printf(
        "   %s\n   same bytes as the Mat: %s\n", d.bgr.to_string().c_str(),
        static_cast<const void*>(m->data()) == static_cast<const void*>(frame.data) ? "yes" : "NO");
  }
  frame.release();  // the tensor keeps the Mat's buffer alive
  std::printf("   caller's Mat released; tensor still valid: %s\n",
              d.bgr.identity().alive() ? "yes" : "NO");
  return {};
}

// 2: views are metadata only; an odd NV12 crop is refused.
neat::Status show_views(Demo& d) {
  step("2. views: crop, channel slice, transpose (no buffer allocated)");
  auto roi = d.bgr.crop(d.width / 4, d.height / 4, d.width / 2, d.height / 2);
  if (!roi) return roi.error();
  auto green = d.bgr.slice(2, 1, 2);
  if (!green) return green.error();
  auto transposed = d.bgr.transpose(0, 1);
  if (!transposed) return transposed.error();
  d.roi = *roi;
  d.transposed = *transposed;
  std::printf("   crop:      %s\n   channel:   %s\n   transpose: %s\n", roi->to_string().c_str(),
              green->to_string().c_str(), transposed->to_string().c_str());
  auto nv12 = neat::NeatTensor::allocate_image(neat::PixelFormat::NV12, d.width, d.height,
                                               {.row_alignment = 64});
  if (!nv12) return nv12.error();
  auto uv = nv12->plane(neat::PlaneRole::UV);
  if (!uv) return uv.error();
  std::printf("   NV12 frame: %s\n   its UV plane: %s\n", nv12->to_string().c_str(),
              uv->to_string().c_str());
  auto odd = nv12->crop(1, 0, 16, 16);
  std::printf("   an odd NV12 crop is refused: %s\n",
              odd ? "NO (accepted)" : odd.error().message().c_str());
  return {};
}

// 3: make_writable donates a tensor held alone and copies a shared one.
neat::Status show_make_writable(Demo& d) {
  step("3. make_writable: donated when held alone, copied when shared");
  auto scratch = neat::NeatTensor::allocate(neat::DType::F32, {d.height, d.width});
  if (!scratch) return scratch.error();
  const auto scratch_id = scratch->identity().id();
  auto donated = std::move(*scratch).make_writable();
  if (!donated) return donated.error();
  std::printf("   unique tensor: same buffer? %s (0 bytes copied)\n",
              donated->identity().id() == scratch_id ? "yes" : "NO");
  neat::NeatTensor shared = d.bgr;  // roi, green and transposed also share it
  auto cow = std::move(shared).make_writable();
  if (!cow) return cow.error();
  std::printf("   shared tensor: copy-on-write into %s\n", cow->to_string().c_str());
  {
    auto m = cow->map(neat::MapMode::Write);
    if (!m) return m.error();
    std::memset(m->mutable_data(), 0, static_cast<std::size_t>(cow->nbytes()));
  }
  std::printf("   the copy was zeroed; the original is untouched: pixel (0, 5) = %d\n",
              static_cast<int>(d.bgr.map()->data()[5 * 3]));
  return {};
}

// 4, 5: explicit conversions, and an implicit one under Strict and AllowWithTrace.
neat::Status show_conversions(Demo& d) {
  step("4. explicit conversions: contiguous() of the transposed view, clone() of the crop");
  auto packed = d.transposed->contiguous();
  if (!packed) return packed.error();
  auto roi_copy = d.roi->clone();
  if (!roi_copy) return roi_copy.error();
  auto again = packed->contiguous();  // already contiguous: no copy, no event
  if (!again) return again.error();

  step("5. an implicit conversion: refused under Strict, traced when allowed");
  {
    neat::ScopedPolicy strict(neat::ConversionPolicy::Strict);
    neat::ScopedContext ctx(
        {.graph = "demo", .stage = "detector", .edge = "camera->detector", .frame = 0});
    auto refused =
        neat::accept_contiguous(*d.transposed, {.requested_by = "stage 'detector' input"});
    std::printf("   Strict: %s\n",
                refused ? "accepted (unexpected)" : refused.error().message().c_str());
  }
  {
    neat::ScopedPolicy trace(neat::ConversionPolicy::AllowWithTrace);
    neat::ScopedContext ctx(
        {.graph = "demo", .stage = "detector", .edge = "camera->detector", .frame = 1});
    auto allowed =
        neat::accept_contiguous(*d.transposed, {.requested_by = "stage 'detector' input"});
    if (!allowed) return allowed.error();
    std::printf("   AllowWithTrace: performed and traced (%s)\n", allowed->to_string().c_str());
  }
  return {};
}

// 6: a frame loop the pool serves.
neat::Status steady_state(Demo& d) {
  step("6. steady state: a frame loop served by the buffer pool");
  d.pool = neat::HeapPool::create();
  for (int i = 0; i < d.frames; ++i) {
    auto f = neat::NeatTensor::allocate_image(neat::PixelFormat::NV12, d.width, d.height,
                                              {.zero_fill = false, .allocator = d.pool.get()});
    if (!f) return f.error();
    auto w = std::move(*f).make_writable();
    if (!w) return w.error();
  }
  const neat::HeapPoolStats ps = d.pool->stats();
  std::printf("   %d frames: %llu pool hits, %llu misses, %lld buffers in use\n", d.frames,
              static_cast<unsigned long long>(ps.hits), static_cast<unsigned long long>(ps.misses),
              static_cast<long long>(ps.in_use_buffers));
  return {};
}

// 7: a camera -> preprocess -> detector loop with an overlay that needs a pack.
neat::Status small_pipeline(Demo& d) {
  step("7. a small pipeline: camera (NV12) -> preprocess -> detector, overlay gets a strided view");
  {
    neat::ScopedPolicy trace(neat::ConversionPolicy::AllowWithTrace);
    neat::PreprocessParams model;
    model.width = 320;
    model.height = 320;
    for (int frame = 0; frame < 10; ++frame) {
      auto camera =
          neat::NeatTensor::allocate_image(neat::PixelFormat::NV12, d.width, d.height,
                                           {.zero_fill = false, .allocator = d.pool.get()});
      if (!camera) return camera.error();
      {
        neat::ScopedContext ctx(
            {.graph = "demo", .stage = "preprocess", .edge = "camera->preprocess", .frame = frame});
        auto input = neat::preprocess(*camera, model);
        if (!input) return input.error();
      }
      {
        // The overlay stage wants packed RGB; it is given a mirrored view.
        neat::ScopedContext ctx(
            {.graph = "demo", .stage = "overlay", .edge = "camera->overlay", .frame = frame});
        auto rgb = neat::convert_color(*camera, neat::PixelFormat::RGB);
        if (!rgb) return rgb.error();
        auto mirrored = rgb->transpose(0, 1);
        auto packed = neat::accept_contiguous(*mirrored, {.requested_by = "stage 'overlay' input"});
        if (!packed) return packed.error();
      }
    }
    std::printf(
        "   10 frames: one preprocess per frame, and an implicit pack per frame on "
        "camera->overlay\n");
  }
  return {};
}

// 8: auto allocation, DMA-BUF export and import, a GL round trip.
neat::Status shareable_storage(Demo& d) {
  step("8. shareable storage: auto allocation, fd export / DMA-BUF import, a GL round trip");
  {
    auto shared = neat::NeatTensor::allocate_image(neat::PixelFormat::NV12, d.width, d.height,
                                                   {.allocator = &neat::auto_allocator()});
    if (!shared) return shared.error();
    const neat::AutoAllocatorStats chain = neat::auto_allocator().stats();
    std::printf("   auto allocation chose %s",
                std::string(neat::to_string(shared->storage_kind())).c_str());
    for (const auto& f : chain.fallbacks) {
      std::printf(" (skipped %s: %s)", std::string(neat::to_string(f.from)).c_str(),
                  f.reason.c_str());
    }
    std::printf("\n");
    auto described = neat::export_dmabuf_image(*shared);
    if (!described) return described.error();
    auto imported = neat::wrap_dmabuf_image(described->image);
    if (!imported) return imported.error();
    std::printf(
        "   exported as %s %lldx%lld, planes at offsets %lld and %lld; re-imported: same "
        "buffer identity %s, same bytes, no copy\n",
        neat::fourcc_to_string(described->image.fourcc).c_str(),
        static_cast<long long>(described->image.width),
        static_cast<long long>(described->image.height),
        static_cast<long long>(described->image.planes[0].offset),
        static_cast<long long>(described->image.planes[1].offset),
        imported->identity().id() == shared->identity().id() ? "(yes)" : "(NO)");
    neat::ScopedContext ctx({.graph = "demo", .stage = "gl", .edge = "host->gl", .frame = 0});
    auto gpu = neat::upload(*shared, neat::Device{neat::DeviceType::Gl, 0});
    if (gpu) {
      auto back = gpu->cpu();
      if (!back) return back.error();
      std::printf("   GL (%s): upload and download, two recorded transfers\n",
                  (*neat::GlContext::for_device(0))->renderer().c_str());
    } else {
      std::printf("   GL skipped: %s\n", gpu.error().message().c_str());
    }
  }
  return {};
}

// What was copied: the events, the counters, the traces and the Prometheus text.
neat::Status summarise(const Demo& d) {
  step("What was copied (every copy, from the copy gate)");
  std::uint64_t total = 0;
  const auto events = d.sink->events();
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (i < 8) std::printf("   - %s\n", neat::to_string(events[i].event).c_str());
    total += static_cast<std::uint64_t>(events[i].event.bytes_written);
  }
  if (events.size() > 8)
    std::printf("   ... and %zu more (summarised by neat audit below)\n", events.size() - 8);
  const neat::CountersSnapshot counters = neat::conversion_counters().snapshot();
  std::printf("   total: %zu events, %s copied; counters: %llu packs (%s), %llu refused\n",
              d.sink->size(), mib(total).c_str(),
              static_cast<unsigned long long>(counters.total(neat::ConversionKind::Pack).count),
              mib(counters.total(neat::ConversionKind::Pack).bytes).c_str(),
              static_cast<unsigned long long>(counters.total().refused));
  if (d.jsonl) {
    if (auto st = d.jsonl->close(); !st) return st.error();
    std::printf("   trace (JSON Lines): %s; summarise it with: neat audit %s\n",
                d.jsonl_path.c_str(), d.jsonl_path.c_str());
  }
  if (d.chrome) {
    if (auto st = d.chrome->close(); !st) return st.error();
    std::printf("   trace (Chrome / Perfetto): %s\n", d.chrome_path.c_str());
  }
  std::printf("\nPrometheus metrics (neat::prometheus_text()), first lines:\n");
  const std::string prom = neat::prometheus_text();
  std::printf(
      "%s", prom.substr(0, prom.find('\n', prom.find("neat_conversion_bytes_total{")) + 1).c_str());
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"NeatTensor contract demo: zero-copy views, donation and recorded copies"};
  int width = 1280, height = 720, frames = 120;
  app.add_option("--width", width, "frame width in pixels")->check(CLI::Range(2, 16384));
  app.add_option("--height", height, "frame height in pixels")->check(CLI::Range(2, 16384));
  app.add_option("--frames", frames, "frames in the steady-state loop")
      ->check(CLI::Range(1, 100000));
  std::string jsonl_path, chrome_path;
  app.add_option("--trace-jsonl", jsonl_path, "also write every conversion as JSON Lines here");
  app.add_option("--trace-chrome", chrome_path,
                 "also write a Chrome trace (opens in Perfetto) here");
  CLI11_PARSE(app, argc, argv);

  auto sink = std::make_shared<neat::MemorySink>();
  auto registration = neat::add_event_sink(sink);
  neat::SinkRegistration jsonl_registration, chrome_registration;
  std::shared_ptr<neat::JsonlSink> jsonl;
  std::shared_ptr<neat::ChromeTraceSink> chrome;
  if (!jsonl_path.empty()) {
    auto j = neat::JsonlSink::open(jsonl_path);
    if (!j) return fail(j.error());
    jsonl = *j;
    jsonl_registration = neat::add_event_sink(jsonl);
  }
  if (!chrome_path.empty()) {
    auto c = neat::ChromeTraceSink::open(chrome_path);
    if (!c) return fail(c.error());
    chrome = *c;
    chrome_registration = neat::add_event_sink(chrome);
  }
  std::printf("NeatTensor demo: %dx%d BGR frame, policy %s (set NEAT_POLICY to change)\n", width,
              height, std::string(neat::to_string(neat::process_policy())).c_str());

  Demo d{width, height, frames, sink, jsonl, chrome, jsonl_path, chrome_path};
  for (auto* run : {wrap_frame, show_views, show_make_writable, show_conversions, steady_state,
                    small_pipeline, shareable_storage}) {
    if (neat::Status st = run(d); !st.ok()) return fail(st.error());
  }
  if (neat::Status st = summarise(d); !st.ok()) return fail(st.error());
  return 0;
}

// Built against the installed tree: find_package(NeatTensor), neat::neat, <neat/neat.hpp>.
#include <cstdio>

#include <neat/neat.hpp>
#include <neat/stages/appsink.hpp>
#include <neat/stages/builtin.hpp>
#include <neat/stages/graph.hpp>
#include <string>

int main() {
  auto frame = neat::NeatTensor::allocate_image(neat::PixelFormat::NV12, 64, 48);
  if (!frame) {
    std::fprintf(stderr, "%s\n", frame.error().to_string().c_str());
    return 1;
  }
  auto y = frame->plane(neat::PlaneRole::Y);
  auto copy = frame->clone();
  if (!y || !copy || y->shape()[1] != 64 || !copy->is_contiguous()) return 2;
  const auto packs = neat::conversion_counters().snapshot().total(neat::ConversionKind::Pack);
  std::printf("consumer ok: %s, %llu pack(s), %llu bytes\n", frame->to_string().c_str(),
              static_cast<unsigned long long>(packs.count),
              static_cast<unsigned long long>(packs.bytes));
  if (packs.count != 1) return 3;

  // Call sites inside the installed library are relative to its source tree.
  auto events = std::make_shared<neat::MemorySink>();
  auto registration = neat::add_event_sink(events);
  neat::GraphBuilder b("consumer");
  b.add_source("cam",
               neat::synthetic_source(neat::FrameSpec::image(neat::PixelFormat::NV12, 64, 48), 2));
  b.add_stage("pre", neat::preprocess_stage({.width = 32, .height = 32}));
  // run() returns at the end of the stream: room for both frames, nobody pulls.
  b.add_sink("out", neat::AppSink::create({.capacity = 2}));
  if (!b.connect("cam", "pre").ok() || !b.connect("pre", "out").ok()) return 4;
  auto graph = b.build();
  if (!graph || !graph->run()) return 5;
  const auto seen = events->events();
  if (seen.empty()) return 6;
  const std::string file = seen.front().file;
  std::printf("library call site: %s:%d\n", file.c_str(), seen.front().line);
  return file == "stages/builtin.cpp" ? 0 : 7;
}

// The complete example program of docs/graphs.md: a GStreamer camera (here
// videotestsrc) through the fused preprocess into the application, with a
// side branch that the application inspects, a copy budget, and the audit
// of what was copied. The region between the docs markers is the page's code
// block (tests/docs/check_snippets.py keeps them equal); CI builds and runs it.
#include <chrono>
#include <cstdio>

#include <neat/neat.hpp>
#include <neat/stages/appsink.hpp>
#include <neat/stages/builtin.hpp>
#include <neat/stages/graph.hpp>
#include <neat/stages/gst_io.hpp>

int main() {
  using namespace std::chrono_literals;
  // [docs:graph]
  neat::GraphBuilder b("camera");
  b.set_policy(neat::ConversionPolicy::Strict);  // implicit copies fail the build
  // Per frame, the stages write the model input (4.7 MiB) and a thumbnail
  // (84 KiB); anything more is a regression the copy gate refuses.
  b.add_budget({.max_bytes_per_frame = 5 << 20});

  b.add_source("cam", neat::gst_source("videotestsrc num-buffers=100 ! "
                                       "video/x-raw,format=NV12,width=1280,height=720"));
  b.add_stage("pre", neat::preprocess_stage({.width = 640,
                                             .height = 640,
                                             .mean = {0.485f, 0.456f, 0.406f},
                                             .std = {0.229f, 0.224f, 0.225f}}));
  b.add_stage("thumb", neat::resize_stage(320, 180));
  // A stage of your own: any function from NeatTensor to NeatTensor.
  b.add_stage("mean", neat::make_stage("luma_mean", {.formats = {neat::PixelFormat::NV12}},
                                       [](neat::NeatTensor frame,
                                          neat::StageContext&) -> neat::Result<neat::NeatTensor> {
                                         NEAT_ASSIGN_OR_RETURN(neat::Mapping m, frame.map());
                                         NEAT_ASSIGN_OR_RETURN(const std::byte* y,
                                                               m.plane_data(neat::PlaneRole::Y));
                                         (void)y;  // ... look at the pixels ...
                                         return frame;
                                       }));
  auto model_input = neat::AppSink::create({.capacity = 4});
  auto thumbnails = neat::AppSink::create({.capacity = 2, .overflow = neat::Overflow::DropOldest});
  b.add_sink("model", model_input);
  b.add_sink("thumbs", thumbnails);

  for (auto [from, to] : {std::pair{"cam", "pre"},
                          {"cam", "thumb"},
                          {"thumb", "mean"},
                          {"pre", "model"},
                          {"mean", "thumbs"}}) {
    if (auto st = b.connect(from, to); !st) {
      std::fprintf(stderr, "%s\n", st.error().message().c_str());
      return 1;
    }
  }
  auto graph = b.build();
  if (!graph) {
    std::fprintf(stderr, "%s\n", graph.error().message().c_str());
    return 1;
  }
  std::fputs(graph->explain().c_str(), stdout);

  if (auto st = graph->start(); !st) return 1;
  int frames = 0;
  while (auto input = model_input->pull(5s)) {  // std::nullopt at the end of the stream
    ++frames;                                   // run the model on *input: f32 [3, 640, 640]
  }
  auto report = graph->wait();
  if (!report) {
    std::fprintf(stderr, "%s\n", report.error().message().c_str());
    return 1;
  }
  std::printf("%d model inputs, %s, %.1f fps\n", frames, report->frames.to_string().c_str(),
              frames / report->seconds);
  std::printf("thumbnails dropped (nobody pulled them): %llu\n",
              static_cast<unsigned long long>(thumbnails->stats().dropped));
  // [docs:end]
  return report->frames.balanced() && graph->rule_breaches().empty() ? 0 : 1;
}

// Graphs with GStreamer at both ends: videotestsrc through preprocess into an
// appsink, frames through an appsrc into an encoder and a file and back, and
// GStreamer's own errors (missing element, bad file) stopping cleanly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include <gst/gst.h>

#include "neat/stages/appsink.hpp"
#include "neat/stages/builtin.hpp"
#include "neat/stages/graph.hpp"
#include "neat/stages/gst_io.hpp"
#include "neat/stages/pipeline.hpp"
#include "neat/storage/gstreamer.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

using namespace std::chrono_literals;

TEST(GstGraph, DefaultSourceThroughPreprocessIntoAnAppsink) {
  GraphBuilder b("gst");
  auto out = AppSink::create();
  b.add_source("cam", gst_source(default_gst_source_description(12)));
  b.add_stage("pre", preprocess_stage({.width = 320, .height = 320}));
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "pre"));
  NEAT_ASSERT_OK(b.connect("pre", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  // The caps name no colorimetry: GStreamer's default for HD, which the frames carry.
  FrameSpec expected = FrameSpec::image(PixelFormat::NV12, 1920, 1080);
  expected.colorimetry = kBT709Limited;
  expected.fps_n = 30;  // videotestsrc's default rate, from the caps
  expected.fps_d = 1;
  EXPECT_EQ(g->plan().nodes[0].output, expected);
  NEAT_ASSERT_OK(g->start());
  int n = 0;
  while (auto f = out->pull(10s)) {
    EXPECT_EQ(f->shape(), (Dims{3, 320, 320}));
    ++n;
  }
  auto r = g->wait();
  NEAT_ASSERT_OK(r);
  EXPECT_EQ(n, 12);
  EXPECT_EQ(r->frames.source_frames, 12u);
  EXPECT_TRUE(r->frames.balanced());
}

TEST(GstGraph, SourceFramesReachTheAppWithoutACopy) {
  GraphBuilder b("zero_copy");
  auto out = AppSink::create();
  b.add_source(
      "cam",
      gst_source("videotestsrc num-buffers=3 ! video/x-raw,format=I420,width=1918,height=1080"));
  b.add_stage("look", inspect_stage());
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "look"));
  NEAT_ASSERT_OK(b.connect("look", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  EXPECT_FALSE(g->plan().nodes[0].output.contiguous) << "I420 at 1918 has padded rows";
  NEAT_ASSERT_OK(g->start());
  int n = 0;
  while (auto f = out->pull(10s)) {
    EXPECT_EQ(f->storage_kind(), StorageKind::GStreamer);
    EXPECT_EQ(f->plane_layout(0).row_stride, 1920);
    ++n;
  }
  NEAT_ASSERT_OK(g->wait());
  EXPECT_EQ(n, 3);
}

TEST(GstGraph, AppsrcSinkEncodesToAFileThatReadsBack) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("neat_graph_" + std::to_string(::getpid()) + ".mkv"))
                               .string();
  {
    GraphBuilder b("encode");
    b.add_source("cam", synthetic_source(FrameSpec::image(PixelFormat::I420, 320, 240), 8));
    b.add_sink("file", gst_appsrc_sink("jpegenc ! matroskamux ! filesink location=" + path));
    NEAT_ASSERT_OK(b.connect("cam", "file"));
    auto g = b.build();
    NEAT_ASSERT_OK(g);
    auto r = g->run();
    NEAT_ASSERT_OK(r);
    EXPECT_EQ(r->frames.consumed, 8u);
  }
  ASSERT_GT(std::filesystem::file_size(path), 0u);
  GraphBuilder b("decode");
  auto out = AppSink::create();
  // File input through decodebin, as `neat run 'file location=...'` does.
  b.add_source("file", gst_source("filesrc location=" + path +
                                  " ! decodebin ! videoconvert ! video/x-raw,format=I420"));
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("file", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->start());
  int n = 0;
  while (auto f = out->pull(10s)) {
    EXPECT_EQ(f->image().width, 320);
    ++n;
  }
  NEAT_ASSERT_OK(g->wait());
  EXPECT_EQ(n, 8);
  std::filesystem::remove(path);
}

// plan() prepares the source, checks the sink without opening it (no file
// appears), and leaves the builder whole: build() follows and writes the file.
TEST(GstGraph, PlanOpensNoSinkAndBuildMayFollow) {
  const auto file =
      std::filesystem::temp_directory_path() / ("plan." + std::to_string(::getpid()) + ".mjpeg");
  std::filesystem::remove(file);
  GraphBuilder b("plan");
  b.add_source("cam", gst_source("videotestsrc num-buffers=3 ! "
                                 "video/x-raw,format=I420,width=64,height=48,framerate=10/1"));
  b.add_stage("small", resize_stage(32, 24));
  b.add_sink("file",
             gst_appsrc_sink("videoconvert ! jpegenc ! filesink location=" + file.string()));
  NEAT_ASSERT_OK(b.connect("cam", "small"));
  NEAT_ASSERT_OK(b.connect("small", "file"));
  auto plan = b.plan();
  NEAT_ASSERT_OK(plan);
  ASSERT_EQ(plan->nodes.size(), 3u);
  EXPECT_TRUE(plan->nodes[0].opened);
  EXPECT_FALSE(plan->nodes[2].opened);
  EXPECT_EQ(plan->nodes[1].output.fps_n, 10) << "a stage keeps its input's frame rate";
  EXPECT_EQ(plan->nodes[1].output.fps_d, 1);
  EXPECT_FALSE(std::filesystem::exists(file)) << "plan() opened the sink";
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  EXPECT_TRUE(g->plan().nodes[2].opened);
  auto report = g->run();
  NEAT_ASSERT_OK(report);
  EXPECT_EQ(report->frames.consumed, 3u);
  EXPECT_GT(std::filesystem::file_size(file), 0u);
  std::filesystem::remove(file);
}

// A live source that sends nothing: the wait ends when `cancelled` says so,
// with a Cancelled error (not a problem of the graph), or at the timeout,
// with a message naming the setting.
TEST(GstGraph, TheFirstFrameWaitIsBoundedAndCancellable) {
  // An appsrc nobody pushes to: a live source that never sends a frame.
  const std::string silent =
      "appsrc is-live=true format=time "
      "caps=video/x-raw,format=NV12,width=64,height=48,framerate=30/1";
  {
    std::atomic<int> polls{0};
    GstSourceOptions o;
    o.cancelled = [&polls] { return ++polls >= 3; };
    GraphBuilder b("cancel");
    b.add_source("live", gst_source(silent, o));
    b.add_sink("out", AppSink::create());
    NEAT_ASSERT_OK(b.connect("live", "out"));
    const auto start = std::chrono::steady_clock::now();
    NEAT_EXPECT_ERROR(
        b.build(), ErrorCode::Cancelled,
        "source 'live': gst source \"" + silent + "\": stopped while waiting for the first frame");
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_EQ(polls.load(), 3);
  }
  {
    GstSourceOptions o;
    o.first_frame_timeout = 300ms;
    o.timeout_setting = "camera.timeout";
    GraphBuilder b("timeout");
    b.add_source("live", gst_source(silent, o));
    b.add_sink("out", AppSink::create());
    NEAT_ASSERT_OK(b.connect("live", "out"));
    NEAT_EXPECT_ERROR(b.plan(), ErrorCode::FailedPrecondition,
                      "sent no first frame within 300 ms (camera.timeout)");
  }
}

// A downstream pipeline that fails while frames flow ends run() with
// GStreamer's message, and every frame is accounted for.
TEST(GstGraph, ADownstreamErrorEndsTheRunWithGstreamersText) {
  GraphBuilder b("full");
  b.add_source("cam", gst_source("videotestsrc num-buffers=1000000 ! "
                                 "video/x-raw,format=NV12,width=64,height=48"));
  b.add_sink("disk", gst_appsrc_sink("filesink location=/dev/full"));
  NEAT_ASSERT_OK(b.connect("cam", "disk"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->start());
  NEAT_EXPECT_ERROR(g->wait(), ErrorCode::FailedPrecondition, "No space left on the resource");
  EXPECT_TRUE(g->frames().balanced()) << g->frames().to_string();
}

// The downstream pipeline fails while no frame is coming (a stalled live
// source): the sink's health check, asked every 100 ms, stops the graph.
TEST(GstGraph, ADownstreamErrorStopsTheGraphEvenWhenNoFrameComes) {
  auto push = PushSource::create(FrameSpec::image(PixelFormat::NV12, 64, 48));
  GraphBuilder b("stalled");
  b.add_source("app", shared_source(push));
  // A second chain in the sink's pipeline fails about 300 ms after it starts.
  b.add_sink("disk",
             gst_appsrc_sink("fakesink async=false  videotestsrc ! identity sleep-time=300000 ! "
                             "filesink async=false location=/dev/full"));
  NEAT_ASSERT_OK(b.connect("app", "disk"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  const auto start = std::chrono::steady_clock::now();
  NEAT_ASSERT_OK(g->start());
  NEAT_EXPECT_ERROR(g->wait(), ErrorCode::FailedPrecondition, "No space left on the resource");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_TRUE(g->frames().balanced()) << g->frames().to_string();
}

TEST(GstGraph, GstreamerErrorsStopCleanlyWithGstreamersText) {
  {
    GraphBuilder b("missing");
    b.add_source("cam", gst_source("videotestsrc ! no_such_element_xyz"));
    b.add_sink("out", AppSink::create());
    NEAT_ASSERT_OK(b.connect("cam", "out"));
    NEAT_EXPECT_ERROR(b.build(), ErrorCode::FailedPrecondition, "no_such_element_xyz");
  }
  {
    GraphBuilder b("no_file");
    b.add_source("cam", gst_source("filesrc location=/nonexistent/file.mkv ! decodebin ! "
                                   "videoconvert ! video/x-raw,format=NV12"));
    b.add_sink("out", AppSink::create());
    NEAT_ASSERT_OK(b.connect("cam", "out"));
    auto g = b.build();
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.error().message().find("source 'cam'"), std::string::npos) << g.error().message();
    EXPECT_NE(g.error().message().find("/nonexistent/file.mkv"), std::string::npos)
        << g.error().message();
  }
  {
    GraphBuilder b("not_video");
    b.add_source("mic", gst_source("audiotestsrc num-buffers=2"));
    b.add_sink("out", AppSink::create());
    NEAT_ASSERT_OK(b.connect("mic", "out"));
    NEAT_EXPECT_ERROR(b.build(), ErrorCode::FailedPrecondition, "not raw video");
  }
}

// ---- conversions inside GStreamer ------------------------------------------------

// A JPEG file at 320x240 (decodes to I420), made once per test.
std::string jpeg_file(const char* tag) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("neat_" + std::string(tag) + std::to_string(::getpid()) + ".avi"))
                               .string();
  GraphBuilder b("make");
  b.add_source("cam", synthetic_source(FrameSpec::image(PixelFormat::I420, 320, 240), 6));
  b.add_sink("file", gst_appsrc_sink("jpegenc ! avimux ! filesink location=" + path));
  EXPECT_TRUE(b.connect("cam", "file").ok());
  auto g = b.build();
  EXPECT_TRUE(g.ok()) << g.error().message();
  if (g.ok()) EXPECT_TRUE(g->run().ok());
  return path;
}

std::int64_t events_named(const std::vector<OwnedEvent>& ev, const std::string& element) {
  std::int64_t n = 0;
  for (const auto& e : ev) {
    if (e.detail.find("GStreamer element " + element) != std::string::npos) ++n;
  }
  return n;
}

class GstInside : public testing::TelemetryTest {};

// The `file` source hands over the decoder's own format (I420 from jpegdec):
// no videoconvert, and the decoder is listed and recorded as a decode.
TEST_F(GstInside, FileSourceHandsOverTheDecodersFormatAndRecordsTheDecoder) {
  const std::string path = jpeg_file("dec");
  auto declared = declare_pipeline("file location=" + path + " ! appsink",
                                   {.policy = ConversionPolicy::AllowWithTrace});
  NEAT_ASSERT_OK(declared);
  auto g = declared->builder.build();
  NEAT_ASSERT_OK(g);
  EXPECT_EQ(g->plan().nodes[0].output.format, PixelFormat::I420);
  const std::string plan = g->explain();
  EXPECT_EQ(plan.find("videoconvert"), std::string::npos) << plan;
  EXPECT_NE(plan.find("inside: jpegdec"), std::string::npos) << plan;
  EXPECT_NE(plan.find("convert (decode) decode image/jpeg -> I420 320x240: 112.5 KiB per frame"),
            std::string::npos)
      << plan;
  NEAT_ASSERT_OK(g->start());
  int n = 0;
  while (auto f = declared->appsink->pull(10s)) {
    EXPECT_EQ(f->pixel_format(), PixelFormat::I420);
    ++n;
  }
  NEAT_ASSERT_OK(g->wait());
  EXPECT_EQ(n, 6);
  const auto ev = events();
  EXPECT_EQ(events_named(ev, "jpegdec"), 6);
  // Making the file recorded the encoder (reason encode) in its own graph.
  EXPECT_EQ(events_named(ev, "jpegenc"), 6);
  for (const auto& e : ev) {
    if (e.graph != "pipeline") continue;
    EXPECT_EQ(e.event.reason, ConversionReason::Decode);
    EXPECT_TRUE(e.event.explicit_call);
    EXPECT_EQ(e.stage, "file");
    EXPECT_EQ(e.event.bytes_written, 320 * 240 * 3 / 2);
  }
  std::filesystem::remove(path);
}

// format= asks for another format: the videoconvert NeatTensor inserts is
// implicit, refused under Strict with the fix, recorded under trace.
TEST_F(GstInside, AnInsertedConversionIsImplicitAndRuledByThePolicy) {
  const std::string path = jpeg_file("fmt");
  {
    auto declared = declare_pipeline("file location=" + path + " format=NV12 ! appsink",
                                     {.policy = ConversionPolicy::Strict});
    NEAT_ASSERT_OK(declared);
    auto g = declared->builder.build();
    ASSERT_FALSE(g.ok());
    const std::string m = g.error().message();
    EXPECT_NE(m.find("file_convert converts I420 320x240 -> NV12 320x240 on every frame"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("Strict policy refused an implicit convert (pixel_format)"), std::string::npos)
        << m;
    EXPECT_NE(m.find("drop format= to take the decoder's own format"), std::string::npos) << m;
  }
  {
    // Asking for the format the decoder gives anyway: passthrough, nothing to refuse.
    auto declared = declare_pipeline("file location=" + path + " format=I420 ! appsink",
                                     {.policy = ConversionPolicy::Strict});
    NEAT_ASSERT_OK(declared);
    auto g = declared->builder.build();
    NEAT_ASSERT_OK(g);
    EXPECT_EQ(g->explain().find("inside: file_convert"), std::string::npos) << g->explain();
  }
  auto declared = declare_pipeline("file location=" + path + " format=NV12 ! appsink",
                                   {.policy = ConversionPolicy::AllowWithTrace});
  NEAT_ASSERT_OK(declared);
  auto g = declared->builder.build();
  NEAT_ASSERT_OK(g);
  const std::string plan = g->explain();
  EXPECT_NE(plan.find("inside: file_convert convert (pixel_format) I420 320x240 -> NV12 320x240: "
                      "112.5 KiB per frame, implicit (inserted by NeatTensor)"),
            std::string::npos)
      << plan;
  EXPECT_NE(plan.find("expected bytes converted per frame inside GStreamer: 225.0 KiB"),
            std::string::npos)
      << plan;
  NEAT_ASSERT_OK(g->start());
  while (declared->appsink->pull(10s)) {
  }
  NEAT_ASSERT_OK(g->wait());
  const auto ev = events();
  EXPECT_EQ(events_named(ev, "file_convert"), 6);
  for (const auto& e : ev) {
    if (e.detail.find("file_convert") == std::string::npos) continue;
    EXPECT_FALSE(e.event.explicit_call);
    EXPECT_EQ(e.event.policy, ConversionPolicy::AllowWithTrace);
    EXPECT_EQ(e.event.bytes_read, 320 * 240 * 3 / 2);
  }
  std::filesystem::remove(path);
}

// A converter written in a gst: description is explicit; a sink that scales
// is listed after negotiation and recorded per frame.
TEST_F(GstInside, ConvertersInDescriptionsAreExplicitAtBothEnds) {
  GraphBuilder b("described");
  b.add_source("cam", gst_source("videotestsrc num-buffers=4 ! video/x-raw,format=I420,width=64,"
                                 "height=48 ! videoconvert ! video/x-raw,format=NV12"));
  b.add_sink("small", gst_appsrc_sink("videoscale ! video/x-raw,width=32,height=24 ! fakesink"));
  NEAT_ASSERT_OK(b.connect("cam", "small"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  const std::string plan = g->explain();
  EXPECT_NE(plan.find("convert (pixel_format) I420 64x48 -> NV12 64x48: 4.5 KiB per frame, "
                      "explicit (in the description)"),
            std::string::npos)
      << plan;
  EXPECT_NE(plan.find("convert (resize) NV12 64x48 -> NV12 32x24: 1.1 KiB per frame, explicit"),
            std::string::npos)
      << plan;
  ASSERT_EQ(g->plan().nodes.size(), 2u);
  EXPECT_EQ(g->plan().nodes[0].inside.size(), 1u);
  EXPECT_EQ(g->plan().nodes[1].inside.size(), 1u);
  NEAT_ASSERT_OK(g->run());
  const auto ev = events();
  std::int64_t source = 0, sink = 0;
  for (const auto& e : ev) {
    if (e.stage == "cam" && e.event.reason == ConversionReason::PixelFormat) ++source;
    if (e.stage == "small" && e.event.reason == ConversionReason::Resize) ++sink;
    EXPECT_TRUE(e.event.explicit_call);
  }
  EXPECT_EQ(source, 4);
  EXPECT_EQ(sink, 4);
}

// Each colorimetry and range named in the caps reaches the plan, the frames
// and the event of the conversion that decodes them.
TEST_F(GstInside, CapsColorimetryReachesFramesPlansAndEvents) {
  for (const char* cm : {"bt601", "bt709", "bt2020", "1:4:0:0", "1:3:5:1", "1:6:0:0"}) {
    GraphBuilder b("colour");
    b.add_source("cam",
                 gst_source(std::string("videotestsrc num-buffers=2 ! video/x-raw,format=NV12,"
                                        "width=64,height=48,colorimetry=") +
                            cm));
    b.add_stage("rgb", convert_stage(PixelFormat::RGB));
    auto out = AppSink::create();
    b.add_sink("out", out);
    NEAT_ASSERT_OK(b.connect("cam", "rgb"));
    NEAT_ASSERT_OK(b.connect("rgb", "out"));
    auto g = b.build();
    NEAT_ASSERT_OK(g);
    GstCaps* caps = gst_caps_from_string(
        (std::string("video/x-raw,format=NV12,width=64,height=48,colorimetry=") + cm).c_str());
    const Colorimetry want = gst_caps_colorimetry(caps);
    gst_caps_unref(caps);
    ASSERT_TRUE(want.known()) << cm;
    EXPECT_EQ(g->plan().nodes[0].output.colorimetry, want) << cm;
    EXPECT_NE(g->explain().find("convert format=RGB (yuv " + to_string(want) + ")"),
              std::string::npos)
        << g->explain();
    NEAT_ASSERT_OK(g->start());
    while (out->pull(10s)) {
    }
    NEAT_ASSERT_OK(g->wait());
  }
  const auto ev = events();
  ASSERT_EQ(ev.size(), 12u);
  EXPECT_EQ(ev[0].detail, "yuv bt601 limited (from the frame)");
  EXPECT_EQ(ev[2].detail, "yuv bt709 limited (from the frame)");
  EXPECT_EQ(ev[4].detail, "yuv bt2020 limited (from the frame)");
  EXPECT_EQ(ev[6].detail, "yuv bt601 full (from the frame)");
  EXPECT_EQ(ev[8].detail, "yuv bt709 full (from the frame)");
  EXPECT_EQ(ev[10].detail, "yuv bt2020 full (from the frame)");
}

}  // namespace
}  // namespace neat

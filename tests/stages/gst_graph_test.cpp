// Graphs with GStreamer at both ends: videotestsrc through preprocess into an
// appsink, frames through an appsrc into an encoder and a file and back, and
// GStreamer's own errors (missing element, bad file) stopping cleanly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "neat/stages/appsink.hpp"
#include "neat/stages/builtin.hpp"
#include "neat/stages/graph.hpp"
#include "neat/stages/gst_io.hpp"
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

}  // namespace
}  // namespace neat

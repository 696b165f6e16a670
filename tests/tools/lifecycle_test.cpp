// The lifecycle of `neat run` / `neat explain` at its GStreamer edges, as an
// operator meets it: a downstream pipeline that fails, a source that sends
// nothing, a plan that must not touch the outside, and the frame rate that a
// file written through a gst: sink announces.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/cli.hpp"

namespace {

using neat::cli_test::CliRun;
using neat::cli_test::run;
using neat::cli_test::run_and_signal;
using neat::cli_test::write;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A source that runs far longer than any test: only an error can end the run early.
const char* kLongSource =
    "gst:\"videotestsrc num-buffers=1000000 ! video/x-raw,format=NV12,width=320,height=240\"";
// udpsrc on a port of its own that nobody sends to: a live source without frames.
const char* kSilentSource =
    "gst:\"udpsrc port=0 caps=\\\"video/x-raw,format=NV12,width=320,height=240,"
    "framerate=30/1\\\"\" ! appsink";

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// gst-launch fails at once on a write error; so must a run feeding such a
// pipeline, with GStreamer's own message (it used to hang forever).
TEST(Lifecycle, ADownstreamWriteErrorStopsTheRunWithGstreamersMessage) {
  const auto start = std::chrono::steady_clock::now();
  const CliRun r = run(std::string("run --quiet '") + kLongSource +
                       " ! gst:\"videoconvert ! filesink location=/dev/full\"'");
  const double took = seconds_since(start);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("sink 'sink'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("filesink0: No space left"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(balanced)"), std::string::npos) << r.out;
  EXPECT_LT(took, 5.0) << "the graph must stop within 5 s of the pipeline's error";
}

TEST(Lifecycle, ADownstreamPipelineThatCannotStartFailsTheBuild) {
  const CliRun r = run(std::string("run --quiet '") + kLongSource +
                       " ! gst:\"videoconvert ! filesink location=/nonexistent-dir/out.raw\"'");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("cannot be built"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("filesink0: Could not open file"), std::string::npos) << r.out;
}

// Caps the downstream pipeline cannot take are refused before a frame flows,
// naming both sides and the fix (they used to leave the run hanging).
TEST(Lifecycle, CapsTheDownstreamPipelineCannotTakeAreRefusedAtBuild) {
  const CliRun r = run(std::string("run --quiet '") + kLongSource +
                       " ! gst:\"video/x-raw,format=RGB ! fakesink\"'");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(
      r.out.find("does not take the frames: the appsrc gives video/x-raw, format=(string)NV12"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the next element takes video/x-raw, format=(string)RGB"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("convert format=RGB"), std::string::npos) << r.out;
  // explain finds the same, without starting anything.
  const CliRun e =
      run(std::string("explain '") + kLongSource + " ! gst:\"video/x-raw,format=RGB ! fakesink\"'");
  EXPECT_EQ(e.status, 1) << e.out;
  EXPECT_NE(e.out.find("does not take the frames"), std::string::npos) << e.out;
}

TEST(Lifecycle, ASourceWithoutFramesIsBoundedByTheFirstFrameTimeoutItNames) {
  const auto start = std::chrono::steady_clock::now();
  const CliRun r = run(std::string("run --first-frame-timeout 0.5 '") + kSilentSource + "'");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("sent no first frame within 500 ms (--first-frame-timeout)"),
            std::string::npos)
      << r.out;
  EXPECT_LT(seconds_since(start), 10.0);
  const CliRun bad = run(std::string("run --first-frame-timeout 0 '") + kSilentSource + "'");
  EXPECT_EQ(bad.status, 2) << bad.out;
}

// A signal while a live source has not sent its first frame ends the wait
// within a second, with 128 + the signal (it used to ignore two Ctrl-C).
TEST(Lifecycle, ASignalDuringTheFirstFrameWaitStopsWithinOneSecond) {
  for (const int sig : {SIGINT, SIGTERM}) {
    pid_t pid = 0;
    const CliRun r = run_and_signal(std::string("run '") + kSilentSource + "'", "", sig,
                                    std::chrono::milliseconds(1500), &pid);
    EXPECT_EQ(r.status, 128 + sig) << r.out;
    EXPECT_NE(r.out.find("stopped while waiting for the first frame"), std::string::npos) << r.out;
    EXPECT_LT(r.seconds_after_signal, 1.0) << r.out;
    EXPECT_FALSE(std::filesystem::exists("/tmp/neat-run-" + std::to_string(pid) + ".jsonl"))
        << "the temporary trace was left behind";
  }
  const CliRun e = run_and_signal(std::string("explain '") + kSilentSource + "'", "", SIGINT,
                                  std::chrono::milliseconds(1500));
  EXPECT_EQ(e.status, 128 + SIGINT) << e.out;
  EXPECT_LT(e.seconds_after_signal, 1.0) << e.out;
}

// A plan has no side effects: the sink's file is neither truncated nor
// written, its pipeline never starts.
TEST(Lifecycle, ExplainOpensNoSinkAndWritesNothing) {
  const std::string file = write("explain-keep.mjpeg", "precious bytes\n");
  const CliRun r = run(std::string("explain '") + kLongSource +
                       " ! gst:\"videoconvert ! jpegenc ! filesink location=" + file + "\"'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("checked, not opened: a plan writes nothing"), std::string::npos) << r.out;
  EXPECT_EQ(read(file), "precious bytes\n");
  // The same pipeline, run, does write it.
  const CliRun ran =
      run("run --quiet --frames 3 'gst:\"videotestsrc num-buffers=3 ! "
          "video/x-raw,format=NV12,width=320,height=240\" ! "
          "gst:\"videoconvert ! jpegenc ! filesink location=" +
          file + "\"'");
  EXPECT_EQ(ran.status, 0) << ran.out;
  EXPECT_NE(read(file), "precious bytes\n");
  std::filesystem::remove(file);
}

// A 10 fps source written through a stage into a gst: sink announces 10 fps
// (it used to say 30/1, so players ran it 3x too fast). y4menc writes the
// caps' rate into its header: "F10:1".
TEST(Lifecycle, TheSourcesFrameRateReachesTheFileAGstSinkWrites) {
  const std::string file = write("rate.y4m", "");
  const CliRun r =
      run("run --quiet 'gst:\"videotestsrc num-buffers=5 ! "
          "video/x-raw,format=I420,width=64,height=48,framerate=10/1\" ! resize size=32x24 ! "
          "gst:\"y4menc ! filesink location=" +
          file + "\"'");
  EXPECT_EQ(r.status, 0) << r.out;
  const std::string y4m = read(file);
  const std::string header = y4m.substr(0, y4m.find('\n'));
  EXPECT_EQ(header.rfind("YUV4MPEG2 ", 0), 0u) << header;
  EXPECT_NE(header.find(" W32 H24 "), std::string::npos) << header;
  EXPECT_NE(header.find(" F10:1"), std::string::npos) << header;
  std::filesystem::remove(file);
}

// Fan-out from the command line: one branch into the application, one into
// a file through GStreamer, one more appsink; the run ends (every appsink is
// pulled) and every delivery is accounted for.
TEST(Lifecycle, RunFansOutThroughATee) {
  const std::string file = write("tee.y4m", "");
  const CliRun r =
      run("run 'gst:\"videotestsrc num-buffers=6 ! "
          "video/x-raw,format=I420,width=64,height=48\" ! tee name=t ! "
          "resize size=32x24 ! appsink  t. ! gst:\"y4menc ! filesink location=" +
          file + "\"  t. ! appsink name=second'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("6 frames in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("18 deliveries: 18 consumed (balanced)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("shared read-only with 2 other consumer(s)"), std::string::npos) << r.out;
  const std::string y4m = read(file);
  std::size_t frames = 0;
  for (std::size_t at = y4m.find("FRAME"); at != std::string::npos; at = y4m.find("FRAME", at + 5))
    ++frames;
  EXPECT_EQ(frames, 6u);
  std::filesystem::remove(file);
}

}  // namespace

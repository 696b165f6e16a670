// The lifecycle of `neat run` / `neat explain` at its GStreamer edges, as an
// operator meets it: a downstream pipeline that fails, a source that sends
// nothing, a plan that must not touch the outside, and the frame rate that a
// file written through a gst: sink announces.
#include <gst/gst.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

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
    const neat::cli_test::ScopedTmpdir tmp;
    const CliRun r = run_and_signal(std::string("run '") + kSilentSource + "'", "", sig,
                                    std::chrono::milliseconds(1500));
    EXPECT_EQ(r.status, 128 + sig) << r.out;
    EXPECT_NE(r.out.find("stopped while waiting for the first frame"), std::string::npos) << r.out;
    EXPECT_LT(r.seconds_after_signal, 1.0) << r.out;
    EXPECT_TRUE(std::filesystem::is_empty(tmp.path)) << "the temporary trace was left behind";
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

namespace {

// The duration GStreamer's own demuxer reads from a recording, in seconds;
// -1 when it cannot play it (an MP4/MOV without its moov box: not finalized).
double playable_seconds(const std::string& path, const char* demuxer) {
  gst_init(nullptr, nullptr);
  const std::string desc = "filesrc location=" + path + " ! " + demuxer + " ! fakesink sync=false";
  GError* err = nullptr;
  GstElement* p = gst_parse_launch(desc.c_str(), &err);
  if (err != nullptr) {
    g_error_free(err);
    if (p != nullptr) gst_object_unref(p);
    return -1;
  }
  double seconds = -1;
  if (gst_element_set_state(p, GST_STATE_PAUSED) != GST_STATE_CHANGE_FAILURE &&
      gst_element_get_state(p, nullptr, nullptr, 10 * GST_SECOND) == GST_STATE_CHANGE_SUCCESS) {
    gint64 d = -1;
    if (gst_element_query_duration(p, GST_FORMAT_TIME, &d) && d > 0)
      seconds = static_cast<double>(d) / GST_SECOND;
  }
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
  return seconds;
}

// A live camera at 30 fps (videotestsrc is-live), written through a gst:
// sink into a file.
std::string live_recording(const std::string& file, const std::string& mux) {
  return "'gst:\"videotestsrc is-live=true pattern=ball ! "
         "video/x-raw,format=NV12,width=320,height=240,framerate=30/1\" ! "
         "gst:\"videoconvert ! jpegenc ! " +
         mux + " ! filesink location=" + file + "\"'";
}

// Every way a run ends gives the gst: sink its end of stream and waits for
// the muxer to finish: the file plays, its duration what was recorded
// (qtmux without it leaves no moov box: "no playable streams").
TEST(Lifecycle, RecordingsAreFinalizedOnEveryWayARunEnds) {
  const std::string ready = "expected bytes copied per frame";
  for (const int sig : {SIGTERM, SIGINT}) {
    const std::string file = write("signal.mov", "");
    const CliRun r = run_and_signal("run " + live_recording(file, "qtmux"), ready, sig,
                                    std::chrono::milliseconds(2000));
    EXPECT_EQ(r.status, 128 + sig) << r.out;
    EXPECT_LT(r.seconds_after_signal, 5.0) << r.out;
    EXPECT_NE(r.out.find("(balanced)"), std::string::npos) << r.out;
    const double s = playable_seconds(file, "qtdemux");
    EXPECT_GT(s, 1.0) << "signal " << sig << ": the recording does not play\n" << r.out;
    std::filesystem::remove(file);
  }
  {  // --frames on a live source: exactly 60 frames, 2 s at 30 fps
    const std::string file = write("frames.mkv", "");
    const CliRun r = run("run --quiet --frames 60 " + live_recording(file, "matroskamux"));
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("60 source frames, 60 deliveries: 60 consumed"), std::string::npos)
        << r.out;
    EXPECT_NEAR(playable_seconds(file, "matroskademux"), 2.0, 0.1) << r.out;
    std::filesystem::remove(file);
  }
  {  // the non-live default source, SIGTERM
    const std::string file = write("default.mov", "");
    const CliRun r = run_and_signal(
        "run 'default frames=100000 ! resize size=320x180 ! gst:\"videoconvert ! jpegenc ! "
        "qtmux ! filesink location=" +
            file + "\"'",
        ready, SIGTERM, std::chrono::milliseconds(1500));
    EXPECT_EQ(r.status, 128 + SIGTERM) << r.out;
    EXPECT_GT(playable_seconds(file, "qtdemux"), 0.0) << r.out;
    std::filesystem::remove(file);
  }
}

// kill -9 cannot be caught: the trace holds what was written up to the last
// second, and the audit reads it, says it was cut short and exits 4.
TEST(Lifecycle, ASigkilledRunsTraceIsAuditedUpToItsLastSecond) {
  const std::string trace = write("killed.jsonl", ""), chrome = write("killed.json", "");
  const CliRun r = run_and_signal(
      "run --policy trace --trace " + trace + " --chrome " + chrome +
          " 'gst:\"videotestsrc is-live=true ! "
          "video/x-raw,format=NV12,width=320,height=240,framerate=30/1\" ! convert format=RGB ! "
          "appsink'",
      "expected bytes copied per frame", SIGKILL, std::chrono::milliseconds(3000));
  EXPECT_EQ(r.status, -SIGKILL) << r.out;
  for (const std::string& path : {trace, chrome}) {
    const CliRun a = run("audit " + path);
    EXPECT_EQ(a.status, 4) << a.out;
    EXPECT_NE(a.out.find("is cut short"), std::string::npos) << a.out;
    EXPECT_NE(a.out.find("--allow-cut-short"), std::string::npos) << a.out;
    const std::size_t at = a.out.find("source->convert");
    ASSERT_NE(at, std::string::npos) << a.out;
    // At 30 fps for 3 s and more: at least the frames up to the last second.
    const CliRun j = run("audit --allow-cut-short --format json " + path);
    EXPECT_EQ(j.status, 0) << j.out;
    const std::size_t count = j.out.find("\"count\": ");
    ASSERT_NE(count, std::string::npos) << j.out;
    EXPECT_GE(std::stoi(j.out.substr(count + 9)), 45) << j.out;
  }
  std::filesystem::remove(trace);
  std::filesystem::remove(chrome);
}

long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// The Chrome trace streams: a long run's memory stays flat while its trace
// grows (it used to keep every event until exit: +108 KB/s live). 12 s at
// full speed record more events than 60 s of a live 30 fps detector; small
// frames, so that a pool growing by one frame under load is not mistaken
// for the trace.
TEST(Lifecycle, ALongChromeTracedRunKeepsItsMemoryFlat) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "RSS under ASan measures its quarantine";
#endif
  const std::string chrome = write("long.json", ""), out = write("long.out", "");
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string cmd =
        "exec " + std::string(NEAT_CLI_PATH) + " run --quiet --policy trace --chrome " + chrome +
        " 'synthetic size=320x240 frames=100000000 ! convert format=RGB ! appsink' > " + out +
        " 2>&1";
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const long rss0 = rss_kib(pid);
  const auto size0 = std::filesystem::file_size(chrome);
  std::this_thread::sleep_for(std::chrono::seconds(8));
  const long rss1 = rss_kib(pid);
  const auto size1 = std::filesystem::file_size(chrome);
  ::kill(pid, SIGINT);
  int rc = 0;
  ::waitpid(pid, &rc, 0);
  EXPECT_EQ(WEXITSTATUS(rc), 128 + SIGINT) << read(out);
  ASSERT_GT(rss0, 0);
  EXPECT_GT(size1 - size0, 2u << 20) << "the trace grows on disk while the run lasts";
  EXPECT_LT(rss1 - rss0, 2048) << "RSS " << rss0 << " -> " << rss1 << " KiB while the trace grew "
                               << (size1 - size0) / 1024 << " KiB";
  const CliRun a = run("audit " + chrome);  // closed by the signal's clean stop: whole
  EXPECT_EQ(a.status, 0) << a.out;
  std::filesystem::remove(chrome);
  std::filesystem::remove(out);
}

}  // namespace

namespace {

// The GStreamer edges find their appsink and appsrc by type, never by the
// text: a name or a path that says "appsink" is just a name; a description
// whose caps cannot settle fails with a clear error instead of carrying on;
// the audit says what each element converts, as far as it is known.
TEST(Lifecycle, GstEdgesFindTheirElementsByTypeAndFailClearlyWhenCapsDoNotSettle) {
  const std::string file = write("appsrc-appsink.webm", "");
  const CliRun r =
      run("run --quiet 'gst:\"videotestsrc num-buffers=3 name=not_an_appsink ! "
          "video/x-raw,format=NV12,width=64,height=48\" ! gst:\"videoconvert ! vp8enc deadline=1 ! "
          "webmmux ! filesink location=" +
          file + "\"'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("3 consumed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vp8enc0: encode I420 64x48 -> video/x-vp8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("videoconvert0: NV12 64x48 -> I420 64x48"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" ? "), std::string::npos) << r.out;
  EXPECT_GT(playable_seconds(file, "matroskademux"), 0.0);
  std::filesystem::remove(file);

  const CliRun stuck =
      run("run --quiet 'gst:\"videotestsrc num-buffers=3 ! "
          "video/x-raw,format=NV12,width=64,height=48\" "
          "! gst:\"videoconvert ! video/x-raw,format=I420,width=10,height=10 ! fakesink\"'");
  EXPECT_EQ(stuck.status, 1) << stuck.out;
  EXPECT_NE(stuck.out.find("caps negotiation did not complete within 5 s"), std::string::npos)
      << stuck.out;
}

}  // namespace

namespace {

// A downstream slower than the graph (0.2 s a frame): the sink waits for room
// in its appsrc queue before it takes a frame, so a stop never blocks in a
// push; the frames already queued are written, then EOS, within seconds.
TEST(Lifecycle, AStopReachesASlowDownstreamsEndOfStreamWithinSeconds) {
  const CliRun r = run_and_signal(
      "run 'default frames=100000 ! resize size=64x36 ! gst:\"videoconvert ! identity "
      "sleep-time=200000 ! fakesink\"'",
      "expected bytes copied per frame", SIGTERM, std::chrono::milliseconds(1500));
  EXPECT_EQ(r.status, 128 + SIGTERM) << r.out;
  EXPECT_LT(r.seconds_after_signal, 5.0) << r.out;
  EXPECT_NE(r.out.find("(balanced)"), std::string::npos) << r.out;
}

}  // namespace

// `neat audit` as a user runs it: exit status and output.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "support/cli.hpp"
#include "support/mosquitto_broker.hpp"

namespace {

using neat::cli_test::CliRun;
using neat::cli_test::run;
using neat::cli_test::run_and_signal;
using neat::cli_test::write;

const char* kTrace =
    R"({"kind":"pack","reason":"stride_mismatch","explicit":false,"bytes":100,"duration_ns":5,"edge":"a->b","stage":"s","frame":1,"file":"x.cpp","line":3,"operation":"stage 's' input"})"
    "\n"
    R"({"kind":"convert","reason":"pixel_format","bytes":50,"edge":"a->b","stage":"s","frame":1,"file":"y.cpp","line":9,"operation":"convert_color"})"
    "\n";

TEST(NeatCli, AuditPrintsATableAndJson) {
  const std::string path = write("audit.jsonl", kTrace);
  const CliRun table = run("audit " + path);
  EXPECT_EQ(table.status, 0) << table.out;
  EXPECT_NE(table.out.find("a->b"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("x.cpp:3 (stage 's' input)"), std::string::npos) << table.out;
  const CliRun json = run("audit --format json " + path);
  EXPECT_EQ(json.status, 0);
  EXPECT_NE(json.out.find("\"conversions\": 2"), std::string::npos) << json.out;
  std::filesystem::remove(path);
}

TEST(NeatCli, FailOnGivesExitStatus3) {
  const std::string path = write("fail.jsonl", kTrace);
  const CliRun r = run("audit --fail-on pack,transfer " + path);
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("--fail-on pack: 1 pack conversion(s) (stride_mismatch) on edge 'a->b'"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(run("audit --fail-on transfer " + path).status, 0);
  EXPECT_EQ(run("audit --fail-on warp " + path).status, 2);
  std::filesystem::remove(path);
}

// Several files, filters, a baseline for CI, and empty inputs, as an
// operator runs them.
TEST(NeatCli, AuditReadsSeveralFilesFiltersComparesAndSaysNoEvents) {
  const std::string header = R"({"neat_trace":1,"run":"r1","part":0})"
                             "\n";
  auto line = [](const char* edge, int frame, int bytes, long long ts) {
    return std::string(R"({"kind":"pack","reason":"stride_mismatch","bytes":)") +
           std::to_string(bytes) + ",\"frame\":" + std::to_string(frame) +
           ",\"ts_ns\":" + std::to_string(ts) + ",\"edge\":\"" + edge + "\",\"stage\":\"s\"}\n";
  };
  std::string old_run = header, new_run = header, rotated = header;
  for (int f = 0; f < 5; ++f) {
    old_run += line("cam->pre", f, 100, 1795456800000000000LL + f * 1000000000LL);
    new_run += line("cam->pre", f, 100, 1795456800000000000LL + f * 1000000000LL);
    rotated += line("pre->out", f, 10, 1795456800000000000LL + f * 1000000000LL);
  }
  const std::string a = write("old.jsonl", old_run);
  const std::string b = write("new.jsonl", new_run);
  const std::string c = write("new.jsonl.1", rotated);
  const CliRun both = run("audit " + b + " " + c);
  EXPECT_EQ(both.status, 0) << both.out;
  EXPECT_NE(both.out.find("total: 10 conversions"), std::string::npos) << both.out;
  const CliRun edge = run("audit --edge 'pre->out' " + b + " " + c);
  EXPECT_NE(edge.out.find("total: 5 conversions"), std::string::npos) << edge.out;
  const CliRun since = run("audit --since 2026-11-23T18:00:03Z " + b);
  EXPECT_NE(since.out.find("total: 2 conversions"), std::string::npos) << since.out;
  const CliRun until = run("audit --since @1795456800 --until 2026-11-23T18:00:01Z " + b);
  EXPECT_NE(until.out.find("total: 1 conversions"), std::string::npos) << until.out;
  const CliRun nothing = run("audit --stage nobody " + b);
  EXPECT_EQ(nothing.status, 0) << nothing.out;
  EXPECT_NE(nothing.out.find("no events: none of the 5 event(s) read matches the filter"),
            std::string::npos)
      << nothing.out;
  EXPECT_EQ(run("audit --since yesterday " + b).status, 2);
  EXPECT_EQ(run("audit --since @10 --until @5 " + b).status, 2);

  // The baseline: the same copies pass; a new edge copying fails CI with exit 3.
  const CliRun same = run("audit --baseline " + a + " " + b);
  EXPECT_EQ(same.status, 0) << same.out;
  EXPECT_NE(same.out.find("same     cam->pre"), std::string::npos) << same.out;
  const CliRun worse = run("audit --baseline " + a + " " + b + " " + c);
  EXPECT_EQ(worse.status, 3) << worse.out;
  EXPECT_NE(worse.out.find("started  pre->out"), std::string::npos) << worse.out;
  EXPECT_NE(worse.out.find("edge 'pre->out', stage 's': started pack conversions"),
            std::string::npos)
      << worse.out;
  const CliRun json = run("audit --format json --baseline " + a + " " + b + " " + c);
  EXPECT_NE(json.out.find("\"regressed\": true"), std::string::npos) << json.out;

  // Empty: a file with nothing is an error; a traced run without conversions is not.
  const std::string empty = write("empty.jsonl", "");
  const CliRun e = run("audit " + empty);
  EXPECT_EQ(e.status, 1) << e.out;
  EXPECT_NE(e.out.find("no events in " + empty + ": empty, or not a neat trace"), std::string::npos)
      << e.out;
  const std::string quiet = write("quiet.jsonl", header);
  const CliRun q = run("audit " + quiet);
  EXPECT_EQ(q.status, 0) << q.out;
  EXPECT_NE(q.out.find("the traced run(s) made no conversions"), std::string::npos) << q.out;
  for (const auto& p : {a, b, c, empty, quiet})
    std::filesystem::remove(p);
}

TEST(NeatCli, RunRotatesItsTraceAndAuditsEveryPart) {
  const std::string trace =
      (std::filesystem::temp_directory_path() / ("rot." + std::to_string(::getpid()) + ".jsonl"))
          .string();
  const CliRun r = run("run --quiet --policy trace --trace " + trace +
                       " --trace-max-bytes 64k --trace-keep 20 'default frames=200 ! preprocess "
                       "size=32x32 ! appsink'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("rotated part(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total: 200 conversions"), std::string::npos) << r.out;
  std::string parts = trace;
  for (int i = 1; std::filesystem::exists(trace + "." + std::to_string(i)); ++i) {
    EXPECT_LE(std::filesystem::file_size(trace + "." + std::to_string(i)), 64u * 1024);
    parts += " " + trace + "." + std::to_string(i);
  }
  const CliRun a = run("audit " + parts);
  EXPECT_EQ(a.status, 0) << a.out;
  EXPECT_NE(a.out.find("total: 200 conversions"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("12.0 KiB"), std::string::npos) << "bytes per frame of 3x32x32 f32\n"
                                                       << a.out;
  EXPECT_EQ(run("run --trace-max-bytes 64k 'default ! appsink'").status, 2)
      << "rotation needs --trace FILE";
  for (int i = 0; i <= 20; ++i)
    std::filesystem::remove(i == 0 ? trace : trace + "." + std::to_string(i));
}

TEST(NeatCli, MalformedTraceGivesExitStatus2WithTheLine) {
  const std::string path = write("bad.jsonl", std::string(kTrace) + "{\"kind\":\"pack\",\"reas");
  const CliRun r = run("audit " + path);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("line 3"), std::string::npos) << r.out;
  EXPECT_EQ(run("audit /nonexistent/trace").status, 2);
  EXPECT_NE(run("").status, 0) << "a subcommand is required";
  std::filesystem::remove(path);
}

}  // namespace

namespace {

TEST(NeatCli, TimelineWritesAPng) {
  const std::string trace = write(
      "timeline.jsonl",
      R"({"kind":"pack","reason":"dtype","bytes":1,"ts_ns":2000,"duration_ns":1000,"stage":"s"})"
      "\n");
  const std::string png = trace + ".png";
  const CliRun r = run("timeline " + trace + " --out " + png);
  EXPECT_EQ(r.status, 0) << r.out;
  std::ifstream in(png, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  const std::string untimed = write("untimed.jsonl", R"({"kind":"pack","reason":"dtype","bytes":1})"
                                                     "\n");
  EXPECT_EQ(run("timeline " + untimed + " --out " + png).status, 2);
  EXPECT_EQ(run("timeline " + trace + " --out /nonexistent/x.png").status, 2);
  std::filesystem::remove(trace);
  std::filesystem::remove(untimed);
  std::filesystem::remove(png);
}

}  // namespace

// ---- neat run / neat explain -------------------------------------------------

namespace {

TEST(NeatCliRun, RunsAPipelineAndPrintsThroughputAccountingAndAudit) {
  const std::string metrics = write("metrics.prom", "");
  const CliRun r =
      run("run 'synthetic format=NV12 size=320x240 frames=20 ! preprocess "
          "size=64x64 ! appsink' --quiet --metrics " +
          metrics);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("20 frames in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("20 source frames, 20 deliveries: 20 consumed (balanced)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("synthetic->preprocess"), std::string::npos) << r.out;
  std::ifstream m(metrics);
  const std::string prom((std::istreambuf_iterator<char>(m)), {});
  EXPECT_NE(prom.find("neat_conversions_total{"), std::string::npos) << prom;
  std::filesystem::remove(metrics);
}

// The number after `prefix` on the line that holds it (0 when absent).
double number_after(const std::string& text, const std::string& prefix) {
  const auto at = text.find(prefix);
  if (at == std::string::npos) return 0;
  return std::stod(text.substr(at + prefix.size()));
}

// Sums a Prometheus counter over all its label sets.
double prom_sum(const std::string& prom, const std::string& metric) {
  double total = 0;
  std::istringstream in(prom);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(metric + "{", 0) == 0) total += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return total;
}

// One run, four views of its conversions: the end-of-run table, the JSON
// Lines trace read by `neat audit`, the Chrome trace read by `neat audit`,
// and the Prometheus file. Every conversion is in each, with the same totals.
TEST(NeatCliRun, EveryConversionIsInAllFourViewsWithTheSameTotals) {
  const std::string jsonl = write("views.jsonl", ""), chrome = write("views.trace.json", "");
  const std::string prom_path = write("views.prom", "");
  // An implicit NV12 -> RGB on the edge, an explicit layout change in the stage.
  const CliRun r = run(
      "run 'synthetic format=NV12 size=64x48 frames=7 ! layout to=chw ! appsink' --policy trace "
      "--quiet --trace " +
      jsonl + " --chrome " + chrome + " --metrics " + prom_path);
  ASSERT_EQ(r.status, 0) << r.out;
  const double table_count = number_after(r.out, "total: ");
  const double table_bytes = number_after(r.out, " conversions, ");
  EXPECT_EQ(table_count, 14) << r.out;  // 7 frames x (implicit convert + explicit layout)
  EXPECT_EQ(table_bytes, 14 * 64 * 48 * 3) << r.out;
  EXPECT_NE(r.out.find("implicit convert   pixel_format"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("explicit convert   layout"), std::string::npos) << r.out;
  for (const std::string& trace : {jsonl, chrome}) {
    const CliRun a = run("audit --format json " + trace);
    ASSERT_EQ(a.status, 0) << a.out;
    EXPECT_EQ(number_after(a.out, "\"conversions\":"), table_count) << trace << a.out;
    EXPECT_EQ(number_after(a.out, "\"bytes\":"), table_bytes) << trace << a.out;
  }
  std::ifstream m(prom_path);
  const std::string prom((std::istreambuf_iterator<char>(m)), {});
  // The process's counters are cumulative; this process ran only this graph.
  EXPECT_EQ(prom_sum(prom, "neat_conversions_total"), table_count) << prom;
  EXPECT_EQ(prom_sum(prom, "neat_conversion_bytes_total"), table_bytes) << prom;
  for (const std::string& f : {jsonl, chrome, prom_path})
    std::filesystem::remove(f);
}

// Under AllowSilent the trace has no implicit events, but the end-of-run table
// still lists them (and says which were implicit).
TEST(NeatCliRun, TheSilentPolicyReportStillListsEveryConversion) {
  const CliRun r = run(
      "run 'synthetic format=NV12 size=64x48 frames=5 ! layout to=chw ! appsink' --policy silent "
      "--quiet");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("implicit convert   pixel_format      allow_silent           5"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(number_after(r.out, "total: "), 10) << r.out;
  EXPECT_NE(r.out.find("5 conversion(s) ran untraced"), std::string::npos) << r.out;
  // Call sites are relative to the source tree, never the build machine's paths.
  EXPECT_NE(r.out.find("stages/builtin.cpp:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("/stages/builtin.cpp"), std::string::npos) << r.out;
}

TEST(NeatCliElements, ListsEveryElementAndOneElementsProperties) {
  const CliRun all = run("elements");
  EXPECT_EQ(all.status, 0) << all.out;
  for (const char* name :
       {"default", "file", "synthetic", "gst", "convert", "resize", "crop", "normalize", "cast",
        "layout", "pack", "transfer", "preprocess", "inspect", "appsink"}) {
    EXPECT_NE(all.out.find(std::string("\n  ") + name + " "), std::string::npos) << name;
  }
  const CliRun one = run("elements preprocess");
  EXPECT_EQ(one.status, 0) << one.out;
  EXPECT_NE(one.out.find("preprocess (stage)"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("colorimetry=bt601|bt709|bt2020[-full]"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("size=WIDTHxHEIGHT               default 640x640"), std::string::npos)
      << one.out;
  const CliRun bad = run("elements resise");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("no element 'resise'"), std::string::npos) << bad.out;
}

// The demo's detector is a TorchScript file: without the libtorch engine's
// plugin the run stops before any frame, saying what did not load and the
// fix, and the ONNX export of the same detector still runs.
TEST(NeatCliRun, AMissingLibtorchEngineStopsTheRunWithTheFix) {
  ::setenv("NEAT_TORCH_ENGINE", "/nonexistent/libneat_torch.so", 1);
  const CliRun r = run("run --frames 2");
  const CliRun onnx =
      run("run 'default frames=2 pattern=ball ! preprocess size=640x640 fit=letterbox batch=true ! "
          "infer model=models:detector backend=opencv ! yolo ! appsink'");
  ::unsetenv("NEAT_TORCH_ENGINE");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("the libtorch engine did not load"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/nonexistent/libneat_torch.so"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NEAT_TORCH_ENGINE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("backend=opencv"), std::string::npos) << r.out;
  EXPECT_EQ(onnx.status, 0) << onnx.out;
  EXPECT_NE(onnx.out.find("2 frames in"), std::string::npos) << onnx.out;
}

TEST(NeatCliRun, TheDefaultPipelineRunsWithAFrameLimit) {
  const std::string trace = write("run.jsonl", "");
  const CliRun r = run("run --frames 5 --trace " + trace);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("videotestsrc num-buffers=5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("5 frames in"), std::string::npos) << r.out;
  // The demo is the detector end to end on libtorch: the ball is found in
  // every frame, and the one conversion of the run is the preprocess.
  EXPECT_NE(r.out.find("pattern=ball"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("detections: 5 frame(s), 5 with at least one, 5 in all (class 0: 5)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("libtorch"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("inside stages (model runtimes)"), std::string::npos) << r.out;
  const CliRun audit = run("audit " + trace);
  EXPECT_EQ(audit.status, 0) << audit.out;
  EXPECT_NE(audit.out.find("default->preprocess"), std::string::npos) << audit.out;
  EXPECT_EQ(audit.out.find("model_input"), std::string::npos) << audit.out;
  EXPECT_EQ(audit.out.find("model_output"), std::string::npos) << audit.out;
  EXPECT_NE(audit.out.find("total: 5 conversions"), std::string::npos) << audit.out;
  std::filesystem::remove(trace);
}

TEST(NeatCliRun, TwoStreamsShareOneDetectorAndEveryLineNamesItsStream) {
  const CliRun r = run(
      "run --print-detections 'synthetic name=a size=320x240 frames=3 ! preprocess "
      "fit=letterbox batch=true ! det.  synthetic name=b size=320x240 frames=2 ! preprocess "
      "fit=letterbox batch=true ! det.  infer name=det model=models:detector ! yolo ! appsink'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("takes its 2 inputs in turn: preprocess, preprocess2"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("a: frame 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("b: frame 1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("b: frame 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("== streams"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("5 frames in"), std::string::npos) << r.out;
}

TEST(NeatCliRun, TrackedDetectionsGoToABrokerAndUndeliveredMessagesFailTheRun) {
  const std::string chain =
      "default name=gate frames=4 pattern=ball ! preprocess fit=letterbox ! infer "
      "model=models:detector ! yolo conf=0.2 ! track";
  const std::string trace = (std::filesystem::temp_directory_path() /
                             ("neat-track-" + std::to_string(getpid()) + ".jsonl"))
                                .string();
  const CliRun printed =
      run("run --print-detections --trace " + trace + " '" + chain + " ! appsink'");
  EXPECT_EQ(printed.status, 0) << printed.out;
  EXPECT_NE(printed.out.find("  track 1  class 0"), std::string::npos) << printed.out;
  // The trace has the track's start; the audit reads past it.
  std::ifstream in(trace);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(R"({"type":"track","event":"start")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("stream":"gate","detail":"","frame":0,"id":1)"), std::string::npos)
      << text;
  const CliRun audit = run("audit " + trace);
  EXPECT_EQ(audit.status, 0) << audit.out;
  std::filesystem::remove(trace);

  if (neat::testing::MosquittoBroker::available()) {
    neat::testing::MosquittoBroker broker;
    ASSERT_TRUE(broker.start());
    const CliRun ok =
        run("run '" + chain + " ! mqtt broker=" + broker.address() + " topic=cameras/{stream}'");
    EXPECT_EQ(ok.status, 0) << ok.out;
    EXPECT_NE(ok.out.find("== messages"), std::string::npos) << ok.out;
    EXPECT_NE(ok.out.find("mqtt " + broker.address()), std::string::npos) << ok.out;
  }
  // Nobody listens there: the spool holds the messages, the end waits
  // drain-timeout, then the run fails saying how many were not delivered.
  const std::string nobody = "127.0.0.1:" + std::to_string(neat::testing::free_tcp_port());
  const CliRun lost =
      run("run --quiet '" + chain + " ! mqtt broker=" + nobody + " topic=t drain-timeout=300ms'");
  EXPECT_EQ(lost.status, 1) << lost.out;
  EXPECT_NE(lost.out.find("messages not delivered to mqtt " + nobody), std::string::npos)
      << lost.out;
  EXPECT_NE(lost.out.find("Connection refused"), std::string::npos) << lost.out;
}

// A live camera that ends (videotestsrc is-live with num-buffers): down.
const char* kEndingCamera =
    "'gst:\"videotestsrc is-live=true num-buffers=4 ! "
    "video/x-raw,format=NV12,width=64,height=48,framerate=30/1\" ! appsink'";

TEST(NeatCliRun, ALiveStreamThatEndsIsRestartedAndItsFramesContinue) {
  const CliRun r = run(std::string("run --quiet --frames 10 ") + kEndingCamera);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("stream 'source' restarting: the live source ended its stream"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("stream 'source' up: frames again"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("10 frames in"), std::string::npos) << r.out;
}

TEST(NeatCliRun, RestartNeverFailsFastWithExitStatusOne) {
  const CliRun r = run(std::string("run --quiet --restart never ") + kEndingCamera);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("stream 'source' went down: the live source ended its stream (restart "
                       "never"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("failed"), std::string::npos) << r.out;
  const CliRun bad = run("run --restart sometimes 'default ! appsink'");
  EXPECT_EQ(bad.status, 2) << bad.out;
  const CliRun prop = run("run 'default restart=sometimes stall-timeout=soon ! appsink'");
  EXPECT_EQ(prop.status, 2) << prop.out;
  EXPECT_NE(prop.out.find("restart=sometimes"), std::string::npos) << prop.out;
}

TEST(NeatCliRun, BadPipelinesPointAtTheToken) {
  const CliRun r = run("run 'default ! resise size=640x640 ! appsink'");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("unknown stage 'resise'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("            ^^^^^^"), std::string::npos) << r.out;
  const CliRun q = run("run 'gst:\"videotestsrc ! appsink' ");
  EXPECT_EQ(q.status, 2) << q.out;
  EXPECT_NE(q.out.find("unterminated quote"), std::string::npos) << q.out;
  const CliRun p = run("run 'default ! resize size=64 ! appsink'");
  EXPECT_EQ(p.status, 2) << p.out;
  EXPECT_NE(p.out.find("size=64 is not WIDTHxHEIGHT"), std::string::npos) << p.out;
  const CliRun pat = run("run 'default pattern=bal ! appsink'");
  EXPECT_EQ(pat.status, 2) << pat.out;
  EXPECT_NE(pat.out.find("pattern=bal is not a videotestsrc pattern (smpte, "), std::string::npos)
      << pat.out;
  EXPECT_NE(pat.out.find(" ball,"), std::string::npos) << pat.out;
  const CliRun s = run("run 'default ! preprocess'");
  EXPECT_EQ(s.status, 2) << s.out;
  EXPECT_NE(s.out.find("must be a sink"), std::string::npos) << s.out;
}

TEST(NeatCliRun, PrintsDetectionsOfTheGeneratedDetector) {
  const CliRun r =
      run("run --quiet --print-detections 'gst:\"videotestsrc pattern=ball num-buffers=3 ! "
          "video/x-raw,format=NV12,width=640,height=480\" ! preprocess fit=letterbox batch=true ! "
          "infer model=models:detector ! yolo ! appsink'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("source: frame 0 pts 0.000 s: 1 detection\n  class 0  score 1.000  box ("),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("frame 2 pts 0.067 s: 1 detection"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model_input"), std::string::npos) << r.out;
  // Not detections: refused before a frame flows, with the fix.
  const CliRun bad = run("run --quiet --print-detections 'default frames=2 ! appsink'");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("not detections (f32 [N, 6] or [N, 7])"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("infer model=... ! yolo [! track] ! appsink"), std::string::npos)
      << bad.out;
  // A model file that is not there: a bad pipeline, pointing at the element.
  const CliRun missing =
      run("run 'default frames=2 ! preprocess ! infer model=/nope.onnx ! appsink'");
  EXPECT_EQ(missing.status, 2) << missing.out;
  EXPECT_NE(missing.out.find("no such file"), std::string::npos) << missing.out;
}

TEST(NeatCliRun, StrictRefusalsAndGstreamerErrorsExitWithOne) {
  const CliRun strict =
      run("run 'synthetic size=64x48 frames=2 ! layout to=chw ! appsink' --policy strict");
  EXPECT_EQ(strict.status, 1) << strict.out;
  EXPECT_NE(
      strict.out.find(
          "edge 'synthetic->layout': it needs an implicit convert (pixel_format) NV12 -> RGB"),
      std::string::npos)
      << strict.out;
  const CliRun traced =
      run("run 'synthetic size=64x48 frames=2 ! layout to=chw ! appsink' --policy trace --quiet");
  EXPECT_EQ(traced.status, 0) << traced.out;
  const CliRun missing = run("run 'gst:\"videotestsrc ! no_such_element_xyz\" ! appsink'");
  EXPECT_EQ(missing.status, 1) << missing.out;
  EXPECT_NE(missing.out.find("no_such_element_xyz"), std::string::npos) << missing.out;
}

// The run reports where a frame's time goes and what memory the graph held;
// a frame-memory budget sizes the graph or fails it before a frame flows.
TEST(NeatCliRun, RunReportsLatencyAndFrameMemoryAndHonoursABudget) {
  const std::string p =
      "'synthetic format=NV12 size=320x240 frames=20 ! preprocess size=64x64 ! "
      "appsink'";
  const CliRun r = run("run " + p + " --quiet");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("== latency (capture -> sink, per frame)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  appsink                      20 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  preprocess   "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("== frame memory: plan "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("planned buffers in use at most"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("latency, capture -> sink:"), std::string::npos)
      << "the audit of the run's trace reads the latency back\n"
      << r.out;

  const CliRun tight = run("run " + p + " --max-frame-memory 64K");
  EXPECT_EQ(tight.status, 1) << tight.out;
  EXPECT_NE(tight.out.find("more than the frame-memory budget of 64.0 KiB"), std::string::npos)
      << tight.out;
  EXPECT_NE(tight.out.find("Fix: raise the budget to at least"), std::string::npos) << tight.out;
  const CliRun roomy = run("run " + p + " --quiet --max-frame-memory 16M");
  EXPECT_EQ(roomy.status, 0) << roomy.out;
  EXPECT_NE(roomy.out.find("(budget 16"), std::string::npos) << roomy.out;
  const CliRun bad = run("run " + p + " --max-frame-memory lots");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("--max-frame-memory"), std::string::npos) << bad.out;
  const CliRun zero = run("run " + p + " --max-frame-memory 0");
  EXPECT_EQ(zero.status, 2) << zero.out;
  const CliRun explained = run("explain " + p + " --max-frame-memory 16M");
  EXPECT_EQ(explained.status, 0) << explained.out;
  EXPECT_NE(explained.out.find("frame memory in all: "), std::string::npos) << explained.out;
  EXPECT_NE(explained.out.find("(budget 16.00 MiB)"), std::string::npos) << explained.out;
}

TEST(NeatCliRun, ExplainPrintsThePlan) {
  const CliRun r = run("explain 'synthetic format=NV12 size=64x48 ! convert format=RGB ! appsink'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("[stage]  convert"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hand-over, no copy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("expected bytes copied per frame on edges: 0 B"), std::string::npos);
}

// The signal goes once the graph is built and running (its plan printed, a
// second for the first frames): a fixed delay from the start raced the model
// loading on a busy machine and stopped the run before its first frame.
TEST(NeatCliRun, CtrlCStopsCleanlyAndStillPrintsTheAudit) {
  const std::string out = write("sigint.out", "");
  const std::string cmd = std::string(NEAT_CLI_PATH) + " run --frames 1000000 > " + out +
                          " 2>&1 & pid=$!; for i in $(seq 1200); do grep -q '\\[stage\\]' " + out +
                          " && break; sleep 0.1; done; sleep 1; "
                          "kill -INT $pid; wait $pid; echo \"status=$?\" >> " +
                          out;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream f(out);
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(text.find("(stopped by SIGINT (Ctrl-C))"), std::string::npos) << text;
  EXPECT_NE(text.find("(balanced)"), std::string::npos) << text;
  EXPECT_NE(text.find("default->preprocess"), std::string::npos) << text;
  EXPECT_NE(text.find("status=130"), std::string::npos) << text;
  std::filesystem::remove(out);
}

}  // namespace

namespace {

TEST(GraphExample, TheDocumentedProgramRuns) {
  const std::string cmd = std::string(NEAT_GRAPH_EXAMPLE_PATH) + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), p))
    out += buf.data();
  const int rc = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << out;
  EXPECT_NE(out.find("100 model inputs"), std::string::npos) << out;
  EXPECT_NE(out.find("expected bytes copied per frame on edges: 0 B"), std::string::npos) << out;
}

}  // namespace

namespace {

// SIGTERM (what docker, systemd and Kubernetes send) and SIGHUP stop a run the
// way Ctrl-C does: the accounting and the audit are printed, the trace is
// flushed, the temporary trace removed, and the exit status is 128 + signal.
TEST(NeatCliRun, SigtermAndSighupStopARunCleanly) {
  const std::string trace = write("term.jsonl", "");
  // The plan is printed once the graph is built; frames flow right after.
  const std::string ready = "expected bytes copied per frame";
  const CliRun t = run_and_signal(
      "run --trace " + trace + " 'default frames=100000 ! preprocess size=64x64 ! appsink'", ready,
      SIGTERM, std::chrono::milliseconds(1000));
  EXPECT_EQ(t.status, 128 + SIGTERM) << t.out;
  EXPECT_NE(t.out.find("== result (stopped by SIGTERM)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("(balanced)"), std::string::npos) << t.out;
  EXPECT_GT(std::filesystem::file_size(trace), 0u) << "the trace was not flushed";
  const CliRun audit = run("audit " + trace);
  EXPECT_EQ(audit.status, 0) << audit.out;
  EXPECT_NE(audit.out.find("default->preprocess"), std::string::npos) << audit.out;
  std::filesystem::remove(trace);

  const neat::cli_test::ScopedTmpdir tmp;
  const CliRun h = run_and_signal("run 'default frames=100000 ! appsink'", ready, SIGHUP,
                                  std::chrono::milliseconds(1000));
  EXPECT_EQ(h.status, 128 + SIGHUP) << h.out;
  EXPECT_NE(h.out.find("stopped by SIGHUP"), std::string::npos) << h.out;
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path)) << "the temporary trace was left behind";
}

TEST(NeatCli, UsageErrorsExit2VersionAndTraceThatIsADirectory) {
  for (const char* args : {"bogus", "run --frames abc", "run --frames 0", "explain --nope", "audit",
                           "run --policy lax"}) {
    const CliRun r = run(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
  }
  const CliRun zero = run("run --frames 0");
  EXPECT_NE(zero.out.find("'0' is not a whole number of 1 or more"), std::string::npos) << zero.out;
  EXPECT_LT(zero.out.size(), 200u) << zero.out;  // no 300-digit bound
  EXPECT_NE(run("bogus").out.find("unknown command 'bogus' (commands: run, explain"),
            std::string::npos);
  const CliRun v = run("--version");
  EXPECT_EQ(v.status, 0) << v.out;
  EXPECT_EQ(v.out.rfind("neat ", 0), 0u) << v.out;
  const CliRun dir = run("audit " + std::filesystem::temp_directory_path().string());
  EXPECT_EQ(dir.status, 2) << dir.out;
  EXPECT_NE(dir.out.find("is a directory; give a trace file"), std::string::npos) << dir.out;
}

}  // namespace

namespace {

// The small ways `neat run` used to surprise: each is a usage error, or does
// what it says.
TEST(NeatCliRun, BlankPipelinesFrameLimitsMetricsPathsAndTemporaryTraces) {
  for (const char* args : {"run ''", "run '   '", "explain ''"}) {
    const CliRun r = run(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find("the pipeline is empty"), std::string::npos) << r.out;
  }
  // --frames is the most any source makes, whatever its own frames= says.
  const CliRun capped = run("run --quiet --frames 3 'default frames=7 ! appsink'");
  EXPECT_EQ(capped.status, 0) << capped.out;
  EXPECT_NE(capped.out.find("3 source frames, 3 deliveries: 3 consumed"), std::string::npos)
      << capped.out;
  // A --metrics file that cannot be written fails before the run, not after it.
  const neat::cli_test::ScopedTmpdir tmp;
  const CliRun metrics = run("run --metrics /nonexistent-dir/m.prom 'default frames=2 ! appsink'");
  EXPECT_EQ(metrics.status, 2) << metrics.out;
  EXPECT_NE(metrics.out.find("--metrics /nonexistent-dir/m.prom: cannot write it"),
            std::string::npos)
      << metrics.out;
  EXPECT_EQ(metrics.out.find("== result"), std::string::npos) << "it ran first:\n" << metrics.out;
  // A Chrome trace that cannot be created, or a build that fails: the
  // temporary trace goes too.
  const CliRun chrome = run("run --chrome /nonexistent-dir/t.json 'default frames=2 ! appsink'");
  EXPECT_EQ(chrome.status, 2) << chrome.out;
  const CliRun refused = run("run 'default frames=2 ! convert format=RGB ! yolo ! appsink'");
  EXPECT_EQ(refused.status, 1) << refused.out;
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path)) << "a temporary trace was left behind";
  // explain takes --frames as run does (it used to blame the pipeline text).
  const CliRun plan = run("explain --frames 10 'default ! appsink'");
  EXPECT_EQ(plan.status, 0) << plan.out;
  EXPECT_NE(plan.out.find("sources end after at most 10 frame(s)"), std::string::npos) << plan.out;
}

}  // namespace

namespace {

// Messages that speak the user's language: what a conversion could reach,
// what to put before a tensor stage, which models there are, and "(none)"
// as the tables say it.
TEST(NeatCliRun, MessagesSayWhatThereIsAndTheFix) {
  const CliRun i420 = run("run --quiet 'default frames=2 ! convert format=I420 ! appsink'");
  EXPECT_EQ(i420.status, 1) << i420.out;
  EXPECT_NE(i420.out.find("NV12 converts to GRAY8, RGB, BGR"), std::string::npos) << i420.out;
  const CliRun yolo = run("run --quiet 'default frames=2 ! yolo ! appsink'");
  EXPECT_EQ(yolo.status, 1) << yolo.out;
  EXPECT_NE(yolo.out.find("'yolo' takes tensors, not images"), std::string::npos) << yolo.out;
  EXPECT_NE(yolo.out.find("`preprocess ! infer model=... ! yolo`"), std::string::npos) << yolo.out;
  const CliRun model =
      run("run --quiet 'default frames=2 ! preprocess ! infer model=models:nosuch "
          "! appsink'");
  EXPECT_EQ(model.status, 2) << model.out;
  EXPECT_NE(model.out.find("model 'models:nosuch': no nosuch.onnx or nosuch.pt in"),
            std::string::npos)
      << model.out;
  EXPECT_NE(model.out.find("models:detector"), std::string::npos) << model.out;

  // A conversion outside any edge or stage: "(none)" in the table and on stderr.
  const std::string before = write("before.jsonl", "");
  const std::string after = write(
      "after.jsonl",
      R"({"kind":"pack","reason":"stride_mismatch","bytes":100,"frame":1,"file":"x.cpp","line":3})"
      "\n");
  const CliRun cmp = run("audit " + after + " --baseline " + before);
  EXPECT_EQ(cmp.status, 1) << cmp.out;  // an empty baseline: no events
  std::ofstream(before)
      << R"({"kind":"convert","reason":"dtype","bytes":1,"edge":"a->b","frame":1})"
      << "\n";
  const CliRun cmp2 = run("audit " + after + " --baseline " + before);
  EXPECT_EQ(cmp2.status, 3) << cmp2.out;
  EXPECT_NE(cmp2.out.find("edge (none), stage (none): started pack"), std::string::npos)
      << cmp2.out;
  const CliRun fail = run("audit --fail-on pack " + after);
  EXPECT_NE(fail.out.find("on edge (none), stage (none)"), std::string::npos) << fail.out;
  std::filesystem::remove(before);
  std::filesystem::remove(after);
}

}  // namespace

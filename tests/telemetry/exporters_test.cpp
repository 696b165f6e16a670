// JSON Lines, Chrome trace and Prometheus exporters.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "neat/neat.hpp"
#include "neat/telemetry/audit.hpp"
#include "neat/telemetry/chrome_trace_sink.hpp"
#include "neat/telemetry/event_json.hpp"
#include "neat/telemetry/jsonl_sink.hpp"
#include "neat/telemetry/metrics.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

using namespace std::chrono_literals;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "." + std::to_string(::getpid()) + "." +
           ::testing::UnitTest::GetInstance()->current_test_info()->name()))
      .string();
}

void make_some_copies() {
  auto t = NeatTensor::allocate(DType::U8, {8, 8, 3});
  ScopedContext ctx({.graph = "cam", .stage = "resize", .edge = "decode->resize", .frame = 4});
  (void)t->clone();
  (void)t->transpose(0, 1)->contiguous();
  ScopedContext ctx2(
      {.graph = "cam", .stage = "detect", .edge = "resize->\"detect\"\n", .frame = 5});
  (void)t->clone();
}

TEST(EventJson, EscapesAndIsValidJson) {
  std::string out;
  append_json_string(out, std::string_view("a\"b\\c\n\t\x01z", 9));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\t\\u0001z\"");
  ConversionEvent e;
  e.where = std::source_location::current();
  e.stage = "st\"age";
  e.source.rank = 2;
  e.source.shape = {3, 4, 0, 0};
  std::string j;
  append_event_json(j, e);
  const auto parsed = nlohmann::json::parse(j);
  EXPECT_EQ(parsed["stage"], "st\"age");
  EXPECT_EQ(parsed["src"]["shape"], nlohmann::json::array({3, 4}));
  EXPECT_EQ(parsed["kind"], "pack");
  EXPECT_GT(parsed["line"].get<int>(), 0);
}

TEST(EventJson, RandomStringsRoundTripThroughAJsonParser) {
  std::mt19937 rng(7);
  const std::string alphabet =
      std::string("ab\"\\\n\t\r/ ") + std::string(1, '\x01') + std::string(1, '\x1f') + "xyz{}";
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng() % 40, ' ');
    for (char& c : s)
      c = alphabet[rng() % alphabet.size()];
    std::string out;
    append_json_string(out, s);
    ASSERT_EQ(nlohmann::json::parse(out).get<std::string>(), s) << out;
  }
}

TEST(JsonlSink, WritesOneParsableLinePerEvent) {
  const std::string path = temp_path("events.jsonl");
  {
    auto sink = JsonlSink::open(path);
    ASSERT_TRUE(sink.ok()) << sink.error().message();
    auto reg = add_event_sink(*sink);
    make_some_copies();
    EXPECT_EQ((*sink)->events(), 3u);
  }  // destruction flushes
  std::ifstream in(path);
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line))
    lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 5u);
  // The header line: what tells a traced run without conversions from an empty file.
  EXPECT_EQ(lines[0]["neat_trace"], 2);
  EXPECT_EQ(lines[0]["part"], 0);
  EXPECT_TRUE(lines[0]["run"].is_string());
  // The closing record: the trace is whole (its absence means it was cut short).
  EXPECT_EQ(lines[4]["type"], "end");
  EXPECT_EQ(lines[4]["run"], lines[0]["run"]);
  EXPECT_EQ(lines[4]["events"], 3);
  EXPECT_EQ(lines[4]["lost"], 0);
  lines.erase(lines.begin());
  EXPECT_EQ(lines[0]["operation"], "clone");
  EXPECT_EQ(lines[0]["stage"], "resize");
  EXPECT_EQ(lines[0]["edge"], "decode->resize");
  EXPECT_EQ(lines[0]["frame"], 4);
  EXPECT_EQ(lines[0]["bytes"], 192);
  EXPECT_EQ(lines[1]["reason"], "stride_mismatch");
  // Encodings are cached per description: same shape, different contiguity must not mix.
  EXPECT_EQ(lines[0]["src"]["contiguous"], true);
  EXPECT_EQ(lines[1]["src"]["contiguous"], false);
  EXPECT_EQ(lines[1]["src"]["shape"], nlohmann::json::array({8, 8, 3}));
  EXPECT_EQ(lines[1]["dst"]["contiguous"], true);
  EXPECT_EQ(lines[2]["src"]["contiguous"], true);
  EXPECT_EQ(lines[2]["edge"], "resize->\"detect\"\n");
  EXPECT_NE(lines[0]["file"].get<std::string>().find("exporters_test.cpp"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(JsonlSink, BadPathIsATypedError) {
  NEAT_EXPECT_ERROR(JsonlSink::open("/nonexistent-dir/x.jsonl"), ErrorCode::FailedPrecondition,
                    "cannot open '/nonexistent-dir/x.jsonl'");
  NEAT_EXPECT_ERROR(ChromeTraceSink::open("/nonexistent-dir/x.json"), ErrorCode::FailedPrecondition,
                    "cannot open '/nonexistent-dir/x.json'");
  ChromeTraceSink memory_only;
  EXPECT_TRUE(memory_only.flush().ok());
  EXPECT_TRUE(memory_only.to_json().ok());
  const std::string path = temp_path("streamed.json");
  auto file = ChromeTraceSink::open(path);
  ASSERT_TRUE(file.ok());
  NEAT_EXPECT_ERROR((*file)->to_json(), ErrorCode::FailedPrecondition, "read that file");
  NEAT_EXPECT_ERROR(ChromeTraceSink::open(path, ChromeTraceSinkOptions{.max_bytes = 100}),
                    ErrorCode::InvalidArgument, "at least 256 bytes");
  NEAT_EXPECT_ERROR(ChromeTraceSink::open(path, ChromeTraceSinkOptions{.keep = -1}),
                    ErrorCode::InvalidArgument, "keep = -1");
  NEAT_EXPECT_ERROR(
      JsonlSink::open(path, JsonlSinkOptions{.flush_interval = std::chrono::milliseconds(0)}),
      ErrorCode::InvalidArgument, "must be positive");
  file->reset();
  std::filesystem::remove(path);
}

TEST(ChromeTrace, FollowsTheTraceEventFormat) {
  auto sink = std::make_shared<ChromeTraceSink>();
  {
    auto reg = add_event_sink(sink);
    make_some_copies();
    std::thread([] { (void)NeatTensor::allocate(DType::F32, {16})->clone(); }).join();
  }
  const auto trace = nlohmann::json::parse(*sink->to_json());
  ASSERT_TRUE(trace.is_array());  // the JSON Array Format: streamable, readable when cut short
  std::map<std::int64_t, std::string> thread_names;
  std::map<std::int64_t, std::vector<std::pair<double, double>>> slices;
  int counters = 0;
  for (const auto& ev : trace) {
    // Required by the format for every event.
    ASSERT_TRUE(ev.contains("ph") && ev["ph"].is_string()) << ev;
    ASSERT_TRUE(ev.contains("pid") && ev["pid"].is_number_integer()) << ev;
    ASSERT_TRUE(ev.contains("tid") && ev["tid"].is_number_integer()) << ev;
    ASSERT_TRUE(ev.contains("name") && ev["name"].is_string()) << ev;
    const std::string ph = ev["ph"];
    if (ph == "M") {
      if (ev["name"] == "thread_name") thread_names[ev["tid"]] = ev["args"]["name"];
      if (ev["name"] == "neat_trace") EXPECT_EQ(ev["args"]["neat_trace"], 2) << ev;
      continue;
    }
    ASSERT_TRUE(ev.contains("ts") && ev["ts"].is_number()) << ev;
    if (ph == "X") {
      ASSERT_TRUE(ev.contains("dur") && ev["dur"].is_number() && ev["dur"].get<double>() >= 0)
          << ev;
      for (const char* k :
           {"bytes", "reason", "src", "dst", "edge", "stage", "file", "line", "policy"}) {
        EXPECT_TRUE(ev["args"].contains(k)) << k;
      }
      slices[ev["tid"]].push_back(
          {ev["ts"].get<double>(), ev["ts"].get<double>() + ev["dur"].get<double>()});
    } else if (ph == "C") {
      ++counters;
      EXPECT_TRUE(ev["args"]["bytes"].is_number_integer());
      EXPECT_EQ(ev["name"].get<std::string>().rfind("bytes copied: ", 0), 0u);
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }
  EXPECT_EQ(counters, 4);
  // One track per stage, one per thread without a stage.
  std::set<std::string> names;
  for (auto& [tid, n] : thread_names)
    names.insert(n);
  EXPECT_TRUE(names.count("stage 'resize'"));
  EXPECT_TRUE(names.count("stage 'detect'"));
  EXPECT_EQ(names.size(), 3u);
  // Well-formed nesting: on each track, slices are disjoint or nested.
  for (auto& [tid, s] : slices) {
    ASSERT_TRUE(thread_names.count(tid)) << "every slice's track is named";
    std::sort(s.begin(), s.end());
    for (std::size_t i = 1; i < s.size(); ++i) {
      const bool disjoint = s[i].first >= s[i - 1].second;
      const bool nested = s[i].second <= s[i - 1].second;
      EXPECT_TRUE(disjoint || nested) << "overlapping slices on track " << tid;
    }
  }
}

TEST(ChromeTrace, WritesTheFile) {
  const std::string path = temp_path("trace.json");
  {
    auto sink = ChromeTraceSink::open(path);
    ASSERT_TRUE(sink.ok());
    auto reg = add_event_sink(*sink);
    make_some_copies();
  }
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  EXPECT_GE(trace.size(), 6u);
  EXPECT_EQ(trace.back()["name"], "neat_trace_end");  // closed on destruction
  std::filesystem::remove(path);
}

TEST(Prometheus, ExpositionHasLabelsAndPassesPromtool) {
  labeled_metrics().clear();
  make_some_copies();
  {
    ScopedPolicy silent(ConversionPolicy::AllowSilent);
    auto t = NeatTensor::allocate(DType::U8, {4, 4});
    (void)accept_contiguous(*t->transpose(0, 1));  // silent: counted in metrics, no event
    (void)accept_contiguous(*t->transpose(0, 1), {.policy = ConversionPolicy::Strict});  // refused
  }
  const std::string text = prometheus_text();
  for (const char* part :
       {"# TYPE neat_conversions_total counter",
        "neat_conversions_total{kind=\"pack\",reason=\"user_request\",policy=\"strict\",explicit="
        "\"true\",stage=\"resize\",edge=\"decode->resize\"} 1",
        "neat_conversion_bytes_total{kind=\"pack\",reason=\"user_request\",policy=\"strict\","
        "explicit=\"true\",stage=\"resize\",edge=\"decode->resize\"} 192",
        "edge=\"resize->\\\"detect\\\"\\n\"", "policy=\"allow_silent\",explicit=\"false\"",
        "# TYPE neat_conversion_duration_seconds histogram", "le=\"+Inf\"",
        "neat_conversions_refused_total{kind=\"pack\",reason=\"stride_mismatch\",stage=\"\",edge="
        "\"\"} 1"}) {
    EXPECT_NE(text.find(part), std::string::npos) << "missing: " << part << "\n" << text;
  }
  if (std::system("command -v promtool > /dev/null 2>&1") != 0) {
    GTEST_SKIP()
        << "promtool is not installed (Debian package 'prometheus'; make test installs it)";
  }
  const std::string path = temp_path("metrics.prom");
  std::ofstream(path) << text;
  const std::string cmd = "promtool check metrics < " + path + " > " + path + ".out 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream out(path + ".out");
  std::stringstream report;
  report << out.rdbuf();
  EXPECT_EQ(rc, 0) << report.str();
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".out");
}

}  // namespace
}  // namespace neat

namespace neat {
namespace {

TEST(JsonlSink, RotatesBySizeKeepsNFilesAndNeverSplitsAnEvent) {
  const std::string path = temp_path("rotating.jsonl");
  const auto part = [&](int i) { return i == 0 ? path : path + "." + std::to_string(i); };
  for (int i = 0; i <= 4; ++i)
    std::filesystem::remove(part(i));
  constexpr std::int64_t kMax = 4096;
  std::uint64_t events = 0, rotations = 0;
  {
    auto sink = JsonlSink::open(path, JsonlSinkOptions{.max_bytes = kMax, .keep = 2});
    NEAT_ASSERT_OK(sink);
    auto reg = add_event_sink(*sink);
    for (int i = 0; i < 40; ++i) {
      make_some_copies();
      NEAT_ASSERT_OK((*sink)->flush());  // small writes: rotation works line by line
    }
    events = (*sink)->events();
    rotations = (*sink)->rotations();
    EXPECT_EQ((*sink)->lost_events(), 0u);
  }
  EXPECT_GT(rotations, 3u) << "40 x 3 events of ~700 bytes in 4 KiB files";
  EXPECT_FALSE(std::filesystem::exists(part(3))) << "keep = 2: no PATH.3";
  std::uint64_t read = 0, headers = 0;
  for (int i = 0; i <= 2; ++i) {
    ASSERT_TRUE(std::filesystem::exists(part(i))) << part(i);
    EXPECT_LE(static_cast<std::int64_t>(std::filesystem::file_size(part(i))), kMax) << part(i);
    AuditAggregator a;
    NEAT_ASSERT_OK(a.read_file(part(i)));  // every line whole and parsable
    EXPECT_EQ(a.headers_read(), 1u) << part(i);
    read += a.events_read();
    headers += a.headers_read();
  }
  EXPECT_EQ(headers, 3u);
  EXPECT_LT(read, events) << "the oldest parts are gone";
  EXPECT_GT(read, 0u);

  // The newest part holds the last events; parts are numbered in the headers.
  std::ifstream newest(part(0));
  std::string header;
  std::getline(newest, header);
  EXPECT_EQ(nlohmann::json::parse(header)["part"], rotations);
  for (int i = 0; i <= 2; ++i)
    std::filesystem::remove(part(i));
}

TEST(JsonlSink, KeepZeroTruncatesInPlaceAndBadOptionsAreRefused) {
  const std::string path = temp_path("keep0.jsonl");
  {
    auto sink = JsonlSink::open(path, JsonlSinkOptions{.max_bytes = 1024, .keep = 0});
    NEAT_ASSERT_OK(sink);
    auto reg = add_event_sink(*sink);
    for (int i = 0; i < 10; ++i)
      make_some_copies();
  }
  EXPECT_LE(std::filesystem::file_size(path), 1024u);
  EXPECT_FALSE(std::filesystem::exists(path + ".1"));
  std::filesystem::remove(path);
  NEAT_EXPECT_ERROR(JsonlSink::open(path, JsonlSinkOptions{.max_bytes = -1}),
                    ErrorCode::InvalidArgument, "max_bytes = -1");
  NEAT_EXPECT_ERROR(JsonlSink::open(path, JsonlSinkOptions{.max_bytes = 100}),
                    ErrorCode::InvalidArgument, "at least 256 bytes");
  NEAT_EXPECT_ERROR(JsonlSink::open(path, JsonlSinkOptions{.max_bytes = 0, .keep = -2}),
                    ErrorCode::InvalidArgument, "keep = -2");
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace neat

namespace neat {
namespace {

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A run killed with SIGKILL keeps what its traces wrote: both sinks write
// what they buffer within their flush interval, while they are still open.
TEST(TraceFiles, BufferedEventsReachTheDiskWithinTheFlushIntervalWhileOpen) {
  const std::string jpath = temp_path("flushed.jsonl"), cpath = temp_path("flushed.json");
  auto jsonl = JsonlSink::open(jpath, JsonlSinkOptions{.flush_interval = 50ms});
  auto chrome = ChromeTraceSink::open(cpath, ChromeTraceSinkOptions{.flush_interval = 50ms});
  NEAT_ASSERT_OK(jsonl);
  NEAT_ASSERT_OK(chrome);
  {
    auto r1 = add_event_sink(*jsonl);
    auto r2 = add_event_sink(*chrome);
    make_some_copies();
  }
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  std::string j, c;
  while (std::chrono::steady_clock::now() < deadline) {
    j = file_text(jpath);
    c = file_text(cpath);
    if (j.find("\"operation\":\"clone\"") != std::string::npos &&
        c.find("\"operation\":\"clone\"") != std::string::npos)
      break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_NE(j.find("\"operation\":\"clone\""), std::string::npos) << j;
  EXPECT_NE(c.find("\"operation\":\"clone\""), std::string::npos) << c;
  EXPECT_EQ(j.find("\"type\":\"end\""), std::string::npos) << "still open: no closing record yet";
  // Still open: each audit says how far it got and that it was cut short.
  for (const std::string& path : {jpath, cpath}) {
    AuditAggregator a;
    NEAT_ASSERT_OK(a.read_file(path));
    const AuditReport r = a.report();
    EXPECT_EQ(r.conversions, 3u) << path;
    ASSERT_EQ(r.cut_short.size(), 1u) << path;
    EXPECT_EQ(r.cut_short[0].events, 3u);
    EXPECT_EQ(r.cut_short[0].last_frame, 5);
  }
  NEAT_ASSERT_OK((*jsonl)->close());
  NEAT_ASSERT_OK((*chrome)->close());
  NEAT_ASSERT_OK((*jsonl)->close());  // idempotent
  for (const std::string& path : {jpath, cpath}) {
    AuditAggregator a;
    NEAT_ASSERT_OK(a.read_file(path));
    EXPECT_TRUE(a.report().cut_short.empty()) << path;
  }
  // After close(), events are counted lost, not written.
  {
    auto r = add_event_sink(*jsonl);
    make_some_copies();
  }
  EXPECT_EQ((*jsonl)->lost_events(), 3u);
  std::filesystem::remove(jpath);
  std::filesystem::remove(cpath);
}

// The Chrome trace streams: the file grows while the sink is open, and with
// max_bytes it rotates into parts that are each a whole trace.
TEST(TraceFiles, TheChromeTraceStreamsAndRotatesIntoWholeParts) {
  const std::string path = temp_path("rotating.json");
  const auto part = [&](int i) { return i == 0 ? path : path + "." + std::to_string(i); };
  for (int i = 0; i <= 3; ++i)
    std::filesystem::remove(part(i));
  constexpr std::int64_t kMax = 8192;
  std::uint64_t rotations = 0;
  {
    auto sink = ChromeTraceSink::open(path, ChromeTraceSinkOptions{.max_bytes = kMax, .keep = 2});
    NEAT_ASSERT_OK(sink);
    auto reg = add_event_sink(*sink);
    for (int i = 0; i < 40; ++i) {
      make_some_copies();
      NEAT_ASSERT_OK((*sink)->flush());
    }
    rotations = (*sink)->rotations();
  }
  EXPECT_GT(rotations, 3u);
  EXPECT_FALSE(std::filesystem::exists(part(3))) << "keep = 2: no PATH.3";
  for (int i = 0; i <= 2; ++i) {
    const auto trace = nlohmann::json::parse(file_text(part(i)));  // each part is whole JSON
    ASSERT_TRUE(trace.is_array());
    EXPECT_EQ(trace.front()["name"], "neat_trace") << part(i);
    EXPECT_EQ(trace.back()["name"], i == 0 ? "neat_trace_end" : "neat_trace_part_end") << part(i);
    std::set<std::int64_t> named;
    for (const auto& ev : trace) {
      if (ev["ph"] == "M" && ev["name"] == "thread_name")
        named.insert(ev["tid"].get<std::int64_t>());
      if (ev["ph"] == "X")
        EXPECT_TRUE(named.count(ev["tid"].get<std::int64_t>())) << "track named in its own part";
    }
  }
  AuditAggregator a;  // the rotated set, newest part last: whole
  for (int i = 2; i >= 0; --i)
    NEAT_ASSERT_OK(a.read_file(part(i)));
  EXPECT_TRUE(a.report().cut_short.empty());
  for (int i = 0; i <= 2; ++i)
    std::filesystem::remove(part(i));
}

}  // namespace
}  // namespace neat

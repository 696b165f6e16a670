// neat audit at production scale: 1,000,000 JSON Lines events (the lines
// JsonlSink writes, ~770 bytes each with their src/dst descriptions) read by
// AuditAggregator, against
//   - the baseline: a skilled C++ user with the most used JSON library,
//     nlohmann::json, parsing each line and aggregating the same rows;
//   - the floor: reading the file and finding its newlines, nothing parsed.
// And the peak RSS of `neat audit FILE` as a user runs it (a child process,
// getrusage through wait4). Targets (issue: audits at production scale):
// >= 300,000 events/s and <= 64 MB peak RSS.
#include <benchmark/benchmark.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <fcntl.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include <neat/telemetry/audit.hpp>

extern char** environ;

namespace {

namespace fs = std::filesystem;

// A trace of `events` lines in the shape of JsonlSink's (three edges, frame
// numbers and timestamps advancing), written once per process.
std::string make_trace(std::int64_t events) {
  const fs::path path =
      fs::temp_directory_path() / ("neat-audit-bench-" + std::to_string(events) + ".jsonl");
  if (fs::exists(path) && fs::file_size(path) > static_cast<std::uintmax_t>(events) * 500)
    return path.string();
  std::ofstream out(path, std::ios::binary);
  out << R"({"neat_trace":1,"run":"bench-1","part":0,"pid":1,"ts_ns":1795459059000000000})"
      << "\n";
  const char* edges[] = {"camera->preprocess", "preprocess->infer", "infer->yolo"};
  const char* stages[] = {"preprocess", "infer", "yolo"};
  char line[1200];
  for (std::int64_t i = 0; i < events; ++i) {
    const int e = static_cast<int>(i % 3);
    const int n = std::snprintf(
        line, sizeof line,
        R"EV({"ts_ns":%lld,"duration_ns":%lld,"kind":"%s","reason":"%s","explicit":%s,"loud":false,"policy":"allow_with_trace","bytes":%d,"bytes_read":3110400,"thread":%d,"graph":"camera","stage":"%s","edge":"%s","frame":%lld,"src":{"dtype":"u8","shape":[1080,1920],"format":"NV12","layout":"HW","device":"cpu:0","storage":"gstreamer","contiguous":true},"dst":{"dtype":"f32","shape":[3,640,640],"format":"none","layout":"none","device":"cpu:0","storage":"heap","contiguous":true},"detail":"yuv bt709 limited (from the frame)","operation":"preprocess","file":"stages/builtin.cpp","line":%d,"function":"virtual neat::Result<neat::NeatTensor> neat::{anonymous}::PreprocessStage::process(neat::NeatTensor, neat::StageContext&)"})EV"
        "\n",
        1795459059000000000LL + i * 11000000LL, 1000000LL + (i % 977) * 100,
        e == 1 ? "transfer" : "convert", e == 1 ? "model_input" : "normalize",
        e == 0 ? "true" : "false", 4915200 + e, e + 1, stages[e], edges[e],
        static_cast<long long>(i / 3), 300 + e);
    out.write(line, n);
  }
  return path.string();
}

std::int64_t count_newlines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(std::size_t{4} << 20);
  std::int64_t n = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    for (const char* p = buf.data();
         (p = static_cast<const char*>(std::memchr(p, '\n', buf.data() + got - p))); ++p) {
      ++n;
    }
  }
  return n;
}

// The baseline: getline + nlohmann::json::parse + the same aggregation.
std::int64_t nlohmann_audit(const std::string& path) {
  std::ifstream in(path);
  std::map<std::tuple<std::string, std::string, std::string, std::string>,
           std::tuple<std::int64_t, std::int64_t, std::int64_t>>
      rows;
  std::int64_t events = 0;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("neat_trace")) continue;
    auto& [count, bytes, ns] =
        rows[{j.value("edge", ""), j.value("stage", ""), j.at("kind").get<std::string>(),
              j.at("reason").get<std::string>()}];
    count += 1;
    bytes += j.at("bytes").get<std::int64_t>();
    ns += j.value("duration_ns", std::int64_t{0});
    ++events;
  }
  benchmark::DoNotOptimize(rows);
  return events;
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Peak RSS (MB) of `neat audit PATH` run as a user runs it.
double neat_audit_peak_rss_mb(const std::string& path, int* status) {
  const std::string bin = NEAT_CLI_PATH;
  std::vector<std::string> args = {bin, "audit", path};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, bin.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  rusage usage{};
  int st = 0;
  ::wait4(pid, &st, 0, &usage);
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB
}

void BM_Audit_MillionEvents(benchmark::State& state) {
  constexpr std::int64_t kEvents = 1000000;
  constexpr std::int64_t kBaselineEvents = 100000;  // the baseline is slow: a tenth, as a rate
  const std::string big = make_trace(kEvents);
  const std::string small = make_trace(kBaselineEvents);
  double ours_s = 0, floor_s = 0, base_s = 0, rss = 0;
  std::uint64_t read = 0;
  int status = -1;
  for (auto _ : state) {
    ours_s += seconds_of([&] {
      neat::AuditAggregator a;
      if (!a.read_file(big).ok()) state.SkipWithError("the trace did not read");
      read = a.events_read();
      benchmark::DoNotOptimize(a.report());
    });
    floor_s += seconds_of([&] { benchmark::DoNotOptimize(count_newlines(big)); });
    base_s += seconds_of([&] { benchmark::DoNotOptimize(nlohmann_audit(small)); });
    rss = neat_audit_peak_rss_mb(big, &status);
  }
  const double it = static_cast<double>(state.iterations());
  const double ours_rate = static_cast<double>(read) * it / ours_s;
  const double base_rate = static_cast<double>(kBaselineEvents) * it / base_s;
  state.counters["events"] = static_cast<double>(read);
  state.counters["events_per_s"] = ours_rate;
  state.counters["nlohmann_events_per_s"] = base_rate;
  state.counters["speedup_vs_nlohmann"] = ours_rate / base_rate;
  state.counters["time_vs_floor"] = ours_s / floor_s;
  state.counters["neat_audit_peak_rss_MB"] = rss;
  state.counters["neat_audit_exit"] = status;
}
BENCHMARK(BM_Audit_MillionEvents)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

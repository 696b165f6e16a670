// Memory and latency of whole pipelines (issue: "a pipeline holds what it
// needs, and says so"). Not a Google Benchmark: peak RSS is a property of a
// whole process, so each configuration runs as its own child process, and
// the configurations are interleaved round by round (the machine is shared
// and noisy; medians of the rounds are printed, and every figure a target is
// about is a ratio of two runs of the same round):
//
//   * `neat explain P`              the no-frame baseline of the same binary
//   * `neat run --frames 600 P`     wall time and peak RSS
//   * stock GStreamer               videoconvert ! videoscale to RGB 640x640 ! fakesink
//   * --compare NEAT                the same `neat run` with another build of neat
//                                   (e.g. the commit before this change)
//
// Frame memory = peak RSS - the explain baseline; the reference is "one input
// frame plus one output frame per stage" from the plan (GraphPlan::memory).
// Then a live 30 fps source -> preprocess -> appsink in this process: p50 /
// p95 / p99 / max capture-to-appsink latency against one frame interval plus
// the stages' own processing time.
//
//   neat_memory [--rounds N] [--frames N] [--compare /path/to/old/neat]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <neat/neat.hpp>
#include <neat/stages/pipeline.hpp>

namespace {

struct ChildRun {
  double seconds = 0;
  double peak_mib = 0;
  int status = 0;
};

// Runs argv to its end with stdout/stderr to /dev/null; its peak RSS from wait4().
ChildRun run_child(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::FILE* null = std::fopen("/dev/null", "w");
    if (null != nullptr) {
      ::dup2(::fileno(null), 1);
      ::dup2(::fileno(null), 2);
    }
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ChildRun r;
  struct rusage ru {};
  int status = 0;
  ::wait4(pid, &status, 0, &ru);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.peak_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// One input frame plus one output frame per stage, from the plan.
double reference_mib(const std::string& pipeline) {
  auto declared = neat::declare_pipeline(pipeline);
  if (!declared.ok()) return 0;
  auto plan = declared->builder.plan();
  if (!plan.ok()) return 0;
  std::int64_t bytes = 0;
  for (const auto& p : plan->memory) {
    if (p.name.rfind("edge", 0) != 0) bytes += p.frame_bytes;
  }
  return static_cast<double>(bytes) / (1 << 20);
}

struct Row {
  std::string name;
  std::vector<std::string> run, explain;  // explain empty: no baseline
  std::string pipeline;                   // for the reference (neat pipelines)
  std::vector<double> seconds, peak, base;
};

void live_latency() {
  using namespace std::chrono_literals;
  neat::GraphBuilder b("live");
  // A live source that ends is down (it would be restarted): the frame limit ends it.
  b.add_source("cam", neat::gst_source("videotestsrc is-live=true ! "
                                       "video/x-raw,format=NV12,width=1920,height=1080,"
                                       "framerate=30/1"));
  b.set_max_source_frames(300);
  b.add_stage("preprocess", neat::preprocess_stage({.width = 640, .height = 640}));
  auto out = neat::AppSink::create();
  b.add_sink("appsink", out);
  (void)b.connect("cam", "preprocess");
  (void)b.connect("preprocess", "appsink");
  auto g = b.build();
  if (!g.ok()) {
    std::printf("live latency: %s\n", g.error().message().c_str());
    return;
  }
  if (!g->start().ok()) return;
  while (out->pull(5s)) {
  }
  (void)g->wait();
  const neat::GraphStats s = g->stats();
  double work = 0;
  neat::DurationSummary latency;
  for (const auto& n : s.nodes) {
    if (n.kind == neat::NodeKind::Stage) work += n.busy_summary.p99;
    if (n.kind == neat::NodeKind::Sink) {
      work += n.busy_summary.p99;
      latency = n.latency;
    }
  }
  const double interval = 1.0 / 30.0;
  const double bound = interval + work;
  std::printf(
      "\nlive 30 fps 1080p NV12 -> preprocess 640x640 -> appsink, %llu frames\n"
      "  capture -> appsink latency: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, max %.2f ms\n"
      "  bound: one frame interval %.2f ms + the stages' p99 time %.2f ms = %.2f ms\n"
      "  p99 / bound = %.3f (target <= 1: %s)\n",
      static_cast<unsigned long long>(latency.count), latency.p50 * 1e3, latency.p95 * 1e3,
      latency.p99 * 1e3, latency.max * 1e3, interval * 1e3, work * 1e3, bound * 1e3,
      latency.p99 / bound, latency.p99 <= bound ? "met" : "NOT met");
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  int frames = 600;
  std::string compare;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--frames" && i + 1 < argc) {
      frames = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--compare" && i + 1 < argc) {
      compare = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--rounds N] [--frames N] [--compare /path/to/neat]\n",
                   argv[0]);
      return 2;
    }
  }
  const std::string neat = NEAT_CLI_PATH;
  const std::string n = std::to_string(frames);
  const std::string pre = "default ! preprocess size=640x640 ! appsink";
  std::vector<Row> rows;
  rows.push_back({"neat run: preprocess 640x640 F32 -> appsink",
                  {neat, "run", "--quiet", "--frames", n, pre},
                  {neat, "explain", pre},
                  pre});
  rows.push_back({"neat run: the detection demo (default)",
                  {neat, "run", "--quiet", "--frames", n},
                  {neat, "explain"},
                  neat::default_pipeline_text()});
  if (!compare.empty()) {
    rows.push_back({"--compare: preprocess pipeline",
                    {compare, "run", "--quiet", "--frames", n, pre},
                    {compare, "explain", pre},
                    pre});
    rows.push_back({"--compare: detection demo",
                    {compare, "run", "--quiet", "--frames", n},
                    {compare, "explain"},
                    neat::default_pipeline_text()});
  }
  rows.push_back(
      {"stock GStreamer: videoconvert ! videoscale to RGB 640x640 ! fakesink",
       {"gst-launch-1.0", "-q", "videotestsrc", "num-buffers=" + n, "!",
        "video/x-raw,format=NV12,width=1920,height=1080", "!", "videoconvert", "!", "videoscale",
        "!", "video/x-raw,format=RGB,width=640,height=640", "!", "fakesink"},
       {},
       ""});
  for (int r = 0; r < rounds; ++r) {
    for (Row& row : rows) {
      if (!row.explain.empty()) row.base.push_back(run_child(row.explain).peak_mib);
      const ChildRun c = run_child(row.run);
      if (c.status != 0) {
        std::fprintf(stderr, "%s: exit status %d\n", row.name.c_str(), c.status);
        return 1;
      }
      row.seconds.push_back(c.seconds);
      row.peak.push_back(c.peak_mib);
    }
  }
  std::printf("%d frames of 1080p NV12 from videotestsrc, whole process, median of %d rounds\n\n",
              frames, rounds);
  std::printf(
      "| pipeline | wall time | peak RSS | no-frame baseline | frame memory | "
      "one input + one output per stage | ratio |\n|---|---|---|---|---|---|---|\n");
  for (Row& row : rows) {
    const double peak = median(row.peak), secs = median(row.seconds);
    if (row.base.empty()) {
      std::printf("| %s | %.2f s | %.1f MiB | | | | |\n", row.name.c_str(), secs, peak);
      continue;
    }
    // Frame memory per round (peak - that round's baseline), then the median.
    std::vector<double> fm;
    for (std::size_t i = 0; i < row.peak.size(); ++i)
      fm.push_back(row.peak[i] - row.base[i]);
    const double frame_memory = median(fm), ref = reference_mib(row.pipeline);
    std::printf("| %s | %.2f s | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB | %.2fx |\n",
                row.name.c_str(), secs, peak, median(row.base), frame_memory, ref,
                ref > 0 ? frame_memory / ref : 0.0);
  }
  if (!compare.empty()) {
    // Throughput against the other build, round by round.
    for (std::size_t k = 0; k < 2; ++k) {
      std::vector<double> ratio;
      for (int r = 0; r < rounds; ++r)
        ratio.push_back(rows[k + 2].seconds[static_cast<std::size_t>(r)] /
                        rows[k].seconds[static_cast<std::size_t>(r)]);
      std::printf("\nthroughput of '%s' / --compare's: %.3f (median of the rounds' ratios)",
                  rows[k].name.c_str(), median(ratio));
    }
    std::printf("\n");
  }
  live_latency();
  return 0;
}

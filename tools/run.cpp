#include "run.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>

#include <neat/neat.hpp>
#include <neat/stages/pipeline.hpp>
#include <neat/telemetry/audit.hpp>
#include <neat/telemetry/chrome_trace_sink.hpp>
#include <neat/telemetry/jsonl_sink.hpp>
#include <neat/telemetry/metrics.hpp>
#include <neat/telemetry/metrics_server.hpp>

namespace neat::tools {
namespace {

constexpr int kGraphFailed = 1;
constexpr int kBadInput = 2;
// SIGINT (Ctrl-C), SIGTERM (docker, systemd, Kubernetes) and SIGHUP (a closed
// terminal) all stop a run the same way: the graph stops, sinks get their end
// of stream, traces and metrics are flushed, temporary files removed, the
// accounting printed; the exit status is 128 + the signal.
std::atomic<int> g_signal{0};

void on_signal(int sig) {
  g_signal.store(sig);
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT (Ctrl-C)";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

// Installs on_signal for the three signals; restores the old handlers.
class SignalScope {
 public:
  SignalScope() {
    g_signal.store(0);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (std::size_t i = 0; i < kSignals.size(); ++i)
      ::sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~SignalScope() {
    for (std::size_t i = 0; i < kSignals.size(); ++i)
      ::sigaction(kSignals[i], &old_[i], nullptr);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
};

Result<std::optional<ConversionPolicy>> policy_option(const std::string& s) {
  if (s.empty()) return std::optional<ConversionPolicy>();
  auto p = parse_conversion_policy(s);
  if (!p) return invalid_argument("--policy " + s + ": use strict, trace or silent");
  return std::optional<ConversionPolicy>(*p);
}

bool is_generated_source(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return true;
  return text.compare(first, 7, "default") == 0 || text.compare(first, 9, "synthetic") == 0;
}

bool is_detections(const FrameSpec& s) {
  return s.dtype == DType::F32 && !s.is_image() && s.shape.size() == 2 && s.shape[1] == 6;
}

// "frame 12 pts 0.400 s: 2 detections" and a line per box.
void print_detections(const NeatTensor& d) {
  const FrameMeta& m = d.meta();
  const std::int64_t n = d.rank() == 2 ? d.shape()[0] : 0;
  std::printf("frame %lld", static_cast<long long>(m.frame));
  if (m.pts_ns >= 0) std::printf(" pts %.3f s", static_cast<double>(m.pts_ns) / 1e9);
  std::printf(": %lld detection%s\n", static_cast<long long>(n), n == 1 ? "" : "s");
  auto map = d.map();
  if (!map.ok() || n == 0) return;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto* r = reinterpret_cast<const float*>(map->data() + i * d.strides()[0]);
    std::printf("  class %d  score %.3f  box (%.1f, %.1f) - (%.1f, %.1f)\n", static_cast<int>(r[5]),
                static_cast<double>(r[4]), static_cast<double>(r[0]), static_cast<double>(r[1]),
                static_cast<double>(r[2]), static_cast<double>(r[3]));
  }
}

// What the appsink's detections added up to over a run.
struct DetectionSummary {
  std::uint64_t frames = 0, with_any = 0, boxes = 0;
  std::map<int, std::uint64_t> per_class;
  void add(const NeatTensor& d) {
    ++frames;
    const std::int64_t n = d.rank() == 2 ? d.shape()[0] : 0;
    if (n == 0) return;
    ++with_any;
    boxes += static_cast<std::uint64_t>(n);
    auto map = d.map();
    if (!map.ok()) return;
    for (std::int64_t i = 0; i < n; ++i) {
      const auto* r = reinterpret_cast<const float*>(map->data() + i * d.strides()[0]);
      ++per_class[static_cast<int>(r[5])];
    }
  }
  void print() const {
    std::printf("  detections: %llu frame(s), %llu with at least one, %llu in all",
                static_cast<unsigned long long>(frames), static_cast<unsigned long long>(with_any),
                static_cast<unsigned long long>(boxes));
    std::string classes;
    for (const auto& [c, n] : per_class)
      classes +=
          (classes.empty() ? "" : ", ") + ("class " + std::to_string(c)) + ": " + std::to_string(n);
    std::printf("%s%s%s\n", classes.empty() ? "" : " (", classes.c_str(),
                classes.empty() ? "" : ")");
  }
};

// The pipeline's GStreamer sources wait at most `seconds` for their first
// frame, and give up when a signal arrives.
void set_source_waits(PipelineOptions& o, double seconds) {
  o.first_frame_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
  o.timeout_setting = "--first-frame-timeout";
  o.cancelled = [] { return g_signal.load() != 0; };
}

// Where the time of a frame goes: capture -> each sink, and per stage its
// wait in the input queue and its own time.
void print_latency(const GraphStats& stats) {
  bool any = false;
  for (const NodeStats& n : stats.nodes)
    any = any || (n.kind == NodeKind::Sink && n.latency.count > 0);
  if (!any) return;
  std::printf("== latency (capture -> sink, per frame)\n");
  auto ms = [](double s) { return s * 1e3; };
  std::printf("  %-22s %8s %9s %9s %9s %9s\n", "SINK", "FRAMES", "p50 ms", "p95 ms", "p99 ms",
              "max ms");
  for (const NodeStats& n : stats.nodes) {
    if (n.kind != NodeKind::Sink || n.latency.count == 0) continue;
    const DurationSummary& l = n.latency;
    std::printf("  %-22s %8llu %9.2f %9.2f %9.2f %9.2f\n", n.name.c_str(),
                static_cast<unsigned long long>(l.count), ms(l.p50), ms(l.p95), ms(l.p99),
                ms(l.max));
  }
  std::printf("  where it goes (per frame: waiting in the input queue, then working)\n");
  std::printf("  %-22s %12s %12s %12s %12s\n", "STAGE", "wait p50 ms", "wait p99 ms", "work p50 ms",
              "work p99 ms");
  for (const NodeStats& n : stats.nodes) {
    if (n.kind == NodeKind::Source || n.busy_summary.count == 0) continue;
    std::printf("  %-22s %12.2f %12.2f %12.2f %12.2f\n", n.name.c_str(), ms(n.queue_wait.p50),
                ms(n.queue_wait.p99), ms(n.busy_summary.p50), ms(n.busy_summary.p99));
  }
}

// The memory plan against what the pools really held.
void print_memory(const GraphStats& stats, const GraphPlan& plan) {
  std::printf("== frame memory: plan %.2f MiB",
              static_cast<double>(plan.frame_memory_bytes()) / (1 << 20));
  if (plan.max_frame_memory > 0) {
    std::printf(" (budget %.2f MiB)", static_cast<double>(plan.max_frame_memory) / (1 << 20));
  }
  std::printf("\n");
  for (const PoolStats& p : stats.pools) {
    std::printf("  %-34s %lld of %d planned buffers in use at most (%.2f MiB each)\n",
                p.name.c_str(), static_cast<long long>(p.peak_buffers), p.planned_buffers,
                static_cast<double>(p.frame_bytes) / (1 << 20));
  }
}

}  // namespace

int explain_pipeline(const std::string& pipeline, const std::string& policy,
                     double first_frame_timeout, std::int64_t max_frame_memory) {
  const SignalScope signals;  // Ctrl-C while a source prerolls ends the wait
  auto p = policy_option(policy);
  if (!p.ok()) {
    std::fprintf(stderr, "neat explain: %s\n", p.error().message().c_str());
    return kBadInput;
  }
  PipelineOptions o;
  o.policy = *p;
  set_source_waits(o, first_frame_timeout);
  auto declared = declare_pipeline(pipeline.empty() ? default_pipeline_text() : pipeline, o);
  if (!declared.ok()) {
    std::fprintf(stderr, "neat explain: %s\n", declared.error().message().c_str());
    return kBadInput;
  }
  if (max_frame_memory > 0) declared->builder.set_max_frame_memory(max_frame_memory);
  auto plan = declared->builder.plan();
  if (!plan.ok()) {
    std::fprintf(stderr, "neat explain: %s\n", plan.error().message().c_str());
    return g_signal.load() != 0 ? 128 + g_signal.load() : kGraphFailed;
  }
  std::fputs(plan->explain().c_str(), stdout);
  return 0;
}

int run_pipeline(const RunOptions& options) {
  const SignalScope signals;  // from the start: a signal during the build still cleans up
  auto policy = policy_option(options.policy);
  if (!policy.ok()) {
    std::fprintf(stderr, "neat run: %s\n", policy.error().message().c_str());
    return kBadInput;
  }
  if (options.frames < 0) {
    std::fprintf(stderr, "neat run: --frames must be positive\n");
    return kBadInput;
  }
  const std::string text = options.pipeline.empty() ? default_pipeline_text() : options.pipeline;
  PipelineOptions po;
  po.graph_name = options.pipeline.empty() ? "demo" : "pipeline";
  po.policy = *policy;
  if (options.frames > 0) po.default_frames = options.frames;
  set_source_waits(po, options.first_frame_timeout);
  auto declared = declare_pipeline(text, po);
  if (!declared.ok()) {
    std::fprintf(stderr, "neat run: %s\n", declared.error().message().c_str());
    return kBadInput;
  }

  // The live endpoint first: process metrics are there while a source prerolls.
  std::unique_ptr<MetricsServer> metrics_server;
  if (!options.metrics_listen.empty()) {
    auto address = parse_listen_address(options.metrics_listen);
    if (!address.ok()) {
      std::fprintf(stderr, "neat run: --metrics-listen: %s\n", address.error().message().c_str());
      return kBadInput;
    }
    auto server = MetricsServer::start(*address);
    if (!server.ok()) {
      std::fprintf(stderr, "neat run: --metrics-listen: %s\n", server.error().message().c_str());
      return kGraphFailed;
    }
    metrics_server = std::move(*server);
    std::fprintf(stderr, "neat run: serving metrics at %s\n", metrics_server->url().c_str());
    std::fflush(stderr);
  }

  // Telemetry: a JSON Lines trace (the audit reads it back), optionally Chrome.
  std::string trace = options.trace;
  bool temporary = false;
  if (trace.empty()) {
    trace = "/tmp/neat-run-" + std::to_string(::getpid()) + ".jsonl";
    temporary = true;
  }
  if (options.trace_max_bytes > 0 && temporary) {
    std::fprintf(stderr,
                 "neat run: --trace-max-bytes needs --trace FILE (the file that rotates)\n");
    return kBadInput;
  }
  JsonlSinkOptions trace_options;
  trace_options.max_bytes = options.trace_max_bytes;
  trace_options.keep = options.trace_keep;
  auto jsonl = JsonlSink::open(trace, trace_options);
  if (!jsonl.ok()) {
    std::fprintf(stderr, "neat run: %s\n", jsonl.error().message().c_str());
    return kBadInput;
  }
  SinkRegistration jsonl_reg = add_event_sink(*jsonl);
  std::shared_ptr<ChromeTraceSink> chrome;
  SinkRegistration chrome_reg;
  if (!options.chrome.empty()) {
    auto c = ChromeTraceSink::open(options.chrome);
    if (!c.ok()) {
      std::fprintf(stderr, "neat run: %s\n", c.error().message().c_str());
      return kBadInput;
    }
    chrome = *c;
    chrome_reg = add_event_sink(chrome);
  }

  if (options.max_frame_memory > 0)
    declared->builder.set_max_frame_memory(options.max_frame_memory);
  auto graph = declared->builder.build();
  if (!graph.ok()) {
    std::fprintf(stderr, "neat run: %s\n", graph.error().message().c_str());
    if (temporary) std::remove(trace.c_str());
    return g_signal.load() != 0 ? 128 + g_signal.load() : kGraphFailed;
  }
  if (const int sig = g_signal.load(); sig != 0) {  // arrived while the graph was built
    std::fprintf(stderr, "neat run: stopped by %s before the first frame\n", signal_name(sig));
    if (temporary) std::remove(trace.c_str());
    return 128 + sig;
  }
  const EdgePlan* last = nullptr;
  for (const auto& e : graph->plan().edges) {  // into the first appsink
    if (!declared->appsinks.empty() && e.to == declared->appsinks.front().first) last = &e;
  }
  const bool detections = last != nullptr && is_detections(last->consumed);
  DetectionSummary summary;
  if (options.print_detections) {
    if (!detections) {
      std::fprintf(stderr,
                   "neat run: --print-detections: %s, not detections (f32 [N, 6]); end the "
                   "pipeline with `infer model=... ! yolo ! appsink`\n",
                   last == nullptr
                       ? "the pipeline does not end in an appsink"
                       : ("the appsink receives " + last->consumed.to_string()).c_str());
      if (temporary) std::remove(trace.c_str());
      return kBadInput;
    }
  }
  if (!options.quiet) {
    std::printf("neat run: %s\n\n%s\n", text.c_str(), graph->explain().c_str());
    std::fflush(stdout);
  }

  // The graph's series join every scrape until the graph is gone.
  MetricsServer::Registration graph_metrics;
  if (metrics_server) {
    const Graph* g = &*graph;
    graph_metrics =
        metrics_server->add_collector([g](std::string& out) { out += g->prometheus_text(); });
  }
  const MetricsSnapshot metrics_before = labeled_metrics().snapshot();
  const auto t0 = std::chrono::steady_clock::now();
  if (Status st = graph->start(); !st.ok()) {
    std::fprintf(stderr, "neat run: %s\n", st.error().message().c_str());
    return kGraphFailed;
  }
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  const std::int64_t limit = is_generated_source(text) ? 0 : options.frames;
  std::uint64_t pulled = 0;
  auto last_print = t0;
  bool interrupted = false;
  auto progress = [&](bool final) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto frames = declared->appsink ? pulled : graph->frames().consumed;
    if (options.quiet || (!tty && !final)) return;
    std::fprintf(stderr, "%sframes %llu  %.1f fps  %.1f s%s", tty ? "\r" : "",
                 static_cast<unsigned long long>(frames), s > 0 ? frames / s : 0.0, s,
                 final ? "\n" : "   ");
    std::fflush(stderr);
  };
  while (true) {
    if (g_signal.load() != 0 && !interrupted) {
      interrupted = true;
      graph->stop();
    }
    if (declared->appsink) {
      auto take = [&](const NeatTensor& f) {
        ++pulled;
        if (options.print_detections) print_detections(f);
        if (detections) summary.add(f);
      };
      // Branches may end in more appsinks: their frames are taken and let go
      // (counted by the graph's accounting), so they never hold the graph back.
      auto drain_others = [&] {
        for (std::size_t k = 1; k < declared->appsinks.size(); ++k) {
          while (declared->appsinks[k].second->try_pull()) {
          }
        }
      };
      drain_others();
      if (auto f = declared->appsink->pull(
              std::chrono::milliseconds(declared->appsinks.size() > 1 ? 20 : 200))) {
        take(*f);
        if (limit > 0 && static_cast<std::int64_t>(pulled) >= limit) graph->stop();
      } else if (declared->appsink->at_end() || graph->done()) {
        while (auto rest = declared->appsink->try_pull())
          take(*rest);         // drain what is left
        if (!graph->done()) {  // other branches still running
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          continue;
        }
        drain_others();
        break;
      }
    } else {
      if (graph->done()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (limit > 0 && static_cast<std::int64_t>(graph->frames().consumed) >= limit) graph->stop();
    }
    if (std::chrono::steady_clock::now() - last_print > std::chrono::milliseconds(500)) {
      progress(false);
      last_print = std::chrono::steady_clock::now();
    }
  }
  auto report = graph->wait();

  progress(true);
  const int sig = g_signal.load();
  int status = interrupted ? 128 + sig : 0;
  if (!report.ok()) {
    std::fprintf(stderr, "neat run: %s\n", report.error().message().c_str());
    status = kGraphFailed;
  }
  const FrameAccounting frames = graph->frames();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto delivered = declared->appsink ? pulled : frames.consumed;
  std::printf("== result%s%s%s\n", interrupted ? " (stopped by " : "",
              interrupted ? signal_name(sig) : "", interrupted ? ")" : "");
  std::printf("  %llu frames in %.2f s: %.1f fps\n", static_cast<unsigned long long>(delivered),
              seconds, seconds > 0 ? static_cast<double>(delivered) / seconds : 0.0);
  std::printf("  accounting: %s%s\n", frames.to_string().c_str(),
              frames.balanced() ? " (balanced)" : " (NOT balanced)");
  if (detections) summary.print();
  {
    const GraphStats stats = graph->stats();
    print_latency(stats);
    print_memory(stats, graph->plan());
  }

  if (Status st = (*jsonl)->flush(); !st.ok()) {
    std::fprintf(stderr, "neat run: %s\n", st.error().message().c_str());
  }
  jsonl_reg.reset();
  chrome_reg.reset();
  if (chrome) {
    if (Status st = chrome->write(); !st.ok()) {
      std::fprintf(stderr, "neat run: %s\n", st.error().message().c_str());
    }
  }
  // Every conversion of the run, whatever the policy: the counters see silent
  // ones too, the trace does not.
  const MetricsSnapshot run_metrics = labeled_metrics().snapshot().since(metrics_before);
  std::printf("== copies per edge (every conversion of this run, policy %s)\n",
              std::string(to_string(graph->plan().policy)).c_str());
  std::fputs(format_metrics_table(run_metrics).c_str(), stdout);
  // Streamed (constant memory however long the run), over the rotated parts
  // this run wrote too.
  AuditAggregator aggregator;
  Status read = aggregator.read_file(trace);
  const std::uint64_t rotations = (*jsonl)->rotations();
  const std::uint64_t parts = std::min<std::uint64_t>(rotations, options.trace_keep);
  for (std::uint64_t i = 1; read.ok() && i <= parts; ++i)
    read = aggregator.read_file(trace + "." + std::to_string(i));
  std::printf("== where they come from (neat audit of this run's trace%s)\n",
              temporary
                  ? ""
                  : (": " + trace +
                     (parts ? " and " + std::to_string(parts) + " rotated part(s)" : std::string()))
                        .c_str());
  if (read.ok()) {
    const AuditReport traced = aggregator.report();
    std::fputs(format_audit_table(traced).c_str(), stdout);
    if (rotations > parts) {
      std::printf("  (the oldest %llu rotated part(s) were removed: --trace-keep %d)\n",
                  static_cast<unsigned long long>(rotations - parts), options.trace_keep);
    } else if (traced.conversions < run_metrics.conversions()) {
      std::printf(
          "  (%llu conversion(s) ran untraced: AllowSilent only counts them; run with "
          "--policy trace to see where they come from)\n",
          static_cast<unsigned long long>(run_metrics.conversions() - traced.conversions));
    }
  } else {
    std::printf("  (trace unreadable: %s)\n", read.error().message().c_str());
  }
  if (temporary) std::remove(trace.c_str());
  if (!options.metrics.empty()) {
    std::ofstream m(options.metrics);
    m << prometheus_text();
    if (!m) {
      std::fprintf(stderr, "neat run: cannot write %s\n", options.metrics.c_str());
      if (status == 0) status = kBadInput;
    }
  }
  return status;
}

}  // namespace neat::tools

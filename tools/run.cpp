#include "run.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

#include "run_streams.hpp"

namespace neat::tools {
namespace {

constexpr int kGraphFailed = 1;
constexpr int kBadInput = 2;
// SIGINT (Ctrl-C), SIGTERM (docker, systemd, Kubernetes) and SIGHUP (a closed
// terminal) all stop a run the same way: the graph stops, sinks get their end
// of stream, traces and metrics are flushed, temporary files removed, the
// accounting printed; the exit status is 128 + the signal.
std::atomic<int> g_signal{0};
std::atomic<int> g_signals{0};  // how many arrived: a second stops at once

void on_signal(int sig) {
  g_signal.store(sig);
  g_signals.fetch_add(1);
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
    g_signals.store(0);
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

bool is_detections(const FrameSpec& s) {
  return s.dtype == DType::F32 && !s.is_image() && s.shape.size() == 2 &&
         (s.shape[1] == 6 || s.shape[1] == 7);  // yolo's, or track's with the id
}

// "cam1: frame 12 pts 0.400 s: 2 detections" (the stream first) and a line per box.
void print_detections(const NeatTensor& d) {
  const FrameMeta& m = d.meta();
  const std::int64_t n = d.rank() == 2 ? d.shape()[0] : 0;
  if (m.stream.known()) {
    std::printf("%.*s: ", static_cast<int>(m.stream.name.size()), m.stream.name.data());
  }
  std::printf("frame %lld", static_cast<long long>(m.frame));
  if (m.pts_ns >= 0) std::printf(" pts %.3f s", static_cast<double>(m.pts_ns) / 1e9);
  std::printf(": %lld detection%s\n", static_cast<long long>(n), n == 1 ? "" : "s");
  auto map = d.map();
  if (!map.ok() || n == 0) return;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto* r = reinterpret_cast<const float*>(map->data() + i * d.strides()[0]);
    if (d.shape()[1] == 7) std::printf("  track %d", static_cast<int>(r[6]));
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
    if (!p.allocated_by.empty()) {
      std::printf("  %-34s up to %d frames allocated by %s, not pooled (%.2f MiB each)\n",
                  p.name.c_str(), p.planned_buffers, p.allocated_by.c_str(),
                  static_cast<double>(p.frame_bytes) / (1 << 20));
      continue;
    }
    std::printf("  %-34s %lld of %d planned buffers in use at most (%.2f MiB each)\n",
                p.name.c_str(), static_cast<long long>(p.peak_buffers), p.planned_buffers,
                static_cast<double>(p.frame_bytes) / (1 << 20));
  }
}

// ---- run_pipeline, step by step ---------------------------------------------------------

// The run's files: the JSON Lines trace the audit reads back (a temporary one,
// made with mkstemp, when --trace is not given) and the Chrome trace, both
// streamed; the temporary trace is removed on every way out of the run.
class RunTraces {
 public:
  RunTraces() = default;
  RunTraces(const RunTraces&) = delete;
  RunTraces& operator=(const RunTraces&) = delete;
  ~RunTraces() {
    (void)close();
    if (temporary_) std::remove(path_.c_str());
  }

  Status open(const RunOptions& o) {
    if (o.trace.empty()) {
      if (o.trace_max_bytes > 0)
        return invalid_argument("--trace-max-bytes needs --trace FILE (the file that rotates)");
      const char* dir = std::getenv("TMPDIR");
      std::string name =
          std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/neat-run-XXXXXX.jsonl";
      const int fd = ::mkstemps(name.data(), 6);
      if (fd < 0) {
        return failed_precondition("cannot make a temporary trace in " +
                                   name.substr(0, name.rfind('/')) + ": " + std::strerror(errno) +
                                   " (set TMPDIR, or give --trace FILE)");
      }
      ::close(fd);
      path_ = name;
      temporary_ = true;
    } else {
      path_ = o.trace;
    }
    JsonlSinkOptions jo;
    jo.max_bytes = o.trace_max_bytes;
    jo.keep = o.trace_keep;
    NEAT_ASSIGN_OR_RETURN(jsonl_, JsonlSink::open(path_, jo));
    jsonl_reg_ = add_event_sink(jsonl_);
    if (!o.chrome.empty()) {
      ChromeTraceSinkOptions co;
      co.max_bytes = o.trace_max_bytes;
      co.keep = o.trace_keep;
      NEAT_ASSIGN_OR_RETURN(chrome_, ChromeTraceSink::open(o.chrome, co));
      chrome_reg_ = add_event_sink(chrome_);
    }
    return {};
  }

  // No more events; both traces get their closing records.
  Status close() {
    jsonl_reg_.reset();
    chrome_reg_.reset();
    Status st = jsonl_ ? jsonl_->close() : Status{};
    if (chrome_) {
      Status c = chrome_->close();
      if (st.ok()) st = c;
    }
    return st;
  }

  const std::string& path() const noexcept { return path_; }
  bool temporary() const noexcept { return temporary_; }
  std::uint64_t rotations() const noexcept { return jsonl_ ? jsonl_->rotations() : 0; }

 private:
  std::string path_;
  bool temporary_ = false;
  std::shared_ptr<JsonlSink> jsonl_;
  std::shared_ptr<ChromeTraceSink> chrome_;
  SinkRegistration jsonl_reg_, chrome_reg_;
};

// The options that need no pipeline: checked before anything runs.
Status check_options(const RunOptions& o) {
  if (o.frames < 0) return invalid_argument("--frames must be positive");
  if (!o.metrics.empty()) {  // written at the end: a path that cannot be written fails now
    const int fd = ::open(o.metrics.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      return invalid_argument("--metrics " + o.metrics +
                              ": cannot write it: " + std::strerror(errno));
    }
    ::close(fd);
  }
  return {};
}

Result<std::unique_ptr<MetricsServer>> start_metrics_server(const std::string& listen) {
  if (listen.empty()) return std::unique_ptr<MetricsServer>();
  NEAT_ASSIGN_OR_RETURN(ListenAddress address, parse_listen_address(listen));
  NEAT_ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> server, MetricsServer::start(address));
  std::fprintf(stderr, "neat run: serving metrics at %s\n", server->url().c_str());
  std::fflush(stderr);
  return server;
}

// What the run's loop saw.
struct RunTally {
  std::uint64_t pulled = 0;  // frames taken from the first appsink
  bool interrupted = false;
  DetectionSummary detections;
};

// Pulls the first appsink's frames (and lets go of the other appsinks')
// until the graph is done, with a progress line; a first signal stops the
// graph cleanly (sinks finish their streams), a second at once.
void pump(Graph& graph, BuiltPipeline& declared, const RunOptions& o, bool detections,
          RunTally& tally) {
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto last_print = t0;
  int signals_seen = 0;
  auto progress = [&](bool final) {
    if (o.quiet || (!tty && !final)) return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto frames = declared.appsink ? tally.pulled : graph.frames().consumed;
    std::fprintf(stderr, "%sframes %llu  %.1f fps  %.1f s%s", tty ? "\r" : "",
                 static_cast<unsigned long long>(frames), s > 0 ? frames / s : 0.0, s,
                 final ? "\n" : "   ");
    std::fflush(stderr);
  };
  auto take = [&](const NeatTensor& f) {
    ++tally.pulled;
    if (o.print_detections) print_detections(f);
    if (detections) tally.detections.add(f);
  };
  // Branches may end in more appsinks: their frames are taken and let go
  // (counted by the graph's accounting), so they never hold the graph back.
  auto drain_others = [&] {
    for (std::size_t k = 1; k < declared.appsinks.size(); ++k)
      declared.appsinks[k].second->drain();
  };
  const auto slice = std::chrono::milliseconds(declared.appsinks.size() > 1 ? 20 : 200);
  for (;;) {
    if (const int n = g_signals.load(); n > signals_seen) {
      signals_seen = n;
      tally.interrupted = true;
      if (n == 1) {
        graph.stop();
        if (!o.quiet) {
          std::fprintf(stderr,
                       "\nneat run: stopping on %s: sinks finish their streams (again to stop at "
                       "once, leaving files unfinished)\n",
                       signal_name(g_signal.load()));
        }
      } else {
        graph.abort();
      }
    }
    if (declared.appsink) {
      drain_others();
      if (auto f = declared.appsink->pull(slice)) {
        take(*f);
      } else if (declared.appsink->at_end() || graph.done()) {
        declared.appsink->drain(take);  // what is left
        if (!graph.done()) {            // other branches still running
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          continue;
        }
        drain_others();
        break;
      }
    } else {
      if (graph.done()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (std::chrono::steady_clock::now() - last_print > std::chrono::milliseconds(500)) {
      progress(false);
      last_print = std::chrono::steady_clock::now();
    }
  }
  progress(true);
}

// The result, the accounting, the detections, latency and memory.
void print_result(const Graph& graph, const BuiltPipeline& declared, const RunTally& tally,
                  double seconds, bool detections) {
  const FrameAccounting frames = graph.frames();
  const auto delivered = declared.appsink ? tally.pulled : frames.consumed;
  std::printf("== result%s%s%s\n", tally.interrupted ? " (stopped by " : "",
              tally.interrupted ? signal_name(g_signal.load()) : "", tally.interrupted ? ")" : "");
  std::printf("  %llu frames in %.2f s: %.1f fps\n", static_cast<unsigned long long>(delivered),
              seconds, seconds > 0 ? static_cast<double>(delivered) / seconds : 0.0);
  std::printf("  accounting: %s%s\n", frames.to_string().c_str(),
              frames.balanced() ? " (balanced)" : " (NOT balanced)");
  if (detections) tally.detections.print();
  const GraphStats stats = graph.stats();
  print_streams(stats);
  print_deliveries(stats);
  print_latency(stats);
  print_memory(stats, graph.plan());
}

// Every conversion of the run from the counters (silent ones too), then
// where they came from: the audit of this run's trace, streamed (constant
// memory however long the run), over the rotated parts it wrote too.
void print_copies(const Graph& graph, const RunTraces& traces, const RunOptions& o,
                  const MetricsSnapshot& run_metrics) {
  std::printf("== copies per edge (every conversion of this run, policy %s)\n",
              std::string(to_string(graph.plan().policy)).c_str());
  std::fputs(format_metrics_table(run_metrics).c_str(), stdout);
  AuditAggregator aggregator;
  const std::string& trace = traces.path();
  Status read = aggregator.read_file(trace);
  const std::uint64_t rotations = traces.rotations();
  const std::uint64_t parts = std::min<std::uint64_t>(rotations, o.trace_keep);
  for (std::uint64_t i = 1; read.ok() && i <= parts; ++i)
    read = aggregator.read_file(trace + "." + std::to_string(i));
  std::printf("== where they come from (neat audit of this run's trace%s)\n",
              traces.temporary()
                  ? ""
                  : (": " + trace +
                     (parts ? " and " + std::to_string(parts) + " rotated part(s)" : std::string()))
                        .c_str());
  if (!read.ok()) {
    std::printf("  (trace unreadable: %s)\n", read.error().message().c_str());
    return;
  }
  const AuditReport traced = aggregator.report();
  std::fputs(format_audit_table(traced).c_str(), stdout);
  if (rotations > parts) {
    std::printf("  (the oldest %llu rotated part(s) were removed: --trace-keep %d)\n",
                static_cast<unsigned long long>(rotations - parts), o.trace_keep);
  } else if (traced.conversions < run_metrics.conversions()) {
    std::printf(
        "  (%llu conversion(s) ran untraced: AllowSilent only counts them; run with "
        "--policy trace to see where they come from)\n",
        static_cast<unsigned long long>(run_metrics.conversions() - traced.conversions));
  }
}

int fail_with(const char* what, const Error& e, int status) {
  std::fprintf(stderr, "neat run: %s%s\n", what, e.message().c_str());
  return status;
}

}  // namespace

int explain_pipeline(const std::string& pipeline, const std::string& policy,
                     double first_frame_timeout, std::int64_t max_frame_memory,
                     std::int64_t frames) {
  const SignalScope signals;  // Ctrl-C while a source prerolls ends the wait
  auto p = policy_option(policy);
  if (!p.ok()) {
    std::fprintf(stderr, "neat explain: %s\n", p.error().message().c_str());
    return kBadInput;
  }
  PipelineOptions o;
  o.policy = *p;
  if (frames > 0) o.default_frames = frames;
  set_source_waits(o, first_frame_timeout);
  auto declared = declare_pipeline(pipeline.empty() ? default_pipeline_text() : pipeline, o);
  if (!declared.ok()) {
    std::fprintf(stderr, "neat explain: %s\n", declared.error().message().c_str());
    return kBadInput;
  }
  if (max_frame_memory > 0) declared->builder.set_max_frame_memory(max_frame_memory);
  if (frames > 0) declared->builder.set_max_source_frames(frames);
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
  if (!policy.ok()) return fail_with("", policy.error(), kBadInput);
  if (Status st = check_options(options); !st.ok()) return fail_with("", st.error(), kBadInput);
  const std::string text = options.pipeline.empty() ? default_pipeline_text() : options.pipeline;
  PipelineOptions po;
  po.graph_name = options.pipeline.empty() ? "demo" : "pipeline";
  po.policy = *policy;
  if (options.frames > 0) po.default_frames = options.frames;
  set_source_waits(po, options.first_frame_timeout);
  po.streams.stall_timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(options.stall_timeout * 1000));
  po.streams.restart = options.restart == "never"    ? RestartPolicy::Never
                       : options.restart == "always" ? RestartPolicy::Always
                                                     : RestartPolicy::Live;
  auto declared = declare_pipeline(text, po);
  if (!declared.ok()) return fail_with("", declared.error(), kBadInput);
  // --frames ends every source after N frames, whatever it is (live cameras
  // too): the end of stream then flows as if the source had ended.
  if (options.frames > 0) declared->builder.set_max_source_frames(options.frames);
  if (options.max_frame_memory > 0)
    declared->builder.set_max_frame_memory(options.max_frame_memory);

  // The live endpoint first: process metrics are there while a source prerolls.
  auto metrics_server = start_metrics_server(options.metrics_listen);
  if (!metrics_server.ok()) {
    return fail_with(
        "--metrics-listen: ", metrics_server.error(),
        metrics_server.error().code() == ErrorCode::InvalidArgument ? kBadInput : kGraphFailed);
  }
  // Not ready while the graph is built (sources preroll, the model loads).
  MetricsServer::Registration readiness;
  if (*metrics_server) {
    readiness = (*metrics_server)->add_health_check([] {
      return Health{{"the pipeline is being built (sources starting, the model loading)"}, {}};
    });
  }
  RunTraces traces;  // removes its temporary file however the run ends
  if (Status st = traces.open(options); !st.ok()) return fail_with("", st.error(), kBadInput);

  auto graph = declared->builder.build();
  if (!graph.ok()) {
    return fail_with("", graph.error(),
                     g_signal.load() != 0 ? 128 + g_signal.load() : kGraphFailed);
  }
  if (const int sig = g_signal.load(); sig != 0) {  // arrived while the graph was built
    std::fprintf(stderr, "neat run: stopped by %s before the first frame\n", signal_name(sig));
    return 128 + sig;
  }
  const EdgePlan* last = nullptr;
  for (const auto& e : graph->plan().edges) {  // into the first appsink
    if (!declared->appsinks.empty() && e.to == declared->appsinks.front().first) last = &e;
  }
  const bool detections = last != nullptr && is_detections(last->consumed);
  if (options.print_detections && !detections) {
    std::fprintf(stderr,
                 "neat run: --print-detections: %s, not detections (f32 [N, 6] or [N, 7]); "
                 "end the pipeline with `infer model=... ! yolo [! track] ! appsink`\n",
                 last == nullptr ? "the pipeline does not end in an appsink"
                                 : ("the appsink receives " + last->consumed.to_string()).c_str());
    return kBadInput;
  }
  if (!options.quiet) {
    std::printf("neat run: %s\n\n%s\n", text.c_str(), graph->explain().c_str());
    std::fflush(stdout);
  }

  // The graph's series join every scrape until the graph is gone.
  MetricsServer::Registration graph_metrics;
  if (*metrics_server) {
    const Graph* g = &*graph;
    graph_metrics =
        (*metrics_server)->add_collector([g](std::string& out) { out += g->prometheus_text(); });
    readiness = (*metrics_server)->add_health_check(g->health_check());
  }
  const MetricsSnapshot metrics_before = labeled_metrics().snapshot();
  const auto t0 = std::chrono::steady_clock::now();
  SinkRegistration state_lines = add_event_sink(stream_state_printer());
  if (Status st = graph->start(); !st.ok()) return fail_with("", st.error(), kGraphFailed);
  RunTally tally;
  pump(*graph, *declared, options, detections, tally);
  auto report = graph->wait();
  state_lines.reset();
  int status = tally.interrupted ? 128 + g_signal.load() : 0;
  if (!report.ok()) {
    std::fprintf(stderr, "neat run: %s\n", report.error().message().c_str());
    status = kGraphFailed;
  }
  if (status == 0 && any_stream_failed(graph->stats())) status = kGraphFailed;
  print_result(*graph, *declared, tally,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
               detections);
  if (Status st = traces.close(); !st.ok()) {
    std::fprintf(stderr, "neat run: %s\n", st.error().message().c_str());
  }
  print_copies(*graph, traces, options, labeled_metrics().snapshot().since(metrics_before));
  if (!options.metrics.empty()) {
    std::ofstream m(options.metrics);
    m << prometheus_text();
    if (!m) {
      std::fprintf(stderr, "neat run: cannot write %s\n", options.metrics.c_str());
      if (status == 0) status = kGraphFailed;
    }
  }
  return status;
}

}  // namespace neat::tools

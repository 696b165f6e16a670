// neat: the NeatTensor command line.
//
//   neat run [PIPELINE] [--frames N] [--policy strict|trace|silent] [--trace FILE]
//            [--trace-max-bytes SIZE] [--trace-keep N] [--chrome FILE] [--metrics FILE]
//            [--metrics-listen HOST:PORT] [--quiet]
//   neat explain [PIPELINE] [--policy strict|trace|silent] [--frames N]
//   neat audit TRACE... [--format table|json] [--top N] [--fail-on pack,transfer]
//              [--since T] [--until T] [--graph G] [--stage S] [--edge E] [--stream NAME]
//              [--baseline OLD... [--tolerance PCT]] [--allow-cut-short]
//   neat timeline TRACE --out timeline.png [--width 1400]
//
// run: builds and runs a pipeline (docs/graphs.md has the syntax; without one,
// the built-in demo), with a live progress line, then the throughput, the
// frame accounting and the per-edge copy audit. explain: the build plan.
// Reads a conversion trace (JSON Lines from JsonlSink, or a Chrome trace
// from ChromeTraceSink) and prints, per edge, stage, kind and reason: the
// count, bytes, bytes per frame, time and the top call sites.
// Exit status: 0 fine; 2 a usage error (an unknown command or option, a bad
// value) or a malformed trace, with the line or offset; 3 --fail-on matched a
// conversion, or --baseline found an edge that started copying or copies more
// (for CI gates); `neat audit` 1: no events at all, 4: a trace cut short (no
// closing record; --allow-cut-short accepts it). `neat run` adds its own
// (tools/run.hpp).
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <neat/neat.hpp>
#include <neat/telemetry/audit.hpp>

#include "audit_cmd.hpp"
#include "run.hpp"
#include "timeline.hpp"

namespace {

constexpr int kMalformed = 2;

// A whole number >= 1 (CLI11's PositiveNumber prints DBL_MAX as its bound).
const CLI::Validator kPositiveCount(
    [](std::string& v) -> std::string {
      std::int64_t n = 0;
      const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || p != v.data() + v.size() || n < 1) {
        return "'" + v + "' is not a whole number of 1 or more";
      }
      return {};
    },
    "N >= 1");

}  // namespace

namespace {

// Each command's options as parsed, and the subcommand that parsed them.
struct Commands {
  CLI::App* run = nullptr;
  neat::tools::RunOptions run_options;
  CLI::App* explain = nullptr;
  std::string explain_pipeline, explain_policy;
  double explain_timeout = 20;
  std::int64_t explain_frames = 0;
  std::int64_t explain_memory = 0;
  CLI::App* audit = nullptr;
  neat::tools::AuditOptions audit_options;
  CLI::App* timeline = nullptr;
  std::string timeline_trace, png;
  int width = 1400;
  CLI::App* elements = nullptr;
  std::string element_name;
};

void add_run(CLI::App& app, Commands& c) {
  CLI::App* run = c.run = app.add_subcommand("run", "Build and run a pipeline (default: the demo)");
  neat::tools::RunOptions& ro = c.run_options;
  run->add_option("pipeline", ro.pipeline,
                  "the pipeline, e.g. 'default ! preprocess size=640x640 ! appsink'");
  run->add_option("--frames", ro.frames,
                  "every source ends after at most N frames (default: the source's own count)")
      ->check(kPositiveCount);
  run->add_option("--policy", ro.policy, "strict, trace or silent")
      ->check(CLI::IsMember({"strict", "trace", "silent"}));
  run->add_option("--trace", ro.trace, "write the JSON Lines conversion trace here");
  run->add_option("--trace-max-bytes", ro.trace_max_bytes,
                  "rotate the --trace (and --chrome) file before it grows past this size (e.g. "
                  "100M): TRACE.1 is the newest rotated part")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 50));
  run->add_option("--trace-keep", ro.trace_keep, "rotated trace files kept (default 5)")
      ->check(CLI::Range(0, 10000));
  run->add_option("--chrome", ro.chrome, "write a Chrome / Perfetto trace here");
  run->add_option("--metrics", ro.metrics, "write Prometheus metrics here at the end");
  run->add_option("--metrics-listen", ro.metrics_listen,
                  "serve Prometheus metrics at http://HOST:PORT/metrics while running "
                  "(e.g. 127.0.0.1:9464; a bare port is loopback; port 0 picks a free one)");
  run->add_option("--first-frame-timeout", ro.first_frame_timeout,
                  "seconds a GStreamer source may take to send its first frame (default 20)")
      ->check(CLI::Range(0.1, 86400.0));
  run->add_option("--stall-timeout", ro.stall_timeout,
                  "seconds without a frame (after the first) before a stream is stalled and "
                  "its source restarted; 0: no watchdog (default 5; a source's "
                  "stall-timeout= wins)")
      ->check(CLI::Range(0.0, 86400.0));
  run->add_option("--restart", ro.restart,
                  "restart a source whose stream went down: live (live sources only, the "
                  "default), always, or never (the run fails fast, exit status 1)")
      ->check(CLI::IsMember({"live", "always", "never"}));
  run->add_option("--max-frame-memory", ro.max_frame_memory,
                  "a budget for the frames the graph holds at once (e.g. 64M): queues are sized "
                  "to fit, or the build fails saying what does not fit")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 50));
  run->add_flag("--quiet", ro.quiet, "no plan, no progress line");
  run->add_flag("--print-detections", ro.print_detections,
                "print the detections of every frame the appsink receives (from `yolo`)");
}

void add_explain(CLI::App& app, Commands& c) {
  CLI::App* explain = c.explain =
      app.add_subcommand("explain", "Print the build plan of a pipeline");
  explain->add_option("pipeline", c.explain_pipeline, "the pipeline (default: the demo)");
  explain
      ->add_option("--first-frame-timeout", c.explain_timeout,
                   "seconds a GStreamer source may take to send its first frame (default 20)")
      ->check(CLI::Range(0.1, 86400.0));
  explain->add_option("--policy", c.explain_policy, "strict, trace or silent")
      ->check(CLI::IsMember({"strict", "trace", "silent"}));
  explain
      ->add_option("--frames", c.explain_frames,
                   "plan with every source ending after N frames, as `neat run --frames` would")
      ->check(kPositiveCount);
  explain
      ->add_option("--max-frame-memory", c.explain_memory,
                   "plan under this frame-memory budget (e.g. 64M), as `neat run` would")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 50));
}

void add_audit(CLI::App& app, Commands& c) {
  CLI::App* audit = c.audit =
      app.add_subcommand("audit", "Summarise a conversion trace: what was copied where, how often");
  neat::tools::AuditOptions& ao = c.audit_options;
  audit
      ->add_option("traces", ao.traces,
                   "JSON Lines or Chrome traces (several: a rotated set, several runs)")
      ->required();
  audit->add_option("--format", ao.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
  audit->add_option("--top", ao.top, "call sites listed per row")->check(CLI::Range(0, 100));
  audit->add_option("--fail-on", ao.fail_on,
                    "comma-separated kinds that make the exit status 3 (e.g. pack,transfer)");
  audit->add_option("--since", ao.since,
                    "only events at or after T (2026-11-23T18:00:00Z, or @EPOCH_SECONDS)");
  audit->add_option("--until", ao.until, "only events before T (same forms as --since)");
  audit->add_option("--graph", ao.graph, "only this graph's events");
  audit->add_option("--stage", ao.stage, "only this stage's events");
  audit->add_option("--edge", ao.edge, "only this edge's events (FROM->TO)");
  audit->add_option("--stream", ao.stream,
                    "only this stream's events and frames (a source's name, e.g. cam1)");
  audit
      ->add_option("--baseline", ao.baseline,
                   "compare with these traces: exit 3 when an edge started copying or copies "
                   "more per frame")
      ->take_all();
  audit->add_flag("--allow-cut-short", ao.allow_cut_short,
                  "a trace without its closing record (a crash, kill -9, a run still going) is "
                  "audited up to its cut without exit status 4");
  audit
      ->add_option("--tolerance", ao.tolerance_percent,
                   "--baseline: per-frame growth still counted as the same, percent (default 1)")
      ->check(CLI::Range(0.0, 1000.0));
}

void add_timeline_and_elements(CLI::App& app, Commands& c) {
  CLI::App* timeline = c.timeline =
      app.add_subcommand("timeline", "Render a conversion trace as a PNG timeline");
  timeline->add_option("trace", c.timeline_trace, "JSON Lines or Chrome trace file")->required();
  timeline->add_option("--out", c.png, "the PNG to write")->required();
  timeline->add_option("--width", c.width, "image width in pixels")->check(CLI::Range(400, 8000));
  c.elements = app.add_subcommand(
      "elements", "List the pipeline elements, or one element's properties and defaults");
  c.elements->add_option("name", c.element_name, "an element, e.g. preprocess");
}

// A pipeline given but blank is a mistake (an unset shell variable), not a
// request for the demo: the demo is what no pipeline at all runs.
bool blank_pipeline_given(const Commands& c) {
  for (const auto& [sub, text] :
       {std::pair<CLI::App*, const std::string*>{c.run, &c.run_options.pipeline},
        {c.explain, &c.explain_pipeline}}) {
    if (sub->parsed() && sub->get_option("pipeline")->count() > 0 &&
        text->find_first_not_of(" \t\r\n") == std::string::npos) {
      std::fprintf(stderr,
                   "neat %s: the pipeline is empty; give one (e.g. 'default ! appsink'), or none "
                   "at all for the built-in demo\n",
                   sub->get_name().c_str());
      return true;
    }
  }
  return false;
}

int list_elements(const std::string& name) {
  if (name.empty()) {
    std::fputs(neat::describe_elements().c_str(), stdout);
    return 0;
  }
  const neat::ElementSpec* e = neat::find_pipeline_element(name);
  if (e == nullptr) {
    std::fprintf(stderr, "neat elements: no element '%s' (elements: %s; %s; %s)\n", name.c_str(),
                 neat::element_names(neat::ElementRole::Source).c_str(),
                 neat::element_names(neat::ElementRole::Stage).c_str(),
                 neat::element_names(neat::ElementRole::Sink).c_str());
    return kMalformed;
  }
  std::fputs(neat::describe_element(*e).c_str(), stdout);
  return 0;
}

int render_timeline(const Commands& c) {
  auto records = neat::read_trace_file(c.timeline_trace);
  if (!records) {
    std::fprintf(stderr, "neat timeline: %s\n", records.error().message().c_str());
    return kMalformed;
  }
  const std::string err = neat::tools::render_timeline(*records, c.png, c.width);
  if (!err.empty()) {
    std::fprintf(stderr, "neat timeline: %s\n", err.c_str());
    return kMalformed;
  }
  std::printf("wrote %s (%zu conversions)\n", c.png.c_str(), records->size());
  return 0;
}

int dispatch(const Commands& c) {
  if (c.run->parsed()) return neat::tools::run_pipeline(c.run_options);
  if (c.elements->parsed()) return list_elements(c.element_name);
  if (c.explain->parsed()) {
    return neat::tools::explain_pipeline(c.explain_pipeline, c.explain_policy, c.explain_timeout,
                                         c.explain_memory, c.explain_frames);
  }
  if (c.audit->parsed()) return neat::tools::run_audit(c.audit_options);
  if (c.timeline->parsed()) return render_timeline(c);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"NeatTensor command line"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("neat ") + NEAT_VERSION);
  Commands c;
  add_run(app, c);
  add_explain(app, c);
  add_audit(app, c);
  add_timeline_and_elements(app, c);
  auto is_command = [&](const char* name) {
    for (const CLI::App* sub : app.get_subcommands({}))
      if (sub->get_name() == name) return true;
    return false;
  };
  if (argc > 1 && argv[1][0] != '-' && !is_command(argv[1])) {
    std::fprintf(stderr,
                 "neat: unknown command '%s' (commands: run, explain, audit, timeline, "
                 "elements; neat --help)\n",
                 argv[1]);
    return kMalformed;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints CLI11's message and the hint to --help
    return kMalformed;
  }
  if (blank_pipeline_given(c)) return kMalformed;
  return dispatch(c);
}

// `neat run` and `neat explain`: pipelines from the command line.
#pragma once

#include <cstdint>
#include <string>

namespace neat::tools {

struct RunOptions {
  std::string pipeline;  ///< empty: the built-in demo pipeline
  /// Every source ends after at most this many frames (0: the source's own
  /// count, 300 for default; `default` makes this many unless frames= says less).
  std::int64_t frames = 0;
  std::string policy;                ///< "", strict, trace, silent
  std::string trace;                 ///< JSON Lines trace file ("" = a temporary one for the audit)
  std::int64_t trace_max_bytes = 0;  ///< rotate the trace before it grows past this (0: never)
  int trace_keep = 5;                ///< rotated traces kept (TRACE.1 ... TRACE.N)
  std::string chrome;                ///< Chrome / Perfetto trace file
  std::string metrics;               ///< Prometheus text file written at the end
  /// Serve GET /metrics here while the run lasts ("" = no endpoint; "9464" and
  /// ":9464" mean 127.0.0.1:9464; port 0 picks a free one, printed).
  std::string metrics_listen;
  /// How long a GStreamer source may take to send its first frame (seconds).
  double first_frame_timeout = 20;
  /// Every source's stall timeout (seconds; 0: no watchdog) and restart
  /// policy ("live", "always", "never") unless its own properties say otherwise.
  double stall_timeout = 5;
  std::string restart = "live";
  /// A budget for the graph's frame memory in bytes (0: none):
  /// GraphBuilder::set_max_frame_memory.
  std::int64_t max_frame_memory = 0;
  bool quiet = false;  ///< no plan, no progress line
  /// Print each frame pulled from the appsink as detections (an f32 [N, 6]
  /// tensor from `yolo`): frame number, timestamp, one line per box.
  bool print_detections = false;
};

/// Exit status: 0 done, 1 the graph failed (build or run) or a stream ended
/// in failure, 2 a bad pipeline
/// or option, 128 + the signal when SIGINT, SIGTERM or SIGHUP stopped it. A
/// first signal stops the graph cleanly (every sink gets its end of stream:
/// recordings are finalized), a second at once; either way the accounting and
/// the audit are printed, traces closed, a temporary trace removed.
int run_pipeline(const RunOptions& options);
/// The plan of a pipeline, without side effects: sources preroll (they read),
/// sinks are checked, not opened (GraphBuilder::plan()).
int explain_pipeline(const std::string& pipeline, const std::string& policy,
                     double first_frame_timeout = 20, std::int64_t max_frame_memory = 0,
                     std::int64_t frames = 0);

}  // namespace neat::tools

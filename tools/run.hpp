// `neat run` and `neat explain`: pipelines from the command line.
#pragma once

#include <cstdint>
#include <string>

namespace neat::tools {

struct RunOptions {
  std::string pipeline;     ///< empty: the built-in demo pipeline
  std::int64_t frames = 0;  ///< 0: the source's own count (300 for default)
  std::string policy;       ///< "", strict, trace, silent
  std::string trace;        ///< JSON Lines trace file ("" = a temporary one for the audit)
  std::string chrome;       ///< Chrome / Perfetto trace file
  std::string metrics;      ///< Prometheus text file written at the end
  bool quiet = false;       ///< no plan, no progress line
  /// Print each frame pulled from the appsink as detections (an f32 [N, 6]
  /// tensor from `yolo`): frame number, timestamp, one line per box.
  bool print_detections = false;
};

/// Exit status: 0 done, 1 the graph failed (build or run), 2 a bad pipeline
/// or option, 128 + the signal when SIGINT, SIGTERM or SIGHUP stopped it (the
/// accounting and the audit are still printed, traces flushed).
int run_pipeline(const RunOptions& options);
int explain_pipeline(const std::string& pipeline, const std::string& policy);

}  // namespace neat::tools

// `neat audit`: the copy audit of one or more traces (a rotated set, several
// runs), filtered by time, graph, stage, edge and stream, or compared with a
// baseline (--baseline OLD...: which edges started copying, or copy more per
// frame). Reads while it aggregates: constant memory whatever the size.
#pragma once

#include <string>
#include <vector>

namespace neat::tools {

struct AuditOptions {
  std::vector<std::string> traces;         ///< JSON Lines or Chrome traces
  std::vector<std::string> baseline;       ///< traces to compare against ("" = no comparison)
  std::string format = "table";            ///< table or json
  int top = 3;                             ///< call sites per row
  std::string fail_on;                     ///< kinds that make the exit status 3
  std::string since, until;                ///< times (parse_audit_time)
  std::string graph, stage, edge, stream;  ///< exact names
  double tolerance_percent = 1;            ///< --baseline: more than this is "more"
  bool allow_cut_short = false;            ///< a trace without its closing record is not an error
};

/// Exit status: 0 fine; 1 no events at all (an empty file, or not a trace);
/// 2 a usage error or a malformed trace (with its file and line); 3
/// --fail-on matched, or against --baseline an edge started copying or
/// copies more per frame; 4 a trace was cut short (no closing record: a
/// crash, kill -9, a full disk, a run still going), unless allow_cut_short.
/// A cut-short trace is still audited up to its cut.
int run_audit(const AuditOptions& options);

}  // namespace neat::tools

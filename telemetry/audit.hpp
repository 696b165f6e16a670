// The copy audit: read a conversion trace (JSON Lines from JsonlSink, or a
// Chrome trace from ChromeTraceSink) and say, per edge, stage, kind and
// reason, how many conversions ran, how many bytes they wrote, bytes per
// frame, the time they took and where in the code they came from.
// `neat audit` (tools/) is the command-line front end.
//
// Malformed traces (truncated, wrong types, numbers out of range, unknown
// kinds or reasons) give an InvalidArgument error naming the line (JSON
// Lines) or the event index and byte offset (Chrome traces); never a crash.
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "neat/contract/conversion.hpp"
#include "neat/contract/error.hpp"

namespace neat {

/// One conversion as read back from a trace.
struct AuditRecord {
  ConversionKind kind = ConversionKind::Pack;
  ConversionReason reason = ConversionReason::UserRequest;
  bool explicit_call = true;
  std::string policy;
  std::int64_t bytes = 0;
  std::int64_t duration_ns = 0;
  std::int64_t timestamp_ns = 0;  ///< end of the conversion (0 when the trace has none)
  std::int64_t thread = 0;
  std::int64_t frame = -1;
  std::string graph, stage, edge, operation, file;
  std::string detail;  ///< e.g. the colour standard or the GStreamer element (may be empty)
  std::int64_t line = 0;
};

/// Reads a whole trace; the format is detected from its first byte ('{' with
/// "traceEvents": Chrome trace; otherwise JSON Lines). `name` is used in errors.
Result<std::vector<AuditRecord>> read_trace(std::istream& in, std::string_view name);
Result<std::vector<AuditRecord>> read_trace_file(const std::string& path);

struct AuditCallSite {
  std::string where;  ///< "file:line (operation) [detail]"
  std::uint64_t count = 0;
  std::int64_t bytes = 0;
};

struct AuditRow {
  std::string edge, stage;
  ConversionKind kind = ConversionKind::Pack;
  ConversionReason reason = ConversionReason::UserRequest;
  std::uint64_t count = 0;
  std::uint64_t implicit_count = 0;
  std::int64_t bytes = 0;
  std::int64_t frames = 0;     ///< distinct frame numbers seen (0 when none)
  double bytes_per_frame = 0;  ///< bytes / frames (0 when no frames)
  std::int64_t duration_ns = 0;
  std::vector<AuditCallSite> top_sites;  ///< most frequent first
};

struct AuditReport {
  std::vector<AuditRow> rows;  ///< most bytes first
  std::uint64_t conversions = 0;
  std::int64_t bytes = 0;
  std::int64_t duration_ns = 0;
};

AuditReport audit(const std::vector<AuditRecord>& records, int top_sites = 3);
/// A fixed-width text table.
std::string format_audit_table(const AuditReport& report);
/// The report as JSON ({"conversions", "bytes", "duration_ns", "rows": [...]}).
std::string format_audit_json(const AuditReport& report);

}  // namespace neat

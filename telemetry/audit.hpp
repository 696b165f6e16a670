// The copy audit: read conversion traces (JSON Lines from JsonlSink, or a
// Chrome trace from ChromeTraceSink) and say, per edge, stage, kind and
// reason, how many conversions ran, how many bytes they wrote, bytes per
// frame, the time they took and where in the code they came from; and
// compare two audits (which edges started copying, or copy more per frame).
// `neat audit` (tools/) is the command-line front end.
//
// At production scale: AuditAggregator reads while it aggregates, so memory
// stays constant whatever the size of the traces (JSON Lines are read in
// chunks and parsed with simdjson; nothing per event is kept, distinct
// frames are a bitmap). Several files (a rotated set, several runs) go into
// one aggregator; a filter keeps events by time, graph, stage and edge.
//
// Malformed traces (wrong types, numbers out of range, unknown kinds or
// reasons) give an InvalidArgument error naming the file and line (JSON
// Lines) or the event index and byte offset (Chrome traces); never a crash.
// A trace's header ({"neat_trace": 2, ...}, written by JsonlSink and
// ChromeTraceSink) is not an event: it tells a traced run with no
// conversions apart from an empty or foreign file. A version-2 trace ends
// with a closing record; one without it was cut short (a crash, kill -9):
// it is read up to the cut (a last record cut in the middle included) and
// the report says how far it got (AuditReport::cut_short).
//
// Threading: pure functions; an AuditAggregator is used by one thread.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "neat/contract/conversion.hpp"
#include "neat/contract/error.hpp"
#include "neat/telemetry/duration_histogram.hpp"

namespace neat {

/// One conversion as a trace records it, over a string type: AuditRecord owns
/// its strings (what read_trace returns); the trace reader fills one of
/// string_views into its buffer, so that reading allocates nothing per event.
/// One struct for both: the fields are listed here once.
template <class Text>
struct BasicAuditRecord {
  ConversionKind kind = ConversionKind::Pack;
  ConversionReason reason = ConversionReason::UserRequest;
  bool explicit_call = true;
  Text policy;
  std::int64_t bytes = 0;
  std::int64_t duration_ns = 0;
  std::int64_t timestamp_ns = 0;  ///< end of the conversion (0 when the trace has none)
  std::int64_t thread = 0;
  std::int64_t frame = -1;
  Text graph, stage, edge, operation, file;
  Text stream;  ///< the frame's stream (a source's name); "" when none
  Text detail;  ///< e.g. the colour standard or the GStreamer element (may be empty)
  Text run;     ///< the run (trace header) it belongs to; "" when the trace has none
  std::int64_t line = 0;

  /// The same record over another string type (a view of an owned record,
  /// or an owned copy of a view).
  template <class Other>
  BasicAuditRecord<Other> as() const {
    BasicAuditRecord<Other> o;
    o.kind = kind;
    o.reason = reason;
    o.explicit_call = explicit_call;
    o.bytes = bytes;
    o.duration_ns = duration_ns;
    o.timestamp_ns = timestamp_ns;
    o.thread = thread;
    o.frame = frame;
    o.line = line;
    o.policy = Other(policy);
    o.graph = Other(graph);
    o.stage = Other(stage);
    o.edge = Other(edge);
    o.operation = Other(operation);
    o.file = Other(file);
    o.stream = Other(stream);
    o.detail = Other(detail);
    o.run = Other(run);
    return o;
  }
};

/// One conversion as read back from a trace.
using AuditRecord = BasicAuditRecord<std::string>;

/// Which events an audit keeps: all of them by default. Times are the
/// events' ts_ns (nanoseconds since the epoch, end of the conversion); with a
/// time bound, events without a timestamp are left out.
struct AuditFilter {
  std::optional<std::int64_t> since_ns;    ///< keep ts_ns >= since_ns
  std::optional<std::int64_t> until_ns;    ///< keep ts_ns < until_ns
  std::string graph, stage, edge, stream;  ///< exact names; empty: any
  bool keeps(const AuditRecord& r) const noexcept;
};

/// "2026-11-23T18:00:00Z" (UTC, fractions of a second allowed, "+00:00"
/// too) or "@1795459000.5" (seconds since the epoch): nanoseconds since the
/// epoch. InvalidArgument says which form is expected.
Result<std::int64_t> parse_audit_time(std::string_view text);

/// Reads a whole trace into memory (small traces, the timeline); the format
/// is detected from its first byte ('{' with "traceEvents" or '[': Chrome
/// trace; otherwise JSON Lines). `name` is used in errors. Large traces:
/// AuditAggregator.
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

/// Capture-to-sink latency of one sink, from the trace's frame records.
struct AuditLatency {
  std::string graph, sink;
  DurationSummary latency;
};

/// A traced run whose trace stops without its closing record (traces of
/// version 2, written by JsonlSink and ChromeTraceSink, end with one): the
/// run crashed, was killed with SIGKILL, ran out of disk, or is still going.
/// What was read of it is in the report; this says how far it got.
struct AuditCutShort {
  std::string run;              ///< the header's run id ("PID-START")
  std::string file;             ///< the last file it was read from
  std::int64_t started_ns = 0;  ///< the header's time (ns since the epoch)
  std::int64_t last_ns = 0;     ///< the last record's time (0: none)
  std::int64_t last_frame = -1;
  std::uint64_t events = 0, frames = 0;  ///< conversion events and frame records read
  bool cut_line = false;                 ///< the file ends inside a record
  /// "the trace of run R (F) is cut short: ...; it got to T, N s after its
  /// start, frame F, E conversion event(s) and M frame record(s) read".
  std::string to_string() const;
};

struct AuditReport {
  std::vector<AuditRow> rows;  ///< most bytes first
  std::uint64_t conversions = 0;
  std::int64_t bytes = 0;
  std::int64_t duration_ns = 0;
  /// Per sink, from the frame records (traces of stage graphs); the graph
  /// and time filters apply, the stage and edge filters do not.
  std::vector<AuditLatency> latency;
  /// Runs whose trace was cut short (none for a complete trace).
  std::vector<AuditCutShort> cut_short;
};

/// The audit of records already in memory.
AuditReport audit(const std::vector<AuditRecord>& records, int top_sites = 3);

/// Aggregates while it reads: add traces (files or streams) one after
/// another, then report(). Memory: one entry per (edge, stage, kind, reason)
/// row and per call site, a bit per distinct frame number, and the read
/// buffer (4 MiB, more only for a longer line); nothing per event.
class AuditAggregator {
 public:
  explicit AuditAggregator(AuditFilter filter = {});
  AuditAggregator(AuditAggregator&&) noexcept;
  AuditAggregator& operator=(AuditAggregator&&) noexcept;
  ~AuditAggregator();

  /// Reads one trace (JSON Lines streamed, Chrome read whole). On an error
  /// the events read before it stay counted; the error names `name` and the line.
  Status read(std::istream& in, std::string_view name);
  /// As read(); FailedPrecondition for a directory or a file it cannot open.
  Status read_file(const std::string& path);
  void add(const AuditRecord& record);

  std::uint64_t events_read() const noexcept;   ///< conversion events read (before the filter)
  std::uint64_t events_kept() const noexcept;   ///< those the filter kept
  std::uint64_t headers_read() const noexcept;  ///< trace headers seen (one per JsonlSink file)
  AuditReport report(int top_sites = 3) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// How one row changed between a baseline audit and a new one.
enum class AuditChangeKind : std::uint8_t {
  Started,  ///< copies now, did not before
  More,     ///< copies more per frame (beyond the tolerance)
  Less,
  Stopped,  ///< copied before, not any more
  Same,
};
std::string_view to_string(AuditChangeKind k) noexcept;

struct AuditChange {
  AuditChangeKind change = AuditChangeKind::Same;
  std::string edge, stage;
  ConversionKind kind = ConversionKind::Pack;
  ConversionReason reason = ConversionReason::UserRequest;
  /// Bytes per frame (rows whose events carry frame numbers), else bytes per
  /// conversion; 0 on the side where the row is absent.
  double before = 0, after = 0;
  bool per_frame = true;
  std::uint64_t before_count = 0, after_count = 0;
};

struct AuditComparison {
  std::vector<AuditChange> changes;  ///< Started, More first; then Less, Stopped, Same
  /// An edge started copying or copies more: what CI fails on.
  bool regressed() const noexcept;
};

/// Compares per row; `tolerance` is relative (0.01: 1% more is still Same).
AuditComparison compare_audits(const AuditReport& baseline, const AuditReport& current,
                               double tolerance = 0.01);
std::string format_audit_comparison(const AuditComparison& comparison);
std::string format_audit_comparison_json(const AuditComparison& comparison);
/// A fixed-width text table.
std::string format_audit_table(const AuditReport& report);
/// The report as JSON ({"conversions", "bytes", "duration_ns", "rows": [...]}).
std::string format_audit_json(const AuditReport& report);

}  // namespace neat

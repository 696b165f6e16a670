// Internal to telemetry (not installed): the trace reader the audit is
// built on. scan_trace() reads a trace (JSON Lines streamed in 4 MiB chunks,
// or a Chrome trace whole), parses each event with simdjson and hands it to a
// callback as a RecordView whose strings point into the parser's buffer:
// nothing is allocated or kept per event. trace_reader.cpp implements it;
// audit.cpp aggregates what it hands on.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "neat/contract/error.hpp"
#include "neat/telemetry/audit.hpp"

namespace neat::detail {

// One record as parsed: a conversion's fields (the strings point into the
// parser's buffer, valid until the next document, so that reading allocates
// nothing per event), or a frame record's, or a header's version.
struct RecordView : BasicAuditRecord<std::string_view> {
  /// A frame record ({"type":"frame"}: a frame reaching a sink), not a
  /// conversion: graph, sink, frame, timestamp_ns and latency_ns are set.
  bool is_frame = false;
  std::string_view sink;
  std::int64_t latency_ns = 0;
  std::int64_t version = 0;  ///< a header's "neat_trace" version
};

RecordView view_of(const AuditRecord& r);
AuditRecord record_of(const RecordView& v);

using OnRecord = std::function<void(const RecordView&)>;

/// How far one traced run got in a file: from its header to its closing
/// record (version 2 traces end with one) or to where the file stops.
struct RunProgress {
  std::string run;
  std::int64_t version = 1;
  bool ended = false;  ///< its closing record was read
  std::int64_t first_ts_ns = 0, last_ts_ns = 0, last_frame = -1;
  std::uint64_t events = 0, frames = 0;
  bool cut_line = false;  ///< the file ends inside a record (the cut)
  void saw(const RecordView& r) noexcept;
};

struct ScanCounts {
  std::uint64_t events = 0, headers = 0, frames = 0;
  std::uint64_t stream_records = 0;    ///< streams' state changes (not conversions)
  std::vector<RunProgress> runs;       ///< per header, in the order of the file
  const OnRecord* on_frame = nullptr;  ///< where frame records go (set by scan_trace)
  std::string run;  ///< the last header's run id: the events after it belong to that run
};

/// Reads `in` (either format) and hands every event to `on_record`; the
/// first malformed line stops it with an error naming `name` and the line.
/// Conversion events go to `on_record`; frame records to `on_frame` when
/// given (else they are only counted).
Status scan_trace(std::istream& in, std::string_view name, const OnRecord& on_record,
                  ScanCounts& counts, const OnRecord* on_frame = nullptr);
/// FailedPrecondition for a directory given as a trace.
Status check_trace_path(const std::string& path);

}  // namespace neat::detail

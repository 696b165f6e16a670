// The trace reader (internal/trace_reader.hpp) and the in-memory
// read_trace() of audit.hpp.
#include <simdjson.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "neat/telemetry/audit.hpp"
#include "neat/telemetry/internal/trace_reader.hpp"

namespace neat {
namespace detail {

RecordView view_of(const AuditRecord& r) {
  RecordView v;
  static_cast<BasicAuditRecord<std::string_view>&>(v) = r.as<std::string_view>();
  return v;
}

AuditRecord record_of(const RecordView& v) {
  return v.as<std::string>();
}

namespace {

using nlohmann::json;

const char* type_name(simdjson::dom::element_type t) {
  using T = simdjson::dom::element_type;
  switch (t) {
    case T::ARRAY:
      return "array";
    case T::OBJECT:
      return "object";
    case T::INT64:
    case T::UINT64:
    case T::DOUBLE:
      return "number";
    case T::STRING:
      return "string";
    case T::BOOL:
      return "boolean";
    case T::NULL_VALUE:
      return "null";
  }
  return "value";
}

// A double as the trace wrote it, near enough for an error message.
std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

enum class Parsed { Event, Header, Frame, End, Stream };

// Where an error is: built only when there is one.
using Where = std::function<std::string()>;

// Where simdjson refused a text, in the words of a parser that says where:
// the byte offset nlohmann's parser stops at (only on this error path).
std::string json_problem(std::string_view text, simdjson::error_code e) {
  try {
    (void)json::parse(text.begin(), text.end()).is_null();
  } catch (const json::parse_error& pe) {
    return "column " + std::to_string(pe.byte) +
           ": not valid JSON (truncated or corrupt line): " + pe.what();
  } catch (const json::exception& je) {
    return std::string("unreadable value: ") + je.what();
  }
  return std::string("not valid JSON: ") + simdjson::error_message(e);
}

// One field of a record, read as the type the trace format gives it.
struct Field {
  std::string_view key;
  simdjson::dom::element value;
  const Where& where;

  simdjson::dom::element_type type() const { return value.type(); }
  Error wrong(std::string_view what) const {
    return invalid_argument(where() + ": field \"" + std::string(key) + "\" " + std::string(what));
  }
  Status string(std::string_view& out) const {
    if (type() != simdjson::dom::element_type::STRING)
      return wrong(std::string("must be a string, found ") + type_name(type()));
    out = value.get_string().value_unsafe();
    return {};
  }
  Status integer(std::int64_t& out, std::int64_t min) const {
    using T = simdjson::dom::element_type;
    if (type() == T::DOUBLE) {
      return wrong("must be an integer, found the number " +
                   number_text(value.get_double().value_unsafe()));
    }
    if (type() == T::UINT64) {
      const std::uint64_t u = value.get_uint64().value_unsafe();
      if (u > static_cast<std::uint64_t>(INT64_MAX))
        return wrong("= " + std::to_string(u) + " is out of range");
      out = static_cast<std::int64_t>(u);
    } else if (type() == T::INT64) {
      out = value.get_int64().value_unsafe();
    } else {
      return wrong(std::string("must be an integer, found ") + type_name(type()));
    }
    if (out < min) return wrong("= " + std::to_string(out) + " is negative");
    return {};
  }
};

// The fields every record kind may carry, by their type in the format.
constexpr std::pair<std::string_view, std::string_view RecordView::*> kStringFields[] = {
    {"policy", &RecordView::policy},       {"graph", &RecordView::graph},
    {"stage", &RecordView::stage},         {"edge", &RecordView::edge},
    {"operation", &RecordView::operation}, {"file", &RecordView::file},
    {"detail", &RecordView::detail},       {"sink", &RecordView::sink},
    {"stream", &RecordView::stream},
};
struct IntegerField {
  std::string_view key;
  std::int64_t RecordView::*member;
  std::int64_t min;
};
constexpr IntegerField kIntegerFields[] = {
    {"bytes", &RecordView::bytes, 0},           {"duration_ns", &RecordView::duration_ns, 0},
    {"frame", &RecordView::frame, -1},          {"line", &RecordView::line, 0},
    {"ts_ns", &RecordView::timestamp_ns, 0},    {"thread", &RecordView::thread, 0},
    {"latency_ns", &RecordView::latency_ns, 0},
};

// What a record's fields said about the record itself.
struct Seen {
  bool kind = false, reason = false, bytes = false, header = false, end = false, stream = false;
  std::string_view kind_text, reason_text;
};

// Reads one field into `r` or `seen` (unknown fields are skipped: src, dst, function, ...).
Status read_field(const Field& f, RecordView& r, Seen& seen) {
  using T = simdjson::dom::element_type;
  for (const auto& [key, member] : kStringFields) {
    if (f.key == key) return f.string(r.*member);
  }
  for (const IntegerField& i : kIntegerFields) {
    if (f.key != i.key) continue;
    seen.bytes = seen.bytes || f.key == "bytes";
    return f.integer(r.*(i.member), i.min);
  }
  if (f.key == "kind") {
    seen.kind = true;
    return f.string(seen.kind_text);
  }
  if (f.key == "reason") {
    seen.reason = true;
    return f.string(seen.reason_text);
  }
  if (f.key == "explicit") {
    if (f.type() != T::BOOL) return f.wrong("must be true or false");
    r.explicit_call = f.value.get_bool().value_unsafe();
    return {};
  }
  if (f.key == "neat_trace") {
    seen.header = true;
    return f.type() == T::INT64 || f.type() == T::UINT64 ? f.integer(r.version, 1) : Status{};
  }
  if (f.key == "type") {
    std::string_view type;
    NEAT_RETURN_IF_ERROR(f.string(type));
    if (type == "end") {
      seen.end = true;
    } else if (type == "frame") {
      r.is_frame = true;
    } else if (type == "stream" || type == "track" || type == "delivery") {
      seen.stream = true;  // a state change, not a conversion
    } else {
      return invalid_argument(f.where() + ": unknown record type \"" + std::string(type) +
                              "\" (a trace holds conversion events, \"frame\", \"stream\", "
                              "\"track\" and \"delivery\" records and its \"end\")");
    }
    return {};
  }
  if (f.key == "run" && f.type() == T::STRING) r.run = f.value.get_string().value_unsafe();
  return {};
}

// What the record is, once its fields are read; a conversion needs its kind,
// reason and bytes, and names from the vocabulary.
Result<Parsed> classify(const Seen& seen, RecordView& r, const Where& where) {
  if (seen.header) return Parsed::Header;
  if (seen.end) return Parsed::End;
  if (seen.stream) return Parsed::Stream;
  if (r.is_frame) {
    if (r.sink.empty()) return invalid_argument(where() + ": a frame record needs \"sink\"");
    return Parsed::Frame;
  }
  if (!seen.kind) return invalid_argument(where() + ": missing field \"kind\"");
  if (!seen.reason) return invalid_argument(where() + ": missing field \"reason\"");
  if (!seen.bytes) return invalid_argument(where() + ": missing field \"bytes\"");
  const auto k = parse_conversion_kind(seen.kind_text);
  if (!k) {
    return invalid_argument(where() + ": unknown kind \"" + std::string(seen.kind_text) +
                            "\" (pack, convert, transfer, view, reinterpret)");
  }
  const auto rs = parse_conversion_reason(seen.reason_text);
  if (!rs) {
    return invalid_argument(where() + ": unknown reason \"" + std::string(seen.reason_text) + "\"");
  }
  r.kind = *k;
  r.reason = *rs;
  return Parsed::Event;
}

// Reads one record object into `r`. A header object ({"neat_trace": ...}) is not an event.
Result<Parsed> parse_event(const simdjson::dom::object& obj, RecordView& r, const Where& where) {
  r = RecordView{};
  Seen seen;
  for (const auto field : obj)
    NEAT_RETURN_IF_ERROR(read_field(Field{field.key, field.value, where}, r, seen));
  return classify(seen, r, where);
}

// simdjson's number errors, in the trace's terms.
Error parse_failure(const Where& where, std::string_view text, simdjson::error_code e) {
  if (e == simdjson::NUMBER_ERROR) {  // an integer beyond 64 bits, or a double beyond range
    return invalid_argument(where() +
                            ": a number must be an integer of at most 64 bits, found one out of "
                            "range");
  }
  return invalid_argument(where() + ", " + json_problem(text, e));
}

// One parsed record to where it goes: headers and ends mark the runs'
// progress, frames and events go to their callbacks (tagged with the run).
void hand_on(Parsed p, RecordView& r, const OnRecord& on_record, ScanCounts& counts) {
  if (p == Parsed::Header) {
    ++counts.headers;
    counts.run.assign(r.run);
    RunProgress run;
    run.run.assign(r.run);
    run.version = r.version > 0 ? r.version : 1;
    run.first_ts_ns = r.timestamp_ns;
    counts.runs.push_back(std::move(run));
    return;
  }
  if (p == Parsed::End) {
    if (!counts.runs.empty()) counts.runs.back().ended = true;
    return;
  }
  if (p == Parsed::Stream) {  // a stream's state change: not a conversion
    ++counts.stream_records;
    return;
  }
  r.run = counts.run;
  if (!counts.runs.empty()) counts.runs.back().saw(r);
  if (p == Parsed::Frame) {
    ++counts.frames;
    if (counts.on_frame != nullptr) (*counts.on_frame)(r);
  } else {
    ++counts.events;
    on_record(r);
  }
}

// One JSON Lines line (its bytes are followed by at least SIMDJSON_PADDING
// readable bytes).
Status scan_line(simdjson::dom::parser& parser, const char* data, std::size_t size,
                 std::string_view name, std::int64_t line_no, const OnRecord& on_record,
                 ScanCounts& counts) {
  const Where where = [&] { return std::string(name) + " line " + std::to_string(line_no); };
  simdjson::dom::element doc;
  if (auto e = parser.parse(data, size, false).get(doc))
    return parse_failure(where, std::string_view(data, size), e);
  if (doc.type() != simdjson::dom::element_type::OBJECT)
    return invalid_argument(where() + ": expected an object, found " + type_name(doc.type()));
  RecordView r;
  NEAT_ASSIGN_OR_RETURN(Parsed p, parse_event(doc.get_object().value_unsafe(), r, where));
  hand_on(p, r, on_record, counts);
  return {};
}

bool blank(const char* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') return false;
  }
  return true;
}

constexpr std::size_t kChunk = std::size_t{4} << 20;
// The first read (it also tells the format): small, so that a short trace,
// or an audit of many, does not allocate 4 MiB each; reads of a long trace
// then grow to kChunk.
constexpr std::size_t kFirstChunk = std::size_t{64} << 10;
constexpr std::size_t kMaxLine = std::size_t{256} << 20;
constexpr std::size_t kPadding = simdjson::SIMDJSON_PADDING;

// JSON Lines, streamed: `buffer` holds [0, have) already read (format detection).
Status scan_jsonl(std::istream& in, std::string_view name, std::vector<char>& buffer,
                  std::size_t have, const OnRecord& on_record, ScanCounts& counts) {
  simdjson::dom::parser parser;
  std::int64_t line_no = 0;
  std::size_t start = 0;  // first byte not yet consumed
  bool eof = !in;
  for (;;) {
    // Every complete line in [start, have): the bytes after each (the next
    // lines, then the buffer's spare room) are its padding.
    for (;;) {
      const void* nl = std::memchr(buffer.data() + start, '\n', have - start);
      if (nl == nullptr) break;
      const std::size_t end =
          static_cast<std::size_t>(static_cast<const char*>(nl) - buffer.data());
      ++line_no;
      if (!blank(buffer.data() + start, end - start)) {
        NEAT_RETURN_IF_ERROR(scan_line(parser, buffer.data() + start, end - start, name, line_no,
                                       on_record, counts));
      }
      start = end + 1;
    }
    if (eof) break;
    // Keep the partial line, read more behind it.
    std::memmove(buffer.data(), buffer.data() + start, have - start);
    have -= start;
    start = 0;
    if (buffer.size() - have < kChunk + kPadding) {
      if (have > kMaxLine) {
        return invalid_argument(std::string(name) + " line " + std::to_string(line_no + 1) +
                                ": longer than " + std::to_string(kMaxLine >> 20) +
                                " MiB without a newline (not a JSON Lines trace)");
      }
      buffer.resize(have + kChunk + kPadding);
    }
    in.read(buffer.data() + have, static_cast<std::streamsize>(kChunk));
    const auto got = static_cast<std::size_t>(in.gcount());
    have += got;
    if (in.bad()) return failed_precondition("cannot read trace '" + std::string(name) + "'");
    if (got == 0 || !in) eof = true;
  }
  if (start < have && !blank(buffer.data() + start, have - start)) {  // a last line without '\n'
    ++line_no;
    Status st =
        scan_line(parser, buffer.data() + start, have - start, name, line_no, on_record, counts);
    // A trace that promises a closing record and has none was cut short
    // (kill -9, a crash): its last line may be cut too. That is the cut, not
    // a malformed trace; the audit reports the run as cut short.
    if (!st.ok() && !counts.runs.empty() && counts.runs.back().version >= 2 &&
        !counts.runs.back().ended) {
      counts.runs.back().cut_line = true;
      return {};
    }
    return st;
  }
  return {};
}

// A Chrome trace (one JSON document): its "X" slices' args are the events.
Status scan_chrome(const simdjson::padded_string& text, std::string_view name,
                   const OnRecord& on_record, ScanCounts& counts) {
  using T = simdjson::dom::element_type;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto e = parser.parse(text).get(doc)) {
    if (e == simdjson::NUMBER_ERROR) {
      return parse_failure([&] { return std::string(name); }, text, e);
    }
    try {
      (void)json::parse(text.data(), text.data() + text.size()).is_null();
    } catch (const json::parse_error& pe) {
      return invalid_argument(std::string(name) + " at byte offset " + std::to_string(pe.byte) +
                              ": not valid JSON (truncated or corrupt trace): " + pe.what());
    } catch (const json::exception& je) {
      return invalid_argument(std::string(name) + ": unreadable value: " + je.what());
    }
    return invalid_argument(std::string(name) + ": not valid JSON: " + simdjson::error_message(e));
  }
  simdjson::dom::array events;
  if (doc.type() == T::OBJECT) {
    simdjson::dom::element te;
    if (doc.get_object().value_unsafe().at_key("traceEvents").get(te))
      return invalid_argument(std::string(name) + ": a Chrome trace object needs \"traceEvents\"");
    if (te.get_array().get(events))
      return invalid_argument(std::string(name) + ": \"traceEvents\" must be an array");
  } else if (doc.type() == T::ARRAY) {
    events = doc.get_array().value_unsafe();
  } else {
    return invalid_argument(std::string(name) +
                            ": expected a Chrome trace (an object with \"traceEvents\", or an "
                            "array), found " +
                            type_name(doc.type()));
  }
  std::size_t index = 0;
  for (const simdjson::dom::element ev : events) {
    const std::size_t i = index++;
    const Where where = [&] { return std::string(name) + " event #" + std::to_string(i); };
    simdjson::dom::object obj;
    if (ev.get_object().get(obj)) return invalid_argument(where() + ": expected an object");
    std::string_view ph;
    if (obj.at_key("ph").get_string().get(ph))
      return invalid_argument(where() + ": missing string field \"ph\"");
    if (ph == "M") {  // metadata: the trace's own header and end carry a run's progress
      std::string_view meta;
      if (obj.at_key("name").get_string().get(meta) ||
          (meta != "neat_trace" && meta != "neat_trace_end"))
        continue;
    } else if (ph != "X") {
      continue;  // counters
    }
    simdjson::dom::object args;
    if (obj.at_key("args").get_object().get(args))
      return invalid_argument(where() + ": a conversion slice needs \"args\"");
    RecordView r;
    NEAT_ASSIGN_OR_RETURN(Parsed p, parse_event(args, r, [&] { return where() + " args"; }));
    hand_on(p, r, on_record, counts);
  }
  return {};
}

// A document in the JSON Array Format, and whether it ends with its "]".
bool head_is_array(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '[';
}
bool closed_array(std::string_view text) {
  const auto last = text.find_last_not_of(" \t\r\n");
  return last != std::string_view::npos && text[last] == ']';
}

}  // namespace

void RunProgress::saw(const RecordView& r) noexcept {
  if (r.is_frame) {
    ++frames;
  } else {
    ++events;
  }
  if (r.timestamp_ns > 0) {
    if (first_ts_ns == 0 || r.timestamp_ns < first_ts_ns) first_ts_ns = r.timestamp_ns;
    last_ts_ns = std::max(last_ts_ns, r.timestamp_ns);
  }
  last_frame = std::max(last_frame, r.frame);
}

// Reads `in` (either format) and hands every event to `on_record`.
Status scan_trace(std::istream& in, std::string_view name, const OnRecord& on_record,
                  ScanCounts& counts, const OnRecord* on_frame) {
  counts.on_frame = on_frame;
  std::vector<char> buffer(kFirstChunk + kPadding);
  in.read(buffer.data(), static_cast<std::streamsize>(kFirstChunk));
  std::size_t have = static_cast<std::size_t>(in.gcount());
  if (in.bad()) return failed_precondition("cannot read trace '" + std::string(name) + "'");
  std::size_t first = 0;
  while (first < have && (buffer[first] == ' ' || buffer[first] == '\t' || buffer[first] == '\r' ||
                          buffer[first] == '\n')) {
    ++first;
  }
  if (first == have && !in) return {};  // nothing at all
  bool chrome = false;
  if (first < have) {
    const std::string_view head(buffer.data() + first, have - first);
    const auto te = head.find("\"traceEvents\"");
    chrome =
        head[0] == '[' || (head[0] == '{' && te != std::string_view::npos && head.find('\n') > te);
  }
  if (!chrome) return scan_jsonl(in, name, buffer, have, on_record, counts);
  // A Chrome trace is one document: read it whole.
  std::string text(buffer.data(), have);
  text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  // The array form streamed by ChromeTraceSink, cut short (kill -9, a crash):
  // the events up to the last whole line, the array closed as Perfetto does.
  if (head_is_array(text) && !closed_array(text) &&
      text.find("\"neat_trace\":2") < 4096) {  // ChromeTraceSink's header comes first
    const auto nl = text.rfind('\n');
    std::string whole = text.substr(0, nl == std::string::npos ? 0 : nl);
    while (!whole.empty() && (whole.back() == ',' || whole.back() == ' ' || whole.back() == '\r' ||
                              whole.back() == '\n'))
      whole.pop_back();
    const bool cut_line = nl == std::string::npos || nl + 1 < text.size();
    whole += "\n]";
    const simdjson::padded_string repaired(whole);
    NEAT_RETURN_IF_ERROR(scan_chrome(repaired, name, on_record, counts));
    if (!counts.runs.empty()) counts.runs.back().cut_line = cut_line;
    return {};
  }
  const simdjson::padded_string padded(text);
  return scan_chrome(padded, name, on_record, counts);
}

Status check_trace_path(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return failed_precondition("trace '" + path +
                               "' is a directory; give a trace file (JSON Lines from --trace, or "
                               "a Chrome trace from --chrome)");
  }
  return {};
}

}  // namespace detail

Result<std::vector<AuditRecord>> read_trace(std::istream& in, std::string_view name) {
  using namespace detail;
  std::vector<AuditRecord> out;
  ScanCounts counts;
  NEAT_RETURN_IF_ERROR(scan_trace(
      in, name, [&](const RecordView& r) { out.push_back(record_of(r)); }, counts));
  return out;
}

Result<std::vector<AuditRecord>> read_trace_file(const std::string& path) {
  using detail::check_trace_path;
  NEAT_RETURN_IF_ERROR(check_trace_path(path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return failed_precondition("cannot open trace '" + path + "': " + std::strerror(errno));
  return read_trace(in, path);
}

}  // namespace neat

#include "neat/telemetry/event_json.hpp"

#include <charconv>

namespace neat {

namespace {

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void key(std::string& out, std::string_view k) {
  out += '"';
  out += k;
  out += "\":";
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  std::size_t run = 0;  // bytes since the last escape, appended in one go
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

void append_description_json(std::string& out, const TensorDescription& d) {
  out += '{';
  key(out, "dtype");
  append_json_string(out, to_string(d.dtype));
  out += ',';
  key(out, "shape");
  out += '[';
  for (int i = 0; i < d.rank && i < 4; ++i) {
    if (i) out += ',';
    append_int(out, d.shape[static_cast<std::size_t>(i)]);
  }
  out += "],";
  key(out, "rank");
  append_int(out, d.rank);
  out += ',';
  key(out, "format");
  append_json_string(out, to_string(d.format));
  out += ',';
  key(out, "layout");
  append_json_string(out, to_string(d.layout));
  out += ',';
  key(out, "device");
  append_json_string(out, to_string(d.device.type));
  out += ',';
  key(out, "device_id");
  append_int(out, d.device.id);
  out += ',';
  key(out, "storage");
  append_json_string(out, to_string(d.storage));
  out += ',';
  key(out, "contiguous");
  out += d.contiguous ? "true" : "false";
  out += '}';
}

void append_event_json(std::string& out, const ConversionEvent& e) {
  out += '{';
  key(out, "ts_ns");
  append_int(out, e.timestamp_ns);
  out += ',';
  key(out, "duration_ns");
  append_int(out, e.duration_ns);
  out += ',';
  key(out, "kind");
  append_json_string(out, to_string(e.kind));
  out += ',';
  key(out, "reason");
  append_json_string(out, to_string(e.reason));
  out += ',';
  key(out, "explicit");
  out += e.explicit_call ? "true" : "false";
  out += ',';
  key(out, "loud");
  out += e.loud ? "true" : "false";
  out += ',';
  key(out, "policy");
  append_json_string(out, to_string(e.policy));
  out += ',';
  key(out, "bytes");
  append_int(out, e.bytes_written);
  out += ',';
  key(out, "bytes_read");
  append_int(out, e.bytes_read);
  out += ',';
  key(out, "thread");
  append_int(out, static_cast<std::int64_t>(e.thread_id));
  out += ',';
  key(out, "operation");
  append_json_string(out, e.operation);
  out += ',';
  key(out, "file");
  append_json_string(out, e.where.file_name());
  out += ',';
  key(out, "line");
  append_int(out, e.where.line());
  out += ',';
  key(out, "function");
  append_json_string(out, e.where.function_name());
  out += ',';
  key(out, "graph");
  append_json_string(out, e.graph);
  out += ',';
  key(out, "stage");
  append_json_string(out, e.stage);
  out += ',';
  key(out, "edge");
  append_json_string(out, e.edge);
  out += ',';
  key(out, "frame");
  append_int(out, e.frame);
  out += ',';
  key(out, "src");
  append_description_json(out, e.source);
  out += ',';
  key(out, "dst");
  append_description_json(out, e.destination);
  out += '}';
}

}  // namespace neat

#include "neat/telemetry/audit.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace neat {

namespace {

using nlohmann::json;

// Validates one event object (a JSON Lines line, or a Chrome slice's args).
Result<AuditRecord> record_of(const json& j, const std::string& where) {
  if (!j.is_object())
    return invalid_argument(where + ": expected an object, found " + j.type_name());
  auto str = [&](const char* k, bool required) -> Result<std::string> {
    auto it = j.find(k);
    if (it == j.end()) {
      if (required) return invalid_argument(where + ": missing field \"" + k + "\"");
      return std::string();
    }
    if (!it->is_string()) {
      return invalid_argument(where + ": field \"" + k + "\" must be a string, found " +
                              it->type_name());
    }
    return it->get<std::string>();
  };
  auto integer = [&](const char* k, bool required, std::int64_t min,
                     std::int64_t fallback) -> Result<std::int64_t> {
    auto it = j.find(k);
    if (it == j.end()) {
      if (required) return invalid_argument(where + ": missing field \"" + k + "\"");
      return fallback;
    }
    if (it->is_number_unsigned()) {
      const auto u = it->get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) {
        return invalid_argument(where + ": field \"" + k + "\" = " + it->dump() +
                                " is out of range");
      }
      return static_cast<std::int64_t>(u);
    }
    if (!it->is_number_integer()) {
      return invalid_argument(
          where + ": field \"" + k + "\" must be an integer, found " +
          (it->is_number_float() ? "the number " + it->dump() : std::string(it->type_name())));
    }
    const auto v = it->get<std::int64_t>();
    if (v < min)
      return invalid_argument(where + ": field \"" + k + "\" = " + std::to_string(v) +
                              " is negative");
    return v;
  };
  AuditRecord r;
  NEAT_ASSIGN_OR_RETURN(std::string kind, str("kind", true));
  NEAT_ASSIGN_OR_RETURN(std::string reason, str("reason", true));
  const auto k = parse_conversion_kind(kind);
  if (!k)
    return invalid_argument(where + ": unknown kind \"" + kind +
                            "\" (pack, convert, transfer, view, reinterpret)");
  const auto rs = parse_conversion_reason(reason);
  if (!rs) return invalid_argument(where + ": unknown reason \"" + reason + "\"");
  r.kind = *k;
  r.reason = *rs;
  NEAT_ASSIGN_OR_RETURN(r.bytes, integer("bytes", true, 0, 0));
  NEAT_ASSIGN_OR_RETURN(r.duration_ns, integer("duration_ns", false, 0, 0));
  NEAT_ASSIGN_OR_RETURN(r.frame, integer("frame", false, -1, -1));
  NEAT_ASSIGN_OR_RETURN(r.line, integer("line", false, 0, 0));
  NEAT_ASSIGN_OR_RETURN(r.timestamp_ns, integer("ts_ns", false, 0, 0));
  NEAT_ASSIGN_OR_RETURN(r.thread, integer("thread", false, 0, 0));
  if (auto it = j.find("explicit"); it != j.end()) {
    if (!it->is_boolean())
      return invalid_argument(where + ": field \"explicit\" must be true or false");
    r.explicit_call = it->get<bool>();
  }
  NEAT_ASSIGN_OR_RETURN(r.policy, str("policy", false));
  NEAT_ASSIGN_OR_RETURN(r.graph, str("graph", false));
  NEAT_ASSIGN_OR_RETURN(r.stage, str("stage", false));
  NEAT_ASSIGN_OR_RETURN(r.edge, str("edge", false));
  NEAT_ASSIGN_OR_RETURN(r.operation, str("operation", false));
  NEAT_ASSIGN_OR_RETURN(r.file, str("file", false));
  NEAT_ASSIGN_OR_RETURN(r.detail, str("detail", false));
  return r;
}

Result<std::vector<AuditRecord>> read_jsonl(std::istream& in, std::string_view name) {
  std::vector<AuditRecord> out;
  std::string text;
  std::int64_t line_no = 0;
  while (std::getline(in, text)) {
    ++line_no;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = std::string(name) + " line " + std::to_string(line_no);
    json j;
    try {
      j = json::parse(text);
    } catch (const json::parse_error& e) {
      return invalid_argument(where + ", column " + std::to_string(e.byte) +
                              ": not valid JSON (truncated or corrupt line): " + e.what());
    } catch (const json::exception& e) {  // e.g. a number too large for any type
      return invalid_argument(where + ": unreadable value: " + e.what());
    }
    NEAT_ASSIGN_OR_RETURN(AuditRecord r, record_of(j, where));
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<AuditRecord>> read_chrome(const std::string& text, std::string_view name) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return invalid_argument(std::string(name) + " at byte offset " + std::to_string(e.byte) +
                            ": not valid JSON (truncated or corrupt trace): " + e.what());
  } catch (const json::exception& e) {
    return invalid_argument(std::string(name) + ": unreadable value: " + e.what());
  }
  const json* events = &j;
  if (j.is_object()) {
    auto it = j.find("traceEvents");
    if (it == j.end())
      return invalid_argument(std::string(name) + ": a Chrome trace object needs \"traceEvents\"");
    events = &*it;
  }
  if (!events->is_array())
    return invalid_argument(std::string(name) + ": \"traceEvents\" must be an array");
  std::vector<AuditRecord> out;
  std::size_t index = 0;
  for (const json& ev : *events) {
    const std::string where = std::string(name) + " event #" + std::to_string(index++);
    if (!ev.is_object()) return invalid_argument(where + ": expected an object");
    auto ph = ev.find("ph");
    if (ph == ev.end() || !ph->is_string())
      return invalid_argument(where + ": missing string field \"ph\"");
    if (*ph != "X") continue;  // metadata and counters
    auto args = ev.find("args");
    if (args == ev.end()) return invalid_argument(where + ": a conversion slice needs \"args\"");
    NEAT_ASSIGN_OR_RETURN(AuditRecord r, record_of(*args, where + " args"));
    out.push_back(std::move(r));
  }
  return out;
}

std::string human_bytes(double b) {
  char buf[32];
  if (b >= 1024.0 * 1024.0 * 1024.0) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024.0 * 1024.0));
  } else if (b >= 1024.0 * 1024.0) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024.0));
  } else if (b >= 1024.0) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  }
  return buf;
}

std::string human_ns(std::int64_t ns) {
  char buf[32];
  if (ns >= 1000000) {
    std::snprintf(buf, sizeof buf, "%.2f ms", static_cast<double>(ns) / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f us", static_cast<double>(ns) / 1e3);
  }
  return buf;
}

}  // namespace

Result<std::vector<AuditRecord>> read_trace(std::istream& in, std::string_view name) {
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return std::vector<AuditRecord>{};
  const bool chrome = text[first] == '[' ||
                      (text[first] == '{' && text.find("\"traceEvents\"") != std::string::npos &&
                       text.find('\n', first) > text.find("\"traceEvents\""));
  if (chrome) return read_chrome(text, name);
  std::istringstream lines(text);
  return read_jsonl(lines, name);
}

Result<std::vector<AuditRecord>> read_trace_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return failed_precondition("trace '" + path +
                               "' is a directory; give a trace file (JSON Lines from --trace, or "
                               "a Chrome trace from --chrome)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return failed_precondition("cannot open trace '" + path + "': " + std::strerror(errno));
  }
  try {
    return read_trace(in, path);
  } catch (const std::ios_base::failure& e) {
    return failed_precondition("cannot read trace '" + path + "': " + e.what());
  }
}

AuditReport audit(const std::vector<AuditRecord>& records, int top_sites) {
  struct Acc {
    AuditRow row;
    std::set<std::int64_t> frames;
    std::map<std::string, AuditCallSite> sites;
  };
  std::map<std::tuple<std::string, std::string, int, int>, Acc> groups;
  AuditReport report;
  for (const AuditRecord& r : records) {
    Acc& a = groups[{r.edge, r.stage, static_cast<int>(r.kind), static_cast<int>(r.reason)}];
    a.row.edge = r.edge;
    a.row.stage = r.stage;
    a.row.kind = r.kind;
    a.row.reason = r.reason;
    a.row.count += 1;
    a.row.implicit_count += r.explicit_call ? 0 : 1;
    a.row.bytes += r.bytes;
    a.row.duration_ns += r.duration_ns;
    if (r.frame >= 0) a.frames.insert(r.frame);
    std::string where =
        r.file.empty() ? std::string("(unknown)") : r.file + ":" + std::to_string(r.line);
    if (!r.operation.empty()) where += " (" + r.operation + ")";
    if (!r.detail.empty()) where += " [" + r.detail + "]";
    AuditCallSite& s = a.sites[where];
    s.where = where;
    s.count += 1;
    s.bytes += r.bytes;
    report.conversions += 1;
    report.bytes += r.bytes;
    report.duration_ns += r.duration_ns;
  }
  for (auto& [key, a] : groups) {
    a.row.frames = static_cast<std::int64_t>(a.frames.size());
    a.row.bytes_per_frame =
        a.row.frames ? static_cast<double>(a.row.bytes) / static_cast<double>(a.row.frames) : 0.0;
    for (auto& [w, s] : a.sites)
      a.row.top_sites.push_back(s);
    std::sort(a.row.top_sites.begin(), a.row.top_sites.end(),
              [](const AuditCallSite& x, const AuditCallSite& y) {
                return x.count != y.count ? x.count > y.count : x.where < y.where;
              });
    if (static_cast<int>(a.row.top_sites.size()) > top_sites)
      a.row.top_sites.resize(static_cast<std::size_t>(std::max(top_sites, 0)));
    report.rows.push_back(std::move(a.row));
  }
  std::sort(report.rows.begin(), report.rows.end(), [](const AuditRow& x, const AuditRow& y) {
    return x.bytes != y.bytes ? x.bytes > y.bytes : x.count > y.count;
  });
  return report;
}

std::string format_audit_table(const AuditReport& report) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-24s %-16s %-9s %-17s %7s %11s %12s %10s\n", "EDGE", "STAGE",
                "KIND", "REASON", "COUNT", "BYTES", "BYTES/FRAME", "TIME");
  out += buf;
  for (const AuditRow& r : report.rows) {
    const std::string edge = r.edge.empty() ? "(none)" : r.edge;
    const std::string stage = r.stage.empty() ? "(none)" : r.stage;
    std::snprintf(
        buf, sizeof buf, "%-24s %-16s %-9s %-17s %7llu %11s %12s %10s\n", edge.c_str(),
        stage.c_str(), std::string(to_string(r.kind)).c_str(),
        std::string(to_string(r.reason)).c_str(), static_cast<unsigned long long>(r.count),
        human_bytes(static_cast<double>(r.bytes)).c_str(),
        r.frames ? human_bytes(r.bytes_per_frame).c_str() : "-", human_ns(r.duration_ns).c_str());
    out += buf;
    for (const AuditCallSite& s : r.top_sites) {
      std::snprintf(buf, sizeof buf, "    %6llux %10s  %s\n",
                    static_cast<unsigned long long>(s.count),
                    human_bytes(static_cast<double>(s.bytes)).c_str(), s.where.c_str());
      out += buf;
    }
  }
  std::snprintf(buf, sizeof buf, "total: %llu conversions, %s, %s\n",
                static_cast<unsigned long long>(report.conversions),
                human_bytes(static_cast<double>(report.bytes)).c_str(),
                human_ns(report.duration_ns).c_str());
  out += buf;
  return out;
}

std::string format_audit_json(const AuditReport& report) {
  json j;
  j["conversions"] = report.conversions;
  j["bytes"] = report.bytes;
  j["duration_ns"] = report.duration_ns;
  j["rows"] = json::array();
  for (const AuditRow& r : report.rows) {
    json row{{"edge", r.edge},
             {"stage", r.stage},
             {"kind", std::string(to_string(r.kind))},
             {"reason", std::string(to_string(r.reason))},
             {"count", r.count},
             {"implicit_count", r.implicit_count},
             {"bytes", r.bytes},
             {"frames", r.frames},
             {"bytes_per_frame", r.bytes_per_frame},
             {"duration_ns", r.duration_ns}};
    row["top_call_sites"] = json::array();
    for (const AuditCallSite& s : r.top_sites) {
      row["top_call_sites"].push_back({{"where", s.where}, {"count", s.count}, {"bytes", s.bytes}});
    }
    j["rows"].push_back(std::move(row));
  }
  return j.dump(2) + "\n";
}

}  // namespace neat

#include "audit_cmd.hpp"

#include <cstdio>
#include <sstream>

#include <neat/telemetry/audit.hpp>

namespace neat::tools {
namespace {

constexpr int kNoEvents = 1;
constexpr int kMalformed = 2;
constexpr int kFailOn = 3;
constexpr int kCutShort = 4;

struct Read {
  AuditReport report;
  std::uint64_t read = 0, kept = 0, headers = 0;
  bool cut_short() const noexcept { return !report.cut_short.empty(); }
};

// Aggregates every file; the first error stops (named by its file and line).
Result<Read> read_all(const std::vector<std::string>& paths, const AuditFilter& filter, int top) {
  AuditAggregator a(filter);
  for (const std::string& p : paths)
    NEAT_RETURN_IF_ERROR(a.read_file(p));
  return Read{a.report(top), a.events_read(), a.events_kept(), a.headers_read()};
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v)
    out += (out.empty() ? "" : ", ") + s;
  return out;
}

// "no events" on stderr, and whether that is an error (nothing that even
// looks like a trace was read).
bool no_events(const Read& r, const std::vector<std::string>& paths, const char* role) {
  if (r.kept > 0) return false;
  if (r.read > 0) {
    std::fprintf(stderr,
                 "neat audit: no events: none of the %llu %sevent(s) read matches the filter\n",
                 static_cast<unsigned long long>(r.read), role);
    return false;
  }
  if (r.headers > 0) {
    std::fprintf(stderr, "neat audit: no events in %s: the traced run(s) made no conversions%s\n",
                 joined(paths).c_str(), r.cut_short() ? " before the trace was cut short" : "");
    return false;
  }
  std::fprintf(stderr,
               "neat audit: no events in %s: empty, or not a neat trace (a run killed before it "
               "flushed its trace? a trace written with --trace FILE holds at least its header "
               "line)\n",
               joined(paths).c_str());
  return true;
}

}  // namespace

int run_audit(const AuditOptions& o) {
  std::vector<ConversionKind> failing;
  std::stringstream list(o.fail_on);
  for (std::string item; std::getline(list, item, ',');) {
    if (item.empty()) continue;
    const auto k = parse_conversion_kind(item);
    if (!k) {
      std::fprintf(stderr,
                   "neat audit: --fail-on: unknown kind '%s' (use pack, convert, transfer)\n",
                   item.c_str());
      return kMalformed;
    }
    failing.push_back(*k);
  }
  AuditFilter filter;
  filter.graph = o.graph;
  filter.stage = o.stage;
  filter.edge = o.edge;
  filter.stream = o.stream;
  for (const auto& [text, slot, flag] : {std::tuple{&o.since, &filter.since_ns, "--since"},
                                         std::tuple{&o.until, &filter.until_ns, "--until"}}) {
    if (text->empty()) continue;
    auto t = parse_audit_time(*text);
    if (!t.ok()) {
      std::fprintf(stderr, "neat audit: %s: %s\n", flag, t.error().message().c_str());
      return kMalformed;
    }
    *slot = *t;
  }
  if (filter.since_ns && filter.until_ns && *filter.until_ns <= *filter.since_ns) {
    std::fprintf(stderr, "neat audit: --until %s is not after --since %s\n", o.until.c_str(),
                 o.since.c_str());
    return kMalformed;
  }

  auto current = read_all(o.traces, filter, o.top);
  if (!current.ok()) {
    std::fprintf(stderr, "neat audit: %s\n", current.error().message().c_str());
    return kMalformed;
  }
  // A trace cut short is audited up to its cut, and the exit status says so.
  const int cut = current->cut_short() && !o.allow_cut_short ? kCutShort : 0;
  for (const AuditCutShort& c : current->report.cut_short) {
    std::fprintf(stderr, "neat audit: %s%s\n", c.to_string().c_str(),
                 o.allow_cut_short ? "" : " (--allow-cut-short to accept it)");
  }
  if (no_events(*current, o.traces, "")) return kNoEvents;

  int status = 0;
  if (!o.baseline.empty()) {
    auto before = read_all(o.baseline, filter, o.top);
    if (!before.ok()) {
      std::fprintf(stderr, "neat audit: --baseline: %s\n", before.error().message().c_str());
      return kMalformed;
    }
    if (no_events(*before, o.baseline, "baseline ")) return kNoEvents;
    const AuditComparison c =
        compare_audits(before->report, current->report, o.tolerance_percent / 100.0);
    std::fputs(
        (o.format == "json" ? format_audit_comparison_json(c) : format_audit_comparison(c)).c_str(),
        stdout);
    if (c.regressed()) {
      for (const AuditChange& ch : c.changes) {
        if (ch.change != AuditChangeKind::Started && ch.change != AuditChangeKind::More) continue;
        // Named as the tables name them: "(none)" where the conversion had none.
        std::fprintf(stderr, "neat audit: edge %s, stage %s: %s %s conversions (%s)%s\n",
                     ch.edge.empty() ? "(none)" : ("'" + ch.edge + "'").c_str(),
                     ch.stage.empty() ? "(none)" : ("'" + ch.stage + "'").c_str(),
                     ch.change == AuditChangeKind::Started ? "started" : "more",
                     std::string(to_string(ch.kind)).c_str(),
                     std::string(to_string(ch.reason)).c_str(),
                     ch.change == AuditChangeKind::Started ? " that the baseline did not have"
                                                           : " per frame than the baseline");
      }
      status = kFailOn;
    }
  } else {
    const AuditReport& report = current->report;
    std::fputs(
        (o.format == "json" ? format_audit_json(report) : format_audit_table(report)).c_str(),
        stdout);
    for (const AuditRow& r : report.rows) {
      for (ConversionKind k : failing) {
        if (r.kind == k && r.count > 0) {
          std::fprintf(stderr,
                       "neat audit: --fail-on %s: %llu %s conversion(s) (%s) on edge %s, stage "
                       "%s\n",
                       std::string(to_string(k)).c_str(), static_cast<unsigned long long>(r.count),
                       std::string(to_string(k)).c_str(), std::string(to_string(r.reason)).c_str(),
                       r.edge.empty() ? "(none)" : ("'" + r.edge + "'").c_str(),
                       r.stage.empty() ? "(none)" : ("'" + r.stage + "'").c_str());
          status = kFailOn;
        }
      }
    }
  }
  return status != 0 ? status : cut;
}

}  // namespace neat::tools

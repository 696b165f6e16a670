#include "neat/telemetry/audit.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_map>

#include "neat/telemetry/internal/trace_reader.hpp"
#include "neat/telemetry/units.hpp"

namespace neat {

using detail::RecordView;

namespace {

using nlohmann::json;

template <class R>
bool filter_keeps(const AuditFilter& f, const R& r) {
  if (f.since_ns || f.until_ns) {
    if (r.timestamp_ns <= 0) return false;
    if (f.since_ns && r.timestamp_ns < *f.since_ns) return false;
    if (f.until_ns && r.timestamp_ns >= *f.until_ns) return false;
  }
  if (!f.graph.empty() && std::string_view(r.graph) != f.graph) return false;
  if (!f.stage.empty() && std::string_view(r.stage) != f.stage) return false;
  if (!f.edge.empty() && std::string_view(r.edge) != f.edge) return false;
  if (!f.stream.empty() && std::string_view(r.stream) != f.stream) return false;
  return true;
}

// Distinct frame numbers: a bitmap in chunks of 512 frames.
class FrameSet {
 public:
  void insert(std::int64_t f) {
    if (f < 0 || f == last_) return;
    last_ = f;
    const std::int64_t chunk = f >> 9;
    if (chunk != last_chunk_) {
      words_ = &chunks_[chunk];
      last_chunk_ = chunk;
    }
    std::uint64_t& w = (*words_)[static_cast<std::size_t>((f >> 6) & 7)];
    const std::uint64_t bit = std::uint64_t{1} << (f & 63);
    if ((w & bit) == 0) {
      w |= bit;
      ++count_;
    }
  }
  std::int64_t count() const noexcept { return count_; }

 private:
  std::unordered_map<std::int64_t, std::array<std::uint64_t, 8>> chunks_;
  std::array<std::uint64_t, 8>* words_ = nullptr;
  std::int64_t last_chunk_ = -1;
  std::int64_t last_ = -2;
  std::int64_t count_ = 0;
};

std::string human_ns(std::int64_t ns) {
  char buf[32];
  if (ns >= 1000000) {
    std::snprintf(buf, sizeof buf, "%.2f ms", static_cast<double>(ns) / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f us", static_cast<double>(ns) / 1e3);
  }
  return buf;
}

// Keys compared as views, so that finding a row or a call site builds no string.
struct RowKey {
  std::string edge, stage;
  int kind = 0, reason = 0;
  auto tie() const {
    return std::tuple<std::string_view, std::string_view, int, int>(edge, stage, kind, reason);
  }
};
struct SiteKey {
  std::string file, operation, detail;
  std::int64_t line = 0;
  auto tie() const {
    return std::tuple<std::string_view, std::int64_t, std::string_view, std::string_view>(
        file, line, operation, detail);
  }
};
struct ByView {
  using is_transparent = void;
  template <class T>
  static auto v(const T& t) {
    if constexpr (requires { t.tie(); }) {
      return t.tie();
    } else {
      return t;
    }
  }
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    return v(a) < v(b);
  }
};

struct Site {
  std::uint64_t count = 0;
  std::int64_t bytes = 0;
};

struct RowAcc {
  std::uint64_t count = 0, implicit_count = 0;
  std::int64_t bytes = 0, duration_ns = 0;
  FrameSet frames;
  std::map<SiteKey, Site, ByView> sites;
};

std::string site_text(const SiteKey& k) {
  std::string where =
      k.file.empty() ? std::string("(unknown)") : k.file + ":" + std::to_string(k.line);
  if (!k.operation.empty()) where += " (" + k.operation + ")";
  if (!k.detail.empty()) where += " [" + k.detail + "]";
  return where;
}

}  // namespace

bool AuditFilter::keeps(const AuditRecord& r) const noexcept {
  return filter_keeps(*this, r);
}

Result<std::int64_t> parse_audit_time(std::string_view text) {
  const std::string what = "time '" + std::string(text) + "'";
  const std::string forms =
      ": write it as 2026-11-23T18:00:00Z (UTC; fractions and +00:00 allowed) or as "
      "@SECONDS since the epoch";
  if (!text.empty() && text.front() == '@') {
    const std::string digits(text.substr(1));
    char* end = nullptr;
    errno = 0;
    const double s = std::strtod(digits.c_str(), &end);
    if (digits.empty() || end != digits.c_str() + digits.size() || errno != 0 || !(s >= 0) ||
        s > 9.2e9) {
      return invalid_argument(what + forms);
    }
    return static_cast<std::int64_t>(std::llround(s * 1e9));
  }
  std::tm tm{};
  int consumed = 0;
  const std::string s(text);
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
      consumed != 19) {
    return invalid_argument(what + forms);
  }
  std::string_view rest = text.substr(19);
  std::int64_t frac_ns = 0;
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    std::int64_t scale = 100000000;
    std::size_t n = 0;
    while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') {
      frac_ns += (rest[n] - '0') * scale;
      scale /= 10;
      ++n;
    }
    if (n == 0) return invalid_argument(what + forms);
    rest.remove_prefix(n);
  }
  if (rest != "Z" && rest != "+00:00") {
    return invalid_argument(what + ": only UTC times are read (end it with Z or +00:00)");
  }
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 60 || tm.tm_year < 1970) {
    return invalid_argument(what + ": not a valid date and time" + forms);
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const std::time_t t = ::timegm(&tm);
  if (t < 0) return invalid_argument(what + forms);
  return static_cast<std::int64_t>(t) * 1000000000 + frac_ns;
}

struct AuditAggregator::Impl {
  AuditFilter filter;
  std::map<RowKey, RowAcc, ByView> rows;
  RowAcc* last_row = nullptr;
  RowKey last_key;
  // Frame numbers restart with every run and count per stream: a frame is
  // (run, stream, number).
  std::map<std::pair<std::string, std::string>, std::int64_t> runs;
  const std::pair<std::string, std::string>* last_run = nullptr;  // a key of `runs` (stable)
  std::int64_t last_run_id = 0;
  std::uint64_t read = 0, kept = 0, headers = 0;
  std::int64_t bytes = 0, duration_ns = 0;

  void add(const RecordView& r) {
    ++read;
    if (!filter_keeps(filter, r)) return;
    ++kept;
    const auto key = std::tuple<std::string_view, std::string_view, int, int>(
        r.edge, r.stage, static_cast<int>(r.kind), static_cast<int>(r.reason));
    RowAcc* row = last_row;
    if (row == nullptr || last_key.tie() != key) {
      auto it = rows.find(key);
      if (it == rows.end()) {
        it = rows.emplace(RowKey{std::string(r.edge), std::string(r.stage),
                                 static_cast<int>(r.kind), static_cast<int>(r.reason)},
                          RowAcc{})
                 .first;
      }
      row = &it->second;
      last_row = row;
      last_key = it->first;
    }
    row->count += 1;
    row->implicit_count += r.explicit_call ? 0 : 1;
    row->bytes += r.bytes;
    row->duration_ns += r.duration_ns;
    if (r.frame >= 0) {
      if (last_run == nullptr || r.run != last_run->first || r.stream != last_run->second) {
        auto it =
            runs.find(std::pair(std::string(r.run), std::string(r.stream)));  // on a change only
        if (it == runs.end()) {
          it = runs.emplace(std::pair(std::string(r.run), std::string(r.stream)),
                            static_cast<std::int64_t>(runs.size()))
                   .first;
        }
        last_run = &it->first;
        last_run_id = it->second;
      }
      constexpr std::int64_t kFrameBits = 40;
      row->frames.insert((last_run_id << kFrameBits) |
                         (r.frame & ((std::int64_t{1} << kFrameBits) - 1)));
    }
    const auto site =
        std::tuple<std::string_view, std::int64_t, std::string_view, std::string_view>(
            r.file, r.line, r.operation, r.detail);
    auto s = row->sites.find(site);
    if (s == row->sites.end()) {
      s = row->sites
              .emplace(SiteKey{std::string(r.file), std::string(r.operation), std::string(r.detail),
                               r.line},
                       Site{})
              .first;
    }
    s->second.count += 1;
    s->second.bytes += r.bytes;
    bytes += r.bytes;
    duration_ns += r.duration_ns;
  }

  // Frame records: latency per (graph, sink); the graph, stream and time filters apply.
  std::map<std::pair<std::string, std::string>, std::unique_ptr<DurationRecorder>> latency;
  void add_frame(const RecordView& r) {
    if (filter.since_ns || filter.until_ns) {
      if (r.timestamp_ns <= 0) return;
      if (filter.since_ns && r.timestamp_ns < *filter.since_ns) return;
      if (filter.until_ns && r.timestamp_ns >= *filter.until_ns) return;
    }
    if (!filter.graph.empty() && r.graph != filter.graph) return;
    if (!filter.stream.empty() && r.stream != filter.stream) return;
    auto& h = latency[{std::string(r.graph), std::string(r.sink)}];
    if (!h) h = std::make_unique<DurationRecorder>();
    h->add(r.latency_ns);
  }

  // Each run's progress over every file read (a rotated set: its parts).
  std::map<std::string, std::pair<detail::RunProgress, std::string>> progress;

  Status read_stream(std::istream& in, std::string_view name) {
    detail::ScanCounts counts;
    const detail::OnRecord on_frame = [this](const RecordView& r) { add_frame(r); };
    Status st = detail::scan_trace(
        in, name, [this](const RecordView& r) { add(r); }, counts, &on_frame);
    headers += counts.headers;
    for (const detail::RunProgress& r : counts.runs) {
      auto [it, fresh] = progress.try_emplace(r.run, r, std::string(name));
      if (fresh) continue;
      detail::RunProgress& p = it->second.first;
      p.version = std::max(p.version, r.version);
      p.ended = p.ended || r.ended;
      if (r.first_ts_ns > 0 && (p.first_ts_ns == 0 || r.first_ts_ns < p.first_ts_ns))
        p.first_ts_ns = r.first_ts_ns;
      if (r.last_ts_ns > p.last_ts_ns) {  // the later part: where the cut is
        p.last_ts_ns = r.last_ts_ns;
        p.cut_line = r.cut_line;
        it->second.second = std::string(name);
      }
      p.last_frame = std::max(p.last_frame, r.last_frame);
      p.events += r.events;
      p.frames += r.frames;
    }
    return st;
  }
};

AuditAggregator::AuditAggregator(AuditFilter filter) : impl_(std::make_unique<Impl>()) {
  impl_->filter = std::move(filter);
}
AuditAggregator::AuditAggregator(AuditAggregator&&) noexcept = default;
AuditAggregator& AuditAggregator::operator=(AuditAggregator&&) noexcept = default;
AuditAggregator::~AuditAggregator() = default;

Status AuditAggregator::read(std::istream& in, std::string_view name) {
  return impl_->read_stream(in, name);
}

Status AuditAggregator::read_file(const std::string& path) {
  NEAT_RETURN_IF_ERROR(detail::check_trace_path(path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return failed_precondition("cannot open trace '" + path + "': " + std::strerror(errno));
  return impl_->read_stream(in, path);
}

void AuditAggregator::add(const AuditRecord& record) {
  impl_->add(detail::view_of(record));
}

std::uint64_t AuditAggregator::events_read() const noexcept {
  return impl_->read;
}
std::uint64_t AuditAggregator::events_kept() const noexcept {
  return impl_->kept;
}
std::uint64_t AuditAggregator::headers_read() const noexcept {
  return impl_->headers;
}

AuditReport AuditAggregator::report(int top_sites) const {
  AuditReport report;
  report.conversions = impl_->kept;
  report.bytes = impl_->bytes;
  report.duration_ns = impl_->duration_ns;
  for (const auto& [key, a] : impl_->rows) {
    AuditRow row;
    row.edge = key.edge;
    row.stage = key.stage;
    row.kind = static_cast<ConversionKind>(key.kind);
    row.reason = static_cast<ConversionReason>(key.reason);
    row.count = a.count;
    row.implicit_count = a.implicit_count;
    row.bytes = a.bytes;
    row.duration_ns = a.duration_ns;
    row.frames = a.frames.count();
    row.bytes_per_frame =
        row.frames ? static_cast<double>(row.bytes) / static_cast<double>(row.frames) : 0.0;
    for (const auto& [k, s] : a.sites)
      row.top_sites.push_back({site_text(k), s.count, s.bytes});
    std::sort(row.top_sites.begin(), row.top_sites.end(),
              [](const AuditCallSite& x, const AuditCallSite& y) {
                return x.count != y.count ? x.count > y.count : x.where < y.where;
              });
    if (static_cast<int>(row.top_sites.size()) > top_sites)
      row.top_sites.resize(static_cast<std::size_t>(std::max(top_sites, 0)));
    report.rows.push_back(std::move(row));
  }
  std::sort(report.rows.begin(), report.rows.end(), [](const AuditRow& x, const AuditRow& y) {
    return x.bytes != y.bytes ? x.bytes > y.bytes : x.count > y.count;
  });
  for (const auto& [key, h] : impl_->latency)
    report.latency.push_back({key.first, key.second, h->summary()});
  for (const auto& [run, p] : impl_->progress) {
    const detail::RunProgress& r = p.first;
    if (r.version < 2 || r.ended) continue;
    report.cut_short.push_back(AuditCutShort{run, p.second, r.first_ts_ns, r.last_ts_ns,
                                             r.last_frame, r.events, r.frames, r.cut_line});
  }
  return report;
}

std::string AuditCutShort::to_string() const {
  std::string out = "the trace of run " + run + " (" + file +
                    ") is cut short: it has no closing record (a crash, kill -9, a full disk, or "
                    "a run still going)";
  char buf[160];
  if (last_ns > 0) {
    const std::time_t t = static_cast<std::time_t>(last_ns / 1000000000);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    std::snprintf(buf, sizeof buf, "; it got to %04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                  tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>((last_ns / 1000000) % 1000));
    out += buf;
    if (started_ns > 0 && last_ns >= started_ns) {
      std::snprintf(buf, sizeof buf, ", %.1f s after its start",
                    static_cast<double>(last_ns - started_ns) * 1e-9);
      out += buf;
    }
  } else {
    out += "; no record after its header";
  }
  if (last_frame >= 0) out += ", frame " + std::to_string(last_frame);
  out += ", " + std::to_string(events) + " conversion event(s) and " + std::to_string(frames) +
         " frame record(s) read";
  if (cut_line) out += " (its last line is incomplete)";
  return out;
}

AuditReport audit(const std::vector<AuditRecord>& records, int top_sites) {
  AuditAggregator a;
  for (const AuditRecord& r : records)
    a.add(r);
  return a.report(top_sites);
}

// ---- comparison ----------------------------------------------------------------

std::string_view to_string(AuditChangeKind k) noexcept {
  switch (k) {
    case AuditChangeKind::Started:
      return "started";
    case AuditChangeKind::More:
      return "more";
    case AuditChangeKind::Less:
      return "less";
    case AuditChangeKind::Stopped:
      return "stopped";
    case AuditChangeKind::Same:
      return "same";
  }
  return "?";
}

bool AuditComparison::regressed() const noexcept {
  return std::any_of(changes.begin(), changes.end(), [](const AuditChange& c) {
    return c.change == AuditChangeKind::Started || c.change == AuditChangeKind::More;
  });
}

AuditComparison compare_audits(const AuditReport& baseline, const AuditReport& current,
                               double tolerance) {
  using Key = std::tuple<std::string, std::string, int, int>;
  auto key = [](const AuditRow& r) {
    return Key{r.edge, r.stage, static_cast<int>(r.kind), static_cast<int>(r.reason)};
  };
  std::map<Key, std::pair<const AuditRow*, const AuditRow*>> both;
  for (const AuditRow& r : baseline.rows)
    both[key(r)].first = &r;
  for (const AuditRow& r : current.rows)
    both[key(r)].second = &r;
  // Bytes per frame when the events carry frame numbers, else per conversion.
  auto measure = [](const AuditRow* r, bool per_frame) -> double {
    if (r == nullptr) return 0;
    if (per_frame) return r->bytes_per_frame;
    return r->count ? static_cast<double>(r->bytes) / static_cast<double>(r->count) : 0.0;
  };
  AuditComparison out;
  for (const auto& [k, rows] : both) {
    const auto [before, after] = rows;
    const AuditRow& any = before ? *before : *after;
    AuditChange c;
    c.edge = any.edge;
    c.stage = any.stage;
    c.kind = any.kind;
    c.reason = any.reason;
    c.per_frame =
        (before == nullptr || before->frames > 0) && (after == nullptr || after->frames > 0);
    c.before = measure(before, c.per_frame);
    c.after = measure(after, c.per_frame);
    c.before_count = before ? before->count : 0;
    c.after_count = after ? after->count : 0;
    if (before == nullptr) {
      c.change = AuditChangeKind::Started;
    } else if (after == nullptr) {
      c.change = AuditChangeKind::Stopped;
    } else if (c.after > c.before * (1 + tolerance)) {
      c.change = AuditChangeKind::More;
    } else if (c.after < c.before * (1 - tolerance)) {
      c.change = AuditChangeKind::Less;
    } else {
      c.change = AuditChangeKind::Same;
    }
    out.changes.push_back(std::move(c));
  }
  std::stable_sort(out.changes.begin(), out.changes.end(),
                   [](const AuditChange& a, const AuditChange& b) {
                     if (a.change != b.change) return a.change < b.change;
                     return (a.after - a.before) > (b.after - b.before);
                   });
  return out;
}

std::string format_audit_comparison(const AuditComparison& comparison) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-8s %-24s %-16s %-9s %-17s %14s %14s\n", "CHANGE", "EDGE",
                "STAGE", "KIND", "REASON", "BEFORE", "AFTER");
  out += buf;
  for (const AuditChange& c : comparison.changes) {
    const std::string unit = c.per_frame ? "/frame" : "/conv";
    auto side = [&](double v, std::uint64_t count) {
      return count == 0 ? std::string("-") : bytes_text(v) + unit;
    };
    std::snprintf(buf, sizeof buf, "%-8s %-24s %-16s %-9s %-17s %14s %14s\n",
                  std::string(to_string(c.change)).c_str(),
                  (c.edge.empty() ? std::string("(none)") : c.edge).c_str(),
                  (c.stage.empty() ? std::string("(none)") : c.stage).c_str(),
                  std::string(to_string(c.kind)).c_str(), std::string(to_string(c.reason)).c_str(),
                  side(c.before, c.before_count).c_str(), side(c.after, c.after_count).c_str());
    out += buf;
  }
  std::size_t started = 0, more = 0;
  for (const AuditChange& c : comparison.changes) {
    started += c.change == AuditChangeKind::Started;
    more += c.change == AuditChangeKind::More;
  }
  std::snprintf(buf, sizeof buf, "%zu row(s) started copying, %zu copy more%s\n", started, more,
                comparison.regressed() ? " (regression)" : "");
  out += buf;
  return out;
}

std::string format_audit_comparison_json(const AuditComparison& comparison) {
  json j;
  j["regressed"] = comparison.regressed();
  j["changes"] = json::array();
  for (const AuditChange& c : comparison.changes) {
    j["changes"].push_back({{"change", std::string(to_string(c.change))},
                            {"edge", c.edge},
                            {"stage", c.stage},
                            {"kind", std::string(to_string(c.kind))},
                            {"reason", std::string(to_string(c.reason))},
                            {"per_frame", c.per_frame},
                            {"before", c.before},
                            {"after", c.after},
                            {"before_count", c.before_count},
                            {"after_count", c.after_count}});
  }
  return j.dump(2) + "\n";
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
        bytes_text(static_cast<double>(r.bytes)).c_str(),
        r.frames ? bytes_text(r.bytes_per_frame).c_str() : "-", human_ns(r.duration_ns).c_str());
    out += buf;
    for (const AuditCallSite& s : r.top_sites) {
      std::snprintf(buf, sizeof buf, "    %6llux %10s  %s\n",
                    static_cast<unsigned long long>(s.count),
                    bytes_text(static_cast<double>(s.bytes)).c_str(), s.where.c_str());
      out += buf;
    }
  }
  std::snprintf(buf, sizeof buf, "total: %llu conversions, %s, %s\n",
                static_cast<unsigned long long>(report.conversions),
                bytes_text(static_cast<double>(report.bytes)).c_str(),
                human_ns(report.duration_ns).c_str());
  out += buf;
  if (!report.latency.empty()) {
    std::snprintf(buf, sizeof buf, "%-16s %-16s %8s %9s %9s %9s %9s\n", "GRAPH", "SINK", "FRAMES",
                  "p50 ms", "p95 ms", "p99 ms", "max ms");
    out += "latency, capture -> sink:\n";
    out += buf;
    for (const AuditLatency& l : report.latency) {
      std::snprintf(buf, sizeof buf, "%-16s %-16s %8llu %9.2f %9.2f %9.2f %9.2f\n", l.graph.c_str(),
                    l.sink.c_str(), static_cast<unsigned long long>(l.latency.count),
                    l.latency.p50 * 1e3, l.latency.p95 * 1e3, l.latency.p99 * 1e3,
                    l.latency.max * 1e3);
      out += buf;
    }
  }
  for (const AuditCutShort& c : report.cut_short)
    out += c.to_string() + "\n";
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
  j["latency"] = json::array();
  for (const AuditLatency& l : report.latency) {
    j["latency"].push_back({{"graph", l.graph},
                            {"sink", l.sink},
                            {"frames", l.latency.count},
                            {"p50_s", l.latency.p50},
                            {"p95_s", l.latency.p95},
                            {"p99_s", l.latency.p99},
                            {"max_s", l.latency.max},
                            {"mean_s", l.latency.mean}});
  }
  j["cut_short"] = json::array();
  for (const AuditCutShort& c : report.cut_short) {
    j["cut_short"].push_back({{"run", c.run},
                              {"file", c.file},
                              {"started_ns", c.started_ns},
                              {"last_ns", c.last_ns},
                              {"last_frame", c.last_frame},
                              {"events", c.events},
                              {"frames", c.frames},
                              {"cut_line", c.cut_line}});
  }
  return j.dump(2) + "\n";
}

}  // namespace neat

#include "neat/telemetry/metrics.hpp"

#include <algorithm>
#include <cstdio>

#include "neat/telemetry/prometheus.hpp"
#include "neat/telemetry/units.hpp"

namespace neat {

using prometheus::label_value;
using prometheus::number;

template <class Map>
typename Map::mapped_type& LabeledMetrics::slot(Map& map, const KeyView& k) {
  auto it = map.find(k);  // transparent: no strings built
  if (it == map.end()) {
    it = map.emplace(Key{k.kind, k.reason, k.policy, k.explicit_call, std::string(k.stage),
                         std::string(k.edge), std::string(k.stream)},
                     typename Map::mapped_type{})
             .first;
  }
  return it->second;
}

void LabeledMetrics::record(ConversionKind kind, ConversionReason reason, ConversionPolicy policy,
                            bool explicit_call, std::string_view stage, std::string_view edge,
                            std::string_view stream, std::int64_t bytes, std::int64_t duration_ns) {
  const double seconds = static_cast<double>(duration_ns) * 1e-9;
  std::lock_guard lock(mutex_);
  Cell& c = slot(cells_, KeyView{kind, reason, policy, explicit_call, stage, edge, stream});
  c.count += 1;
  c.bytes += static_cast<std::uint64_t>(bytes);
  c.seconds += seconds;
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) {
      c.buckets[i] += 1;
      break;
    }
  }
}

void LabeledMetrics::record_refused(ConversionKind kind, ConversionReason reason,
                                    std::string_view stage, std::string_view edge,
                                    std::string_view stream) {
  std::lock_guard lock(mutex_);
  slot(refused_, KeyView{kind, reason, ConversionPolicy::Strict, false, stage, edge, stream}) += 1;
}

void LabeledMetrics::clear() {
  std::lock_guard lock(mutex_);
  cells_.clear();
  refused_.clear();
}

std::string LabeledMetrics::prometheus_text() const {
  std::lock_guard lock(mutex_);
  std::string out;
  auto labels = [&](const Key& k, bool with_policy) {
    out += "{kind=";
    label_value(out, to_string(k.kind));
    out += ",reason=";
    label_value(out, to_string(k.reason));
    if (with_policy) {
      out += ",policy=";
      label_value(out, to_string(k.policy));
      out += ",explicit=";
      label_value(out, k.explicit_call ? "true" : "false");
    }
    out += ",stage=";
    label_value(out, k.stage);
    out += ",edge=";
    label_value(out, k.edge);
    if (!k.stream.empty()) {
      out += ",stream=";
      label_value(out, k.stream);
    }
  };
  out +=
      "# HELP neat_conversions_total Conversions that ran (pack, convert, transfer), by kind, "
      "reason, policy, stage, edge and stream.\n";
  out += "# TYPE neat_conversions_total counter\n";
  for (const auto& [k, c] : cells_) {
    out += "neat_conversions_total";
    labels(k, true);
    out += "} " + std::to_string(c.count) + "\n";
  }
  out += "# HELP neat_conversion_bytes_total Bytes written by conversions that ran.\n";
  out += "# TYPE neat_conversion_bytes_total counter\n";
  for (const auto& [k, c] : cells_) {
    out += "neat_conversion_bytes_total";
    labels(k, true);
    out += "} " + std::to_string(c.bytes) + "\n";
  }
  out += "# HELP neat_conversion_duration_seconds Time spent in conversions.\n";
  out += "# TYPE neat_conversion_duration_seconds histogram\n";
  for (const auto& [k, c] : cells_) {
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i <= kBuckets.size(); ++i) {
      if (i < kBuckets.size()) cumulative += c.buckets[i];
      out += "neat_conversion_duration_seconds_bucket";
      labels(k, true);
      out += ",le=";
      label_value(out, i < kBuckets.size() ? number(kBuckets[i]) : "+Inf");
      out += "} " + std::to_string(i < kBuckets.size() ? cumulative : c.count) + "\n";
    }
    out += "neat_conversion_duration_seconds_sum";
    labels(k, true);
    out += "} " + number(c.seconds) + "\n";
    out += "neat_conversion_duration_seconds_count";
    labels(k, true);
    out += "} " + std::to_string(c.count) + "\n";
  }
  out +=
      "# HELP neat_conversions_refused_total Implicit conversions refused (Strict policy, budgets, "
      "steady-state rules).\n";
  out += "# TYPE neat_conversions_refused_total counter\n";
  for (const auto& [k, n] : refused_) {
    out += "neat_conversions_refused_total";
    labels(k, false);
    out += "} " + std::to_string(n) + "\n";
  }
  return out;
}

LabeledMetrics& labeled_metrics() noexcept {
  static LabeledMetrics m;
  return m;
}

std::string prometheus_text() {
  return labeled_metrics().prometheus_text();
}

MetricsSnapshot LabeledMetrics::snapshot() const {
  MetricsSnapshot s;
  std::lock_guard lock(mutex_);
  s.rows.reserve(cells_.size() + refused_.size());
  for (const auto& [k, c] : cells_) {
    s.rows.push_back(MetricsRow{k.kind, k.reason, k.policy, k.explicit_call, k.stage, k.edge,
                                c.count, c.bytes, c.seconds, 0, k.stream});
  }
  for (const auto& [k, n] : refused_) {
    MetricsRow r{k.kind, k.reason, k.policy, k.explicit_call, k.stage, k.edge, 0,
                 0,      0,        n,        k.stream};
    s.rows.push_back(std::move(r));
  }
  return s;
}

namespace {
auto row_key(const MetricsRow& r) {
  return std::tie(r.edge, r.stage, r.stream, r.kind, r.reason, r.explicit_call, r.policy);
}
}  // namespace

MetricsSnapshot MetricsSnapshot::since(const MetricsSnapshot& earlier) const {
  MetricsSnapshot out;
  for (const MetricsRow& r : rows) {
    MetricsRow d = r;
    for (const MetricsRow& e : earlier.rows) {
      if (row_key(e) == row_key(r) && (e.refused > 0) == (r.refused > 0)) {
        d.count -= std::min(d.count, e.count);
        d.bytes -= std::min(d.bytes, e.bytes);
        d.seconds -= e.seconds;
        d.refused -= std::min(d.refused, e.refused);
      }
    }
    if (d.count > 0 || d.refused > 0) out.rows.push_back(std::move(d));
  }
  std::sort(out.rows.begin(), out.rows.end(),
            [](const MetricsRow& a, const MetricsRow& b) { return row_key(a) < row_key(b); });
  return out;
}

std::uint64_t MetricsSnapshot::conversions() const noexcept {
  std::uint64_t n = 0;
  for (const MetricsRow& r : rows)
    n += r.count;
  return n;
}

std::uint64_t MetricsSnapshot::bytes() const noexcept {
  std::uint64_t n = 0;
  for (const MetricsRow& r : rows)
    n += r.bytes;
  return n;
}

std::string format_metrics_table(const MetricsSnapshot& snapshot) {
  // The STREAM column appears when a graph's streams were converted: with
  // several cameras into one stage, one edge and stage carry rows per stream.
  const bool streams = std::any_of(snapshot.rows.begin(), snapshot.rows.end(),
                                   [](const MetricsRow& r) { return !r.stream.empty(); });
  auto stream_cell = [&](std::string_view stream) {
    if (!streams) return std::string();
    std::string cell(stream.empty() ? "(none)" : stream);
    cell.resize(std::max<std::size_t>(cell.size(), 12), ' ');
    return cell + " ";
  };
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-24s %-16s %s%-8s %-9s %-17s %-16s %7s %11s %11s\n", "EDGE",
                "STAGE", stream_cell("STREAM").c_str(), "WHO", "KIND", "REASON", "POLICY", "COUNT",
                "BYTES", "EACH");
  out += buf;
  for (const MetricsRow& r : snapshot.rows) {
    const std::string edge = r.edge.empty() ? "(none)" : r.edge;
    const std::string stage = r.stage.empty() ? "(none)" : r.stage;
    const bool refused = r.refused > 0;
    std::snprintf(
        buf, sizeof buf, "%-24s %-16s %s%-8s %-9s %-17s %-16s %7llu %11s %11s\n", edge.c_str(),
        stage.c_str(), stream_cell(r.stream).c_str(), r.explicit_call ? "explicit" : "implicit",
        std::string(to_string(r.kind)).c_str(), std::string(to_string(r.reason)).c_str(),
        refused ? "REFUSED" : std::string(to_string(r.policy)).c_str(),
        static_cast<unsigned long long>(refused ? r.refused : r.count),
        refused ? "-" : bytes_text(static_cast<double>(r.bytes)).c_str(),
        refused || r.count == 0
            ? "-"
            : bytes_text(static_cast<double>(r.bytes) / static_cast<double>(r.count)).c_str());
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "total: %llu conversions, %llu bytes (%s)\n",
                static_cast<unsigned long long>(snapshot.conversions()),
                static_cast<unsigned long long>(snapshot.bytes()),
                bytes_text(static_cast<double>(snapshot.bytes())).c_str());
  out += buf;
  return out;
}

}  // namespace neat

// Labeled conversion metrics and their Prometheus text exposition:
//   neat_conversions_total{kind, reason, policy, explicit, stage, edge, stream}
//   neat_conversion_bytes_total{...}
//   neat_conversion_duration_seconds (histogram){...}
//   neat_conversions_refused_total{kind, reason, stage, edge, stream}
// `stream` is the frame's stream (FrameMeta::stream, a source of the graph);
// the label is left out where no frame of a stream was being worked on.
// The copy gate updates them for every conversion that runs (under every
// policy, AllowSilent included) and for every refusal.
//
// Threading: thread-safe; one mutex, taken once per conversion (never on a
// path where nothing converts).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "neat/contract/conversion.hpp"

namespace neat {

/// One label set of the conversion metrics, read back in-process.
struct MetricsRow {
  ConversionKind kind = ConversionKind::Pack;
  ConversionReason reason = ConversionReason::UserRequest;
  ConversionPolicy policy = ConversionPolicy::Strict;
  bool explicit_call = true;
  std::string stage, edge;
  std::uint64_t count = 0;  ///< conversions that ran
  std::uint64_t bytes = 0;  ///< bytes they wrote
  double seconds = 0;
  std::uint64_t refused = 0;  ///< refusals (policy, budgets) with these labels
  std::string stream;         ///< the frame's stream; empty outside a graph's streams
};

/// Every conversion the metrics have counted, whatever the policy (silent ones
/// included), as rows sorted by edge, stage, stream, kind, reason. `since` removes an
/// earlier snapshot (rows that did not change are dropped): what happened in between.
struct MetricsSnapshot {
  std::vector<MetricsRow> rows;
  MetricsSnapshot since(const MetricsSnapshot& earlier) const;
  std::uint64_t conversions() const noexcept;
  std::uint64_t bytes() const noexcept;
};

/// The end-of-run accounting table: per edge and stage (and stream, a column
/// shown when some row has one), every conversion with
/// explicit/implicit, kind, reason, the policy it ran under, count, bytes and
/// bytes per conversion, then a total line "total: N conversions, B bytes".
std::string format_metrics_table(const MetricsSnapshot& snapshot);

class LabeledMetrics {
 public:
  /// Histogram bucket upper bounds, seconds.
  static constexpr std::array<double, 8> kBuckets = {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0};

  void record(ConversionKind kind, ConversionReason reason, ConversionPolicy policy,
              bool explicit_call, std::string_view stage, std::string_view edge,
              std::string_view stream, std::int64_t bytes, std::int64_t duration_ns);
  void record_refused(ConversionKind kind, ConversionReason reason, std::string_view stage,
                      std::string_view edge, std::string_view stream);
  /// The Prometheus text exposition format (version 0.0.4).
  std::string prometheus_text() const;
  /// Every label set counted so far (refusals have policy Strict, explicit false).
  MetricsSnapshot snapshot() const;
  void clear();

 private:
  // Lookups use KeyView (no allocation); a Key with owned strings is built
  // only when a label set is seen for the first time.
  struct KeyView {
    ConversionKind kind;
    ConversionReason reason;
    ConversionPolicy policy;
    bool explicit_call;
    std::string_view stage, edge, stream;
    auto tie() const { return std::tie(kind, reason, policy, explicit_call, stage, edge, stream); }
  };
  struct Key {
    ConversionKind kind;
    ConversionReason reason;
    ConversionPolicy policy;
    bool explicit_call;
    std::string stage, edge, stream;
    KeyView view() const { return {kind, reason, policy, explicit_call, stage, edge, stream}; }
  };
  struct Less {
    using is_transparent = void;
    static KeyView v(const Key& k) { return k.view(); }
    static const KeyView& v(const KeyView& k) { return k; }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return v(a).tie() < v(b).tie();
    }
  };
  template <class Map>
  static typename Map::mapped_type& slot(Map& map, const KeyView& k);
  struct Cell {
    std::uint64_t count = 0, bytes = 0;
    double seconds = 0;
    std::array<std::uint64_t, kBuckets.size()> buckets{};  // cumulative at exposition
  };
  mutable std::mutex mutex_;
  std::map<Key, Cell, Less> cells_;
  std::map<Key, std::uint64_t, Less> refused_;
};

/// The process-wide metrics the copy gate updates.
LabeledMetrics& labeled_metrics() noexcept;
/// labeled_metrics().prometheus_text().
std::string prometheus_text();

}  // namespace neat

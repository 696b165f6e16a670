// Durations as percentiles: DurationRecorder counts durations in log
// buckets (16 per octave) with relaxed atomics, so one thread records (no
// lock, no allocation) while any other reads a DurationSummary (p50, p95,
// p99, max, mean). Used by the stage graphs (time per stage, queue waits,
// capture-to-sink latency) and by the audit (latency read back from traces).
//
// Threading: add() from one or more threads, summary() from any.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>

namespace neat {

/// Percentiles of a duration, from a log-bucketed histogram (16 buckets per
/// octave: a percentile is within 3.1% of the exact value; max is exact).
struct DurationSummary {
  std::uint64_t count = 0;
  double p50 = 0, p95 = 0, p99 = 0, max = 0, mean = 0;  ///< seconds
  /// "p50 1.20 ms  p95 2.00 ms  p99 3.10 ms  max 5.20 ms".
  std::string to_string() const;
};

// Durations in log buckets, 16 per octave (a bucket is 1/16 of its octave
// wide, so its midpoint is within 3.1% of any value in it), from 1 ns to
// 2^40 ns (18 minutes; longer ones land in the last bucket; max is exact).
// Relaxed atomics: one writer thread, readers anywhere; no lock, no allocation.
class DurationRecorder {
 public:
  static constexpr int kSub = 16;
  static constexpr int kMaxOctave = 40;
  static constexpr std::size_t kBuckets = kSub + (kMaxOctave - 4 + 1) * kSub;

  void add(std::int64_t ns) {
    const auto v = static_cast<std::uint64_t>(std::max<std::int64_t>(ns, 0));
    buckets_[index(v)].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
    std::uint64_t m = max_.load(std::memory_order_relaxed);
    while (v > m && !max_.compare_exchange_weak(m, v, std::memory_order_relaxed)) {
    }
  }
  DurationSummary summary() const {
    DurationSummary s;
    std::array<std::uint64_t, kBuckets> b{};
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
      b[i] = buckets_[i].load(std::memory_order_relaxed);
      n += b[i];
    }
    s.count = n;
    if (n == 0) return s;
    s.max = static_cast<double>(max_.load(std::memory_order_relaxed)) * 1e-9;
    s.mean = static_cast<double>(sum_.load(std::memory_order_relaxed)) * 1e-9 /
             static_cast<double>(std::max<std::uint64_t>(count_.load(), 1));
    auto at = [&](double q) {
      const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(n)));
      std::uint64_t seen = 0;
      for (std::size_t i = 0; i < kBuckets; ++i) {
        seen += b[i];
        if (seen >= std::max<std::uint64_t>(rank, 1)) return std::min(midpoint(i) * 1e-9, s.max);
      }
      return s.max;
    };
    s.p50 = at(0.50);
    s.p95 = at(0.95);
    s.p99 = at(0.99);
    return s;
  }

 private:
  static std::size_t index(std::uint64_t v) {
    if (v < kSub) return static_cast<std::size_t>(v);
    const int octave = std::min(63 - __builtin_clzll(v), kMaxOctave);
    const auto sub =
        octave == kMaxOctave && (v >> kMaxOctave) > 1 ? kSub - 1 : (v >> (octave - 4)) & (kSub - 1);
    return static_cast<std::size_t>(kSub + (octave - 4) * kSub) + static_cast<std::size_t>(sub);
  }
  static double midpoint(std::size_t i) {
    if (i < kSub) return static_cast<double>(i);
    const int octave = static_cast<int>((i - kSub) / kSub) + 4;
    const double width = std::ldexp(1.0, octave - 4);
    return std::ldexp(1.0, octave) + (static_cast<double>((i - kSub) % kSub) + 0.5) * width;
  }

  std::array<std::atomic<std::uint64_t>, kBuckets> buckets_{};
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> sum_{0};
  std::atomic<std::uint64_t> max_{0};
};

}  // namespace neat

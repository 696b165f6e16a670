// Conversion counters: lock-free, per kind x reason x (explicit | implicit),
// counting conversions, bytes and time, plus implicit conversions refused by
// the Strict policy. Read with conversion_counters().snapshot().
//
// Threading: add() and snapshot() are thread-safe and lock-free (relaxed
// atomics: a snapshot taken while others record may mix before/after values
// of different cells, never tear a cell).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "neat/contract/conversion.hpp"

namespace neat {

struct CounterCell {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  std::uint64_t duration_ns = 0;
  std::uint64_t refused = 0;  ///< implicit conversions refused (not performed)
};

class CountersSnapshot {
 public:
  const CounterCell& at(ConversionKind k, ConversionReason r, bool explicit_call) const noexcept {
    return cells_[index(k, r, explicit_call)];
  }
  /// Sums over reasons and explicit/implicit.
  CounterCell total(ConversionKind k) const noexcept;
  /// Sums over everything.
  CounterCell total() const noexcept;
  /// Difference `*this - before`, for measuring one piece of work.
  CountersSnapshot since(const CountersSnapshot& before) const noexcept;

  static constexpr std::size_t index(ConversionKind k, ConversionReason r, bool e) noexcept {
    return (static_cast<std::size_t>(k) * kConversionReasonCount + static_cast<std::size_t>(r)) *
               2 +
           (e ? 1 : 0);
  }
  static constexpr std::size_t kCells =
      static_cast<std::size_t>(kConversionKindCount) * kConversionReasonCount * 2;

 private:
  friend class ConversionCounters;
  std::array<CounterCell, kCells> cells_{};
};

class ConversionCounters {
 public:
  void add(ConversionKind k, ConversionReason r, bool explicit_call, std::int64_t bytes,
           std::int64_t duration_ns) noexcept;
  void add_refused(ConversionKind k, ConversionReason r) noexcept;
  CountersSnapshot snapshot() const noexcept;

 private:
  struct AtomicCell {
    std::atomic<std::uint64_t> count{0}, bytes{0}, duration_ns{0}, refused{0};
  };
  std::array<AtomicCell, CountersSnapshot::kCells> cells_{};
};

/// The process-wide counters the copy gate updates.
ConversionCounters& conversion_counters() noexcept;

}  // namespace neat

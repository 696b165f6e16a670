#include "neat/telemetry/counters.hpp"

namespace neat {

namespace {
void accumulate(CounterCell& into, const CounterCell& c) noexcept {
  into.count += c.count;
  into.bytes += c.bytes;
  into.duration_ns += c.duration_ns;
  into.refused += c.refused;
}
}  // namespace

CounterCell CountersSnapshot::total(ConversionKind k) const noexcept {
  CounterCell sum;
  for (int r = 0; r < kConversionReasonCount; ++r) {
    for (bool e : {false, true})
      accumulate(sum, at(k, static_cast<ConversionReason>(r), e));
  }
  return sum;
}

CounterCell CountersSnapshot::total() const noexcept {
  CounterCell sum;
  for (const CounterCell& c : cells_)
    accumulate(sum, c);
  return sum;
}

CountersSnapshot CountersSnapshot::since(const CountersSnapshot& before) const noexcept {
  CountersSnapshot d;
  for (std::size_t i = 0; i < kCells; ++i) {
    d.cells_[i].count = cells_[i].count - before.cells_[i].count;
    d.cells_[i].bytes = cells_[i].bytes - before.cells_[i].bytes;
    d.cells_[i].duration_ns = cells_[i].duration_ns - before.cells_[i].duration_ns;
    d.cells_[i].refused = cells_[i].refused - before.cells_[i].refused;
  }
  return d;
}

void ConversionCounters::add(ConversionKind k, ConversionReason r, bool explicit_call,
                             std::int64_t bytes, std::int64_t duration_ns) noexcept {
  AtomicCell& c = cells_[CountersSnapshot::index(k, r, explicit_call)];
  c.count.fetch_add(1, std::memory_order_relaxed);
  c.bytes.fetch_add(static_cast<std::uint64_t>(bytes), std::memory_order_relaxed);
  c.duration_ns.fetch_add(static_cast<std::uint64_t>(duration_ns), std::memory_order_relaxed);
}

void ConversionCounters::add_refused(ConversionKind k, ConversionReason r) noexcept {
  cells_[CountersSnapshot::index(k, r, false)].refused.fetch_add(1, std::memory_order_relaxed);
}

CountersSnapshot ConversionCounters::snapshot() const noexcept {
  CountersSnapshot s;
  for (std::size_t i = 0; i < CountersSnapshot::kCells; ++i) {
    s.cells_[i].count = cells_[i].count.load(std::memory_order_relaxed);
    s.cells_[i].bytes = cells_[i].bytes.load(std::memory_order_relaxed);
    s.cells_[i].duration_ns = cells_[i].duration_ns.load(std::memory_order_relaxed);
    s.cells_[i].refused = cells_[i].refused.load(std::memory_order_relaxed);
  }
  return s;
}

ConversionCounters& conversion_counters() noexcept {
  static ConversionCounters counters;
  return counters;
}

}  // namespace neat

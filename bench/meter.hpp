// Meter: reports allocations/op (process-wide, through alloc_counter) and
// bytes copied/op (through the copy gate's counters) for one benchmark run.
#pragma once

#include <benchmark/benchmark.h>

#include <neat/neat.hpp>

#include "alloc_counter.hpp"

namespace neat::bench {

class Meter {
 public:
  explicit Meter(benchmark::State& s)
      : state_(s), allocs_(allocation_count()), copies_(conversion_counters().snapshot()) {}
  ~Meter() {
    const auto d = conversion_counters().snapshot().since(copies_);
    state_.counters["allocs/op"] = benchmark::Counter(
        static_cast<double>(allocation_count() - allocs_), benchmark::Counter::kAvgIterations);
    state_.counters["copied_B/op"] = benchmark::Counter(static_cast<double>(d.total().bytes),
                                                        benchmark::Counter::kAvgIterations);
  }
  Meter(const Meter&) = delete;
  Meter& operator=(const Meter&) = delete;

 private:
  benchmark::State& state_;
  std::uint64_t allocs_;
  CountersSnapshot copies_;
};

}  // namespace neat::bench

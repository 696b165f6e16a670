// A study, not a product benchmark (docs/architecture.md, "Libraries we
// measured and did not adopt"): the copy gate's metrics hot path and the
// Prometheus exposition, neat's LabeledMetrics against prometheus-cpp 1.0.1
// (Debian 12's prometheus-cpp-dev) used both ways its users do: a Family
// lookup per update, and references cached per label set. Built only where
// prometheus-cpp is installed.
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include "neat/telemetry/metrics.hpp"

#include "alloc_counter.hpp"

using clk = std::chrono::steady_clock;
template <class F>
std::pair<double, double> time_it(int n, F&& f) {
  const auto a0 = neat::bench::allocation_count();
  const auto t0 = clk::now();
  for (int i = 0; i < n; ++i)
    f(i);
  const double ns = std::chrono::duration<double, std::nano>(clk::now() - t0).count() / n;
  return {ns, double(neat::bench::allocation_count() - a0) / n};
}
int main() {
  const char* stages[] = {"pre", "infer", "yolo", "convert"};
  const char* edges[] = {"src->pre", "pre->infer", "infer->yolo", "yolo->sink"};
  const int N = 2'000'000;
  auto& ours = neat::labeled_metrics();
  for (int i = 0; i < 4; ++i)
    ours.record(neat::ConversionKind::Pack, neat::ConversionReason::ModelOutput,
                neat::ConversionPolicy::AllowWithTrace, false, stages[i], edges[i], 100, 1000);
  auto [ours_ns, ours_alloc] = time_it(N, [&](int i) {
    ours.record(neat::ConversionKind::Pack, neat::ConversionReason::ModelOutput,
                neat::ConversionPolicy::AllowWithTrace, false, stages[i & 3], edges[i & 3], 100,
                1000);
  });
  prometheus::Registry reg;
  auto& conv = prometheus::BuildCounter().Name("neat_conversions_total").Help("c").Register(reg);
  auto& bytes =
      prometheus::BuildCounter().Name("neat_conversion_bytes_total").Help("b").Register(reg);
  auto& secs = prometheus::BuildHistogram().Name("neat_conversion_seconds").Help("s").Register(reg);
  const prometheus::Histogram::BucketBoundaries b{1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0};
  auto labels = [&](int k) {
    return prometheus::Labels{{"kind", "pack"},     {"reason", "model_output"},
                              {"policy", "trace"},  {"explicit", "false"},
                              {"stage", stages[k]}, {"edge", edges[k]}};
  };
  auto [lookup_ns, lookup_alloc] = time_it(N, [&](int i) {
    const auto l = labels(i & 3);
    conv.Add(l).Increment();
    bytes.Add(l).Increment(100);
    secs.Add(l, b).Observe(1e-6);
  });
  std::vector<prometheus::Counter*> c1, c2;
  std::vector<prometheus::Histogram*> h;
  for (int k = 0; k < 4; ++k) {
    c1.push_back(&conv.Add(labels(k)));
    c2.push_back(&bytes.Add(labels(k)));
    h.push_back(&secs.Add(labels(k), b));
  }
  auto [cached_ns, cached_alloc] = time_it(N, [&](int i) {
    c1[i & 3]->Increment();
    c2[i & 3]->Increment(100);
    h[i & 3]->Observe(1e-6);
  });
  const int M = 20000;
  std::size_t sink = 0;
  auto [ours_text_ns, ours_text_alloc] =
      time_it(M, [&](int) { sink += ours.prometheus_text().size(); });
  prometheus::TextSerializer ser;
  auto [prom_text_ns, prom_text_alloc] =
      time_it(M, [&](int) { sink += ser.Serialize(reg.Collect()).size(); });
  std::printf("record, per conversion (3 series: count, bytes, seconds histogram; 6 labels):\n");
  std::printf("  neat LabeledMetrics::record        %7.1f ns  %.2f allocations\n", ours_ns,
              ours_alloc);
  std::printf("  prometheus-cpp Family::Add lookup  %7.1f ns  %.2f allocations  (%.2fx neat)\n",
              lookup_ns, lookup_alloc, lookup_ns / ours_ns);
  std::printf("  prometheus-cpp cached references   %7.1f ns  %.2f allocations  (%.2fx neat)\n",
              cached_ns, cached_alloc, cached_ns / ours_ns);
  std::printf("exposition of 4 label sets:\n");
  std::printf("  neat prometheus_text()             %7.1f us  %.1f allocations\n",
              ours_text_ns / 1e3, ours_text_alloc);
  std::printf("  prometheus-cpp Serialize(Collect)  %7.1f us  %.1f allocations  (%.2fx neat)\n",
              prom_text_ns / 1e3, prom_text_alloc, prom_text_ns / ours_text_ns);
  return sink == 0;
}

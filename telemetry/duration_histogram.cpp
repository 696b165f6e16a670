#include "neat/telemetry/duration_histogram.hpp"

#include <cstdio>

namespace neat {

namespace {

std::string seconds_text(double s) {
  char buf[48];
  if (s >= 1.0) {
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  } else if (s >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  }
  return buf;
}

}  // namespace

std::string DurationSummary::to_string() const {
  if (count == 0) return "no frames";
  return "p50 " + seconds_text(p50) + "  p95 " + seconds_text(p95) + "  p99 " + seconds_text(p99) +
         "  max " + seconds_text(max);
}

}  // namespace neat

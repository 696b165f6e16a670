#include "neat/telemetry/units.hpp"

#include <cstdio>

namespace neat {

std::string bytes_text(double b) {
  char buf[32];
  constexpr double kKiB = 1024.0, kMiB = kKiB * 1024.0, kGiB = kMiB * 1024.0;
  if (b >= kGiB) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / kGiB);
  } else if (b >= kMiB) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / kMiB);
  } else if (b >= kKiB) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / kKiB);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  }
  return buf;
}

}  // namespace neat

// How NeatTensor writes quantities for people: bytes as "512 B", "4.5 KiB",
// "5.93 MiB", "1.25 GiB" (powers of 1024), the one spelling of explain(),
// neat run's tables and the audit.
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace neat {

/// "512 B", "4.5 KiB", "5.93 MiB", "1.25 GiB".
std::string bytes_text(double bytes);
inline std::string bytes_text(std::int64_t bytes) {
  return bytes_text(static_cast<double>(bytes));
}

}  // namespace neat

// Fuzz target: the trace reader of `neat audit` (JSON Lines and Chrome
// traces). Any bytes are read into records or refused with a typed error;
// what is read can be audited and formatted.
#include <cstdint>
#include <sstream>
#include <string>

#include "neat/telemetry/audit.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  auto records = neat::read_trace(in, "fuzz");
  if (records.ok()) {
    const auto report = neat::audit(*records, 3);
    (void)neat::format_audit_table(report);
    (void)neat::format_audit_json(report);
  }
  return 0;
}

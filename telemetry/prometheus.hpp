// Writing the Prometheus text exposition format (version 0.0.4): metric
// families, samples with escaped label values, numbers as Prometheus reads
// them; and the standard process_* metrics every Prometheus client library
// exports (resident and virtual memory, open and maximum file descriptors,
// CPU seconds, start time), read from /proc.
//
// Used by the conversion metrics (metrics.hpp), the graph's live metrics
// (stages/graph.hpp) and the metrics endpoint (metrics_server.hpp).
//
// Threading: pure functions; process_metrics_text() reads /proc and is
// reentrant.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace neat::prometheus {

struct Label {
  std::string_view name;
  std::string_view value;
};

/// "# HELP name help\n# TYPE name type\n" (type: counter, gauge, histogram).
void family(std::string& out, std::string_view name, std::string_view type, std::string_view help);
/// `"value"` with backslash, double quote and newline escaped.
void label_value(std::string& out, std::string_view value);
/// The shortest text that reads back as `v` ("+Inf", "-Inf", "NaN" included).
std::string number(double v);
/// "name{a="x",b="y"} value\n" (no braces without labels).
void sample(std::string& out, std::string_view name, std::initializer_list<Label> labels,
            double value);
void sample(std::string& out, std::string_view name, std::initializer_list<Label> labels,
            std::uint64_t value);

/// The process_* families for the calling process: process_cpu_seconds_total,
/// process_resident_memory_bytes, process_virtual_memory_bytes,
/// process_open_fds, process_max_fds, process_start_time_seconds,
/// process_threads. A value /proc cannot give is left out, never made up.
std::string process_metrics_text();

}  // namespace neat::prometheus

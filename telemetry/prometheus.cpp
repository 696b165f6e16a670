#include "neat/telemetry/prometheus.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace neat::prometheus {

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  for (char c : help) {  // HELP escapes backslash and newline only
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void label_value(std::string& out, std::string_view value) {
  out += '"';
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  out += '"';
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

namespace {

void head(std::string& out, std::string_view name, std::initializer_list<Label> labels) {
  out += name;
  if (labels.size() == 0) return;
  char sep = '{';
  for (const Label& l : labels) {
    out += sep;
    out += l.name;
    out += '=';
    label_value(out, l.value);
    sep = ',';
  }
  out += '}';
}

}  // namespace

void sample(std::string& out, std::string_view name, std::initializer_list<Label> labels,
            double value) {
  head(out, name, labels);
  out += ' ';
  out += number(value);
  out += '\n';
}

void sample(std::string& out, std::string_view name, std::initializer_list<Label> labels,
            std::uint64_t value) {
  head(out, name, labels);
  out += ' ';
  out += std::to_string(value);
  out += '\n';
}

namespace {

// The fields of /proc/self/stat after the command name (which may hold
// spaces and parentheses: the last ')' ends it). fields[0] is field 3 (state).
std::vector<std::string> stat_fields() {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  std::vector<std::string> fields;
  if (close == std::string::npos) return fields;
  std::istringstream rest(text.substr(close + 1));
  for (std::string f; rest >> f;)
    fields.push_back(f);
  return fields;
}

bool field_u64(const std::vector<std::string>& fields, int number_in_proc5, std::uint64_t& out) {
  const std::size_t i = static_cast<std::size_t>(number_in_proc5 - 3);
  if (i >= fields.size()) return false;
  const std::string& f = fields[i];
  return std::from_chars(f.data(), f.data() + f.size(), out).ec == std::errc();
}

// Seconds since the epoch at boot: /proc/stat's btime.
bool boot_time(std::uint64_t& out) {
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("btime ", 0) == 0) {
      return std::from_chars(line.data() + 6, line.data() + line.size(), out).ec == std::errc();
    }
  }
  return false;
}

bool open_fds(std::uint64_t& out) {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return false;
  std::uint64_t n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  out = n > 0 ? n - 1 : 0;  // the directory stream's own descriptor is not the process's
  return true;
}

}  // namespace

std::string process_metrics_text() {
  std::string out;
  const auto fields = stat_fields();
  const long ticks = ::sysconf(_SC_CLK_TCK);
  const long page = ::sysconf(_SC_PAGESIZE);
  std::uint64_t utime = 0, stime = 0, start = 0, vsize = 0, rss = 0, threads = 0, btime = 0;
  // proc(5): utime 14, stime 15, num_threads 20, starttime 22, vsize 23, rss 24.
  if (ticks > 0 && field_u64(fields, 14, utime) && field_u64(fields, 15, stime)) {
    family(out, "process_cpu_seconds_total", "counter",
           "Total user and system CPU time spent in seconds.");
    sample(out, "process_cpu_seconds_total", {},
           static_cast<double>(utime + stime) / static_cast<double>(ticks));
  }
  if (page > 0 && field_u64(fields, 24, rss)) {
    family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    sample(out, "process_resident_memory_bytes", {}, rss * static_cast<std::uint64_t>(page));
  }
  if (field_u64(fields, 23, vsize)) {
    family(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
    sample(out, "process_virtual_memory_bytes", {}, vsize);
  }
  if (std::uint64_t fds = 0; open_fds(fds)) {
    family(out, "process_open_fds", "gauge", "Number of open file descriptors.");
    sample(out, "process_open_fds", {}, fds);
  }
  if (rlimit rl{}; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    family(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
    sample(out, "process_max_fds", {}, static_cast<std::uint64_t>(rl.rlim_cur));
  }
  if (ticks > 0 && field_u64(fields, 22, start) && boot_time(btime)) {
    family(out, "process_start_time_seconds", "gauge",
           "Start time of the process since unix epoch in seconds.");
    sample(out, "process_start_time_seconds", {},
           static_cast<double>(btime) + static_cast<double>(start) / static_cast<double>(ticks));
  }
  if (field_u64(fields, 20, threads)) {
    family(out, "process_threads", "gauge", "Number of OS threads in the process.");
    sample(out, "process_threads", {}, threads);
  }
  return out;
}

}  // namespace neat::prometheus

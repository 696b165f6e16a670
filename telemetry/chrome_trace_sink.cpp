#include "neat/telemetry/chrome_trace_sink.hpp"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>

#include "neat/telemetry/event_json.hpp"

namespace neat {

namespace {

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// Microseconds with nanosecond precision ("12.345"), as the format expects.
void append_us(std::string& out, std::int64_t ns) {
  if (ns < 0) {
    out += '-';
    ns = -ns;
  }
  append_int(out, ns / 1000);
  const auto frac = static_cast<int>(ns % 1000);
  out += '.';
  out += static_cast<char>('0' + frac / 100);
  out += static_cast<char>('0' + (frac / 10) % 10);
  out += static_cast<char>('0' + frac % 10);
}

}  // namespace

Result<std::shared_ptr<ChromeTraceSink>> ChromeTraceSink::open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return failed_precondition("ChromeTraceSink: cannot create '" + path +
                               "': " + std::strerror(errno));
  }
  std::fclose(f);
  auto sink = std::make_shared<ChromeTraceSink>();
  sink->path_ = path;
  return sink;
}

ChromeTraceSink::~ChromeTraceSink() {
  if (!path_.empty()) (void)write();
}

void ChromeTraceSink::on_event(const ConversionEvent& e) noexcept {
  try {
    std::string json;
    append_event_json(json, e);
    std::string track = e.stage.empty() ? "thread " + std::to_string(e.thread_id)
                                        : "stage '" + std::string(e.stage) + "'";
    std::string name(to_string(e.kind));
    name += ' ';
    name += to_string(e.reason);
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(json));
    names_.push_back(std::move(name));
    kinds_.emplace_back(to_string(e.kind));
    ts_.push_back(e.timestamp_ns - e.duration_ns);
    dur_.push_back(e.duration_ns);
    track_.push_back(std::move(track));
    edge_.emplace_back(e.edge);
    bytes_.push_back(e.bytes_written);
  } catch (...) {
    // Out of memory: this event is dropped from the trace (counters still have it).
  }
}

void ChromeTraceSink::on_frame(const FrameEvent& e) noexcept {
  try {
    std::string json;
    append_frame_json(json, e);
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(json));
    names_.push_back("frame " + std::to_string(e.frame));
    kinds_.emplace_back("latency");
    ts_.push_back(e.timestamp_ns - e.latency_ns);
    dur_.push_back(e.latency_ns);
    track_.push_back("latency: sink '" + std::string(e.sink) + "'");
    edge_.emplace_back();
    bytes_.push_back(-1);  // not a copy: no counter sample
  } catch (...) {
    // Out of memory: this frame is missing from the trace (the metrics have it).
  }
}

std::size_t ChromeTraceSink::size() const {
  std::lock_guard lock(mutex_);
  return events_.size();
}

std::string ChromeTraceSink::to_json() const {
  std::lock_guard lock(mutex_);
  const std::int64_t pid = ::getpid();
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":";
  append_int(out, pid);
  out += ",\"tid\":0,\"args\":{\"name\":\"NeatTensor conversions\"}}";
  std::map<std::string, std::int64_t> tids;
  for (const std::string& t : track_)
    tids.emplace(t, 0);
  std::int64_t next = 1;
  for (auto& [name, tid] : tids) {
    tid = next++;
    out += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":";
    append_int(out, pid);
    out += ",\"tid\":";
    append_int(out, tid);
    out += ",\"args\":{\"name\":";
    append_json_string(out, name);
    out += "}}";
  }
  std::map<std::string, std::int64_t> per_edge;
  for (std::size_t i = 0; i < events_.size(); ++i) {
    // The slice: name, category, times, track; args carry the whole event.
    out += ",\n{\"name\":";
    append_json_string(out, names_[i]);
    out += ",\"cat\":";
    append_json_string(out, kinds_[i]);
    out += ",\"ph\":\"X\",\"ts\":";
    append_us(out, ts_[i]);
    out += ",\"dur\":";
    append_us(out, dur_[i]);
    out += ",\"pid\":";
    append_int(out, pid);
    out += ",\"tid\":";
    append_int(out, tids[track_[i]]);
    out += ",\"args\":";
    out += events_[i];
    out += '}';
    if (bytes_[i] < 0) continue;  // a frame's latency slice
    // The edge's counter track: cumulative bytes copied.
    const std::string edge = edge_[i].empty() ? std::string("(no edge)") : edge_[i];
    const std::int64_t total = (per_edge[edge] += bytes_[i]);
    out += ",\n{\"name\":";
    append_json_string(out, "bytes copied: " + edge);
    out += ",\"ph\":\"C\",\"ts\":";
    append_us(out, ts_[i] + dur_[i]);
    out += ",\"pid\":";
    append_int(out, pid);
    out += ",\"tid\":0,\"args\":{\"bytes\":";
    append_int(out, total);
    out += "}}";
  }
  out += "\n]}\n";
  return out;
}

Status ChromeTraceSink::write() const {
  if (path_.empty())
    return failed_precondition("ChromeTraceSink::write: the sink has no file (use open())");
  const std::string json = to_json();
  std::FILE* f = std::fopen(path_.c_str(), "w");
  if (f == nullptr) {
    return failed_precondition("ChromeTraceSink: cannot write '" + path_ +
                               "': " + std::strerror(errno));
  }
  const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) return resource_exhausted("ChromeTraceSink: writing '" + path_ + "' failed");
  return {};
}

}  // namespace neat

#include "neat/telemetry/chrome_trace_sink.hpp"

#include <unistd.h>

#include <charconv>

#include "neat/telemetry/event_json.hpp"
#include "neat/telemetry/internal/trace_file.hpp"

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

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// {"name":NAME,"ph":"M","pid":P,"tid":T,"args":ARGS}
void append_metadata(std::string& out, std::string_view name, std::int64_t pid, std::int64_t tid,
                     std::string_view args) {
  out += "{\"name\":";
  append_json_string(out, name);
  out += ",\"ph\":\"M\",\"pid\":";
  append_int(out, pid);
  out += ",\"tid\":";
  append_int(out, tid);
  out += ",\"args\":";
  out += args;
  out += '}';
}

void append_thread_name(std::string& out, std::int64_t pid, std::int64_t tid,
                        const std::string& track) {
  std::string args = "{\"name\":";
  append_json_string(args, track);
  args += '}';
  append_metadata(out, "thread_name", pid, tid, args);
  out += ",\n";
}

}  // namespace

Result<std::shared_ptr<ChromeTraceSink>> ChromeTraceSink::open(
    const std::string& path, const ChromeTraceSinkOptions& options) {
  auto sink = std::make_shared<ChromeTraceSink>();
  sink->memory_.clear();
  detail::TraceFile::Hooks hooks;
  ChromeTraceSink* self = sink.get();
  hooks.header = [self](int part) { return self->header(part); };
  hooks.part_footer = [self](int) { return self->footer(false); };
  NEAT_ASSIGN_OR_RETURN(
      sink->file_,
      detail::TraceFile::open(
          path,
          detail::TraceFileOptions{false, options.max_bytes, options.keep, options.flush_interval},
          std::move(hooks), "ChromeTraceSink"));
  return sink;
}

ChromeTraceSink::ChromeTraceSink()
    : run_(std::to_string(::getpid()) + "-" + std::to_string(now_ns())), pid_(::getpid()) {
  memory_ = header(0);
}

ChromeTraceSink::~ChromeTraceSink() {
  if (file_) (void)close();
}

// Part N: the array, the trace's own header, the process and every track
// known so far (each part opens on its own).
std::string ChromeTraceSink::header(int part) const {
  std::string out = "[\n";
  std::string args = "{\"neat_trace\":2,\"run\":\"" + run_ + "\",\"part\":";
  append_int(args, part);
  args += ",\"ts_ns\":";
  append_int(args, now_ns());
  args += '}';
  append_metadata(out, "neat_trace", pid_, 0, args);
  out += ",\n";
  append_metadata(out, "process_name", pid_, 0, "{\"name\":\"NeatTensor conversions\"}");
  out += ",\n";
  for (const auto& [track, tid] : tracks_)
    append_thread_name(out, pid_, tid, track);
  return out;
}

// The end of a part: "neat_trace_end" with the run's counts when it is the
// last, "neat_trace_part_end" when a rotation moves on; then the array closes.
std::string ChromeTraceSink::footer(bool last) const {
  std::string out;
  std::string args = "{\"type\":\"end\",\"run\":\"" + run_ + "\",\"events\":";
  append_int(args, static_cast<std::int64_t>(events_.load()));
  args += ",\"lost\":";
  append_int(args, file_ ? static_cast<std::int64_t>(file_->lost_records()) : 0);
  args += ",\"ts_ns\":";
  append_int(args, now_ns());
  args += '}';
  append_metadata(out, last ? "neat_trace_end" : "neat_trace_part_end", pid_, 0, args);
  out += "\n]\n";
  return out;
}

// One slice (and, for a copy, the edge's counter sample), appended as lines
// ending in ",\n". Called with the state's lock held.
void ChromeTraceSink::add(const std::string& name, const char* category, std::int64_t ts_ns,
                          std::int64_t dur_ns, const std::string& track, const std::string& args,
                          std::string_view edge, std::int64_t bytes) {
  std::string& out = line_;
  out.clear();
  auto [it, fresh] = tracks_.try_emplace(track, static_cast<std::int64_t>(tracks_.size()) + 1);
  if (fresh) append_thread_name(out, pid_, it->second, track);
  out += "{\"name\":";
  append_json_string(out, name);
  out += ",\"cat\":\"";
  out += category;
  out += "\",\"ph\":\"X\",\"ts\":";
  append_us(out, ts_ns);
  out += ",\"dur\":";
  append_us(out, dur_ns);
  out += ",\"pid\":";
  append_int(out, pid_);
  out += ",\"tid\":";
  append_int(out, it->second);
  out += ",\"args\":";
  out += args;
  out += "},\n";
  if (bytes >= 0) {  // a copy: the edge's counter track, cumulative bytes
    const std::string edge_name = edge.empty() ? std::string("(no edge)") : std::string(edge);
    const std::int64_t total = (edge_bytes_[edge_name] += bytes);
    out += "{\"name\":";
    append_json_string(out, "bytes copied: " + edge_name);
    out += ",\"ph\":\"C\",\"ts\":";
    append_us(out, ts_ns + dur_ns);
    out += ",\"pid\":";
    append_int(out, pid_);
    out += ",\"tid\":0,\"args\":{\"bytes\":";
    append_int(out, total);
    out += "}},\n";
  }
  events_.fetch_add(1, std::memory_order_relaxed);
  if (file_) {
    file_->append_locked(out);
  } else {
    memory_ += out;
  }
}

void ChromeTraceSink::on_event(const ConversionEvent& e) noexcept {
  try {
    std::string args;
    append_event_json(args, e);
    std::string track = e.stage.empty() ? "thread " + std::to_string(e.thread_id)
                                        : "stage '" + std::string(e.stage) + "'";
    std::string name(to_string(e.kind));
    name += ' ';
    name += to_string(e.reason);
    const std::string category(to_string(e.kind));
    auto lock = file_ ? file_->lock() : std::unique_lock<std::mutex>(memory_mutex_);
    if (file_ && !file_->is_open()) {
      file_->count_lost();
      return;
    }
    add(name, category.c_str(), e.timestamp_ns - e.duration_ns, e.duration_ns, track, args, e.edge,
        e.bytes_written);
  } catch (...) {
    if (file_) file_->count_lost();  // out of memory: this event is missing (counters have it)
  }
}

void ChromeTraceSink::on_frame(const FrameEvent& e) noexcept {
  try {
    std::string args;
    append_frame_json(args, e);
    const std::string name = "frame " + std::to_string(e.frame);
    const std::string track = "latency: sink '" + std::string(e.sink) + "'";
    auto lock = file_ ? file_->lock() : std::unique_lock<std::mutex>(memory_mutex_);
    if (file_ && !file_->is_open()) {
      file_->count_lost();
      return;
    }
    add(name, "latency", e.timestamp_ns - e.latency_ns, e.latency_ns, track, args, {}, -1);
    if (file_) file_->write_if_idle_locked(std::chrono::milliseconds(100));
  } catch (...) {
    if (file_) file_->count_lost();  // this frame is missing from the trace (metrics have it)
  }
}

void ChromeTraceSink::on_stream(const StreamEvent& e) noexcept {
  try {
    std::string args;
    append_stream_json(args, e);
    const std::string name =
        std::string(e.state) + (e.reason.empty() ? "" : ": ") + std::string(e.reason);
    const std::string track = "stream '" + std::string(e.stream) + "'";
    auto lock = file_ ? file_->lock() : std::unique_lock<std::mutex>(memory_mutex_);
    if (file_ && !file_->is_open()) {
      file_->count_lost();
      return;
    }
    add(name, "stream", e.timestamp_ns, 0, track, args, {}, -1);
    if (file_) file_->write_if_idle_locked(std::chrono::milliseconds(100));
  } catch (...) {
    if (file_) file_->count_lost();
  }
}

void ChromeTraceSink::on_output(const OutputEvent& e) noexcept {
  try {
    std::string args;
    append_output_json(args, e);
    std::string name = std::string(e.type) + " " + std::string(e.event);
    if (e.type == "track") name += " " + std::to_string(e.id);
    const std::string track = e.type == "track" ? "tracks '" + std::string(e.stream) + "'"
                                                : std::string(e.node) + " delivery";
    auto lock = file_ ? file_->lock() : std::unique_lock<std::mutex>(memory_mutex_);
    if (file_ && !file_->is_open()) {
      file_->count_lost();
      return;
    }
    add(name, e.type == "track" ? "track" : "delivery", e.timestamp_ns, 0, track, args, {}, -1);
    if (file_) file_->write_if_idle_locked(std::chrono::milliseconds(100));
  } catch (...) {
    if (file_) file_->count_lost();
  }
}

std::size_t ChromeTraceSink::size() const {
  return static_cast<std::size_t>(events_.load(std::memory_order_relaxed));
}

std::uint64_t ChromeTraceSink::rotations() const noexcept {
  return file_ ? file_->rotations() : 0;
}

Result<std::string> ChromeTraceSink::to_json() const {
  if (file_) {
    return failed_precondition("ChromeTraceSink::to_json: the trace streams to '" + file_->path() +
                               "'; read that file");
  }
  std::lock_guard lock(memory_mutex_);
  return memory_ + footer(true);
}

Status ChromeTraceSink::flush() {
  return file_ ? file_->flush() : Status{};
}

Status ChromeTraceSink::close() {
  if (!file_) return {};
  std::string end;
  {
    auto lock = file_->lock();
    end = footer(true);
  }
  return file_->close(end);
}

}  // namespace neat

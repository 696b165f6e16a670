#include "neat/telemetry/jsonl_sink.hpp"

#include <unistd.h>

#include <chrono>

#include "neat/telemetry/event_json.hpp"
#include "neat/telemetry/internal/trace_file.hpp"

namespace neat {

namespace {

// A frame record is written at once when the previous write is this old:
// below ~10 frames a second, each frame reaches the disk as it happens.
constexpr auto kIdleWrite = std::chrono::milliseconds(100);

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<std::shared_ptr<JsonlSink>> JsonlSink::open(const std::string& path, bool append) {
  JsonlSinkOptions o;
  o.append = append;
  return open(path, o);
}

Result<std::shared_ptr<JsonlSink>> JsonlSink::open(const std::string& path,
                                                   const JsonlSinkOptions& options) {
  std::shared_ptr<JsonlSink> sink(new JsonlSink(path));
  detail::TraceFile::Hooks hooks;
  JsonlSink* self = sink.get();
  hooks.header = [self](int part) { return self->header(part); };
  NEAT_ASSIGN_OR_RETURN(
      sink->file_,
      detail::TraceFile::open(path,
                              detail::TraceFileOptions{options.append, options.max_bytes,
                                                       options.keep, options.flush_interval},
                              std::move(hooks), "JsonlSink"));
  return sink;
}

JsonlSink::JsonlSink(std::string path)
    : path_(std::move(path)), run_(std::to_string(::getpid()) + "-" + std::to_string(now_ns())) {}

std::string JsonlSink::header(int part) const {
  return "{\"neat_trace\":2,\"run\":\"" + run_ + "\",\"part\":" + std::to_string(part) +
         ",\"pid\":" + std::to_string(::getpid()) + ",\"ts_ns\":" + std::to_string(now_ns()) +
         "}\n";
}

JsonlSink::~JsonlSink() {
  if (file_) (void)close();
}

std::uint64_t JsonlSink::lost_events() const noexcept {
  return file_ ? file_->lost_records() : 0;
}

std::uint64_t JsonlSink::rotations() const noexcept {
  return file_ ? file_->rotations() : 0;
}

void JsonlSink::on_event(const ConversionEvent& event) noexcept {
  try {
    auto lock = file_->lock();
    if (!file_->is_open()) {
      file_->count_lost();
      return;
    }
    const std::size_t need = event_json_bound(event, &call_sites_) + 1;
    if (char* p = file_->reserve_locked(need)) {
      char* end = encode_event_json(p, event, &call_sites_);
      *end++ = '\n';
      file_->commit_locked(end);
    } else {  // an event larger than the buffer: encoded on its own
      line_.clear();
      append_event_json(line_, event, &call_sites_);
      line_ += '\n';
      file_->append_locked(line_);
    }
    events_.fetch_add(1, std::memory_order_relaxed);
  } catch (...) {
    file_->count_lost();
  }
}

void JsonlSink::on_frame(const FrameEvent& e) noexcept {
  try {
    auto lock = file_->lock();
    if (!file_->is_open()) {
      file_->count_lost();
      return;
    }
    line_.clear();  // keeps its capacity: no allocation once warm
    append_frame_json(line_, e);
    line_ += '\n';
    file_->append_locked(line_);
    ++frames_;
    file_->write_if_idle_locked(kIdleWrite);
  } catch (...) {
    file_->count_lost();
  }
}

void JsonlSink::write_line(const std::function<void(std::string&)>& append) noexcept {
  try {
    auto lock = file_->lock();
    if (!file_->is_open()) {
      file_->count_lost();
      return;
    }
    line_.clear();
    append(line_);
    line_ += '\n';
    file_->append_locked(line_);
    file_->write_if_idle_locked(kIdleWrite);
  } catch (...) {
    file_->count_lost();
  }
}

void JsonlSink::on_output(const OutputEvent& e) noexcept {
  write_line([&](std::string& line) { append_output_json(line, e); });
}

void JsonlSink::on_stream(const StreamEvent& e) noexcept {
  write_line([&](std::string& line) { append_stream_json(line, e); });
}

Status JsonlSink::flush() {
  return file_->flush();
}

Status JsonlSink::close() {
  std::string end;
  {
    auto lock = file_->lock();
    end = "{\"type\":\"end\",\"ts_ns\":" + std::to_string(now_ns()) + ",\"run\":\"" + run_ +
          "\",\"part\":" + std::to_string(file_->part()) +
          ",\"events\":" + std::to_string(events_.load()) +
          ",\"frames\":" + std::to_string(frames_) +
          ",\"lost\":" + std::to_string(file_->lost_records()) + "}\n";
  }
  return file_->close(end);
}

}  // namespace neat

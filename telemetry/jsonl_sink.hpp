// JsonlSink: conversion events as JSON Lines (one object per line, see
// event_json.hpp for the fields), the format `neat audit` reads. Events are
// formatted into an in-memory buffer and written in large chunks, so
// recording one costs a few hundred nanoseconds at most; what is buffered
// reaches the file at least once a second (a flusher thread), and a frame
// record at once when the previous write is over 100 ms old (a low frame
// rate), so a run that crashes or is killed with SIGKILL loses at most the
// last second of its trace. Memory stays constant however long the run.
//
// Every file starts with a header line, {"neat_trace":2,"run":"PID-START",
// "part":N,...}: `neat audit` tells a traced run without conversions from an
// empty or foreign file by it, and keeps frame numbers of different runs
// apart. close() (or destruction) ends the trace with a closing record,
// {"type":"end","run":...,"events":N,"frames":N,"lost":N,...}: a trace of
// version 2 without one was cut short (a crash, kill -9, a full disk), and
// the audit says so. With max_bytes the file rotates like a log: PATH is
// renamed PATH.1 (PATH.1 to PATH.2, ..., the oldest beyond `keep` removed)
// before it would grow past max_bytes; events are never split across files.
//
// Ownership: the sink owns its file descriptor and its flusher thread.
// Threading: on_event(), on_frame(), flush() and close() are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "neat/contract/error.hpp"
#include "neat/telemetry/event_json.hpp"
#include "neat/telemetry/event_sink.hpp"

namespace neat {

namespace detail {
class TraceFile;  // telemetry/internal/trace_file.hpp
}

struct JsonlSinkOptions {
  bool append = false;         ///< keep what the file holds (a header line is added)
  std::int64_t max_bytes = 0;  ///< rotate before the file grows past this; 0: never
  int keep = 5;                ///< rotated files kept (PATH.1 newest ... PATH.keep)
  /// The longest an event waits in memory before it is written.
  std::chrono::milliseconds flush_interval = std::chrono::seconds(1);
};

class JsonlSink final : public EventSink {
 public:
  /// Opens (creates or truncates; `append` keeps the contents) `path`.
  static Result<std::shared_ptr<JsonlSink>> open(const std::string& path, bool append = false);
  /// InvalidArgument for max_bytes < 0, a max_bytes smaller than a header
  /// line (256 bytes), keep < 0 or a flush interval that is not positive.
  static Result<std::shared_ptr<JsonlSink>> open(const std::string& path,
                                                 const JsonlSinkOptions& options);
  ~JsonlSink() override;
  JsonlSink(const JsonlSink&) = delete;
  JsonlSink& operator=(const JsonlSink&) = delete;

  void on_event(const ConversionEvent& event) noexcept override;
  /// A line
  /// {"type":"frame","ts_ns":..,"graph":..,"sink":..,"frame":..,"latency_ns":..,"thread":..}.
  void on_frame(const FrameEvent& event) noexcept override;
  /// A line {"type":"stream",...} (append_stream_json).
  void on_stream(const StreamEvent& event) noexcept override;
  void on_output(const OutputEvent& event) noexcept override;
  /// Writes the buffered lines to the file.
  Status flush();
  /// Writes the buffered lines and the closing record, and closes the file
  /// (idempotent; also done on destruction). Events after it are lost.
  Status close();
  std::uint64_t events() const noexcept { return events_.load(std::memory_order_relaxed); }
  /// Events that could not be written (disk full, after close(), ...); see the flush() error.
  std::uint64_t lost_events() const noexcept;
  const std::string& path() const noexcept { return path_; }
  /// Rotations so far.
  std::uint64_t rotations() const noexcept;

 private:
  explicit JsonlSink(std::string path);
  std::string header(int part) const;
  // One state-change record (stream, track, delivery): `append` writes its
  // JSON; the line is appended under the file's lock (lost ones counted).
  void write_line(const std::function<void(std::string&)>& append) noexcept;

  std::string path_;
  std::string run_;  // "PID-START_NS": the same in every part
  std::unique_ptr<detail::TraceFile> file_;
  // Guarded by file_'s mutex:
  CallSiteCache call_sites_;
  std::string line_;  // reused for frame lines and oversized events
  std::uint64_t frames_ = 0;
  std::atomic<std::uint64_t> events_{0};
};

}  // namespace neat

// JsonlSink: conversion events as JSON Lines (one object per line, see
// event_json.hpp for the fields), the format `neat audit` reads. Events are
// formatted into an in-memory buffer and written to the file in large
// chunks, so recording one costs a few hundred nanoseconds at most.
//
// Every file starts with a header line, {"neat_trace":1,"run":"PID-START",
// "part":N,...}: `neat audit` tells a traced run without conversions from an
// empty or foreign file by it, and keeps frame numbers of different runs
// apart. With max_bytes the file rotates like a log: PATH is renamed PATH.1
// (PATH.1 to PATH.2, ..., the oldest beyond `keep` removed) before it would
// grow past max_bytes; events are never split across files.
//
// Ownership: the sink owns its file descriptor; flush() or destruction
// writes what is buffered. Threading: on_event() and flush() are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "neat/contract/error.hpp"
#include "neat/telemetry/event_json.hpp"
#include "neat/telemetry/event_sink.hpp"

namespace neat {

struct JsonlSinkOptions {
  bool append = false;         ///< keep what the file holds (a header line is added)
  std::int64_t max_bytes = 0;  ///< rotate before the file grows past this; 0: never
  int keep = 5;                ///< rotated files kept (PATH.1 newest ... PATH.keep)
};

class JsonlSink final : public EventSink {
 public:
  /// Opens (creates or truncates; `append` keeps the contents) `path`.
  static Result<std::shared_ptr<JsonlSink>> open(const std::string& path, bool append = false);
  /// InvalidArgument for max_bytes < 0, a max_bytes smaller than a header
  /// line (256 bytes), or keep < 0.
  static Result<std::shared_ptr<JsonlSink>> open(const std::string& path,
                                                 const JsonlSinkOptions& options);
  ~JsonlSink() override;
  JsonlSink(const JsonlSink&) = delete;
  JsonlSink& operator=(const JsonlSink&) = delete;

  void on_event(const ConversionEvent& event) noexcept override;
  /// A line
  /// {"type":"frame","ts_ns":..,"graph":..,"sink":..,"frame":..,"latency_ns":..,"thread":..}.
  void on_frame(const FrameEvent& event) noexcept override;
  /// Writes the buffered lines to the file.
  Status flush();
  std::uint64_t events() const noexcept { return events_.load(std::memory_order_relaxed); }
  /// Events that could not be written (disk full, ...); see the flush() error.
  std::uint64_t lost_events() const noexcept { return lost_.load(std::memory_order_relaxed); }
  const std::string& path() const noexcept { return path_; }
  /// Rotations so far.
  std::uint64_t rotations() const noexcept { return rotations_.load(std::memory_order_relaxed); }

 private:
  JsonlSink(int fd, std::string path, JsonlSinkOptions options);
  Status write_locked();
  Status write_all(const char* data, std::size_t n);
  Status write_header();
  Status rotate();

  int fd_;
  std::string path_;
  JsonlSinkOptions options_;
  std::string run_;              // "PID-START_NS": the same in every part
  std::int64_t file_bytes_ = 0;  // what the current file holds
  std::int64_t header_bytes_ = 0;
  int part_ = 0;
  std::atomic<std::uint64_t> rotations_{0};
  std::mutex mutex_;
  std::unique_ptr<char[]> buffer_;  // raw, never zero-filled
  std::size_t used_ = 0;
  CallSiteCache call_sites_;
  std::string frame_line_;  // reused for frame lines
  std::uint64_t buffered_events_ = 0;
  std::atomic<std::uint64_t> events_{0};
  std::atomic<std::uint64_t> lost_{0};
};

}  // namespace neat

// JsonlSink: conversion events as JSON Lines (one object per line, see
// event_json.hpp for the fields), the format `neat audit` reads. Events are
// formatted into an in-memory buffer and written to the file in large
// chunks, so recording one costs a few hundred nanoseconds at most.
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

class JsonlSink final : public EventSink {
 public:
  /// Opens (creates or truncates; `append` keeps the contents) `path`.
  static Result<std::shared_ptr<JsonlSink>> open(const std::string& path, bool append = false);
  ~JsonlSink() override;
  JsonlSink(const JsonlSink&) = delete;
  JsonlSink& operator=(const JsonlSink&) = delete;

  void on_event(const ConversionEvent& event) noexcept override;
  /// Writes the buffered lines to the file.
  Status flush();
  std::uint64_t events() const noexcept { return events_.load(std::memory_order_relaxed); }
  /// Events that could not be written (disk full, ...); see the flush() error.
  std::uint64_t lost_events() const noexcept { return lost_.load(std::memory_order_relaxed); }
  const std::string& path() const noexcept { return path_; }

 private:
  JsonlSink(int fd, std::string path);
  Status write_locked();

  int fd_;
  std::string path_;
  std::mutex mutex_;
  std::unique_ptr<char[]> buffer_;  // raw, never zero-filled
  std::size_t used_ = 0;
  CallSiteCache call_sites_;
  std::uint64_t buffered_events_ = 0;
  std::atomic<std::uint64_t> events_{0};
  std::atomic<std::uint64_t> lost_{0};
};

}  // namespace neat

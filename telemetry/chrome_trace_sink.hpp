// ChromeTraceSink: conversion events as Chrome Trace Event JSON, which
// Perfetto (ui.perfetto.dev) and chrome://tracing open. Each conversion is a
// complete slice ("X") on the track of its stage (or of its thread when no
// stage is set), named "<kind> <reason>", with args: bytes, reason, policy,
// source, destination, graph, stage, edge, frame and call site. A counter
// track per edge ("bytes copied: <edge>") shows cumulative bytes copied.
//
// Ownership: keeps events in memory until write() (also on destruction).
// Threading: on_event() and write() are thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "neat/contract/error.hpp"
#include "neat/telemetry/event_sink.hpp"

namespace neat {

class ChromeTraceSink final : public EventSink {
 public:
  /// A sink that writes `path` on write() and on destruction. Fails now if
  /// `path` cannot be created.
  static Result<std::shared_ptr<ChromeTraceSink>> open(const std::string& path);
  /// A sink that only builds the JSON in memory (to_json()).
  ChromeTraceSink() = default;
  ~ChromeTraceSink() override;

  void on_event(const ConversionEvent& event) noexcept override;
  /// A slice from the frame's capture to the sink on the track "latency: sink
  /// '<name>'", its args {"type":"frame", ...} (as in the JSON Lines trace).
  void on_frame(const FrameEvent& event) noexcept override;
  /// The whole trace as JSON text.
  std::string to_json() const;
  /// Writes (rewrites) the file given to open().
  Status write() const;
  std::size_t size() const;

 private:
  std::string path_;
  mutable std::mutex mutex_;
  std::vector<std::string> events_;  // pre-encoded event JSON objects (slice args)
  std::vector<std::string> names_;   // "<kind> <reason>"
  std::vector<std::string> kinds_;
  std::vector<std::int64_t> ts_, dur_;
  std::vector<std::string> track_;  // stage or "thread N"
  std::vector<std::string> edge_;
  std::vector<std::int64_t> bytes_;
};

}  // namespace neat

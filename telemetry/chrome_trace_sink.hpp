// ChromeTraceSink: conversion events as Chrome Trace Event JSON, which
// Perfetto (ui.perfetto.dev) and chrome://tracing open. Each conversion is a
// complete slice ("X") on the track of its stage (or of its thread when no
// stage is set), named "<kind> <reason>", with args: bytes, reason, policy,
// source, destination, graph, stage, edge, frame and call site. A counter
// track per edge ("bytes copied: <edge>") shows cumulative bytes copied.
//
// A sink made by open() streams to its file in the JSON Array Format, one
// event per line: memory stays constant however long the run, what is
// buffered is written at least once a second, and a file cut short by a
// crash or kill -9 still opens (the format lets the closing "]" be missing;
// `neat audit` reads it and says it was cut short). Like the JSON Lines
// trace it starts with a metadata event "neat_trace" (args: version 2, the
// run, the part), ends with one named "neat_trace_end" on close(), and with
// max_bytes rotates (PATH.1 newest ... PATH.keep), each part a whole trace.
// A sink made with the default constructor keeps the trace in memory
// (to_json(); tests and short in-process captures).
//
// Ownership: a file sink owns its file and a flusher thread.
// Threading: on_event(), on_frame(), flush(), close() and to_json() are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "neat/contract/error.hpp"
#include "neat/telemetry/event_sink.hpp"

namespace neat {

namespace detail {
class TraceFile;  // telemetry/internal/trace_file.hpp
}

struct ChromeTraceSinkOptions {
  std::int64_t max_bytes = 0;  ///< rotate before the file grows past this; 0: never
  int keep = 5;                ///< rotated files kept (PATH.1 newest ... PATH.keep)
  /// The longest an event waits in memory before it is written.
  std::chrono::milliseconds flush_interval = std::chrono::seconds(1);
};

class ChromeTraceSink final : public EventSink {
 public:
  /// A sink streaming to `path` (created or truncated now). FailedPrecondition
  /// when it cannot be created; InvalidArgument for bad options (as JsonlSink).
  static Result<std::shared_ptr<ChromeTraceSink>> open(const std::string& path,
                                                       const ChromeTraceSinkOptions& options = {});
  /// A sink that keeps the trace in memory (to_json()).
  ChromeTraceSink();
  ~ChromeTraceSink() override;  ///< close()
  ChromeTraceSink(const ChromeTraceSink&) = delete;
  ChromeTraceSink& operator=(const ChromeTraceSink&) = delete;

  void on_event(const ConversionEvent& event) noexcept override;
  /// A slice from the frame's capture to the sink on the track "latency: sink
  /// '<name>'", its args {"type":"frame", ...} (as in the JSON Lines trace).
  void on_frame(const FrameEvent& event) noexcept override;
  /// An instant on the track "stream '<name>'", named after the new state.
  void on_stream(const StreamEvent& event) noexcept override;
  void on_output(const OutputEvent& event) noexcept override;
  /// Memory sinks: the whole trace as JSON text, as close() would end it.
  /// File sinks: FailedPrecondition (the trace is in the file).
  Result<std::string> to_json() const;
  /// File sinks: writes what is buffered (memory sinks: nothing to do).
  Status flush();
  /// File sinks: writes what is buffered and the end of the trace, and closes
  /// the file (idempotent; also on destruction). Events after it are lost.
  Status close();
  /// Events (conversions and frame records) recorded so far.
  std::size_t size() const;
  std::uint64_t rotations() const noexcept;

 private:
  std::string header(int part) const;
  std::string footer(bool last) const;
  void add(const std::string& name, const char* category, std::int64_t ts_ns, std::int64_t dur_ns,
           const std::string& track, const std::string& args, std::string_view edge,
           std::int64_t bytes);

  std::string run_;
  std::int64_t pid_ = 0;
  std::unique_ptr<detail::TraceFile> file_;  // null: in memory
  mutable std::mutex memory_mutex_;          // memory sinks: guards the state below
  // Guarded by file_'s mutex (file sinks) or memory_mutex_:
  std::string memory_;                          // memory sinks: the lines so far
  std::map<std::string, std::int64_t> tracks_;  // track -> tid, in order of appearance
  std::map<std::string, std::int64_t> edge_bytes_;
  std::string line_;  // reused: one event's lines
  std::atomic<std::uint64_t> events_{0};
};

}  // namespace neat

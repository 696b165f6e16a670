// Event sinks: where conversion events go. Sinks are pluggable (the JSON
// Lines, Chrome trace and Prometheus exporters plug in here); MemorySink keeps
// events in memory for tests, demos and in-process inspection.
//
// Ownership: add_event_sink() shares the sink; the returned registration
// removes it when destroyed.
// Threading: emit_event() may run on any thread, concurrently; sinks must be
// thread-safe. Sinks are called outside the registry's lock, so a sink may
// itself register sinks or cause events.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "neat/telemetry/event.hpp"

namespace neat {

class EventSink {
 public:
  virtual ~EventSink() = default;
  /// Must not throw. `event`'s string_views are valid during the call only.
  virtual void on_event(const ConversionEvent& event) noexcept = 0;
  /// A frame reached a sink (its latency). Default: ignored.
  virtual void on_frame(const FrameEvent& event) noexcept { (void)event; }
  /// A stream changed state. Default: ignored.
  virtual void on_stream(const StreamEvent& event) noexcept { (void)event; }
  /// A track started or ended; a message sink's broker changed. Default: ignored.
  virtual void on_output(const OutputEvent& event) noexcept { (void)event; }
};

/// RAII registration: the sink receives events until this is destroyed or reset().
class SinkRegistration {
 public:
  SinkRegistration() = default;
  explicit SinkRegistration(EventSink* sink) noexcept : sink_(sink) {}
  SinkRegistration(SinkRegistration&& o) noexcept : sink_(o.sink_) { o.sink_ = nullptr; }
  SinkRegistration& operator=(SinkRegistration&& o) noexcept;
  SinkRegistration(const SinkRegistration&) = delete;
  SinkRegistration& operator=(const SinkRegistration&) = delete;
  ~SinkRegistration() { reset(); }
  void reset() noexcept;

 private:
  EventSink* sink_ = nullptr;
};

[[nodiscard]] SinkRegistration add_event_sink(std::shared_ptr<EventSink> sink);
/// Delivers `event` to every registered sink.
void emit_event(const ConversionEvent& event) noexcept;
/// Delivers a frame's latency record to every registered sink.
void emit_frame_event(const FrameEvent& event) noexcept;
/// Delivers a stream's state change to every registered sink.
void emit_stream_event(const StreamEvent& event) noexcept;
/// Delivers a track's start or end, or a broker's change, to every registered sink.
void emit_output_event(const OutputEvent& event) noexcept;
/// Number of registered sinks (cheap; for fast paths).
std::size_t event_sink_count() noexcept;

/// Keeps every event it receives (strings copied).
class MemorySink final : public EventSink {
 public:
  void on_event(const ConversionEvent& event) noexcept override;
  std::vector<OwnedEvent> events() const;
  std::size_t size() const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::vector<OwnedEvent> events_;
};

}  // namespace neat

// ConversionEvent: the record of one pack, convert or transfer (and of every
// copying make_writable() and clone()): kind, typed reason, bytes, duration,
// source and destination, explicit or implicit, the policy in force, the call
// site, and the graph / stage / edge / stream / frame context.
//
// Ownership: string_views in an event point at static strings or at names
// owned by whoever set the context; they are valid during the sink callback
// only. Sinks that keep events copy them (see OwnedEvent).
// Threading: plain values.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>

#include "neat/contract/copy_gate.hpp"

namespace neat {

struct ConversionEvent {
  ConversionKind kind = ConversionKind::Pack;
  ConversionReason reason = ConversionReason::UserRequest;
  bool explicit_call = true;
  bool loud = false;  ///< recorded regardless of policy (a refused must-donate)
  ConversionPolicy policy = ConversionPolicy::Strict;
  std::int64_t bytes_read = 0;
  std::int64_t bytes_written = 0;
  std::int64_t duration_ns = 0;
  std::int64_t timestamp_ns = 0;  ///< system clock, ns since the Unix epoch, at the end
  std::uint64_t thread_id = 0;    ///< a stable per-thread number (1, 2, ...)
  TensorDescription source;
  TensorDescription destination;
  std::string_view operation;  ///< "clone", "contiguous", "make_writable", ...
  std::string_view detail;     ///< e.g. "yuv bt709 limited (from the frame)"; may be empty
  std::source_location where;
  std::string_view graph;
  std::string_view stage;
  std::string_view edge;
  std::string_view stream;  ///< the frame's stream (a source's name); may be empty
  std::int64_t frame = -1;
};

/// A frame leaving a stage graph at a sink, with its latency from capture
/// (FrameMeta::capture_ns) to the sink taking it. Sent to the event sinks
/// (traces) only while one is registered; `neat audit` reads it back.
struct FrameEvent {
  std::string_view graph;
  std::string_view sink;
  std::string_view stream;  ///< the frame's stream; may be empty
  std::int64_t frame = -1;
  std::int64_t latency_ns = 0;
  std::int64_t timestamp_ns = 0;  ///< system clock, ns since the Unix epoch, at the sink
  std::uint64_t thread_id = 0;
};

/// A stream of a stage graph changed state (up, stalled, restarting, ...),
/// with the reason ("no frame for 5 s", the source's error). Sent to the
/// event sinks (traces); `neat audit` reads it back.
struct StreamEvent {
  std::string_view graph;
  std::string_view stream;
  std::string_view state;         ///< "starting", "up", "stalled", "restarting", "ended", "failed"
  std::string_view reason;        ///< may be empty
  std::uint64_t restarts = 0;     ///< restart attempts so far
  std::int64_t timestamp_ns = 0;  ///< system clock, ns since the Unix epoch
  std::uint64_t thread_id = 0;
};

/// What left a frame for the world: a track that started or ended (the
/// track stage), a message sink's broker that came up or went down, or
/// messages a full spool dropped. Sent to the event sinks (traces); `neat
/// audit` skips them. Emitted only on these changes, never per frame.
struct OutputEvent {
  std::string_view type;   ///< "track" or "delivery"
  std::string_view event;  ///< track: "start", "end"; delivery: "up", "down", "dropped"
  std::string_view graph;
  std::string_view node;          ///< the track stage's name, or the sink's kind ("mqtt", "kafka")
  std::string_view stream;        ///< track: its stream
  std::string_view detail;        ///< delivery: the endpoint and the reason
  std::int64_t frame = -1;        ///< track: the frame where it started or ended
  std::int64_t id = 0;            ///< track: its id; dropped: how many since the last such event
  std::int64_t timestamp_ns = 0;  ///< system clock, ns since the Unix epoch
  std::uint64_t thread_id = 0;
};

/// An event with its strings copied, for sinks that keep events.
struct OwnedEvent {
  ConversionEvent event;  ///< string_views below point into this object's strings
  std::string operation, detail, file, function, graph, stage, edge, stream;
  int line = 0;

  explicit OwnedEvent(const ConversionEvent& e);
  OwnedEvent(const OwnedEvent& other);
  OwnedEvent& operator=(const OwnedEvent& other);

 private:
  void rebind() noexcept;
};

/// "pack (not_writable) 6220800 B in make_writable at demo.cpp:42: u8 [...] -> u8 [...]".
std::string to_string(const ConversionEvent& e);

/// A small per-thread number for traces (1 for the first thread that asks, ...).
std::uint64_t current_thread_number() noexcept;

}  // namespace neat

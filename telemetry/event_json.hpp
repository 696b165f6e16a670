// The JSON encoding of a ConversionEvent, shared by the JSON Lines and Chrome
// trace exporters and read back by `neat audit`: append_event_json() writes
// one object with std::to_chars and no allocation beyond `out` growing.
//
// Fields: ts_ns, duration_ns, kind, reason, explicit, loud, policy, bytes
// (written), bytes_read, thread, graph, stage, edge, frame, src and dst
// ({dtype, shape, format, layout, device ("cpu:0"), storage, contiguous}),
// operation, file, line, function.
//
// Threading: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "neat/contract/copy_gate.hpp"
#include "neat/telemetry/event.hpp"

namespace neat {

/// Remembers the encoded call-site part of recent events (operation, file,
/// line, function): sinks that encode many events from the same places keep
/// one and pass it to append_event_json(). Not thread-safe: guard it with
/// the sink's own lock.
class CallSiteCache {
 public:
  struct Entry {
    const char* file = nullptr;
    const char* function = nullptr;
    std::uint_least32_t line = 0;
    std::string operation;
    std::string encoded;
  };
  static constexpr int kSize = 16;
  Entry* find(const ConversionEvent& e) noexcept;
  Entry& insert(const ConversionEvent& e);

  /// Encoded tensor descriptions: a pipeline describes the same tensors every frame.
  struct Description {
    TensorDescription key;
    std::string encoded;
    bool used = false;
  };
  static constexpr int kDescriptions = 8;
  const std::string* find(const TensorDescription& d) const noexcept;
  void insert(const TensorDescription& d, std::string encoded);

 private:
  Entry entries_[kSize];
  int next_ = 0;
  Description descriptions_[kDescriptions];
  int next_description_ = 0;
};

/// Appends `s` as a JSON string literal (quotes and escapes included).
void append_json_string(std::string& out, std::string_view s);
/// Appends {"dtype":..,"shape":[..],...}.
void append_description_json(std::string& out, const TensorDescription& d);
/// The most bytes encode_event_json() can write for `e` (pass the cache that
/// encode_event_json() will get).
std::size_t event_json_bound(const ConversionEvent& e, CallSiteCache* cache = nullptr) noexcept;
/// Writes the event as one JSON object at `dst` (at least event_json_bound()
/// bytes); returns the end. For sinks with their own buffers.
char* encode_event_json(char* dst, const ConversionEvent& e, CallSiteCache* cache = nullptr);

/// Appends the event as one JSON object (no trailing newline).
void append_event_json(std::string& out, const ConversionEvent& e, CallSiteCache* cache = nullptr);
/// Appends a frame record: {"type":"frame","ts_ns":..,"graph":..,"sink":..,
/// "frame":..,"latency_ns":..,"thread":..} (no allocation beyond `out` growing).
void append_frame_json(std::string& out, const FrameEvent& e);
/// Appends a stream record: {"type":"stream","ts_ns":..,"graph":..,"stream":..,
/// "state":..,"reason":..,"restarts":..,"thread":..}.
void append_stream_json(std::string& out, const StreamEvent& e);
/// {"type":"track"|"delivery","event":...,"ts_ns":...,"graph":...,"node":...,
/// "stream":...,"detail":...,"frame":...,"id":...,"thread":...}
void append_output_json(std::string& out, const OutputEvent& e);

}  // namespace neat

#include "neat/telemetry/event_sink.hpp"

#include <algorithm>
#include <atomic>

namespace neat {

namespace {

struct Registry {
  std::mutex mutex;
  std::shared_ptr<const std::vector<std::shared_ptr<EventSink>>> sinks =
      std::make_shared<std::vector<std::shared_ptr<EventSink>>>();
  std::atomic<std::size_t> count{0};
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

SinkRegistration add_event_sink(std::shared_ptr<EventSink> sink) {
  if (!sink) return SinkRegistration();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto next = std::make_shared<std::vector<std::shared_ptr<EventSink>>>(*r.sinks);
  EventSink* raw = sink.get();
  next->push_back(std::move(sink));
  r.sinks = std::move(next);
  r.count.store(r.sinks->size(), std::memory_order_release);
  return SinkRegistration(raw);
}

SinkRegistration& SinkRegistration::operator=(SinkRegistration&& o) noexcept {
  if (this != &o) {
    reset();
    sink_ = o.sink_;
    o.sink_ = nullptr;
  }
  return *this;
}

void SinkRegistration::reset() noexcept {
  if (sink_ == nullptr) return;
  Registry& r = registry();
  std::shared_ptr<const std::vector<std::shared_ptr<EventSink>>> old;
  try {
    std::lock_guard lock(r.mutex);
    auto next = std::make_shared<std::vector<std::shared_ptr<EventSink>>>();
    for (const auto& s : *r.sinks) {
      if (s.get() != sink_) next->push_back(s);
    }
    old = std::move(r.sinks);
    r.sinks = std::move(next);
    r.count.store(r.sinks->size(), std::memory_order_release);
  } catch (...) {
    // Out of memory while unregistering: leave the sink registered rather than crash.
  }
  sink_ = nullptr;
}

namespace {
// Calls `deliver(sink)` for every registered sink, outside the registry's lock.
template <class Deliver>
void for_each_sink(Deliver deliver) noexcept {
  Registry& r = registry();
  if (r.count.load(std::memory_order_acquire) == 0) return;
  std::shared_ptr<const std::vector<std::shared_ptr<EventSink>>> sinks;
  {
    std::lock_guard lock(r.mutex);
    sinks = r.sinks;
  }
  for (const auto& s : *sinks)
    deliver(*s);
}
}  // namespace

void emit_event(const ConversionEvent& event) noexcept {
  for_each_sink([&](EventSink& s) { s.on_event(event); });
}

void emit_frame_event(const FrameEvent& event) noexcept {
  for_each_sink([&](EventSink& s) { s.on_frame(event); });
}

void emit_stream_event(const StreamEvent& event) noexcept {
  for_each_sink([&](EventSink& s) { s.on_stream(event); });
}

void emit_output_event(const OutputEvent& event) noexcept {
  for_each_sink([&](EventSink& s) { s.on_output(event); });
}

std::size_t event_sink_count() noexcept {
  return registry().count.load(std::memory_order_acquire);
}

void MemorySink::on_event(const ConversionEvent& event) noexcept {
  try {
    std::lock_guard lock(mutex_);
    events_.emplace_back(event);
  } catch (...) {
    // Out of memory: drop this event rather than throw through the gate.
  }
}

std::vector<OwnedEvent> MemorySink::events() const {
  std::lock_guard lock(mutex_);
  return events_;
}

std::size_t MemorySink::size() const {
  std::lock_guard lock(mutex_);
  return events_.size();
}

void MemorySink::clear() {
  std::lock_guard lock(mutex_);
  events_.clear();
}

}  // namespace neat

#include "neat/telemetry/event.hpp"

#include <atomic>

namespace neat {

OwnedEvent::OwnedEvent(const ConversionEvent& e)
    : event(e),
      operation(e.operation),
      detail(e.detail),
      file(e.where.file_name()),
      function(e.where.function_name()),
      graph(e.graph),
      stage(e.stage),
      edge(e.edge),
      stream(e.stream),
      line(static_cast<int>(e.where.line())) {
  rebind();
}

OwnedEvent::OwnedEvent(const OwnedEvent& o)
    : event(o.event),
      operation(o.operation),
      detail(o.detail),
      file(o.file),
      function(o.function),
      graph(o.graph),
      stage(o.stage),
      edge(o.edge),
      stream(o.stream),
      line(o.line) {
  rebind();
}

OwnedEvent& OwnedEvent::operator=(const OwnedEvent& o) {
  if (this != &o) {
    event = o.event;
    operation = o.operation;
    detail = o.detail;
    file = o.file;
    function = o.function;
    graph = o.graph;
    stage = o.stage;
    edge = o.edge;
    stream = o.stream;
    line = o.line;
    rebind();
  }
  return *this;
}

void OwnedEvent::rebind() noexcept {
  event.operation = operation;
  event.detail = detail;
  event.graph = graph;
  event.stage = stage;
  event.edge = edge;
  event.stream = stream;
}

std::string to_string(const ConversionEvent& e) {
  std::string out(to_string(e.kind));
  out += " (";
  out += to_string(e.reason);
  out += ") ";
  out += std::to_string(e.bytes_written);
  out += " B";
  out += e.explicit_call ? " explicit" : " implicit";
  out += " under ";
  out += to_string(e.policy);
  if (!e.operation.empty()) {
    out += " in ";
    out += e.operation;
  }
  if (!e.detail.empty()) {
    out += " [";
    out += e.detail;
    out += ']';
  }
  out += " at ";
  out += e.where.file_name();
  out += ':';
  out += std::to_string(e.where.line());
  if (!e.stage.empty()) {
    out += " stage '";
    out += e.stage;
    out += "'";
  }
  if (!e.edge.empty()) {
    out += " edge '";
    out += e.edge;
    out += "'";
  }
  if (e.frame >= 0) out += " frame " + std::to_string(e.frame);
  out += ": ";
  out += e.source.to_string();
  out += " -> ";
  out += e.destination.to_string();
  out += " (" + std::to_string(e.duration_ns) + " ns)";
  return out;
}

std::uint64_t current_thread_number() noexcept {
  static std::atomic<std::uint64_t> next{1};
  thread_local const std::uint64_t mine = next.fetch_add(1, std::memory_order_relaxed);
  return mine;
}

}  // namespace neat

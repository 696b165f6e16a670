// GraphPlan::explain(): the plan as text (nodes, edges, conversions,
// policies, pools, bytes per frame).
#include "neat/stages/graph.hpp"
#include "neat/stages/internal/graph_impl.hpp"

namespace neat {

using namespace detail;

namespace {

std::string seconds_text(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

// "live; stalled after 5 s without a frame; restarted (backoff 0.5 s to 30 s); every frame"
std::string stream_text(const NodePlan& n) {
  const SourceOptions& o = n.source;
  std::string out = n.live ? "live" : "not live";
  out += o.stall_timeout.count() > 0
             ? "; stalled after " + seconds_text(o.stall_timeout) + " without a frame"
             : "; no stall watchdog";
  const bool restarts =
      o.restart == RestartPolicy::Always || (o.restart == RestartPolicy::Live && n.live);
  out += restarts ? "; restarted when down (backoff " + seconds_text(o.backoff_min) + " to " +
                        seconds_text(o.backoff_max) + ")"
         : o.restart == RestartPolicy::Never ? "; restart never: down fails the graph"
                                             : "; an error fails the graph";
  if (o.rate > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "; at most %g frames/s (the rest skipped, counted)", o.rate);
    out += buf;
  } else {
    out += "; every frame";
  }
  return out;
}

}  // namespace

std::string GraphPlan::explain() const {
  std::string out = "graph '" + graph + "' (policy " + std::string(to_string(policy)) + ")\n";
  if (max_source_frames > 0) {
    out += "sources end after at most " + std::to_string(max_source_frames) + " frame(s)\n";
  }
  out += "nodes:\n";
  std::size_t width = 0;
  for (const auto& n : nodes)
    width = std::max(width, n.name.size());
  for (const auto& n : nodes) {
    std::string line = "  [" + std::string(node_kind_text(n.kind)) + "] ";
    line.resize(11, ' ');
    std::string name = n.name;
    name.resize(width, ' ');
    line += name + "  " + n.description;
    if (n.kind != NodeKind::Sink) line += "  -> " + n.output.to_string();
    if (n.policy) line += "  (policy " + std::string(to_string(*n.policy)) + ")";
    if (n.kind == NodeKind::Stage) line += "  [pool " + std::to_string(n.pool_buffers) + "]";
    out += line + "\n";
    if (n.kind == NodeKind::Source) out += "      stream: " + stream_text(n) + "\n";
    std::string inputs;
    int count = 0;
    for (const auto& e : edges) {
      if (e.to != n.name) continue;
      inputs += (inputs.empty() ? "" : ", ") + e.from;
      ++count;
    }
    if (count > 1)
      out += "      takes its " + std::to_string(count) + " inputs in turn: " + inputs + "\n";
    if (n.max_latency.count() > 0) {
      out += "      drops frames older than " + std::to_string(n.max_latency.count()) +
             " ms since capture (oldest first, counted as late)\n";
    }
    if (!n.opened) out += "      checked, not opened: a plan writes nothing\n";
    for (const auto& c : n.inside) {
      out += "      inside: " + c.element + " " + std::string(to_string(c.kind)) + " (" +
             std::string(to_string(c.reason)) + ") " + c.what + ": " + bytes_text(c.bytes_written) +
             " per frame, " +
             (c.explicit_call ? "explicit (in the description)"
                              : "implicit (inserted by NeatTensor)") +
             "\n";
    }
  }
  out += "edges:\n";
  for (const auto& e : edges) {
    out +=
        "  " + e.name + "  [" + e.produced.to_string() + "]  policy " +
        std::string(to_string(e.policy)) + ", queue " + std::to_string(e.capacity) +
        (e.requested_capacity > e.capacity ? " (" + std::to_string(e.requested_capacity) +
                                                 " asked; lowered to fit the frame-memory budget)"
                                           : std::string()) +
        (e.conversions.empty() ? "" : ", pool " + std::to_string(e.pool_buffers)) + "\n";
    if (e.conversions.empty() && !e.copy_on_write) {
      out += "      hand-over, no copy\n";
    }
    for (const auto& c : e.conversions) {
      out += "      " + std::string(to_string(c.kind)) + " (" + std::string(to_string(c.reason)) +
             ") " + c.what + ": " + bytes_text(c.bytes_per_frame) + " per frame  [fix: " + c.fix +
             "]\n";
    }
    if (e.copy_on_write) {
      out += "      copy-on-write: '" + e.to + "' writes frames it shares with " +
             std::to_string(e.consumers_sharing - 1) +
             " other consumer(s): " + bytes_text(e.consumed.bytes()) + " per frame\n";
    } else if (e.consumers_sharing > 1) {
      out += "      shared read-only with " + std::to_string(e.consumers_sharing - 1) +
             " other consumer(s)\n";
    }
  }
  out += "expected bytes copied per frame on edges: " + bytes_text(edge_bytes_per_frame()) + "\n";
  std::int64_t in_stages = 0;
  for (const auto& n : nodes) {
    if (n.kind != NodeKind::Stage) continue;
    for (const auto& c : n.inside)
      in_stages += c.bytes_written;
  }
  if (const std::int64_t inner = inner_bytes_per_frame() - in_stages; inner > 0) {
    out += "expected bytes converted per frame inside GStreamer: " + bytes_text(inner) + "\n";
  }
  if (in_stages > 0) {
    out +=
        "expected bytes copied per frame inside stages (model runtimes): " + bytes_text(in_stages) +
        "\n";
  }
  out += "frame memory (the most frames alive at once, by who holds them):\n";
  for (const FramePool& p : memory) {
    out += "  " + p.name + "  " + std::to_string(p.buffers) + " x " + bytes_text(p.frame_bytes) +
           " = " + bytes_text(p.bytes()) +
           (p.allocated_by.empty() ? std::string()
                                   : " (allocated by " + p.allocated_by + ", not pooled)") +
           "\n      " + p.holders() + "\n";
  }
  out += "frame memory in all: " + bytes_text(frame_memory_bytes());
  if (max_frame_memory > 0) out += " (budget " + bytes_text(max_frame_memory) + ")";
  out += "\n";
  return out + threads.explain();
}

// "threads: 3 of 3 (2 hardware + 1): libtorch pool 2 (infer), kernel stages 1 (OpenCV's pool)"
std::string ThreadBudget::explain() const {
  std::string out = "threads: " + std::to_string(total()) + " of " + std::to_string(limit()) +
                    " (" + std::to_string(hardware) + " hardware + 1):";
  for (const Engine& e : engines) {
    out += " " + e.pool.name + " pool " + std::to_string(e.pool.threads) + " (" + e.stage + "),";
  }
  out += " kernel stages " + std::to_string(kernels) + " (OpenCV's pool)\n";
  return out;
}

}  // namespace neat

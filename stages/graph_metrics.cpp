// The graphs' live metrics in the Prometheus text format (graph.hpp).
#include <algorithm>
#include <string>
#include <vector>

#include "neat/kernels/model.hpp"
#include "neat/stages/graph.hpp"
#include "neat/stages/internal/graph_impl.hpp"
#include "neat/telemetry/prometheus.hpp"

namespace neat {

namespace {

using prometheus::family;
using prometheus::sample;

std::string_view kind_label(NodeKind k) {
  return detail::node_kind_text(k);
}

// The neat_messages_* and neat_broker_connected families: each message
// sink's delivery (label sink).
void delivery_families(std::string& out, const std::vector<GraphStats>& graphs) {
  bool any = false;
  for (const GraphStats& g : graphs)
    any = any || !g.deliveries.empty();
  if (!any) return;
  struct Counter {
    const char* name;
    const char* help;
    std::uint64_t DeliveryStats::*field;
    const char* type;
  };
  const Counter counters[] = {
      {"neat_messages_queued_total", "Messages a sink made (one per frame, track start and end).",
       &DeliveryStats::queued, "counter"},
      {"neat_messages_delivered_total", "Messages the broker acknowledged.",
       &DeliveryStats::delivered, "counter"},
      {"neat_messages_dropped_total",
       "Messages dropped from a full spool, never sent (the oldest first).",
       &DeliveryStats::dropped, "counter"},
      {"neat_messages_resent_total", "Messages sent again after a reconnect.",
       &DeliveryStats::resent, "counter"},
      {"neat_messages_spooled", "Messages waiting for the broker's acknowledgement.",
       &DeliveryStats::spooled, "gauge"},
      {"neat_broker_reconnects_total", "Times the connection to the broker was lost.",
       &DeliveryStats::reconnects, "counter"},
  };
  for (const Counter& c : counters) {
    family(out, c.name, c.type, c.help);
    for (const GraphStats& g : graphs)
      for (const auto& [name, d] : g.deliveries)
        sample(out, c.name, {{"graph", g.graph}, {"sink", name}}, d.*c.field);
  }
  family(out, "neat_broker_connected", "gauge", "1 while the sink is connected to its broker.");
  for (const GraphStats& g : graphs)
    for (const auto& [name, d] : g.deliveries)
      sample(out, "neat_broker_connected", {{"graph", g.graph}, {"sink", name}},
             std::uint64_t{d.connected ? 1u : 0u});
}

// The neat_stream_* families: each source's stream (label stream).
void stream_families(std::string& out, const std::vector<GraphStats>& graphs) {
  constexpr StreamState kStates[] = {StreamState::Starting, StreamState::Up,
                                     StreamState::Stalled,  StreamState::Restarting,
                                     StreamState::Ended,    StreamState::Failed};
  family(out, "neat_stream_up", "gauge", "1 while the stream's frames flow, 0 otherwise.");
  for (const GraphStats& g : graphs) {
    for (const StreamStats& s : g.streams)
      sample(out, "neat_stream_up", {{"graph", g.graph}, {"stream", s.name}},
             std::uint64_t{s.state == StreamState::Up ? 1u : 0u});
  }
  family(out, "neat_stream_state", "gauge",
         "The stream's state: 1 for the current one (starting, up, stalled, restarting, ended, "
         "failed).");
  for (const GraphStats& g : graphs) {
    for (const StreamStats& s : g.streams) {
      for (StreamState st : kStates)
        sample(out, "neat_stream_state",
               {{"graph", g.graph}, {"stream", s.name}, {"state", to_string(st)}},
               std::uint64_t{s.state == st ? 1u : 0u});
    }
  }
  family(out, "neat_stream_frames_total", "counter", "Frames the stream handed to the graph.");
  for (const GraphStats& g : graphs) {
    for (const StreamStats& s : g.streams)
      sample(out, "neat_stream_frames_total", {{"graph", g.graph}, {"stream", s.name}}, s.frames);
  }
  family(out, "neat_stream_dropped_frames_total", "counter",
         "The stream's frames not handed on, by reason: rate (skipped at the source), late "
         "(older than a stage's max latency), and the graph's drop reasons.");
  for (const GraphStats& g : graphs) {
    for (const StreamStats& s : g.streams) {
      for (const auto& [reason, count] : s.dropped)
        sample(out, "neat_stream_dropped_frames_total",
               {{"graph", g.graph}, {"stream", s.name}, {"reason", reason}}, count);
    }
  }
  family(out, "neat_stream_restarts_total", "counter", "Restart attempts of the stream's source.");
  for (const GraphStats& g : graphs) {
    for (const StreamStats& s : g.streams)
      sample(out, "neat_stream_restarts_total", {{"graph", g.graph}, {"stream", s.name}},
             s.restarts);
  }
  family(out, "neat_stream_last_frame_age_seconds", "gauge",
         "Seconds since the stream's last frame (-1 before its first).");
  for (const GraphStats& g : graphs) {
    for (const StreamStats& s : g.streams)
      sample(out, "neat_stream_last_frame_age_seconds", {{"graph", g.graph}, {"stream", s.name}},
             s.last_frame_age_seconds);
  }
}

}  // namespace

// libtorch's block cache (process-wide; there once a TorchScript model
// installed it): what it holds and how often it served a forward.
void torch_cache_families(std::string& out) {
  const TorchBlockCacheStats c = torch_block_cache_stats();
  if (!c.installed) return;
  struct Family {
    const char* name;
    const char* type;
    const char* help;
    std::int64_t value;
  };
  const Family families[] = {
      {"neat_torch_block_cache_held_bytes", "gauge",
       "Freed libtorch CPU blocks held for the next forward.", c.held_bytes},
      {"neat_torch_block_cache_limit_bytes", "gauge",
       "The most free bytes the block cache holds (NEAT_TORCH_BLOCK_CACHE_MIB).", c.limit_bytes},
      {"neat_torch_block_cache_reused_total", "counter",
       "Large libtorch allocations served from a held block.", c.reused},
      {"neat_torch_block_cache_from_system_total", "counter",
       "Large libtorch allocations with no held block (from the system allocator).", c.from_system},
      {"neat_torch_block_cache_released_total", "counter",
       "Freed large blocks given back to the system (over the limit).", c.released},
  };
  for (const Family& f : families) {
    family(out, f.name, f.type, f.help);
    sample(out, f.name, {}, static_cast<std::uint64_t>(std::max<std::int64_t>(f.value, 0)));
  }
}

std::string graph_prometheus_text(const std::vector<GraphStats>& graphs) {
  std::string out;
  if (graphs.empty()) return out;
  family(out, "neat_graph_running", "gauge", "1 while the graph's threads run, 0 once they ended.");
  for (const GraphStats& g : graphs)
    sample(out, "neat_graph_running", {{"graph", g.graph}}, std::uint64_t{g.running ? 1u : 0u});
  family(out, "neat_graph_uptime_seconds", "gauge", "Seconds since the graph started.");
  for (const GraphStats& g : graphs)
    sample(out, "neat_graph_uptime_seconds", {{"graph", g.graph}}, g.seconds);
  family(out, "neat_graph_source_frames_total", "counter", "Frames the graph's sources emitted.");
  for (const GraphStats& g : graphs)
    sample(out, "neat_graph_source_frames_total", {{"graph", g.graph}}, g.frames.source_frames);
  family(
      out, "neat_graph_deliveries_total", "counter",
      "Deliveries created (a frame on its way to one consumer; fan-out makes one per consumer).");
  for (const GraphStats& g : graphs)
    sample(out, "neat_graph_deliveries_total", {{"graph", g.graph}}, g.frames.produced);
  family(out, "neat_graph_consumed_total", "counter", "Deliveries the sinks took and kept.");
  for (const GraphStats& g : graphs)
    sample(out, "neat_graph_consumed_total", {{"graph", g.graph}}, g.frames.consumed);

  family(out, "neat_stage_frames_in_total", "counter",
         "Frames a stage or sink took from its input edge.");
  for (const GraphStats& g : graphs) {
    for (const NodeStats& n : g.nodes) {
      if (n.kind == NodeKind::Source) continue;
      sample(out, "neat_stage_frames_in_total",
             {{"graph", g.graph}, {"stage", n.name}, {"kind", kind_label(n.kind)}}, n.frames_in);
    }
  }
  family(out, "neat_stage_frames_out_total", "counter",
         "Frames a source emitted, a stage handed on, or a sink kept.");
  for (const GraphStats& g : graphs) {
    for (const NodeStats& n : g.nodes)
      sample(out, "neat_stage_frames_out_total",
             {{"graph", g.graph}, {"stage", n.name}, {"kind", kind_label(n.kind)}}, n.frames_out);
  }
  family(out, "neat_stage_dropped_frames_total", "counter",
         "Frames dropped at a stage or sink (or on its input edge), by reason: stopped, "
         "stage_error, sink_overflow, filtered, late.");
  for (const GraphStats& g : graphs) {
    for (const NodeStats& n : g.nodes) {
      if (n.kind == NodeKind::Source) continue;
      for (const auto& [reason, count] : n.dropped)
        sample(out, "neat_stage_dropped_frames_total",
               {{"graph", g.graph}, {"stage", n.name}, {"reason", reason}}, count);
    }
  }
  family(out, "neat_stage_busy_seconds", "histogram",
         "Time a stage or sink spent on one frame (its input edge's conversions included).");
  for (const GraphStats& g : graphs) {
    for (const NodeStats& n : g.nodes) {
      if (n.kind == NodeKind::Source) continue;
      const auto kind = kind_label(n.kind);
      for (std::size_t b = 0; b < n.busy.bounds.size() && b < n.busy.cumulative.size(); ++b) {
        const std::string le = prometheus::number(n.busy.bounds[b]);
        sample(out, "neat_stage_busy_seconds_bucket",
               {{"graph", g.graph}, {"stage", n.name}, {"kind", kind}, {"le", le}},
               n.busy.cumulative[b]);
      }
      sample(out, "neat_stage_busy_seconds_bucket",
             {{"graph", g.graph}, {"stage", n.name}, {"kind", kind}, {"le", "+Inf"}}, n.busy.count);
      sample(out, "neat_stage_busy_seconds_sum",
             {{"graph", g.graph}, {"stage", n.name}, {"kind", kind}}, n.busy.sum_seconds);
      sample(out, "neat_stage_busy_seconds_count",
             {{"graph", g.graph}, {"stage", n.name}, {"kind", kind}}, n.busy.count);
    }
  }
  family(out, "neat_sink_latency_seconds", "histogram",
         "Latency per frame from its capture (a live source's timestamp, else when the source "
         "handed it over) to the sink taking it.");
  for (const GraphStats& g : graphs) {
    for (const NodeStats& n : g.nodes) {
      if (n.kind != NodeKind::Sink) continue;
      const DurationHistogram& h = n.latency_histogram;
      for (std::size_t b = 0; b < h.bounds.size() && b < h.cumulative.size(); ++b) {
        sample(out, "neat_sink_latency_seconds_bucket",
               {{"graph", g.graph}, {"sink", n.name}, {"le", prometheus::number(h.bounds[b])}},
               h.cumulative[b]);
      }
      sample(out, "neat_sink_latency_seconds_bucket",
             {{"graph", g.graph}, {"sink", n.name}, {"le", "+Inf"}}, h.count);
      sample(out, "neat_sink_latency_seconds_sum", {{"graph", g.graph}, {"sink", n.name}},
             h.sum_seconds);
      sample(out, "neat_sink_latency_seconds_count", {{"graph", g.graph}, {"sink", n.name}},
             h.count);
    }
  }
  family(out, "neat_graph_frame_memory_bytes", "gauge",
         "The graph's memory plan: the most bytes of frames it holds at once.");
  for (const GraphStats& g : graphs)
    sample(out, "neat_graph_frame_memory_bytes", {{"graph", g.graph}},
           static_cast<std::uint64_t>(std::max<std::int64_t>(g.frame_memory_bytes, 0)));
  family(out, "neat_edge_frames_total", "counter", "Frames an edge carried.");
  for (const GraphStats& g : graphs) {
    for (const EdgeStats& e : g.edges)
      sample(out, "neat_edge_frames_total",
             {{"graph", g.graph}, {"edge", e.name}, {"from", e.from}, {"to", e.to}}, e.frames);
  }
  family(out, "neat_edge_queue_depth", "gauge", "Frames waiting in an edge's queue.");
  for (const GraphStats& g : graphs) {
    for (const EdgeStats& e : g.edges)
      sample(out, "neat_edge_queue_depth", {{"graph", g.graph}, {"edge", e.name}},
             static_cast<std::uint64_t>(e.queue_depth));
  }
  family(out, "neat_edge_queue_capacity", "gauge", "Frames an edge's queue holds at most.");
  for (const GraphStats& g : graphs) {
    for (const EdgeStats& e : g.edges)
      sample(out, "neat_edge_queue_capacity", {{"graph", g.graph}, {"edge", e.name}},
             static_cast<std::uint64_t>(e.capacity));
  }
  stream_families(out, graphs);
  delivery_families(out, graphs);
  torch_cache_families(out);
  return out;
}

}  // namespace neat

// Python dicts of a graph's reports: the live stats, the plan that explain()
// prints, and a finished run's frame accounting and latency. Internal to the
// extension.
#include <pybind11/stl.h>

#include "graph_state.hpp"

namespace neatpy {

py::dict accounting_dict(const neat::FrameAccounting& a) {
  py::dict d;
  d["source_frames"] = a.source_frames;
  d["deliveries"] = a.produced;  // the word `neat run` prints (C++: FrameAccounting::produced)
  d["consumed"] = a.consumed;
  d["dropped"] = a.dropped;
  d["balanced"] = a.balanced();
  return d;
}

// The message sinks' delivery (mqtt, kafka): one dict per sink.
py::list deliveries_list(const std::vector<std::pair<std::string, neat::DeliveryStats>>& all);

py::dict report_dict(const neat::RunReport& r) {
  py::dict d;
  d["frames"] = accounting_dict(r.frames);
  d["seconds"] = r.seconds;
  d["edge_frames"] = r.edge_frames;
  py::dict latency;
  for (const auto& [sink, s] : r.latency)
    latency[py::str(sink)] = duration_summary_dict(s);
  d["latency"] = latency;
  d["deliveries"] = deliveries_list(r.deliveries);
  return d;
}

py::dict stats_dict(const neat::GraphStats& s) {
  py::dict d;
  d["graph"] = s.graph;
  d["running"] = s.running;
  d["seconds"] = s.seconds;
  d["frame_memory_bytes"] = s.frame_memory_bytes;
  d["frames"] = accounting_dict(s.frames);
  py::list nodes;
  for (const auto& n : s.nodes) {
    py::dict nd;
    nd["name"] = n.name;
    nd["kind"] = n.kind == neat::NodeKind::Source  ? "source"
                 : n.kind == neat::NodeKind::Stage ? "stage"
                                                   : "sink";
    nd["frames_in"] = n.frames_in;
    nd["frames_out"] = n.frames_out;
    nd["dropped"] = n.dropped;
    nd["busy"] = duration_summary_dict(n.busy_summary);
    nd["queue_wait"] = duration_summary_dict(n.queue_wait);
    nd["latency"] = duration_summary_dict(n.latency);
    nodes.append(nd);
  }
  d["nodes"] = nodes;
  py::list edges;
  for (const auto& e : s.edges) {
    py::dict ed;
    ed["name"] = e.name;
    ed["frames"] = e.frames;
    ed["queue_depth"] = e.queue_depth;
    ed["capacity"] = e.capacity;
    edges.append(ed);
  }
  d["edges"] = edges;
  py::list pools;
  for (const auto& p : s.pools) {
    py::dict pd;
    pd["name"] = p.name;
    pd["frame_bytes"] = p.frame_bytes;
    pd["planned_buffers"] = p.planned_buffers;
    pd["peak_buffers"] = p.peak_buffers;
    pd["allocated_by"] = p.allocated_by.empty() ? py::object(py::none()) : py::str(p.allocated_by);
    pools.append(pd);
  }
  d["pools"] = pools;
  py::list streams;
  for (const auto& x : s.streams) {
    py::dict sd;
    sd["name"] = x.name;
    sd["index"] = x.index;
    sd["state"] = std::string(neat::to_string(x.state));
    sd["frames"] = x.frames;
    sd["restarts"] = x.restarts;
    sd["dropped"] = x.dropped;
    sd["last_frame_age_seconds"] = x.last_frame_age_seconds;
    sd["last_error"] = x.last_error;
    streams.append(sd);
  }
  d["streams"] = streams;
  d["deliveries"] = deliveries_list(s.deliveries);
  return d;
}

py::list deliveries_list(const std::vector<std::pair<std::string, neat::DeliveryStats>>& all) {
  py::list sinks;  // the message sinks' delivery (mqtt, kafka)
  for (const auto& [name, x] : all) {
    py::dict sd;
    sd["name"] = name;
    sd["endpoint"] = x.endpoint;
    sd["connected"] = x.connected;
    sd["queued"] = x.queued;
    sd["delivered"] = x.delivered;
    sd["dropped"] = x.dropped;
    sd["resent"] = x.resent;
    sd["spooled"] = x.spooled;
    sd["reconnects"] = x.reconnects;
    sd["recovered"] = x.recovered;
    sd["kept"] = x.kept;
    sd["last_error"] = x.last_error;
    sinks.append(sd);
  }
  return sinks;
}

py::dict plan_dict(const neat::GraphPlan& p) {
  py::dict d;
  d["graph"] = p.graph;
  d["policy"] = std::string(neat::to_string(p.policy));
  d["frame_memory_bytes"] = p.frame_memory_bytes();
  d["edge_bytes_per_frame"] = p.edge_bytes_per_frame();
  d["inner_bytes_per_frame"] = p.inner_bytes_per_frame();
  py::list nodes;
  for (const auto& n : p.nodes) {
    py::dict nd;
    nd["name"] = n.name;
    nd["description"] = n.description;
    nd["output"] = n.output.to_string();
    nodes.append(nd);
  }
  d["nodes"] = nodes;
  py::list edges;
  for (const auto& e : p.edges) {
    py::dict ed;
    ed["name"] = e.name;
    ed["produced"] = e.produced.to_string();
    ed["consumed"] = e.consumed.to_string();
    ed["policy"] = std::string(neat::to_string(e.policy));
    ed["bytes_per_frame"] = e.bytes_per_frame();
    ed["capacity"] = e.capacity;
    py::list convs;
    for (const auto& c : e.conversions) {
      py::dict cd;
      cd["kind"] = std::string(neat::to_string(c.kind));
      cd["reason"] = std::string(neat::to_string(c.reason));
      cd["what"] = c.what;
      cd["bytes_per_frame"] = c.bytes_per_frame;
      cd["fix"] = c.fix;
      convs.append(cd);
    }
    ed["conversions"] = convs;
    edges.append(ed);
  }
  d["edges"] = edges;
  return d;
}

}  // namespace neatpy

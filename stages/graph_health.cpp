// A graph's part of the metrics server's /readyz and /status (graph.hpp):
// ready while it runs with every stream up and every message sink connected.
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "neat/stages/graph.hpp"

namespace neat {

namespace {

// Frames per second of each stream since the previous look (the first
// look: since the start).
struct FpsWindow {
  std::mutex mutex;
  std::map<std::string, std::pair<std::uint64_t, double>> last;  // frames, seconds
  double fps(const std::string& stream, std::uint64_t frames, double seconds) {
    std::lock_guard lock(mutex);
    auto [it, fresh] = last.try_emplace(stream, 0, 0.0);
    const double dt = seconds - it->second.second;
    const double rate = dt > 0 ? static_cast<double>(frames - it->second.first) / dt : 0;
    if (dt >= 1.0 || fresh) it->second = {frames, seconds};  // a window of at least 1 s
    return rate;
  }
};

Health graph_health(const GraphStats& g, FpsWindow* window) {
  Health h;
  nlohmann::json j;
  j["graph"] = g.graph;
  j["running"] = g.running;
  j["seconds"] = g.seconds;
  if (!g.running) {
    h.not_ready.push_back("graph '" + g.graph + "' is not running" +
                          (g.seconds > 0 ? " (it ended)" : " (not started)"));
  }
  nlohmann::json streams = nlohmann::json::array();
  for (const StreamStats& s : g.streams) {
    nlohmann::json o;
    o["name"] = s.name;
    o["state"] = std::string(to_string(s.state));
    o["frames"] = s.frames;
    o["fps"] = window ? window->fps(s.name, s.frames, g.seconds) : 0.0;
    o["restarts"] = s.restarts;
    o["last_frame_age_seconds"] = s.last_frame_age_seconds;
    o["last_error"] = s.last_error;
    o["dropped"] = s.dropped;
    streams.push_back(std::move(o));
    if (g.running && s.state != StreamState::Up) {
      h.not_ready.push_back("stream '" + s.name + "' is " + std::string(to_string(s.state)) +
                            (s.last_error.empty() ? "" : ": " + s.last_error));
    }
  }
  j["streams"] = std::move(streams);
  nlohmann::json sinks = nlohmann::json::array();
  for (const auto& [name, d] : g.deliveries) {
    nlohmann::json o;
    o["name"] = name;
    o["endpoint"] = d.endpoint;
    o["connected"] = d.connected;
    o["queued"] = d.queued;
    o["delivered"] = d.delivered;
    o["dropped"] = d.dropped;
    o["spooled"] = d.spooled;
    o["reconnects"] = d.reconnects;
    o["recovered"] = d.recovered;
    o["kept"] = d.kept;
    o["last_error"] = d.last_error;
    sinks.push_back(std::move(o));
    if (g.running && !d.connected) {
      h.not_ready.push_back("sink '" + name + "' (" + d.endpoint + ") is not connected" +
                            (d.last_error.empty() ? "" : ": " + d.last_error) + "; " +
                            std::to_string(d.spooled) + " messages spooled");
    }
  }
  j["sinks"] = std::move(sinks);
  h.status_json = j.dump();
  return h;
}

}  // namespace

MetricsServer::HealthCheck Graph::health_check() const {
  auto window = std::make_shared<FpsWindow>();
  return [this, window] { return graph_health(stats(), window.get()); };
}

}  // namespace neat

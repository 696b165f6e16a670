#include "run_streams.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace neat::tools {
namespace {

class StreamStatePrinter final : public EventSink {
 public:
  void on_event(const ConversionEvent&) noexcept override {}
  void on_stream(const StreamEvent& e) noexcept override {
    if (e.state == "starting" && e.reason.empty()) return;
    std::fprintf(stderr, "\nneat run: stream '%.*s' %.*s%s%.*s\n",
                 static_cast<int>(e.stream.size()), e.stream.data(),
                 static_cast<int>(e.state.size()), e.state.data(), e.reason.empty() ? "" : ": ",
                 static_cast<int>(e.reason.size()), e.reason.data());
  }
};

}  // namespace

std::shared_ptr<EventSink> stream_state_printer() {
  return std::make_shared<StreamStatePrinter>();
}

void print_streams(const GraphStats& stats) {
  const bool down = std::any_of(stats.streams.begin(), stats.streams.end(), [](const auto& s) {
    return s.restarts > 0 || s.state == StreamState::Failed;
  });
  if (stats.streams.size() < 2 && !down) return;
  std::printf("== streams\n");
  std::printf("  %-16s %-10s %10s %9s  %-28s %s\n", "STREAM", "STATE", "FRAMES", "RESTARTS",
              "DROPPED", "LAST ERROR");
  for (const StreamStats& s : stats.streams) {
    std::string dropped;
    for (const auto& [reason, n] : s.dropped) {
      if (n == 0) continue;
      dropped += (dropped.empty() ? "" : ", ") + reason + " " + std::to_string(n);
    }
    std::printf("  %-16s %-10s %10llu %9llu  %-28s %s\n", s.name.c_str(),
                std::string(to_string(s.state)).c_str(), static_cast<unsigned long long>(s.frames),
                static_cast<unsigned long long>(s.restarts),
                dropped.empty() ? "none" : dropped.c_str(),
                s.last_error.empty() ? "-" : s.last_error.c_str());
  }
}

void print_deliveries(const GraphStats& stats) {
  if (stats.deliveries.empty()) return;
  std::printf("== messages\n");
  std::printf("  %-12s %-28s %9s %10s %8s %7s %10s  %s\n", "SINK", "BROKER", "QUEUED", "DELIVERED",
              "DROPPED", "RESENT", "RECONNECTS", "LAST ERROR");
  for (const auto& [name, d] : stats.deliveries) {
    std::printf(
        "  %-12s %-28s %9llu %10llu %8llu %7llu %10llu  %s\n", name.c_str(), d.endpoint.c_str(),
        static_cast<unsigned long long>(d.queued), static_cast<unsigned long long>(d.delivered),
        static_cast<unsigned long long>(d.dropped), static_cast<unsigned long long>(d.resent),
        static_cast<unsigned long long>(d.reconnects),
        d.last_error.empty() ? "-" : d.last_error.c_str());
    if (d.recovered > 0 || d.kept > 0) {
      std::printf(
          "  %-12s spool directory: %llu messages from an earlier run, %llu kept for the "
          "next\n",
          "", static_cast<unsigned long long>(d.recovered),
          static_cast<unsigned long long>(d.kept));
    }
  }
}

bool any_stream_failed(const GraphStats& stats) {
  return std::any_of(stats.streams.begin(), stats.streams.end(),
                     [](const StreamStats& s) { return s.state == StreamState::Failed; });
}

}  // namespace neat::tools

// A live metrics endpoint: an HTTP server answering `GET /metrics` with the
// Prometheus text format while a pipeline runs, for Prometheus (or anything
// that speaks its format) to scrape.
//
//   auto server = neat::MetricsServer::start("127.0.0.1:9464");   // or ":0"
//   auto reg = (*server)->add_collector([&](std::string& out) {
//     out += graph.prometheus_text();                               // per stage / edge
//   });
//   ... run the graph ...; reg.reset() before the graph goes away.
//
// Each scrape returns the conversion metrics (metrics.hpp), the process_*
// metrics (prometheus.hpp) and whatever the registered collectors append.
//
// Health for orchestrators, from the registered health checks:
//   GET /healthz  200 "ok" while the process serves (a liveness probe);
//   GET /readyz   200 "ready" when every check is ready, else 503 with one
//                 line per reason (a stream down, a broker away, a graph ended);
//   GET /status   JSON {"ready", "not_ready": [reasons], "graphs": [each
//                 check's JSON object]}.
// The HTTP side is Debian's cpp-httplib (a maintained, widely used
// single-purpose server; no HTTP is parsed here). Only GET /metrics and the
// health paths are served; anything else is 404. The listening address is loopback unless a
// host is named: "9464" and ":9464" mean 127.0.0.1:9464; "0.0.0.0:9464" or
// "[::]:9464" listen on every interface; port 0 picks a free port (port()).
//
// Ownership: start() returns the server; destroying it stops it (in-flight
// scrapes finish first). A Registration removes its collector when it is
// reset or destroyed, and waits for a scrape that is running it.
// Threading: thread-safe; collectors run on the server's threads, one scrape
// at a time, never on the pipeline's hot path.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "neat/contract/error.hpp"

namespace neat {

struct ListenAddress {
  std::string host = "127.0.0.1";
  int port = 9464;
  /// "host:port" ("[v6]:port" for IPv6).
  std::string to_string() const;
};

/// "9464", ":9464", "127.0.0.1:9464", "[::1]:9464", "localhost:0". Errors
/// name what was wrong (an empty host, a port outside 0..65535, junk).
Result<ListenAddress> parse_listen_address(std::string_view text);

struct MetricsServerOptions {
  bool conversion_metrics = true;  ///< neat_conversion* from the copy gate
  bool process_metrics = true;     ///< process_*
  int threads = 2;                 ///< HTTP worker threads
};

/// What a health check reports: ready or why not, and its part of /status.
struct Health {
  std::vector<std::string> not_ready;  ///< reasons; empty: ready
  std::string status_json;             ///< one JSON object (a graph's streams and sinks)
};

class MetricsServer {
 public:
  using Collector = std::function<void(std::string& out)>;
  using HealthCheck = std::function<Health()>;

  /// Binds and starts serving before it returns (a scrape right after
  /// works). Unavailable when the address cannot be bound (in use,
  /// not an address of this machine), InvalidArgument for a bad address.
  static Result<std::unique_ptr<MetricsServer>> start(std::string_view listen,
                                                      MetricsServerOptions options = {});
  static Result<std::unique_ptr<MetricsServer>> start(const ListenAddress& address,
                                                      MetricsServerOptions options = {});
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// The address it listens on, the port resolved when 0 was asked for.
  const ListenAddress& address() const noexcept;
  int port() const noexcept { return address().port; }
  /// "http://127.0.0.1:9464/metrics".
  std::string url() const;

  class Registration {
   public:
    Registration() = default;
    Registration(Registration&&) noexcept;
    Registration& operator=(Registration&&) noexcept;
    ~Registration();
    void reset();

   private:
    friend class MetricsServer;
    struct State;
    Registration(std::shared_ptr<State> state, std::uint64_t id);
    std::shared_ptr<State> state_;
    std::uint64_t id_ = 0;
  };
  /// Adds text to every scrape until the registration goes away.
  [[nodiscard]] Registration add_collector(Collector collector);
  /// Adds a check to /readyz and /status until the registration goes away.
  [[nodiscard]] Registration add_health_check(HealthCheck check);
  /// What GET /readyz and /status answer now: (ready, the /status JSON).
  std::pair<bool, std::string> status() const;

  /// What GET /metrics answers now (also usable without HTTP).
  std::string scrape() const;
  /// Scrapes served over HTTP so far.
  std::uint64_t scrapes() const noexcept;

  struct Impl;

 private:
  explicit MetricsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace neat

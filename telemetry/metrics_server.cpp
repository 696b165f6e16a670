#include "neat/telemetry/metrics_server.hpp"

#include <httplib.h>
#include <sys/socket.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "neat/telemetry/metrics.hpp"
#include "neat/telemetry/prometheus.hpp"

namespace neat {

std::string ListenAddress::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenAddress> parse_listen_address(std::string_view text) {
  const std::string what = "listen address '" + std::string(text) + "'";
  ListenAddress a;
  std::string_view port_text = text;
  if (!text.empty() && text.front() == '[') {  // [v6]:port
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return invalid_argument(what +
                              ": an IPv6 address is written [ADDRESS]:PORT, e.g. [::1]:9464");
    a.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
    if (text.find(':') != colon)
      return invalid_argument(what + ": write an IPv6 address in brackets, e.g. [::1]:9464");
    if (colon > 0) a.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  if (a.host.empty()) return invalid_argument(what + ": empty host (omit it for loopback: :9464)");
  int port = -1;
  const auto r = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || r.ec != std::errc() || r.ptr != port_text.data() + port_text.size() ||
      port < 0 || port > 65535) {
    return invalid_argument(what +
                            ": the port must be a number from 0 to 65535 (0: any free "
                            "port), e.g. 127.0.0.1:9464");
  }
  a.port = port;
  return a;
}

struct MetricsServer::Registration::State {
  std::mutex mutex;  // held while collectors run and while one is removed
  std::map<std::uint64_t, Collector> collectors;
  std::map<std::uint64_t, HealthCheck> checks;
  std::uint64_t next_id = 1;
};

MetricsServer::Registration::Registration(std::shared_ptr<State> state, std::uint64_t id)
    : state_(std::move(state)), id_(id) {}
MetricsServer::Registration::Registration(Registration&& o) noexcept
    : state_(std::move(o.state_)), id_(o.id_) {}
MetricsServer::Registration& MetricsServer::Registration::operator=(Registration&& o) noexcept {
  if (this != &o) {
    reset();
    state_ = std::move(o.state_);
    id_ = o.id_;
  }
  return *this;
}
MetricsServer::Registration::~Registration() {
  reset();
}
void MetricsServer::Registration::reset() {
  if (!state_) return;
  std::lock_guard lock(state_->mutex);
  state_->collectors.erase(id_);
  state_->checks.erase(id_);
  state_.reset();
}

struct MetricsServer::Impl {
  ListenAddress address;
  MetricsServerOptions options;
  httplib::Server http;
  std::thread thread;
  std::shared_ptr<Registration::State> state = std::make_shared<Registration::State>();
  std::atomic<std::uint64_t> scrapes{0};

  std::string scrape() const {
    std::string out;
    if (options.conversion_metrics) out += labeled_metrics().prometheus_text();
    {
      std::lock_guard lock(state->mutex);
      for (const auto& [id, c] : state->collectors)
        c(out);
    }
    if (options.process_metrics) out += prometheus::process_metrics_text();
    return out;
  }

  // Every check's reasons and /status's JSON.
  std::pair<std::vector<std::string>, std::string> status() const {
    std::vector<std::string> reasons;
    std::string graphs = "[";
    {
      std::lock_guard lock(state->mutex);
      for (const auto& [id, check] : state->checks) {
        Health h = check();
        reasons.insert(reasons.end(), h.not_ready.begin(), h.not_ready.end());
        if (!h.status_json.empty()) graphs += (graphs.size() > 1 ? "," : "") + h.status_json;
      }
    }
    graphs += "]";
    std::string out = "{\"ready\":" + std::string(reasons.empty() ? "true" : "false") +
                      ",\"not_ready\":" + nlohmann::json(reasons).dump() + ",\"graphs\":" + graphs +
                      "}\n";
    return {std::move(reasons), std::move(out)};
  }
};

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsServer::~MetricsServer() {
  impl_->http.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(std::string_view listen,
                                                            MetricsServerOptions options) {
  NEAT_ASSIGN_OR_RETURN(ListenAddress a, parse_listen_address(listen));
  return start(a, options);
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const ListenAddress& address,
                                                            MetricsServerOptions options) {
  if (options.threads < 1)
    return invalid_argument("metrics server: threads = " + std::to_string(options.threads) +
                            " (at least 1)");
  auto impl = std::make_unique<Impl>();
  impl->address = address;
  impl->options = options;
  const int threads = options.threads;
  impl->http.new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<std::size_t>(threads));
  };
  // SO_REUSEADDR (a restarted process rebinds at once) but not httplib's
  // default SO_REUSEPORT, which would let a second process share the port
  // and Prometheus scrape each in turn.
  impl->http.set_socket_options([](int sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  Impl* self = impl.get();
  impl->http.Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    self->scrapes.fetch_add(1, std::memory_order_relaxed);
    res.set_content(self->scrape(), "text/plain; version=0.0.4; charset=utf-8");
  });
  impl->http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  impl->http.Get("/readyz", [self](const httplib::Request&, httplib::Response& res) {
    const auto reasons = self->status().first;
    std::string text = reasons.empty() ? "ready\n" : "";
    for (const std::string& r : reasons)
      text += "not ready: " + r + "\n";
    res.status = reasons.empty() ? 200 : 503;
    res.set_content(text, "text/plain");
  });
  impl->http.Get("/status", [self](const httplib::Request&, httplib::Response& res) {
    res.set_content(self->status().second, "application/json");
  });
  // Only a path nobody serves gets this text; /readyz's own 503 keeps its
  // reasons (a handled error would replace them).
  impl->http.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (res.status != 404) return httplib::Server::HandlerResponse::Unhandled;
        res.set_content("not found: " + req.path +
                            " (metrics are at /metrics; health at /healthz, /readyz, /status)\n",
                        "text/plain");
        return httplib::Server::HandlerResponse::Handled;
      }));
  errno = 0;
  bool bound = false;
  if (address.port == 0) {
    const int port = impl->http.bind_to_any_port(address.host);
    if (port > 0) {
      impl->address.port = port;
      bound = true;
    }
  } else {
    bound = impl->http.bind_to_port(address.host, address.port);
  }
  if (!bound) {
    const int err = errno;
    return unavailable("metrics server: cannot listen on " + address.to_string() +
                       (err != 0 ? std::string(": ") + std::strerror(err) : std::string()) +
                       " (another process on that port? not an address of this machine? "
                       "pick another with --metrics-listen HOST:PORT, or port 0 for any free one)");
  }
  impl->thread = std::thread([self] { self->http.listen_after_bind(); });
  // httplib's stop() only acts once the accept loop runs: wait for it, so
  // that destroying the server right away cannot leave the loop running.
  for (int i = 0; i < 5000 && !impl->http.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

const ListenAddress& MetricsServer::address() const noexcept {
  return impl_->address;
}

std::string MetricsServer::url() const {
  return "http://" + impl_->address.to_string() + "/metrics";
}

MetricsServer::Registration MetricsServer::add_collector(Collector collector) {
  std::lock_guard lock(impl_->state->mutex);
  const std::uint64_t id = impl_->state->next_id++;
  impl_->state->collectors.emplace(id, std::move(collector));
  return Registration(impl_->state, id);
}

MetricsServer::Registration MetricsServer::add_health_check(HealthCheck check) {
  std::lock_guard lock(impl_->state->mutex);
  const std::uint64_t id = impl_->state->next_id++;
  impl_->state->checks.emplace(id, std::move(check));
  return Registration(impl_->state, id);
}

std::pair<bool, std::string> MetricsServer::status() const {
  auto [reasons, json] = impl_->status();
  return {reasons.empty(), std::move(json)};
}

std::string MetricsServer::scrape() const {
  return impl_->scrape();
}

std::uint64_t MetricsServer::scrapes() const noexcept {
  return impl_->scrapes.load(std::memory_order_relaxed);
}

}  // namespace neat

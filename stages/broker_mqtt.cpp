// The mqtt sink's client: Debian's libmosquitto, QoS 1, driven by the
// message sink's delivery thread (mosquitto_loop, no thread of its own).
#include <mosquitto.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "neat/stages/internal/transport.hpp"

namespace neat {

namespace {

class MqttTransport final : public Transport {
 public:
  MqttTransport(MqttOptions o, std::string host, int port)
      : options_(std::move(o)), host_(std::move(host)), port_(port) {
    static std::once_flag init;
    std::call_once(init, [] { mosquitto_lib_init(); });
    if (options_.client_id.empty()) {
      static std::atomic<int> n{0};
      options_.client_id = "neat-" + std::to_string(getpid()) + "-" + std::to_string(n++);
    }
  }
  ~MqttTransport() override { disconnect(); }

  std::string endpoint() const override { return "mqtt " + host_port_text(host_, port_); }

  Status connect() override {
    disconnect();
    m_ = mosquitto_new(options_.client_id.c_str(), true, this);
    if (m_ == nullptr) return resource_exhausted("mqtt: mosquitto_new failed (out of memory)");
    mosquitto_connect_callback_set(m_, [](mosquitto*, void* self, int rc) {
      static_cast<MqttTransport*>(self)->connack_ = rc;
      static_cast<MqttTransport*>(self)->connected_ = rc == 0;
    });
    mosquitto_disconnect_callback_set(m_, [](mosquitto*, void* self, int) {
      static_cast<MqttTransport*>(self)->connected_ = false;
    });
    mosquitto_publish_callback_set(m_, [](mosquitto*, void* self, int mid) {
      static_cast<MqttTransport*>(self)->published(mid);
    });
    // What the client library says went wrong (OpenSSL's reason for a TLS
    // error: "certificate verify failed"), for the next error's text.
    mosquitto_log_callback_set(m_, [](mosquitto*, void* self, int level, const char* text) {
      if ((level & MOSQ_LOG_ERR) != 0 && text != nullptr)
        static_cast<MqttTransport*>(self)->logged_ = text;
    });
    if (!options_.username.empty()) {
      mosquitto_username_pw_set(m_, options_.username.c_str(),
                                options_.password.empty() ? nullptr : options_.password.c_str());
    }
    if (!options_.ca_file.empty()) {
      if (int rc =
              mosquitto_tls_set(m_, options_.ca_file.c_str(), nullptr, nullptr, nullptr, nullptr);
          rc != MOSQ_ERR_SUCCESS) {
        return invalid_argument("mqtt: ca-file=" + options_.ca_file + ": " +
                                mosquitto_strerror(rc));
      }
    }
    connack_ = -1;
    logged_.clear();  // what an earlier connection logged is not this one's reason
    const int rc = mosquitto_connect_async(m_, host_.c_str(), port_, options_.keepalive_seconds);
    if (rc != MOSQ_ERR_SUCCESS) return unavailable(error_text("connect", rc));
    return {};
  }

  Status poll(std::chrono::milliseconds wait) override {
    if (m_ == nullptr) return unavailable("mqtt: not connected");
    const int rc = mosquitto_loop(m_, static_cast<int>(wait.count()), 1);
    if (connack_ > 0) {
      return unavailable("mqtt: the broker at " + host_port_text(host_, port_) +
                         " refused the connection: " + mosquitto_connack_string(connack_));
    }
    if (rc != MOSQ_ERR_SUCCESS) return unavailable(error_text("connection", rc));
    return {};
  }

  bool connected() const override { return m_ != nullptr && connected_; }

  Status send(std::string_view topic, std::string_view, std::string_view payload,
              std::uint64_t token) override {
    int mid = 0;
    const std::string t(topic);
    const int rc = mosquitto_publish(m_, &mid, t.c_str(), static_cast<int>(payload.size()),
                                     payload.data(), 1, false);
    if (rc != MOSQ_ERR_SUCCESS) return unavailable(error_text("publish", rc));
    tokens_[mid] = token;
    return {};
  }

  void disconnect() override {
    if (m_ == nullptr) return;
    if (connected_) mosquitto_disconnect(m_);
    mosquitto_destroy(m_);
    m_ = nullptr;
    connected_ = false;
    tokens_.clear();
  }

 private:
  void published(int mid) {
    auto it = tokens_.find(mid);
    if (it == tokens_.end()) return;
    const std::uint64_t token = it->second;
    tokens_.erase(it);
    if (on_ack) on_ack(token);
  }
  std::string error_text(const char* what, int rc) {
    std::string e =
        rc == MOSQ_ERR_ERRNO ? std::string(std::strerror(errno)) : mosquitto_strerror(rc);
    if (!logged_.empty()) e += " (" + logged_ + ")";
    logged_.clear();
    if (rc == MOSQ_ERR_TLS && !options_.ca_file.empty()) {
      e += "; check that ca-file=" + options_.ca_file +
           " is the CA that signed the broker's certificate, and that the certificate names " +
           host_;
    }
    return "mqtt: " + std::string(what) + " to " + host_port_text(host_, port_) + ": " + e;
  }

  MqttOptions options_;
  std::string host_;
  int port_;
  std::string logged_;  // the client library's last error message (delivery thread)
  mosquitto* m_ = nullptr;
  bool connected_ = false;
  int connack_ = -1;
  std::unordered_map<int, std::uint64_t> tokens_;  // message id -> the spool's token
};

}  // namespace

Result<std::shared_ptr<Sink>> mqtt_sink(MqttOptions o) {
  NEAT_RETURN_IF_ERROR(check_message_options("mqtt", o.messages));
  NEAT_ASSIGN_OR_RETURN(auto hp, parse_host_port(o.broker, 1883, "mqtt broker"));
  if (!o.ca_file.empty() && !std::filesystem::exists(o.ca_file)) {
    return invalid_argument("mqtt: ca-file=" + o.ca_file + " does not exist");
  }
  if (o.keepalive_seconds < 5 || o.keepalive_seconds > 3600) {
    return invalid_argument("mqtt: keepalive must be from 5 to 3600 seconds");
  }
  MessageOptions m = o.messages;
  auto t = std::make_unique<MqttTransport>(std::move(o), hp.first, hp.second);
  return message_sink("mqtt", std::move(t), std::move(m));
}

}  // namespace neat

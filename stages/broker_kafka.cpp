// The kafka sink's client: Debian's librdkafka producer, acks=all with
// idempotence (in order, no duplicates within one connection), driven by the
// message sink's delivery thread (rd_kafka_poll).
#include <librdkafka/rdkafka.h>

#include <filesystem>

#include "neat/stages/internal/transport.hpp"

namespace neat {

namespace {

class KafkaTransport final : public Transport {
 public:
  explicit KafkaTransport(KafkaOptions o) : options_(std::move(o)) {}
  ~KafkaTransport() override { disconnect(); }

  std::string endpoint() const override { return "kafka " + options_.brokers; }

  Status connect() override {
    disconnect();
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    auto set = [&](const char* k, const std::string& v) -> Status {
      if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
        return invalid_argument("kafka: " + std::string(k) + "=" + v + ": " + err);
      }
      return {};
    };
    Status st = set("bootstrap.servers", options_.brokers);
    if (st.ok()) st = set("acks", "all");
    if (st.ok()) st = set("enable.idempotence", "true");
    // A message the cluster has not taken within this time comes back as
    // failed; the sink sends it again after reconnecting.
    if (st.ok()) st = set("message.timeout.ms", "10000");
    if (st.ok() && !options_.username.empty()) {
      st = set("security.protocol", options_.ca_file.empty() ? "SASL_PLAINTEXT" : "SASL_SSL");
      if (st.ok()) st = set("sasl.mechanisms", "PLAIN");
      if (st.ok()) st = set("sasl.username", options_.username);
      if (st.ok()) st = set("sasl.password", options_.password);
    } else if (st.ok() && !options_.ca_file.empty()) {
      st = set("security.protocol", "SSL");
    }
    if (st.ok() && !options_.ca_file.empty()) st = set("ssl.ca.location", options_.ca_file);
    if (!st.ok()) {
      rd_kafka_conf_destroy(conf);
      return st;
    }
    rd_kafka_conf_set_opaque(conf, this);
    // librdkafka's log lines would go to stderr: its errors reach the sink
    // through error_cb and delivery reports instead (DeliveryStats::last_error).
    rd_kafka_conf_set_log_cb(conf, [](const rd_kafka_t*, int, const char*, const char*) {});
    rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* m, void* self) {
      static_cast<KafkaTransport*>(self)->delivered(m);
    });
    rd_kafka_conf_set_error_cb(conf, [](rd_kafka_t*, int code, const char* reason, void* self) {
      auto* t = static_cast<KafkaTransport*>(self);
      if (code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || code == RD_KAFKA_RESP_ERR__FATAL) {
        t->failure_ = "kafka: " + std::string(reason);
      }
    });
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);  // takes conf
    if (rk_ == nullptr) return invalid_argument("kafka: " + std::string(err));
    return {};
  }

  Status poll(std::chrono::milliseconds wait) override {
    if (rk_ == nullptr) return unavailable("kafka: not connected");
    if (!connected_) {  // connected once the cluster answers a metadata request
      const rd_kafka_metadata_t* md = nullptr;
      const rd_kafka_resp_err_t e =
          rd_kafka_metadata(rk_, 0, nullptr, &md, static_cast<int>(wait.count()));
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_metadata_destroy(md);
        connected_ = true;
        failure_.clear();
      }
      return {};
    }
    rd_kafka_poll(rk_, static_cast<int>(wait.count()));
    if (!failure_.empty()) return unavailable(failure_);
    return {};
  }

  bool connected() const override { return rk_ != nullptr && connected_; }

  Status send(std::string_view topic, std::string_view key, std::string_view payload,
              std::uint64_t token) override {
    const std::string t(topic);
// librdkafka's RD_KAFKA_V_* macros cast the C way.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
    const rd_kafka_resp_err_t e = rd_kafka_producev(
        rk_, RD_KAFKA_V_TOPIC(t.c_str()),
        RD_KAFKA_V_VALUE(const_cast<char*>(payload.data()), payload.size()),
        RD_KAFKA_V_KEY(key.data(), key.size()), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<std::uintptr_t>(token))),
        RD_KAFKA_V_END);
#pragma GCC diagnostic pop
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return unavailable("kafka: produce to " + t + ": " + rd_kafka_err2str(e));
    }
    return {};
  }

  void disconnect() override {
    if (rk_ == nullptr) return;
    rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(rk_, 0);  // the purged messages' reports (ignored: not acknowledged)
    rd_kafka_destroy(rk_);
    rk_ = nullptr;
    connected_ = false;
  }

 private:
  void delivered(const rd_kafka_message_t* m) {
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (on_ack) on_ack(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(m->_private)));
    } else if (m->err != RD_KAFKA_RESP_ERR__PURGE_QUEUE &&
               m->err != RD_KAFKA_RESP_ERR__PURGE_INFLIGHT && failure_.empty()) {
      failure_ = "kafka: delivery failed: " + std::string(rd_kafka_err2str(m->err));
    }
  }

  KafkaOptions options_;
  rd_kafka_t* rk_ = nullptr;
  bool connected_ = false;
  std::string failure_;  // set by callbacks inside poll() (the delivery thread)
};

}  // namespace

Result<std::shared_ptr<Sink>> kafka_sink(KafkaOptions o) {
  NEAT_RETURN_IF_ERROR(check_message_options("kafka", o.messages));
  if (o.brokers.empty()) {
    return invalid_argument("kafka: needs brokers (brokers=HOST:PORT[,HOST:PORT...])");
  }
  std::string_view rest = o.brokers;
  while (!rest.empty()) {  // each HOST:PORT checked here, not at the first send
    const auto comma = rest.find(',');
    auto hp = parse_host_port(rest.substr(0, comma), 9092, "kafka brokers");
    if (!hp.ok()) return hp.error();
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (!o.ca_file.empty() && !std::filesystem::exists(o.ca_file)) {
    return invalid_argument("kafka: ca-file=" + o.ca_file + " does not exist");
  }
  MessageOptions m = o.messages;
  return message_sink("kafka", std::make_unique<KafkaTransport>(std::move(o)), std::move(m));
}

}  // namespace neat

// The mqtt and kafka sinks: the message schema, bad options, and delivery
// against a real mosquitto broker on loopback (started and stopped here),
// through a broker outage, inside and past the spool's bound.
#include "neat/stages/messages.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <thread>

#include "neat/stages/graph.hpp"
#include "neat/stages/internal/transport.hpp"
#include "neat/stages/pipeline.hpp"
#include "neat/stages/track.hpp"
#include "neat/telemetry/event_sink.hpp"
#include "neat/telemetry/metrics_server.hpp"
#include "support/detections.hpp"
#include "support/mosquitto_broker.hpp"

#include <httplib.h>

namespace neat {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::BrokerTls;
using testing::detections;
using testing::DetectionSource;
using testing::distinct_frames;
using testing::frames_on;
using testing::make_test_certificates;
using testing::MosquittoBroker;
using testing::Subscriber;
using testing::temp_dir;
using testing::without_repeats;

TEST(Messages, AFramesMessageFollowsTheSchema) {
  std::string out;
  ASSERT_TRUE(append_detection_message(
                  out, detections({10, 20, 110, 220, 0.9f, 2, 7, 5, 5, 50, 50, 0.5f, 0, 8}, 7, 12),
                  "yard", "models/detector.onnx")
                  .ok());
  const json j = json::parse(out);
  EXPECT_EQ(j["schema"], "neat.detections/1");
  EXPECT_EQ(j["graph"], "yard");
  EXPECT_EQ(j["stream"], "cam");
  EXPECT_EQ(j["frame"], 12);
  EXPECT_EQ(j["pts_ns"], 240'000'000);
  EXPECT_EQ(j["width"], 1920);
  EXPECT_EQ(j["model"], "models/detector.onnx");
  ASSERT_EQ(j["detections"].size(), 2u);
  EXPECT_EQ(j["detections"][0]["box"], json::array({10.0, 20.0, 110.0, 220.0}));
  EXPECT_EQ(j["detections"][0]["class"], 2);
  EXPECT_EQ(j["detections"][0]["track"], 7);
  EXPECT_NEAR(j["detections"][1]["score"].get<double>(), 0.5, 1e-4);
  // Capture time in UTC from the frame's capture clock: within a second of now.
  const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  EXPECT_LT(std::abs(j["capture_time_ns"].get<std::int64_t>() - now_ns), 1'000'000'000);
  EXPECT_EQ(j["capture_time"].get<std::string>().back(), 'Z');
  EXPECT_GE(j["latency_ms"].get<double>(), 0.0);

  std::string none;
  ASSERT_TRUE(append_detection_message(none, detections({}, 6, 0), "g", "m").ok());
  EXPECT_TRUE(json::parse(none)["detections"].empty());
  std::string bad;
  auto e = append_detection_message(bad, detections({1, 2, 3, 4, 5}, 5, 0), "g", "m");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message().find("put `yolo`"), std::string::npos) << e.error().message();
}

TEST(Messages, ATrackMessageNamesTheEventAndTheTrack) {
  TrackRecord r;
  r.stream = {1, intern_stream_name("gate")};
  r.frame = 30;
  r.change.kind = TrackChange::Kind::End;
  r.change.id = 4;
  r.change.first_frame = 3;
  r.change.last_frame = 25;
  r.change.hits = 20;
  std::string out;
  append_track_message(out, r, "g");
  const json j = json::parse(out);
  EXPECT_EQ(j["schema"], "neat.track/1");
  EXPECT_EQ(j["event"], "end");
  EXPECT_EQ(j["track"], 4);
  EXPECT_EQ(j["stream_index"], 1);
  EXPECT_EQ(j["last_frame"], 25);
  EXPECT_FALSE(j.contains("capture_time")) << "no capture time known: none invented";
}

TEST(Messages, BadOptionsAreTypedErrorsThatNameTheFix) {
  auto expect = [](const Result<std::shared_ptr<Sink>>& r, const char* what) {
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.error().code(), ErrorCode::InvalidArgument) << r.error().message();
    EXPECT_NE(r.error().message().find(what), std::string::npos) << r.error().message();
  };
  expect(mqtt_sink({.broker = "127.0.0.1:1883"}), "needs a topic");
  expect(mqtt_sink({.broker = "127.0.0.1:99999", .messages = {.topic = "t"}}), "not a port");
  expect(mqtt_sink({.broker = ":1883", .messages = {.topic = "t"}}), "no host");
  expect(mqtt_sink({.broker = "h", .ca_file = "/nonexistent/ca.pem", .messages = {.topic = "t"}}),
         "does not exist");
  expect(mqtt_sink({.broker = "h", .messages = {.topic = "t", .spool = 0}}), "spool");
  expect(kafka_sink({.messages = {.topic = "t"}}), "needs brokers");
  expect(kafka_sink({.brokers = "a:9092,b:x", .messages = {.topic = "t"}}), "'x' is not a port");
  expect(mqtt_sink({.broker = "::1:1883", .messages = {.topic = "t"}}), "in brackets");
  expect(mqtt_sink({.broker = "[::1]1883", .messages = {.topic = "t"}}), "[ADDRESS]:PORT");
  expect(mqtt_sink({.broker = "[::1", .messages = {.topic = "t"}}), "[ADDRESS]:PORT");
  expect(mqtt_sink({.broker = "[]:1883", .messages = {.topic = "t"}}), "no host");
  expect(mqtt_sink({.broker = "[::1]:0", .messages = {.topic = "t"}}), "'0' is not a port");
  expect(kafka_sink({.brokers = "[::1]:9092,fe80::1", .messages = {.topic = "t"}}), "in brackets");

  auto p = declare_pipeline("default ! mqtt topic=x");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("broker"), std::string::npos) << p.error().message();
  auto t = declare_pipeline("default ! track high=2 ! appsink");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("from 0 to 1"), std::string::npos) << t.error().message();
}

// A broker client under the test's control: it sends into a log, acknowledges
// only when told, and loses its connection on demand.
class ScriptedTransport final : public Transport {
 public:
  struct State {
    std::mutex mutex;
    bool down = false, acks = false;
    std::vector<std::pair<std::uint64_t, std::int64_t>> sent;  // token, frame
    std::vector<std::uint64_t> unacked;
  };
  explicit ScriptedTransport(std::shared_ptr<State> s) : s_(std::move(s)) {}
  std::string endpoint() const override { return "scripted"; }
  Status connect() override {
    std::lock_guard lock(s_->mutex);
    if (s_->down) return unavailable("scripted: the broker is away");
    up_ = true;
    return {};
  }
  Status poll(std::chrono::milliseconds wait) override {
    std::this_thread::sleep_for(std::min(wait, std::chrono::milliseconds(5)));
    std::vector<std::uint64_t> ack;
    {
      std::lock_guard lock(s_->mutex);
      if (s_->down) {
        up_ = false;
        return unavailable("scripted: connection lost");
      }
      if (s_->acks) ack.swap(s_->unacked);
    }
    for (std::uint64_t token : ack)
      on_ack(token);
    return {};
  }
  bool connected() const override { return up_; }
  Status send(std::string_view, std::string_view, std::string_view payload,
              std::uint64_t token) override {
    std::lock_guard lock(s_->mutex);
    s_->sent.emplace_back(token, json::parse(payload)["frame"].get<std::int64_t>());
    s_->unacked.push_back(token);
    return {};
  }
  void disconnect() override {
    std::lock_guard lock(s_->mutex);
    up_ = false;
    s_->unacked.clear();  // what was in flight is gone with the connection
  }

 private:
  std::shared_ptr<State> s_;
  bool up_ = false;  // the delivery thread's alone
};

struct ScriptedRun {
  std::vector<std::int64_t> before, after;  // frames sent before the outage, and after it
  DeliveryStats stats;
};

// `first` frames sent and never acknowledged, the connection lost, `more`
// frames into a spool of `spool`, the broker back: what was sent again.
ScriptedRun run_scripted(std::size_t spool, std::int64_t first, std::int64_t more) {
  auto state = std::make_shared<ScriptedTransport::State>();
  MessageOptions o;
  o.topic = "out/{stream}";
  o.spool = spool;
  o.window = 64;
  o.drain_timeout = 10s;
  auto sink = message_sink("mqtt", std::make_unique<ScriptedTransport>(state), o);
  ScriptedRun r;
  EXPECT_TRUE(sink->prepare(FrameSpec::of(detections({}, 6, 0))).ok());
  auto sent = [&] {
    std::lock_guard lock(state->mutex);
    return state->sent.size();
  };
  auto wait_until = [](auto done) {
    for (auto end = std::chrono::steady_clock::now() + 10s;
         !done() && std::chrono::steady_clock::now() < end;)
      std::this_thread::sleep_for(2ms);
    return done();
  };
  for (std::int64_t f = 0; f < first; ++f)
    EXPECT_TRUE(sink->consume(detections({1, 2, 3, 4, 0.5f, 0}, 6, f), 0).ok());
  EXPECT_TRUE(wait_until([&] { return sent() == static_cast<std::size_t>(first); }));
  {
    std::lock_guard lock(state->mutex);
    state->down = true;
  }
  EXPECT_TRUE(wait_until([&] { return !sink->delivery()->connected; }));
  for (std::int64_t f = first; f < first + more; ++f)
    EXPECT_TRUE(sink->consume(detections({1, 2, 3, 4, 0.5f, 0}, 6, f), 0).ok());
  const std::size_t before = sent();
  {
    std::lock_guard lock(state->mutex);
    state->down = false;
    state->acks = true;
  }
  EXPECT_TRUE(sink->finish().ok());
  r.stats = *sink->delivery();
  std::lock_guard lock(state->mutex);
  for (std::size_t i = 0; i < state->sent.size(); ++i)
    (i < before ? r.before : r.after).push_back(state->sent[i].second);
  return r;
}

TEST(MessageSpool, AMessageSentAndNotAcknowledgedIsNeverDroppedOnlyThoseNeverSent) {
  // Frames 0-2 reached the broker, maybe: their acknowledgements were lost
  // with the connection. Past the spool of 5, the ones dropped are the oldest
  // never sent (3-6), so `dropped` is exactly what the broker never got.
  const ScriptedRun r = run_scripted(5, 3, 6);
  EXPECT_EQ(r.before, (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(r.after, (std::vector<std::int64_t>{0, 1, 2, 7, 8}));
  EXPECT_EQ(r.stats.dropped, 4u);
  EXPECT_EQ(r.stats.delivered, 5u);
  EXPECT_EQ(r.stats.queued, 9u);
  EXPECT_EQ(r.stats.resent, 3u);
  EXPECT_EQ(r.stats.spooled, 0u);
}

TEST(MessageSpool, WhenTheWholeSpoolWasSentTheNewMessageIsTheOneDropped) {
  const ScriptedRun r = run_scripted(3, 3, 2);
  EXPECT_EQ(r.after, (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(r.stats.dropped, 2u);
  EXPECT_EQ(r.stats.delivered, 3u);
  EXPECT_EQ(r.stats.queued, 5u);
}

TEST(Messages, BrokerAddressesAreReadAsOperatorsWriteThem) {
  struct Good {
    const char* text;
    const char* host;
    int port;
  };
  for (const Good& g :
       {Good{"broker.local", "broker.local", 1883}, Good{"10.0.0.2:8883", "10.0.0.2", 8883},
        Good{"[::1]:1884", "::1", 1884}, Good{"[fd00::2]", "fd00::2", 1883}}) {
    auto a = parse_host_port(g.text, 1883, "mqtt broker");
    ASSERT_TRUE(a.ok()) << g.text << ": " << a.error().message();
    EXPECT_EQ(a->first, g.host) << g.text;
    EXPECT_EQ(a->second, g.port) << g.text;
  }
  EXPECT_EQ(host_port_text("::1", 1883), "[::1]:1883");
  EXPECT_EQ(host_port_text("10.0.0.2", 1883), "10.0.0.2:1883");
  auto sink = mqtt_sink({.broker = "[::1]:1884", .messages = {.topic = "t"}});
  ASSERT_TRUE(sink.ok()) << sink.error().message();
  EXPECT_NE((*sink)->describe().find("mqtt [::1]:1884"), std::string::npos) << (*sink)->describe();
  EXPECT_TRUE(kafka_sink({.brokers = "[::1]:9092,[fd00::2]", .messages = {.topic = "t"}}).ok());
  auto p = declare_pipeline("default ! mqtt broker=[::1]:1884 topic=t");
  EXPECT_TRUE(p.ok()) << p.error().message();
}

class MqttBroker : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!MosquittoBroker::available()) GTEST_SKIP() << "mosquitto is not installed (make test)";
    ASSERT_TRUE(broker_.start()) << "mosquitto did not start on " << broker_.address();
  }
  MosquittoBroker broker_;
};

TEST_F(MqttBroker, EveryFramesMessageArrivesInOrderOnItsStreamsTopicWithTrackStarts) {
  Subscriber sub(broker_.port(), "cameras/#");
  ASSERT_TRUE(sub.wait_subscribed());
  // threads=1: OpenCV's TBB workers are invisible to TSan (the threaded suite runs under it).
  const std::string text =
      "gst:\"videotestsrc num-buffers=40 ! video/x-raw,format=NV12,width=320,height=240\" "
      "name=north ! preprocess size=640x640 fit=letterbox ! infer model=models:detector threads=1 "
      "! yolo conf=0.01 ! track ! det. "
      "gst:\"videotestsrc num-buffers=30 pattern=ball ! video/x-raw,format=NV12,width=320,"
      "height=240\" name=south ! preprocess size=640x640 fit=letterbox ! infer "
      "model=models:detector threads=1 ! yolo conf=0.01 ! track ! det. "
      "mqtt name=det broker=" +
      broker_.address() + " topic=cameras/{stream}/detections";
  auto p =
      declare_pipeline(text, {.graph_name = "yard", .streams = {.restart = RestartPolicy::Never}});
  ASSERT_TRUE(p.ok()) << p.error().message();
  auto g = p->builder.build();
  ASSERT_TRUE(g.ok()) << g.error().message();
  ASSERT_TRUE(g->run().ok());
  ASSERT_TRUE(sub.wait_for(
      [](const auto& m) {
        return frames_on(m, "cameras/north/detections").size() >= 40 &&
               frames_on(m, "cameras/south/detections").size() >= 30;
      },
      10s));
  const auto all = sub.messages();
  std::vector<std::int64_t> north(40), south(30);
  std::iota(north.begin(), north.end(), 0);
  std::iota(south.begin(), south.end(), 0);
  EXPECT_EQ(frames_on(all, "cameras/north/detections"), north);
  EXPECT_EQ(frames_on(all, "cameras/south/detections"), south);
  // A track's start comes before the first frame that names it, on its stream's topic.
  std::map<std::string, std::set<int>> started;
  std::size_t tracked = 0;
  for (const auto& [topic, payload] : all) {
    const json j = json::parse(payload);
    const std::string stream = j["stream"];
    EXPECT_EQ(j["graph"], "yard");
    EXPECT_EQ(topic, "cameras/" + stream + "/detections");
    if (j["schema"] == "neat.track/1") {
      if (j["event"] == "start") started[stream].insert(j["track"].get<int>());
      continue;
    }
    EXPECT_EQ(j["model"], "models:detector");
    EXPECT_EQ(j["width"], 320);
    for (const json& d : j["detections"]) {
      EXPECT_EQ(started[stream].count(d["track"].get<int>()), 1u) << payload;
      ++tracked;
    }
  }
  EXPECT_GT(tracked, 0u) << "the detector found and tracked something";
  const auto stats = g->stats();
  ASSERT_EQ(stats.deliveries.size(), 1u);
  EXPECT_EQ(stats.deliveries[0].second.delivered, stats.deliveries[0].second.queued);
  EXPECT_EQ(stats.deliveries[0].second.dropped, 0u);
}

// A run of `frames` detections at 50 fps into an mqtt sink with `spool`;
// the broker goes away for `outage` after `before`.
struct OutageRun {
  std::vector<std::int64_t> frames;  // distinct, in arrival order
  int repeats = 0;
  DeliveryStats stats;
  std::chrono::steady_clock::duration longest_gap{};
  std::vector<std::pair<std::string, std::int64_t>> events;  // delivery events: (event, count)
};

// The delivery events the sink sent to the traces: (event, count).
class DeliveryEvents final : public EventSink {
 public:
  void on_event(const ConversionEvent&) noexcept override {}
  void on_output(const OutputEvent& e) noexcept override {
    if (e.type != "delivery") return;
    std::lock_guard lock(mutex_);
    seen_.emplace_back(std::string(e.event), e.id);
  }
  std::vector<std::pair<std::string, std::int64_t>> seen() const {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, std::int64_t>> seen_;
};

OutageRun run_through_outage(MosquittoBroker& broker, std::int64_t frames, std::size_t spool,
                             std::chrono::milliseconds before, std::chrono::milliseconds outage) {
  OutageRun r;
  auto events = std::make_shared<DeliveryEvents>();
  SinkRegistration registration = add_event_sink(events);
  Subscriber sub(broker.port(), "out/#");
  EXPECT_TRUE(sub.wait_subscribed());
  auto source = std::make_unique<DetectionSource>(frames, 50);
  DetectionSource* src = source.get();
  MqttOptions o;
  o.broker = broker.address();
  o.messages.topic = "out/{stream}";
  o.messages.spool = spool;
  o.messages.drain_timeout = 20s;
  auto sink = mqtt_sink(o);
  EXPECT_TRUE(sink.ok());
  GraphBuilder b("outage");
  b.add_source("cam", std::move(source));
  b.add_sink("mqtt", *sink);
  EXPECT_TRUE(b.connect("cam", "mqtt").ok());
  auto g = b.build();
  EXPECT_TRUE(g.ok()) << g.error().message();
  EXPECT_TRUE(g->start().ok());
  std::this_thread::sleep_for(before);
  broker.stop();
  std::this_thread::sleep_for(outage);
  EXPECT_TRUE(broker.start());
  const auto status = g->wait();
  EXPECT_TRUE(status.ok()) << status.error().message();
  r.stats = *(*sink)->delivery();
  sub.wait_for(
      [&](const auto& m) { return distinct_frames(frames_on(m, "out/cam")) >= r.stats.delivered; },
      15s);
  r.frames = without_repeats(frames_on(sub.messages(), "out/cam"), &r.repeats);
  r.longest_gap = src->longest_gap();
  r.events = events->seen();
  return r;
}

TEST_F(MqttBroker, AnIpv6AddressInBracketsReachesTheBroker) {
  if (!broker_.ipv6()) GTEST_SKIP() << "no IPv6 loopback (::1) on this machine";
  Subscriber sub(broker_.port(), "v6/#");
  ASSERT_TRUE(sub.wait_subscribed());
  MqttOptions o;
  o.broker = "[::1]:" + std::to_string(broker_.port());
  o.messages.topic = "v6/{stream}";
  auto sink = mqtt_sink(o);
  ASSERT_TRUE(sink.ok()) << sink.error().message();
  GraphBuilder b("v6");
  b.add_source("cam", std::make_unique<DetectionSource>(20, 200));
  b.add_sink("mqtt", *sink);
  ASSERT_TRUE(b.connect("cam", "mqtt").ok());
  auto g = b.build();
  ASSERT_TRUE(g.ok()) << g.error().message();
  ASSERT_TRUE(g->run().ok());
  EXPECT_EQ((*sink)->delivery()->delivered, 20u);
  EXPECT_EQ((*sink)->delivery()->endpoint, "mqtt [::1]:" + std::to_string(broker_.port()));
  ASSERT_TRUE(sub.wait_for([](const auto& m) { return frames_on(m, "v6/cam").size() >= 20; }, 10s));
  std::vector<std::int64_t> all(20);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(frames_on(sub.messages(), "v6/cam"), all);
}

// A broker that takes TLS with a password on one listener (the sink's) and
// anonymous clients on another (the test's subscriber).
class MqttTlsBroker : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!MosquittoBroker::available()) GTEST_SKIP() << "mosquitto is not installed (make test)";
    ASSERT_TRUE(make_test_certificates(certs_, "neat-test-ca"))
        << "openssl could not make the test certificates (make test installs openssl)";
    ASSERT_TRUE(make_test_certificates(other_, "another-ca"));
    tls_ = {certs_, "camera-gateway", "s3cret"};
    broker_ = std::make_unique<MosquittoBroker>(&tls_);
    ASSERT_TRUE(broker_->tls_ready()) << "mosquitto_passwd failed";
    ASSERT_TRUE(broker_->start()) << "mosquitto did not start";
  }
  void TearDown() override {
    broker_.reset();
    std::error_code ec;
    std::filesystem::remove_all(certs_, ec);
    std::filesystem::remove_all(other_, ec);
  }
  static std::filesystem::path dir(const std::string& name) {
    const auto d = std::filesystem::path(temp_dir(name));
    std::filesystem::create_directories(d);
    std::filesystem::permissions(d, std::filesystem::perms::all);  // mosquitto's user reads it
    return d;
  }
  // 20 frames through an mqtt sink with `o`'s credentials and CA: the run's status.
  Status send(MqttOptions o, std::shared_ptr<Sink>& sink) {
    o.broker = "127.0.0.1:" + std::to_string(broker_->tls_port());
    o.messages.topic = "tls/{stream}";
    o.messages.drain_timeout = 1500ms;
    auto made = mqtt_sink(o);
    if (!made.ok()) return made.error();
    sink = *made;
    GraphBuilder b("tls");
    b.add_source("cam", std::make_unique<DetectionSource>(20, 200));
    b.add_sink("mqtt", sink);
    NEAT_RETURN_IF_ERROR(b.connect("cam", "mqtt"));
    NEAT_ASSIGN_OR_RETURN(auto g, b.build());
    auto report = g.run();
    if (!report.ok()) return report.error();
    return {};
  }
  std::filesystem::path certs_ = dir("tls-certs"), other_ = dir("tls-other");
  BrokerTls tls_;
  std::unique_ptr<MosquittoBroker> broker_;
};

TEST_F(MqttTlsBroker, OverTlsWithAPasswordEveryMessageArrives) {
  Subscriber sub(broker_->port(), "tls/#");
  ASSERT_TRUE(sub.wait_subscribed());
  std::shared_ptr<Sink> sink;
  const Status st = send(
      {.username = "camera-gateway", .password = "s3cret", .ca_file = (certs_ / "ca.crt").string()},
      sink);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(sink->delivery()->delivered, 20u);
  ASSERT_TRUE(
      sub.wait_for([](const auto& m) { return frames_on(m, "tls/cam").size() >= 20; }, 10s));
  std::vector<std::int64_t> all(20);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(frames_on(sub.messages(), "tls/cam"), all);
}

TEST_F(MqttTlsBroker, AWrongPasswordFailsTheRunSayingTheBrokerRefused) {
  std::shared_ptr<Sink> sink;
  const Status st = send(
      {.username = "camera-gateway", .password = "wrong", .ca_file = (certs_ / "ca.crt").string()},
      sink);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("20 messages not delivered"), std::string::npos)
      << st.error().message();
  EXPECT_NE(st.error().message().find("refused the connection"), std::string::npos)
      << st.error().message();
  EXPECT_NE(sink->delivery()->last_error.find("not authori"), std::string::npos)
      << sink->delivery()->last_error;
  EXPECT_EQ(sink->delivery()->delivered, 0u);
}

TEST_F(MqttTlsBroker, ACertificateAnotherCaSignedIsNeverTrusted) {
  std::shared_ptr<Sink> sink;
  const Status st = send(
      {.username = "camera-gateway", .password = "s3cret", .ca_file = (other_ / "ca.crt").string()},
      sink);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("20 messages not delivered"), std::string::npos)
      << st.error().message();
  EXPECT_EQ(sink->delivery()->delivered, 0u);
  // OpenSSL's reason, and what to check.
  const std::string why = sink->delivery()->last_error;
  EXPECT_NE(why.find("certificate verify failed"), std::string::npos) << why;
  EXPECT_NE(why.find("ca-file=" + (other_ / "ca.crt").string() + " is the CA that signed"),
            std::string::npos)
      << why;
}

TEST_F(MqttBroker, ABrokerOutageInsideTheSpoolLosesNothingAndNeverHoldsTheVideo) {
  const OutageRun r = run_through_outage(broker_, 250, 10000, 1500ms, 2000ms);
  std::vector<std::int64_t> all(250);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(r.frames, all) << "every message, in order";
  EXPECT_EQ(r.stats.dropped, 0u);
  EXPECT_EQ(r.stats.delivered, 250u);
  EXPECT_GE(r.stats.reconnects, 1u);
  EXPECT_NE(r.stats.last_error, "");
  // The traces saw it: up, down, up again.
  std::vector<std::string> order;
  for (const auto& [event, n] : r.events)
    order.push_back(event);
  EXPECT_EQ(order, (std::vector<std::string>{"up", "down", "up"}));
  std::printf(
      "outage 2 s: 250 delivered, %d repeats (at least once), %llu resent, longest gap "
      "between frames %.1f ms\n",
      r.repeats, static_cast<unsigned long long>(r.stats.resent),
      std::chrono::duration<double, std::milli>(r.longest_gap).count());
  // 50 fps is a frame every 20 ms: the sink never made the source wait.
  EXPECT_LT(r.longest_gap, 150ms);
}

TEST_F(MqttBroker, PastTheSpoolTheOldestAreDroppedAndCountedExactly) {
  const OutageRun r = run_through_outage(broker_, 250, 20, 1000ms, 2000ms);
  EXPECT_GT(r.stats.dropped, 0u);
  EXPECT_EQ(r.stats.delivered + r.stats.dropped, r.stats.queued);
  std::int64_t reported = 0;
  for (const auto& [event, n] : r.events)
    if (event == "dropped") reported += n;
  EXPECT_EQ(static_cast<std::uint64_t>(reported), r.stats.dropped)
      << "every drop reached the traces";
  EXPECT_EQ(r.frames.size(), r.stats.delivered) << "what arrived is what the broker acknowledged";
  // What arrived came in order, once each, and every frame that did not
  // arrive is one counted dropped. The drops are the oldest never sent: a run
  // spooled during the outage, and (when the resent spool is all in flight,
  // unacknowledged, as a new frame comes: seen under ASan) that newest frame.
  // The outage's run is the longest gap.
  std::int64_t longest = 0;
  for (std::size_t i = 1; i < r.frames.size(); ++i) {
    EXPECT_GT(r.frames[i], r.frames[i - 1]) << "in order, once each";
    longest = std::max(longest, r.frames[i] - r.frames[i - 1] - 1);
  }
  EXPECT_EQ(250 - r.frames.size(), r.stats.dropped) << "every frame missing was counted";
  EXPECT_GE(static_cast<std::uint64_t>(longest), r.stats.dropped / 2) << "one run of the outage";
}

// Live detections until stopped; the first `stall_after` frames, then silence.
class LiveDetections final : public Source {
 public:
  explicit LiveDetections(std::int64_t stall_after) : inner_(1 << 30, 50), limit_(stall_after) {}
  std::string_view kind() const noexcept override { return "live detections"; }
  bool live() const override { return true; }
  Result<FrameSpec> prepare() override { return inner_.prepare(); }
  Result<FrameSpec> restart(const std::atomic<bool>&) override { return inner_.prepare(); }
  Result<std::optional<NeatTensor>> next(const std::atomic<bool>& stop) override {
    if (sent_++ < limit_) return inner_.next(stop);
    while (!stop.load())
      std::this_thread::sleep_for(5ms);
    return std::optional<NeatTensor>{};
  }

 private:
  DetectionSource inner_;
  std::int64_t limit_, sent_ = 0;
};

TEST_F(MqttBroker, ReadyzAndStatusShowABrokerAwayAndAStalledStream) {
  MqttOptions o;
  o.broker = broker_.address();
  o.messages.topic = "h/{stream}";
  auto sink = mqtt_sink(o);
  ASSERT_TRUE(sink.ok());
  GraphBuilder b("health");
  b.add_source("cam", std::make_unique<LiveDetections>(100), {.stall_timeout = 400ms});
  b.add_sink("mqtt", *sink);
  ASSERT_TRUE(b.connect("cam", "mqtt").ok());
  auto g = b.build();
  ASSERT_TRUE(g.ok()) << g.error().message();
  auto server = MetricsServer::start("127.0.0.1:0");
  ASSERT_TRUE(server.ok());
  auto check = (*server)->add_health_check(g->health_check());
  httplib::Client http("127.0.0.1", (*server)->port());
  auto get = [&](const char* path) {
    auto r = http.Get(path);
    return r ? std::pair{r->status, r->body} : std::pair{0, std::string()};
  };
  auto wait_ready = [&](bool ready) {
    for (int i = 0; i < 100; ++i) {
      if ((get("/readyz").first == 200) == ready) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  };
  EXPECT_EQ(get("/readyz").first, 503) << "not started";
  ASSERT_TRUE(g->start().ok());
  EXPECT_TRUE(wait_ready(true)) << get("/readyz").second;
  EXPECT_EQ(get("/healthz"), (std::pair<int, std::string>{200, "ok\n"}));

  broker_.stop();  // the broker goes away
  EXPECT_TRUE(wait_ready(false));
  auto [code, text] = get("/readyz");
  EXPECT_EQ(code, 503) << text;
  EXPECT_NE(text.find("sink 'mqtt' (mqtt " + broker_.address() + ") is not connected"),
            std::string::npos)
      << text;
  json status = json::parse(get("/status").second);
  EXPECT_FALSE(status["ready"].get<bool>());
  EXPECT_FALSE(status["graphs"][0]["sinks"][0]["connected"].get<bool>());
  EXPECT_EQ(status["graphs"][0]["streams"][0]["state"], "up");
  EXPECT_GT(status["graphs"][0]["streams"][0]["fps"].get<double>(), 10.0);
  EXPECT_EQ(get("/healthz").first, 200) << "the process still runs";
  ASSERT_TRUE(broker_.start());
  EXPECT_TRUE(wait_ready(true)) << get("/readyz").second;

  // After 100 frames the camera falls silent: stalled within the 400 ms timeout.
  for (int i = 0; i < 100; ++i) {
    if (get("/readyz").second.find("stream 'cam' is") != std::string::npos) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(get("/readyz").second.find("stream 'cam' is"), std::string::npos)
      << get("/readyz").second;
  status = json::parse(get("/status").second);
  EXPECT_NE(status["graphs"][0]["streams"][0]["state"], "up");
  g->stop();
  EXPECT_TRUE(g->wait().ok());
  EXPECT_NE(get("/readyz").second.find("graph 'health' is not running"), std::string::npos);
  check.reset();
}

TEST_F(MqttBroker, ABrokerThatNeverComesBackFailsTheRunWithTheCountOfUndelivered) {
  MqttOptions o;
  o.broker = "127.0.0.1:" + std::to_string(testing::free_tcp_port());  // nobody listens
  o.messages.topic = "t";
  o.messages.drain_timeout = 500ms;
  auto sink = mqtt_sink(o);
  ASSERT_TRUE(sink.ok());
  GraphBuilder b("nobroker");
  b.add_source("cam", std::make_unique<DetectionSource>(5, 100));
  b.add_sink("mqtt", *sink);
  ASSERT_TRUE(b.connect("cam", "mqtt").ok());
  auto g = b.build();
  ASSERT_TRUE(g.ok());
  const auto st = g->run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("5 messages not delivered"), std::string::npos)
      << st.error().message();
  EXPECT_NE(st.error().message().find("Connection refused"), std::string::npos)
      << st.error().message();
}

}  // namespace
}  // namespace neat

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
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <thread>

#include "neat/stages/graph.hpp"
#include "neat/stages/internal/disk_spool.hpp"
#include "neat/stages/pipeline.hpp"
#include "neat/stages/track.hpp"
#include "neat/telemetry/event_sink.hpp"
#include "neat/telemetry/metrics_server.hpp"
#include "support/mosquitto_broker.hpp"

#include <httplib.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

namespace neat {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::MosquittoBroker;
using testing::Subscriber;

NeatTensor detections(const std::vector<float>& rows, std::int64_t cols, std::int64_t frame,
                      StreamId stream = {0, intern_stream_name("cam")}) {
  const auto n = static_cast<std::int64_t>(rows.size()) / cols;
  auto t = NeatTensor::allocate(DType::F32, {n, cols});
  EXPECT_TRUE(t.ok());
  auto w = std::move(*t).make_writable();
  EXPECT_TRUE(w.ok());
  {
    auto m = w->map(MapMode::Write);
    EXPECT_TRUE(m.ok());
    if (!rows.empty()) std::memcpy(m->mutable_data(), rows.data(), rows.size() * 4);
  }
  FrameMeta meta;
  meta.frame = frame;
  meta.pts_ns = frame * 20'000'000;
  meta.capture_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
  meta.stream = stream;
  meta.geometry.source_width = 1920;
  meta.geometry.source_height = 1080;
  w->set_meta(meta);
  return std::move(*w);
}

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

  auto p = declare_pipeline("default ! mqtt topic=x");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("broker"), std::string::npos) << p.error().message();
  auto t = declare_pipeline("default ! track high=2 ! appsink");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("from 0 to 1"), std::string::npos) << t.error().message();
}

// Detections of three squares moving right, `fps` frames per second; it
// notes the longest wait between two of its frames.
class DetectionSource final : public Source {
 public:
  DetectionSource(std::int64_t frames, int fps) : frames_(frames), period_(1'000'000 / fps) {}
  std::string_view kind() const noexcept override { return "detections"; }
  Result<FrameSpec> prepare() override {
    FrameSpec s;
    s.dtype = DType::F32;
    s.shape = Dims{3, 6};
    return s;
  }
  Result<std::optional<NeatTensor>> next(const std::atomic<bool>&) override {
    if (n_ >= frames_) return std::optional<NeatTensor>{};
    const auto now = std::chrono::steady_clock::now();
    if (n_ > 0) {
      std::this_thread::sleep_until(last_ + period_);
      longest_gap_ = std::max(longest_gap_, std::chrono::steady_clock::now() - last_);
    }
    last_ = n_ > 0 ? std::chrono::steady_clock::now() : now;
    const float x = static_cast<float>(n_) * 4;
    std::vector<float> rows;
    for (int i = 0; i < 3; ++i) {
      const float y = 100.0f + 200.0f * static_cast<float>(i);
      rows.insert(rows.end(), {x, y, x + 50, y + 50, 0.9f, 0});
    }
    NeatTensor t = detections(rows, 6, n_++);
    FrameMeta m = t.meta();
    m.stream = {};
    m.frame = -1;
    m.capture_ns = -1;  // the graph stamps it
    t.set_meta(m);
    return std::optional<NeatTensor>{std::move(t)};
  }
  std::chrono::steady_clock::duration longest_gap() const { return longest_gap_; }

 private:
  std::int64_t frames_, n_ = 0;
  std::chrono::microseconds period_;
  std::chrono::steady_clock::time_point last_{};
  std::chrono::steady_clock::duration longest_gap_{};
};

// The frame numbers of one topic's detection messages, in arrival order.
std::vector<std::int64_t> frames_on(const std::vector<std::pair<std::string, std::string>>& all,
                                    const std::string& topic) {
  std::vector<std::int64_t> out;
  for (const auto& [t, payload] : all) {
    const json j = json::parse(payload);
    if (t == topic && j["schema"] == "neat.detections/1") out.push_back(j["frame"]);
  }
  return out;
}

// The frames in order once repeats (a resend after a reconnect) are removed.
std::vector<std::int64_t> without_repeats(const std::vector<std::int64_t>& frames, int* repeats) {
  std::vector<std::int64_t> out;
  for (std::int64_t f : frames) {
    if (!out.empty() && f <= out.back()) {
      ++*repeats;
      continue;
    }
    out.push_back(f);
  }
  return out;
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
  sub.wait_for([&](const auto& m) { return frames_on(m, "out/cam").size() >= r.stats.delivered; },
               15s);
  r.frames = without_repeats(frames_on(sub.messages(), "out/cam"), &r.repeats);
  r.longest_gap = src->longest_gap();
  r.events = events->seen();
  return r;
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
  // The dropped ones are one run of the oldest spooled during the outage: the
  // frames that arrived are 0..a and b..249 with b - a - 1 == dropped.
  std::size_t gap = 0;
  for (std::size_t i = 1; i < r.frames.size(); ++i)
    if (r.frames[i] != r.frames[i - 1] + 1) {
      ++gap;
      EXPECT_EQ(static_cast<std::uint64_t>(r.frames[i] - r.frames[i - 1] - 1), r.stats.dropped);
    }
  EXPECT_EQ(gap, 1u);
  EXPECT_EQ(r.frames.back(), 249);
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

std::string temp_dir(const std::string& name) {
  const auto d =
      std::filesystem::temp_directory_path() / ("neat-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

TEST(DiskSpool, KeepsOrderAcrossSegmentsAndRunsCutsACrashedRecordAndDropsTheOldestPastItsCap) {
  const std::string dir = temp_dir("spool-unit");
  {
    auto s = DiskSpool::open(dir, 64 * 1024);  // segments of 8 KiB
    ASSERT_TRUE(s.ok()) << s.error().message();
    const std::string big(1000, 'x');
    for (int i = 0; i < 150; ++i) {  // ~150 KiB: three segments, the cap drops the oldest
      auto d = (*s)->append({"t", "k", std::to_string(i) + big});
      ASSERT_TRUE(d.ok());
    }
    EXPECT_LT((*s)->bytes(), 64u * 1024 + 2000);
    const std::uint64_t kept = (*s)->unread();
    EXPECT_LT(kept, 150u);
    auto first = (*s)->next();
    ASSERT_TRUE(first.ok() && first->has_value());
    EXPECT_EQ(std::stoi((**first).first.payload), static_cast<int>(150 - kept))
        << "the oldest kept is the one after the dropped ones";
    // Read and acknowledge one; prepend what a run ended with in memory.
    (*s)->done((**first).second);
    ASSERT_TRUE((*s)->prepend({{"t", "k", "from memory"}}).ok());
  }
  // A crash cut the last record short: it is cut off, the rest is read back.
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 2u);
  { std::ofstream(files.back(), std::ios::app) << "\x05\x00\x00"; }
  auto again = DiskSpool::open(dir, 64 * 1024);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_GT((*again)->recovered(), 0u);
  auto m = (*again)->next();
  ASSERT_TRUE(m.ok() && m->has_value());
  EXPECT_EQ((**m).first.payload, "from memory") << "what memory held comes first";
  std::vector<int> order;
  while (true) {
    auto r = (*again)->next();
    ASSERT_TRUE(r.ok()) << r.error().message();
    if (!r->has_value()) break;
    order.push_back(std::stoi((**r).first.payload));
  }
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  EXPECT_EQ(order.back(), 149);
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(DiskSpool::open("/proc/neat-cannot-be-here", 1 << 20).ok());
}

TEST_F(MqttBroker, WithASpoolDirectoryAnOutagePastTheMemorySpoolLosesNothing) {
  // 10 messages in memory, the rest of a 2 s outage on disk.
  const std::string dir = temp_dir("spool-outage");
  Subscriber sub(broker_.port(), "out/#");
  ASSERT_TRUE(sub.wait_subscribed());
  MqttOptions o;
  o.broker = broker_.address();
  o.messages.topic = "out/{stream}";
  o.messages.spool = 10;
  o.messages.spool_dir = dir;
  o.messages.drain_timeout = 20s;
  auto sink = mqtt_sink(o);
  ASSERT_TRUE(sink.ok());
  GraphBuilder b("disk");
  b.add_source("cam", std::make_unique<DetectionSource>(250, 50));
  b.add_sink("mqtt", *sink);
  ASSERT_TRUE(b.connect("cam", "mqtt").ok());
  auto g = b.build();
  ASSERT_TRUE(g.ok()) << g.error().message();
  ASSERT_TRUE(g->start().ok());
  std::this_thread::sleep_for(1000ms);
  broker_.stop();
  std::this_thread::sleep_for(2000ms);
  ASSERT_TRUE(broker_.start());
  ASSERT_TRUE(g->wait().ok());
  const DeliveryStats d = *(*sink)->delivery();
  EXPECT_EQ(d.dropped, 0u);
  EXPECT_EQ(d.delivered, 250u);
  EXPECT_EQ(d.kept, 0u);
  ASSERT_TRUE(
      sub.wait_for([](const auto& m) { return frames_on(m, "out/cam").size() >= 250; }, 15s));
  int repeats = 0;
  std::vector<std::int64_t> all(250);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(without_repeats(frames_on(sub.messages(), "out/cam"), &repeats), all);
  std::filesystem::remove_all(dir);
}

TEST_F(MqttBroker, WhatARunCouldNotDeliverTheNextRunDeliversFirst) {
  const std::string dir = temp_dir("spool-runs");
  auto run_once = [&](const std::string& address, std::int64_t frames) {
    MqttOptions o;
    o.broker = address;
    o.messages.topic = "runs/{stream}";
    o.messages.spool_dir = dir;
    o.messages.drain_timeout = 300ms;
    auto sink = mqtt_sink(o);
    EXPECT_TRUE(sink.ok());
    GraphBuilder b("runs");
    b.add_source("cam", std::make_unique<DetectionSource>(frames, 100));
    b.add_sink("mqtt", *sink);
    EXPECT_TRUE(b.connect("cam", "mqtt").ok());
    auto g = b.build();
    EXPECT_TRUE(g.ok());
    const auto st = g->run();
    EXPECT_TRUE(st.ok()) << st.error().message();
    return *(*sink)->delivery();
  };
  // The first run's broker is away all along: its 5 messages stay on disk and
  // the run still ends well (nothing is lost).
  const DeliveryStats first = run_once("127.0.0.1:" + std::to_string(testing::free_tcp_port()), 5);
  EXPECT_EQ(first.delivered, 0u);
  EXPECT_EQ(first.kept, 5u);
  Subscriber sub(broker_.port(), "runs/#");
  ASSERT_TRUE(sub.wait_subscribed());
  const DeliveryStats second = run_once(broker_.address(), 3);
  EXPECT_EQ(second.recovered, 5u);
  EXPECT_EQ(second.delivered, 8u);
  EXPECT_EQ(second.kept, 0u);
  ASSERT_TRUE(
      sub.wait_for([](const auto& m) { return frames_on(m, "runs/cam").size() >= 8; }, 10s));
  EXPECT_EQ(frames_on(sub.messages(), "runs/cam"),
            (std::vector<std::int64_t>{0, 1, 2, 3, 4, 0, 1, 2}))
      << "the first run's five, then the second run's three";
  std::filesystem::remove_all(dir);
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

namespace neat {
namespace {

// librdkafka's mock cluster (rdkafka_mock.h), in this process: one broker, a
// topic, and a consumer that reads it back.
class KafkaMock : public ::testing::Test {
 protected:
  void SetUp() override {
    char err[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err);
    handle_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    ASSERT_NE(handle_, nullptr) << err;
    cluster_ = rd_kafka_mock_cluster_new(handle_, 1);
    ASSERT_NE(cluster_, nullptr);
    bootstraps_ = rd_kafka_mock_cluster_bootstraps(cluster_);
    ASSERT_EQ(rd_kafka_mock_topic_create(cluster_, "detections", 1, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  void TearDown() override {
    if (cluster_) rd_kafka_mock_cluster_destroy(cluster_);
    if (handle_) rd_kafka_destroy(handle_);
  }
  // Every message on the topic: (key, payload), in partition order.
  std::vector<std::pair<std::string, std::string>> read_all(std::size_t at_least) {
    char err[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps_.c_str(), err, sizeof err);
    rd_kafka_conf_set(conf, "group.id", "neat-test", err, sizeof err);
    rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", err, sizeof err);
    rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    rd_kafka_poll_set_consumer(c);
    rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, "detections", RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(c, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    std::vector<std::pair<std::string, std::string>> out;
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (out.size() < at_least && std::chrono::steady_clock::now() < until) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 200);
      if (m == nullptr) continue;
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        out.emplace_back(std::string(static_cast<const char*>(m->key), m->key_len),
                         std::string(static_cast<const char*>(m->payload), m->len));
      }
      rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    return out;
  }

  rd_kafka_t* handle_ = nullptr;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
  std::string bootstraps_;
};

TEST_F(KafkaMock, ABrokerOutageLosesNothingAndTheMessagesArriveInOrderKeyedByStream) {
  auto source = std::make_unique<DetectionSource>(200, 50);
  DetectionSource* src = source.get();
  KafkaOptions o;
  o.brokers = bootstraps_;
  o.messages.topic = "detections";
  o.messages.drain_timeout = 30s;
  auto sink = kafka_sink(o);
  ASSERT_TRUE(sink.ok()) << sink.error().message();
  GraphBuilder b("kafka");
  b.add_source("cam", std::move(source));
  b.add_sink("kafka", *sink);
  ASSERT_TRUE(b.connect("cam", "kafka").ok());
  auto g = b.build();
  ASSERT_TRUE(g.ok()) << g.error().message();
  ASSERT_TRUE(g->start().ok());
  std::this_thread::sleep_for(1s);
  rd_kafka_mock_broker_set_down(cluster_, 1);
  std::this_thread::sleep_for(2s);
  rd_kafka_mock_broker_set_up(cluster_, 1);
  const auto st = g->wait();
  ASSERT_TRUE(st.ok()) << st.error().message();
  const DeliveryStats d = *(*sink)->delivery();
  EXPECT_EQ(d.delivered, 200u);
  EXPECT_EQ(d.dropped, 0u);
  const auto all = read_all(200);
  std::vector<std::int64_t> frames;
  for (const auto& [key, payload] : all) {
    EXPECT_EQ(key, "cam");
    frames.push_back(json::parse(payload)["frame"].get<std::int64_t>());
  }
  int repeats = 0;
  std::vector<std::int64_t> expected(200);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(without_repeats(frames, &repeats), expected);
  std::printf("kafka outage 2 s: %zu messages read, %d repeats, %llu resent, longest gap %.1f ms\n",
              all.size(), repeats, static_cast<unsigned long long>(d.resent),
              std::chrono::duration<double, std::milli>(src->longest_gap()).count());
  EXPECT_LT(src->longest_gap(), 150ms);
}

}  // namespace
}  // namespace neat

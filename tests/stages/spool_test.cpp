// Delivery that survives: the mqtt sink's spool on disk (through an outage
// past the memory spool, and across runs) against a real mosquitto on
// loopback, the disk spool itself, and the kafka sink through a broker
// outage on librdkafka's mock cluster.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <thread>

#include "neat/stages/graph.hpp"
#include "neat/stages/internal/disk_spool.hpp"
#include "neat/stages/messages.hpp"
#include "support/detections.hpp"
#include "support/mosquitto_broker.hpp"

namespace neat {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::detections;
using testing::DetectionSource;
using testing::distinct_frames;
using testing::frames_on;
using testing::MosquittoBroker;
using testing::Subscriber;
using testing::temp_dir;
using testing::without_repeats;

class MqttSpool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!MosquittoBroker::available()) GTEST_SKIP() << "mosquitto is not installed (make test)";
    ASSERT_TRUE(broker_.start()) << "mosquitto did not start on " << broker_.address();
  }
  MosquittoBroker broker_;
};

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

TEST_F(MqttSpool, WithASpoolDirectoryAnOutagePastTheMemorySpoolLosesNothing) {
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
  ASSERT_TRUE(sub.wait_for(
      [](const auto& m) { return distinct_frames(frames_on(m, "out/cam")) >= 250; }, 15s));
  int repeats = 0;
  std::vector<std::int64_t> all(250);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(without_repeats(frames_on(sub.messages(), "out/cam"), &repeats), all);
  std::filesystem::remove_all(dir);
}

TEST_F(MqttSpool, WhatARunCouldNotDeliverTheNextRunDeliversFirst) {
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

class KafkaMock : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    // librdkafka's own threads (the mock cluster's too) are not instrumented:
    // under TSan they crash in its runtime (a SEGV in an uninstrumented
    // thread, seen in CI). The sink's delivery thread is the mqtt sink's, which
    // the TSan suite runs; this test runs in the normal and ASan suites.
    GTEST_SKIP() << "librdkafka's threads are not instrumented for TSan";
#endif
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
  // Every message on the topic: (key, payload), in partition order, read until
  // `frames` distinct frames have come (a resent message is read twice).
  std::vector<std::pair<std::string, std::string>> read_all(std::size_t frames) {
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
    std::set<std::int64_t> seen;
    while (seen.size() < frames && std::chrono::steady_clock::now() < until) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 200);
      if (m == nullptr) continue;
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        out.emplace_back(std::string(static_cast<const char*>(m->key), m->key_len),
                         std::string(static_cast<const char*>(m->payload), m->len));
        seen.insert(json::parse(out.back().second)["frame"].get<std::int64_t>());
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

// Latency and memory of stage graphs: capture-to-sink latency (stats, run
// report, traces read back by the audit), the memory plan and the
// frame-memory budget.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <neat/neat.hpp>
#include <neat/stages/pipeline.hpp>

#include "support/fakes.hpp"

namespace neat {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::unique_ptr<Stage> sleeper(std::chrono::milliseconds d) {
  return make_stage("sleep", {}, [d](NeatTensor t, StageContext&) -> Result<NeatTensor> {
    std::this_thread::sleep_for(d);
    return t;
  });
}

TEST(DurationRecorder, PercentilesAreWithinTheBucketWidthAndMaxIsExact) {
  DurationRecorder h;
  EXPECT_EQ(h.summary().count, 0u);
  EXPECT_EQ(h.summary().to_string(), "no frames");
  for (int us = 1; us <= 10000; ++us)
    h.add(std::int64_t{us} * 1000);
  const DurationSummary s = h.summary();
  EXPECT_EQ(s.count, 10000u);
  EXPECT_NEAR(s.p50, 5e-3, 5e-3 * 0.032);
  EXPECT_NEAR(s.p95, 9.5e-3, 9.5e-3 * 0.032);
  EXPECT_NEAR(s.p99, 9.9e-3, 9.9e-3 * 0.032);
  EXPECT_DOUBLE_EQ(s.max, 10e-3);
  EXPECT_NEAR(s.mean, 5.0005e-3, 1e-9);
  EXPECT_LE(s.p99, s.max);
  // Out of range: negative durations count as 0, huge ones land in the last bucket.
  DurationRecorder edge;
  edge.add(-5);
  edge.add(std::int64_t{1} << 50);
  EXPECT_EQ(edge.summary().count, 2u);
  EXPECT_DOUBLE_EQ(edge.summary().max, static_cast<double>(std::int64_t{1} << 50) * 1e-9);
}

// Each frame's latency runs from its capture (here: when the synthetic source
// handed it over) to the sink; a 4 ms stage is the floor of every frame's.
TEST(GraphLatency, EverySinkReportsCaptureToSinkPercentilesAndStagesTheirShare) {
  GraphBuilder b("lat");
  b.add_source("cam", synthetic_source(FrameSpec::image(PixelFormat::GRAY8, 16, 8), 20));
  b.add_stage("slow", sleeper(4ms));
  auto out = AppSink::create();
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "slow"));
  NEAT_ASSERT_OK(b.connect("slow", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->start());
  int n = 0;
  while (auto f = out->pull(5s)) {
    EXPECT_GE(f->meta().capture_ns, 0) << "the source stamps each frame's capture time";
    ++n;
  }
  auto r = g->wait();
  NEAT_ASSERT_OK(r);
  ASSERT_EQ(n, 20);
  ASSERT_EQ(r->latency.count("out"), 1u);
  const DurationSummary& l = r->latency.at("out");
  EXPECT_EQ(l.count, 20u);
  EXPECT_GE(l.p50, 4e-3 * 0.97);
  EXPECT_LE(l.p50, l.p95);
  EXPECT_LE(l.p95, l.p99);
  EXPECT_LE(l.p99, l.max);
  EXPECT_LT(l.max, 5.0) << "seconds";
  const GraphStats s = g->stats();
  for (const NodeStats& node : s.nodes) {
    if (node.name == "slow") {
      EXPECT_EQ(node.busy_summary.count, 20u);
      EXPECT_GE(node.busy_summary.p50, 4e-3 * 0.97);
      EXPECT_EQ(node.queue_wait.count, 20u);
    }
    if (node.name == "out") {
      EXPECT_EQ(node.latency.count, 20u);
      EXPECT_EQ(node.latency_histogram.count, 20u);
      ASSERT_FALSE(node.latency_histogram.cumulative.empty());
      EXPECT_LE(node.latency_histogram.cumulative.back(), 20u);
    }
  }
  const std::string prom = g->prometheus_text();
  EXPECT_NE(prom.find("neat_sink_latency_seconds_count{graph=\"lat\",sink=\"out\"} 20"),
            std::string::npos)
      << prom;
  EXPECT_NE(prom.find("neat_graph_frame_memory_bytes{graph=\"lat\"}"), std::string::npos);
}

// A live GStreamer source stamps its frames with their capture time on the
// pipeline clock: the latency of a 30 fps source is short and never negative.
TEST(GraphLatency, ALiveGstSourceCarriesItsCaptureTime) {
  GraphBuilder b("live");
  // A live source that ends is down (it would be restarted): the frame limit ends it.
  b.add_source("cam", gst_source("videotestsrc is-live=true ! "
                                 "video/x-raw,format=GRAY8,width=64,height=48,framerate=30/1"));
  b.set_max_source_frames(6);
  auto out = AppSink::create({.capacity = 8});
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->start());
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
  int n = 0;
  while (auto f = out->pull(5s)) {
    EXPECT_GT(f->meta().capture_ns, now - std::int64_t{5'000'000'000});
    EXPECT_GE(f->meta().pts_ns, 0);
    ++n;
  }
  auto r = g->wait();
  NEAT_ASSERT_OK(r);
  EXPECT_EQ(n, 6);
  const DurationSummary& l = r->latency.at("out");
  EXPECT_EQ(l.count, 6u);
  EXPECT_LT(l.max, 1.0);
}

// The trace carries every frame's latency; the audit reads it back per sink.
TEST(GraphLatency, TracesCarryFrameLatencyAndTheAuditReportsIt) {
  const fs::path dir = fs::temp_directory_path() / ("neat-lat." + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto jsonl = JsonlSink::open((dir / "t.jsonl").string());
  NEAT_ASSERT_OK(jsonl);
  auto chrome = std::make_shared<ChromeTraceSink>();
  {
    SinkRegistration a = add_event_sink(*jsonl), c = add_event_sink(chrome);
    GraphBuilder b("traced");
    b.add_source("cam", synthetic_source(FrameSpec::image(PixelFormat::GRAY8, 16, 8), 7));
    b.add_stage("slow", sleeper(1ms));
    auto out = AppSink::create({.capacity = 8});
    b.add_sink("out", out);
    NEAT_ASSERT_OK(b.connect("cam", "slow"));
    NEAT_ASSERT_OK(b.connect("slow", "out"));
    auto g = b.build();
    NEAT_ASSERT_OK(g);
    NEAT_ASSERT_OK(g->run());
  }
  NEAT_ASSERT_OK((*jsonl)->flush());
  AuditAggregator from_jsonl;
  NEAT_ASSERT_OK(from_jsonl.read_file((dir / "t.jsonl").string()));
  const AuditReport report = from_jsonl.report();
  ASSERT_EQ(report.latency.size(), 1u);
  EXPECT_EQ(report.latency[0].graph, "traced");
  EXPECT_EQ(report.latency[0].sink, "out");
  EXPECT_EQ(report.latency[0].latency.count, 7u);
  EXPECT_GE(report.latency[0].latency.p50, 1e-3 * 0.97);
  EXPECT_NE(format_audit_table(report).find("latency, capture -> sink:"), std::string::npos);
  EXPECT_NE(format_audit_json(report).find("\"p99_s\""), std::string::npos);
  EXPECT_EQ(report.conversions, 0u) << "frame records are not conversions";

  std::istringstream ctext(*chrome->to_json());
  AuditAggregator from_chrome;
  NEAT_ASSERT_OK(from_chrome.read(ctext, "chrome"));
  ASSERT_EQ(from_chrome.report().latency.size(), 1u);
  EXPECT_EQ(from_chrome.report().latency[0].latency.count, 7u);
  EXPECT_NE(chrome->to_json()->find("latency: sink 'out'"), std::string::npos);

  // A graph filter keeps or drops them like conversions.
  AuditAggregator other({.graph = "other"});
  NEAT_ASSERT_OK(other.read_file((dir / "t.jsonl").string()));
  EXPECT_TRUE(other.report().latency.empty());
  fs::remove_all(dir);
}

TEST(GraphLatency, MalformedFrameRecordsAreClearErrors) {
  AuditAggregator a;
  std::istringstream unknown("{\"type\":\"nope\",\"sink\":\"x\"}\n");
  NEAT_EXPECT_ERROR(a.read(unknown, "t.jsonl"), ErrorCode::InvalidArgument,
                    "t.jsonl line 1: unknown record type \"nope\"");
  std::istringstream no_sink("{\"type\":\"frame\",\"latency_ns\":5}\n");
  NEAT_EXPECT_ERROR(a.read(no_sink, "t.jsonl"), ErrorCode::InvalidArgument,
                    "a frame record needs \"sink\"");
  std::istringstream negative("{\"type\":\"frame\",\"sink\":\"s\",\"latency_ns\":-5}\n");
  NEAT_EXPECT_ERROR(a.read(negative, "t.jsonl"), ErrorCode::InvalidArgument, "is negative");
}

// ---- memory plan and budget -------------------------------------------------

GraphBuilder camera(std::size_t queue, std::size_t sink_capacity) {
  GraphBuilder b("mem");
  b.add_source("cam", synthetic_source(FrameSpec::image(PixelFormat::NV12, 64, 48), 10));
  b.add_stage("pre", preprocess_stage({.width = 32, .height = 32}));
  b.add_sink("out", AppSink::create({.capacity = sink_capacity}));
  EXPECT_TRUE(b.connect("cam", "pre", {.capacity = queue}).ok());
  EXPECT_TRUE(b.connect("pre", "out", {.capacity = queue}).ok());
  return b;
}

TEST(FrameMemory, ThePlanCountsEveryHolderAndExplainShowsIt) {
  auto g = camera(3, 2).build();
  NEAT_ASSERT_OK(g);
  const GraphPlan& p = g->plan();
  ASSERT_EQ(p.memory.size(), 2u);
  const std::int64_t nv12 = 64 * 48 * 3 / 2, f32 = 3 * 32 * 32 * 4;
  // cam: queue 3 + pre's 1; pre: queue 3 + appsink (2 queued + 1 pulled).
  EXPECT_EQ(p.memory[0].frame_bytes, nv12);
  EXPECT_EQ(p.memory[0].buffers, 4);
  EXPECT_EQ(p.memory[1].frame_bytes, f32);
  EXPECT_EQ(p.memory[1].buffers, 6);
  EXPECT_EQ(p.frame_memory_bytes(), 4 * nv12 + 6 * f32);
  const std::string text = g->explain();
  EXPECT_NE(text.find("stage 'pre'  6 x 12.0 KiB = 72.0 KiB"), std::string::npos) << text;
  EXPECT_NE(text.find("queue pre->out: 3, appsink 'out' (queue 2 + 1 pulled): 3"),
            std::string::npos)
      << text;
  EXPECT_EQ(p.max_frame_memory, 0);
}

TEST(FrameMemory, ABudgetLowersTheQueuesUntilThePlanFits) {
  const std::int64_t nv12 = 64 * 48 * 3 / 2, f32 = 3 * 32 * 32 * 4;
  GraphBuilder b = camera(4, 1);
  // Needs 5 * nv12 + 6 * f32 with queues of 4.
  const std::int64_t budget = 3 * nv12 + 4 * f32;
  b.set_max_frame_memory(budget);
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  const GraphPlan& p = g->plan();
  EXPECT_LE(p.frame_memory_bytes(), budget);
  EXPECT_EQ(p.max_frame_memory, budget);
  // The f32 frames are the bigger ones: their queue goes first, down to 1;
  // the NV12 queue is not needed.
  ASSERT_EQ(p.edges.size(), 2u);
  for (const EdgePlan& e : p.edges)
    EXPECT_EQ(e.requested_capacity, 4u);
  EXPECT_EQ(p.edges[0].capacity, 4u) << p.edges[0].name;
  EXPECT_EQ(p.edges[1].capacity, 1u) << p.edges[1].name;
  EXPECT_NE(g->explain().find("(4 asked; lowered to fit the frame-memory budget)"),
            std::string::npos)
      << g->explain();
}

TEST(FrameMemory, ABudgetTooSmallFailsTheBuildSayingWhatHoldsTheBytes) {
  GraphBuilder b = camera(1, 1);
  b.set_max_frame_memory(10000);
  auto g = b.build();
  ASSERT_FALSE(g.ok());
  const std::string m = g.error().message();
  EXPECT_EQ(g.error().code(), ErrorCode::FailedPrecondition);
  EXPECT_NE(m.find("more than the frame-memory budget of 9.8 KiB"), std::string::npos) << m;
  EXPECT_NE(m.find("stage 'pre': 3 x 12.0 KiB"), std::string::npos) << m;
  EXPECT_NE(m.find("source 'cam': 2 x 4.5 KiB"), std::string::npos) << m;
  EXPECT_NE(m.find("Fix: raise the budget to at least"), std::string::npos) << m;
  EXPECT_NE(m.find("every queue is at its minimum of 1 already"), std::string::npos) << m;

  GraphBuilder negative = camera(1, 1);
  negative.set_max_frame_memory(-1);
  NEAT_EXPECT_ERROR(negative.build(), ErrorCode::FailedPrecondition,
                    "the frame-memory budget is negative");
  GraphBuilder zero = camera(1, 1);
  zero.set_max_frame_memory(0);  // none
  NEAT_ASSERT_OK(zero.build());
}

TEST(FrameMemory, BadQueueCapacitiesAreRefusedAtConnect) {
  GraphBuilder b("q");
  b.add_source("cam", synthetic_source(FrameSpec::image(PixelFormat::GRAY8, 4, 4), 1));
  b.add_sink("out", AppSink::create());
  NEAT_EXPECT_ERROR(b.connect("cam", "out", {.capacity = 0}), ErrorCode::InvalidArgument,
                    "queue capacity must be at least 1");
  NEAT_EXPECT_ERROR(b.connect("cam", "out", {.capacity = std::size_t{1} << 20}),
                    ErrorCode::InvalidArgument, "is more than 65536 frames");
}

// An application that is slow never makes the graph hold more than the plan:
// every pool stays within its planned buffers while the queues run full.
TEST(FrameMemory, ASlowApplicationKeepsEveryPoolWithinThePlan) {
  GraphBuilder b("slowapp");
  b.add_source("cam", synthetic_source(FrameSpec::image(PixelFormat::NV12, 64, 48), 30));
  b.add_stage("pre", preprocess_stage({.width = 32, .height = 32}));
  b.add_stage("post", normalize_stage({.out_dtype = DType::F16}));
  auto out = AppSink::create();
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "pre"));
  NEAT_ASSERT_OK(b.connect("pre", "post"));
  NEAT_ASSERT_OK(b.connect("post", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->start());
  int n = 0;
  while (auto f = out->pull(5s)) {
    std::this_thread::sleep_for(3ms);
    ++n;
  }
  NEAT_ASSERT_OK(g->wait());
  EXPECT_EQ(n, 30);
  const GraphStats s = g->stats();
  ASSERT_FALSE(s.pools.empty());
  for (const PoolStats& p : s.pools) {
    EXPECT_LE(p.peak_buffers, p.planned_buffers) << p.name;
    EXPECT_GE(p.peak_buffers, 1) << p.name;
  }
  EXPECT_EQ(s.frame_memory_bytes, g->plan().frame_memory_bytes());
}

}  // namespace
}  // namespace neat

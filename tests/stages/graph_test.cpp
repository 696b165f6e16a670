// Stage graphs: build() checks and plans, explain(), run() with bounded
// queues, end of stream, fan-out, copy-on-write, stage and source failures,
// stop, drop-oldest sinks, push sources, exact frame accounting. Threaded:
// also run under TSan.
#include "neat/stages/graph.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "neat/contract/mapping.hpp"
#include "neat/stages/appsink.hpp"
#include "neat/stages/builtin.hpp"
#include "neat/telemetry/event_sink.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

using namespace std::chrono_literals;
using testing::TelemetryTest;

class GraphTest : public TelemetryTest {};

std::unique_ptr<Source> nv12(std::int64_t frames, std::int64_t w = 64, std::int64_t h = 48) {
  return synthetic_source(FrameSpec::image(PixelFormat::NV12, w, h), frames);
}

// Pulls until the end of the stream (or 10 s without a frame).
std::vector<NeatTensor> drain(AppSink& sink) {
  std::vector<NeatTensor> out;
  while (auto f = sink.pull(10s))
    out.push_back(std::move(*f));
  return out;
}

TEST_F(GraphTest, LinearGraphRunsEveryFrameThroughAndAccountsForIt) {
  GraphBuilder b("linear");
  auto out = AppSink::create();
  b.add_source("cam", nv12(25));
  b.add_stage("pre", preprocess_stage({.width = 32, .height = 32}));
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "pre"));
  NEAT_ASSERT_OK(b.connect("pre", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->start());
  auto frames = drain(*out);
  auto report = g->wait();
  NEAT_ASSERT_OK(report);
  ASSERT_EQ(frames.size(), 25u);
  EXPECT_EQ(frames[0].shape(), (Dims{3, 32, 32}));
  EXPECT_EQ(frames[0].dtype(), DType::F32);
  EXPECT_TRUE(out->at_end());
  EXPECT_EQ(report->frames.source_frames, 25u);
  EXPECT_EQ(report->frames.produced, 25u);
  EXPECT_EQ(report->frames.consumed, 25u);
  EXPECT_TRUE(report->frames.balanced()) << report->frames.to_string();
  EXPECT_EQ(report->edge_frames["cam->pre"], 25u);
  // The preprocess events carry graph, stage, edge and frame.
  auto ev = events();
  ASSERT_EQ(ev.size(), 25u);
  EXPECT_EQ(ev[3].graph, "linear");
  EXPECT_EQ(ev[3].stage, "pre");
  EXPECT_EQ(ev[3].edge, "cam->pre");
  EXPECT_EQ(ev[3].event.frame, 3);
  EXPECT_TRUE(ev[3].event.explicit_call) << "a stage named by the user converts explicitly";
}

TEST_F(GraphTest, StrictBuildListsEveryOffendingEdgeWithKindBytesAndFix) {
  GraphBuilder b("strict");
  b.set_policy(ConversionPolicy::Strict);
  auto rgb_only = [] {
    return make_stage("detector", {.dtypes = {DType::U8}, .formats = {PixelFormat::RGB}},
                      [](NeatTensor t, StageContext&) -> Result<NeatTensor> { return t; });
  };
  b.add_source("cam", nv12(3, 64, 48));
  b.add_stage("det_a", rgb_only());
  b.add_stage("det_b", rgb_only());
  b.add_sink("a", AppSink::create());
  b.add_sink("b", AppSink::create());
  NEAT_ASSERT_OK(b.connect("cam", "det_a"));
  NEAT_ASSERT_OK(b.connect("cam", "det_b"));
  NEAT_ASSERT_OK(b.connect("det_a", "a"));
  NEAT_ASSERT_OK(b.connect("det_b", "b"));
  auto g = b.build();
  ASSERT_FALSE(g.ok());
  const std::string& m = g.error().message();
  EXPECT_EQ(g.error().code(), ErrorCode::FailedPrecondition);
  EXPECT_NE(m.find("2 problems"), std::string::npos) << m;
  EXPECT_NE(
      m.find("edge 'cam->det_a': it needs an implicit convert (pixel_format) NV12 -> RGB (yuv "
             "bt601 limited, assumed: GStreamer's default for the size), 9.0 KiB per frame"),
      std::string::npos)
      << m;
  EXPECT_NE(m.find("edge 'cam->det_b'"), std::string::npos) << m;
  EXPECT_NE(m.find("Fix: insert `convert format=RGB` before 'det_a'"), std::string::npos) << m;
  // The same, as data: one cause per edge, its place and its fixes (best first).
  ASSERT_EQ(g.error().causes().size(), 2u);
  const Error& first = g.error().causes()[0];
  EXPECT_EQ(first.where(), "edge 'cam->det_a'");
  ASSERT_EQ(first.fixes().size(), 2u);
  EXPECT_EQ(first.fixes()[0].cpp, "insert `convert format=RGB` before 'det_a'");
  EXPECT_NE(first.fixes()[1].python.find("connect(..., policy=\"trace\")"), std::string::npos);
  ASSERT_NE(g.error().first_fix(), nullptr);
  EXPECT_EQ(g.error().first_fix(), &first.fixes()[0]);
  EXPECT_NE(g.error().message(Spelling::Python).find("connect(..., policy=\"trace\")"),
            std::string::npos);
}

TEST_F(GraphTest, TracedConversionsEnterThePlanAndRunWithTheirContext) {
  GraphBuilder b("traced");
  auto out = AppSink::create();
  b.add_source("cam", nv12(5, 64, 48));
  b.add_stage("det",
              make_stage("detector", {.formats = {PixelFormat::RGB}, .layouts = {Layout::CHW}},
                         [](NeatTensor t, StageContext&) -> Result<NeatTensor> { return t; }),
              {.policy = ConversionPolicy::AllowWithTrace});
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "det"));
  NEAT_ASSERT_OK(b.connect("det", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  const EdgePlan& e = g->plan().edges[0];
  ASSERT_EQ(e.conversions.size(), 2u);  // NV12 -> RGB, then HWC -> CHW
  EXPECT_EQ(e.conversions[0].reason, ConversionReason::PixelFormat);
  EXPECT_EQ(e.conversions[1].reason, ConversionReason::Layout);
  EXPECT_EQ(e.policy, ConversionPolicy::AllowWithTrace);
  EXPECT_EQ(e.bytes_per_frame(), 64 * 48 * 3 * 2);
  const std::string text = g->explain();
  EXPECT_NE(text.find("convert (pixel_format) NV12 -> RGB"), std::string::npos) << text;
  EXPECT_NE(text.find("policy allow_with_trace"), std::string::npos) << text;
  EXPECT_NE(text.find("expected bytes copied per frame on edges: 18.0 KiB"), std::string::npos)
      << text;
  NEAT_ASSERT_OK(g->start());
  auto frames = drain(*out);
  NEAT_ASSERT_OK(g->wait());
  ASSERT_EQ(frames.size(), 5u);
  EXPECT_EQ(frames[0].layout(), Layout::CHW);
  EXPECT_EQ(frames[0].shape(), (Dims{3, 48, 64}));
  auto ev = events();
  ASSERT_EQ(ev.size(), 10u);
  for (const auto& x : ev) {
    EXPECT_FALSE(x.event.explicit_call);
    EXPECT_EQ(x.edge, "cam->det");
    EXPECT_EQ(x.graph, "traced");
  }
  EXPECT_EQ(ev[9].event.frame, 4);
}

TEST_F(GraphTest, ExplainShowsHandOversPoliciesAndFanOut) {
  GraphBuilder b("plan");
  b.set_policy(ConversionPolicy::Strict);
  b.add_source("cam", nv12(1));
  b.add_stage("look", inspect_stage());
  b.add_stage("pre", preprocess_stage({.width = 16, .height = 16}));
  b.add_sink("a", AppSink::create());
  b.add_sink("b", AppSink::create());
  NEAT_ASSERT_OK(b.connect("cam", "look"));
  NEAT_ASSERT_OK(b.connect("cam", "pre"));
  NEAT_ASSERT_OK(b.connect("look", "a"));
  NEAT_ASSERT_OK(b.connect("pre", "b"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  const std::string text = g->explain();
  EXPECT_NE(text.find("graph 'plan' (policy strict)"), std::string::npos) << text;
  EXPECT_NE(text.find("[source] cam"), std::string::npos) << text;
  EXPECT_NE(text.find("preprocess size=16x16"), std::string::npos) << text;
  EXPECT_NE(text.find("hand-over, no copy"), std::string::npos) << text;
  EXPECT_NE(text.find("shared read-only with 1 other consumer(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("expected bytes copied per frame on edges: 0 B"), std::string::npos) << text;
}

// Pools are sized for the frames that can be in flight: each queue
// downstream, each consumer's, what forwarding stages pass on, and what sinks
// keep (a producer waits for room before it makes a frame, so it holds none
// while it waits). With a slow application every queue fills up, and still no
// output buffer beyond the plan's count is ever allocated.
TEST_F(GraphTest, PoolsHoldEveryFrameInFlightSoASlowConsumerAllocatesNothingNew) {
  GraphBuilder b("pools");
  b.set_policy(ConversionPolicy::AllowSilent);
  auto out = AppSink::create({.capacity = 3});
  b.add_source("cam", nv12(60, 32, 32));
  b.add_stage("pre", preprocess_stage({.width = 16, .height = 16, .out_dtype = DType::F16}));
  std::set<const std::byte*> pre_buffers;  // written by look's thread, read after wait()
  b.add_stage("look", inspect_stage([&](const NeatTensorRef& t) {
                // forwards its input: pre's frames stay in flight
                auto m = t->map(MapMode::Read);
                if (m.ok()) pre_buffers.insert(m->data());
              }));
  b.add_stage("half", normalize_stage({.out_dtype = DType::F32}));
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "pre", {.capacity = 2}));
  NEAT_ASSERT_OK(b.connect("pre", "look", {.capacity = 2}));
  NEAT_ASSERT_OK(b.connect("look", "half", {.capacity = 5}));
  NEAT_ASSERT_OK(b.connect("half", "out", {.capacity = 2}));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  // Every node waits for room downstream before it takes a frame, so no node
  // holds a finished frame while it waits:
  // half: queue 2 + appsink (3 queued + 1 pulled) = 6.
  // pre: queue 2 + look (which forwards: queue 5 + half's 1, which does not) = 8.
  // cam (synthetic): queue 2 + pre's 1 = 3.
  const GraphPlan& plan = g->plan();
  auto pool_of = [&](std::string_view name) {
    for (const auto& n : plan.nodes)
      if (n.name == name) return n.pool_buffers;
    return -1;
  };
  EXPECT_EQ(pool_of("half"), 6);
  EXPECT_EQ(pool_of("pre"), 8);
  EXPECT_NE(g->explain().find("[pool 8]"), std::string::npos) << g->explain();
  ASSERT_EQ(plan.memory.size(), 4u) << g->explain();
  std::int64_t total = 0;
  for (const FramePool& p : plan.memory) {
    int held = 0;
    for (const auto& [who, n] : p.held_by)
      held += n;
    EXPECT_EQ(held, p.buffers) << p.name << ": who holds them adds up";
    EXPECT_EQ(p.frame_bytes, p.frames.bytes());
    total += p.bytes();
  }
  EXPECT_EQ(plan.frame_memory_bytes(), total);
  EXPECT_EQ(plan.memory[0].name, "source 'cam'");
  EXPECT_EQ(plan.memory[0].buffers, 3);
  EXPECT_NE(g->explain().find("frame memory in all: "), std::string::npos) << g->explain();
  EXPECT_NE(g->explain().find("appsink 'out' (queue 3 + 1 pulled): 4"), std::string::npos)
      << g->explain();
  NEAT_ASSERT_OK(g->start());
  // The application pulls nothing until every queue is full (on a slow
  // machine, as under TSan, a consumer that is merely slow may still outrun
  // the stages), then pulls slowly.
  // stats() reads the edges one after another, so while frames still move a
  // single read may see each queue full at a different moment. Backed up
  // means every queue full and no frame moved between two reads 20 ms apart.
  auto moved = [&] {
    std::uint64_t n = 0;
    for (const EdgeStats& e : g->stats().edges)
      n += e.frames;
    return n;
  };
  auto all_full = [&] {
    for (const EdgeStats& e : g->stats().edges)
      if (e.queue_depth < e.capacity) return false;
    return true;
  };
  auto backed_up = [&] {
    const std::uint64_t before = moved();
    if (!all_full()) return false;
    std::this_thread::sleep_for(20ms);
    return all_full() && moved() == before;
  };
  for (auto until = std::chrono::steady_clock::now() + 30s;
       !backed_up() && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(backed_up()) << "every queue full within 30 s";
  std::set<const std::byte*> half_buffers;
  while (auto f = out->pull(10s)) {
    std::this_thread::sleep_for(2ms);  // slow: the queues stay full
    ASSERT_EQ(f->shape(), (Dims{3, 16, 16})) << "normalize read preprocess's CHW output as CHW";
    ASSERT_EQ(f->dtype(), DType::F32);
    auto m = f->map(MapMode::Read);
    NEAT_ASSERT_OK(m);
    half_buffers.insert(m->data());
  }
  NEAT_ASSERT_OK(g->wait());
  EXPECT_LE(half_buffers.size(), 6u);
  EXPECT_GE(half_buffers.size(), 4u) << "the queues did fill up";
  EXPECT_LE(pre_buffers.size(), 8u);
  EXPECT_GE(pre_buffers.size(), 5u) << "the queues did fill up";
  // The pools grew to what was really in flight together, never past the plan.
  for (const PoolStats& p : g->stats().pools) {
    EXPECT_LE(p.peak_buffers, p.planned_buffers) << p.name;
    if (p.name != "stage 'look'") {  // look forwards its input: its pool stays unused
      EXPECT_GE(p.peak_buffers, 3) << p.name << ": the queues did fill up";
    }
  }
}

TEST_F(GraphTest, FanOutSharesReadOnlyAndAWriterGetsARecordedCopyOnWrite) {
  GraphBuilder b("fan");
  auto a = AppSink::create(), w = AppSink::create();
  b.add_source("cam", synthetic_source(FrameSpec::image(PixelFormat::RGB, 16, 8), 6));
  b.add_stage("reader", inspect_stage());
  b.add_stage(
      "writer",
      make_stage("stamp", {.writes = true}, [](NeatTensor t, StageContext&) -> Result<NeatTensor> {
        NEAT_ASSIGN_OR_RETURN(NeatTensor x, std::move(t).make_writable());
        {
          NEAT_ASSIGN_OR_RETURN(Mapping m, x.map(MapMode::Write));
          m.mutable_data()[0] = std::byte{0xEE};
        }
        return x;
      }));
  b.add_sink("a", a);
  b.add_sink("w", w);
  NEAT_ASSERT_OK(b.connect("cam", "reader"));
  NEAT_ASSERT_OK(b.connect("cam", "writer"));
  NEAT_ASSERT_OK(b.connect("reader", "a"));
  NEAT_ASSERT_OK(b.connect("writer", "w"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  EXPECT_TRUE(g->plan().edges[1].copy_on_write || g->plan().edges[0].copy_on_write);
  NEAT_ASSERT_OK(g->start());
  std::vector<NeatTensor> fa, fw;
  std::thread ta([&] { fa = drain(*a); });
  fw = drain(*w);
  ta.join();
  auto r = g->wait();
  NEAT_ASSERT_OK(r);
  ASSERT_EQ(fa.size(), 6u);
  ASSERT_EQ(fw.size(), 6u);
  EXPECT_EQ(r->frames.produced, 12u) << "fan-out: one delivery per consumer";
  EXPECT_TRUE(r->frames.balanced()) << r->frames.to_string();
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(std::to_integer<int>(fw[i].map()->data()[0]), 0xEE);
    EXPECT_NE(std::to_integer<int>(fa[i].map()->data()[0]), 0xEE) << "the reader's frame is intact";
  }
  const auto d = delta();
  EXPECT_GE(d.total(ConversionKind::Pack).count, 1u) << "copy-on-write copies are recorded";
}

// Wraps a source and remembers every frame's storage, to prove that all of
// them are released once the graph and the application let go.
class TrackingSource final : public Source {
 public:
  TrackingSource(std::unique_ptr<Source> inner, std::vector<std::weak_ptr<Storage>>& seen)
      : inner_(std::move(inner)), seen_(seen) {}
  std::string_view kind() const noexcept override { return "tracking"; }
  Result<FrameSpec> prepare() override { return inner_->prepare(); }
  Result<std::optional<NeatTensor>> next(const std::atomic<bool>& stop) override {
    auto r = inner_->next(stop);
    if (r.ok() && r->has_value()) seen_.push_back((**r).storage());
    return r;
  }

 private:
  std::unique_ptr<Source> inner_;
  std::vector<std::weak_ptr<Storage>>& seen_;
};

TEST_F(GraphTest, AStageErrorStopsTheGraphNamesTheStageAndLeaksNothing) {
  std::vector<std::weak_ptr<Storage>> seen;
  GraphBuilder b("faulty");
  auto out = AppSink::create({.capacity = 2});
  b.add_source("cam", std::make_unique<TrackingSource>(nv12(1000), seen));
  b.add_stage("bad",
              make_stage("fails_at_7", {}, [](NeatTensor t, StageContext& c) -> Result<NeatTensor> {
                if (c.frame == 7) return internal_error("frame 7 is cursed");
                return t;
              }));
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "bad"));
  NEAT_ASSERT_OK(b.connect("bad", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  std::weak_ptr<Storage> first;
  const auto t0 = std::chrono::steady_clock::now();
  NEAT_ASSERT_OK(g->start());
  std::vector<NeatTensor> got;
  while (auto f = out->pull(5s))
    got.push_back(std::move(*f));
  auto r = g->wait();
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("stage 'bad' of graph 'faulty'"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("frame 7 is cursed"), std::string::npos);
  EXPECT_EQ(r.error().code(), ErrorCode::Internal);
  EXPECT_LT(elapsed, 5s) << "stops within a bounded time";
  const FrameAccounting a = g->frames();
  EXPECT_TRUE(a.balanced()) << a.to_string();
  EXPECT_EQ(a.dropped.at("stage_error"), 1u);
  EXPECT_LE(got.size(), 7u);
  EXPECT_LT(a.source_frames, 1000u) << "the source stopped early";
  got.clear();
  g = internal_error("released");  // drop the graph (its queues, pools, stages)
  ASSERT_FALSE(seen.empty());
  for (const auto& w : seen)
    EXPECT_TRUE(w.expired()) << "a frame's buffer outlived the graph";
}

TEST_F(GraphTest, AStageThatThrowsBecomesAnErrorNotACrash) {
  GraphBuilder b("throwing");
  b.add_source("cam", nv12(10));
  b.add_stage("boom", make_stage("throws", {}, [](NeatTensor, StageContext&) -> Result<NeatTensor> {
                throw std::runtime_error("model file missing");
              }));
  b.add_sink("out", AppSink::create());
  NEAT_ASSERT_OK(b.connect("cam", "boom"));
  NEAT_ASSERT_OK(b.connect("boom", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  auto r = g->run();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("stage 'boom'"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("process() threw model file missing"), std::string::npos)
      << r.error().message();
  EXPECT_TRUE(g->frames().balanced()) << g->frames().to_string();
}

TEST_F(GraphTest, SourceErrorsAndStopMidStreamAreCleanAndAccounted) {
  {  // a source that fails at frame 3
    struct Failing final : Source {
      int n = 0;
      std::string_view kind() const noexcept override { return "failing"; }
      Result<FrameSpec> prepare() override { return FrameSpec::image(PixelFormat::GRAY8, 4, 4); }
      Result<std::optional<NeatTensor>> next(const std::atomic<bool>&) override {
        if (n++ == 3) return failed_precondition("camera unplugged");
        return std::optional<NeatTensor>(*NeatTensor::allocate_image(PixelFormat::GRAY8, 4, 4));
      }
    };
    GraphBuilder b("src_fail");
    auto out = AppSink::create({.capacity = 8});  // run() without pulling: room for every frame
    b.add_source("cam", std::make_unique<Failing>());
    b.add_sink("out", out);
    NEAT_ASSERT_OK(b.connect("cam", "out"));
    auto g = b.build();
    NEAT_ASSERT_OK(g);
    auto r = g->run();
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("source 'cam'"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("camera unplugged"), std::string::npos);
    EXPECT_TRUE(g->frames().balanced()) << g->frames().to_string();
  }
  {  // stop() with frames queued everywhere (the app never pulls)
    GraphBuilder b("stopped");
    auto out = AppSink::create({.capacity = 2});
    b.add_source("cam", nv12(1000000));
    b.add_stage("look", inspect_stage());
    b.add_sink("out", out);
    NEAT_ASSERT_OK(b.connect("cam", "look", {.capacity = 3}));
    NEAT_ASSERT_OK(b.connect("look", "out", {.capacity = 3}));
    auto g = b.build();
    NEAT_ASSERT_OK(g);
    NEAT_ASSERT_OK(g->start());
    std::this_thread::sleep_for(200ms);
    // Backpressure: the source is held back by full queues, not running ahead.
    const FrameAccounting mid = g->frames();
    EXPECT_LE(mid.source_frames, 2u + 3u + 3u + 3u) << "bounded by the queues";
    g->stop();
    auto r = g->wait();
    NEAT_ASSERT_OK(r);  // stopping is not an error
    EXPECT_TRUE(r->frames.balanced()) << r->frames.to_string();
    EXPECT_GT(r->frames.dropped.at("stopped"), 0u);
    EXPECT_EQ(out->stats().queued, 2u) << "frames already delivered stay pullable";
  }
}

// A sink that counts what it is told: frames, end of stream, abort.
class RecordingSink final : public Sink {
 public:
  std::string_view kind() const noexcept override { return "recording"; }
  Accepts accepts() const override { return {}; }
  Status prepare(const FrameSpec&) override { return {}; }
  Result<SinkOutcome> consume(NeatTensor, std::int64_t) override {
    frames.fetch_add(1);
    if (fail_at > 0 && frames.load() == fail_at) return internal_error("disk gone");
    return SinkOutcome::Consumed;
  }
  Status finish() override {
    finished.fetch_add(1);
    return {};
  }
  void abort() override { aborted.fetch_add(1); }
  std::atomic<int> frames{0}, finished{0}, aborted{0};
  int fail_at = 0;
};

// How a graph ends decides whether its sinks get their end of stream (a
// recording is finalized by it): stop() and another node's error give it,
// abort() and the sink's own error do not.
TEST_F(GraphTest, StopAndErrorsGiveEverySinkItsEndOfStreamAbortDoesNot) {
  auto make = [](std::shared_ptr<RecordingSink> a, std::shared_ptr<RecordingSink> b,
                 bool failing_stage) {
    GraphBuilder g("ends");
    g.add_source("cam", nv12(1000000));
    g.add_stage("tee", inspect_stage());
    g.add_stage("pass",
                make_stage("fails_at_5", {},
                           [failing_stage](NeatTensor t, StageContext& c) -> Result<NeatTensor> {
                             if (failing_stage && c.frame == 5) return internal_error("boom");
                             return t;
                           }));
    g.add_sink("a", a);
    g.add_sink("b", b);
    EXPECT_TRUE(g.connect("cam", "tee").ok());
    EXPECT_TRUE(g.connect("tee", "a").ok());
    EXPECT_TRUE(g.connect("tee", "pass").ok());
    EXPECT_TRUE(g.connect("pass", "b").ok());
    return g.build();
  };
  {  // stop(): both sinks finish, nobody is aborted
    auto a = std::make_shared<RecordingSink>(), b = std::make_shared<RecordingSink>();
    auto g = make(a, b, false);
    NEAT_ASSERT_OK(g);
    NEAT_ASSERT_OK(g->start());
    while (a->frames.load() < 10)
      std::this_thread::sleep_for(1ms);
    g->stop();
    NEAT_ASSERT_OK(g->wait());
    EXPECT_EQ(a->finished.load(), 1);
    EXPECT_EQ(b->finished.load(), 1);
    EXPECT_EQ(a->aborted.load() + b->aborted.load(), 0);
    EXPECT_TRUE(g->frames().balanced()) << g->frames().to_string();
  }
  {  // abort(): no end of stream
    auto a = std::make_shared<RecordingSink>(), b = std::make_shared<RecordingSink>();
    auto g = make(a, b, false);
    NEAT_ASSERT_OK(g);
    NEAT_ASSERT_OK(g->start());
    while (a->frames.load() < 10)
      std::this_thread::sleep_for(1ms);
    g->abort();
    NEAT_ASSERT_OK(g->wait());
    EXPECT_EQ(a->finished.load() + b->finished.load(), 0);
    EXPECT_GE(a->aborted.load(), 1);
    EXPECT_GE(b->aborted.load(), 1);
    EXPECT_TRUE(g->frames().balanced()) << g->frames().to_string();
  }
  {  // a stage's error: the graph fails, the other branch's sink still finishes
    auto a = std::make_shared<RecordingSink>(), b = std::make_shared<RecordingSink>();
    auto g = make(a, b, true);
    NEAT_ASSERT_OK(g);
    auto r = g->run();
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("boom"), std::string::npos);
    EXPECT_EQ(a->finished.load(), 1) << "sink 'a' did not fail: its file must be whole";
    EXPECT_EQ(b->finished.load(), 1);
    EXPECT_TRUE(g->frames().balanced()) << g->frames().to_string();
  }
  {  // a sink's own error: it is torn down (no end of stream), the other finishes
    auto a = std::make_shared<RecordingSink>(), b = std::make_shared<RecordingSink>();
    b->fail_at = 4;
    auto g = make(a, b, false);
    NEAT_ASSERT_OK(g);
    auto r = g->run();
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("sink 'b'"), std::string::npos) << r.error().message();
    EXPECT_EQ(b->finished.load(), 0);
    EXPECT_EQ(b->aborted.load(), 1);
    EXPECT_EQ(a->finished.load(), 1);
    EXPECT_TRUE(g->frames().balanced()) << g->frames().to_string();
  }
}

// set_max_source_frames ends every source as if its stream had ended: the
// sinks finish normally, with exactly that many frames.
TEST_F(GraphTest, AMaxSourceFramesEndsEverySourceLikeItsOwnEndOfStream) {
  auto a = std::make_shared<RecordingSink>();
  GraphBuilder b("capped");
  b.add_source("cam", nv12(1000000));
  b.add_sink("a", a);
  NEAT_ASSERT_OK(b.connect("cam", "a"));
  b.set_max_source_frames(7);
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  EXPECT_NE(g->explain().find("sources end after at most 7 frame(s)"), std::string::npos)
      << g->explain();
  auto r = g->run();
  NEAT_ASSERT_OK(r);
  EXPECT_EQ(r->frames.source_frames, 7u);
  EXPECT_EQ(r->frames.consumed, 7u);
  EXPECT_EQ(a->frames.load(), 7);
  EXPECT_EQ(a->finished.load(), 1);
  // A source that ends sooner ends sooner.
  auto c = std::make_shared<RecordingSink>();
  GraphBuilder short_source("short");
  short_source.add_source("cam", nv12(3));
  short_source.add_sink("c", c);
  NEAT_ASSERT_OK(short_source.connect("cam", "c"));
  short_source.set_max_source_frames(7);
  auto g2 = short_source.build();
  NEAT_ASSERT_OK(g2);
  NEAT_ASSERT_OK(g2->run());
  EXPECT_EQ(c->frames.load(), 3);
  // Bad input: a negative limit is refused by build(), named.
  GraphBuilder bad("bad");
  bad.add_source("cam", nv12(3));
  bad.add_sink("c", std::make_shared<RecordingSink>());
  NEAT_ASSERT_OK(bad.connect("cam", "c"));
  bad.set_max_source_frames(-1);
  NEAT_EXPECT_ERROR(bad.build(), ErrorCode::FailedPrecondition, "source frame limit is negative");
}

TEST_F(GraphTest, DropOldestSinkCountsItsDrops) {
  GraphBuilder b("lossy");
  auto out = AppSink::create({.capacity = 3, .overflow = Overflow::DropOldest});
  b.add_source("cam", nv12(40));
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  auto r = g->run();  // nobody pulls while it runs
  NEAT_ASSERT_OK(r);
  EXPECT_EQ(out->stats().dropped, 37u);
  EXPECT_EQ(r->frames.dropped.at("sink_overflow"), 37u);
  EXPECT_EQ(r->frames.consumed, 3u);
  EXPECT_TRUE(r->frames.balanced());
  auto frames = drain(*out);
  ASSERT_EQ(frames.size(), 3u);
  // The newest frames survive: frame numbers 37, 38, 39 stamp their first row.
  EXPECT_EQ(std::to_integer<int>((*frames[2].map()->plane_data(PlaneRole::Y))[0]), 39);
}

TEST_F(GraphTest, PushSourceAndCallbackSink) {
  auto push = PushSource::create(FrameSpec::image(PixelFormat::RGB, 8, 8));
  auto out = AppSink::create();
  std::atomic<int> seen{0};
  out->set_callback([&](const NeatTensorRef& f) {
    EXPECT_EQ(f->image().width, 8);
    ++seen;
  });
  GraphBuilder b("pushed");
  b.add_source("app", shared_source(push));
  b.add_stage("gray", convert_stage(PixelFormat::GRAY8));
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("app", "gray"));
  NEAT_ASSERT_OK(b.connect("gray", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->start());
  for (int i = 0; i < 20; ++i) {
    NEAT_ASSERT_OK(push->push(*NeatTensor::allocate_image(PixelFormat::RGB, 8, 8)));
  }
  NEAT_EXPECT_ERROR(push->push(*NeatTensor::allocate_image(PixelFormat::RGB, 9, 8)),
                    ErrorCode::InvalidArgument, "declared as RGB 8x8");
  push->end_of_stream();
  NEAT_EXPECT_ERROR(push->push(*NeatTensor::allocate_image(PixelFormat::RGB, 8, 8)),
                    ErrorCode::FailedPrecondition, "end_of_stream()");
  auto r = g->wait();
  NEAT_ASSERT_OK(r);
  EXPECT_EQ(seen.load(), 20);
  EXPECT_EQ(r->frames.consumed, 20u);
}

// explain() before start() (plan(), then build()) must leave a push source
// usable, with the frames pushed before the plan still queued.
TEST_F(GraphTest, APlanLeavesAPushSourceOpenForTheBuild) {
  auto push = PushSource::create(FrameSpec::image(PixelFormat::RGB, 4, 4), 4);
  NEAT_ASSERT_OK(push->push(*NeatTensor::allocate_image(PixelFormat::RGB, 4, 4)));
  auto out = AppSink::create({.capacity = 8});
  GraphBuilder b("planned");
  b.add_source("app", shared_source(push));
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("app", "out"));
  NEAT_ASSERT_OK(b.plan());
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->start());
  NEAT_ASSERT_OK(push->push(*NeatTensor::allocate_image(PixelFormat::RGB, 4, 4)));
  push->end_of_stream();
  auto r = g->wait();
  NEAT_ASSERT_OK(r);
  EXPECT_EQ(r->frames.consumed, 2u);
}

TEST_F(GraphTest, BadGraphsAreRefusedWithEveryProblemListed) {
  GraphBuilder b("broken");
  b.add_source("cam", nv12(1));
  b.add_source("cam", nv12(1));  // duplicate
  b.add_stage("", inspect_stage());
  b.add_stage("null", nullptr);
  b.add_stage("orphan", inspect_stage());
  b.add_sink("out", AppSink::create());
  b.add_sink("out2", AppSink::create());
  NEAT_EXPECT_ERROR(b.connect("cam", "nowhere"), ErrorCode::InvalidArgument,
                    "no node is named 'nowhere'");
  NEAT_EXPECT_ERROR(b.connect("out", "orphan"), ErrorCode::InvalidArgument, "is a sink");
  NEAT_EXPECT_ERROR(b.connect("orphan", "cam"), ErrorCode::InvalidArgument, "is a source");
  NEAT_EXPECT_ERROR(b.connect("orphan", "orphan"), ErrorCode::InvalidArgument, "feed itself");
  NEAT_ASSERT_OK(b.connect("cam", "out"));
  NEAT_EXPECT_ERROR(b.connect("cam", "out"), ErrorCode::InvalidArgument, "already feeds 'out'");
  NEAT_EXPECT_ERROR(b.connect("cam", "out2", {.capacity = 0}), ErrorCode::InvalidArgument,
                    "capacity");
  auto g = b.build();
  ASSERT_FALSE(g.ok());
  const std::string& m = g.error().message();
  for (const char* want : {"two nodes are named 'cam'", "empty name", "stage 'null' is null",
                           "stage 'orphan': it has no input", "sink 'out2': it has no input",
                           "no node is named 'nowhere'"}) {
    EXPECT_NE(m.find(want), std::string::npos) << "missing \"" << want << "\" in:\n" << m;
  }
  NEAT_EXPECT_ERROR(GraphBuilder("empty").build(), ErrorCode::FailedPrecondition, "no nodes");

  GraphBuilder c("unfit");
  c.add_source("cam", nv12(1, 64, 48));
  c.add_stage("crop", crop_stage(1, 1, 10, 10));  // planar crops start on even coordinates
  c.add_sink("out", AppSink::create());
  NEAT_ASSERT_OK(c.connect("cam", "crop"));
  NEAT_ASSERT_OK(c.connect("crop", "out"));
  NEAT_EXPECT_ERROR(c.build(), ErrorCode::FailedPrecondition, "even coordinates");
}

TEST_F(GraphTest, GraphBudgetsAreEnforcedByTheGate) {
  GraphBuilder b("budgeted");
  b.set_policy(ConversionPolicy::AllowWithTrace);
  b.add_budget({.max_bytes_per_frame = 100, .action = RuleAction::Count});
  auto out = AppSink::create();
  b.add_source("cam", nv12(4, 32, 16));
  b.add_sink("out", out);
  b.add_stage("rgb",
              make_stage("wants_rgb", {.formats = {PixelFormat::RGB}},
                         [](NeatTensor t, StageContext&) -> Result<NeatTensor> { return t; }));
  NEAT_ASSERT_OK(b.connect("cam", "rgb"));
  NEAT_ASSERT_OK(b.connect("rgb", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->start());
  auto frames = drain(*out);
  NEAT_ASSERT_OK(g->wait());
  EXPECT_EQ(frames.size(), 4u);
  EXPECT_GE(g->rule_breaches().size(), 4u);
}

TEST_F(GraphTest, StartTwiceAndWaitBeforeStartAreErrors) {
  GraphBuilder b("once");
  b.add_source("cam", nv12(2));
  b.add_sink("out", AppSink::create({.capacity = 2}));  // run() without pulling
  NEAT_ASSERT_OK(b.connect("cam", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_EXPECT_ERROR(g->wait(), ErrorCode::FailedPrecondition, "not started");
  NEAT_ASSERT_OK(g->run());
  NEAT_EXPECT_ERROR(g->start(), ErrorCode::FailedPrecondition, "already started");
}

// One conversion path: an edge's implicit conversions are the built-in stages
// a user would insert by hand, run implicitly under the edge's policy.
class GraphEdgeStages : public testing::TelemetryTest {};

TEST_F(GraphEdgeStages, ImplicitConversionsAreTheBuiltInStagesRunUnderTheEdgePolicy) {
  GraphBuilder b("edge_stages");
  b.set_policy(ConversionPolicy::AllowWithTrace);
  b.add_source("cam", synthetic_source(FrameSpec::image(PixelFormat::NV12, 32, 16), 3));
  b.add_stage("chw",
              make_stage("chw",
                         {.dtypes = {DType::F32},
                          .formats = {PixelFormat::RGB, PixelFormat::None},
                          .layouts = {Layout::CHW}},
                         [](NeatTensor t, StageContext&) -> Result<NeatTensor> { return t; }));
  auto out = AppSink::create({.capacity = 8});  // run() without pulling
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "chw"));
  NEAT_ASSERT_OK(b.connect("chw", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  const auto& conv = g->plan().edges[0].conversions;
  ASSERT_EQ(conv.size(), 3u);
  EXPECT_EQ(conv[0].stage->kind(), "convert");
  EXPECT_EQ(conv[1].stage->kind(), "cast");
  EXPECT_EQ(conv[2].stage->kind(), "layout");
  EXPECT_EQ(conv[0].fix, "insert `convert format=RGB` before 'chw'");
  EXPECT_EQ(conv[2].fix, "insert `layout to=CHW` before 'chw'");
  EXPECT_EQ(g->plan().edges[0].consumed.shape, (Dims{3, 16, 32}));
  NEAT_ASSERT_OK(g->run());
  const auto ev = events();
  ASSERT_EQ(ev.size(), 9u);  // 3 frames x 3 conversions
  for (const auto& e : ev) {
    EXPECT_FALSE(e.event.explicit_call);
    EXPECT_EQ(e.event.policy, ConversionPolicy::AllowWithTrace);
    EXPECT_EQ(e.operation, "edge 'cam->chw'");
    EXPECT_EQ(e.edge, "cam->chw");
    EXPECT_GE(e.event.frame, 0);
  }
}

TEST(GraphEdgeStagesStandalone, PackAndTransferStagesPassThroughWhatIsAlreadyRight) {
  auto pack = pack_stage();
  auto t = NeatTensor::allocate(DType::U8, {4, 6});
  StageContext ctx;
  auto same = pack->process(*t, ctx);
  NEAT_ASSERT_OK(same);
  EXPECT_EQ(same->identity().id(), t->identity().id());
  auto strided = t->transpose(0, 1);
  auto packed = pack->process(*strided, ctx);
  NEAT_ASSERT_OK(packed);
  EXPECT_TRUE(packed->is_contiguous());
  EXPECT_NE(packed->identity().id(), t->identity().id());
  auto spec = pack->output_spec(FrameSpec::of(*strided));
  NEAT_ASSERT_OK(spec);
  EXPECT_TRUE(spec->contiguous);
  auto transfer = transfer_stage(kCpu);
  auto moved = transfer->process(*t, ctx);
  NEAT_ASSERT_OK(moved);
  EXPECT_EQ(moved->identity().id(), t->identity().id());
  NEAT_EXPECT_ERROR(transfer_stage(Device{DeviceType::Gl, 0})->output_spec(FrameSpec::of(*t)),
                    ErrorCode::Unimplemented, "only to the CPU");
}

}  // namespace
}  // namespace neat

namespace neat {
namespace {

// Live stats: what stats() and the metrics endpoint read while a graph runs.
TEST_F(GraphTest, LiveStatsCountEveryNodeAndEdgeAndAddUp) {
  GraphBuilder b("live");
  auto out = AppSink::create({.capacity = 2, .overflow = Overflow::DropOldest});
  b.add_source("cam", nv12(30));
  // Keeps even frames only: odd ones are drops with reason "filtered".
  b.add_stage("evens", make_stage("evens", Accepts::anything(),
                                  [](NeatTensor t, StageContext& c) -> Result<NeatTensor> {
                                    if (c.frame % 2 != 0) return NeatTensor();
                                    return t;
                                  }));
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "evens"));
  NEAT_ASSERT_OK(b.connect("evens", "out", {.capacity = 3}));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  const GraphStats before = g->stats();
  EXPECT_FALSE(before.running);
  EXPECT_EQ(before.nodes.size(), 3u);
  NEAT_ASSERT_OK(g->run());  // nobody pulls: the sink keeps the newest 2
  const GraphStats s = g->stats();
  EXPECT_FALSE(s.running);
  EXPECT_GT(s.seconds, 0.0);
  ASSERT_EQ(s.nodes.size(), 3u);
  const NodeStats& cam = s.nodes[0];
  const NodeStats& evens = s.nodes[1];
  const NodeStats& sink = s.nodes[2];
  EXPECT_EQ(cam.name, "cam");
  EXPECT_EQ(cam.frames_out, 30u);
  EXPECT_EQ(evens.frames_in, 30u);
  EXPECT_EQ(evens.frames_out, 15u);
  EXPECT_EQ(evens.dropped.at("filtered"), 15u);
  EXPECT_EQ(evens.busy.count, 30u);
  EXPECT_GE(evens.busy.sum_seconds, 0.0);
  ASSERT_EQ(evens.busy.cumulative.size(), evens.busy.bounds.size());
  EXPECT_TRUE(std::is_sorted(evens.busy.cumulative.begin(), evens.busy.cumulative.end()));
  EXPECT_LE(evens.busy.cumulative.back(), evens.busy.count);
  EXPECT_EQ(sink.frames_in, 15u);
  EXPECT_EQ(sink.frames_out + sink.dropped.at("sink_overflow"), 15u);
  EXPECT_EQ(sink.dropped.at("sink_overflow"), 13u);
  ASSERT_EQ(s.edges.size(), 2u);
  EXPECT_EQ(s.edges[0].frames, 30u);
  EXPECT_EQ(s.edges[1].frames, 15u);
  EXPECT_EQ(s.edges[1].capacity, 3u);
  EXPECT_EQ(s.edges[1].queue_depth, 0u);
  // Per node drops add up to the graph's.
  std::uint64_t per_node = 0;
  for (const NodeStats& n : s.nodes)
    for (const auto& [reason, count] : n.dropped)
      per_node += count;
  EXPECT_EQ(per_node, s.frames.dropped_total());

  const std::string text = g->prometheus_text();
  for (const char* want : {
           "neat_graph_running{graph=\"live\"} 0\n",
           "neat_stage_frames_out_total{graph=\"live\",stage=\"cam\",kind=\"source\"} 30\n",
           "neat_stage_frames_in_total{graph=\"live\",stage=\"evens\",kind=\"stage\"} 30\n",
           "neat_stage_dropped_frames_total{graph=\"live\",stage=\"evens\",reason=\"filtered\"} "
           "15\n",
           "neat_stage_busy_seconds_count{graph=\"live\",stage=\"evens\",kind=\"stage\"} 30\n",
           "neat_stage_busy_seconds_bucket{graph=\"live\",stage=\"evens\",kind=\"stage\",le=\"+"
           "Inf\"} "
           "30\n",
           "neat_edge_frames_total{graph=\"live\",edge=\"evens->out\",from=\"evens\",to=\"out\"} "
           "15\n",
           "neat_edge_queue_capacity{graph=\"live\",edge=\"evens->out\"} 3\n",
           "# TYPE neat_stage_busy_seconds histogram\n",
       }) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\nin\n" << text;
  }
}

TEST_F(GraphTest, LiveStatsShowAFullQueueWhileTheConsumerIsBlocked) {
  GraphBuilder b("stalled");
  std::atomic<bool> release{false};
  b.add_source("cam", nv12(20));
  b.add_stage("slow", make_stage("slow", Accepts::anything(),
                                 [&](NeatTensor t, StageContext&) -> Result<NeatTensor> {
                                   while (!release.load())
                                     std::this_thread::sleep_for(1ms);
                                   return t;
                                 }));
  auto out = AppSink::create();
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "slow", {.capacity = 4}));
  NEAT_ASSERT_OK(b.connect("slow", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->start());
  // The stage holds one frame; the edge fills up to its capacity.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  GraphStats s;
  do {
    std::this_thread::sleep_for(5ms);
    s = g->stats();
    // Both settle: the stage has taken its frame and the edge refilled (the
    // edge can be full a moment before the stage's first pop on a busy machine).
  } while ((s.edges[0].queue_depth < 4 || s.nodes[1].frames_in < 1) &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_TRUE(s.running);
  EXPECT_EQ(s.edges[0].queue_depth, 4u);
  EXPECT_EQ(s.nodes[1].frames_in, 1u);
  EXPECT_NE(
      g->prometheus_text().find("neat_edge_queue_depth{graph=\"stalled\",edge=\"cam->slow\"} 4\n"),
      std::string::npos);
  release.store(true);
  EXPECT_EQ(drain(*out).size(), 20u);
  NEAT_ASSERT_OK(g->wait());
  EXPECT_EQ(g->stats().edges[0].queue_depth, 0u);
}

TEST(GraphMetrics, SeveralGraphsShareOneFamilyEachAndLabelsAreEscaped) {
  GraphStats a;
  a.graph = "a\"b\\c\nd";
  a.nodes.push_back({.name = "s", .kind = NodeKind::Source, .frames_out = 3});
  GraphStats b;
  b.graph = "b";
  const std::string text = graph_prometheus_text({a, b});
  std::size_t families = 0;
  for (std::size_t p = 0; (p = text.find("# TYPE neat_graph_running ", p)) != std::string::npos;
       ++p)
    ++families;
  EXPECT_EQ(families, 1u) << text;
  EXPECT_NE(text.find("neat_graph_running{graph=\"a\\\"b\\\\c\\nd\"} 0\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("neat_graph_running{graph=\"b\"} 0\n"), std::string::npos) << text;
  EXPECT_EQ(graph_prometheus_text({}), "");
}

}  // namespace
}  // namespace neat

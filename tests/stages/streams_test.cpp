// Several streams in one graph: a stage or sink fed by several sources takes
// their frames round-robin, a stalled stream never holds the others, every
// frame and every conversion carries its stream, and graphs whose streams
// cannot share a node are refused at build. Threaded: also run under TSan.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>

#include "neat/stages/appsink.hpp"
#include "neat/stages/graph.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

using namespace std::chrono_literals;
using testing::TelemetryTest;

class Streams : public TelemetryTest {};

std::unique_ptr<Source> frames_of(std::int64_t n, std::int64_t w = 64, std::int64_t h = 48) {
  return synthetic_source(FrameSpec::image(PixelFormat::NV12, w, h), n);
}

// A camera that sends `first` frames, then goes silent (no frame, no end of
// stream) until the graph stops: a stall.
class StallingSource final : public Source {
 public:
  explicit StallingSource(std::int64_t first) : inner_(frames_of(first)) {}
  std::string_view kind() const noexcept override { return "stalling"; }
  Result<FrameSpec> prepare() override { return inner_->prepare(); }
  Result<std::optional<NeatTensor>> next(const std::atomic<bool>& stop) override {
    auto r = inner_->next(stop);
    if (!r.ok() || r->has_value()) return r;
    while (!stop.load())
      std::this_thread::sleep_for(1ms);
    return std::optional<NeatTensor>{};
  }

 private:
  std::unique_ptr<Source> inner_;
};

std::unique_ptr<Stage> pass_through(Accepts accepts = {}) {
  return make_stage("pass", std::move(accepts),
                    [](NeatTensor t, StageContext&) -> Result<NeatTensor> { return t; });
}

TEST_F(Streams, AStalledStreamNeverHoldsTheOthersBack) {
  GraphBuilder b("cameras");
  auto out = AppSink::create({.capacity = 4});
  b.add_source("stalled", std::make_unique<StallingSource>(1));
  b.add_source("live", frames_of(20));
  b.add_stage("shared", pass_through());
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("stalled", "shared"));
  NEAT_ASSERT_OK(b.connect("live", "shared"));
  NEAT_ASSERT_OK(b.connect("shared", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->start());
  std::map<std::string, int> got;
  while (got["live"] < 20) {
    auto f = out->pull(10s);  // the live stream's frames come while the other is silent
    ASSERT_TRUE(f.has_value()) << "live " << got["live"] << ", stalled " << got["stalled"];
    ++got[std::string(f->meta().stream.name)];
  }
  EXPECT_EQ(got["stalled"], 1);
  EXPECT_FALSE(g->done()) << "the stalled stream has not ended";
  g->stop();
  NEAT_ASSERT_OK(g->wait());
  EXPECT_TRUE(g->frames().balanced()) << g->frames().to_string();
}

TEST_F(Streams, FramesAreTakenInTurnAndKeepTheirStreamAndNumbers) {
  GraphBuilder b("turns");
  auto out = AppSink::create({.capacity = 64});
  b.add_source("a", frames_of(6));
  b.add_source("b", frames_of(6));
  b.add_source("c", frames_of(6));
  b.add_sink("out", out);
  for (const char* s : {"a", "b", "c"})
    NEAT_ASSERT_OK(b.connect(s, "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->start());
  std::map<std::string, std::vector<std::int64_t>> frames;
  std::map<std::string, std::int32_t> index;
  while (auto f = out->pull(10s)) {
    const StreamId& s = f->meta().stream;
    frames[std::string(s.name)].push_back(f->meta().frame);
    index[std::string(s.name)] = s.index;
  }
  NEAT_ASSERT_OK(g->wait());
  const std::vector<std::int64_t> all{0, 1, 2, 3, 4, 5};
  EXPECT_EQ(frames["a"], all);
  EXPECT_EQ(frames["b"], all);
  EXPECT_EQ(frames["c"], all);
  EXPECT_EQ(index, (std::map<std::string, std::int32_t>{{"a", 0}, {"b", 1}, {"c", 2}}));
  EXPECT_EQ(g->frames().source_frames, 18u);
  EXPECT_TRUE(g->frames().balanced());
}

TEST_F(Streams, EveryConversionNamesItsStreamAndTheEdgeItCameBy) {
  GraphBuilder b("named");
  auto out = AppSink::create({.capacity = 64});
  b.add_source("front", frames_of(3));
  b.add_source("back", frames_of(2));
  b.add_stage("det", pass_through({.formats = {PixelFormat::RGB}}),
              {.policy = ConversionPolicy::AllowWithTrace});
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("front", "det"));
  NEAT_ASSERT_OK(b.connect("back", "det"));
  NEAT_ASSERT_OK(b.connect("det", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->start());
  while (out->pull(10s)) {
  }
  NEAT_ASSERT_OK(g->wait());
  std::map<std::string, int> per_stream;
  for (const auto& e : events()) {
    EXPECT_EQ(e.edge, e.stream + "->det");
    ++per_stream[e.stream];
  }
  EXPECT_EQ(per_stream, (std::map<std::string, int>{{"back", 2}, {"front", 3}}));
}

TEST_F(Streams, ACycleAndADuplicateLinkAreRefused) {
  GraphBuilder b("loop");
  b.add_source("cam", frames_of(1));
  b.add_stage("x", pass_through());
  b.add_stage("y", pass_through());
  b.add_sink("out", AppSink::create());
  NEAT_ASSERT_OK(b.connect("cam", "x"));
  NEAT_ASSERT_OK(b.connect("x", "y"));
  NEAT_ASSERT_OK(b.connect("y", "x"));  // x takes cam and y: y needs x first
  NEAT_ASSERT_OK(b.connect("y", "out"));
  NEAT_EXPECT_ERROR(b.connect("cam", "x"), ErrorCode::InvalidArgument, "already feeds 'x'");
  NEAT_EXPECT_ERROR(b.build(), ErrorCode::FailedPrecondition,
                    "stage 'x': it is not reachable from every node feeding it (a cycle?)");
}

}  // namespace
}  // namespace neat

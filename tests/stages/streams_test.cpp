// Several streams in one graph: a stage or sink fed by several sources takes
// their frames round-robin, a stalled stream never holds the others, every
// frame and every conversion carries its stream, and graphs whose streams
// cannot share a node are refused at build. Streams are supervised: a live
// source that fails, stalls or ends is restarted alone, with its frame
// numbers and timestamps continuing; restart never fails fast; a rate keeps
// every Nth frame. Threaded: also run under TSan.
#include <arpa/inet.h>
#include <gst/gst.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "neat/stages/appsink.hpp"
#include "neat/stages/graph.hpp"
#include "neat/stages/gst_io.hpp"
#include "neat/telemetry/event_sink.hpp"
#include "neat/telemetry/metrics.hpp"
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
  // Every live frame comes while the other stream is silent; the stalled
  // stream's one frame comes before or among them (its source thread may be
  // scheduled after the live one has sent all of its frames).
  while (got["live"] < 20 || got["stalled"] < 1) {
    auto f = out->pull(10s);
    ASSERT_TRUE(f.has_value()) << "live " << got["live"] << ", stalled " << got["stalled"];
    ++got[std::string(f->meta().stream.name)];
  }
  EXPECT_FALSE(out->pull(50ms).has_value()) << "the stalled stream sent one frame only";
  EXPECT_EQ(got["stalled"], 1);
  EXPECT_EQ(got["live"], 20);
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
  const MetricsSnapshot metrics_before = labeled_metrics().snapshot();
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

  // The Prometheus series and the end-of-run table carry the stream too.
  std::map<std::string, std::uint64_t> metric_rows;
  for (const MetricsRow& r : labeled_metrics().snapshot().since(metrics_before).rows)
    if (r.stage == "det") metric_rows[r.stream] += r.count;
  EXPECT_EQ(metric_rows, (std::map<std::string, std::uint64_t>{{"back", 2}, {"front", 3}}));
  const std::string text = labeled_metrics().prometheus_text();
  EXPECT_NE(text.find("edge=\"front->det\",stream=\"front\"} 3"), std::string::npos) << text;
  const std::string table =
      format_metrics_table(labeled_metrics().snapshot().since(metrics_before));
  EXPECT_NE(table.find("STREAM"), std::string::npos) << table;
  EXPECT_NE(table.find("back"), std::string::npos) << table;
}

// A live camera driven by a script: each "session" (from prepare() or
// restart()) sends its frames, then fails, stalls or ends, as told.
class ScriptedCamera final : public Source {
 public:
  enum class Then { Fail, Stall, End };
  struct Session {
    std::int64_t frames;
    Then then;
    std::int64_t width = 64;
  };
  explicit ScriptedCamera(std::vector<Session> script, bool live = true)
      : script_(std::move(script)), live_(live) {}
  std::string_view kind() const noexcept override { return "scripted"; }
  bool live() const override { return live_; }
  Result<FrameSpec> prepare() override { return open(); }
  Result<FrameSpec> restart(const std::atomic<bool>&) override {
    ++session_;
    if (session_ >= script_.size()) return unavailable("the camera does not answer");
    return open();
  }
  Result<std::optional<NeatTensor>> next(const std::atomic<bool>& stop) override {
    const Session& s = script_[session_];
    if (sent_ < s.frames) {
      ++sent_;
      pts_ += 33'333'333;
      auto f = inner_->next(stop);
      if (f.ok() && f->has_value()) {
        FrameMeta m = (**f).meta();
        m.frame = -1;
        m.pts_ns = pts_;  // each session counts from its own start
        (**f).set_meta(m);
      }
      return f;
    }
    switch (s.then) {
      case Then::Fail:
        return unavailable("connection reset by peer");
      case Then::End:
        return std::optional<NeatTensor>{};
      case Then::Stall:
        while (!stop.load())
          std::this_thread::sleep_for(1ms);
        return std::optional<NeatTensor>{};
    }
    return std::optional<NeatTensor>{};
  }

 private:
  Result<FrameSpec> open() {
    inner_ = frames_of(1 << 20, script_[session_].width);
    sent_ = 0;
    pts_ = 0;
    return inner_->prepare();
  }
  std::vector<Session> script_;
  bool live_;
  std::size_t session_ = 0;
  std::int64_t sent_ = 0, pts_ = 0;
  std::unique_ptr<Source> inner_;
};

SourceOptions quick(RestartPolicy restart = RestartPolicy::Live) {
  return {.stall_timeout = 300ms, .restart = restart, .backoff_min = 20ms, .backoff_max = 80ms};
}

struct Outcome {
  std::vector<NeatTensor> frames;
  Status status;
  GraphStats stats;
  std::vector<std::string> states;  // "cam:stalled:no frame for ...", from the trace records
};

class StateRecorder final : public EventSink {
 public:
  void on_event(const ConversionEvent&) noexcept override {}
  void on_stream(const StreamEvent& e) noexcept override {
    std::lock_guard lock(mutex);
    states.push_back(std::string(e.stream) + ":" + std::string(e.state) + ":" +
                     std::string(e.reason));
  }
  std::mutex mutex;
  std::vector<std::string> states;
};

Outcome run_cameras(std::vector<std::pair<std::string, std::unique_ptr<Source>>> cams,
                    SourceOptions options, std::int64_t stop_after = 0) {
  auto recorder = std::make_shared<StateRecorder>();
  auto reg = add_event_sink(recorder);
  // [docs:streams_builder]
  GraphBuilder b("supervised");
  auto out = AppSink::create({.capacity = 256});
  for (auto& [name, src] : cams)
    b.add_source(name, std::move(src), options);  // e.g. {.stall_timeout = 5s, .rate = 10}
  b.add_sink("out", out);
  for (auto& [name, src] : cams)
    EXPECT_TRUE(b.connect(name, "out").ok());  // one sink, fed by every stream in turn
  // [docs:end]
  Outcome o;
  auto g = b.build();
  if (!g.ok()) {
    o.status = g.error();
    return o;
  }
  EXPECT_TRUE(g->start().ok());
  while (auto f = out->pull(5s)) {
    o.frames.push_back(std::move(*f));
    if (stop_after > 0 && static_cast<std::int64_t>(o.frames.size()) >= stop_after) g->stop();
  }
  auto r = g->wait();
  if (!r.ok()) o.status = r.error();
  o.stats = g->stats();
  reg.reset();
  o.states = recorder->states;
  return o;
}

std::vector<std::pair<std::string, std::unique_ptr<Source>>> one(std::string name,
                                                                 std::unique_ptr<Source> s) {
  std::vector<std::pair<std::string, std::unique_ptr<Source>>> v;
  v.emplace_back(std::move(name), std::move(s));
  return v;
}

using Then = ScriptedCamera::Then;

TEST_F(Streams, ALiveCameraThatFailsStallsAndEndsIsRestartedAndItsFramesContinue) {
  auto cam = std::make_unique<ScriptedCamera>(std::vector<ScriptedCamera::Session>{
      {3, Then::Fail}, {3, Then::Stall}, {3, Then::End}, {3, Then::Stall}});
  auto o = run_cameras(one("door", std::move(cam)), quick(), /*stop_after=*/12);
  NEAT_ASSERT_OK(o.status);
  ASSERT_EQ(o.frames.size(), 12u);
  for (std::size_t i = 0; i < o.frames.size(); ++i) {
    EXPECT_EQ(o.frames[i].meta().frame, static_cast<std::int64_t>(i)) << "numbers continue";
    EXPECT_EQ(o.frames[i].meta().pts_ns, static_cast<std::int64_t>(i + 1) * 33'333'333)
        << "timestamps continue across restarts, frame " << i;
  }
  ASSERT_EQ(o.stats.streams.size(), 1u);
  const StreamStats& s = o.stats.streams[0];
  EXPECT_EQ(s.name, "door");
  EXPECT_EQ(s.restarts, 3u);
  EXPECT_EQ(s.frames, 12u);
  EXPECT_EQ(s.state, StreamState::Ended);
  const auto has = [&](std::string_view want) {
    return std::any_of(o.states.begin(), o.states.end(),
                       [&](const std::string& x) { return x.find(want) != std::string::npos; });
  };
  EXPECT_TRUE(has("door:restarting:connection reset by peer"));
  EXPECT_TRUE(has("door:stalled:no frame for"));
  EXPECT_TRUE(has("door:restarting:the live source ended its stream"));
  EXPECT_TRUE(has("door:up:frames again"));
  EXPECT_TRUE(has("door:ended:the graph stopped"));
}

TEST_F(Streams, RestartNeverFailsTheGraphFastNamingTheStream) {
  auto cam = std::make_unique<ScriptedCamera>(
      std::vector<ScriptedCamera::Session>{{2, Then::Fail}, {2, Then::End}});
  auto o = run_cameras(one("gate", std::move(cam)), quick(RestartPolicy::Never));
  NEAT_EXPECT_ERROR(o.status, ErrorCode::Unavailable, "stream 'gate' went down (restart never");
  EXPECT_EQ(o.stats.streams[0].state, StreamState::Failed);
  EXPECT_EQ(o.stats.streams[0].restarts, 0u);
  EXPECT_EQ(o.stats.streams[0].last_error, "connection reset by peer");
}

TEST_F(Streams, AFileThatFailsFailsTheGraphUnlessRestartAlwaysPlaysItAgain) {
  auto failing = std::make_unique<ScriptedCamera>(
      std::vector<ScriptedCamera::Session>{{2, Then::Fail}, {2, Then::End}}, /*live=*/false);
  auto o = run_cameras(one("file", std::move(failing)), quick());
  NEAT_EXPECT_ERROR(o.status, ErrorCode::Unavailable, "restart=always would start it again");
  // restart=always: a file that fails or ends plays again from its start.
  auto again = std::make_unique<ScriptedCamera>(
      std::vector<ScriptedCamera::Session>{{2, Then::Fail}, {2, Then::End}, {2, Then::End}},
      /*live=*/false);
  auto a = run_cameras(one("file", std::move(again)), quick(RestartPolicy::Always),
                       /*stop_after=*/6);
  NEAT_ASSERT_OK(a.status);
  EXPECT_EQ(a.frames.size(), 6u);
  EXPECT_EQ(a.stats.streams[0].restarts, 2u);
  EXPECT_EQ(a.stats.streams[0].state, StreamState::Ended);
}

TEST_F(Streams, ACameraThatComesBackAtAnotherSizeIsRefusedNamingTheStream) {
  auto cam = std::make_unique<ScriptedCamera>(
      std::vector<ScriptedCamera::Session>{{2, Then::Fail}, {2, Then::End, /*width=*/32}});
  auto o = run_cameras(one("yard", std::move(cam)), quick());
  NEAT_EXPECT_ERROR(o.status, ErrorCode::FailedPrecondition,
                    "stream 'yard' came back with NV12 32x48");
  EXPECT_EQ(o.stats.streams[0].state, StreamState::Failed);
}

TEST_F(Streams, AStreamThatStaysDownKeepsRetryingWhileTheOthersFlow) {
  std::vector<std::pair<std::string, std::unique_ptr<Source>>> cams;
  cams.emplace_back("dead", std::make_unique<ScriptedCamera>(
                                std::vector<ScriptedCamera::Session>{{1, Then::Fail}}));
  cams.emplace_back("live", std::make_unique<ScriptedCamera>(
                                std::vector<ScriptedCamera::Session>{{1 << 20, Then::End}}));
  auto o = run_cameras(std::move(cams), quick(), /*stop_after=*/400);
  NEAT_ASSERT_OK(o.status);
  const StreamStats& dead = o.stats.streams[0];
  EXPECT_EQ(dead.name, "dead");
  EXPECT_GE(dead.restarts, 1u);
  EXPECT_EQ(dead.frames, 1u);
  EXPECT_EQ(dead.last_error, "the camera does not answer");
  EXPECT_GE(o.stats.streams[1].frames, 399u);
}

TEST_F(Streams, ARateKeepsEveryNthFrameByTimestampAndCountsTheRest) {
  auto cam = std::make_unique<ScriptedCamera>(std::vector<ScriptedCamera::Session>{{30, Then::End}},
                                              /*live=*/false);
  SourceOptions o = quick();
  o.rate = 10;  // of 30 frames a second
  auto r = run_cameras(one("cam", std::move(cam)), o);
  NEAT_ASSERT_OK(r.status);
  ASSERT_EQ(r.frames.size(), 10u);
  for (std::size_t i = 0; i < r.frames.size(); ++i)
    EXPECT_EQ(r.frames[i].meta().frame, static_cast<std::int64_t>(3 * i));
  EXPECT_EQ(r.stats.streams[0].dropped.at("rate"), 20u);
  EXPECT_EQ(r.stats.streams[0].frames, 10u);
}

// A free UDP port on loopback (bound, read, released).
int free_udp_port() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

// A real RTP/UDP camera on loopback: a GStreamer sender in this process.
class RtpSender {
 public:
  explicit RtpSender(int port) {
    gst_init(nullptr, nullptr);  // idempotent; the library initializes it too
    const std::string d =
        "videotestsrc is-live=true ! video/x-raw,format=I420,width=64,height=48,framerate=30/1 "
        "! rtpvrawpay ! udpsink host=127.0.0.1 port=" +
        std::to_string(port);
    pipeline_ = gst_parse_launch(d.c_str(), nullptr);
  }
  ~RtpSender() {
    if (pipeline_ != nullptr) {
      gst_element_set_state(pipeline_, GST_STATE_NULL);
      gst_object_unref(pipeline_);
    }
  }
  bool play() {
    return gst_element_set_state(pipeline_, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE;
  }
  void die() { gst_element_set_state(pipeline_, GST_STATE_NULL); }

 private:
  GstElement* pipeline_ = nullptr;
};

TEST_F(Streams, AnRtpCameraThatDiesIsStalledRestartedAndFlowsAgainWhenItReturns) {
  const int port = free_udp_port();
  ASSERT_GT(port, 0);
  RtpSender sender(port);
  ASSERT_TRUE(sender.play());
  auto recorder = std::make_shared<StateRecorder>();
  auto reg = add_event_sink(recorder);
  GraphBuilder b("rtp");
  const std::string receive =
      "udpsrc port=" + std::to_string(port) +
      " caps=\"application/x-rtp,media=video,clock-rate=90000,encoding-name=RAW,"
      "sampling=YCbCr-4:2:0,depth=(string)8,width=(string)64,height=(string)48\" ! rtpvrawdepay "
      "! video/x-raw,format=I420,width=64,height=48";
  // A first frame may take over 1 s under TSan (a build failed so once).
  b.add_source("cam", gst_source(receive, {.first_frame_timeout = 5s}),
               {.stall_timeout = 500ms, .backoff_min = 100ms, .backoff_max = 400ms});
  auto out = AppSink::create({.capacity = 64});
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  EXPECT_NE(g->explain().find("stream: live; stalled after 0.5 s"), std::string::npos)
      << g->explain();
  NEAT_ASSERT_OK(g->start());
  std::int64_t last = -1;
  auto take = [&](int n) {
    for (int i = 0; i < n; ++i) {
      auto f = out->pull(10s);
      ASSERT_TRUE(f.has_value()) << "frame " << i << " of " << n;
      EXPECT_GT(f->meta().frame, last) << "frame numbers go on across the restart";
      last = f->meta().frame;
    }
  };
  take(5);
  sender.die();  // the camera goes away without an end of stream
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (g->stats().streams[0].state == StreamState::Up &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  EXPECT_NE(g->stats().streams[0].state, StreamState::Up) << "the stall was seen";
  // The camera comes back only once the source was restarted: back sooner,
  // its packets reach the same udpsrc and flow with no restart at all (seen
  // under TSan, where the stall is seen late).
  while (g->stats().streams[0].restarts == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  EXPECT_GE(g->stats().streams[0].restarts, 1u) << "restarted after the stall";
  while (out->try_pull()) {
  }
  ASSERT_TRUE(sender.play());  // it comes back
  take(5);
  g->stop();
  NEAT_ASSERT_OK(g->wait());
  reg.reset();
  const StreamStats s = g->stats().streams[0];
  EXPECT_GE(s.restarts, 1u);
  bool stalled = false, again = false;
  for (const std::string& x : recorder->states) {
    stalled |= x.rfind("cam:stalled:no frame for", 0) == 0;
    again |= x == "cam:up:frames again";
  }
  EXPECT_TRUE(stalled && again) << ::testing::PrintToString(recorder->states);
}

TEST_F(Streams, AStageWithAMaxLatencyDropsTheFramesThatWaitedTooLongAndCountsThemPerStream) {
  GraphBuilder b("late");
  auto out = AppSink::create({.capacity = 64});
  b.add_source("cam", frames_of(8));
  // Every odd frame takes 60 ms before the bounded stage: too late for its 30 ms.
  b.add_stage("slow", make_stage("slow", {}, [](NeatTensor t, StageContext&) -> Result<NeatTensor> {
                if (t.meta().frame % 2 == 1) std::this_thread::sleep_for(60ms);
                return t;
              }));
  b.add_stage("bounded", pass_through(), {.max_latency = 30ms});
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("cam", "slow"));
  NEAT_ASSERT_OK(b.connect("slow", "bounded"));
  NEAT_ASSERT_OK(b.connect("bounded", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  EXPECT_NE(g->explain().find("drops frames older than 30 ms since capture"), std::string::npos);
  NEAT_ASSERT_OK(g->start());
  std::vector<std::int64_t> kept;
  while (auto f = out->pull(10s))
    kept.push_back(f->meta().frame);
  NEAT_ASSERT_OK(g->wait());
  for (std::int64_t f : kept)
    EXPECT_EQ(f % 2, 0) << "frame " << f << " waited 60 ms";
  const StreamStats s = g->stats().streams[0];
  EXPECT_EQ(s.dropped.at("late"), 8u - kept.size());
  EXPECT_GE(s.dropped.at("late"), 4u);
  EXPECT_EQ(g->frames().dropped.at("late"), s.dropped.at("late"));
  EXPECT_TRUE(g->frames().balanced());
}

TEST_F(Streams, ASinkThatDropsTheOldestCountsEachDropAgainstTheDroppedFramesStream) {
  GraphBuilder b("overflow");
  auto out = AppSink::create({.capacity = 1, .overflow = Overflow::DropOldest});
  b.add_source("a", frames_of(5));
  b.add_source("b", frames_of(3));
  b.add_sink("out", out);
  NEAT_ASSERT_OK(b.connect("a", "out"));
  NEAT_ASSERT_OK(b.connect("b", "out"));
  auto g = b.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->run());  // nobody pulls: the sink keeps the last frame only
  auto last = out->pull(1s);
  ASSERT_TRUE(last.has_value());
  const std::string kept(last->meta().stream.name);
  std::map<std::string, std::uint64_t> drops;
  for (const StreamStats& s : g->stats().streams)
    drops[s.name] = s.dropped.count("sink_overflow") ? s.dropped.at("sink_overflow") : 0;
  EXPECT_EQ(drops["a"], 5u - (kept == "a" ? 1u : 0u)) << "kept a frame of " << kept;
  EXPECT_EQ(drops["b"], 3u - (kept == "b" ? 1u : 0u)) << "kept a frame of " << kept;
  EXPECT_EQ(g->frames().dropped.at("sink_overflow"), 7u);
  EXPECT_TRUE(g->frames().balanced()) << g->frames().to_string();
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

// Counters, sinks, events and the thread-local context.
#include <gtest/gtest.h>

#include <thread>

#include "neat/neat.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

TEST(Counters, SnapshotsAndDeltas) {
  ConversionCounters c;
  c.add(ConversionKind::Convert, ConversionReason::DType, false, 100, 5);
  c.add(ConversionKind::Convert, ConversionReason::DType, false, 50, 5);
  c.add(ConversionKind::Pack, ConversionReason::StrideMismatch, true, 10, 1);
  c.add_refused(ConversionKind::Transfer, ConversionReason::Device);
  const auto s = c.snapshot();
  EXPECT_EQ(s.at(ConversionKind::Convert, ConversionReason::DType, false).count, 2u);
  EXPECT_EQ(s.at(ConversionKind::Convert, ConversionReason::DType, false).bytes, 150u);
  EXPECT_EQ(s.total(ConversionKind::Pack).bytes, 10u);
  EXPECT_EQ(s.total(ConversionKind::Transfer).refused, 1u);
  EXPECT_EQ(s.total().count, 3u);
  c.add(ConversionKind::Pack, ConversionReason::StrideMismatch, true, 10, 1);
  EXPECT_EQ(c.snapshot().since(s).total().count, 1u);
}

TEST(Counters, ConcurrentAddsAreNotLost) {
  ConversionCounters c;
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) {
    ts.emplace_back([&] {
      for (int k = 0; k < 10000; ++k)
        c.add(ConversionKind::Pack, ConversionReason::UserRequest, true, 2, 1);
    });
  }
  for (auto& t : ts)
    t.join();
  EXPECT_EQ(c.snapshot().total().count, 40000u);
  EXPECT_EQ(c.snapshot().total().bytes, 80000u);
}

TEST(Sinks, RegistrationIsRaiiAndEventsCarryContext) {
  auto sink = std::make_shared<MemorySink>();
  const std::size_t base = event_sink_count();
  {
    auto reg = add_event_sink(sink);
    EXPECT_EQ(event_sink_count(), base + 1);
    ScopedContext ctx({.graph = "g", .stage = "resize", .edge = "camera->resize", .frame = 17});
    auto t = NeatTensor::allocate(DType::U8, {32});
    ASSERT_TRUE(t->clone().ok());
  }
  EXPECT_EQ(event_sink_count(), base);
  auto t = NeatTensor::allocate(DType::U8, {32});
  ASSERT_TRUE(t->clone().ok());  // not delivered: unregistered
  auto ev = sink->events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].graph, "g");
  EXPECT_EQ(ev[0].stage, "resize");
  EXPECT_EQ(ev[0].edge, "camera->resize");
  EXPECT_EQ(ev[0].event.frame, 17);
  EXPECT_EQ(ev[0].event.stage, "resize") << "string_views rebound to the owned copies";
  EXPECT_EQ(ev[0].event.bytes_written, 32);
  EXPECT_GT(ev[0].event.timestamp_ns, 0);
  EXPECT_GT(ev[0].event.thread_id, 0u);
  EXPECT_NE(ev[0].line, 0);
  const std::string text = to_string(ev[0].event);
  EXPECT_NE(text.find("pack (user_request) 32 B explicit"), std::string::npos) << text;
  EXPECT_NE(text.find("stage 'resize'"), std::string::npos) << text;
  OwnedEvent copy = ev[0];
  EXPECT_EQ(copy.event.stage.data(), copy.stage.data());
}

TEST(Sinks, ASinkMayCauseEventsWithoutDeadlock) {
  struct Reentrant final : EventSink {
    void on_event(const ConversionEvent&) noexcept override {
      if (depth++ == 0) (void)NeatTensor::allocate(DType::U8, {4})->clone();
      --depth;
      ++seen;
    }
    int depth = 0;
    int seen = 0;
  };
  auto s = std::make_shared<Reentrant>();
  auto reg = add_event_sink(s);
  ASSERT_TRUE(NeatTensor::allocate(DType::U8, {4})->clone().ok());
  EXPECT_EQ(s->seen, 2);
}

TEST(Context, ScopedContextNestsAndRestores) {
  EXPECT_TRUE(current_context().stage.empty());
  {
    ScopedContext a({.stage = "a", .frame = 1});
    {
      ScopedContext b({.stage = "b"});
      EXPECT_EQ(current_context().stage, "b");
      b.set_frame(9);
      EXPECT_EQ(current_context().frame, 9);
    }
    EXPECT_EQ(current_context().stage, "a");
    EXPECT_EQ(current_context().frame, 1);
  }
  EXPECT_TRUE(current_context().stage.empty());
  std::thread([] { EXPECT_TRUE(current_context().stage.empty()); }).join();
}

}  // namespace
}  // namespace neat

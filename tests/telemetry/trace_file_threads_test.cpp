// The streaming trace sinks under concurrency: events from several threads
// while the flusher thread writes and the file rotates, then close(). Every
// event is in exactly one part, whole. Threaded: also run under TSan.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>
#include <vector>

#include "neat/neat.hpp"
#include "neat/telemetry/audit.hpp"
#include "neat/telemetry/chrome_trace_sink.hpp"
#include "neat/telemetry/jsonl_sink.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

using namespace std::chrono_literals;

TEST(TraceFileThreads, EventsFromManyThreadsWhileFlushingAndRotatingAreAllWrittenOnce) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("neat-trace-threads-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string jpath = (dir / "t.jsonl").string(), cpath = (dir / "t.json").string();
  constexpr int kThreads = 4, kPerThread = 300;
  std::uint64_t jrot = 0, crot = 0;
  {
    auto jsonl = JsonlSink::open(
        jpath, JsonlSinkOptions{.max_bytes = 64 << 10, .keep = 1000, .flush_interval = 1ms});
    auto chrome = ChromeTraceSink::open(
        cpath, ChromeTraceSinkOptions{.max_bytes = 64 << 10, .keep = 1000, .flush_interval = 1ms});
    NEAT_ASSERT_OK(jsonl);
    NEAT_ASSERT_OK(chrome);
    auto r1 = add_event_sink(*jsonl);
    auto r2 = add_event_sink(*chrome);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([t] {
        auto x = NeatTensor::allocate(DType::U8, {4, 4});
        const std::string stage = "s" + std::to_string(t);  // the context views it
        for (int i = 0; i < kPerThread; ++i) {
          ScopedContext ctx({.graph = "g", .stage = stage, .frame = i});
          (void)x->clone();
          if (i % 50 == 0) std::this_thread::sleep_for(1ms);  // let the flusher in
        }
      });
    }
    for (auto& th : threads)
      th.join();
    r1.reset();
    r2.reset();
    NEAT_ASSERT_OK((*jsonl)->close());  // may rotate once more: counted after
    NEAT_ASSERT_OK((*chrome)->close());
    jrot = (*jsonl)->rotations();
    crot = (*chrome)->rotations();
    EXPECT_EQ((*jsonl)->lost_events(), 0u);
  }
  EXPECT_GT(jrot, 2u);
  EXPECT_GT(crot, 2u);
  for (const auto& [path, rotations] : {std::pair{jpath, jrot}, std::pair{cpath, crot}}) {
    AuditAggregator a;
    for (std::uint64_t i = rotations; i >= 1; --i)
      NEAT_ASSERT_OK(a.read_file(path + "." + std::to_string(i)));
    NEAT_ASSERT_OK(a.read_file(path));
    EXPECT_EQ(a.events_read(), std::uint64_t{kThreads} * kPerThread) << path;
    EXPECT_TRUE(a.report().cut_short.empty()) << path;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace neat

// on_torch_thread: every call, from any thread, runs on one thread (the one
// the libtorch models run on), one call at a time, in full before the
// caller goes on; an exception comes back to the caller; a call from a call
// runs at once. Run under TSan too (the hand-over is lock-free atomics).

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>
#include <vector>

#include "neat/kernels/model.hpp"

namespace neat {
namespace {

TEST(TorchThread, CallsFromEveryThreadRunOnOneThreadOneAtATime) {
  std::thread::id first;
  on_torch_thread([&] { first = std::this_thread::get_id(); });
  EXPECT_NE(first, std::this_thread::get_id());
  EXPECT_FALSE(on_torch_thread_now());

  constexpr int kThreads = 4, kCalls = 500;
  long counter = 0;  // not atomic: the calls must not overlap
  int inside = 0, most_inside = 0;
  bool same_thread = true;
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) {
        on_torch_thread([&] {
          most_inside = std::max(most_inside, ++inside);
          same_thread = same_thread && std::this_thread::get_id() == first && on_torch_thread_now();
          ++counter;
          --inside;
        });
      }
    });
  }
  for (auto& c : callers)
    c.join();
  EXPECT_EQ(counter, kThreads * kCalls);  // every call ran, and finished before its caller went on
  EXPECT_EQ(most_inside, 1);
  EXPECT_TRUE(same_thread);
}

TEST(TorchThread, AnExceptionComesBackToTheCaller) {
  EXPECT_THROW(on_torch_thread([] { throw std::runtime_error("bad model"); }), std::runtime_error);
  try {
    on_torch_thread([] { throw std::invalid_argument("input 0 is not [N, 3, H, W]"); });
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "input 0 is not [N, 3, H, W]");
  }
  int after = 0;
  on_torch_thread([&] { after = 1; });  // the thread goes on
  EXPECT_EQ(after, 1);
}

TEST(TorchThread, ACallFromACallRunsAtOnce) {
  int order = 0, inner = 0, outer = 0;
  on_torch_thread([&] {
    on_torch_thread([&] { inner = ++order; });  // would wait for itself if it were queued
    outer = ++order;
  });
  EXPECT_EQ(inner, 1);
  EXPECT_EQ(outer, 2);
}

}  // namespace
}  // namespace neat

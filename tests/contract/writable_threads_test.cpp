// The uniqueness decision of make_writable() is race-free: many threads each
// holding a copy of one tensor call make_writable() on their own copy at
// once. Exactly as many of them as the rule allows get the original buffer
// (at most one), everyone else gets a private copy, and no write is ever
// observed through another thread's tensor. Run under TSan in CI.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

#include "neat/neat.hpp"

namespace neat {
namespace {

TEST(WritableThreads, AtMostOneThreadIsDonatedTheBuffer) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    auto t = NeatTensor::allocate(DType::U8, {256});
    ASSERT_TRUE(t.ok());
    const std::uint64_t original = t->identity().id();
    std::vector<NeatTensor> copies(kThreads, *t);
    t = NeatTensor();
    std::atomic<int> donated{0};
    std::atomic<int> failures{0};
    std::barrier sync(kThreads);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        NeatTensor mine = std::move(copies[static_cast<std::size_t>(i)]);
        sync.arrive_and_wait();
        auto w = std::move(mine).make_writable();
        if (!w.ok()) {
          failures.fetch_add(1);
          return;
        }
        if (w->identity().id() == original) donated.fetch_add(1);
        auto m = w->map(MapMode::Write);
        if (!m.ok()) {
          failures.fetch_add(1);
          return;
        }
        auto p = m->data_ptr<std::uint8_t>();
        for (int k = 0; k < 256; ++k)
          (*p)[k] = static_cast<std::uint8_t>(i);
        for (int k = 0; k < 256; ++k) {
          if ((*p)[k] != static_cast<std::uint8_t>(i)) failures.fetch_add(1);
        }
      });
    }
    for (auto& th : threads)
      th.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_LE(donated.load(), 1) << "round " << round;
  }
}

TEST(WritableThreads, ReadersOfSharedViewsAndAWriterNeverRace) {
  auto t = NeatTensor::allocate(DType::U32, {1024});
  ASSERT_TRUE(t.ok());
  NeatTensor reader_copy = *t;
  std::atomic<bool> ok{true};
  std::thread reader([&] {
    for (int i = 0; i < 200; ++i) {
      auto m = reader_copy.map();
      auto p = m->data_ptr<const std::uint32_t>();
      for (int k = 0; k < 1024; ++k) {
        if ((*p)[k] != 0) ok = false;
      }
    }
  });
  // The writer's make_writable sees the reader's handle and copies.
  auto w = std::move(*t).make_writable();
  ASSERT_TRUE(w.ok());
  {
    auto m = w->map(MapMode::Write);
    ASSERT_TRUE(m.ok());
    auto p = m->data_ptr<std::uint32_t>();
    for (int k = 0; k < 1024; ++k)
      (*p)[k] = 0xdeadbeef;
  }
  reader.join();
  EXPECT_TRUE(ok.load());
}

TEST(WritableThreads, CountersAndSinksUnderConcurrentCopies) {
  auto sink = std::make_shared<MemorySink>();
  auto reg = add_event_sink(sink);
  const auto before = conversion_counters().snapshot();
  auto t = NeatTensor::allocate(DType::U8, {512});
  ASSERT_TRUE(t.ok());
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 50; ++k) {
        auto c = t->clone();
        ASSERT_TRUE(c.ok());
      }
    });
  }
  for (auto& th : threads)
    th.join();
  const auto d = conversion_counters().snapshot().since(before);
  EXPECT_EQ(d.at(ConversionKind::Pack, ConversionReason::UserRequest, true).count, 200u);
  EXPECT_EQ(d.at(ConversionKind::Pack, ConversionReason::UserRequest, true).bytes, 200u * 512u);
  EXPECT_EQ(sink->size(), 200u);
}

}  // namespace
}  // namespace neat

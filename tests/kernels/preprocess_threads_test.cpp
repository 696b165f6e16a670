// The preprocess engine's working state (axis tables, scratch rows) is lent
// from process-wide pools (kernels/internal/lease_pool.hpp): each slot to one
// holder at a time, so that calls on many threads at once, of different
// geometries, each with stripes on the thread pool, never share a row. Also
// run under TSan (the threaded suite).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "neat/kernels/internal/lease_pool.hpp"
#include "neat/kernels/preprocess.hpp"
#include "support/fakes.hpp"
#include "support/images.hpp"

namespace neat {
namespace {

// Two holders at once get two values; a slot given back is lent again, the
// one whose value fits first; with every slot lent, a holder gets its
// thread's own.
TEST(LeasePool, LendsEachSlotToOneHolderAtATime) {
  detail::LeasePool<int, 2> pool;
  {
    auto a = pool.take();
    auto b = pool.take();
    EXPECT_TRUE(a.pooled());
    EXPECT_TRUE(b.pooled());
    EXPECT_NE(&*a, &*b);
    *a = 1;
    *b = 2;
    auto c = pool.take();  // both lent
    EXPECT_FALSE(c.pooled());
    EXPECT_NE(&*c, &*a);
    EXPECT_NE(&*c, &*b);
  }
  EXPECT_EQ(*pool.take([](const int& v) { return v == 2; }), 2);
  EXPECT_EQ(*pool.take([](const int& v) { return v == 7; }), 1);  // none fits: the first free
}

// Where no slot fits, one no holder has used goes before the first free
// one, so that alternating values each keep a slot; with none unused, the
// first free.
TEST(LeasePool, AnUnusedSlotGoesBeforeOneThatHoldsAnotherValue) {
  detail::LeasePool<int, 3> pool;  // values start at int{}, 0: unused
  auto unused = [](const int& v) { return v == 0; };
  *pool.take([](const int& v) { return v == 1; }, unused) = 1;  // slot 0
  {
    auto second = pool.take([](const int& v) { return v == 2; }, unused);
    EXPECT_EQ(*second, 0);  // slot 1, not slot 0's 1
    *second = 2;
  }
  for (int round = 0; round < 3; ++round) {  // alternating: each finds its own
    EXPECT_EQ(*pool.take([](const int& v) { return v == 1; }, unused), 1);
    EXPECT_EQ(*pool.take([](const int& v) { return v == 2; }, unused), 2);
  }
  *pool.take([](const int& v) { return v == 3; }, unused) = 3;  // slot 2, the last unused
  auto fourth = pool.take([](const int& v) { return v == 4; }, unused);
  EXPECT_TRUE(fourth.pooled());
  EXPECT_EQ(*fourth, 1);  // none unused: the first free
}

// Threads taking and giving back at once never hold the same slot.
TEST(LeasePool, ThreadsTakingAtOnceNeverShareASlot) {
  detail::LeasePool<int, 3> pool;
  std::atomic<int> shared{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        auto lease = pool.take();
        const int mine = *lease = 100000 * t + i;
        std::this_thread::yield();
        if (*lease != mine) shared.fetch_add(1);
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(shared.load(), 0) << "a slot was lent to two holders at once";
}

std::vector<std::byte> bytes_of(const NeatTensor& t) {
  auto m = t.map();
  EXPECT_TRUE(m.ok());
  const auto* p = m->data();
  return {p, p + t.nbytes()};
}

// Calls of two geometries and three interpolations on four threads at once,
// each with two stripes, give byte for byte what one call alone gives.
TEST(PreprocessThreads, ConcurrentCallsOfManyGeometriesEqualOneCallAlone) {
  const NeatTensor frames[2] = {testing::random_frame(PixelFormat::NV12, 320, 240, 11),
                                testing::random_frame(PixelFormat::I420, 256, 144, 12)};
  struct Case {
    int frame;
    PreprocessParams p;
    std::vector<std::byte> expected;
  };
  std::vector<Case> cases;
  for (Interpolation m : {Interpolation::Bilinear, Interpolation::Area, Interpolation::Nearest}) {
    for (int f = 0; f < 2; ++f) {
      for (std::int64_t size : {96, 64}) {
        Case c{f, {}, {}};
        c.p.interpolation = m;
        c.p.resize_mode = f == 0 ? ResizeMode::Letterbox : ResizeMode::Stretch;
        c.p.width = c.p.height = size;
        auto out = preprocess(frames[f], c.p, {.threads = 1});
        NEAT_ASSERT_OK(out);
        c.expected = bytes_of(*out);
        cases.push_back(std::move(c));
      }
    }
  }
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 24; ++i) {
        const Case& c = cases[static_cast<std::size_t>(t * 5 + i) % cases.size()];
        auto out = preprocess(frames[c.frame], c.p, {.threads = 2});
        if (!out.ok()) {
          failed.fetch_add(1);
          continue;
        }
        if (bytes_of(*out) != c.expected) wrong.fetch_add(1);
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0) << "a call's output differed from the same call alone";
}

}  // namespace
}  // namespace neat

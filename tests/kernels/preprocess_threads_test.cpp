// The preprocess engine's working state (axis tables, scratch rows) is lent
// from process-wide pools (kernels/internal/lease_pool.hpp): each slot to one
// holder at a time, so that calls on many threads at once, of different
// geometries, each with stripes on the thread pool, never share a row. Also
// run under TSan (the threaded suite).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <thread>
#include <utility>
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

// The lines a block of memory lies on, by cache-line pair (kLineBytes).
std::pair<std::uintptr_t, std::uintptr_t> lines_of(const void* p, std::size_t bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return {a / detail::kLineBytes, (a + bytes - 1) / detail::kLineBytes};
}
bool share_a_line(std::pair<std::uintptr_t, std::uintptr_t> a,
                  std::pair<std::uintptr_t, std::uintptr_t> b) {
  return a.first <= b.second && b.first <= a.second;
}

// Scratch rows allocated one after the other, of sizes that are not whole
// lines (a row cache's few bytes of tags, odd row widths), each start on a
// line of their own and share no line with another: the heap's own
// allocator puts such blocks a few bytes apart, on one line.
TEST(LineVector, RowsAllocatedOneAfterAnotherNeverShareALine) {
  std::vector<detail::LineVector<std::uint8_t>> rows;
  std::vector<detail::LineVector<std::int32_t>> tags;
  for (std::size_t i = 0; i < 64; ++i) {
    rows.emplace_back(1 + (i * 37) % 300);
    tags.emplace_back(1 + i % 5);
  }
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> spans;
  for (const auto& r : rows) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(r.data()) % detail::kLineBytes, 0u);
    spans.push_back(lines_of(r.data(), r.capacity()));
  }
  for (const auto& t : tags) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data()) % detail::kLineBytes, 0u);
    spans.push_back(lines_of(t.data(), t.capacity() * sizeof(std::int32_t)));
  }
  int shared = 0;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    for (std::size_t j = i + 1; j < spans.size(); ++j) {
      shared += share_a_line(spans[i], spans[j]) ? 1 : 0;
    }
  }
  EXPECT_EQ(shared, 0) << "two scratch rows share a cache line";
}

// A size whose bytes do not fit in memory is refused, not wrapped around.
TEST(LineVector, ASizeBeyondMemoryIsRefused) {
  detail::LineAllocator<std::uint64_t> alloc;
  EXPECT_THROW((void)alloc.allocate(std::numeric_limits<std::size_t>::max() / 4),
               std::bad_array_new_length);
}

// Two holders' slots (flag and value) lie on lines of their own, so two
// stripes taking and writing their slots never take a line from each other.
TEST(LeasePool, TwoSlotsNeverShareALine) {
  detail::LeasePool<int, 4> pool;
  auto a = pool.take();
  auto b = pool.take();
  auto c = pool.take();
  ASSERT_TRUE(a.pooled() && b.pooled() && c.pooled());
  const int* values[3] = {&*a, &*b, &*c};
  for (int i = 0; i < 3; ++i) {
    for (int j = i + 1; j < 3; ++j) {
      EXPECT_FALSE(share_a_line(lines_of(values[i], sizeof(int)), lines_of(values[j], sizeof(int))))
          << "slots " << i << " and " << j;
    }
  }
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

#include "neat/storage/heap.hpp"

#include <gtest/gtest.h>

#include "neat/neat.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

TEST(HeapPool, SteadyStateLoopIsServedFromThePool) {
  auto pool = HeapPool::create({.max_cached_bytes = 64 << 20, .max_cached_buffers = 8});
  for (int frame = 0; frame < 100; ++frame) {
    auto t = NeatTensor::allocate_image(PixelFormat::NV12, 1920, 1080,
                                        {.zero_fill = false, .allocator = pool.get()});
    ASSERT_TRUE(t.ok());
    auto rgb = NeatTensor::allocate(DType::U8, {1080, 1920, 3},
                                    {.zero_fill = false, .allocator = pool.get()});
    ASSERT_TRUE(rgb.ok());
  }
  const HeapPoolStats s = pool->stats();
  EXPECT_EQ(s.misses, 2u) << "only the first frame allocates";
  EXPECT_EQ(s.hits, 198u);
  EXPECT_EQ(s.in_use_buffers, 0);
  EXPECT_EQ(s.cached_buffers, 2);
}

TEST(HeapPool, BuffersAre64ByteAlignedAndZeroFilledOnRequest) {
  auto pool = HeapPool::create();
  for (std::int64_t bytes : {1, 63, 64, 100, 4095, 4097, 300000}) {
    {
      auto s = pool->allocate({bytes, false});
      NEAT_ASSERT_OK(s);
      auto b = (*s)->map(MapMode::Write);
      NEAT_ASSERT_OK(b);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(*b) % 64, 0u);
      std::memset(*b, 0xab, static_cast<std::size_t>(bytes));
    }
    auto z = pool->allocate({bytes, true});  // recycled: must be zeroed again
    NEAT_ASSERT_OK(z);
    auto b = (*z)->map(MapMode::Read);
    for (std::int64_t i = 0; i < bytes; ++i)
      ASSERT_EQ(static_cast<int>((*b)[i]), 0) << bytes;
    (*z)->unmap(MapMode::Read);
  }
}

TEST(HeapPool, BoundsAreRespectedAndExcessIsEvicted) {
  auto pool = HeapPool::create({.max_cached_bytes = 1 << 20, .max_cached_buffers = 2});
  {
    std::vector<std::shared_ptr<Storage>> held;
    for (int i = 0; i < 5; ++i)
      held.push_back(*pool->allocate({4096, false}));
    EXPECT_EQ(pool->stats().in_use_buffers, 5);
  }
  auto s = pool->stats();
  EXPECT_EQ(s.cached_buffers, 2);
  EXPECT_EQ(s.evictions, 3u);
  pool->trim();
  EXPECT_EQ(pool->stats().cached_buffers, 0);
  EXPECT_EQ(pool->stats().cached_bytes, 0);
}

TEST(HeapPool, PrefillAllocatesTheWholeSetOnTheFirstMissOfASize) {
  auto pool = HeapPool::create(
      {.max_cached_bytes = 64 << 20, .max_cached_buffers = 8, .prefill_buffers = 5});
  constexpr std::int64_t kBytes = 3 << 20;  // frame-sized: its own mapping
  {
    std::vector<std::shared_ptr<Storage>> held;
    auto first = pool->allocate({kBytes, false});
    NEAT_ASSERT_OK(first);
    auto s = pool->stats();
    EXPECT_EQ(s.misses, 1u);
    EXPECT_EQ(s.prefilled, 4u);
    EXPECT_EQ(s.cached_buffers, 4);
    EXPECT_EQ(s.cached_bytes, 4 * kBytes);
    // The prefilled buffers are zeroed (their pages faulted in) and usable.
    auto next = pool->allocate({kBytes, false});
    NEAT_ASSERT_OK(next);
    auto b = (*next)->map(MapMode::Read);
    NEAT_ASSERT_OK(b);
    EXPECT_EQ(static_cast<int>((*b)[0]), 0);
    EXPECT_EQ(static_cast<int>((*b)[kBytes - 1]), 0);
    (*next)->unmap(MapMode::Read);
    held.push_back(std::move(*first));
    held.push_back(std::move(*next));
    for (int i = 0; i < 3; ++i)
      held.push_back(*pool->allocate({kBytes, false}));
    s = pool->stats();
    EXPECT_EQ(s.misses, 1u) << "five buffers in flight: all from the prefill";
    EXPECT_EQ(s.hits, 4u);
    // A sixth in flight is a plain miss: one buffer, no second prefill.
    held.push_back(*pool->allocate({kBytes, false}));
    s = pool->stats();
    EXPECT_EQ(s.misses, 2u);
    EXPECT_EQ(s.prefilled, 4u);
    EXPECT_EQ(s.in_use_buffers, 6);
  }
  EXPECT_EQ(pool->stats().cached_buffers, 6);
  // Another size gets its own prefill.
  NEAT_ASSERT_OK(pool->allocate({4096, false}));
  EXPECT_EQ(pool->stats().prefilled, 6u) << "bounded by max_cached_buffers (8)";
}

TEST(HeapPool, PrefillStaysWithinTheCacheBounds) {
  auto pool = HeapPool::create(
      {.max_cached_bytes = 2 << 20, .max_cached_buffers = 8, .prefill_buffers = 8});
  NEAT_ASSERT_OK(pool->allocate({1 << 20, false}));
  const auto s = pool->stats();
  EXPECT_EQ(s.prefilled, 2u) << "2 MiB of cache holds two more 1 MiB buffers";
  EXPECT_LE(s.cached_bytes, 2 << 20);
}

TEST(HeapPoolBadInput, NegativePrefillAndLimitsAreTreatedAsNone) {
  auto pool =
      HeapPool::create({.max_cached_bytes = -1, .max_cached_buffers = -2, .prefill_buffers = -5});
  NEAT_ASSERT_OK(pool->allocate({1 << 20, false}));
  const auto s = pool->stats();
  EXPECT_EQ(s.prefilled, 0u);
  EXPECT_EQ(s.cached_buffers, 0);
  EXPECT_EQ(s.evictions, 1u);
}

TEST(HeapPool, StorageOutlivesThePoolObject) {
  std::shared_ptr<Storage> s;
  {
    auto pool = HeapPool::create();
    s = *pool->allocate({128, true});
  }
  auto b = s->map(MapMode::Read);
  NEAT_ASSERT_OK(b);
  EXPECT_EQ(static_cast<int>((*b)[127]), 0);
  s.reset();  // returns the buffer to the (still alive) pool state; no leak under ASan
}

TEST(HeapPoolBadInput, NegativeAndHugeRequests) {
  auto pool = HeapPool::create();
  NEAT_EXPECT_ERROR(pool->allocate({-1, true}), ErrorCode::InvalidArgument, "negative");
  NEAT_EXPECT_ERROR(pool->allocate({kMaxHeapAllocation + 1, true}), ErrorCode::ResourceExhausted,
                    "refused");
  EXPECT_EQ(pool->stats().in_use_buffers, 0);
}

TEST(HeapPool, DefaultAllocatorIsTheDefaultPool) {
  EXPECT_EQ(&default_allocator(), static_cast<StorageAllocator*>(&default_heap_pool()));
}

}  // namespace
}  // namespace neat

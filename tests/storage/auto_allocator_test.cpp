// The DMA-BUF -> shm -> heap chain: fallbacks counted with their reasons,
// unavailable backends skipped from then on, NEAT_FORCE_HEAP.
#include "neat/storage/auto_allocator.hpp"

#include <gtest/gtest.h>

#include "neat/storage/dmabuf.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

TEST(AutoAllocator, FallsBackFromAMissingDmaHeapToShmAndCountsWhy) {
  AutoAllocator chain({.dma_heap = "/nonexistent/dma_heap/system"});
  for (int i = 0; i < 3; ++i) {
    auto t = NeatTensor::allocate(DType::U8, Dims{1000}, {.allocator = &chain});
    NEAT_ASSERT_OK(t);
    EXPECT_EQ(t->storage_kind(), StorageKind::Shm);
  }
  const AutoAllocatorStats s = chain.stats();
  EXPECT_EQ(s.shm, 3u);
  EXPECT_EQ(s.dmabuf, 0u);
  EXPECT_EQ(s.heap, 0u);
  ASSERT_EQ(s.fallbacks.size(), 1u);
  EXPECT_EQ(s.fallbacks[0].from, MemoryBackend::DmaBuf);
  EXPECT_EQ(s.fallbacks[0].count, 3u) << "every allocation that skipped DMA-BUF is counted";
  EXPECT_NE(s.fallbacks[0].reason.find("unavailable"), std::string::npos) << s.fallbacks[0].reason;
  EXPECT_NE(s.fallbacks[0].reason.find("/nonexistent/dma_heap/system"), std::string::npos);
}

TEST(AutoAllocator, ReachesTheHeapWhenNothingElseIsThere) {
  AutoAllocator chain({.dma_heap = "", .try_shm = false});
  auto t = NeatTensor::allocate(DType::F32, Dims{8, 8}, {.allocator = &chain});
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->storage_kind(), StorageKind::Heap);
  const AutoAllocatorStats s = chain.stats();
  EXPECT_EQ(s.heap, 1u);
  ASSERT_EQ(s.fallbacks.size(), 2u);
  EXPECT_EQ(s.fallbacks[1].from, MemoryBackend::Shm);
  EXPECT_NE(s.fallbacks[1].reason.find("disabled"), std::string::npos);
}

TEST(AutoAllocator, ForceHeapSkipsTheChainAndSaysSo) {
  AutoAllocator chain({.force_heap = true});
  auto t = NeatTensor::allocate(DType::U8, Dims{64}, {.allocator = &chain});
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->storage_kind(), StorageKind::Heap);
  EXPECT_EQ(chain.stats().forced_heap, 1u);
  EXPECT_TRUE(chain.stats().fallbacks.empty());
}

TEST(AutoAllocator, ConfigFromEnvironmentReadsNeatForceHeap) {
  ::setenv("NEAT_FORCE_HEAP", "1", 1);
  EXPECT_TRUE(auto_allocator_config_from_env().force_heap);
  ::setenv("NEAT_FORCE_HEAP", "0", 1);
  EXPECT_FALSE(auto_allocator_config_from_env().force_heap);
  ::unsetenv("NEAT_FORCE_HEAP");
  EXPECT_FALSE(auto_allocator_config_from_env().force_heap);
}

TEST(AutoAllocator, ProcessChainServesFromTheBestAvailableBackend) {
  auto t = NeatTensor::allocate(DType::U8, Dims{4096}, {.allocator = &auto_allocator()});
  NEAT_ASSERT_OK(t);
  const StorageKind expected = auto_allocator().config().force_heap ? StorageKind::Heap
                               : dma_heap_available()               ? StorageKind::DmaBuf
                                                                    : StorageKind::Shm;
  EXPECT_EQ(t->storage_kind(), expected);
}

}  // namespace
}  // namespace neat

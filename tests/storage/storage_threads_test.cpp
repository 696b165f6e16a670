// Storage backends under concurrency (also run under TSan): deferred
// GStreamer mappings, lazily mmapped DMA-BUF storage with sync brackets, and
// a GL context serving uploads and downloads from several threads.
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "neat/contract/mapping.hpp"
#include "neat/storage/dmabuf.hpp"
#include "neat/storage/gl.hpp"
#include "neat/storage/gstreamer.hpp"
#include "neat/storage/heap.hpp"
#include "neat/storage/shm.hpp"
#include "support/fakes.hpp"
#include "support/fds.hpp"

namespace neat {
namespace {

constexpr int kThreads = 8;

TEST(StorageThreads, GstreamerMappingsFromManyThreadsMapOnceAndBalance) {
  NEAT_ASSERT_OK(ensure_gstreamer());
  GstVideoInfo info;
  ASSERT_TRUE(gst_video_info_set_format(&info, GST_VIDEO_FORMAT_NV12, 64, 32));
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_memset(buffer, 0, 9, GST_VIDEO_INFO_SIZE(&info));
  auto t = wrap_gst_buffer(buffer, info);
  gst_buffer_unref(buffer);
  NEAT_ASSERT_OK(t);
  const auto before = gst_storage_stats();
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 2000; ++k) {
        auto view = t->plane(k % 2 == 0 ? PlaneRole::Y : PlaneRole::UV);
        auto m = view->map();
        if (!m.ok() || std::to_integer<int>(m->data()[5]) != 9) ++bad;
      }
    });
  }
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(bad.load(), 0);
  const auto after = gst_storage_stats();
  EXPECT_EQ(after.live_maps, before.live_maps);
  EXPECT_EQ(after.maps - before.maps, after.unmaps - before.unmaps);
}

TEST(StorageThreads, DmaBufFirstMapRacesMapOnceAndSyncsBalance) {
  const int fd = testing::make_memfd(1 << 16);
  ASSERT_GE(fd, 0);
  for (int round = 0; round < 20; ++round) {
    auto t = wrap_dmabuf(fd, DType::U8, Dims{1 << 16}, Dims{1});
    NEAT_ASSERT_OK(t);
    const auto before = dmabuf_stats();
    std::vector<std::thread> threads;
    std::atomic<int> bad{0};
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&] {
        for (int k = 0; k < 50; ++k) {
          auto m = t->map();
          if (!m.ok()) ++bad;
        }
      });
    }
    for (auto& th : threads)
      th.join();
    EXPECT_EQ(bad.load(), 0);
    const auto after = dmabuf_stats();
    EXPECT_EQ(after.live_cpu_mappings, before.live_cpu_mappings + 1) << "one mmap per storage";
    EXPECT_EQ(after.open_maps, before.open_maps);
    EXPECT_EQ(after.sync_starts - before.sync_starts, after.sync_ends - before.sync_ends);
  }
  ::close(fd);
}

// Pools shared by threads: every buffer handed out is owned by one thread at a
// time (each writes its own mark over the whole buffer and reads it back), and
// the pool's books balance afterwards.
template <class Pool>
void hammer_pool(Pool& pool, std::int64_t bytes) {
  constexpr int kThreads = 4, kRounds = 500;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const auto mark = static_cast<std::byte>(t + 1);
      for (int i = 0; i < kRounds; ++i) {
        auto s = pool.allocate({bytes, false});
        if (!s.ok()) {
          bad.fetch_add(1);
          continue;
        }
        auto p = (*s)->map(MapMode::Write);
        if (!p.ok()) {
          bad.fetch_add(1);
          continue;
        }
        std::memset(*p, static_cast<int>(mark), static_cast<std::size_t>(bytes));
        std::this_thread::yield();
        for (std::int64_t k = 0; k < bytes; k += 512)
          if ((*p)[k] != mark) bad.fetch_add(1);
        (*s)->unmap(MapMode::Write);
      }
    });
  }
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(StorageThreads, HeapAndShmPoolsHandEachBufferToOneThreadAtATime) {
  auto heap = HeapPool::create({.max_cached_buffers = 3, .prefill_buffers = 2});
  hammer_pool(*heap, 64 * 1024);
  EXPECT_EQ(heap->stats().in_use_buffers, 0);
  EXPECT_EQ(heap->stats().hits + heap->stats().misses, 2000u);
  const int fds = testing::open_fd_count();
  auto shm = ShmPool::create({.max_cached_buffers = 3});
  hammer_pool(*shm, 64 * 1024);
  const auto s = shm->stats();
  EXPECT_EQ(s.hits + s.misses, 2000u);
  EXPECT_EQ(s.recycled + s.not_recycled, 2000u);
  EXPECT_LE(s.cached_buffers, 3);
  shm->trim();
  EXPECT_EQ(testing::open_fd_count(), fds);
}

TEST(StorageThreads, OneGlContextServesTransfersFromManyThreads) {
  auto ctx = GlContext::for_device(0);
  if (!ctx.ok()) GTEST_SKIP() << ctx.error().to_string();
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto host = NeatTensor::allocate(DType::U8, Dims{16, 16, 4});
      auto w = std::move(*host).make_writable();
      {
        auto m = w->map(MapMode::Write);
        std::memset(m->mutable_data(), i + 1, 16 * 16 * 4);
      }
      for (int k = 0; k < 25; ++k) {
        auto dev = upload(*w, Device{DeviceType::Gl, 0});
        if (!dev.ok()) {
          ++bad;
          continue;
        }
        auto back = dev->cpu();
        if (!back.ok() || std::to_integer<int>(back->map()->data()[100]) != i + 1) ++bad;
      }
    });
  }
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace neat

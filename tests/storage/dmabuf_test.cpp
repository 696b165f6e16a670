// DMA-BUF storage. These machines have no /dev/dma_heap, /dev/udmabuf or
// /dev/dri, so the fd plumbing is tested with memfds (whose sync ioctl
// answers ENOTTY, the documented fallback) and the tests that need a real
// heap skip with the reason.
#include "neat/storage/dmabuf.hpp"

#include <drm_fourcc.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "neat/contract/mapping.hpp"
#include "neat/storage/shm.hpp"
#include "support/fakes.hpp"
#include "support/fds.hpp"

namespace neat {
namespace {

using testing::make_memfd;
using testing::open_fd_count;

struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

TEST(DmaBufFourcc, PixelFormatsRoundTripAndPackedFormatsUseDrmByteOrder) {
  for (PixelFormat f : {PixelFormat::GRAY8, PixelFormat::RGB, PixelFormat::BGR, PixelFormat::RGBA,
                        PixelFormat::BGRA, PixelFormat::NV12, PixelFormat::NV21, PixelFormat::I420,
                        PixelFormat::YV12}) {
    auto cc = drm_fourcc(f);
    NEAT_ASSERT_OK(cc);
    auto back = pixel_format_from_drm_fourcc(*cc);
    NEAT_ASSERT_OK(back);
    EXPECT_EQ(*back, f);
  }
  // DRM names packed formats by the little-endian word: bytes R,G,B are BGR888.
  EXPECT_EQ(*drm_fourcc(PixelFormat::RGB), DRM_FORMAT_BGR888);
  EXPECT_EQ(*drm_fourcc(PixelFormat::BGR), DRM_FORMAT_RGB888);
  EXPECT_EQ(*drm_fourcc(PixelFormat::RGBA), DRM_FORMAT_ABGR8888);
  EXPECT_EQ(*drm_fourcc(PixelFormat::I420), DRM_FORMAT_YUV420);
  EXPECT_EQ(*drm_fourcc(PixelFormat::YV12), DRM_FORMAT_YVU420);
  EXPECT_EQ(fourcc_to_string(DRM_FORMAT_NV12), "NV12");
  EXPECT_EQ(fourcc_to_string(0x01020304u), "0x01020304");
  NEAT_EXPECT_ERROR(pixel_format_from_drm_fourcc(DRM_FORMAT_YUYV), ErrorCode::Unimplemented,
                    "YUYV");
  NEAT_EXPECT_ERROR(drm_fourcc(PixelFormat::None), ErrorCode::InvalidArgument, "no DRM fourcc");
}

// One fd, planes at offsets: the NV12 frame maps the memfd's bytes.
TEST(DmaBuf, ImportsOneFdNv12FromAMemfdAndRecordsEnottyOnce) {
  const std::int64_t w = 64, h = 32, stride = 128, uv_offset = 128 * 32 + 512;
  Fd fd(make_memfd(uv_offset + stride * 16));
  ASSERT_GE(fd.fd, 0);
  auto* raw = static_cast<std::uint8_t*>(
      ::mmap(nullptr, uv_offset + stride * 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd.fd, 0));
  ASSERT_NE(raw, MAP_FAILED);
  raw[0] = 11;
  raw[uv_offset + 1] = 22;
  DmaBufImage image{DRM_FORMAT_NV12,
                    kDrmFormatModLinear,
                    w,
                    h,
                    2,
                    {DmaBufPlane{fd.fd, 0, stride}, DmaBufPlane{fd.fd, uv_offset, stride}}};
  const DmaBufStats before = dmabuf_stats();
  auto t = wrap_dmabuf_image(image);
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->storage_kind(), StorageKind::DmaBuf);
  EXPECT_EQ(t->pixel_format(), PixelFormat::NV12);
  EXPECT_EQ(t->storage_count(), 1);
  EXPECT_EQ(t->plane_layout(1).byte_offset, uv_offset);
  EXPECT_EQ(dmabuf_stats().live_cpu_mappings, before.live_cpu_mappings) << "mmap is deferred";
  {
    auto m = t->map();
    NEAT_ASSERT_OK(m);
    EXPECT_EQ(std::to_integer<int>((*m->plane_data(PlaneRole::Y))[0]), 11);
    EXPECT_EQ(std::to_integer<int>((*m->plane_data(PlaneRole::UV))[1]), 22);
    auto m2 = t->map();
    NEAT_ASSERT_OK(m2);
    EXPECT_EQ(dmabuf_stats().open_maps, before.open_maps + 2);
  }
  const DmaBufStats after = dmabuf_stats();
  EXPECT_EQ(after.open_maps, before.open_maps);
  EXPECT_EQ(after.sync_unsupported, before.sync_unsupported + 1) << "ENOTTY recorded once";
  EXPECT_EQ(after.sync_starts - before.sync_starts, after.sync_ends - before.sync_ends);
  auto* storage = dynamic_cast<DmaBufStorage*>(t->storage().get());
  ASSERT_NE(storage, nullptr);
  EXPECT_FALSE(storage->sync_supported());
  ::munmap(raw, uv_offset + stride * 16);
}

TEST(DmaBuf, RequireSyncTurnsEnottyIntoAnError) {
  Fd fd(make_memfd(4096));
  auto t = wrap_dmabuf(fd.fd, DType::U8, Dims{4096}, Dims{1}, 0, {.require_sync = true});
  NEAT_ASSERT_OK(t);
  NEAT_EXPECT_ERROR(t->map(), ErrorCode::Unimplemented, "not a dma-buf");
  NEAT_EXPECT_ERROR(DmaBufSync::begin(fd.fd, MapMode::Read), ErrorCode::Unimplemented, "ENOTTY");
  NEAT_EXPECT_ERROR(DmaBufSync::begin(-1, MapMode::Write), ErrorCode::InvalidArgument,
                    "Bad file descriptor");
}

// One fd per plane; fds that name the same buffer share one storage.
TEST(DmaBuf, ImportsOneFdPerPlaneAndGroupsFdsOfOneBuffer) {
  Fd y(make_memfd(16 * 8)), u(make_memfd(8 * 4 * 2));
  Fd v(::dup(u.fd));  // V lives in the same buffer as U, behind another fd
  DmaBufImage image{DRM_FORMAT_YUV420,
                    kDrmFormatModLinear,
                    16,
                    8,
                    3,
                    {DmaBufPlane{y.fd, 0, 16}, DmaBufPlane{u.fd, 0, 8}, DmaBufPlane{v.fd, 32, 8}}};
  auto t = wrap_dmabuf_image(image);
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->storage_count(), 2);
  EXPECT_EQ(t->plane_layout(2).storage, t->plane_layout(1).storage);
  EXPECT_EQ(t->plane_layout(2).role, PlaneRole::V);
  NEAT_ASSERT_OK(t->map());
}

TEST(DmaBuf, IdentityIsStableAcrossReimportsWhileFdNumbersAreNot) {
  Fd fd(make_memfd(4096));
  auto a = wrap_dmabuf(fd.fd, DType::U8, Dims{4096}, Dims{1});
  Fd again(::dup(fd.fd));
  auto b = wrap_dmabuf(again.fd, DType::U8, Dims{4096}, Dims{1});
  NEAT_ASSERT_OK(a);
  NEAT_ASSERT_OK(b);
  EXPECT_NE(a->storage()->native_fd(), b->storage()->native_fd());
  EXPECT_EQ(a->identity().id(), b->identity().id());
  Fd other(make_memfd(4096));
  auto c = wrap_dmabuf(other.fd, DType::U8, Dims{4096}, Dims{1});
  NEAT_ASSERT_OK(c);
  EXPECT_NE(c->identity().id(), a->identity().id());
}

TEST(DmaBuf, ExportDescribesFdBackedFramesAndReimportsToTheSameBytes) {
  auto t = NeatTensor::allocate_image(PixelFormat::NV12, 30, 20,
                                      {.row_alignment = 64, .allocator = &shm_allocator()});
  NEAT_ASSERT_OK(t);
  auto e = export_dmabuf_image(*t);
  NEAT_ASSERT_OK(e);
  EXPECT_EQ(e->image.fourcc, DRM_FORMAT_NV12);
  EXPECT_EQ(e->image.plane_count, 2);
  EXPECT_EQ(e->image.planes[1].offset, t->plane_layout(1).byte_offset);
  EXPECT_EQ(e->image.planes[0].stride, 64);
  EXPECT_EQ(e->image.planes[0].fd, e->fds[0].get());
  auto back = wrap_dmabuf_image(e->image);
  NEAT_ASSERT_OK(back);
  EXPECT_EQ(back->identity().id(), t->identity().id());
  auto m1 = t->map();
  auto m2 = back->map();
  EXPECT_NE(static_cast<const void*>(*m1->plane_data(PlaneRole::UV)),
            static_cast<const void*>(*m2->plane_data(PlaneRole::UV)));  // two mappings ...
  auto rgb = NeatTensor::allocate_image(PixelFormat::RGB, 5, 3, {.allocator = &shm_allocator()});
  auto er = export_dmabuf_image(*rgb);
  NEAT_ASSERT_OK(er);
  EXPECT_EQ(er->image.fourcc, DRM_FORMAT_BGR888);
  EXPECT_EQ(er->image.planes[0].stride, 15);

  auto heap = NeatTensor::allocate_image(PixelFormat::NV12, 4, 4);
  NEAT_EXPECT_ERROR(export_dmabuf_image(*heap), ErrorCode::FailedPrecondition, "auto_allocator()");
  auto dense = NeatTensor::allocate(DType::U8, Dims{4});
  NEAT_EXPECT_ERROR(export_dmabuf_image(*dense), ErrorCode::InvalidArgument, "not an image");
  // RGB pixels 4 bytes apart (channels sliced out of RGBA): no DRM format describes them.
  auto rgba = NeatTensor::allocate(DType::U8, Dims{3, 5, 4}, {.allocator = &shm_allocator()});
  auto rgb_view = rgba->narrow(2, 0, 3)->as_image(ImageSpec{PixelFormat::RGB, 5, 3, Layout::HWC});
  NEAT_ASSERT_OK(rgb_view);
  NEAT_EXPECT_ERROR(export_dmabuf_image(*rgb_view), ErrorCode::FailedPrecondition, "contiguous()");
}

TEST(DmaBuf, BadDescriptionsAreRefusedBeforeAnythingIsMapped) {
  Fd fd(make_memfd(1000));
  const DmaBufImage good{DRM_FORMAT_NV12,
                         kDrmFormatModLinear,
                         16,
                         16,
                         2,
                         {DmaBufPlane{fd.fd, 0, 16}, DmaBufPlane{fd.fd, 256, 16}}};
  NEAT_ASSERT_OK(wrap_dmabuf_image(good));
  DmaBufImage d = good;
  d.modifier = 0x0100000000000001ULL;  // I915_FORMAT_MOD_X_TILED
  NEAT_EXPECT_ERROR(wrap_dmabuf_image(d), ErrorCode::Unimplemented, "linear");
  d = good;
  d.plane_count = 1;
  NEAT_EXPECT_ERROR(wrap_dmabuf_image(d), ErrorCode::InvalidArgument, "1 planes given");
  d = good;
  d.planes[1].offset = 900;  // UV plane runs past the 1000-byte buffer
  NEAT_EXPECT_ERROR(wrap_dmabuf_image(d), ErrorCode::OutOfRange, "");
  d = good;
  d.planes[0].stride = 0;
  NEAT_EXPECT_ERROR(wrap_dmabuf_image(d), ErrorCode::InvalidArgument, "stride > 0");
  d = good;
  d.planes[1].fd = -1;
  NEAT_EXPECT_ERROR(wrap_dmabuf_image(d), ErrorCode::InvalidArgument, "plane 1");
  d = good;
  d.fourcc = DRM_FORMAT_YUYV;
  NEAT_EXPECT_ERROR(wrap_dmabuf_image(d), ErrorCode::Unimplemented, "YUYV");
  d = good;
  d.width = 0;
  NEAT_EXPECT_ERROR(wrap_dmabuf_image(d), ErrorCode::InvalidArgument, "empty frame");
  Fd empty(make_memfd(0));
  NEAT_EXPECT_ERROR(DmaBufStorage::import(empty.fd), ErrorCode::InvalidArgument, "empty");
  NEAT_EXPECT_ERROR(DmaBufStorage::allocate(4096, "/nonexistent/dma_heap/system"),
                    ErrorCode::Unavailable, "No such file");
  NEAT_EXPECT_ERROR(DmaBufStorage::allocate(0), ErrorCode::InvalidArgument, "positive");
}

TEST(DmaBuf, TenThousandImportMapCyclesLeaveFdsAndSyncsBalanced) {
  Fd fd(make_memfd(64 * 64 * 3 / 2));
  const DmaBufImage image{DRM_FORMAT_NV12,
                          kDrmFormatModLinear,
                          64,
                          64,
                          2,
                          {DmaBufPlane{fd.fd, 0, 64}, DmaBufPlane{fd.fd, 64 * 64, 64}}};
  const int fds_before = open_fd_count();
  const DmaBufStats before = dmabuf_stats();
  for (int i = 0; i < 10000; ++i) {
    auto t = wrap_dmabuf_image(image);
    ASSERT_TRUE(t.ok());
    auto m = t->map();
    ASSERT_TRUE(m.ok());
    auto e = export_dmabuf_image(*t);
    ASSERT_TRUE(e.ok());
  }
  const DmaBufStats after = dmabuf_stats();
  EXPECT_EQ(open_fd_count(), fds_before);
  EXPECT_EQ(after.live_storages, before.live_storages);
  EXPECT_EQ(after.live_cpu_mappings, before.live_cpu_mappings);
  EXPECT_EQ(after.open_maps, before.open_maps);
  EXPECT_EQ(after.sync_starts - before.sync_starts, after.sync_ends - before.sync_ends);
}

// ---- real DMA heap (skipped where there is none) -----------------------------

TEST(DmaBufHeap, AllocatesMapsAndSyncsOnARealHeap) {
  if (!dma_heap_available()) {
    GTEST_SKIP() << "no usable /dev/dma_heap/system on this machine (CI VMs have none); the fd "
                    "plumbing is covered by the memfd tests above";
  }
  const DmaBufStats before = dmabuf_stats();
  auto t =
      NeatTensor::allocate_image(PixelFormat::NV12, 640, 480, {.allocator = &dmabuf_allocator()});
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->storage_kind(), StorageKind::DmaBuf);
  auto w = std::move(*t).make_writable();
  NEAT_ASSERT_OK(w);
  {
    auto m = w->map(MapMode::Write);
    NEAT_ASSERT_OK(m);
    std::memset(*m->mutable_plane_data(PlaneRole::Y), 1, 640);
  }
  const DmaBufStats after = dmabuf_stats();
  EXPECT_EQ(after.sync_starts - before.sync_starts, 1u);
  EXPECT_EQ(after.sync_ends - before.sync_ends, 1u);
  EXPECT_EQ(after.sync_unsupported, before.sync_unsupported);
  auto sync = DmaBufSync::begin(w->storage()->native_fd(), MapMode::ReadWrite);
  NEAT_ASSERT_OK(sync);
}

}  // namespace
}  // namespace neat

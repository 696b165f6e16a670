// Factories and the bad inputs each must reject with a typed, specific error.
#include <gtest/gtest.h>

#include <fstream>

#include "neat/neat.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

using testing::FakeStorage;

TEST(Factories, AllocateDenseIsRowMajorZeroFilledAndOnHeap) {
  auto t = NeatTensor::allocate(DType::F32, {2, 3, 4});
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->rank(), 3);
  EXPECT_EQ(t->shape(), (Dims{2, 3, 4}));
  EXPECT_EQ(t->strides(), (Dims{48, 16, 4}));
  EXPECT_TRUE(t->is_contiguous());
  EXPECT_EQ(t->nbytes(), 96);
  EXPECT_EQ(t->device(), kCpu);
  EXPECT_EQ(t->storage_kind(), StorageKind::Heap);
  EXPECT_FALSE(t->is_writable()) << "immutable by default";
  auto m = t->map();
  NEAT_ASSERT_OK(m);
  auto p = m->data_ptr<const float>();
  NEAT_ASSERT_OK(p);
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ((*p)[i], 0.0f);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(*p) % 64, 0u) << "64-byte aligned";
}

TEST(Factories, ZeroSizeDimensionsAreValidAndEmpty) {
  auto t = NeatTensor::allocate(DType::U8, {3, 0, 5});
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->numel(), 0);
  EXPECT_EQ(t->nbytes(), 0);
  EXPECT_TRUE(t->is_contiguous());
  auto s = FakeStorage::make(0);
  NEAT_ASSERT_OK(NeatTensor::from_storage(s, DType::F64, {0, 4}, {32, 8}, 0));
  NEAT_ASSERT_OK(NeatTensor::allocate_image(PixelFormat::NV12, 0, 0));
}

TEST(Factories, RankZeroIsAScalar) {
  auto t = NeatTensor::allocate(DType::I64, {});
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->numel(), 1);
  EXPECT_EQ(t->nbytes(), 8);
}

TEST(FactoriesBadInput, NegativeExtent) {
  NEAT_EXPECT_ERROR(NeatTensor::allocate(DType::U8, {4, -2}), ErrorCode::InvalidArgument,
                    "shape[1] = -2 is negative");
  auto s = FakeStorage::make(64);
  NEAT_EXPECT_ERROR(NeatTensor::from_storage(s, DType::U8, {-1}, {1}, 0),
                    ErrorCode::InvalidArgument, "negative");
}

TEST(FactoriesBadInput, RankAboveMaximum) {
  std::vector<std::int64_t> shape(kMaxRank + 1, 1);
  NEAT_EXPECT_ERROR(NeatTensor::allocate(DType::U8, shape), ErrorCode::InvalidArgument,
                    "rank 9 is above the maximum rank 8");
  auto s = FakeStorage::make(64);
  NEAT_EXPECT_ERROR(NeatTensor::from_storage(s, DType::U8, shape, shape, 0),
                    ErrorCode::InvalidArgument, "above the maximum rank");
}

TEST(FactoriesBadInput, StrideCountMismatch) {
  auto s = FakeStorage::make(64);
  NEAT_EXPECT_ERROR(NeatTensor::from_storage(s, DType::U8, {2, 2}, {2}, 0),
                    ErrorCode::InvalidArgument, "1 strides for rank 2");
}

TEST(FactoriesBadInput, StrideProductOverflowsInt64) {
  auto s = FakeStorage::make(64);
  NEAT_EXPECT_ERROR(NeatTensor::from_storage(s, DType::U8, {3, 2}, {std::int64_t{1} << 62, 1}, 0),
                    ErrorCode::OutOfRange, "overflows int64");
  NEAT_EXPECT_ERROR(
      NeatTensor::allocate(DType::F64, {std::int64_t{1} << 40, std::int64_t{1} << 40}),
      ErrorCode::OutOfRange, "2^63");
}

TEST(FactoriesBadInput, OffsetPlusExtentOverflowsInt64) {
  auto s = FakeStorage::make(64);
  NEAT_EXPECT_ERROR(NeatTensor::from_storage(s, DType::U32, {2}, {4},
                                             std::numeric_limits<std::int64_t>::max() - 2),
                    ErrorCode::OutOfRange, "overflows int64");
}

TEST(FactoriesBadInput, BytesBeyondTheStorage) {
  auto s = FakeStorage::make(100);
  NEAT_EXPECT_ERROR(NeatTensor::from_storage(s, DType::F32, {5, 5}, {20, 4}, 4),
                    ErrorCode::OutOfRange, "addresses bytes up to 104 but the storage holds 100");
  NEAT_ASSERT_OK(NeatTensor::from_storage(s, DType::F32, {5, 5}, {20, 4}, 0));
}

TEST(FactoriesBadInput, NegativeStridesReachingBeforeTheBase) {
  auto s = FakeStorage::make(100);
  // A flipped view starting at the last row is fine ...
  NEAT_ASSERT_OK(NeatTensor::from_storage(s, DType::U8, {10, 10}, {-10, 1}, 90));
  // ... one row too far up is not.
  NEAT_EXPECT_ERROR(NeatTensor::from_storage(s, DType::U8, {10, 10}, {-10, 1}, 80),
                    ErrorCode::OutOfRange, "before the start of the storage");
}

TEST(FactoriesBadInput, EmptyTensorWithOffsetOutsideStorage) {
  auto s = FakeStorage::make(10);
  NEAT_EXPECT_ERROR(NeatTensor::from_storage(s, DType::U8, {0}, {1}, 11), ErrorCode::OutOfRange,
                    "outside the storage");
}

TEST(FactoriesBadInput, NullStorage) {
  NEAT_EXPECT_ERROR(NeatTensor::from_storage(nullptr, DType::U8, {1}, {1}, 0),
                    ErrorCode::InvalidArgument, "storage is null");
}

TEST(FactoriesBadInput, HugeAllocationIsResourceExhaustedNotAnAbort) {
  NEAT_EXPECT_ERROR(NeatTensor::allocate(DType::U8, {std::int64_t{1} << 50}),
                    ErrorCode::ResourceExhausted, "refused");
  // Past the limit check but far beyond any machine's memory: the system refuses
  // it, unless the kernel is set to overcommit without limit.
  std::ifstream overcommit("/proc/sys/vm/overcommit_memory");
  int mode = 0;
  overcommit >> mode;
  if (mode == 1) GTEST_SKIP() << "vm.overcommit_memory=1: the kernel grants any mapping";
  NEAT_EXPECT_ERROR(NeatTensor::allocate(DType::U8, {std::int64_t{1} << 45}),
                    ErrorCode::ResourceExhausted, "out of memory");
}

TEST(Factories, UndefinedTensorOperationsFailCleanly) {
  NeatTensor t;
  EXPECT_FALSE(t.defined());
  NEAT_EXPECT_ERROR(t.map(), ErrorCode::FailedPrecondition, "undefined");
  NEAT_EXPECT_ERROR(t.clone(), ErrorCode::FailedPrecondition, "undefined");
  NEAT_EXPECT_ERROR(t.contiguous(), ErrorCode::FailedPrecondition, "undefined");
  NEAT_EXPECT_ERROR(t.slice(0, 0, 1), ErrorCode::FailedPrecondition, "undefined");
  NEAT_EXPECT_ERROR(t.crop(0, 0, 1, 1), ErrorCode::FailedPrecondition, "undefined");
  NEAT_EXPECT_ERROR(t.plane(PlaneRole::Y), ErrorCode::FailedPrecondition, "undefined");
  NEAT_EXPECT_ERROR(std::move(t).make_writable(), ErrorCode::FailedPrecondition, "undefined");
  EXPECT_EQ(t.to_string(), "NeatTensor(undefined)");
}

TEST(Factories, IdentityIsStableSharedByViewsAndTracksLiveness) {
  BufferIdentity id;
  {
    auto t = NeatTensor::allocate(DType::U8, {4, 4});
    NEAT_ASSERT_OK(t);
    id = t->identity();
    EXPECT_NE(id.id(), 0u);
    EXPECT_TRUE(id.alive());
    auto v = t->slice(0, 1, 3);
    NEAT_ASSERT_OK(v);
    EXPECT_EQ(v->identity(), id);
    auto other = NeatTensor::allocate(DType::U8, {4, 4});
    EXPECT_NE(other->identity().id(), id.id());
  }
  EXPECT_FALSE(id.alive());
}

TEST(Factories, DescriptionAndToString) {
  auto t = NeatTensor::allocate_image(PixelFormat::RGB, 4, 2);
  NEAT_ASSERT_OK(t);
  const TensorDescription d = t->description();
  EXPECT_EQ(d.format, PixelFormat::RGB);
  EXPECT_EQ(d.rank, 3);
  EXPECT_EQ(d.to_string(), "u8 [2, 4, 3] RGB HWC cpu:0 heap");
  EXPECT_NE(t->to_string().find("strides [12, 3, 1]"), std::string::npos) << t->to_string();
}

}  // namespace
}  // namespace neat

namespace neat {
namespace {

TEST(FactoriesBadInput, AllocateImageRejectsMalformedRequests) {
  NEAT_EXPECT_ERROR(NeatTensor::allocate_image(PixelFormat::None, 4, 4), ErrorCode::InvalidArgument,
                    "a pixel format is required");
  NEAT_EXPECT_ERROR(NeatTensor::allocate_image(PixelFormat::RGB, -4, 4), ErrorCode::InvalidArgument,
                    "width and height must be >= 0");
  NEAT_EXPECT_ERROR(NeatTensor::allocate_image(PixelFormat::RGB, 4, 4, {.layout = Layout::HW}),
                    ErrorCode::InvalidArgument, "layout HW needs a single-channel format");
  NEAT_EXPECT_ERROR(NeatTensor::allocate_image(PixelFormat::RGB, 4, 4, {.layout = Layout::Planar}),
                    ErrorCode::InvalidArgument, "layout Planar is for planar formats");
  NEAT_EXPECT_ERROR(NeatTensor::allocate_image(PixelFormat::NV12, 4, 4, {.layout = Layout::CHW}),
                    ErrorCode::InvalidArgument, "planar formats have layout HW, not CHW");
  NEAT_EXPECT_ERROR(
      NeatTensor::allocate_image(PixelFormat::RGBA, std::int64_t{1} << 40, std::int64_t{1} << 40),
      ErrorCode::OutOfRange, "more than 2^63 bytes");
  NEAT_EXPECT_ERROR(NeatTensor::allocate_image(PixelFormat::I420, std::int64_t{1} << 62, 4),
                    ErrorCode::OutOfRange, "more than 2^63 bytes");
}

TEST(Factories, AllocateImageLayouts) {
  auto gray = NeatTensor::allocate_image(PixelFormat::GRAY8, 5, 3, {.layout = Layout::HW});
  NEAT_ASSERT_OK(gray);
  EXPECT_EQ(gray->shape(), (Dims{3, 5}));
  auto gray_hwc = NeatTensor::allocate_image(PixelFormat::GRAY8, 5, 3);
  EXPECT_EQ(gray_hwc->shape(), (Dims{3, 5, 1}));
  auto bgra = NeatTensor::allocate_image(PixelFormat::BGRA, 5, 3, {.row_alignment = 32});
  EXPECT_EQ(bgra->strides(), (Dims{32, 4, 1}));
  auto yv12 = NeatTensor::allocate_image(PixelFormat::YV12, 6, 4);
  NEAT_ASSERT_OK(yv12);
  EXPECT_EQ(yv12->plane_layout(1).role, PlaneRole::V);
  auto nv21 = NeatTensor::allocate_image(PixelFormat::NV21, 6, 4);
  EXPECT_EQ(nv21->plane_layout(1).role, PlaneRole::VU);
}

TEST(FactoriesBadInput, EventSinkAndPoolConfig) {
  auto reg = add_event_sink(nullptr);  // nothing registered, nothing to undo
  reg.reset();
  auto pool = HeapPool::create({.max_cached_bytes = -5, .max_cached_buffers = -1});
  auto s = pool->allocate({64, true});
  NEAT_ASSERT_OK(s);
  s->reset();
  EXPECT_EQ(pool->stats().cached_buffers, 0) << "negative bounds clamp to 0: nothing cached";
  EXPECT_EQ(pool->stats().evictions, 1u);
}

}  // namespace
}  // namespace neat

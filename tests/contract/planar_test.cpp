// Planar frames (NV12, NV21, I420, YV12): composition, validation, crops, planes.
#include <gtest/gtest.h>

#include <cstring>

#include "neat/neat.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

using testing::FakeStorage;

TEST(Planar, AllocateNv12OddSizeRoundsChromaUp) {
  auto f = NeatTensor::allocate_image(PixelFormat::NV12, 1919, 1079);
  NEAT_ASSERT_OK(f);
  EXPECT_TRUE(f->is_composite());
  EXPECT_EQ(f->plane_count(), 2);
  EXPECT_EQ(f->shape(), (Dims{1079, 1919}));
  EXPECT_EQ(f->layout(), Layout::HW);
  EXPECT_EQ(f->byte_offset(), 0);
  const PlaneLayout& uv = f->plane_layout(1);
  EXPECT_EQ(uv.role, PlaneRole::UV);
  EXPECT_EQ(uv.rows, 540);
  EXPECT_EQ(uv.cols, 960);
  EXPECT_EQ(uv.samples, 2);
  EXPECT_EQ(uv.byte_offset, 1919 * 1079);
  EXPECT_TRUE(f->is_contiguous());
  EXPECT_EQ(f->nbytes(), 1919 * 1079 + 540 * 960 * 2);
}

TEST(Planar, RowAlignmentPadsStrides) {
  auto f = NeatTensor::allocate_image(PixelFormat::I420, 1918, 1080, {.row_alignment = 64});
  NEAT_ASSERT_OK(f);
  EXPECT_EQ(f->plane_layout(0).row_stride, 1920);
  EXPECT_EQ(f->plane_layout(1).row_stride, 960);
  EXPECT_EQ(f->plane_layout(1).cols, 959);
  EXPECT_EQ(f->plane_layout(1).byte_offset % 64, 0);
  EXPECT_FALSE(f->is_contiguous()) << "padded rows are not packed";
  NEAT_EXPECT_ERROR(NeatTensor::allocate_image(PixelFormat::I420, 4, 4, {.row_alignment = 0}),
                    ErrorCode::InvalidArgument, "row_alignment 0");
}

TEST(Planar, PlanesInSeparateStorages) {
  auto y = FakeStorage::make(64 * 48);
  auto uv = FakeStorage::make(64 * 24);
  PlaneSpec planes[] = {{PlaneRole::Y, y, 64, 0}, {PlaneRole::UV, uv, 64, 0}};
  auto f = NeatTensor::compose_planes(PixelFormat::NV12, 64, 48, planes);
  NEAT_ASSERT_OK(f);
  EXPECT_EQ(f->storage_count(), 2);
  EXPECT_FALSE(f->is_contiguous());
  auto yp = f->plane(PlaneRole::Y);
  NEAT_ASSERT_OK(yp);
  EXPECT_EQ(yp->shape(), (Dims{48, 64}));
  EXPECT_EQ(yp->pixel_format(), PixelFormat::GRAY8);
  EXPECT_EQ(yp->storage().get(), y.get());
  auto c = f->plane(PlaneRole::UV);
  NEAT_ASSERT_OK(c);
  EXPECT_EQ(c->shape(), (Dims{24, 32, 2}));
  EXPECT_EQ(c->strides(), (Dims{64, 2, 1}));
  NEAT_EXPECT_ERROR(f->plane(PlaneRole::U), ErrorCode::InvalidArgument, "this frame has Y, UV");
}

TEST(PlanarBadInput, WrongPlaneCount) {
  auto s = FakeStorage::make(1000);
  PlaneSpec one[] = {{PlaneRole::Y, s, 16, 0}};
  NEAT_EXPECT_ERROR(NeatTensor::compose_planes(PixelFormat::NV12, 16, 16, one),
                    ErrorCode::InvalidArgument, "1 planes given, NV12 has 2");
  PlaneSpec two[] = {{PlaneRole::Y, s, 16, 0}, {PlaneRole::U, s, 8, 256}};
  NEAT_EXPECT_ERROR(NeatTensor::compose_planes(PixelFormat::I420, 16, 16, two),
                    ErrorCode::InvalidArgument, "2 planes given, I420 has 3");
}

TEST(PlanarBadInput, WrongRoleOrder) {
  auto s = FakeStorage::make(1000);
  PlaneSpec p[] = {{PlaneRole::Y, s, 16, 0}, {PlaneRole::V, s, 8, 256}, {PlaneRole::U, s, 8, 320}};
  NEAT_EXPECT_ERROR(NeatTensor::compose_planes(PixelFormat::I420, 16, 16, p),
                    ErrorCode::InvalidArgument, "plane 1 has role V, expected U (order Y, U, V)");
  PlaneSpec q[] = {{PlaneRole::UV, s, 16, 0}, {PlaneRole::Y, s, 16, 256}};
  NEAT_EXPECT_ERROR(NeatTensor::compose_planes(PixelFormat::NV12, 16, 16, q),
                    ErrorCode::InvalidArgument, "plane 0 has role UV, expected Y");
}

TEST(PlanarBadInput, PlaneBeyondItsStorage) {
  auto s = FakeStorage::make(16 * 16 + 16 * 8 - 1);
  PlaneSpec p[] = {{PlaneRole::Y, s, 16, 0}, {PlaneRole::UV, s, 16, 256}};
  NEAT_EXPECT_ERROR(NeatTensor::compose_planes(PixelFormat::NV12, 16, 16, p), ErrorCode::OutOfRange,
                    "NV12 plane 1 (UV)");
}

TEST(PlanarBadInput, RowStrideBelowWidthTimesBytesPerPixel) {
  auto s = FakeStorage::make(4096);
  PlaneSpec p[] = {{PlaneRole::Y, s, 15, 0}, {PlaneRole::UV, s, 16, 512}};
  NEAT_EXPECT_ERROR(NeatTensor::compose_planes(PixelFormat::NV12, 16, 16, p),
                    ErrorCode::InvalidArgument,
                    "row stride 15 is below width x bytes per pixel = 16 x 1");
  PlaneSpec q[] = {{PlaneRole::Y, s, 16, 0}, {PlaneRole::UV, s, 15, 512}};
  NEAT_EXPECT_ERROR(NeatTensor::compose_planes(PixelFormat::NV12, 16, 16, q),
                    ErrorCode::InvalidArgument,
                    "row stride 15 is below width x bytes per pixel = 8 x 2");
}

TEST(PlanarBadInput, OverlappingPlanes) {
  auto s = FakeStorage::make(4096);
  PlaneSpec p[] = {{PlaneRole::Y, s, 16, 0}, {PlaneRole::UV, s, 16, 200}};
  NEAT_EXPECT_ERROR(NeatTensor::compose_planes(PixelFormat::NV12, 16, 16, p),
                    ErrorCode::InvalidArgument, "overlaps NV12 plane 0 (Y)");
  // The same offsets in different storages do not overlap.
  auto t = FakeStorage::make(4096);
  PlaneSpec q[] = {{PlaneRole::Y, s, 16, 0}, {PlaneRole::UV, t, 16, 0}};
  NEAT_ASSERT_OK(NeatTensor::compose_planes(PixelFormat::NV12, 16, 16, q));
}

TEST(PlanarBadInput, NotPlanarOrNoStorage) {
  auto s = FakeStorage::make(4096);
  PlaneSpec p[] = {{PlaneRole::Y, s, 16, 0}};
  NEAT_EXPECT_ERROR(NeatTensor::compose_planes(PixelFormat::RGB, 16, 16, p),
                    ErrorCode::InvalidArgument, "not a planar format");
  PlaneSpec q[] = {{PlaneRole::Y, s, 16, 0}, {PlaneRole::UV, nullptr, 16, 0}};
  NEAT_EXPECT_ERROR(NeatTensor::compose_planes(PixelFormat::NV12, 16, 16, q),
                    ErrorCode::InvalidArgument, "has no storage");
  NEAT_EXPECT_ERROR(NeatTensor::compose_planes(PixelFormat::NV12, -2, 16, q),
                    ErrorCode::InvalidArgument, ">= 0");
}

TEST(PlanarCrop, ChromaAlignedCropMovesEveryPlane) {
  auto f = NeatTensor::allocate_image(PixelFormat::I420, 64, 48);
  NEAT_ASSERT_OK(f);
  auto c = f->crop(8, 4, 17, 9);
  NEAT_ASSERT_OK(c);
  EXPECT_EQ(c->shape(), (Dims{9, 17}));
  EXPECT_EQ(c->image().width, 17);
  EXPECT_EQ(c->plane_layout(0).byte_offset, 4 * 64 + 8);
  EXPECT_EQ(c->plane_layout(1).byte_offset, 64 * 48 + 2 * 32 + 4);
  EXPECT_EQ(c->plane_layout(1).cols, 9);  // odd width: chroma rounds up
  EXPECT_EQ(c->plane_layout(1).rows, 5);
  EXPECT_EQ(c->plane_layout(2).byte_offset, 64 * 48 + 32 * 24 + 2 * 32 + 4);
  EXPECT_EQ(c->identity(), f->identity());
  EXPECT_FALSE(c->is_contiguous());
}

TEST(PlanarCrop, OddOriginIsAnErrorNotAnAdjustment) {
  auto f = NeatTensor::allocate_image(PixelFormat::NV12, 64, 48);
  NEAT_EXPECT_ERROR(
      f->crop(3, 4, 8, 8), ErrorCode::InvalidArgument,
      "frames must start on even coordinates so that chroma stays aligned; use x=2, y=4");
  NEAT_EXPECT_ERROR(f->crop(2, 5, 8, 8), ErrorCode::InvalidArgument, "even coordinates");
  NEAT_EXPECT_ERROR(f->crop(60, 0, 8, 8), ErrorCode::OutOfRange, "not inside the 64x48 image");
}

TEST(PlanarCrop, OddEdgeCropStaysInsideChroma) {
  auto f = NeatTensor::allocate_image(PixelFormat::NV12, 5, 5);
  NEAT_ASSERT_OK(f);
  auto c = f->crop(2, 2, 3, 3);
  NEAT_ASSERT_OK(c);
  EXPECT_EQ(c->plane_layout(1).cols, 2);
  EXPECT_EQ(c->plane_layout(1).rows, 2);
}

TEST(Planar, DenseViewsOfACompositeAskForAPlane) {
  auto f = NeatTensor::allocate_image(PixelFormat::NV12, 16, 16);
  NEAT_EXPECT_ERROR(f->slice(0, 0, 2), ErrorCode::FailedPrecondition, "take plane(PlaneRole::Y)");
  NEAT_EXPECT_ERROR(f->reshape({256}), ErrorCode::FailedPrecondition, "plane");
  NEAT_EXPECT_ERROR(f->transpose(0, 1), ErrorCode::FailedPrecondition, "plane");
  NEAT_EXPECT_ERROR(f->as_dense(), ErrorCode::FailedPrecondition, "plane");
  auto m = f->map();
  NEAT_ASSERT_OK(m);
  EXPECT_EQ(m->data(), nullptr);
  NEAT_EXPECT_ERROR(m->data_ptr<const std::uint8_t>(), ErrorCode::FailedPrecondition, "plane_data");
  auto y = m->plane_data(PlaneRole::Y);
  auto uv = m->plane_data(PlaneRole::UV);
  NEAT_ASSERT_OK(y);
  NEAT_ASSERT_OK(uv);
  EXPECT_EQ(*uv - *y, 256);
  NEAT_EXPECT_ERROR(m->plane_data(PlaneRole::V), ErrorCode::InvalidArgument, "no such plane");
}

TEST(Planar, PaddedCloneIsPackedAndEqual) {
  auto f = NeatTensor::allocate_image(PixelFormat::NV12, 6, 4,
                                      {.zero_fill = false, .row_alignment = 16});
  NEAT_ASSERT_OK(f);
  auto w = std::move(*f).make_writable();
  NEAT_ASSERT_OK(w);
  {
    auto m = w->map(MapMode::Write);
    NEAT_ASSERT_OK(m);
    auto y = m->mutable_plane_data(PlaneRole::Y);
    auto uv = m->mutable_plane_data(PlaneRole::UV);
    for (int r = 0; r < 4; ++r)
      std::memset(*y + r * 16, 10 + r, 6);
    for (int r = 0; r < 2; ++r)
      std::memset(*uv + r * 16, 100 + r, 6);
  }
  auto c = w->clone();
  NEAT_ASSERT_OK(c);
  EXPECT_TRUE(c->is_contiguous());
  EXPECT_EQ(c->plane_layout(0).row_stride, 6);
  auto m = c->map();
  auto y = m->plane_data(PlaneRole::Y);
  auto uv = m->plane_data(PlaneRole::UV);
  EXPECT_EQ(*uv - *y, 24);
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(static_cast<int>((*y)[r * 6 + 5]), 10 + r);
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(static_cast<int>((*uv)[r * 6]), 100 + r);
}

}  // namespace
}  // namespace neat

// Per-frame metadata (contract/frame_meta.hpp): held by the handle, kept by
// views and copies, composed by crops.
#include "neat/contract/frame_meta.hpp"

#include <gtest/gtest.h>

#include "neat/contract/neat_tensor.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

FrameMeta sample_meta() {
  FrameMeta m;
  m.frame = 12;
  m.pts_ns = 400'000'000;
  m.duration_ns = 33'333'333;
  return m;
}

TEST(FrameMeta, AFreshTensorHasNoneAndAHandleKeepsItsOwn) {
  auto t = NeatTensor::allocate(DType::U8, {4, 4});
  NEAT_ASSERT_OK(t);
  EXPECT_TRUE(t->meta().empty());
  NeatTensor other = *t;  // shares the buffer
  t->set_meta(sample_meta());
  EXPECT_EQ(t->meta(), sample_meta());
  EXPECT_TRUE(other.meta().empty()) << "metadata belongs to the handle, not the storage";
}

TEST(FrameMeta, ViewsAndCopiesKeepIt) {
  auto t = NeatTensor::allocate(DType::U8, {4, 6, 3});
  NEAT_ASSERT_OK(t);
  t->set_meta(sample_meta());
  auto s = t->slice(1, 0, 4);
  NEAT_ASSERT_OK(s);
  EXPECT_EQ(s->meta(), sample_meta());
  auto p = t->permute({2, 0, 1});
  NEAT_ASSERT_OK(p);
  EXPECT_EQ(p->meta(), sample_meta());
  auto c = p->contiguous();  // an explicit pack: the same frame
  NEAT_ASSERT_OK(c);
  EXPECT_EQ(c->meta(), sample_meta());
  auto k = t->clone();
  NEAT_ASSERT_OK(k);
  EXPECT_EQ(k->meta(), sample_meta());
}

TEST(FrameMeta, CropsComposeTheGeometryAndMapBackToSourcePixels) {
  for (PixelFormat f : {PixelFormat::RGB, PixelFormat::NV12}) {
    auto t = NeatTensor::allocate_image(f, 640, 480);
    NEAT_ASSERT_OK(t);
    auto a = t->crop(100, 50, 300, 200);
    NEAT_ASSERT_OK(a);
    auto b = a->crop(20, 10, 100, 100);
    NEAT_ASSERT_OK(b);
    const FrameGeometry& g = b->meta().geometry;
    EXPECT_EQ(g.source_width, 640) << to_string(f);
    EXPECT_EQ(g.source_height, 480);
    const auto p = g.to_source(0, 0);
    EXPECT_DOUBLE_EQ(p.x, 120);
    EXPECT_DOUBLE_EQ(p.y, 60);
    const auto q = g.to_source(100, 100);
    EXPECT_DOUBLE_EQ(q.x, 220);
    EXPECT_DOUBLE_EQ(q.y, 160);
  }
}

TEST(FrameMeta, GeometryComposesScaleAndOffsetAndClamps) {
  FrameGeometry g;
  g.source_width = 1920;
  g.source_height = 1080;
  // A resize from 1920x1080 to 640x360, then a crop at (10, 20).
  const FrameGeometry r = g.then(3.0, 3.0, 0, 0).then(1, 1, 10, 20);
  EXPECT_DOUBLE_EQ(r.to_source(0, 0).x, 30);
  EXPECT_DOUBLE_EQ(r.to_source(0, 0).y, 60);
  EXPECT_DOUBLE_EQ(r.to_source(5, 5).x, 45);
  EXPECT_DOUBLE_EQ(r.to_source_clamped(1000, -5).x, 1920);
  EXPECT_DOUBLE_EQ(r.to_source_clamped(1000, -50).y, 0);
  EXPECT_FALSE(r.is_identity());
  EXPECT_NE(to_string(FrameMeta{.frame = 3, .geometry = r}).find("frame 3"), std::string::npos);
  EXPECT_EQ(to_string(FrameMeta{}), "no frame metadata");
}

}  // namespace
}  // namespace neat

// Views: metadata only, no buffer allocated, correct bytes, typed errors.
#include <gtest/gtest.h>

#include "neat/neat.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

using testing::element_bytes;

class Views : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = NeatTensor::allocate(DType::U8, {4, 6, 3}, {.zero_fill = false});
    ASSERT_TRUE(t.ok());
    auto w = std::move(*t).make_writable();
    ASSERT_TRUE(w.ok());
    testing::fill_pattern(*w);
    t_ = std::move(*w);
  }
  NeatTensor t_;
};

TEST_F(Views, ViewsNeverAllocateABuffer) {
  const auto before = default_heap_pool().stats();
  auto a = t_.slice(1, 1, 5, 2);
  auto b = t_.transpose(0, 1);
  auto c = t_.reshape({24, 3});
  auto d = t_.unsqueeze(0);
  auto e = t_.narrow(0, 1, 2);
  auto f = t_.expand({2, 4, 6, 3});
  for (auto* r : {&a, &b, &c, &d, &e, &f})
    NEAT_ASSERT_OK(*r);
  const auto after = default_heap_pool().stats();
  EXPECT_EQ(after.hits + after.misses, before.hits + before.misses);
  EXPECT_EQ(a->identity(), t_.identity());
}

TEST_F(Views, SliceWithStepSelectsTheRightBytes) {
  auto v = t_.slice(1, 1, 6, 2);
  NEAT_ASSERT_OK(v);
  EXPECT_EQ(v->shape(), (Dims{4, 3, 3}));
  EXPECT_EQ(v->strides(), (Dims{18, 6, 1}));
  EXPECT_EQ(v->byte_offset(), 3);
  EXPECT_FALSE(v->is_contiguous());
  auto bytes = element_bytes(*v);
  EXPECT_EQ(bytes[0], 3);
  EXPECT_EQ(bytes[3], 9);
}

TEST_F(Views, TransposeAndPermute) {
  auto p = t_.permute({2, 0, 1});
  NEAT_ASSERT_OK(p);
  EXPECT_EQ(p->shape(), (Dims{3, 4, 6}));
  EXPECT_EQ(p->strides(), (Dims{1, 18, 3}));
  auto back = p->permute({1, 2, 0});
  NEAT_ASSERT_OK(back);
  EXPECT_TRUE(back->is_contiguous());
  NEAT_EXPECT_ERROR(t_.permute({0, 0, 1}), ErrorCode::InvalidArgument, "not a permutation");
  NEAT_EXPECT_ERROR(t_.permute({0, 1}), ErrorCode::InvalidArgument, "2 entries for rank 3");
  NEAT_EXPECT_ERROR(t_.transpose(0, 3), ErrorCode::OutOfRange, "dim 3 is outside [0, 3)");
}

TEST_F(Views, ReshapeIsAViewOrAnErrorNeverACopy) {
  auto r = t_.reshape({-1, 9});
  NEAT_ASSERT_OK(r);
  EXPECT_EQ(r->shape(), (Dims{8, 9}));
  EXPECT_EQ(element_bytes(*r), element_bytes(t_));
  auto tr = t_.transpose(0, 1);
  NEAT_ASSERT_OK(tr);
  const auto before = conversion_counters().snapshot();
  NEAT_EXPECT_ERROR(tr->reshape({72}), ErrorCode::FailedPrecondition,
                    "would need a copy (the strides do not allow a view); call contiguous() first");
  EXPECT_EQ(conversion_counters().snapshot().since(before).total().count, 0u);
  NEAT_EXPECT_ERROR(t_.reshape({5, 5}), ErrorCode::InvalidArgument,
                    "holds 25 elements, the tensor has 72");
  NEAT_EXPECT_ERROR(t_.reshape({-1, -1}), ErrorCode::InvalidArgument, "negative extent");
  NEAT_EXPECT_ERROR(t_.reshape({-1, 7}), ErrorCode::InvalidArgument, "cannot infer");
}

TEST_F(Views, SqueezeUnsqueeze) {
  auto u = t_.unsqueeze(3);
  NEAT_ASSERT_OK(u);
  EXPECT_EQ(u->shape(), (Dims{4, 6, 3, 1}));
  auto s = u->squeeze(3);
  NEAT_ASSERT_OK(s);
  EXPECT_EQ(s->shape(), t_.shape());
  NEAT_EXPECT_ERROR(t_.squeeze(0), ErrorCode::InvalidArgument, "has extent 4, not 1");
  NEAT_EXPECT_ERROR(t_.unsqueeze(4), ErrorCode::OutOfRange, "outside");
  auto big = NeatTensor::allocate(DType::U8, {1, 1, 1, 1, 1, 1, 1, 1});
  NEAT_EXPECT_ERROR(big->unsqueeze(0), ErrorCode::InvalidArgument, "above the maximum rank");
}

TEST_F(Views, ExpandIsStrideZeroAndReadOnly) {
  auto row = t_.narrow(0, 0, 1);
  NEAT_ASSERT_OK(row);
  auto e = row->expand({5, 6, 3});
  NEAT_ASSERT_OK(e);
  EXPECT_EQ(e->strides()[0], 0);
  EXPECT_TRUE(e->is_broadcast());
  EXPECT_FALSE(e->is_writable());
  NEAT_EXPECT_ERROR(t_.expand({4, 5, 3}), ErrorCode::InvalidArgument, "cannot broadcast");
  NEAT_EXPECT_ERROR(t_.expand({6, 3}), ErrorCode::InvalidArgument, "fewer dims");
  // Mapping a broadcast for writing fails even when it is otherwise unique.
  NeatTensor b = *std::move(e);
  t_ = NeatTensor();
  row = NeatTensor();
  NEAT_EXPECT_ERROR(b.map(MapMode::Write), ErrorCode::FailedPrecondition, "broadcast");
  // make_writable of a broadcast never donates: it packs into a real buffer.
  auto w = std::move(b).make_writable();
  NEAT_ASSERT_OK(w);
  EXPECT_FALSE(w->is_broadcast());
  EXPECT_EQ(w->shape(), (Dims{5, 6, 3}));
}

TEST_F(Views, SliceBadInput) {
  NEAT_EXPECT_ERROR(t_.slice(0, 2, 1), ErrorCode::OutOfRange, "is not inside dim 0 of extent 4");
  NEAT_EXPECT_ERROR(t_.slice(0, 0, 5), ErrorCode::OutOfRange, "extent 4");
  NEAT_EXPECT_ERROR(t_.slice(0, -1, 2), ErrorCode::OutOfRange, "not inside");
  NEAT_EXPECT_ERROR(t_.slice(0, 0, 2, 0), ErrorCode::InvalidArgument, "step 0 must be >= 1");
  NEAT_EXPECT_ERROR(t_.slice(7, 0, 1), ErrorCode::OutOfRange, "dim 7");
  NEAT_EXPECT_ERROR(t_.narrow(0, 1, -1), ErrorCode::InvalidArgument, "length -1 is negative");
  NEAT_EXPECT_ERROR(t_.narrow(0, 1, std::numeric_limits<std::int64_t>::max()),
                    ErrorCode::OutOfRange, "overflow");
  auto empty = t_.slice(0, 2, 2);
  NEAT_ASSERT_OK(empty);
  EXPECT_EQ(empty->numel(), 0);
}

TEST_F(Views, ReinterpretSameItemSize) {
  auto f = NeatTensor::allocate(DType::F16, {4});
  auto u = f->reinterpret(DType::U16);
  NEAT_ASSERT_OK(u);
  EXPECT_EQ(u->dtype(), DType::U16);
  NEAT_EXPECT_ERROR(f->reinterpret(DType::F32), ErrorCode::InvalidArgument, "differ in item size");
  NEAT_EXPECT_ERROR(t_.reinterpret(DType::Bool), ErrorCode::InvalidArgument, "not valid bool");
}

TEST_F(Views, ImageDenseRoundTripIsAReinterpret) {
  auto img = t_.as_image({PixelFormat::RGB, 6, 4});
  NEAT_ASSERT_OK(img);
  EXPECT_EQ(img->layout(), Layout::HWC);
  EXPECT_EQ(img->identity(), t_.identity());
  auto dense = img->as_dense();
  NEAT_ASSERT_OK(dense);
  EXPECT_FALSE(dense->is_image());
  NEAT_EXPECT_ERROR(t_.as_image({PixelFormat::RGB, 4, 6}), ErrorCode::InvalidArgument,
                    "the shape must be [6, 4, 3]");
  NEAT_EXPECT_ERROR(t_.as_image({PixelFormat::NV12, 6, 4}), ErrorCode::InvalidArgument,
                    "compose_planes");
  auto f = NeatTensor::allocate(DType::F32, {4, 6, 3});
  NEAT_EXPECT_ERROR(f->as_image({PixelFormat::RGB, 6, 4}), ErrorCode::InvalidArgument, "8 bit");
}

TEST_F(Views, InterleavedCropKeepsTheImage) {
  auto img = t_.as_image({PixelFormat::BGR, 6, 4});
  auto c = img->crop(1, 2, 3, 2);
  NEAT_ASSERT_OK(c);
  EXPECT_EQ(c->image().width, 3);
  EXPECT_EQ(c->image().height, 2);
  EXPECT_EQ(c->pixel_format(), PixelFormat::BGR);
  EXPECT_EQ(c->byte_offset(), 2 * 18 + 1 * 3);
  NEAT_EXPECT_ERROR(img->crop(4, 0, 3, 1), ErrorCode::OutOfRange, "not inside the 6x4 image");
  NEAT_EXPECT_ERROR(img->crop(-1, 0, 1, 1), ErrorCode::OutOfRange, "not inside");
  NEAT_EXPECT_ERROR(t_.crop(0, 0, 1, 1), ErrorCode::FailedPrecondition, "needs an image");
  // A channel slice is no longer BGR: it becomes dense.
  auto ch = img->slice(2, 0, 1);
  EXPECT_FALSE(ch->is_image());
}

TEST(ViewsChw, CropOfChwImage) {
  auto t = NeatTensor::allocate_image(PixelFormat::RGB, 8, 4, {.layout = Layout::CHW});
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->shape(), (Dims{3, 4, 8}));
  auto c = t->crop(2, 1, 4, 2);
  NEAT_ASSERT_OK(c);
  EXPECT_EQ(c->shape(), (Dims{3, 2, 4}));
  EXPECT_EQ(c->image().width, 4);
  EXPECT_EQ(c->byte_offset(), 1 * 8 + 2);
}

}  // namespace
}  // namespace neat

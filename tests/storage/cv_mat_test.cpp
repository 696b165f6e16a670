#include "neat/storage/cv_mat.hpp"

#include <gtest/gtest.h>

#include <opencv2/core.hpp>

#include "neat/neat.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

TEST(CvMatWrap, ContinuousMatIsWrappedWithoutCopy) {
  cv::Mat m(4, 5, CV_32FC3, cv::Scalar(1, 2, 3));
  auto t = wrap_mat(m);
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->shape(), (Dims{4, 5, 3}));
  EXPECT_EQ(t->strides(), (Dims{60, 12, 4}));
  EXPECT_EQ(t->dtype(), DType::F32);
  EXPECT_EQ(t->storage_kind(), StorageKind::CvMat);
  auto map = t->map();
  EXPECT_EQ(static_cast<const void*>(map->data()), static_cast<const void*>(m.data));
}

TEST(CvMatWrap, RoiAndPaddedStepKeepTheirStrides) {
  cv::Mat big(10, 20, CV_8UC3);
  for (int r = 0; r < 10; ++r) {
    for (int c = 0; c < 20; ++c)
      big.at<cv::Vec3b>(r, c) = cv::Vec3b(r, c, 7);
  }
  cv::Mat roi = big(cv::Rect(3, 2, 6, 4));
  ASSERT_FALSE(roi.isContinuous());
  auto t = wrap_mat_image(roi, PixelFormat::BGR);
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->image().width, 6);
  EXPECT_EQ(t->strides()[0], 60);
  EXPECT_FALSE(t->is_contiguous());
  auto bytes = testing::element_bytes(*t);
  EXPECT_EQ(bytes[0], 2);  // row 2
  EXPECT_EQ(bytes[1], 3);  // col 3
  EXPECT_EQ(bytes[2], 7);
}

TEST(CvMatWrap, MappingStaysValidAfterTheCallersMatIsReleased) {
  std::optional<Mapping> mapping;
  {
    cv::Mat m(3, 3, CV_16UC1, cv::Scalar(4242));
    auto t = wrap_mat(m);
    NEAT_ASSERT_OK(t);
    auto r = t->map();
    NEAT_ASSERT_OK(r);
    mapping.emplace(std::move(*r));
    m.release();
  }
  auto p = mapping->data_ptr<const std::uint16_t>();
  NEAT_ASSERT_OK(p);
  EXPECT_EQ((*p)[8], 4242);
}

TEST(CvMatWrap, DonatedOnlyWhenNoOtherMatHeaderSharesTheBuffer) {
  cv::Mat m(2, 2, CV_8UC1, cv::Scalar(0));
  auto shared = wrap_mat(m);
  auto w1 = std::move(*shared).make_writable();
  NEAT_ASSERT_OK(w1);
  EXPECT_EQ(w1->storage_kind(), StorageKind::Heap) << "the caller's Mat still shares the bytes";

  auto alone = wrap_mat(m);
  m.release();
  auto w2 = std::move(*alone).make_writable();
  NEAT_ASSERT_OK(w2);
  EXPECT_EQ(w2->storage_kind(), StorageKind::CvMat) << "the last header: donated";

  cv::Mat n(2, 2, CV_8UC1);
  auto ro = wrap_mat(n, {.read_only = true});
  n.release();
  auto w3 = std::move(*ro).make_writable();
  EXPECT_EQ(w3->storage_kind(), StorageKind::Heap);
}

TEST(CvMatWrapBadInput, EmptyUnownedAndUnsupported) {
  NEAT_EXPECT_ERROR(wrap_mat(cv::Mat()), ErrorCode::InvalidArgument, "empty");
  std::uint8_t buf[16] = {};
  cv::Mat external(4, 4, CV_8UC1, buf);
  NEAT_EXPECT_ERROR(wrap_mat(external), ErrorCode::InvalidArgument, "wrap_external()");
  cv::Mat f(2, 2, CV_32FC1);
  NEAT_EXPECT_ERROR(wrap_mat_image(f, PixelFormat::GRAY8), ErrorCode::InvalidArgument, "8-bit");
  cv::Mat rgb(2, 2, CV_8UC3);
  NEAT_EXPECT_ERROR(wrap_mat_image(rgb, PixelFormat::NV12), ErrorCode::InvalidArgument,
                    "interleaved");
  NEAT_EXPECT_ERROR(wrap_mat_image(rgb, PixelFormat::RGBA), ErrorCode::InvalidArgument,
                    "4 channels");
}

TEST(CvMatWrap, NdMat) {
  int sizes[] = {2, 3, 4};
  cv::Mat m(3, sizes, CV_64FC2);
  auto t = wrap_mat(m);
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->shape(), (Dims{2, 3, 4, 2}));
  EXPECT_TRUE(t->is_contiguous());
}

TEST(CvMatView, TensorAsMatWithoutCopyKeepsStorageAlive) {
  cv::Mat view;
  BufferIdentity id;
  const std::byte* data = nullptr;
  {
    auto t = NeatTensor::allocate_image(PixelFormat::RGB, 6, 4, {.row_alignment = 32});
    NEAT_ASSERT_OK(t);
    id = t->identity();
    data = t->map()->data();
    auto r = mat_view(*t);
    NEAT_ASSERT_OK(r);
    view = *r;
  }
  EXPECT_TRUE(id.alive()) << "the Mat holds the storage";
  EXPECT_EQ(view.rows, 4);
  EXPECT_EQ(view.cols, 6);
  EXPECT_EQ(view.type(), CV_8UC3);
  EXPECT_EQ(view.step[0], 32u);
  EXPECT_EQ(static_cast<const void*>(view.data), static_cast<const void*>(data));
  cv::Mat copy_of_header = view;
  view.release();
  EXPECT_TRUE(id.alive());
  copy_of_header.release();
  EXPECT_FALSE(id.alive());
}

TEST(CvMatView, EveryOpenCvDtype) {
  for (DType dt : {DType::U8, DType::I8, DType::U16, DType::I16, DType::I32, DType::F16, DType::F32,
                   DType::F64}) {
    auto t = NeatTensor::allocate(dt, {3, 5});
    auto m = mat_view(*t);
    NEAT_ASSERT_OK(m);
    EXPECT_EQ(m->depth(), *cv_depth_from_dtype(dt)) << to_string(dt);
  }
}

TEST(CvMatView, WriteMappingGivesAWritableMat) {
  auto t = NeatTensor::allocate(DType::U8, {2, 3});
  auto w = std::move(*t).make_writable();
  auto wm = w->map(MapMode::Write);
  NEAT_ASSERT_OK(wm);
  auto m = mat_view(std::move(*wm));
  NEAT_ASSERT_OK(m);
  m->setTo(cv::Scalar(9));
  m->release();
  EXPECT_EQ(testing::element_bytes(*w)[5], 9);
}

TEST(CvMatViewBadInput, LayoutsOpenCvCannotRepresentAreRefusedNotCopied) {
  const auto before = conversion_counters().snapshot();
  auto t = NeatTensor::allocate(DType::U8, {4, 6, 3});
  NEAT_EXPECT_ERROR(mat_view(*t->transpose(0, 1)), ErrorCode::FailedPrecondition, "packed");
  NEAT_EXPECT_ERROR(mat_view(*t->slice(2, 0, 3, 2)), ErrorCode::FailedPrecondition, "channels");
  NEAT_EXPECT_ERROR(mat_view(*t->unsqueeze(0)), ErrorCode::FailedPrecondition, "rank 4");
  auto chw = NeatTensor::allocate_image(PixelFormat::RGB, 4, 4, {.layout = Layout::CHW});
  NEAT_EXPECT_ERROR(mat_view(*chw), ErrorCode::FailedPrecondition, "CHW is not a Mat layout");
  auto nv12 = NeatTensor::allocate_image(PixelFormat::NV12, 4, 4);
  NEAT_EXPECT_ERROR(mat_view(*nv12), ErrorCode::FailedPrecondition, "plane(role)");
  auto bf = NeatTensor::allocate(DType::BF16, {2, 2});
  NEAT_EXPECT_ERROR(mat_view(*bf), ErrorCode::InvalidArgument, "no OpenCV equivalent");
  auto row = NeatTensor::allocate(DType::U8, {1, 4});
  NEAT_EXPECT_ERROR(mat_view(*row->expand({3, 4})), ErrorCode::FailedPrecondition, "broadcast");
  auto s = testing::FakeStorage::make(100);
  auto flipped = NeatTensor::from_storage(s, DType::U8, {4, 4}, {-10, 1}, 30);
  NEAT_EXPECT_ERROR(mat_view(*flipped), ErrorCode::FailedPrecondition, "top-down rows");
  auto odd = NeatTensor::from_storage(s, DType::I16, {3, 2}, {5, 2}, 0);
  NEAT_ASSERT_OK(odd);
  NEAT_EXPECT_ERROR(mat_view(*odd), ErrorCode::FailedPrecondition, "multiple of the 2-byte");
  EXPECT_EQ(conversion_counters().snapshot().since(before).total().count, 0u);
}

}  // namespace
}  // namespace neat

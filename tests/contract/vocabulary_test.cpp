// dtype, image, device and conversion vocabularies.
#include <gtest/gtest.h>

#include "neat/contract/conversion.hpp"
#include "neat/contract/device.hpp"
#include "neat/contract/dtype.hpp"
#include "neat/contract/image.hpp"

namespace neat {
namespace {

TEST(DType, ItemSizesAndNamesRoundTrip) {
  const std::pair<DType, std::int64_t> expected[] = {
      {DType::U8, 1},   {DType::I8, 1},  {DType::U16, 2}, {DType::I16, 2},
      {DType::U32, 4},  {DType::I32, 4}, {DType::I64, 8}, {DType::F16, 2},
      {DType::BF16, 2}, {DType::F32, 4}, {DType::F64, 8}, {DType::Bool, 1}};
  for (auto [t, size] : expected) {
    EXPECT_EQ(item_size(t), size) << to_string(t);
    EXPECT_EQ(parse_dtype(to_string(t)), t);
  }
  EXPECT_EQ(parse_dtype("float"), std::nullopt);
  static_assert(dtype_of<const float> == DType::F32);
  static_assert(dtype_of<BFloat16> == DType::BF16);
}

TEST(Image, PlaneOrdersAndGeometry) {
  auto nv12 = plane_order(PixelFormat::NV12);
  ASSERT_EQ(nv12.count, 2);
  EXPECT_EQ(nv12.roles[0], PlaneRole::Y);
  EXPECT_EQ(nv12.roles[1], PlaneRole::UV);
  auto i420 = plane_order(PixelFormat::I420);
  ASSERT_EQ(i420.count, 3);
  EXPECT_EQ(i420.roles[1], PlaneRole::U);
  EXPECT_EQ(i420.roles[2], PlaneRole::V);
  EXPECT_EQ(plane_order(PixelFormat::YV12).roles[1], PlaneRole::V);
  EXPECT_EQ(plane_order(PixelFormat::NV21).roles[1], PlaneRole::VU);
  EXPECT_EQ(plane_order(PixelFormat::RGB).count, 0);
  // Odd sizes: chroma rounds up.
  auto uv = plane_geometry(PixelFormat::NV12, PlaneRole::UV, 1919, 1079);
  EXPECT_EQ(uv.rows, 540);
  EXPECT_EQ(uv.cols, 960);
  EXPECT_EQ(uv.samples, 2);
  auto u = plane_geometry(PixelFormat::I420, PlaneRole::U, 5, 3);
  EXPECT_EQ(u.rows, 2);
  EXPECT_EQ(u.cols, 3);
  EXPECT_EQ(u.samples, 1);
  EXPECT_EQ(channels(PixelFormat::BGRA), 4);
  EXPECT_EQ(default_layout(PixelFormat::NV12), Layout::HW);
  EXPECT_EQ(default_layout(PixelFormat::RGB), Layout::HWC);
  EXPECT_EQ(parse_pixel_format("NV12"), PixelFormat::NV12);
  EXPECT_EQ(parse_pixel_format("nv12"), std::nullopt);
  EXPECT_EQ(to_string(ImageSpec{PixelFormat::NV12, 1920, 1080, Layout::None}),
            "NV12 1920x1080 (HW)");
}

TEST(Device, Names) {
  EXPECT_EQ(to_string(Device{DeviceType::Gl, 1}), "gl:1");
  EXPECT_EQ(to_string(kCpu), "cpu:0");
  EXPECT_EQ(to_string(StorageKind::DmaBuf), "dmabuf");
}

TEST(Conversion, NamesRoundTrip) {
  for (int i = 0; i < kConversionKindCount; ++i) {
    auto k = static_cast<ConversionKind>(i);
    EXPECT_EQ(parse_conversion_kind(to_string(k)), k);
  }
  for (int i = 0; i < kConversionReasonCount; ++i) {
    auto r = static_cast<ConversionReason>(i);
    EXPECT_EQ(parse_conversion_reason(to_string(r)), r);
  }
  EXPECT_EQ(parse_conversion_policy("strict"), ConversionPolicy::Strict);
  EXPECT_EQ(parse_conversion_policy("trace"), ConversionPolicy::AllowWithTrace);
  EXPECT_EQ(parse_conversion_policy("silent"), ConversionPolicy::AllowSilent);
  EXPECT_EQ(parse_conversion_policy("allow_with_trace"), ConversionPolicy::AllowWithTrace);
  EXPECT_EQ(parse_conversion_policy("STRICT"), std::nullopt);
  EXPECT_EQ(to_string(Donation::MustDonate), "must_donate");
}

}  // namespace
}  // namespace neat

#include "neat/kernels/color.hpp"

#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include "support/fakes.hpp"
#include "support/images.hpp"

namespace neat {
namespace {

using testing::max_abs_diff;
using testing::packed_yuv_mat;
using testing::random_frame;
using testing::split_planes;
using testing::to_mat_copy;

class Color : public testing::TelemetryTest {};

int opencv_code(PixelFormat from, PixelFormat to) {
  const bool bgr = to == PixelFormat::BGR;
  switch (from) {
    case PixelFormat::NV12:
      return bgr ? cv::COLOR_YUV2BGR_NV12 : cv::COLOR_YUV2RGB_NV12;
    case PixelFormat::NV21:
      return bgr ? cv::COLOR_YUV2BGR_NV21 : cv::COLOR_YUV2RGB_NV21;
    case PixelFormat::I420:
      return bgr ? cv::COLOR_YUV2BGR_I420 : cv::COLOR_YUV2RGB_I420;
    default:
      return bgr ? cv::COLOR_YUV2BGR_YV12 : cv::COLOR_YUV2RGB_YV12;
  }
}

TEST_F(Color, YuvToRgbMatchesOpenCvBitForBitOnEveryPath) {
  for (PixelFormat f :
       {PixelFormat::NV12, PixelFormat::NV21, PixelFormat::I420, PixelFormat::YV12}) {
    for (PixelFormat to : {PixelFormat::RGB, PixelFormat::BGR}) {
      const NeatTensor frame = random_frame(f, 64, 48, 11);
      cv::Mat ref;
      cv::cvtColor(packed_yuv_mat(frame), ref, opencv_code(f, to));
      // Packed (OpenCV path), padded rows, and planes in separate padded storages (our kernel for
      // I420).
      const NeatTensor padded = [&] {
        NeatTensor p = random_frame(f, 64, 48, 0, 128);
        auto c = frame.clone();  // same content, padded layout: copy plane rows over
        auto src = c->map();
        auto dst = p.map(MapMode::Write);
        for (int i = 0; i < p.plane_count(); ++i) {
          const PlaneLayout& pl = p.plane_layout(i);
          for (std::int64_t r = 0; r < pl.rows; ++r) {
            std::memcpy(*dst->mutable_plane_data(pl.role) + r * pl.row_stride,
                        *src->plane_data(pl.role) + r * pl.cols * pl.samples,
                        static_cast<std::size_t>(pl.cols * pl.samples));
          }
        }
        return p;
      }();
      for (const NeatTensor& in : {frame, padded, split_planes(frame, 13)}) {
        auto rgb = convert_color(in, to);
        ASSERT_TRUE(rgb.ok()) << rgb.error().message();
        EXPECT_EQ(rgb->pixel_format(), to);
        EXPECT_EQ(max_abs_diff(to_mat_copy(*rgb), ref), 0.0)
            << to_string(f) << " -> " << to_string(to) << " from " << in.to_string();
      }
    }
  }
}

TEST_F(Color, OddSizedFramesMatchOpenCvOnTheEvenFrameAroundThem) {
  for (PixelFormat f : {PixelFormat::NV12, PixelFormat::I420}) {
    const NeatTensor even = random_frame(f, 66, 50, 5);
    cv::Mat ref;
    cv::cvtColor(packed_yuv_mat(even), ref, opencv_code(f, PixelFormat::RGB));
    auto odd = even.crop(0, 0, 65, 49);  // chroma rounds up: the same chroma samples
    ASSERT_TRUE(odd.ok());
    auto rgb = convert_color(*odd, PixelFormat::RGB, {.threads = 2});
    ASSERT_TRUE(rgb.ok()) << rgb.error().message();
    EXPECT_EQ(rgb->image().width, 65);
    EXPECT_EQ(max_abs_diff(to_mat_copy(*rgb), ref(cv::Rect(0, 0, 65, 49))), 0.0) << to_string(f);
  }
}

TEST_F(Color, CroppedFrameIsConvertedWithoutPacking) {
  const NeatTensor frame = random_frame(PixelFormat::NV12, 128, 96, 3, 64);
  auto roi = frame.crop(32, 16, 64, 48);
  ASSERT_TRUE(roi.ok());
  cv::Mat full;
  cv::cvtColor(packed_yuv_mat(frame), full, cv::COLOR_YUV2RGB_NV12);
  const auto before = conversion_counters().snapshot();
  auto rgb = convert_color(*roi, PixelFormat::RGB);
  ASSERT_TRUE(rgb.ok());
  // One event, the convert itself: the padded crop was not packed first.
  const auto d = conversion_counters().snapshot().since(before);
  EXPECT_EQ(d.total(ConversionKind::Pack).count, 0u);
  EXPECT_EQ(d.total(ConversionKind::Convert).count, 1u);
  EXPECT_EQ(max_abs_diff(to_mat_copy(*rgb), full(cv::Rect(32, 16, 64, 48))), 0.0);
}

TEST_F(Color, GrayFromYuvIsTheLumaPlane) {
  const NeatTensor frame = random_frame(PixelFormat::I420, 31, 17, 9, 32);
  auto gray = convert_color(frame, PixelFormat::GRAY8);
  ASSERT_TRUE(gray.ok());
  EXPECT_EQ(gray->shape(), (Dims{17, 31, 1}));
  auto y = frame.plane(PlaneRole::Y);
  EXPECT_EQ(testing::element_bytes(*y), testing::element_bytes(*gray));
}

TEST_F(Color, InterleavedConversionsMatchOpenCv) {
  struct Case {
    PixelFormat from, to;
    int code;
    int cn;
  };
  const Case cases[] = {
      {PixelFormat::RGB, PixelFormat::BGR, cv::COLOR_RGB2BGR, 3},
      {PixelFormat::BGR, PixelFormat::RGB, cv::COLOR_BGR2RGB, 3},
      {PixelFormat::RGBA, PixelFormat::RGB, cv::COLOR_RGBA2RGB, 4},
      {PixelFormat::BGRA, PixelFormat::RGB, cv::COLOR_BGRA2RGB, 4},
      {PixelFormat::RGB, PixelFormat::BGRA, cv::COLOR_RGB2BGRA, 3},
      {PixelFormat::BGR, PixelFormat::GRAY8, cv::COLOR_BGR2GRAY, 3},
      {PixelFormat::RGBA, PixelFormat::GRAY8, cv::COLOR_RGBA2GRAY, 4},
      {PixelFormat::GRAY8, PixelFormat::RGB, cv::COLOR_GRAY2RGB, 1},
  };
  for (const Case& c : cases) {
    cv::Mat src(37, 53, CV_8UC(c.cn));
    cv::randu(src, 0, 256);
    cv::Mat ref;
    cv::cvtColor(src, ref, c.code);
    // Row-padded view (OpenCV path) ...
    cv::Mat big(40, 60, CV_8UC(c.cn));
    src.copyTo(big(cv::Rect(2, 1, 53, 37)));
    auto roi = wrap_mat_image(big(cv::Rect(2, 1, 53, 37)), c.from);
    ASSERT_TRUE(roi.ok()) << roi.error().message();
    auto out = convert_color(*roi, c.to);
    ASSERT_TRUE(out.ok()) << out.error().message();
    EXPECT_EQ(max_abs_diff(to_mat_copy(*out), ref), 0.0)
        << to_string(c.from) << "->" << to_string(c.to);
    // ... and pixels two apart (our generic kernel: OpenCV cannot view it).
    cv::Mat wide(37, 106, CV_8UC(c.cn));
    for (int x = 0; x < 53; ++x)
      src.col(x).copyTo(wide.col(2 * x));
    auto strided = wrap_mat_image(wide, c.from)->slice(1, 0, 106, 2);
    ASSERT_TRUE(strided.ok());
    ASSERT_FALSE(mat_view(*strided).ok());
    auto out2 = convert_color(*strided, c.to);
    ASSERT_TRUE(out2.ok()) << out2.error().message();
    EXPECT_EQ(max_abs_diff(to_mat_copy(*out2), ref), 0.0) << "strided " << to_string(c.from);
  }
}

TEST_F(Color, EveryConversionIsAnExplicitConvertEvent) {
  const NeatTensor frame = random_frame(PixelFormat::NV12, 32, 16, 1);
  auto rgb = convert_color(frame, PixelFormat::RGB);
  ASSERT_TRUE(rgb.ok());
  const auto cell = delta().at(ConversionKind::Convert, ConversionReason::PixelFormat, true);
  EXPECT_EQ(cell.count, 1u);
  EXPECT_EQ(cell.bytes, 32u * 16u * 3u);
  auto ev = events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].operation, "convert_color");
  EXPECT_EQ(ev[0].event.source.format, PixelFormat::NV12);
  EXPECT_EQ(ev[0].event.destination.format, PixelFormat::RGB);
  // Same format: the input itself, no event.
  auto same = convert_color(*rgb, PixelFormat::RGB);
  EXPECT_EQ(same->identity(), rgb->identity());
  EXPECT_EQ(events().size(), 1u);
}

TEST_F(Color, ImplicitConversionIsRuledByThePolicy) {
  const NeatTensor frame = random_frame(PixelFormat::NV12, 32, 16, 1);
  auto refused = convert_color(frame, PixelFormat::RGB,
                               {.policy = ConversionPolicy::Strict,
                                .implicit = true,
                                .requested_by = "stage 'detector' input"});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(
      refused.error().message().find("implicit convert (pixel_format) in stage 'detector' input"),
      std::string::npos)
      << refused.error().message();
  EXPECT_NE(refused.error().message().find("Fix: convert the frame explicitly"), std::string::npos);
  auto allowed = convert_color(frame, PixelFormat::RGB,
                               {.policy = ConversionPolicy::AllowSilent, .implicit = true});
  EXPECT_TRUE(allowed.ok());
}

TEST_F(Color, BadInput) {
  NEAT_EXPECT_ERROR(convert_color(NeatTensor(), PixelFormat::RGB), ErrorCode::FailedPrecondition,
                    "undefined");
  auto dense = NeatTensor::allocate(DType::U8, {4, 4, 3});
  NEAT_EXPECT_ERROR(convert_color(*dense, PixelFormat::RGB), ErrorCode::InvalidArgument,
                    "not an image");
  auto rgb = NeatTensor::allocate_image(PixelFormat::RGB, 4, 4);
  NEAT_EXPECT_ERROR(convert_color(*rgb, PixelFormat::NV12), ErrorCode::Unimplemented,
                    "RGB -> NV12 is not supported");
  auto chw = NeatTensor::allocate_image(PixelFormat::RGB, 4, 4, {.layout = Layout::CHW});
  NEAT_EXPECT_ERROR(convert_color(*chw, PixelFormat::BGR), ErrorCode::FailedPrecondition,
                    "convert_layout() it to HWC first");
  auto gl = testing::FakeStorage::make(48, {.resident = false,
                                            .mappable = false,
                                            .kind = StorageKind::Gl,
                                            .device = {DeviceType::Gl, 0}});
  auto on_gl = NeatTensor::from_storage_contiguous(gl, DType::U8, {4, 4, 3})
                   ->as_image({PixelFormat::RGB, 4, 4});
  NEAT_EXPECT_ERROR(convert_color(*on_gl, PixelFormat::BGR), ErrorCode::FailedPrecondition,
                    "not in CPU memory");
  EXPECT_TRUE(color_conversion_supported(PixelFormat::YV12, PixelFormat::BGR));
  EXPECT_FALSE(color_conversion_supported(PixelFormat::GRAY8, PixelFormat::NV12));
  EXPECT_EQ(delta().total().count, 0u);
}

}  // namespace
}  // namespace neat

// Layout, resize, normalize and the fused preprocess, against references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <new>
#include <opencv2/imgproc.hpp>
#include <stdexcept>
#include <vector>

#include "neat/kernels/cast.hpp"
#include "neat/kernels/color.hpp"
#include "neat/kernels/kernel.hpp"
#include "neat/kernels/layout.hpp"
#include "neat/kernels/normalize.hpp"
#include "neat/kernels/preprocess.hpp"
#include "neat/kernels/resize.hpp"
#include "support/fakes.hpp"
#include "support/images.hpp"

namespace neat {
namespace {

using testing::element_bytes;
using testing::max_abs_diff;
using testing::to_mat_copy;

NeatTensor from_mat(const cv::Mat& m, PixelFormat f) {
  auto t = wrap_mat_image(m.clone(), f);
  EXPECT_TRUE(t.ok()) << t.error().message();
  return *t;
}

using testing::floats;

// A camera-like frame: smooth gradients, a few hard-edged shapes, converted
// by OpenCV to I420 (BT.601 limited) and interleaved to NV12 (so chroma is
// subsampled as a camera's is).
NeatTensor camera_like_nv12(int w, int h, cv::Mat* rgb_out = nullptr) {
  cv::Mat rgb(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      rgb.at<cv::Vec3b>(y, x) =
          cv::Vec3b(static_cast<uchar>(255 * x / w), static_cast<uchar>(255 * y / h),
                    static_cast<uchar>(128 + 100 * std::sin(x * 0.02 + y * 0.03)));
    }
  }
  cv::circle(rgb, {w / 3, h / 2}, h / 5, cv::Scalar(250, 30, 30), cv::FILLED);
  cv::rectangle(rgb, {w / 2, h / 4}, {w / 2 + w / 5, h / 4 + h / 3}, cv::Scalar(20, 220, 60),
                cv::FILLED);
  cv::line(rgb, {0, h - 10}, {w - 1, 10}, cv::Scalar(255, 255, 255), 3);
  if (rgb_out) *rgb_out = rgb;
  cv::Mat i420;
  cv::cvtColor(rgb, i420, cv::COLOR_RGB2YUV_I420);
  auto f = NeatTensor::allocate_image(PixelFormat::NV12, w, h);
  auto wr = std::move(*f).make_writable();
  auto m = wr->map(MapMode::Write);
  std::memcpy(*m->mutable_plane_data(PlaneRole::Y), i420.data, static_cast<std::size_t>(w * h));
  const uchar* u = i420.data + w * h;
  const uchar* v = u + (w / 2) * (h / 2);
  std::byte* uv = *m->mutable_plane_data(PlaneRole::UV);
  for (int i = 0; i < (w / 2) * (h / 2); ++i) {
    uv[2 * i] = static_cast<std::byte>(u[i]);
    uv[2 * i + 1] = static_cast<std::byte>(v[i]);
  }
  // OpenCV's RGB2YUV_I420 encodes BT.601 limited range: say so.
  return *std::move(wr)->with_colorimetry(kBT601Limited);
}

// The unfused OpenCV chain: cvtColor + resize + convertTo + (x - mean) / std + split.
std::vector<cv::Mat> opencv_chain(const NeatTensor& nv12, int ow, int oh, int interp,
                                  const PreprocessParams& p) {
  auto m = nv12.map();
  const PlaneLayout& yl = nv12.plane_layout(0);
  const PlaneLayout& cl = nv12.plane_layout(1);
  cv::Mat y(static_cast<int>(yl.rows), static_cast<int>(yl.cols), CV_8UC1,
            const_cast<std::byte*>(*m->plane_data(PlaneRole::Y)),
            static_cast<size_t>(yl.row_stride));
  cv::Mat uv(static_cast<int>(cl.rows), static_cast<int>(cl.cols), CV_8UC2,
             const_cast<std::byte*>(*m->plane_data(PlaneRole::UV)),
             static_cast<size_t>(cl.row_stride));
  cv::Mat rgb, small, f;
  cv::cvtColorTwoPlane(y, uv, rgb, cv::COLOR_YUV2RGB_NV12);
  cv::resize(rgb, small, cv::Size(ow, oh), 0, 0, interp);
  small.convertTo(f, CV_32F, p.scale);
  cv::subtract(f, cv::Scalar(p.mean[0], p.mean[1], p.mean[2]), f);
  cv::divide(f, cv::Scalar(p.std[0], p.std[1], p.std[2]), f);
  std::vector<cv::Mat> planes;
  cv::split(f, planes);
  return planes;
}

TEST(Layout, HwcToChwAndBackWithAndWithoutBatch) {
  cv::Mat m(5, 7, CV_8UC3);
  cv::randu(m, 0, 256);
  const NeatTensor rgb = from_mat(m, PixelFormat::RGB);
  auto chw = to_chw(rgb, {.threads = 2});
  ASSERT_TRUE(chw.ok()) << chw.error().message();
  EXPECT_EQ(chw->shape(), (Dims{3, 5, 7}));
  EXPECT_EQ(chw->layout(), Layout::CHW);
  EXPECT_EQ(chw->pixel_format(), PixelFormat::RGB);
  const auto bytes = element_bytes(*chw);
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 5; ++y) {
      for (int x = 0; x < 7; ++x)
        EXPECT_EQ(bytes[static_cast<std::size_t>((c * 5 + y) * 7 + x)], m.at<cv::Vec3b>(y, x)[c]);
    }
  }
  auto back = to_hwc(*chw);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(element_bytes(*back), element_bytes(rgb));
  EXPECT_EQ(to_chw(*chw)->identity(), chw->identity()) << "already CHW: no copy";
  // Batched dense F32 [2, 4, 6, 3] -> [2, 3, 4, 6], from a strided view.
  auto t = NeatTensor::allocate(DType::F32, {2, 4, 12, 3}, {.zero_fill = false});
  auto w = std::move(*t).make_writable();
  testing::fill_pattern(*w, 5, 1);
  auto view = w->slice(2, 0, 12, 2);
  auto nchw = to_chw(*view);
  ASSERT_TRUE(nchw.ok()) << nchw.error().message();
  EXPECT_EQ(nchw->shape(), (Dims{2, 3, 4, 6}));
  EXPECT_EQ(element_bytes(*to_hwc(*nchw)), element_bytes(*view));
}

// A kernel that runs out of memory for its working buffers (or throws
// anything else) fails the call with a typed error that names the operation
// and the frame; nothing escapes a function that returns a Result.
TEST(Kernel, AThrowingKernelIsATypedError) {
  auto src = NeatTensor::allocate(DType::U8, {4, 4});
  ASSERT_TRUE(src.ok());
  const ConversionSpec spec{ConversionKind::Convert, ConversionReason::Normalize, "preprocess", "",
                            ""};
  ConversionOptions options;
  auto dst = NeatTensor::allocate(DType::F32, {4, 4});
  ASSERT_TRUE(dst.ok());
  auto oom =
      run_conversion(*src, std::move(*dst), spec, options, std::source_location::current(),
                     [](const Mapping&, const Mapping&) -> Status { throw std::bad_alloc(); });
  ASSERT_FALSE(oom.ok());
  EXPECT_EQ(oom.error().code(), ErrorCode::ResourceExhausted);
  EXPECT_NE(oom.error().message().find("preprocess of"), std::string::npos)
      << oom.error().message();
  EXPECT_NE(oom.error().message().find("out of memory"), std::string::npos)
      << oom.error().message();
  EXPECT_NE(oom.error().message().find("64 bytes"), std::string::npos) << oom.error().message();

  auto dst2 = NeatTensor::allocate(DType::F32, {4, 4});
  ASSERT_TRUE(dst2.ok());
  auto bug = run_conversion(*src, std::move(*dst2), spec, options, std::source_location::current(),
                            [](const Mapping&, const Mapping&) -> Status {
                              throw std::runtime_error("row 3 out of range");
                            });
  ASSERT_FALSE(bug.ok());
  EXPECT_EQ(bug.error().code(), ErrorCode::Internal);
  EXPECT_NE(bug.error().message().find("row 3 out of range"), std::string::npos)
      << bug.error().message();
}

// A stripe that throws on a pool thread reaches the caller, whichever
// stripe it was, and the other stripes still ran.
TEST(Kernel, AStripeThatThrowsOnAPoolThreadReachesTheCaller) {
  for (const std::int64_t bad : {std::int64_t{0}, std::int64_t{99}}) {
    std::vector<int> done(100, 0);
    bool caught = false;
    try {
      parallel_rows(100, 2, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t r = b; r < e; ++r) {
          if (r == bad) throw std::bad_alloc();
          done[static_cast<std::size_t>(r)] = 1;
        }
      });
    } catch (const std::bad_alloc&) {
      caught = true;
    }
    EXPECT_TRUE(caught) << "row " << bad;
    // The stripe without the bad row ran to its end.
    EXPECT_EQ(done[bad == 0 ? 99 : 0], 1);
  }
}

TEST(Layout, BadInput) {
  NEAT_EXPECT_ERROR(to_chw(NeatTensor()), ErrorCode::FailedPrecondition, "undefined");
  auto v = NeatTensor::allocate(DType::U8, {4, 4});
  NEAT_EXPECT_ERROR(to_chw(*v), ErrorCode::InvalidArgument, "rank 2 is not 3");
  auto nv12 = NeatTensor::allocate_image(PixelFormat::NV12, 4, 4);
  NEAT_EXPECT_ERROR(to_chw(*nv12), ErrorCode::FailedPrecondition, "convert_color() it first");
  auto gray = NeatTensor::allocate_image(PixelFormat::GRAY8, 4, 4, {.layout = Layout::HW});
  NEAT_EXPECT_ERROR(to_chw(*gray), ErrorCode::FailedPrecondition, "the image is HW, not HWC");
}

TEST(Resize, MatchesOpenCvOnRoisPaddedRowsAndPlanes) {
  cv::Mat big(120, 160, CV_8UC3);
  cv::randu(big, 0, 256);
  const cv::Rect roi(10, 20, 100, 60);
  auto img = wrap_mat_image(big, PixelFormat::BGR);
  for (Interpolation in : {Interpolation::Bilinear, Interpolation::Nearest, Interpolation::Area}) {
    const int cv_in = in == Interpolation::Nearest ? cv::INTER_NEAREST
                      : in == Interpolation::Area  ? cv::INTER_AREA
                                                   : cv::INTER_LINEAR;
    cv::Mat ref;
    cv::resize(big(roi), ref, cv::Size(37, 29), 0, 0, cv_in);
    auto out = crop_resize(*img, roi.x, roi.y, roi.width, roi.height, 37, 29, in);
    ASSERT_TRUE(out.ok()) << out.error().message();
    EXPECT_EQ(out->pixel_format(), PixelFormat::BGR);
    EXPECT_EQ(max_abs_diff(to_mat_copy(*out), ref), 0.0);
  }
  // NV12 with padded rows: each plane to its new geometry.
  const NeatTensor frame = testing::random_frame(PixelFormat::NV12, 64, 48, 4, 64);
  auto small = resize(frame, 33, 17);
  ASSERT_TRUE(small.ok()) << small.error().message();
  EXPECT_EQ(small->plane_layout(1).cols, 17);
  EXPECT_EQ(small->plane_layout(1).rows, 9);
  auto y = frame.plane(PlaneRole::Y);
  cv::Mat yref;
  cv::resize(to_mat_copy(*y), yref, cv::Size(33, 17), 0, 0, cv::INTER_LINEAR);
  EXPECT_EQ(max_abs_diff(to_mat_copy(*small->plane(PlaneRole::Y)), yref), 0.0);
  // CHW image: per channel.
  auto chw = to_chw(from_mat(big, PixelFormat::RGB));
  auto rchw = resize(*chw, 40, 30);
  ASSERT_TRUE(rchw.ok()) << rchw.error().message();
  EXPECT_EQ(rchw->shape(), (Dims{3, 30, 40}));
  EXPECT_EQ(element_bytes(*to_hwc(*rchw)),
            element_bytes(*resize(from_mat(big, PixelFormat::RGB), 40, 30)));
}

TEST(Resize, BadInputAndNoOp) {
  auto img = NeatTensor::allocate_image(PixelFormat::RGB, 8, 8);
  NEAT_EXPECT_ERROR(resize(*img, 0, 4), ErrorCode::InvalidArgument, "must be positive");
  NEAT_EXPECT_ERROR(resize(NeatTensor(), 4, 4), ErrorCode::FailedPrecondition, "undefined");
  NEAT_EXPECT_ERROR(resize(*img, 4, 4, static_cast<Interpolation>(9)), ErrorCode::InvalidArgument,
                    "interpolation must be Nearest, Bilinear or Area");
  auto rank4 = NeatTensor::allocate(DType::U8, {1, 2, 2, 3});
  NEAT_EXPECT_ERROR(resize(*rank4, 4, 4), ErrorCode::InvalidArgument, "dense [H, W]");
  auto i64 = NeatTensor::allocate(DType::I64, {4, 4});
  NEAT_EXPECT_ERROR(resize(*i64, 2, 2), ErrorCode::InvalidArgument, "no OpenCV equivalent");
  EXPECT_EQ(resize(*img, 8, 8)->identity(), img->identity());
  NEAT_EXPECT_ERROR(crop_resize(*img, 6, 0, 4, 4, 2, 2), ErrorCode::OutOfRange, "not inside");
  auto nv12 = NeatTensor::allocate_image(PixelFormat::NV12, 8, 8);
  NEAT_EXPECT_ERROR(crop_resize(*nv12, 1, 0, 4, 4, 2, 2), ErrorCode::InvalidArgument,
                    "even coordinates");
  auto same = crop_resize(*img, 0, 0, 4, 4, 4, 4);
  ASSERT_TRUE(same.ok());
  EXPECT_NE(same->identity(), img->identity()) << "a new image even when no scaling is needed";
}

TEST(Normalize, MatchesTheFormulaInEveryLayoutAndDtype) {
  cv::Mat m(6, 5, CV_8UC3);
  cv::randu(m, 0, 256);
  const NeatTensor rgb = from_mat(m, PixelFormat::RGB);
  NormalizeParams p;
  p.scale = 1.f / 255.f;
  p.mean = {0.485f, 0.456f, 0.406f, 0.f};
  p.std = {0.229f, 0.224f, 0.225f, 1.f};
  for (Layout out_layout : {Layout::CHW, Layout::HWC}) {
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
      p.out_layout = out_layout;
      p.out_dtype = dt;
      auto n = normalize(rgb, p, {.threads = 2});
      ASSERT_TRUE(n.ok()) << n.error().message();
      EXPECT_EQ(n->dtype(), dt);
      const auto v = floats(*n);
      const float tol = dt == DType::F32 ? 1e-5f : (dt == DType::F16 ? 4e-3f : 3e-2f);
      for (int y = 0; y < 6; ++y) {
        for (int x = 0; x < 5; ++x) {
          for (int c = 0; c < 3; ++c) {
            const float want =
                (m.at<cv::Vec3b>(y, x)[c] / 255.f - p.mean[static_cast<std::size_t>(c)]) /
                p.std[static_cast<std::size_t>(c)];
            const int idx = out_layout == Layout::CHW ? (c * 6 + y) * 5 + x : (y * 5 + x) * 3 + c;
            ASSERT_NEAR(v[static_cast<std::size_t>(idx)], want,
                        tol * std::max(1.f, std::abs(want)));
          }
        }
      }
    }
  }
}

TEST(Normalize, InPlaceWhenDonatedCopiesOtherwise) {
  auto sink = std::make_shared<MemorySink>();
  auto reg = add_event_sink(sink);
  auto t = NeatTensor::allocate(DType::F32, {4, 4, 3});
  auto w = std::move(*t).make_writable();
  testing::fill_pattern(*w, 0, 0);
  const auto id = w->identity();
  NormalizeParams p;
  p.out_layout = Layout::HWC;
  p.mean = {1.f, 2.f, 3.f, 0.f};
  auto n = normalize(std::move(*w), p);
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(n->identity(), id) << "donated: normalized in place";
  EXPECT_EQ(sink->size(), 0u) << "no copy, no event";
  EXPECT_EQ(floats(*n)[2], -3.f);
  // Shared input: a new buffer, recorded.
  NeatTensor keep = *n;
  auto n2 = normalize(*n, p);
  EXPECT_NE(n2->identity(), id);
  ASSERT_EQ(sink->size(), 1u);
  EXPECT_EQ(sink->events()[0].event.reason, ConversionReason::Normalize);
  // MustDonate that cannot be honoured: Strict error, loud event otherwise.
  p.donation = Donation::MustDonate;
  NEAT_EXPECT_ERROR(normalize(*n, p, {.policy = ConversionPolicy::Strict}),
                    ErrorCode::FailedPrecondition, "donation_refused");
  auto loud = normalize(*n, p, {.policy = ConversionPolicy::AllowSilent});
  ASSERT_TRUE(loud.ok());
  ASSERT_EQ(sink->size(), 2u);
  EXPECT_TRUE(sink->events()[1].event.loud);
}

TEST(Normalize, BadInput) {
  auto t = NeatTensor::allocate(DType::U8, {4, 4, 3});
  NormalizeParams p;
  p.std[1] = 0.f;
  NEAT_EXPECT_ERROR(normalize(*t, p), ErrorCode::InvalidArgument, "channel 1 has std 0");
  p = {};
  p.out_dtype = DType::I32;
  NEAT_EXPECT_ERROR(normalize(*t, p), ErrorCode::InvalidArgument, "must be f32, f16 or bf16");
  p = {};
  p.out_layout = Layout::HW;
  NEAT_EXPECT_ERROR(normalize(*t, p), ErrorCode::InvalidArgument, "CHW or HWC");
  auto five = NeatTensor::allocate(DType::U8, {4, 4, 5});
  NEAT_EXPECT_ERROR(normalize(*five, {}), ErrorCode::InvalidArgument, "at most 4");
  auto i32 = NeatTensor::allocate(DType::I32, {4, 4, 3});
  NEAT_EXPECT_ERROR(normalize(*i32, {}), ErrorCode::InvalidArgument, "input dtype i32");
  NEAT_EXPECT_ERROR(normalize(NeatTensor(), {}), ErrorCode::FailedPrecondition, "undefined");
  auto nv12 = NeatTensor::allocate_image(PixelFormat::NV12, 4, 4);
  NEAT_EXPECT_ERROR(normalize(*nv12, {}), ErrorCode::FailedPrecondition, "preprocess()");
}

PreprocessParams imagenet() {
  PreprocessParams p;
  p.mean = {0.485f, 0.456f, 0.406f};
  p.std = {0.229f, 0.224f, 0.225f};
  return p;
}

// Difference in 8-bit levels between our output and the chain's, per element.
std::vector<float> level_diffs(const NeatTensor& ours, const std::vector<cv::Mat>& chain,
                               const PreprocessParams& p, int ow, int oh) {
  const auto v = floats(ours);
  std::vector<float> d;
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < oh; ++y) {
      for (int x = 0; x < ow; ++x) {
        const float a = v[static_cast<std::size_t>((c * oh + y) * ow + x)];
        const float b = chain[static_cast<std::size_t>(c)].at<float>(y, x);
        d.push_back(std::abs(a - b) * p.std[static_cast<std::size_t>(c)] / p.scale);
      }
    }
  }
  return d;
}

TEST(Preprocess, BilinearMatchesTheUnfusedChainWithinTheDocumentedTolerance) {
  const NeatTensor frame = camera_like_nv12(1280, 720);
  const PreprocessParams p = imagenet();
  auto ours = preprocess(frame, p, {.threads = 2});
  ASSERT_TRUE(ours.ok()) << ours.error().message();
  EXPECT_EQ(ours->shape(), (Dims{3, 640, 640}));
  auto d = level_diffs(*ours, opencv_chain(frame, 640, 640, cv::INTER_LINEAR, p), p, 640, 640);
  std::sort(d.begin(), d.end());
  double mean = 0;
  for (float x : d)
    mean += x;
  mean /= static_cast<double>(d.size());
  const float p999 = d[d.size() * 999 / 1000];
  std::printf("preprocess vs chain (8-bit levels): mean %.3f, p99.9 %.2f, max %.2f\n", mean, p999,
              d.back());
  EXPECT_LT(mean, 0.5);
  EXPECT_LE(p999, 3.0f);
  EXPECT_LE(d.back(), 64.0f) << "only gamut-clipped edges may differ more";
}

// The same pixels as I420 (a packed NV12 frame's UV plane split), the same
// colour standard.
NeatTensor i420_of(const NeatTensor& nv12) {
  const std::int64_t w = nv12.image().width, h = nv12.image().height;
  auto i420 = NeatTensor::allocate_image(PixelFormat::I420, w, h);
  auto wr = std::move(*i420).make_writable();
  auto src = nv12.map();
  auto dst = wr->map(MapMode::Write);
  std::memcpy(*dst->mutable_plane_data(PlaneRole::Y), *src->plane_data(PlaneRole::Y),
              static_cast<std::size_t>(w * h));
  const std::byte* uv = *src->plane_data(PlaneRole::UV);
  for (std::int64_t i = 0; i < ((w + 1) / 2) * ((h + 1) / 2); ++i) {
    (*dst->mutable_plane_data(PlaneRole::U))[i] = uv[2 * i];
    (*dst->mutable_plane_data(PlaneRole::V))[i] = uv[2 * i + 1];
  }
  dst = Result<Mapping>(internal_error("released"));
  return *std::move(wr)->with_colorimetry(nv12.image().colorimetry);  // not assumed by size
}

TEST(Preprocess, NearestEqualsTheChainOnEveryFormatAndLayout) {
  const NeatTensor frame = camera_like_nv12(322, 242);
  PreprocessParams p = imagenet();
  p.interpolation = Interpolation::Nearest;
  p.width = 160;
  p.height = 96;
  const auto chain = opencv_chain(frame, 160, 96, cv::INTER_NEAREST, p);
  // NV12 as is, in separate padded storages, and as I420.
  std::vector<NeatTensor> inputs = {frame, testing::split_planes(frame, 9), i420_of(frame)};
  for (const NeatTensor& in : inputs) {
    auto ours = preprocess(in, p);
    ASSERT_TRUE(ours.ok()) << ours.error().message();
    auto d = level_diffs(*ours, chain, p, 160, 96);
    EXPECT_LT(*std::max_element(d.begin(), d.end()), 1e-3f) << in.to_string();
  }
  // BGR order swaps the planes; batch adds a leading 1; F16 / BF16 round the same values.
  p.channel_order = PixelFormat::BGR;
  p.batch_dim = true;
  p.out_dtype = DType::BF16;
  auto bgr = preprocess(frame, p);
  ASSERT_TRUE(bgr.ok());
  EXPECT_EQ(bgr->shape(), (Dims{1, 3, 96, 160}));
  const auto v = floats(*bgr);
  // mean / std index the output channels: plane 0 is B, normalized with mean[0], std[0].
  const float b01 = chain[2].at<float>(0, 0) * p.std[2] + p.mean[2];  // B / 255
  const float want_b0 = (b01 - p.mean[0]) / p.std[0];
  EXPECT_NEAR(v[0], want_b0, 0.02f * std::max(1.f, std::abs(want_b0)));
}

// Nearest at every kind of ratio (16-byte blocks, gathers or permutes,
// integer ratios across picked without tables: 2, 3, 4, 6, 12; enlarging):
// the chain's values, whichever path runs, NV12 and I420.
TEST(Preprocess, NearestEqualsTheChainAtEveryRatio) {
  const NeatTensor frame = camera_like_nv12(1920, 1080);
  const NeatTensor planar = i420_of(frame);
  for (int size : {160, 320, 416, 480, 640, 960, 1280}) {
    PreprocessParams p = imagenet();
    p.interpolation = Interpolation::Nearest;
    p.width = size;
    p.height = size * 9 / 16 + 1;  // a ratio down that is not whole
    const auto chain = opencv_chain(frame, p.width, p.height, cv::INTER_NEAREST, p);
    for (const NeatTensor* in : {&frame, &planar}) {
      auto ours = preprocess(*in, p, {.threads = 2});
      ASSERT_TRUE(ours.ok()) << ours.error().message();
      auto d = level_diffs(*ours, chain, p, p.width, p.height);
      EXPECT_LT(*std::max_element(d.begin(), d.end()), 1e-3f) << size << " " << in->to_string();
    }
  }
}

// Nearest where each vector of 16 outputs reads at most 64 bytes (one load
// and one permute a vector on VBMI): every 16 outputs repeating the first
// 16's picks a whole number of samples on (2.5x, 3.75x, 1.25x across), or
// not (the span tables: 3.08x, 2.1x, 3.16x), with and without a tail of
// outputs, stretched and letterboxed: the chain's values, NV12 and I420, one
// thread and two.
TEST(Preprocess, NearestEqualsTheChainWhereAVectorsPicksLieIn64Bytes) {
  struct Shape {
    int sw, sh, ow, oh;
  };
  for (const Shape& sh :
       {Shape{1280, 720, 512, 288}, Shape{1290, 724, 516, 301}, Shape{1920, 1080, 512, 288},
        Shape{1920, 1080, 1536, 864}, Shape{1280, 720, 1024, 500}, Shape{1280, 720, 416, 234},
        Shape{1282, 722, 417, 301}, Shape{1282, 722, 417, 234}, Shape{1280, 720, 608, 342},
        Shape{1920, 1080, 608, 342}}) {
    const NeatTensor frame = camera_like_nv12(sh.sw, sh.sh);
    const NeatTensor planar = i420_of(frame);
    PreprocessParams p = imagenet();
    p.interpolation = Interpolation::Nearest;
    p.width = sh.ow;
    p.height = sh.oh;
    const auto chain = opencv_chain(frame, sh.ow, sh.oh, cv::INTER_NEAREST, p);
    for (const NeatTensor* in : {&frame, &planar}) {
      for (int threads : {1, 2}) {
        auto ours = preprocess(*in, p, {.threads = threads});
        ASSERT_TRUE(ours.ok()) << ours.error().message();
        auto d = level_diffs(*ours, chain, p, sh.ow, sh.oh);
        EXPECT_LT(*std::max_element(d.begin(), d.end()), 1e-3f)
            << sh.sw << "x" << sh.sh << " -> " << sh.ow << "x" << sh.oh << " " << in->to_string()
            << ", threads " << threads;
      }
    }
  }
  // Letterboxed: 720p into 512 (a box of 512 x 288, bars above and below).
  const NeatTensor frame = camera_like_nv12(1280, 720);
  PreprocessParams p = imagenet();
  p.interpolation = Interpolation::Nearest;
  p.resize_mode = ResizeMode::Letterbox;
  p.width = p.height = 512;
  const LetterboxBox box = letterbox_box(1280, 720, 512, 512);
  ASSERT_EQ(box.width, 512);
  const auto chain = opencv_chain(frame, 512, static_cast<int>(box.height), cv::INTER_NEAREST, p);
  for (const NeatTensor& in : {frame, i420_of(frame)}) {
    auto ours = preprocess(in, p);
    ASSERT_TRUE(ours.ok()) << ours.error().message();
    const auto v = floats(*ours);
    float worst = 0;
    for (int c = 0; c < 3; ++c) {
      for (std::int64_t y = 0; y < box.height; ++y) {
        for (int x = 0; x < 512; ++x) {
          const float got = v[static_cast<std::size_t>((c * 512 + box.y + y) * 512 + x)];
          worst = std::max(worst, std::abs(got - chain[static_cast<std::size_t>(c)].at<float>(
                                                     static_cast<int>(y), x)));
        }
      }
    }
    EXPECT_LE(worst, 1e-4f) << in.to_string();
  }
}

// Nearest letterboxed from a sw x sh frame into out x out, NV12 and I420,
// F32 and F16, on `threads`: the chain's values in the box, the pad in the
// bars.
struct NearestShape {
  int sw, sh, out;
};
void ExpectNearestLetterboxIsTheChain(const NearestShape& sh, int threads) {
  const NeatTensor frame = camera_like_nv12(sh.sw, sh.sh);
  const NeatTensor planar = i420_of(frame);
  PreprocessParams p = imagenet();
  p.interpolation = Interpolation::Nearest;
  p.resize_mode = ResizeMode::Letterbox;
  p.width = p.height = sh.out;
  const LetterboxBox box = letterbox_box(sh.sw, sh.sh, sh.out, sh.out);
  const auto chain = opencv_chain(frame, static_cast<int>(box.width), static_cast<int>(box.height),
                                  cv::INTER_NEAREST, p);
  for (DType dt : {DType::F32, DType::F16}) {
    p.out_dtype = dt;
    for (const NeatTensor* in : {&frame, &planar}) {
      auto ours = preprocess(*in, p, {.threads = threads});
      ASSERT_TRUE(ours.ok()) << ours.error().message();
      const auto v = floats(*ours);
      // F16 keeps 11 significant bits: values up to about 2.6 within 2^-9.
      const float tol = dt == DType::F32 ? 1e-4f : 4e-3f;
      float worst = 0, worst_bar = 0;
      for (int c = 0; c < 3; ++c) {
        const float pad = (p.pad_value * p.scale - p.mean[static_cast<std::size_t>(c)]) /
                          p.std[static_cast<std::size_t>(c)];
        for (std::int64_t y = 0; y < sh.out; ++y) {
          for (std::int64_t x = 0; x < sh.out; ++x) {
            const float got = v[static_cast<std::size_t>((c * sh.out + y) * sh.out + x)];
            const bool inside =
                x >= box.x && x < box.x + box.width && y >= box.y && y < box.y + box.height;
            if (inside) {
              const float want = chain[static_cast<std::size_t>(c)].at<float>(
                  static_cast<int>(y - box.y), static_cast<int>(x - box.x));
              worst = std::max(worst, std::abs(got - want));
            } else {
              worst_bar = std::max(worst_bar, std::abs(got - pad));
            }
          }
        }
      }
      EXPECT_LE(worst, tol) << sh.sw << "x" << sh.sh << " -> " << sh.out << " " << in->to_string()
                            << " " << to_string(dt);
      EXPECT_LE(worst_bar, tol) << sh.sw << "x" << sh.sh << " -> " << sh.out;
    }
  }
}

// Content at odd offsets and widths (bars on the left and right, outputs
// that end mid-vector). The picks k apart (2, 4, 6), in a pattern (1.5x, 3x)
// and by tables.
TEST(Preprocess, NearestLetterboxedEqualsTheChainInItsBoxAndPadsTheBars) {
  for (const NearestShape& sh :
       {NearestShape{1080, 1920, 480}, NearestShape{966, 1920, 640}, NearestShape{1086, 1920, 320},
        NearestShape{720, 1280, 854}, NearestShape{962, 1920, 960}, NearestShape{322, 640, 640},
        NearestShape{1000, 1920, 416}}) {
    ASSERT_GT(letterbox_box(sh.sw, sh.sh, sh.out, sh.out).x, 0);
    ExpectNearestLetterboxIsTheChain(sh, 2);
  }
}

// Content as wide as the frame (bars above and below): luma picked 1 apart,
// chroma's pairs in a pattern whose row's last vectors load masked to the
// row (PatternPicksOf), widths that end mid-vector; one thread and two.
TEST(Preprocess, NearestAsWideAsTheFrameEqualsTheChain) {
  for (const NearestShape& sh : {NearestShape{1280, 720, 1280}, NearestShape{1000, 562, 1000},
                                 NearestShape{202, 100, 202}, NearestShape{640, 480, 640}}) {
    ASSERT_EQ(letterbox_box(sh.sw, sh.sh, sh.out, sh.out).width, sh.sw);
    for (int threads : {1, 2})
      ExpectNearestLetterboxIsTheChain(sh, threads);
  }
}

TEST(Preprocess, IsOneExplicitConvertEvent) {
  auto sink = std::make_shared<MemorySink>();
  auto reg = add_event_sink(sink);
  const NeatTensor frame = testing::random_frame(PixelFormat::I420, 65, 33, 2, 32);
  auto out = preprocess(frame, imagenet());
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(sink->size(), 1u);
  const auto e = sink->events()[0];
  EXPECT_EQ(e.operation, "preprocess");
  EXPECT_EQ(e.event.kind, ConversionKind::Convert);
  EXPECT_EQ(e.event.bytes_written, 3 * 640 * 640 * 4);
  EXPECT_EQ(e.event.source.format, PixelFormat::I420);
}

TEST(Preprocess, BadInput) {
  auto rgb = NeatTensor::allocate_image(PixelFormat::RGB, 8, 8);
  NEAT_EXPECT_ERROR(preprocess(*rgb, {}), ErrorCode::InvalidArgument, "needs a planar frame");
  auto nv12 = NeatTensor::allocate_image(PixelFormat::NV12, 8, 8);
  PreprocessParams p;
  p.width = 0;
  NEAT_EXPECT_ERROR(preprocess(*nv12, p), ErrorCode::InvalidArgument, "must be positive");
  p = {};
  p.channel_order = PixelFormat::RGBA;
  NEAT_EXPECT_ERROR(preprocess(*nv12, p), ErrorCode::InvalidArgument, "RGB or BGR");
  p = {};
  p.out_dtype = DType::U8;
  NEAT_EXPECT_ERROR(preprocess(*nv12, p), ErrorCode::InvalidArgument, "f32, f16 or bf16");
  p = {};
  p.std = {1.f, std::nanf(""), 1.f};
  NEAT_EXPECT_ERROR(preprocess(*nv12, p), ErrorCode::InvalidArgument, "finite and non-zero");
  auto empty = NeatTensor::allocate_image(PixelFormat::NV12, 0, 0);
  NEAT_EXPECT_ERROR(preprocess(*empty, {}), ErrorCode::InvalidArgument, "empty");
  NEAT_EXPECT_ERROR(preprocess(NeatTensor(), {}), ErrorCode::FailedPrecondition, "undefined");
  p = {};
  p.pad_value = 300.f;
  NEAT_EXPECT_ERROR(preprocess(*nv12, p), ErrorCode::InvalidArgument, "pad_value");
  p.pad_value = std::nanf("");
  NEAT_EXPECT_ERROR(preprocess(*nv12, p), ErrorCode::InvalidArgument, "pad_value");
  p = {};
  p.resize_mode = static_cast<ResizeMode>(7);
  NEAT_EXPECT_ERROR(preprocess(*nv12, p), ErrorCode::InvalidArgument, "resize_mode");
  p = {};
  p.interpolation = static_cast<Interpolation>(9);
  NEAT_EXPECT_ERROR(preprocess(*nv12, p), ErrorCode::InvalidArgument,
                    "interpolation must be Nearest, Bilinear or Area");
  p = {};
  p.stores = static_cast<StoreMode>(3);
  NEAT_EXPECT_ERROR(preprocess(*nv12, p), ErrorCode::InvalidArgument,
                    "stores must be Auto, Cached or Streamed, not 3");
}

TEST(Preprocess, LetterboxBoxKeepsTheAspectAndCentres) {
  const LetterboxBox wide = letterbox_box(1920, 1080, 640, 640);
  EXPECT_EQ(wide.width, 640);
  EXPECT_EQ(wide.height, 360);
  EXPECT_EQ(wide.x, 0);
  EXPECT_EQ(wide.y, 140);
  const LetterboxBox tall = letterbox_box(480, 640, 640, 640);
  EXPECT_EQ(tall.width, 480);
  EXPECT_EQ(tall.height, 640);
  EXPECT_EQ(tall.x, 80);
  EXPECT_EQ(tall.y, 0);
  const LetterboxBox thin = letterbox_box(10000, 2, 640, 640);  // content at least one pixel
  EXPECT_EQ(thin.height, 1);
  EXPECT_EQ(letterbox_box(0, 10, 640, 640).width, 0);
}

// Letterboxed output = the stretched preprocess of the content box, surrounded
// by the normalized pad value; the geometry maps the box back onto the frame.
TEST(Preprocess, LetterboxPadsAroundTheScaledFrameAndMapsBack) {
  for (const auto& [w, h] : {std::pair{1280, 720}, std::pair{480, 640}, std::pair{1001, 333}}) {
    const NeatTensor frame = camera_like_nv12(w & ~1, h & ~1);
    const std::int64_t fw = frame.image().width, fh = frame.image().height;
    PreprocessParams p = imagenet();
    p.resize_mode = ResizeMode::Letterbox;
    p.pad_value = 114.f;
    auto boxed = preprocess(frame, p, {.threads = 2});
    ASSERT_TRUE(boxed.ok()) << boxed.error().message();
    const LetterboxBox box = letterbox_box(fw, fh, 640, 640);
    PreprocessParams q = imagenet();
    q.width = box.width;
    q.height = box.height;
    auto content = preprocess(frame, q);
    NEAT_ASSERT_OK(content);
    const auto a = floats(*boxed);
    const auto b = floats(*content);
    int bad_pad = 0, bad_content = 0;
    for (int c = 0; c < 3; ++c) {
      const float pad = (114.f / 255.f - p.mean[static_cast<std::size_t>(c)]) /
                        p.std[static_cast<std::size_t>(c)];
      for (std::int64_t y = 0; y < 640; ++y) {
        for (std::int64_t x = 0; x < 640; ++x) {
          const float v = a[static_cast<std::size_t>((c * 640 + y) * 640 + x)];
          const bool inside =
              x >= box.x && x < box.x + box.width && y >= box.y && y < box.y + box.height;
          if (!inside) {
            bad_pad += std::abs(v - pad) > 1e-5f;
          } else {
            const float r = b[static_cast<std::size_t>((c * box.height + (y - box.y)) * box.width +
                                                       (x - box.x))];
            bad_content += std::abs(v - r) > 1e-5f;
          }
        }
      }
    }
    EXPECT_EQ(bad_pad, 0) << w << "x" << h;
    EXPECT_EQ(bad_content, 0) << w << "x" << h;
    const FrameGeometry& g = boxed->meta().geometry;
    EXPECT_EQ(g.source_width, fw);
    EXPECT_EQ(g.source_height, fh);
    const auto tl = g.to_source(static_cast<double>(box.x), static_cast<double>(box.y));
    const auto br = g.to_source(static_cast<double>(box.x + box.width),
                                static_cast<double>(box.y + box.height));
    EXPECT_NEAR(tl.x, 0, 1e-9);
    EXPECT_NEAR(tl.y, 0, 1e-9);
    EXPECT_NEAR(br.x, static_cast<double>(fw), 1e-9);
    EXPECT_NEAR(br.y, static_cast<double>(fh), 1e-9);
  }
}

TEST(Preprocess, StretchAndResizeRecordTheirScaleAndKeepTimestamps) {
  NeatTensor frame = camera_like_nv12(1280, 720);
  FrameMeta m;
  m.frame = 7;
  m.pts_ns = 123;
  frame.set_meta(m);
  auto out = preprocess(frame, {});
  NEAT_ASSERT_OK(out);
  EXPECT_EQ(out->meta().frame, 7);
  EXPECT_EQ(out->meta().pts_ns, 123);
  EXPECT_DOUBLE_EQ(out->meta().geometry.to_source(640, 640).x, 1280);
  EXPECT_DOUBLE_EQ(out->meta().geometry.to_source(640, 640).y, 720);
  auto small = resize(frame, 320, 180);
  NEAT_ASSERT_OK(small);
  EXPECT_EQ(small->meta().pts_ns, 123);
  EXPECT_DOUBLE_EQ(small->meta().geometry.to_source(320, 180).x, 1280);
  auto rgb = convert_color(*small, PixelFormat::RGB);
  NEAT_ASSERT_OK(rgb);
  EXPECT_EQ(rgb->meta(), small->meta());
}

}  // namespace
}  // namespace neat

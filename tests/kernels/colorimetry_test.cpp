// Colour standards: every YUV -> RGB path (convert_color, preprocess, the
// GStreamer wrap and caps) follows the frame's colorimetry, for each matrix
// (BT.601, BT.709, BT.2020) and range (limited, full); unknown colorimetry is
// resolved by GStreamer's rule and the event says so; accuracy against the
// exact formulas of each standard and against GStreamer's videoconvert.
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <opencv2/imgproc.hpp>
#include <random>

#include "neat/kernels/color.hpp"
#include "neat/kernels/preprocess.hpp"
#include "neat/kernels/resize.hpp"
#include "neat/kernels/yuv_matrix.hpp"
#include "neat/neat.hpp"
#include "neat/storage/gstreamer.hpp"
#include "support/fakes.hpp"
#include "support/images.hpp"

namespace neat {
namespace {

using testing::random_frame;

constexpr std::array<Colorimetry, 6> kAll = {
    Colorimetry{YuvMatrix::BT601, ColorRange::Limited},
    Colorimetry{YuvMatrix::BT601, ColorRange::Full},
    Colorimetry{YuvMatrix::BT709, ColorRange::Limited},
    Colorimetry{YuvMatrix::BT709, ColorRange::Full},
    Colorimetry{YuvMatrix::BT2020, ColorRange::Limited},
    Colorimetry{YuvMatrix::BT2020, ColorRange::Full},
};

struct Rgb8 {
  int r, g, b;
};
struct Yuv8 {
  int y, u, v;
};

// The exact encoding of an 8-bit RGB colour in a standard (ITU-R formulas, no
// rounding shortcuts): the reference the decoders are held to.
Yuv8 encode(Rgb8 c, Colorimetry s) {
  double kr = 0.299, kb = 0.114;
  if (s.matrix == YuvMatrix::BT709) kr = 0.2126, kb = 0.0722;
  if (s.matrix == YuvMatrix::BT2020) kr = 0.2627, kb = 0.0593;
  const double r = c.r / 255.0, g = c.g / 255.0, b = c.b / 255.0;
  const double y = kr * r + (1 - kr - kb) * g + kb * b;
  const double pb = (b - y) / (2 * (1 - kb)), pr = (r - y) / (2 * (1 - kr));
  const bool limited = s.range == ColorRange::Limited;
  auto q = [](double v) { return static_cast<int>(std::clamp(std::lround(v), 0L, 255L)); };
  return limited ? Yuv8{q(16 + 219 * y), q(128 + 224 * pb), q(128 + 224 * pr)}
                 : Yuv8{q(255 * y), q(128 + 255 * pb), q(128 + 255 * pr)};
}

// A flat frame of one YUV value in `format`, tagged with `s` (or untagged).
NeatTensor flat_frame(PixelFormat format, std::int64_t w, std::int64_t h, Yuv8 v,
                      std::optional<Colorimetry> s) {
  auto f = NeatTensor::allocate_image(format, w, h);
  EXPECT_TRUE(f.ok());
  auto wr = std::move(*f).make_writable();
  {
    auto m = wr->map(MapMode::Write);
    for (int i = 0; i < wr->plane_count(); ++i) {
      const PlaneLayout& p = wr->plane_layout(i);
      std::byte* base = *m->mutable_plane_data(p.role);
      for (std::int64_t r = 0; r < p.rows; ++r) {
        auto* row = reinterpret_cast<std::uint8_t*>(base + r * p.row_stride);
        for (std::int64_t x = 0; x < p.cols; ++x) {
          switch (p.role) {
            case PlaneRole::Y:
              row[x] = static_cast<std::uint8_t>(v.y);
              break;
            case PlaneRole::U:
              row[x] = static_cast<std::uint8_t>(v.u);
              break;
            case PlaneRole::V:
              row[x] = static_cast<std::uint8_t>(v.v);
              break;
            case PlaneRole::UV:
              row[2 * x] = static_cast<std::uint8_t>(v.u);
              row[2 * x + 1] = static_cast<std::uint8_t>(v.v);
              break;
            case PlaneRole::VU:
              row[2 * x] = static_cast<std::uint8_t>(v.v);
              row[2 * x + 1] = static_cast<std::uint8_t>(v.u);
              break;
          }
        }
      }
    }
  }
  NeatTensor t = *std::move(wr);
  if (s) return *t.with_colorimetry(*s);
  return t;
}

std::vector<Rgb8> test_colours() {
  std::vector<Rgb8> c = {{0, 0, 0},       {255, 255, 255}, {255, 0, 0},   {0, 255, 0},
                         {0, 0, 255},     {255, 255, 0},   {0, 255, 255}, {255, 0, 255},
                         {128, 128, 128}, {16, 200, 90}};
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> d(0, 255);
  for (int i = 0; i < 24; ++i)
    c.push_back({d(rng), d(rng), d(rng)});
  return c;
}

Rgb8 pixel(const NeatTensor& rgb, std::int64_t x, std::int64_t y) {
  auto m = rgb.map();
  const auto* p = reinterpret_cast<const std::uint8_t*>(m->data()) + y * rgb.strides()[0] + x * 3;
  return {p[0], p[1], p[2]};
}

std::string name(Colorimetry s) {
  return to_string(s);
}

TEST(Colorimetry, VocabularyParsesPrintsAndResolves) {
  EXPECT_EQ(to_string(Colorimetry{}), "unknown");
  EXPECT_EQ(to_string(kBT709Limited), "bt709 limited");
  EXPECT_EQ(to_string(Colorimetry{YuvMatrix::BT2020, ColorRange::Unknown}),
            "bt2020 (range unknown)");
  EXPECT_EQ(parse_colorimetry("bt709"), kBT709Limited);
  EXPECT_EQ(parse_colorimetry("bt601-full"), (Colorimetry{YuvMatrix::BT601, ColorRange::Full}));
  EXPECT_EQ(parse_colorimetry("jpeg"), (Colorimetry{YuvMatrix::BT601, ColorRange::Full}));
  EXPECT_EQ(parse_colorimetry("bt2020-limited"), kBT2020Limited);
  EXPECT_FALSE(parse_colorimetry("bt.709"));
  EXPECT_FALSE(parse_colorimetry(""));
  EXPECT_FALSE(parse_colorimetry("-full"));
  // GStreamer 1.22's default: by height only.
  EXPECT_EQ(default_colorimetry(720, 576), kBT601Limited);
  EXPECT_EQ(default_colorimetry(720, 577), kBT709Limited);
  EXPECT_EQ(default_colorimetry(3840, 2160), kBT709Limited);
  bool assumed = false;
  EXPECT_EQ(choose_colorimetry({}, {YuvMatrix::BT2020, ColorRange::Unknown}, 640, 480, &assumed),
            kBT2020Limited);
  EXPECT_TRUE(assumed);
  EXPECT_EQ(choose_colorimetry({YuvMatrix::BT601, ColorRange::Unknown},
                               {YuvMatrix::BT709, ColorRange::Full}, 1920, 1080, &assumed),
            (Colorimetry{YuvMatrix::BT601, ColorRange::Full}));
  EXPECT_FALSE(assumed);
}

TEST(Colorimetry, TravelsWithTheFrameThroughViewsAndCopies) {
  const Colorimetry full709{YuvMatrix::BT709, ColorRange::Full};
  NeatTensor f = *random_frame(PixelFormat::NV12, 64, 48, 1).with_colorimetry(full709);
  EXPECT_EQ(f.image().colorimetry, full709);
  EXPECT_EQ(f.crop(2, 2, 32, 16)->image().colorimetry, full709);
  EXPECT_EQ(f.clone()->image().colorimetry, full709);
  EXPECT_EQ(resize(f, 32, 24)->image().colorimetry, full709);
  EXPECT_NE(to_string(f.image()).find("bt709 full"), std::string::npos);
  auto dense = NeatTensor::allocate(DType::U8, {4, 4});
  auto refused = dense->with_colorimetry(full709);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::FailedPrecondition);
  EXPECT_NE(refused.error().message().find("only images"), std::string::npos);
  EXPECT_FALSE(NeatTensor().with_colorimetry(full709).ok());
}

// Each matrix x range x 4:2:0 format, packed (OpenCV's path for BT.601
// limited) and odd-sized (our kernel): a flat frame encoded from a known
// colour decodes to it within 2 levels per channel.
TEST(Colorimetry, ConvertColorDecodesFlatFramesToTheirColourInEveryStandard) {
  int worst = 0;
  for (PixelFormat f :
       {PixelFormat::NV12, PixelFormat::NV21, PixelFormat::I420, PixelFormat::YV12}) {
    for (Colorimetry s : kAll) {
      for (auto [w, h] : {std::pair<int, int>{64, 48}, {63, 47}}) {
        for (Rgb8 c : test_colours()) {
          const NeatTensor frame = flat_frame(f, w, h, encode(c, s), s);
          for (PixelFormat to : {PixelFormat::RGB, PixelFormat::BGR}) {
            auto out = convert_color(frame, to);
            ASSERT_TRUE(out.ok()) << out.error().message();
            Rgb8 got = pixel(*out, w / 2, h - 1);
            if (to == PixelFormat::BGR) std::swap(got.r, got.b);
            const int err =
                std::max({std::abs(got.r - c.r), std::abs(got.g - c.g), std::abs(got.b - c.b)});
            worst = std::max(worst, err);
            ASSERT_LE(err, 2) << to_string(f) << " " << name(s) << " " << w << "x" << h
                              << " colour " << c.r << "," << c.g << "," << c.b << " -> " << got.r
                              << "," << got.g << "," << got.b;
          }
        }
      }
    }
  }
  std::printf("convert_color: flat frames, worst channel error %d level(s)\n", worst);
}

TEST(Colorimetry, PreprocessDecodesFlatFramesToTheirColourInEveryStandard) {
  for (PixelFormat f : {PixelFormat::NV12, PixelFormat::I420}) {
    for (Colorimetry s : kAll) {
      for (Interpolation interp : {Interpolation::Nearest, Interpolation::Bilinear}) {
        for (Rgb8 c : test_colours()) {
          const NeatTensor frame = flat_frame(f, 66, 50, encode(c, s), s);
          PreprocessParams p;
          p.width = 8;
          p.height = 8;
          p.scale = 1.0f;
          p.interpolation = interp;
          auto out = preprocess(frame, p);
          ASSERT_TRUE(out.ok()) << out.error().message();
          auto m = out->map();
          const float* v = *m->data_ptr<const float>();
          const float got[3] = {v[9], v[64 + 9], v[128 + 9]};
          const int want[3] = {c.r, c.g, c.b};
          for (int k = 0; k < 3; ++k) {
            ASSERT_LE(std::abs(got[k] - static_cast<float>(want[k])), 2.0f)
                << to_string(f) << " " << name(s) << " channel " << k;
          }
        }
      }
    }
  }
}

// The same camera-like bytes decoded as BT.601 and as BT.709 differ (the
// standard is not ignored), and the BT.709 decode matches the exact formula.
TEST(Colorimetry, TheStandardChangesTheResultAndOverridesWin) {
  const Rgb8 c{30, 160, 220};
  const NeatTensor as709 =
      flat_frame(PixelFormat::NV12, 64, 48, encode(c, kBT709Limited), kBT709Limited);
  const Rgb8 right = pixel(*convert_color(as709, PixelFormat::RGB), 3, 3);
  const Rgb8 wrong = pixel(*convert_color(as709, PixelFormat::RGB, kBT601Limited), 3, 3);
  EXPECT_LE(std::abs(right.r - c.r), 2);
  EXPECT_GE(std::abs(wrong.r - c.r) + std::abs(wrong.g - c.g) + std::abs(wrong.b - c.b), 10)
      << "decoding BT.709 bytes as BT.601 must visibly differ";
  // An override of the range only keeps the frame's matrix.
  const Colorimetry full709{YuvMatrix::BT709, ColorRange::Full};
  const NeatTensor full = flat_frame(PixelFormat::NV12, 64, 48, encode(c, full709), {});
  const Rgb8 f =
      pixel(*convert_color(*full.with_colorimetry({YuvMatrix::BT709, ColorRange::Unknown}),
                           PixelFormat::RGB, Colorimetry{YuvMatrix::Unknown, ColorRange::Full}),
            3, 3);
  EXPECT_LE(std::abs(f.g - c.g), 2);
}

class ColorimetryEvents : public testing::TelemetryTest {};

TEST_F(ColorimetryEvents, UnknownColorimetryIsResolvedByGStreamersRuleAndTheEventSaysSo) {
  const Rgb8 c{200, 40, 90};
  // HD, untagged: BT.709 limited assumed.
  const NeatTensor hd = flat_frame(PixelFormat::NV12, 1280, 720, encode(c, kBT709Limited), {});
  const Rgb8 got = pixel(*convert_color(hd, PixelFormat::RGB), 10, 10);
  EXPECT_LE(std::abs(got.r - c.r), 2);
  EXPECT_LE(std::abs(got.b - c.b), 2);
  // SD, untagged: BT.601 limited assumed.
  const NeatTensor sd = flat_frame(PixelFormat::I420, 640, 480, encode(c, kBT601Limited), {});
  const Rgb8 got_sd = pixel(*convert_color(sd, PixelFormat::RGB), 10, 10);
  EXPECT_LE(std::abs(got_sd.g - c.g), 2);
  // Tagged: from the frame.
  ASSERT_TRUE(convert_color(*hd.with_colorimetry(kBT2020Limited), PixelFormat::RGB).ok());
  PreprocessParams p;
  ASSERT_TRUE(preprocess(hd, p).ok());
  const auto ev = events();
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].event.detail,
            "yuv bt709 limited (assumed: the frame does not say; GStreamer's default for its "
            "size)");
  EXPECT_NE(ev[1].event.detail.find("yuv bt601 limited (assumed"), std::string::npos);
  EXPECT_EQ(ev[2].event.detail, "yuv bt2020 limited (from the frame)");
  EXPECT_NE(ev[3].event.detail.find("yuv bt709 limited (assumed"), std::string::npos);
  EXPECT_NE(to_string(ev[0].event).find("[yuv bt709 limited (assumed"), std::string::npos);
  // bytes_read is what the conversion read: the NV12 frame, not the RGB output.
  EXPECT_EQ(ev[0].event.bytes_read, 1280 * 720 * 3 / 2);
  EXPECT_EQ(ev[0].event.bytes_written, 1280 * 720 * 3);
  // Call sites are relative to the source tree.
  EXPECT_EQ(std::string(ev[0].event.where.file_name()), "tests/kernels/colorimetry_test.cpp");
}

TEST(Colorimetry, BitExactWithOpenCvForBt601Limited) {
  for (auto [w, h] : {std::pair<int, int>{1280, 720}, {640, 480}}) {
    for (PixelFormat format : {PixelFormat::NV12, PixelFormat::I420}) {
      const NeatTensor f = *random_frame(format, w, h, 3).with_colorimetry(kBT601Limited);
      cv::Mat ref;
      cv::cvtColor(testing::packed_yuv_mat(f), ref,
                   format == PixelFormat::NV12 ? cv::COLOR_YUV2RGB_NV12 : cv::COLOR_YUV2RGB_I420);
      auto ours = convert_color(f, PixelFormat::RGB);
      ASSERT_TRUE(ours.ok());
      EXPECT_EQ(testing::max_abs_diff(testing::to_mat_copy(*ours), ref), 0);
      // Split, padded planes: I420 runs our own kernel, which gives OpenCV's bytes.
      const NeatTensor split = testing::split_planes(f, 32);
      auto own = convert_color(*split.with_colorimetry(kBT601Limited), PixelFormat::RGB);
      ASSERT_TRUE(own.ok());
      EXPECT_EQ(testing::max_abs_diff(testing::to_mat_copy(*own), ref), 0);
    }
  }
}

// ---- GStreamer -----------------------------------------------------------------

TEST(ColorimetryGst, CapsCarryTheStandardBothWays) {
  ASSERT_TRUE(ensure_gstreamer().ok());
  for (Colorimetry s : kAll) {
    auto caps = gst_caps_for(ImageSpec{PixelFormat::NV12, 320, 240, Layout::None, s}, 30, 1);
    ASSERT_TRUE(caps.ok());
    GstStructure* st = gst_caps_get_structure(*caps, 0);
    ASSERT_NE(gst_structure_get_string(st, "colorimetry"), nullptr) << name(s);
    EXPECT_EQ(gst_caps_colorimetry(*caps), s);
    GstBuffer* buffer = gst_buffer_new_allocate(nullptr, 320 * 240 * 3 / 2, nullptr);
    auto wrapped = wrap_gst_buffer(buffer, *caps, GstTransfer::Full);
    ASSERT_TRUE(wrapped.ok()) << wrapped.error().message();
    EXPECT_EQ(wrapped->image().colorimetry, s) << name(s);
    gst_caps_unref(*caps);
  }
  // No colorimetry in the caps: GStreamer's default, which we carry as stated.
  GstCaps* hd = gst_caps_from_string("video/x-raw,format=I420,width=1280,height=720");
  EXPECT_EQ(gst_caps_colorimetry(hd), kBT709Limited);
  gst_caps_unref(hd);
  // Unknown colorimetry is left out of the caps (GStreamer applies the same default).
  auto untagged = gst_caps_for(ImageSpec{PixelFormat::NV12, 320, 240}, 30, 1);
  ASSERT_TRUE(untagged.ok());
  EXPECT_EQ(gst_structure_get_string(gst_caps_get_structure(*untagged, 0), "colorimetry"), nullptr);
  gst_caps_unref(*untagged);
  EXPECT_EQ(gst_caps_colorimetry(nullptr), Colorimetry{});
}

struct Pulled {
  NeatTensor yuv;
  NeatTensor rgb;
};

// Runs a pipeline with two appsinks, "yuv" and "rgb", and pulls one frame of each.
Pulled pull_two(const std::string& description) {
  GError* err = nullptr;
  GstElement* p = gst_parse_launch(description.c_str(), &err);
  EXPECT_EQ(err, nullptr) << (err ? err->message : "");
  Pulled out;
  if (p == nullptr) return out;
  gst_element_set_state(p, GST_STATE_PLAYING);
  for (const char* n : {"yuv", "rgb"}) {
    GstElement* sink = gst_bin_get_by_name(GST_BIN(p), n);
    GstSample* s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND);
    EXPECT_NE(s, nullptr) << n;
    if (s != nullptr) {
      auto t = wrap_gst_sample(s);
      EXPECT_TRUE(t.ok());
      if (t.ok()) (std::string(n) == "yuv" ? out.yuv : out.rgb) = *t;
      gst_sample_unref(s);
    }
    gst_object_unref(sink);
  }
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
  return out;
}

// The exact decode (double precision, the standard's formula, chroma
// replicated per 2x2 block as ours is) of a 4:2:0 frame, clamped to [0, 255].
cv::Mat exact_decode(const NeatTensor& f) {
  const Colorimetry c = resolve_colorimetry(f.image().colorimetry, 0, f.image().height);
  double kr = 0.299, kb = 0.114;
  if (c.matrix == YuvMatrix::BT709) kr = 0.2126, kb = 0.0722;
  if (c.matrix == YuvMatrix::BT2020) kr = 0.2627, kb = 0.0593;
  const bool limited = c.range == ColorRange::Limited;
  auto m = f.map();
  const int w = static_cast<int>(f.image().width), h = static_cast<int>(f.image().height);
  const auto* y = reinterpret_cast<const std::uint8_t*>(*m->plane_data(PlaneRole::Y));
  const bool nv12 = f.pixel_format() == PixelFormat::NV12;
  const auto* u =
      reinterpret_cast<const std::uint8_t*>(*m->plane_data(nv12 ? PlaneRole::UV : PlaneRole::U));
  const auto* v =
      nv12 ? u + 1 : reinterpret_cast<const std::uint8_t*>(*m->plane_data(PlaneRole::V));
  const std::int64_t ys = f.plane_layout(0).row_stride, cs = f.plane_layout(1).row_stride;
  const int step = nv12 ? 2 : 1;
  cv::Mat out(h, w, CV_64FC3);
  for (int r = 0; r < h; ++r) {
    for (int x = 0; x < w; ++x) {
      const double yy = y[r * ys + x], uu = u[(r / 2) * cs + (x / 2) * step],
                   vv = v[(r / 2) * cs + (x / 2) * step];
      const double yn = limited ? (yy - 16) / 219 : yy / 255;
      const double pb = (uu - 128) / (limited ? 224 : 255), pr = (vv - 128) / (limited ? 224 : 255);
      const double R = yn + 2 * (1 - kr) * pr, B = yn + 2 * (1 - kb) * pb;
      const double G = (yn - kr * R - kb * B) / (1 - kr - kb);
      out.at<cv::Vec3d>(r, x) =
          cv::Vec3d(std::clamp(R * 255, 0.0, 255.0), std::clamp(G * 255, 0.0, 255.0),
                    std::clamp(B * 255, 0.0, 255.0));
    }
  }
  return out;
}

double mean_abs_diff(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat a64, b64, d;
  a.convertTo(a64, CV_64FC3);
  b.convertTo(b64, CV_64FC3);
  cv::absdiff(a64, b64, d);
  const cv::Scalar m = cv::mean(d);
  return (m[0] + m[1] + m[2]) / 3;
}

// Whole SMPTE, pinwheel and ball frames in every standard and both chroma
// layouts, decoded by us and by videoconvert, both held against the exact
// decode of the same bytes. Ours must follow the standard (mean <= 0.3
// levels); against videoconvert the mean difference must be <= 2 levels, or
// no more than videoconvert's own distance from the standard (+0.25) where
// that is larger: videoconvert's limited-range NV12 path is itself up to 2.5
// levels off the formula on SMPTE bars. Prints the figures
// docs/conversions.md quotes.
TEST(ColorimetryGst, WholeFramesFollowTheStandardAndMatchVideoconvert) {
  ASSERT_TRUE(ensure_gstreamer().ok());
  std::printf("%-9s %-5s %-15s %12s %12s %12s %8s\n", "pattern", "fmt", "colorimetry", "ours-exact",
              "vconv-exact", "ours-vconv", "max");
  for (const char* pattern : {"smpte", "pinwheel", "ball"}) {
    for (const char* format : {"NV12", "I420"}) {
      for (Colorimetry s : kAll) {
        auto caps = gst_caps_for(ImageSpec{PixelFormat::NV12, 640, 480, Layout::None, s}, 30, 1);
        ASSERT_TRUE(caps.ok());
        const std::string cm =
            gst_structure_get_string(gst_caps_get_structure(*caps, 0), "colorimetry");
        gst_caps_unref(*caps);
        const Pulled f = pull_two(
            std::string("videotestsrc num-buffers=1 pattern=") + pattern +
            " ! video/x-raw,format=RGB,width=640,height=480 ! videoconvert ! video/x-raw,format=" +
            format + ",colorimetry=" + cm +
            " ! tee name=t ! queue ! appsink name=yuv t. ! queue ! videoconvert dither=none ! "
            "video/x-raw,format=RGB ! appsink name=rgb");
        ASSERT_TRUE(f.yuv.defined() && f.rgb.defined());
        ASSERT_EQ(f.yuv.image().colorimetry, s) << cm;
        auto ours = convert_color(f.yuv, PixelFormat::RGB);
        ASSERT_TRUE(ours.ok());
        const cv::Mat a = testing::to_mat_copy(*ours), b = testing::to_mat_copy(f.rgb);
        const cv::Mat exact = exact_decode(f.yuv);
        const double ours_exact = mean_abs_diff(a, exact), gst_exact = mean_abs_diff(b, exact);
        const double diff = mean_abs_diff(a, b);
        cv::Mat d;
        cv::absdiff(a, b, d);
        double max = 0;
        cv::minMaxLoc(d.reshape(1), nullptr, &max);
        std::printf("%-9s %-5s %-15s %12.3f %12.3f %12.3f %8.0f\n", pattern, format,
                    name(s).c_str(), ours_exact, gst_exact, diff, max);
        EXPECT_LE(ours_exact, 0.3) << pattern << " " << format << " " << name(s);
        EXPECT_LE(diff, std::max(2.0, gst_exact + 0.25))
            << pattern << " " << format << " " << name(s);
      }
    }
  }
}

}  // namespace
}  // namespace neat

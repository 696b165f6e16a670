// The SIMD kernels on every instruction set they were compiled for that this
// CPU runs (AVX-512, AVX2, SSE4, SSSE3, scalar on x86): Highway's test mock
// restricts the dispatcher to one target at a time. Each must give the
// results of the best one: convert_color the bytes of cv::cvtColor, the
// preprocess the same floats within rounding (FMA or not), on shapes that
// take every path (periodic ratios, gathers, tails, odd sizes, letterbox,
// 16-bit outputs).
#include <gtest/gtest.h>
// The targets the preprocess engine is compiled for (it adds AVX3_DL).
#define HWY_WANT_AVX3_DL 1
#include <hwy/targets.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "neat/kernels/cast.hpp"
#include "neat/kernels/color.hpp"
#include "neat/kernels/preprocess.hpp"
#include "support/fakes.hpp"
#include "support/images.hpp"

namespace neat {
namespace {

// Restores the CPU's own targets when the test ends, whatever happened.
struct TargetMock {
  explicit TargetMock(std::int64_t target) {
    hwy::SetSupportedTargetsForTest(target);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  }
  ~TargetMock() {
    hwy::SetSupportedTargetsForTest(0);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  }
};

using testing::floats;

std::vector<std::uint8_t> bytes(const NeatTensor& t) {
  auto m = t.map();
  const auto* p = reinterpret_cast<const std::uint8_t*>(m->data());
  std::vector<std::uint8_t> out;
  for (std::int64_t r = 0; r < t.shape()[0]; ++r)
    out.insert(out.end(), p + r * t.strides()[0], p + r * t.strides()[0] + t.shape()[1] * 3);
  return out;
}

struct PreprocessCase {
  PixelFormat format;
  std::int64_t sw, sh, ow, oh;
  Interpolation interp;
  ResizeMode mode;
  DType dtype;
  bool per_channel = false;  // ImageNet's mean and std: a and b differ by plane
};
const PreprocessCase kPreprocess[] = {
    {PixelFormat::NV12, 1920, 1080, 640, 640, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // periodic 1x3 / 2x3
    {PixelFormat::I420, 1280, 720, 640, 640, Interpolation::Area, ResizeMode::Letterbox,
     DType::F16},  // periodic 1x2, area, letterbox
    {PixelFormat::NV21, 1001, 333, 300, 203, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::BF16},  // gathers, odd
    {PixelFormat::YV12, 37, 23, 61, 47, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // enlarging, tails only
    {PixelFormat::NV12, 1920, 1080, 320, 320, Interpolation::Bilinear, ResizeMode::Letterbox,
     DType::F32},  // 6x: VBMI permutes, x86 without VBMI 32-byte blocks, else gathers
    {PixelFormat::NV21, 1923, 1081, 417, 415, Interpolation::Bilinear, ResizeMode::Letterbox,
     DType::F32},  // 4.6x: 32-byte blocks (no VBMI) for luma and UV pairs, tails
    {PixelFormat::I420, 3843, 2161, 611, 343, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // nearest 6.3x: 32-byte blocks of picks (no VBMI), tails
    {PixelFormat::NV21, 1280, 720, 201, 97, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // nearest
    // Nearest's one pass with the same a and b in every plane (AVX2: its own
    // loop) and with a and b per plane.
    {PixelFormat::NV12, 1920, 1080, 640, 640, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // luma 3 apart, UV pairs 1.5x
    {PixelFormat::NV12, 1280, 720, 640, 640, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32, true},  // luma 2 apart, UV pairs 1 apart
    {PixelFormat::I420, 1280, 720, 416, 416, Interpolation::Nearest, ResizeMode::Letterbox,
     DType::F32, true},  // 3.1x, letterbox
    {PixelFormat::I420, 1920, 1080, 200, 120, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // large area ratios: VBMI permutes, or the vertical-first path
    {PixelFormat::NV12, 1920, 1080, 320, 320, Interpolation::Area, ResizeMode::Letterbox,
     DType::F32},  // area 6x: 16-bit row sums (VBMI), or per-row resampling
    {PixelFormat::NV21, 1304, 724, 326, 181, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // exact 4x box, interleaved chroma swapped, tails
    {PixelFormat::YV12, 1302, 722, 651, 361, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // exact 2x box, planar chroma swapped, tails
    {PixelFormat::I420, 1923, 1083, 641, 641, Interpolation::Bilinear, ResizeMode::Letterbox,
     DType::F32},  // bilinear 3x on both axes: picks (one tap of weight 1), tails
    {PixelFormat::NV21, 342, 186, 57, 31, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // exact 6x box: rows summed first, UV pairs in threes, tails
    {PixelFormat::I420, 636, 348, 53, 29, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // exact 12x box: 64-bit elements, planar chroma in sixes, tails
    {PixelFormat::NV12, 636, 348, 53, 29, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // exact 12x box, UV pairs in sixes
    {PixelFormat::YV12, 963, 543, 321, 181, Interpolation::Area, ResizeMode::Stretch,
     DType::F16},  // exact 3x box for luma, chroma 1.5x by its tables, tails
    {PixelFormat::NV12, 1923, 1081, 211, 117, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // 9.1x area: rows of sums as 16-bit samples (VBMI), UV interleaved
    // The float path's horizontal pass without VBMI: each output's taps
    // loaded as one vector (up to 8 taps) or two (16), past 16 gathered.
    {PixelFormat::I420, 1923, 1081, 417, 233, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // 4.6x: 6 luma taps, 4 chroma
    {PixelFormat::NV21, 3843, 2161, 181, 101, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // 21x luma (23 taps: gathers), 10.6x chroma (12 taps: two vectors)
    // Without VBMI, rows whose taps fit neither the blocks nor a gather,
    // output by output: bytes, or rows of sums (words); samples side by side,
    // or UV pairs (both from one load); 4, 8 or 16 taps; tails. Bytes
    // within 32 bytes a block of four take the wide blocks, pass by pass.
    {PixelFormat::NV12, 1920, 1080, 416, 416, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // luma sums 4.6x (8 taps), UV bytes 2.3x (4: wide), chroma not summed
    {PixelFormat::NV21, 1922, 1082, 417, 415, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // the same, V first, a tail of outputs
    {PixelFormat::NV12, 1920, 1080, 400, 150, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // UV sums 2.4x (4)
    {PixelFormat::NV21, 1926, 1081, 403, 151, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // the same, V first, a tail
    {PixelFormat::I420, 1922, 1081, 301, 700, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // luma bytes 6.4x (8), planar chroma bytes 3.2x (8), rows not summed
    {PixelFormat::NV21, 3843, 723, 299, 601, Interpolation::Area, ResizeMode::Stretch,
     DType::F16},  // luma bytes 12.9x (16), UV bytes 6.4x (8)
    {PixelFormat::NV12, 3843, 723, 270, 601, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // luma bytes 14.2x (16), UV bytes 7.1x (16)
    {PixelFormat::NV12, 3843, 2161, 417, 417, Interpolation::Area, ResizeMode::Letterbox,
     DType::F32},  // luma sums 9.2x (16), UV sums 4.6x (8)
    {PixelFormat::NV21, 3843, 2161, 609, 607, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // luma sums 6.3x (8), UV sums 3.2x (8), V first
    {PixelFormat::NV21, 3843, 2161, 270, 152, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // luma sums 14.2x (16), UV sums 7.1x (16)
    // Area with only the horizontal axis an exact box: rows summed across
    // without tables, every element width, tails; from 1.6 rows down, the
    // rows by the fixed-point vertical pass and added across in 32 bits.
    {PixelFormat::NV21, 1926, 1081, 321, 173, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // 6 across (UV pairs in threes), 6.25 down
    {PixelFormat::YV12, 1282, 723, 641, 211, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // 2 across (chroma 1), 3.4 down
    {PixelFormat::NV12, 1924, 1083, 481, 300, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // 4 across (UV pairs in twos), 3.6 down
    {PixelFormat::I420, 1932, 1083, 161, 100, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // 12 across (chroma 6), 10.8 down
    {PixelFormat::NV12, 1282, 723, 641, 211, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // 2 across (UV pairs, one each), 3.4 down
    {PixelFormat::I420, 1923, 1081, 641, 401, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // 3 across (chroma 1.5 by its tables), 2.7 down
    // The same, below 1.6 rows down: up to 4 rows summed across straight
    // from their bytes (2 or 4 bytes an output), one output vector at a time.
    {PixelFormat::NV12, 1282, 723, 641, 643, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // 2 across (UV pairs, one each), 1.12 down
    {PixelFormat::NV21, 1284, 722, 321, 321, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // 4 across (UV pairs in twos), 2.25 down
    {PixelFormat::I420, 1284, 722, 321, 301, Interpolation::Area, ResizeMode::Stretch,
     DType::F16},  // 4 across (chroma 2), 2.4 down
    // Bilinear 3x across (luma picked 3 apart) between two rows of any
    // weights down: both rows picked and weighed in one pass (VBMI), most
    // rows serving two output rows; the last vector's loads masked to the row.
    {PixelFormat::I420, 1923, 1081, 641, 601, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F16},  // 3x across, 1.8 down
    {PixelFormat::NV12, 3843, 2161, 1281, 1279, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // 3x across, 1.69 down
    // Bilinear at an even ratio both ways, 2 or 4 bytes an output across: the
    // pairs of both rows summed straight from the bytes; the last output's
    // lane would end past the row (its first sample is 1 in).
    {PixelFormat::NV12, 1284, 724, 321, 181, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // luma 4x, UV pairs 2x
    {PixelFormat::I420, 1284, 724, 321, 181, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F16},  // luma 4x, chroma 2x
    {PixelFormat::NV21, 1280, 720, 320, 320, Interpolation::Bilinear, ResizeMode::Letterbox,
     DType::F32},  // 720p -> 320 letterboxed
    {PixelFormat::NV12, 1926, 1086, 321, 181, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // luma 6x both ways: both rows' pairs by the permutes (VBMI)
    {PixelFormat::I420, 1920, 1080, 320, 320, Interpolation::Bilinear, ResizeMode::Letterbox,
     DType::BF16},  // 1080p -> 320 letterboxed
    // Bilinear at even ratios across: pairs picked without tables where the
    // target takes them (VBMI: 2, 4 and 6 bytes per output; the others: 6
    // and 12), the tables' blocks elsewhere; tails.
    {PixelFormat::NV12, 1284, 722, 321, 200, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // luma 4x, UV pairs 2x
    {PixelFormat::I420, 1284, 722, 321, 200, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // luma 4x, planar chroma 2x
    {PixelFormat::I420, 1926, 1080, 321, 200, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // luma 6x, chroma 3x (picks)
    {PixelFormat::NV12, 1926, 1081, 321, 200, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // luma 6x, UV pairs 3x (picks of 6 bytes: two registers on VBMI)
    {PixelFormat::NV21, 3852, 2164, 321, 250, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // luma 12x, UV pairs 6x
    {PixelFormat::YV12, 3852, 2164, 321, 250, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // luma 12x, planar chroma 6x
    {PixelFormat::NV12, 1282, 720, 641, 600, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // luma 2x, chroma 1x (picks)
    // The same pairs at 2 or more rows down (no row serves two output rows):
    // both rows' pairs weighed in one pass, tails.
    {PixelFormat::NV12, 1926, 1085, 321, 317, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F16},  // luma 6x across, 3.4x down
    {PixelFormat::I420, 1284, 723, 321, 301, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // luma 4x across, 2.4x down
    {PixelFormat::NV12, 1925, 1083, 385, 200, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // 5x across: each output on a sample (the tables' picks), 5.4x down
    // Nearest at integer ratios across: picks without tables, tails.
    {PixelFormat::NV12, 1926, 1083, 321, 200, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // 6 (UV pairs 3 apart)
    {PixelFormat::I420, 1284, 722, 321, 240, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // 4 (chroma 2)
    {PixelFormat::YV12, 963, 541, 321, 200, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // 3 (chroma by its tables)
    {PixelFormat::NV21, 1932, 1081, 161, 90, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // 12 (UV pairs 6 apart)
    {PixelFormat::NV12, 642, 362, 321, 181, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // 2 (UV pairs side by side)
    {PixelFormat::NV12, 1285, 723, 514, 301, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // 2.5, UV pairs 1.25: a period of 16 outputs (one permute on VBMI), tails
    {PixelFormat::I420, 1920, 1083, 512, 300, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F16},  // 3.75, planar chroma 1.875: periods of 60 and 30 bytes
    {PixelFormat::NV12, 1282, 722, 417, 301, Interpolation::Nearest, ResizeMode::Letterbox,
     DType::F32},  // 3.07, UV pairs 1.54: no period, each vector in 64 bytes (the spans)
    {PixelFormat::I420, 642, 362, 321, 181, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // 2 (planar chroma 1)
    // Picks in a pattern (one permute per vector on AVX3_DL), tails.
    {PixelFormat::NV12, 1926, 1080, 642, 360, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // 3x: luma every third, UV pairs two per three
    {PixelFormat::I420, 1926, 1080, 642, 360, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // 3x: planar chroma two per three
    {PixelFormat::NV21, 1923, 1080, 1282, 720, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // 1.5x: luma two per three
    // Without VBMI: luma k apart and the chroma by the tables, in one pass.
    {PixelFormat::NV12, 1926, 1080, 642, 360, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // luma every third, UV pairs two per three
    {PixelFormat::NV12, 642, 362, 642, 500, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // luma 1x across, UV pairs each twice (up)
    {PixelFormat::I420, 642, 362, 642, 500, Interpolation::Nearest, ResizeMode::Stretch,
     DType::F32},  // luma 1x across, planar chroma each twice (up)
    {PixelFormat::I420, 1284, 724, 321, 181, Interpolation::Bilinear, ResizeMode::Stretch,
     DType::F32},  // 4x: luma rows of half weight summed, chroma picks alone
    // Area at large ratios: rows summed first, then 17-64 taps across per output.
    {PixelFormat::NV12, 1920, 1080, 112, 112, Interpolation::Area, ResizeMode::Stretch,
     DType::F32},  // 17.1x across (32-tap tables), UV sums 8.6x
    {PixelFormat::I420, 1283, 721, 24, 24, Interpolation::Area, ResizeMode::Letterbox,
     DType::F32},  // 53x across (64-tap tables), tails
};

PreprocessParams params_of(const PreprocessCase& c) {
  PreprocessParams p;
  p.width = c.ow;
  p.height = c.oh;
  p.interpolation = c.interp;
  p.resize_mode = c.mode;
  p.out_dtype = c.dtype;
  if (c.per_channel) {
    p.mean = {0.485f, 0.456f, 0.406f};
    p.std = {0.229f, 0.224f, 0.225f};
  }
  return p;
}

TEST(SimdTargets, EveryCompiledTargetGivesTheSameResults) {
  const std::vector<std::int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  // The best target's results are the reference (computed before any mock).
  std::vector<std::vector<float>> want_pre;
  std::vector<NeatTensor> frames;
  for (const PreprocessCase& c : kPreprocess) {
    frames.push_back(testing::split_planes(testing::random_frame(c.format, c.sw, c.sh, 9), 3));
    auto out = preprocess(frames.back(), params_of(c), {.threads = 1});
    NEAT_ASSERT_OK(out);
    want_pre.push_back(floats(*out));
  }
  // convert_color against OpenCV: NV12 and I420 (canonical, so cvtColor takes
  // them), odd tails from a width that is not a multiple of any vector.
  const NeatTensor nv12 = testing::random_frame(PixelFormat::NV12, 198, 66, 4);
  const NeatTensor i420 = testing::random_frame(PixelFormat::I420, 198, 66, 5);
  auto opencv = [](const NeatTensor& f, int code) {
    auto m = f.map();
    cv::Mat all(static_cast<int>(f.image().height * 3 / 2), static_cast<int>(f.image().width),
                CV_8UC1, const_cast<std::byte*>(*m->plane_data(PlaneRole::Y)));
    cv::Mat rgb;
    cv::cvtColor(all, rgb, code);
    return std::vector<std::uint8_t>(rgb.data, rgb.data + rgb.total() * 3);
  };
  const auto want_nv12 = opencv(nv12, cv::COLOR_YUV2RGB_NV12);
  const auto want_i420 = opencv(i420, cv::COLOR_YUV2BGR_I420);

  for (std::int64_t target : targets) {
    TargetMock mock(target);
    const char* name = hwy::TargetName(target);
    std::printf("SIMD target %s\n", name);
    EXPECT_STREQ(preprocess_simd_target(), name);
    for (std::size_t i = 0; i < std::size(kPreprocess); ++i) {
      const PreprocessCase& c = kPreprocess[i];
      auto out = preprocess(frames[i], params_of(c), {.threads = 1});
      NEAT_ASSERT_OK(out);
      const auto got = floats(*out);
      ASSERT_EQ(got.size(), want_pre[i].size());
      // Float rounding only (FMA or separate multiply and add): 1e-4 of a
      // normalized value, 0.03 levels; one unit in the last place of F16/BF16.
      // Area at ratios that are not whole: the VBMI targets' fixed-point
      // vertical pass (partial rows' weights in 2^-(f + 8) of a row's, sums in
      // 2^-f level) against the others' float one: 2e-4, 0.05 levels.
      const float f32 = c.interp == Interpolation::Area ? 2e-4f : 1e-4f;
      const float tol = c.dtype == DType::F32 ? f32 : c.dtype == DType::F16 ? 2e-3f : 1.6e-2f;
      std::size_t bad = 0;
      for (std::size_t k = 0; k < got.size(); ++k)
        bad += std::abs(got[k] - want_pre[i][k]) > tol * std::max(1.f, std::abs(want_pre[i][k]));
      EXPECT_EQ(bad, 0u) << name << " case " << i;
    }
    auto rgb = convert_color(nv12, PixelFormat::RGB, kBT601Limited, {.threads = 1});
    NEAT_ASSERT_OK(rgb);
    EXPECT_EQ(bytes(*rgb), want_nv12) << name << " NV12";
    auto bgr = convert_color(i420, PixelFormat::BGR, kBT601Limited, {.threads = 1});
    NEAT_ASSERT_OK(bgr);
    EXPECT_EQ(bytes(*bgr), want_i420) << name << " I420";
  }
}

}  // namespace
}  // namespace neat

// The fused preprocess against an exact double-precision reference of the
// same sampling (every format, stride, odd size, ratio, interpolation,
// letterbox, channel order, dtype and colour standard), and the rest of its
// contract: allocations after warm-up, threads, bad input.
#include <gtest/gtest.h>
#include <hwy/targets.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <vector>

#include "neat/kernels/cast.hpp"
#include "neat/kernels/internal/preprocess_kernel.hpp"
#include "neat/kernels/preprocess.hpp"
#include "neat/kernels/yuv_matrix.hpp"
#include "neat/storage/external.hpp"
#include "support/fakes.hpp"
#include "support/images.hpp"

namespace neat {
namespace {

// ---- the reference ------------------------------------------------------------

// Weights of output o over `source` samples, written from the definitions
// (not from the library's tables): bilinear = OpenCV's INTER_LINEAR mapping
// clamped at the edges; area = the exact overlap of [o r, (o + 1) r) with each
// sample, divided by r (bilinear when enlarging).
std::vector<std::pair<std::int64_t, double>> taps(std::int64_t o, std::int64_t count,
                                                  std::int64_t source, Interpolation m) {
  const double r = static_cast<double>(source) / static_cast<double>(count);
  std::vector<std::pair<std::int64_t, double>> t;
  if (m == Interpolation::Area && r > 1.0) {
    const double lo = static_cast<double>(o) * r, hi = lo + r;
    const auto first = static_cast<std::int64_t>(std::floor(lo));
    const auto end = std::min(source, static_cast<std::int64_t>(std::ceil(hi)) + 1);
    for (std::int64_t i = std::max<std::int64_t>(first - 1, 0); i < end; ++i) {
      const double ov = std::min(hi, i + 1.0) - std::max(lo, static_cast<double>(i));
      if (ov > 0) t.emplace_back(i, ov / r);
    }
    return t;
  }
  const double s = (static_cast<double>(o) + 0.5) * r - 0.5;
  if (s <= 0) return {{0, 1.0}};
  if (s >= static_cast<double>(source - 1)) return {{source - 1, 1.0}};
  const auto i = static_cast<std::int64_t>(std::floor(s));
  return {{i, 1.0 - (s - static_cast<double>(i))}, {i + 1, s - static_cast<double>(i)}};
}

// A plane of doubles resampled to w x h.
struct Plane {
  std::int64_t w = 0, h = 0;
  std::vector<double> v;
  double at(std::int64_t x, std::int64_t y) const { return v[static_cast<std::size_t>(y * w + x)]; }
};
// Rows first, then columns; each output's taps are listed once (the
// ASan build runs this reference at -O1, on frames up to 4K).
Plane resample(const Plane& in, std::int64_t w, std::int64_t h, Interpolation m) {
  std::vector<std::vector<std::pair<std::int64_t, double>>> across;
  across.reserve(static_cast<std::size_t>(w));
  for (std::int64_t x = 0; x < w; ++x)
    across.push_back(taps(x, w, in.w, m));
  Plane mid{w, in.h, std::vector<double>(static_cast<std::size_t>(w * in.h))};
  for (std::int64_t y = 0; y < in.h; ++y) {
    const double* row = in.v.data() + y * in.w;
    double* to = mid.v.data() + y * w;
    for (std::int64_t x = 0; x < w; ++x) {
      double s = 0;
      for (auto [i, wt] : across[static_cast<std::size_t>(x)])
        s += wt * row[i];
      to[x] = s;
    }
  }
  Plane out{w, h, std::vector<double>(static_cast<std::size_t>(w * h))};
  for (std::int64_t y = 0; y < h; ++y) {
    double* to = out.v.data() + y * w;
    for (auto [i, wt] : taps(y, h, in.h, m)) {
      const double* row = mid.v.data() + i * w;
      for (std::int64_t x = 0; x < w; ++x)
        to[x] += wt * row[x];
    }
  }
  return out;
}

// The frame's Y, U, V planes as doubles.
std::array<Plane, 3> planes_of(const NeatTensor& f) {
  const std::int64_t w = f.image().width, h = f.image().height;
  const std::int64_t cw = (w + 1) / 2, ch = (h + 1) / 2;
  std::array<Plane, 3> p{Plane{w, h, {}}, Plane{cw, ch, {}}, Plane{cw, ch, {}}};
  for (Plane& q : p)
    q.v.reserve(static_cast<std::size_t>(q.w * q.h));
  auto m = f.map();
  EXPECT_TRUE(m.ok());
  const auto* y = reinterpret_cast<const std::uint8_t*>(*m->plane_data(PlaneRole::Y));
  for (std::int64_t r = 0; r < h; ++r)
    for (std::int64_t x = 0; x < w; ++x)
      p[0].v.push_back(y[r * f.plane_layout(0).row_stride + x]);
  const PixelFormat fmt = f.pixel_format();
  for (int c = 1; c < 3; ++c) {  // c = 1: U, 2: V
    const std::uint8_t* base = nullptr;
    std::int64_t stride = 0, step = 1;
    if (fmt == PixelFormat::NV12 || fmt == PixelFormat::NV21) {
      const PlaneLayout& l = f.plane_layout(1);
      base = reinterpret_cast<const std::uint8_t*>(*m->plane_data(l.role));
      stride = l.row_stride;
      step = 2;
      if ((fmt == PixelFormat::NV12) != (c == 1)) base += 1;
    } else {
      const PlaneRole role = c == 1 ? PlaneRole::U : PlaneRole::V;
      base = reinterpret_cast<const std::uint8_t*>(*m->plane_data(role));
      const int index = (fmt == PixelFormat::I420) == (c == 1) ? 1 : 2;
      stride = f.plane_layout(index).row_stride;
    }
    for (std::int64_t r = 0; r < ch; ++r)
      for (std::int64_t x = 0; x < cw; ++x)
        p[static_cast<std::size_t>(c)].v.push_back(base[r * stride + x * step]);
  }
  return p;
}

// The reference output, [3, out_h, out_w] floats in output-plane order.
std::vector<double> reference(const NeatTensor& f, const PreprocessParams& p) {
  const std::int64_t sw = f.image().width, sh = f.image().height;
  const LetterboxBox box = p.resize_mode == ResizeMode::Letterbox
                               ? letterbox_box(sw, sh, p.width, p.height)
                               : LetterboxBox{p.width, p.height, 0, 0};
  const auto in = planes_of(f);
  // Chroma upsampled by replication to the frame's size, then resampled like luma.
  auto full = [&](const Plane& c) {
    Plane up{sw, sh, std::vector<double>(static_cast<std::size_t>(sw * sh))};
    for (std::int64_t r = 0; r < sh; ++r)
      for (std::int64_t x = 0; x < sw; ++x)
        up.v[static_cast<std::size_t>(r * sw + x)] = c.at(x / 2, r / 2);
    return resample(up, box.width, box.height, p.interpolation);
  };
  const Plane y = resample(in[0], box.width, box.height, p.interpolation);
  const Plane u = full(in[1]);
  const Plane v = full(in[2]);
  bool assumed = false;
  const YuvToRgb& k =
      yuv_to_rgb(choose_colorimetry(p.colorimetry, f.image().colorimetry, sw, sh, &assumed));
  std::vector<double> out(static_cast<std::size_t>(3 * p.width * p.height));
  for (int c = 0; c < 3; ++c) {
    const auto uc = static_cast<std::size_t>(c);
    const int rgb_index = p.channel_order == PixelFormat::RGB ? c : 2 - c;
    for (std::int64_t r = 0; r < p.height; ++r) {
      for (std::int64_t x = 0; x < p.width; ++x) {
        double level = p.pad_value;
        if (x >= box.x && x < box.x + box.width && r >= box.y && r < box.y + box.height) {
          const std::int64_t bx = x - box.x, by = r - box.y;
          const double yy = std::max(y.at(bx, by) - k.y_offset, 0.0) * k.fy;
          const double uu = u.at(bx, by) - 128, vv = v.at(bx, by) - 128;
          const double rgb[3] = {yy + k.frv * vv, yy + k.fgu * uu + k.fgv * vv, yy + k.fbu * uu};
          level = std::clamp(rgb[rgb_index], 0.0, 255.0);
        }
        out[static_cast<std::size_t>((c * p.height + r) * p.width + x)] =
            (level * p.scale - p.mean[uc]) / p.std[uc];
      }
    }
  }
  return out;
}

std::vector<double> values(const NeatTensor& t) {
  const auto f = testing::floats(t);
  return std::vector<double>(f.begin(), f.end());
}

struct Errors {
  double max = 0, mean = 0;
};
// |ours - reference| in 8-bit levels (undoing scale and std).
Errors level_errors(const NeatTensor& ours, const std::vector<double>& ref,
                    const PreprocessParams& p) {
  const auto v = values(ours);
  EXPECT_EQ(v.size(), ref.size());
  Errors e;
  const std::size_t plane = ref.size() / 3;
  for (std::size_t i = 0; i < ref.size() && i < v.size(); ++i) {
    const double d = std::abs(v[i] - ref[i]) * p.std[i / plane] / p.scale;
    e.max = std::max(e.max, d);
    e.mean += d;
  }
  e.mean /= static_cast<double>(ref.size());
  return e;
}

PreprocessParams imagenet(std::int64_t w, std::int64_t h) {
  PreprocessParams p;
  p.width = w;
  p.height = h;
  p.mean = {0.485f, 0.456f, 0.406f};
  p.std = {0.229f, 0.224f, 0.225f};
  return p;
}

NeatTensor frame_of(PixelFormat f, std::int64_t w, std::int64_t h, unsigned seed,
                    std::int64_t align = 1) {
  return testing::random_frame(f, w, h, seed, align);
}

// ---- accuracy -------------------------------------------------------------------

struct Case {
  std::int64_t sw, sh, ow, oh;
  double mean = 0.002;  // the largest mean error allowed, in levels
};
// Exact ratios 1..4 (the interleaved-load paths) on each axis and others (the
// gather path); odd sizes; enlarging.
const Case kCases[] = {
    {1920, 1080, 640, 640},  // 3x across, 1.6875 down
    {1280, 720, 640, 360},   // 2x both
    {2560, 1440, 640, 360},  // 4x both
    {1926, 1086, 321, 181},  // 6x both, tails: bilinear's halves summed, chroma picks
    // 10x both: bilinear's chroma picks 5 UV pairs apart, from the windows;
    // area's 10 taps each weighed in 1/32767 leave 0.003 levels on the mean.
    {1920, 1080, 192, 108, 0.004},
    {640, 480, 640, 480},   // 1x
    {1001, 333, 300, 200},  // odd, no exact ratio
    {37, 23, 64, 48},       // enlarging, odd
    {96, 64, 31, 17},       // odd outputs
};

TEST(PreprocessAccuracy, EveryRatioAndFormatMatchesTheExactReference) {
  for (const Case& c : kCases) {
    for (PixelFormat f :
         {PixelFormat::NV12, PixelFormat::NV21, PixelFormat::I420, PixelFormat::YV12}) {
      for (Interpolation m : {Interpolation::Bilinear, Interpolation::Area}) {
        const NeatTensor frame = frame_of(f, c.sw, c.sh, 7, 64);
        PreprocessParams p = imagenet(c.ow, c.oh);
        p.interpolation = m;
        auto ours = preprocess(frame, p);
        ASSERT_TRUE(ours.ok()) << ours.error().message();
        const Errors e = level_errors(*ours, reference(frame, p), p);
        EXPECT_LE(e.max, 0.02) << c.sw << "x" << c.sh << " -> " << c.ow << "x" << c.oh << " "
                               << to_string(f) << " " << to_string(m);
        // Area's fixed-point vertical pass (VBMI targets) rounds each partial
        // row to 2^-f level: up to 0.0033 levels on the mean of noise.
        const double mean = m == Interpolation::Area ? std::max(c.mean, 0.004) : c.mean;
        EXPECT_LE(e.mean, mean) << c.sw << "x" << c.sh << " -> " << c.ow << "x" << c.oh << " "
                                << to_string(f) << " " << to_string(m);
      }
    }
  }
}

// The same scale and mean in every plane (the default 1/255 with no mean,
// whose offset is -0; [0, 255] levels; an offset above 0) takes the final
// pass with the scale in the row weights (Conv::Scaled); an offset below 0
// and per-channel values take the one that normalizes after. Every one
// against the reference: stretched and letterboxed, both channel orders, the
// 16-bit dtypes, the blocks path, area's sums, the exact 3x and 6x boxes and
// the 2x and 4x boxes in one pass.
TEST(PreprocessAccuracy, UniformNormalizationsMatchTheExactReference) {
  struct Norm {
    const char* name;
    float scale, mean;
  };
  const Norm norms[] = {{"1/255", 1.f / 255.f, 0.f},
                        {"levels", 1.f, 0.f},
                        {"offset +0.5", 1.f / 255.f, -0.5f},
                        {"offset -1", 2.f / 255.f, 1.f}};
  const Case cases[] = {{1920, 1080, 640, 640}, {1920, 1080, 640, 360}, {1280, 720, 640, 360},
                        {2560, 1440, 640, 360}, {1926, 1086, 321, 181}, {1280, 720, 416, 416},
                        {1001, 333, 300, 200},  {37, 23, 64, 48}};
  for (const Case& c : cases) {
    for (PixelFormat f : {PixelFormat::NV12, PixelFormat::I420}) {
      const NeatTensor frame = frame_of(f, c.sw, c.sh, 11, 64);
      for (Interpolation m : {Interpolation::Bilinear, Interpolation::Area}) {
        for (const Norm& n : norms) {
          for (int variant = 0; variant < 2; ++variant) {
            PreprocessParams p;
            p.width = c.ow;
            p.height = c.oh;
            p.interpolation = m;
            p.scale = n.scale;
            p.mean = {n.mean, n.mean, n.mean};
            p.resize_mode = variant == 0 ? ResizeMode::Stretch : ResizeMode::Letterbox;
            p.channel_order = variant == 0 ? PixelFormat::RGB : PixelFormat::BGR;
            p.out_dtype = variant == 0 ? DType::F32 : DType::F16;
            auto ours = preprocess(frame, p);
            ASSERT_TRUE(ours.ok()) << ours.error().message();
            const Errors e = level_errors(*ours, reference(frame, p), p);
            // F16: one unit in the last place of values up to 255 (levels)
            // is 0.125 levels, of values up to 1.5 (offset +0.5) 0.0015 x 255.
            const double max = variant == 0 ? 0.02 : 0.25;
            const double mean = variant == 0 ? (m == Interpolation::Area ? 0.004 : 0.002) : 0.1;
            const std::string what = std::to_string(c.sw) + "x" + std::to_string(c.sh) + " -> " +
                                     std::to_string(c.ow) + "x" + std::to_string(c.oh) + " " +
                                     std::string(to_string(f)) + " " + std::string(to_string(m)) +
                                     " " + n.name +
                                     (variant == 0 ? " stretched F32 RGB" : " letterboxed F16 BGR");
            EXPECT_LE(e.max, max) << what;
            EXPECT_LE(e.mean, mean) << what;
          }
        }
      }
    }
  }
}

// Content as wide as the frame (720p letterboxed into 1280, 640x480 into
// 640): the luma's one tap down is read by the final pass straight from the
// frame's bytes (job.luma_x_identity). Widths that end mid-vector (the row's
// last bytes by count: a whole vector's load would pass the plane's end, as
// the sanitizers would see), planes with padding, rows of two taps down
// (stretched taller: the resampled rows as before), both normalizations
// (folded and after), F32 and F16, one and two threads, against the
// reference.
TEST(PreprocessAccuracy, ContentAsWideAsTheFrameReadsItsLumaFromTheFrame) {
  const Case cases[] = {{1280, 720, 1280, 1280}, {1000, 562, 1000, 1000}, {202, 100, 202, 202},
                        {640, 480, 640, 640},    {202, 100, 202, 300},    {18, 10, 18, 10}};
  for (const Case& c : cases) {
    for (PixelFormat f : {PixelFormat::NV12, PixelFormat::I420}) {
      const NeatTensor tight = frame_of(f, c.sw, c.sh, 31);
      for (const NeatTensor& frame : {tight, testing::split_planes(tight, 7)}) {
        for (Interpolation m : {Interpolation::Bilinear, Interpolation::Area}) {
          for (int variant = 0; variant < 4; ++variant) {
            PreprocessParams p = variant % 2 == 0 ? imagenet(c.ow, c.oh) : PreprocessParams{};
            p.width = c.ow;
            p.height = c.oh;
            p.interpolation = m;
            p.resize_mode = c.oh == c.sh ? ResizeMode::Stretch : ResizeMode::Letterbox;
            if (c.ow == 202 && c.oh == 300) p.resize_mode = ResizeMode::Stretch;
            p.out_dtype = variant < 2 ? DType::F32 : DType::F16;
            auto ours = preprocess(frame, p, {.threads = 1 + variant % 2});
            ASSERT_TRUE(ours.ok()) << ours.error().message();
            const Errors e = level_errors(*ours, reference(frame, p), p);
            const std::string what = frame.to_string() + " -> " + std::to_string(c.ow) + "x" +
                                     std::to_string(c.oh) + " " + std::string(to_string(m)) +
                                     " variant " + std::to_string(variant);
            EXPECT_LE(e.max, variant < 2 ? 0.02 : 0.25) << what;
            EXPECT_LE(e.mean, variant < 2 ? 0.002 : 0.1) << what;
          }
        }
      }
    }
  }
}

TEST(PreprocessAccuracy, LetterboxOrderDtypesStandardsAndPaddedPlanes) {
  const NeatTensor nv12 = frame_of(PixelFormat::NV12, 1280, 720, 3);
  const NeatTensor inputs[] = {nv12, testing::split_planes(nv12, 9),
                               testing::split_planes(frame_of(PixelFormat::I420, 999, 501, 4), 5)};
  for (const NeatTensor& frame : inputs) {
    for (ResizeMode mode : {ResizeMode::Stretch, ResizeMode::Letterbox}) {
      for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
        for (Colorimetry cm : {kBT601Limited, Colorimetry{YuvMatrix::BT709, ColorRange::Full},
                               Colorimetry{YuvMatrix::BT2020, ColorRange::Limited}}) {
          PreprocessParams p = imagenet(320, 320);
          p.resize_mode = mode;
          p.out_dtype = dt;
          p.colorimetry = cm;
          p.channel_order = dt == DType::F16 ? PixelFormat::BGR : PixelFormat::RGB;
          p.batch_dim = dt == DType::BF16;
          auto ours = preprocess(frame, p, {.threads = 2});
          ASSERT_TRUE(ours.ok()) << ours.error().message();
          EXPECT_EQ(ours->dtype(), dt);
          const Errors e = level_errors(*ours, reference(frame, p), p);
          // F16 keeps 11 significant bits, BF16 8: |value| <= ~2.7 after
          // normalization, so one unit in the last place is at most
          // 2^-10 * 2.7 * 0.229 * 255 = 0.15 levels (F16) and 1.2 levels (BF16).
          const double max = dt == DType::F32 ? 0.02 : dt == DType::F16 ? 0.1 : 0.8;
          EXPECT_LE(e.max, max) << frame.to_string() << " " << to_string(dt) << " "
                                << to_string(cm);
          EXPECT_LE(e.mean, dt == DType::F32 ? 0.002 : 0.25);
        }
      }
    }
  }
}

// Large outputs through the caches and around them (streaming stores), the
// letterbox bars and nearest's pixels too: by the host's plan (Auto:
// detail::StorePlan; on an Intel host every tensor here streams, on an AMD
// Zen 4 the F32 ones with the F16 and BF16 ones' bars cached, on a Zen 3
// none), and each way forced, so that every host runs both: bars of every
// alignment (odd widths and heights put the bars' first samples anywhere in
// a vector), in every dtype. (Nearest's, against the chain:
// kernels_test.cpp, NearestLetterboxedEqualsTheChainInItsBoxAndPadsTheBars.)
TEST(PreprocessAccuracy, LargeLetterboxesStreamTheirBarsInEveryDtype) {
  const NeatTensor wide = frame_of(PixelFormat::NV12, 1280, 720, 21);
  const NeatTensor tall = frame_of(PixelFormat::I420, 480, 1000, 22);
  for (const NeatTensor* frame : {&wide, &tall}) {
    for (std::int64_t side : {1021, 1280}) {
      for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
        for (Interpolation m : {Interpolation::Bilinear, Interpolation::Area}) {
          for (StoreMode stores : {StoreMode::Auto, StoreMode::Cached, StoreMode::Streamed}) {
            PreprocessParams p = imagenet(side, side + 3);
            p.resize_mode = ResizeMode::Letterbox;
            p.out_dtype = dt;
            p.interpolation = m;
            p.stores = stores;
            auto ours = preprocess(*frame, p);
            ASSERT_TRUE(ours.ok()) << ours.error().message();
            const double max = dt == DType::F32 ? 0.02 : dt == DType::F16 ? 0.1 : 0.8;
            const Errors e = level_errors(*ours, reference(*frame, p), p);
            EXPECT_LE(e.max, max) << frame->to_string() << " -> " << side << " " << to_string(dt)
                                  << " " << to_string(stores);
            EXPECT_LE(e.mean, dt == DType::F32 ? 0.002 : 0.25);
          }
        }
      }
    }
  }
}

// The bar rows are written among the content rows of each stripe (each
// content row first fills its share): every stripe's bars, whichever rows
// its cut leaves it (all bars, bars and content, content alone), and the
// side bars of a pillarbox, over a pooled tensor that last held a stretched
// frame's pixels everywhere, each way of storing them, 1 to 4 threads.
TEST(PreprocessAccuracy, BarsSpreadAmongTheContentRowsFillEveryStripesBars) {
  const NeatTensor wide = frame_of(PixelFormat::NV12, 1280, 720, 31);
  const NeatTensor tall = frame_of(PixelFormat::I420, 480, 1000, 32);
  for (const NeatTensor* frame : {&wide, &tall}) {
    for (std::int64_t side : {640, 333}) {
      for (Interpolation m : {Interpolation::Bilinear, Interpolation::Area}) {
        for (StoreMode stores : {StoreMode::Auto, StoreMode::Cached, StoreMode::Streamed}) {
          for (int threads = 1; threads <= 4; ++threads) {
            PreprocessParams p = imagenet(side, side);
            p.interpolation = m;
            p.stores = stores;
            NEAT_ASSERT_OK(preprocess(*frame, p, {.threads = threads}));  // pixels everywhere
            p.resize_mode = ResizeMode::Letterbox;
            auto ours = preprocess(*frame, p, {.threads = threads});
            ASSERT_TRUE(ours.ok()) << ours.error().message();
            // Area's fixed-point vertical pass: within 0.05 levels.
            const bool area = m == Interpolation::Area;
            const Errors e = level_errors(*ours, reference(*frame, p), p);
            EXPECT_LE(e.max, area ? 0.05 : 0.02)
                << frame->to_string() << " -> " << side << " " << to_string(m) << " "
                << to_string(stores) << " " << threads << " threads";
            EXPECT_LE(e.mean, area ? 0.005 : 0.002);
          }
        }
      }
    }
  }
}

// Which stores bypass the caches, by the host: on a CCD's L3 (AMD Zen 4 and
// later) the bars of a frame and tensor that fit a third of it go through
// the cache; on a socket-wide L3 (Intel) nothing is counted on past the L2;
// on AMD before Zen 4, F32 rows above the L2 stream a plane at a time and
// nothing else streams; on hosts not measured nothing streams.
TEST(PreprocessStores, ThePlanFollowsTheHostsCaches) {
  constexpr std::int64_t kMiB = 1 << 20;
  const std::int64_t frame_1080p = 1920 * 1080 * 3 / 2, tensor_640 = 3 * 640 * 640 * 4,
                     tensor_320 = 3 * 320 * 320 * 4, tensor_1280 = 3 * 1280 * 1280 * 4;
  const detail::StorePlan amd = detail::store_plan(kMiB, 32 * kMiB, detail::StoreHost::CcdL3);
  EXPECT_EQ(amd.stream_above, kMiB);
  EXPECT_GT(tensor_640, amd.stream_above);                              // streamed ...
  EXPECT_LE(frame_1080p + tensor_640, amd.bars_cached_within);          // ... but its bars cached
  EXPECT_GT(3840 * 2160 * 3 / 2 + tensor_640, amd.bars_cached_within);  // from 4K streamed
  // The fused nearest rows: cached while the frame and the tensor take a
  // core's share of the L3 (720p -> 416), streamed above it (1080p -> 320).
  const std::int64_t frame_720p = 1280 * 720 * 3 / 2, tensor_416 = 3 * 416 * 416 * 4;
  EXPECT_LE(frame_720p + tensor_416, amd.nearest_cached_within);
  EXPECT_GT(frame_1080p + tensor_320, amd.nearest_cached_within);
  EXPECT_LE(amd.nearest_cached_within, amd.bars_cached_within);
  EXPECT_EQ(detail::store_plan(kMiB, 6 * kMiB, detail::StoreHost::CcdL3).nearest_cached_within,
            2 * kMiB);  // never above the bars' own bound
  const detail::StorePlan intel =
      detail::store_plan(2 * kMiB, 260 * kMiB, detail::StoreHost::SocketWideL3);
  EXPECT_EQ(intel.stream_above, kMiB);
  EXPECT_GT(tensor_320, intel.stream_above);
  EXPECT_EQ(intel.bars_cached_within, 0);  // the bars stream with the pixels
  EXPECT_EQ(intel.nearest_cached_within, 0);
  const detail::StorePlan unknown = detail::store_plan(-1, 0, detail::StoreHost::CcdL3);
  EXPECT_EQ(unknown.stream_above, kMiB);
  EXPECT_EQ(unknown.bars_cached_within, 8 * kMiB / 3);
  const detail::StorePlan zen3 =
      detail::store_plan(kMiB / 2, 256 * kMiB, detail::StoreHost::AmdBeforeZen4);
  EXPECT_EQ(zen3.stream_above, kMiB / 2);
  EXPECT_TRUE(zen3.by_rows);
  EXPECT_LE(3840 * 2160 * 3 / 2 + 4 * tensor_1280, zen3.bars_cached_within);  // bars cached
  EXPECT_LE(3840 * 2160 * 3 / 2 + 4 * tensor_1280, zen3.nearest_cached_within);
  const detail::StorePlan other =
      detail::store_plan(kMiB / 2, 32 * kMiB, detail::StoreHost::Unmeasured);
  EXPECT_LE(4 * tensor_1280, other.stream_above);  // nothing streams
  EXPECT_LE(3840 * 2160 * 3 / 2 + 4 * tensor_1280, other.bars_cached_within);
  EXPECT_LE(3840 * 2160 * 3 / 2 + 4 * tensor_1280, other.nearest_cached_within);
  EXPECT_FALSE(other.by_rows);
  EXPECT_FALSE(intel.by_rows || amd.by_rows);
  // This host's is the one for its kind, from its own sizes.
  const detail::StorePlan& host = detail::host_store_plan();
  EXPECT_EQ(&host, &detail::host_store_plan());  // read once
  const detail::StorePlan own = detail::store_plan(
      sysconf(_SC_LEVEL2_CACHE_SIZE), sysconf(_SC_LEVEL3_CACHE_SIZE), detail::store_host());
  EXPECT_EQ(host.stream_above, own.stream_above);
  EXPECT_EQ(host.bars_cached_within, own.bars_cached_within);
  EXPECT_EQ(host.by_rows, own.by_rows);
  EXPECT_EQ(host.nearest_cached_within, own.nearest_cached_within);
}

// A call's store flags: the user's mode as it says; Auto by the plan, the
// rows a plane at a time (F32 only) where the plan says by_rows.
TEST(PreprocessStores, TheModeAndThePlanChooseTheFlags) {
  constexpr std::int64_t kMiB = 1 << 20;
  const std::int64_t frame = 1920 * 1080 * 3 / 2, f32_640 = 3 * 640 * 640 * 4,
                     f32_160 = 3 * 160 * 160 * 4;
  const detail::StorePlan zen3 =
      detail::store_plan(kMiB / 2, 256 * kMiB, detail::StoreHost::AmdBeforeZen4);
  const detail::StorePlan intel =
      detail::store_plan(2 * kMiB, 260 * kMiB, detail::StoreHost::SocketWideL3);
  auto flags = [](detail::StoreChoice c) {
    return std::string(c.stream ? "stream " : "") + (c.stream_bars ? "bars " : "") +
           (c.stream_rows ? "rows" : "");
  };
  using detail::choose_stores;
  EXPECT_EQ(flags(choose_stores(StoreMode::Auto, zen3, f32_640, frame, DType::F32)), "rows");
  EXPECT_EQ(flags(choose_stores(StoreMode::Auto, zen3, f32_160, frame, DType::F32)), "");
  EXPECT_EQ(flags(choose_stores(StoreMode::Auto, zen3, f32_640, frame, DType::BF16)), "");
  EXPECT_EQ(flags(choose_stores(StoreMode::Auto, intel, f32_640, frame, DType::F32)),
            "stream bars ");
  EXPECT_EQ(flags(choose_stores(StoreMode::Auto, intel, f32_160, frame, DType::F32)), "");
  // On Zen 4 the fused nearest rows stream their bars (and pixels) from a
  // core's share of the L3, the other paths' bars from a third of it.
  const detail::StorePlan zen4 = detail::store_plan(kMiB, 32 * kMiB, detail::StoreHost::CcdL3);
  const std::int64_t frame_720p = 1280 * 720 * 3 / 2, f32_320 = 3 * 320 * 320 * 4;
  EXPECT_EQ(flags(choose_stores(StoreMode::Auto, zen4, f32_640, frame, DType::F32)), "stream ");
  EXPECT_EQ(flags(choose_stores(StoreMode::Auto, zen4, f32_640, frame, DType::F32, true)),
            "stream bars ");
  EXPECT_EQ(flags(choose_stores(StoreMode::Auto, zen4, f32_320, frame_720p, DType::F32, true)),
            "stream ");
  EXPECT_EQ(flags(choose_stores(StoreMode::Auto, zen4, f32_160, frame, DType::F32, true)), "");
  EXPECT_EQ(flags(choose_stores(StoreMode::Cached, zen4, f32_640, frame, DType::F32, true)), "");
  EXPECT_EQ(flags(choose_stores(StoreMode::Auto, zen3, f32_640, frame, DType::F32, true)), "rows");
  for (const detail::StorePlan* plan : {&zen3, &intel}) {
    EXPECT_EQ(flags(choose_stores(StoreMode::Cached, *plan, f32_640, frame, DType::F32)), "");
    EXPECT_EQ(flags(choose_stores(StoreMode::Streamed, *plan, f32_160, frame, DType::BF16)),
              "stream bars ");
  }
  // Auto follows a plan a test sets, and this host's again after.
  detail::override_store_plan(&zen3);
  EXPECT_EQ(&detail::active_store_plan(), &zen3);
  detail::override_store_plan(nullptr);
  EXPECT_EQ(&detail::active_store_plan(), &detail::host_store_plan());
}

// The plan of such a host, streaming from the smallest tensor; PlanReset
// puts this host's plan back when a test ends, however it ends.
detail::StorePlan streaming_from_zero(detail::StoreHost host) {
  detail::StorePlan plan = detail::store_plan(0, 0, host);
  plan.stream_above = 0;
  return plan;
}
struct PlanReset {
  ~PlanReset() { detail::override_store_plan(nullptr); }
};

// Expects the tensors `other` writes (params with `stores` set as it
// likes) equal to cached stores', for outputs of `sides` x side + 1 (odd
// sizes put rows and bars anywhere in a vector), stretched and letterboxed,
// every interpolation, F32 and BF16, on one thread and two.
template <class Other>
void expect_cached_values(const NeatTensor& frame, std::initializer_list<std::int64_t> sides,
                          Other other) {
  for (std::int64_t side : sides) {
    for (ResizeMode fit : {ResizeMode::Stretch, ResizeMode::Letterbox}) {
      for (Interpolation m :
           {Interpolation::Nearest, Interpolation::Bilinear, Interpolation::Area}) {
        for (DType dt : {DType::F32, DType::BF16}) {
          for (int threads : {1, 2}) {
            PreprocessParams p = imagenet(side, side + 1);
            p.resize_mode = fit;
            p.interpolation = m;
            p.out_dtype = dt;
            p.stores = StoreMode::Cached;
            auto cached = preprocess(frame, p, {.threads = threads});
            auto theirs = other(p, threads);
            ASSERT_TRUE(cached.ok() && theirs.ok());
            EXPECT_TRUE(values(*cached) == values(*theirs))
                << side << (fit == ResizeMode::Letterbox ? " letterboxed " : " stretched ")
                << to_string(m) << " " << to_string(dt) << ", threads " << threads;
          }
        }
      }
    }
  }
}

// The stores change the speed only: streamed writes the values cached does.
TEST(PreprocessStores, CachedAndStreamedWriteTheSameValues) {
  const NeatTensor frame = frame_of(PixelFormat::NV12, 1280, 720, 23);
  expect_cached_values(frame, {317, 640}, [&](PreprocessParams p, int threads) {
    p.stores = StoreMode::Streamed;
    return preprocess(frame, p, {.threads = threads});
  });
}

// Rows streamed a plane at a time (the plan of AMD before Zen 4, set here
// on every host, streaming from the smallest tensor) write the values
// cached stores write, rows shorter than two vectors too; BF16 stays cached.
TEST(PreprocessStores, RowsStreamedAPlaneAtATimeWriteTheSameValues) {
  const NeatTensor frame = frame_of(PixelFormat::I420, 1280, 720, 29);
  const detail::StorePlan by_rows = streaming_from_zero(detail::StoreHost::AmdBeforeZen4);
  const PlanReset reset;
  expect_cached_values(frame, {13, 317, 640}, [&](PreprocessParams p, int threads) {
    p.stores = StoreMode::Auto;
    detail::override_store_plan(&by_rows);
    auto out = preprocess(frame, p, {.threads = threads});
    detail::override_store_plan(nullptr);
    return out;
  });
}

// Drives a tuner with fake times: `ns` of the candidate a timed call took.
// Returns the candidates of the timed calls in order.
template <class Ns>
std::vector<int> tune(detail::StoreTuner& t, int calls, Ns ns) {
  std::vector<int> timed;
  for (int i = 0; i < calls; ++i) {
    const detail::StoreTuner::Pick pick = t.pick();
    if (!pick.timed) continue;
    timed.push_back(pick.index);
    t.record(pick.index, ns(pick.index, static_cast<int>(timed.size())));
  }
  return timed;
}

// Auto's measured stores: after kWarmup calls by the plan's, each
// candidate in runs of two calls, the second timed, kRounds each in an order
// that rotates; the least time but one kept (one outlier per candidate, slow
// or fast, does not move it), and measured again kFirstRetuneAfter calls
// later, then every kRetuneAfter.
TEST(PreprocessStores, TheTunerKeepsTheCandidateOfLeastTime) {
  using detail::StoreChoice;
  using detail::StoreTuner;
  const StoreChoice plan{true, false, false}, streamed{true, true, false}, cached{};
  StoreTuner t;
  const StoreChoice three[] = {plan, streamed, cached};
  t.offer(three, 3);
  ASSERT_EQ(t.candidates(), 3);
  EXPECT_EQ(t.chosen(), -1);
  for (int i = 0; i < StoreTuner::kWarmup; ++i) {
    const StoreTuner::Pick pick = t.pick();
    ASSERT_FALSE(pick.timed);
    ASSERT_EQ(pick.index, 0);
  }
  const std::int64_t base[] = {100'000, 60'000, 90'000};
  std::vector<int> order;
  int untimed = 0;
  for (int i = 0; i < 2 * 3 * StoreTuner::kRounds; ++i) {
    const StoreTuner::Pick pick = t.pick();
    if (!pick.timed) {
      ++untimed;
      continue;
    }
    // The run's first call (untimed) took the same candidate.
    order.push_back(pick.index);
    const auto n = std::count(order.begin(), order.end(), pick.index);
    // One outlier each: the plan's one call ten times faster (the least
    // time alone would keep it), the others' one ten times slower.
    const std::int64_t outlier = pick.index == 0 ? base[0] / 10 : 10 * base[pick.index];
    t.record(pick.index, n == 2 ? outlier : base[pick.index]);
  }
  EXPECT_EQ(untimed, 3 * StoreTuner::kRounds);
  ASSERT_EQ(order.size(), 3u * StoreTuner::kRounds);
  for (int c = 0; c < 3; ++c)
    EXPECT_EQ(std::count(order.begin(), order.end(), c), StoreTuner::kRounds) << c;
  // The rounds' orders rotate: 0 1 2, then 1 2 0, then 2 0 1.
  EXPECT_EQ((std::vector<int>(order.begin(), order.begin() + 9)),
            (std::vector<int>{0, 1, 2, 1, 2, 0, 2, 0, 1}));
  EXPECT_EQ(t.chosen(), 1);
  EXPECT_EQ(t.candidate(1), streamed);
  // Kept, untimed, for kFirstRetuneAfter calls; then measured again (no
  // warm-up now), and after that every kRetuneAfter calls.
  for (std::int64_t i = 1; i < StoreTuner::kFirstRetuneAfter; ++i) {
    const StoreTuner::Pick pick = t.pick();
    ASSERT_FALSE(pick.timed);
    ASSERT_EQ(pick.index, 1);
  }
  const std::vector<int> again = tune(t, 2 * 3 * StoreTuner::kRounds, [](int c, int) {
    return c == 2 ? std::int64_t{40'000} : std::int64_t{100'000};  // now cached wins
  });
  EXPECT_EQ(again.size(), 3u * StoreTuner::kRounds);
  EXPECT_EQ(t.chosen(), 2);
  for (std::int64_t i = 1; i < StoreTuner::kRetuneAfter; ++i) {
    const StoreTuner::Pick pick = t.pick();
    ASSERT_FALSE(pick.timed);
    ASSERT_EQ(pick.index, 2);
  }
  const std::vector<int> third = tune(t, 2 * 3 * StoreTuner::kRounds, [](int c, int) {
    return c == 0 ? std::int64_t{40'000} : std::int64_t{100'000};  // now the plan's
  });
  EXPECT_EQ(third.size(), 3u * StoreTuner::kRounds);
  EXPECT_EQ(t.chosen(), 0);
}

// The plan's candidate stays unless another is at least 3% faster; repeats
// are dropped; one candidate is never timed; new candidates start over.
TEST(PreprocessStores, TheTunerKeepsThePlanWithinThreePercent) {
  using detail::StoreChoice;
  using detail::StoreTuner;
  const StoreChoice plan{true, false, false}, streamed{true, true, false};
  StoreTuner t;
  const StoreChoice two[] = {plan, streamed};
  t.offer(two, 2);
  tune(t, StoreTuner::kWarmup + 4 * StoreTuner::kRounds,
       [](int c, int) { return c == 0 ? std::int64_t{100'000} : std::int64_t{98'000}; });
  EXPECT_EQ(t.chosen(), 0);
  t.offer(two, 2);  // the same candidates: the choice stands
  EXPECT_EQ(t.chosen(), 0);
  const StoreChoice swapped[] = {streamed, plan};
  t.offer(swapped, 2);  // others: measured again
  EXPECT_EQ(t.chosen(), -1);
  tune(t, StoreTuner::kWarmup + 4 * StoreTuner::kRounds,
       [](int c, int) { return c == 0 ? std::int64_t{100'000} : std::int64_t{96'000}; });
  EXPECT_EQ(t.chosen(), 1);
  EXPECT_EQ(t.candidate(1), plan);

  const StoreChoice repeats[] = {plan, plan};
  t.offer(repeats, 2);
  EXPECT_EQ(t.candidates(), 1);
  EXPECT_EQ(t.chosen(), 0);
  EXPECT_TRUE(tune(t, 100, [](int, int) { return std::int64_t{1}; }).empty());
  // Times for no candidate, or an untimed one, change nothing.
  t.offer(two, 2);
  t.record(-1, 1);
  t.record(7, 1);
  t.record(0, 1);  // before its timed call
  EXPECT_EQ(tune(t, StoreTuner::kWarmup + 4 * StoreTuner::kRounds,
                 [](int, int) { return std::int64_t{5}; })
                .size(),
            2u * StoreTuner::kRounds);
  EXPECT_EQ(t.chosen(), 0);
}

// Every call of Auto while its stores are measured (the plan set here so
// that the fused nearest rows take the tuner on any host) writes the values
// cached stores write, whichever candidate it took.
TEST(PreprocessStores, MeasuredStoresWriteTheSameValues) {
  const NeatTensor frame = frame_of(PixelFormat::NV12, 1280, 720, 31);
  const detail::StorePlan plan = streaming_from_zero(detail::StoreHost::CcdL3);
  const PlanReset reset;
  for (ResizeMode fit : {ResizeMode::Stretch, ResizeMode::Letterbox}) {
    for (int threads : {1, 2}) {
      PreprocessParams p = imagenet(640, 641);
      p.resize_mode = fit;
      p.interpolation = Interpolation::Nearest;
      p.stores = StoreMode::Cached;
      auto cached = preprocess(frame, p, {.threads = threads});
      ASSERT_TRUE(cached.ok());
      const std::vector<double> want = values(*cached);
      p.stores = StoreMode::Auto;
      detail::override_store_plan(&plan);
      for (int call = 0; call < detail::StoreTuner::kWarmup + 4 * detail::StoreTuner::kRounds + 2;
           ++call) {
        auto out = preprocess(frame, p, {.threads = threads});
        ASSERT_TRUE(out.ok());
        ASSERT_TRUE(values(*out) == want) << "call " << call << ", threads " << threads;
      }
      detail::override_store_plan(nullptr);
    }
  }
}

// Degenerate and extreme geometries: one-pixel frames and outputs, area
// downscales with thousands of taps per output (chunked vertical taps),
// extreme aspect ratios, letterboxed to one row; large ratios and enlarging.
TEST(PreprocessAccuracy, ExtremeGeometriesMatchTheReference) {
  const Case extremes[] = {
      {1, 1, 1, 1},
      {1, 1, 640, 480},
      {2, 2, 3, 3},
      {1920, 1080, 1, 1},
      {3000, 8, 5, 300},
      {8, 3000, 300, 5},
      {1920, 1080, 1000, 1},
      {4, 2, 640, 640},
      // The ratios 16-byte blocks cannot take (gathers, permutes, the
      // vertical-first path for large area ratios), and enlarging.
      {1920, 1080, 320, 320},
      {3840, 2160, 416, 416},
      {1280, 720, 1280, 1280},
      {1920, 1080, 320, 180},  // area 6x: rows of full weight summed first
  };
  for (const Case& c : extremes) {
    for (PixelFormat f : {PixelFormat::NV12, PixelFormat::I420}) {
      const NeatTensor frame = frame_of(f, c.sw, c.sh, 17);
      for (Interpolation m : {Interpolation::Bilinear, Interpolation::Area}) {
        for (ResizeMode mode : {ResizeMode::Stretch, ResizeMode::Letterbox}) {
          PreprocessParams p = imagenet(c.ow, c.oh);
          p.interpolation = m;
          p.resize_mode = mode;
          auto ours = preprocess(frame, p, {.threads = 2});
          ASSERT_TRUE(ours.ok()) << ours.error().message();
          // Up to ten area taps, each weight within 1/65534 (docs/conversions.md):
          // still 20 times inside the contract's 1 level max, 0.25 mean.
          const Errors e = level_errors(*ours, reference(frame, p), p);
          EXPECT_LE(e.max, 0.05) << c.sw << "x" << c.sh << " -> " << c.ow << "x" << c.oh << " "
                                 << to_string(f) << " " << to_string(m)
                                 << (mode == ResizeMode::Letterbox ? " letterbox" : "");
          EXPECT_LE(e.mean, 0.005);
        }
      }
    }
  }
}

// An exact 2x, 3x, 4x, 6x or 12x box (area, and bilinear at 2x) takes the
// exact-box path: integer sums, no tables (3x, 6x and 12x: rows summed
// first; 3x's chroma, a 1.5x area, through its tables). Area exact across
// only sums its rows across without tables too. Every 4:2:0 layout,
// tails of every length, letterboxed and stretched, against the exact reference.
TEST(PreprocessAccuracy, ExactBoxesAreThePlainMeanInEveryLayout) {
  struct Box {
    std::int64_t sw, sh, ow, oh;
    Interpolation m;
    ResizeMode mode;
    bool weighed = false;  // rows by area's fixed-point vertical pass
  };
  const Box boxes[] = {
      {1280, 720, 320, 320, Interpolation::Area, ResizeMode::Letterbox},      // 4x
      {1280, 720, 640, 640, Interpolation::Area, ResizeMode::Letterbox},      // 2x
      {1280, 720, 640, 640, Interpolation::Bilinear, ResizeMode::Letterbox},  // 2x
      {1304, 724, 326, 181, Interpolation::Area, ResizeMode::Stretch},        // 4x, tails
      {1302, 722, 651, 361, Interpolation::Bilinear, ResizeMode::Stretch},    // 2x, tails
      {8, 8, 2, 2, Interpolation::Area, ResizeMode::Stretch},                 // 4x, tails only
      {1920, 1080, 320, 320, Interpolation::Area, ResizeMode::Letterbox},     // 6x
      {342, 186, 57, 31, Interpolation::Area, ResizeMode::Stretch},           // 6x, tails
      {636, 348, 53, 29, Interpolation::Area, ResizeMode::Stretch},           // 12x, tails
      {1536, 864, 128, 128, Interpolation::Area, ResizeMode::Letterbox},      // 12x
      {1920, 1080, 640, 640, Interpolation::Area, ResizeMode::Letterbox},     // 3x, chroma 1.5x
      {171, 93, 57, 31, Interpolation::Area, ResizeMode::Stretch},            // 3x, tails
      // Only across: rows summed without tables, the vertical taps weighed
      // (from 1.6 rows down, by the fixed-point vertical pass).
      {1926, 1081, 321, 173, Interpolation::Area, ResizeMode::Stretch, true},  // 6, 6.25 down
      {1282, 723, 641, 211, Interpolation::Area, ResizeMode::Stretch, true},   // 2, 3.4 down
      {1924, 1083, 481, 300, Interpolation::Area, ResizeMode::Stretch, true},  // 4, 3.6 down
      {1932, 1083, 161, 100, Interpolation::Area, ResizeMode::Stretch, true},  // 12, 10.8 down
      {1932, 2163, 161, 233, Interpolation::Area, ResizeMode::Stretch, true},  // 12, 9.3: 2 passes
      {1923, 1081, 641, 601, Interpolation::Area, ResizeMode::Stretch},  // 3 across (chroma 1.5)
      {1923, 1081, 641, 401, Interpolation::Area, ResizeMode::Stretch, true},  // 3, 2.7 down
      {1282, 723, 641, 601, Interpolation::Area, ResizeMode::Stretch},  // 2, 1.2 down: row by row
  };
  for (const Box& b : boxes) {
    for (PixelFormat f :
         {PixelFormat::NV12, PixelFormat::NV21, PixelFormat::I420, PixelFormat::YV12}) {
      const NeatTensor frame = frame_of(f, b.sw, b.sh, 23);
      PreprocessParams p = imagenet(b.ow, b.oh);
      p.interpolation = b.m;
      p.resize_mode = b.mode;
      const std::vector<double> want = reference(frame, p);
      for (int threads : {1, 2}) {
        auto ours = preprocess(frame, p, {.threads = threads});
        ASSERT_TRUE(ours.ok()) << ours.error().message();
        const Errors e = level_errors(*ours, want, p);
        // The fixed-point pass: the bounds of AreaFixedPointVerticalPass...
        // below (measured 0.024 and 0.0035 here).
        EXPECT_LE(e.max, b.weighed ? 0.05 : 0.02)
            << b.sw << "x" << b.sh << " -> " << b.ow << "x" << b.oh << " " << to_string(f) << " "
            << to_string(b.m) << ", threads " << threads;
        EXPECT_LE(e.mean, b.weighed ? 0.008 : 0.002);
      }
    }
  }
}

// A frame whose rows alternate between extremes (luma 0 and 255, chroma 16
// and 240, each row flat across): the worst case for area's fixed-point
// vertical pass (preprocess_box-inl.h), whose error sits in the partial rows'
// weights and their rounding. Ratios that are not whole down (2.6x to 9.2x),
// where each output row takes rows of full weight and two partial ones.
NeatTensor striped_frame(PixelFormat f, std::int64_t w, std::int64_t h) {
  auto t = NeatTensor::allocate_image(f, w, h, {.zero_fill = false});
  EXPECT_TRUE(t.ok());
  auto wr = std::move(*t).make_writable();
  EXPECT_TRUE(wr.ok());
  {
    auto m = wr->map(MapMode::Write);
    for (int i = 0; i < wr->plane_count(); ++i) {
      const PlaneLayout& l = wr->plane_layout(i);
      auto* base = reinterpret_cast<std::uint8_t*>(*m->mutable_plane_data(l.role));
      for (std::int64_t r = 0; r < l.rows; ++r) {
        const std::uint8_t level = i == 0 ? (r % 2 ? 255 : 0) : ((r / 2) % 2 ? 240 : 16);
        std::memset(base + r * l.row_stride, level, static_cast<std::size_t>(l.cols * l.samples));
      }
    }
  }
  return *std::move(wr);
}

// Runs f on the CPU's best instruction set, then, where the CPU runs AVX2
// and it is not already the best, on AVX2 (Highway's test mock; restored
// however f ends): the code of most machines without AVX-512, with kernels
// of its own for large ratios (output by output).
template <class F>
void on_each_engine(F&& f) {
  f("native");
  if ((hwy::SupportedTargets() & HWY_AVX2) == 0 ||
      std::string(preprocess_simd_target()) == "AVX2") {
    return;
  }
  struct Mock {
    Mock() {
      hwy::SetSupportedTargetsForTest(HWY_AVX2);
      hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    }
    ~Mock() {
      hwy::SetSupportedTargetsForTest(0);
      hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    }
  } mock;
  ASSERT_STREQ(preprocess_simd_target(), "AVX2");
  f("AVX2");
}

// preprocess(frame, p) on each engine within `max` and `mean` levels of
// `want`; `what` names the case in a failure.
void expect_within_on_each_engine(const NeatTensor& frame, const PreprocessParams& p,
                                  const std::vector<double>& want, double max, double mean,
                                  const std::string& what) {
  on_each_engine([&](const char* engine) {
    auto ours = preprocess(frame, p);
    ASSERT_TRUE(ours.ok()) << ours.error().message();
    const Errors e = level_errors(*ours, want, p);
    EXPECT_LE(e.max, max) << what << " " << engine;
    EXPECT_LE(e.mean, mean) << what << " " << engine;
  });
}

// Area of c (mode) from random and striped frames of both 4:2:0 layouts,
// on each engine, within max and mean levels of the exact reference.
void expect_area_within(const Case& c, ResizeMode mode, double max, double mean) {
  for (PixelFormat f : {PixelFormat::NV12, PixelFormat::I420}) {
    for (int stripes = 0; stripes < 2; ++stripes) {
      const NeatTensor frame = stripes ? striped_frame(f, c.sw, c.sh) : frame_of(f, c.sw, c.sh, 41);
      PreprocessParams p = imagenet(c.ow, c.oh);
      p.interpolation = Interpolation::Area;
      p.resize_mode = mode;
      expect_within_on_each_engine(frame, p, reference(frame, p), max, mean,
                                   std::to_string(c.sw) + "x" + std::to_string(c.sh) + " -> " +
                                       std::to_string(c.ow) + "x" + std::to_string(c.oh) + " " +
                                       std::string(to_string(f)) +
                                       (stripes ? " stripes" : " random"));
    }
  }
}

// Boxes of 2 and 4 (luma 2 x 2 and chroma 1 x 1: 720p -> 640 letterboxed;
// 4 x 4 and 2 x 2: 720p -> 320 letterboxed area) sum, convert and store each
// vector in one pass (preprocess_simd.cpp, BoxRowFused): every layout, dtype
// and engine, rows a whole number of vectors, ending a few samples in (the
// row's last outputs copied first) or, for box 2's pairs of vectors, past the
// first, aligned for streaming stores or not. Bilinear at 4x and 6x both
// ways too (PreprocessJob::pair_box): luma's 2 x 2 one sample in (4x) or
// two (6x), so that the last output's bytes end before the row does and
// the row's last vector is copied first.
TEST(PreprocessAccuracy, BoxesOfTwoAndFourAndBilinearPairsInOnePassInEveryLayoutDtypeAndEngine) {
  struct Box {
    std::int64_t sw, sh, ow, oh;
    Interpolation m;
    ResizeMode mode;
  };
  const Box boxes[] = {
      {1280, 720, 640, 640, Interpolation::Area, ResizeMode::Letterbox},       // streamed
      {1302, 722, 651, 361, Interpolation::Bilinear, ResizeMode::Stretch},     // 11 past 640
      {114, 62, 57, 31, Interpolation::Bilinear, ResizeMode::Stretch},         // 25 past 32
      {80, 60, 40, 43, Interpolation::Area, ResizeMode::Letterbox},            // 8 past 32
      {4, 4, 2, 2, Interpolation::Bilinear, ResizeMode::Stretch},              // only the last
      {1280, 720, 320, 320, Interpolation::Area, ResizeMode::Letterbox},       // 4: streamed
      {1304, 724, 326, 181, Interpolation::Area, ResizeMode::Stretch},         // 4: 6 past 320
      {92, 64, 23, 16, Interpolation::Area, ResizeMode::Stretch},              // 4: 7 past 16
      {8, 8, 2, 2, Interpolation::Area, ResizeMode::Stretch},                  // 4: only the last
      {1280, 720, 320, 320, Interpolation::Bilinear, ResizeMode::Letterbox},   // pairs 4x
      {1284, 724, 321, 181, Interpolation::Bilinear, ResizeMode::Stretch},     // 4x: 1 past 320
      {84, 64, 21, 16, Interpolation::Bilinear, ResizeMode::Stretch},          // 4x: 5 past 16
      {8, 8, 2, 2, Interpolation::Bilinear, ResizeMode::Stretch},              // 4x: only the last
      {1920, 1080, 320, 320, Interpolation::Bilinear, ResizeMode::Letterbox},  // pairs 6x
      {1926, 1086, 321, 181, Interpolation::Bilinear, ResizeMode::Stretch},    // 6x: 1 past 320
      {222, 66, 37, 11, Interpolation::Bilinear, ResizeMode::Stretch},         // 6x: 5 past 32
      {12, 12, 2, 2, Interpolation::Bilinear, ResizeMode::Stretch},            // 6x: only the last
  };
  for (const Box& b : boxes) {
    for (PixelFormat f :
         {PixelFormat::NV12, PixelFormat::NV21, PixelFormat::I420, PixelFormat::YV12}) {
      const NeatTensor frame = frame_of(f, b.sw, b.sh, 29);
      for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
        PreprocessParams p = imagenet(b.ow, b.oh);
        p.interpolation = b.m;
        p.resize_mode = b.mode;
        p.out_dtype = dt;
        const double max = dt == DType::F32 ? 0.02 : dt == DType::F16 ? 0.1 : 0.8;
        expect_within_on_each_engine(
            frame, p, reference(frame, p), max, dt == DType::F32 ? 0.002 : 0.25,
            std::to_string(b.sw) + "x" + std::to_string(b.sh) + " -> " + std::to_string(b.ow) +
                "x" + std::to_string(b.oh) + " " + std::string(to_string(f)) + " " +
                std::string(to_string(dt)));
      }
    }
  }
}

TEST(PreprocessAccuracy, AreaFixedPointVerticalPassStaysWithinItsBound) {
  const Case cases[] = {
      {1920, 1080, 416, 416},  // 4.6x across, 2.6x down
      {1920, 1080, 608, 608},  // 3.2x, 1.8x (three taps, summed from 1.6 rows on)
      {3840, 2160, 416, 416},  // 9.2x, 5.2x (six passes of tap pairs across, compiled in)
      {3840, 2160, 448, 252},  // 8.6x both (five)
      {3840, 2160, 608, 608},  // 6.3x, 3.6x (four; luma 8 taps, as 7.5x)
      {1280, 720, 416, 234},   // 3.1x both
      {1926, 1086, 321, 161},  // 6x across (no tables), 6.75x down
  };
  // Measured: at most 0.034 levels (random, 4K -> 416; 0.022 before the
  // pass), mean 0.006 (stripes, 4K -> 416) and 0.0097 (stripes, 4K -> 448 x
  // 252, whose 8.6 rows a sum leave 2^-3 level where 5.2 leave 2^-4): the
  // contract allows 1 and 0.25.
  for (const Case& c : cases)
    expect_area_within(c, ResizeMode::Stretch, 0.05, 0.012);
}

// Area at large ratios (classifier inputs: 224, 112, 64 from HD and 4K):
// each output row's source rows summed first (the fixed-point vertical
// pass), then each output's 17 to 64 taps across read as one run of the row
// of sums (the output-by-output tables of 32 and 64 taps; VBMI's permutes
// take up to 16). Both 4:2:0 layouts, odd tails, letterboxed, each engine,
// against the exact reference.
TEST(PreprocessAccuracy, AreaAtLargeRatiosTakesEachOutputsManyTaps) {
  const struct {
    Case c;
    ResizeMode mode;
  } cases[] = {
      {{1920, 1080, 112, 112}, ResizeMode::Stretch},  // 17.1x across (32-tap tables), 9.6x down
      {{1280, 720, 40, 40}, ResizeMode::Stretch},     // 32x across, 18x down
      {{1280, 720, 24, 24}, ResizeMode::Stretch},     // 53.3x across (64-tap tables), 30x down
      {{3843, 723, 100, 20}, ResizeMode::Stretch},    // 38.4x, 36.2x: odd widths, tails
      {{1920, 1080, 96, 96}, ResizeMode::Letterbox},  // 20x both, bars above and below
      {{3840, 2160, 224, 224}, ResizeMode::Stretch},  // 17.1x, 9.6x: UV sums 8.6x
      {{3840, 2160, 64, 24}, ResizeMode::Stretch},    // 60x, 90x: 90 rows to an output row
  };
  // Coarser sums at 10-36 rows (2^-3 to 2^-0 level) than at 5 (2^-4):
  // measured mean 0.0111 (stripes), 0.0087 (random, 24x24); the contract
  // allows 0.25 (and 1 level at most).
  for (const auto& [c, mode] : cases)
    expect_area_within(c, mode, 0.05, 0.015);
}

// The fixed-point vertical pass sums an output row's last one to four full
// rows, shifts and adds both partial rows in one pass, and the rows before
// through the row sums: every count of full rows from 0 to 10 between two
// partial rows (1.5x to 10.5x down; 4.6x across, so the sums are taken as
// 16-bit samples on AVX2 too).
TEST(PreprocessAccuracy, AreaFixedPointSumsEveryCountOfFullRows) {
  for (int half = 3; half <= 21; half += 2) {
    const std::int64_t sh = 12 * half;  // 24 output rows at half / 2 down
    for (PixelFormat f : {PixelFormat::NV12, PixelFormat::I420}) {
      const NeatTensor frame = frame_of(f, 1920, sh, 43);
      PreprocessParams p = imagenet(416, 24);
      p.interpolation = Interpolation::Area;
      expect_within_on_each_engine(frame, p, reference(frame, p), 0.05, 0.008,
                                   "1920x" + std::to_string(sh) + " " + std::string(to_string(f)));
    }
  }
}

// Bilinear at an even ratio across weighs two samples by half each: pairs
// picked without tables (XPickRow) where the target takes them, the tables'
// blocks elsewhere. Each ratio, every 4:2:0 layout, tails, each engine,
// against the exact reference.
TEST(PreprocessAccuracy, BilinearAtEvenRatiosAcrossIsTheMeanOfEachPair) {
  const Case cases[] = {
      {1284, 722, 321, 200},   // luma 4x, chroma 2x
      {1926, 1080, 321, 200},  // 6x, chroma 3x (picks)
      {3852, 2164, 321, 250},  // 12x, chroma 6x
      {1282, 720, 641, 600},   // 2x, chroma 1x
      {1280, 720, 320, 180},   // 4x both ways, letterboxed below
      {3840, 2160, 320, 180},  // 12x both ways (chroma 6x), letterboxed: both rows' pairs
      {3852, 2172, 321, 181},  // the same by permutes of three registers, tails
  };
  for (const Case& c : cases) {
    for (PixelFormat f :
         {PixelFormat::NV12, PixelFormat::NV21, PixelFormat::I420, PixelFormat::YV12}) {
      const NeatTensor frame = frame_of(f, c.sw, c.sh, 29);
      PreprocessParams p = imagenet(c.ow, c.oh);
      p.interpolation = Interpolation::Bilinear;
      if (c.ow == 320 && c.oh == 180) {
        p.width = p.height = 320;
        p.resize_mode = ResizeMode::Letterbox;
      }
      expect_within_on_each_engine(frame, p, reference(frame, p), 0.02, 0.002,
                                   std::to_string(c.sw) + "x" + std::to_string(c.sh) + " -> " +
                                       std::to_string(c.ow) + "x" + std::to_string(c.oh) + " " +
                                       std::string(to_string(f)));
    }
  }
}

// Bilinear at 2 or more rows down, where no two output rows share a source
// row, weighs each output row's two rows into one in one pass: the 16-byte
// blocks (1080p -> 416), or with VBMI the permutes out of windows (4K -> 416
// to 608, whose rows do not fit the blocks), with the next row's rows
// prefetched. Each 4:2:0 layout, tails (counts not a whole number of
// vectors), letterboxed, each engine, against the exact reference.
TEST(PreprocessAccuracy, BilinearTwoRowsDownAreWeighedInOnePass) {
  const struct {
    Case c;
    ResizeMode mode;
  } cases[] = {
      {{3840, 2160, 416, 416}, ResizeMode::Stretch},    // 9.2x across, 5.2x down: two windows
      {{3840, 2160, 512, 512}, ResizeMode::Letterbox},  // 7.5x both ways, 288 rows
      {{3840, 2160, 608, 608}, ResizeMode::Stretch},    // 6.3x, 3.6x
      {{3852, 2172, 421, 409}, ResizeMode::Stretch},    // tails of 5 and 10 outputs (UV)
      {{1920, 1080, 416, 416}, ResizeMode::Letterbox},  // 4.6x: the blocks
  };
  for (const auto& [c, mode] : cases) {
    for (PixelFormat f :
         {PixelFormat::NV12, PixelFormat::NV21, PixelFormat::I420, PixelFormat::YV12}) {
      const NeatTensor frame = frame_of(f, c.sw, c.sh, 31);
      PreprocessParams p = imagenet(c.ow, c.oh);
      p.interpolation = Interpolation::Bilinear;
      p.resize_mode = mode;
      expect_within_on_each_engine(frame, p, reference(frame, p), 0.02, 0.002,
                                   std::to_string(c.sw) + "x" + std::to_string(c.sh) + " -> " +
                                       std::to_string(c.ow) + "x" + std::to_string(c.oh) + " " +
                                       std::string(to_string(f)));
    }
  }
}

// The frame with each plane in memory of exactly its bytes (rows unpadded,
// nothing after the last): a read past a plane is a read past its memory.
NeatTensor exact_planes(const NeatTensor& f) {
  std::vector<PlaneSpec> specs;
  auto src = f.map();
  for (int i = 0; i < f.plane_count(); ++i) {
    const PlaneLayout& p = f.plane_layout(i);
    const std::int64_t row = p.cols * p.samples;
    auto bytes = std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(row * p.rows));
    const std::byte* s = *src->plane_data(p.role);
    for (std::int64_t r = 0; r < p.rows; ++r)
      std::memcpy(bytes->data() + r * row, s + r * p.row_stride, static_cast<std::size_t>(row));
    auto storage = wrap_memory(bytes->data(), static_cast<std::int64_t>(bytes->size()), bytes);
    EXPECT_TRUE(storage.ok());
    specs.push_back({p.role, *storage, row, 0});
  }
  auto out = NeatTensor::compose_planes(f.pixel_format(), f.image().width, f.image().height, specs);
  EXPECT_TRUE(out.ok()) << out.error().message();
  return *std::move(out)->with_colorimetry(f.image().colorimetry);
}

// Each plane in memory that ends with its last row: no path reads past a
// row's end (the sanitizer build sees a read past the memory), picks that
// start mid-group (bilinear at 3x starts at sample 1) included.
TEST(PreprocessAccuracy, NoPathReadsPastAPlane) {
  const Case cases[] = {
      {1920, 1080, 640, 640},  // bilinear 3x across: picks from sample 1
      {1920, 1080, 320, 180},  // 6x: exact boxes, picks, area across
      {1284, 722, 321, 240},   // 4x across
      {1932, 1083, 161, 100},  // 12x across
      {642, 362, 321, 181},    // 2x
      {963, 541, 321, 200},    // 3x, chroma 1.5x
      {1920, 1080, 416, 416},  // 4.6x area: output by output (AVX2), sums and bytes
      {3843, 723, 270, 601},   // 14.2x area across (16 taps), chroma 7.1x
      {1280, 720, 512, 720},   // 2.5x across (VBMI pattern picks), every row read
  };
  for (const Case& c : cases) {
    for (PixelFormat f : {PixelFormat::NV12, PixelFormat::I420}) {
      const NeatTensor frame = exact_planes(frame_of(f, c.sw, c.sh, 31));
      for (Interpolation m :
           {Interpolation::Bilinear, Interpolation::Area, Interpolation::Nearest}) {
        PreprocessParams p = imagenet(c.ow, c.oh);
        p.interpolation = m;
        const std::vector<double> want =
            m == Interpolation::Nearest ? std::vector<double>() : reference(frame, p);
        on_each_engine([&](const char* engine) {
          auto ours = preprocess(frame, p);
          ASSERT_TRUE(ours.ok()) << ours.error().message();
          if (m == Interpolation::Nearest) return;  // its values: kernels_test.cpp, the chain
          const Errors e = level_errors(*ours, want, p);
          EXPECT_LE(e.max, 0.05) << c.sw << "x" << c.sh << " -> " << c.ow << "x" << c.oh << " "
                                 << to_string(f) << " " << to_string(m) << " " << engine;
        });
      }
    }
  }
}

TEST(PreprocessAccuracy, ThreadsChangeNothing) {
  const NeatTensor frame = frame_of(PixelFormat::NV12, 1001, 333, 11);
  for (Interpolation m : {Interpolation::Bilinear, Interpolation::Area}) {
    PreprocessParams p = imagenet(303, 211);
    p.interpolation = m;
    auto one = preprocess(frame, p, {.threads = 1});
    auto two = preprocess(frame, p, {.threads = 2});
    NEAT_ASSERT_OK(one);
    NEAT_ASSERT_OK(two);
    EXPECT_EQ(values(*one), values(*two));
  }
}

// Which path a geometry takes: exact ratios find their periodic pattern (the
// interleaved-load path), others none (the gather path). The accuracy tests
// above cover both through these geometries.
TEST(PreprocessAxis, ExactRatiosFindTheirPattern) {
  using detail::build_axis;
  using detail::ResampleAxis;
  using detail::Sampling;
  auto pattern = [](std::int64_t count, std::int64_t grid, int shift, Sampling m) {
    ResampleAxis a;
    build_axis(a, count, grid, shift, m);
    return a;
  };
  ResampleAxis a = pattern(640, 1920, 0, Sampling::Bilinear);  // luma 3x: the middle sample
  EXPECT_EQ(a.group_out, 1);
  EXPECT_EQ(a.group_in, 3);
  EXPECT_FLOAT_EQ(a.lane_weight[0][1], 1.f);
  EXPECT_FALSE(a.lane_used[0]);
  a = pattern(640, 1920, 1, Sampling::Bilinear);  // its chroma: samples 0 and 2 of 3, 2 outputs
  EXPECT_EQ(a.group_out, 2);
  EXPECT_EQ(a.group_in, 3);
  EXPECT_FLOAT_EQ(a.lane_weight[0][0], 1.f);
  EXPECT_FLOAT_EQ(a.lane_weight[1][2], 1.f);
  EXPECT_FALSE(a.lane_used[1]);
  a = pattern(640, 1280, 0, Sampling::Bilinear);  // 2x: both samples, half each
  EXPECT_EQ(a.group_in, 2);
  EXPECT_FLOAT_EQ(a.lane_weight[0][0], 0.5f);
  EXPECT_EQ(pattern(640, 1280, 1, Sampling::Bilinear).group_in, 1);  // chroma 1:1
  a = pattern(640, 1920, 0, Sampling::Area);                         // area 3x: a third each
  EXPECT_EQ(a.group_in, 3);
  EXPECT_NEAR(a.lane_weight[0][2], 1.0 / 3, 1e-6);
  a = pattern(640, 1920, 1, Sampling::Area);  // its chroma: 2/3 + 1/3, then 1/3 + 2/3
  EXPECT_EQ(a.group_out, 2);
  EXPECT_NEAR(a.lane_weight[0][0], 2.0 / 3, 1e-6);
  EXPECT_NEAR(a.lane_weight[1][2], 2.0 / 3, 1e-6);
  // Bilinear at an odd ratio puts every output on a sample: picks, no weights.
  EXPECT_TRUE(pattern(640, 1920, 0, Sampling::Bilinear).picks);
  EXPECT_TRUE(pattern(640, 1920, 1, Sampling::Bilinear).picks);
  EXPECT_TRUE(pattern(128, 640, 0, Sampling::Bilinear).picks);  // 5x
  EXPECT_TRUE(pattern(608, 1920, 0, Sampling::Nearest).picks);
  EXPECT_FALSE(pattern(640, 1280, 0, Sampling::Bilinear).picks);  // 2x: two samples
  EXPECT_FALSE(pattern(608, 1920, 0, Sampling::Bilinear).picks);
  EXPECT_FALSE(pattern(640, 1920, 0, Sampling::Area).picks);
  EXPECT_EQ(pattern(608, 1920, 0, Sampling::Bilinear).group_out, 0);  // no pattern: gathers
  // Picks in a pattern whose 16 outputs read at most 64 bytes: one permute
  // each, at pick_base (plus the channel) in pick_span bytes per vector.
  auto picks_at = [](const ResampleAxis& x, std::vector<int> want) {
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(x.pick_base[i], want[i]) << i;
  };
  a = pattern(640, 1920, 0, Sampling::Bilinear);  // luma 3x: samples 1, 4, 7, ...
  EXPECT_EQ(a.pick_span, 48);
  picks_at(a, {1, 4, 7, 10});
  ResampleAxis uv;  // NV12 chroma of 1080p -> 640: UV pairs 0, 2, 3, 5, ... (2 bytes each)
  build_axis(uv, 640, 1920, 1, Sampling::Bilinear, 2);
  EXPECT_EQ(uv.pick_span, 48);
  picks_at(uv, {0, 4, 6, 10, 12, 16});
  a = pattern(1280, 1920, 0, Sampling::Nearest);  // 1.5x: samples 0, 1, 3, 4, ...
  EXPECT_EQ(a.pick_span, 24);
  picks_at(a, {0, 1, 3, 4, 6});
  EXPECT_EQ(pattern(640, 1920, 0, Sampling::Area).pick_span, 0);     // weights: no picks
  EXPECT_EQ(pattern(608, 1920, 0, Sampling::Nearest).pick_span, 0);  // no pattern
  EXPECT_EQ(pattern(160, 1920, 0, Sampling::Nearest).pick_span, 0);  // 12x: 192 bytes
  EXPECT_FALSE(a.pick_period);
  // No group pattern, but every 16 outputs repeat the first 16's picks a
  // whole number of samples on: 720p -> 512 nearest, 2.5x (40 bytes a
  // vector), its NV12 chroma 1.25x on the full grid (20 UV pairs: 40 bytes).
  a = pattern(512, 1280, 0, Sampling::Nearest);
  EXPECT_EQ(a.group_out, 0);
  EXPECT_TRUE(a.pick_period);
  EXPECT_EQ(a.pick_span, 40);
  picks_at(a, {0, 2, 5, 7, 10, 12, 15, 17, 20, 22, 25, 27, 30, 32, 35, 37});
  build_axis(uv, 512, 1280, 1, Sampling::Nearest, 2);
  EXPECT_TRUE(uv.pick_period);
  EXPECT_EQ(uv.pick_span, 40);
  picks_at(uv, {0, 2, 4, 6, 10, 12, 14, 16, 20});
  a = pattern(514, 1285, 0, Sampling::Nearest);  // 2.5x with a tail of 2 outputs
  EXPECT_TRUE(a.pick_period);
  EXPECT_EQ(a.pick_span, 40);
  EXPECT_EQ(pattern(512, 1920, 0, Sampling::Nearest).pick_span, 60);  // 3.75x: 60 bytes
  EXPECT_EQ(pattern(256, 1920, 0, Sampling::Nearest).pick_span, 0);   // 7.5x: 120 bytes
  EXPECT_EQ(pattern(416, 1280, 0, Sampling::Nearest).pick_span, 0);   // 3.08x: no period
  EXPECT_EQ(pattern(512, 1280, 0, Sampling::Bilinear).pick_span, 0);  // weights: no picks
  // Picks with no period whose every vector reads at most 64 bytes: the span
  // tables (720p -> 416 nearest, 3.08x; its NV12 chroma 1.54x, 2 bytes a
  // pair): each vector's load inside the row, each output's byte in it.
  for (auto [count, grid, shift, step] :
       {std::array{416, 1280, 0, 1}, std::array{416, 1280, 1, 2}, std::array{417, 1282, 0, 1}}) {
    ResampleAxis s;
    build_axis(s, count, grid, shift, Sampling::Nearest, step);
    ASSERT_EQ(s.pick_span, 0);
    ASSERT_EQ(s.span_base.size(), static_cast<std::size_t>(s.stride / 16));
    for (std::int64_t o = 0; o < s.count; ++o) {
      const auto v = static_cast<std::size_t>(o / 16);
      EXPECT_GE(s.span_base[v], 0);
      EXPECT_LE(s.span_base[v] + 64, s.source * step);
      for (int ch = 0; ch < step; ++ch) {
        const int at = s.span_permute[ch][v * 64 + static_cast<std::size_t>(4 * (o % 16))];
        EXPECT_LT(at, 64);
        EXPECT_EQ(s.span_base[v] + at, s.first[static_cast<std::size_t>(o)] * step + ch) << o;
      }
    }
  }
  EXPECT_TRUE(pattern(416, 1920, 0, Sampling::Nearest).span_base.empty());   // 4.6x: 74 bytes
  EXPECT_TRUE(pattern(416, 1280, 0, Sampling::Bilinear).span_base.empty());  // weights
  EXPECT_EQ(pattern(300, 1001, 0, Sampling::Area).group_out, 0);
  a = pattern(640, 1080, 0, Sampling::Area);  // every weight of an output sums to 1
  for (std::int64_t o = 0; o < a.count; ++o) {
    double sum = 0;
    for (int t = 0; t < a.taps; ++t)
      sum += a.weight[static_cast<std::size_t>(t * a.stride + o)];
    ASSERT_NEAR(sum, 1.0, 1e-6) << o;
  }
}

// Area's row-sum plans prefetch the next output row's rows from 1.5 rows
// down (RowSumPlan::ahead): exactly where those rows start (the first of
// full or of partial weight), never a row past the plane, none for the last
// row; below 1.5 rows down, none at all.
TEST(PreprocessAxis, RowSumPlansPrefetchTheNextRowsFromOneAndAHalfDown) {
  using detail::build_axis;
  using detail::ResampleAxis;
  using detail::RowSumPlan;
  using detail::Sampling;
  struct PlanCase {
    std::int64_t count, grid;
    int shift;
    bool ahead;
  };
  const PlanCase cases[] = {
      {416, 2160, 0, true},  // 4K -> 416: 5.2 rows down
      {608, 2160, 0, true},  // 3.6 down
      {342, 2160, 0, true},  // 4K -> 608 letterboxed: 6.3 down
      {100, 1083, 0, true},  // 10.8 down, uneven
      {360, 1080, 0, true},  // exactly 3 down
      {416, 2160, 1, true},  // its chroma: 2.6 down
      {416, 1080, 0, true},  // 1080p -> 416: 2.6 down
      {640, 1080, 0, true},  // 1.7 down
      {416, 720, 0, true},   // 720p -> 416: 1.7 down
      {480, 720, 0, true},   // exactly 1.5 down
      {512, 720, 0, false},  // 1.4 down
      {608, 720, 0, false},
  };
  // A plan's first row, of full or of partial weight.
  auto lowest = [](const RowSumPlan& v) {
    std::int64_t low = v.n_full > 0 ? v.full_first : std::int64_t{1} << 40;
    for (int i = 0; i < v.n_part; ++i)
      low = std::min<std::int64_t>(low, v.part[i]);
    return low;
  };
  for (const PlanCase& c : cases) {
    ResampleAxis a;
    build_axis(a, c.count, c.grid, c.shift, Sampling::Area);
    const std::string what = std::to_string(c.grid) + " -> " + std::to_string(c.count);
    ASSERT_EQ(a.row_sums.size(), static_cast<std::size_t>(c.count)) << what;
    EXPECT_EQ(a.row_sums.back().ahead, 0) << what;
    std::int64_t with = 0;
    for (std::size_t o = 0; o + 1 < a.row_sums.size(); ++o) {
      const RowSumPlan &v = a.row_sums[o], &next = a.row_sums[o + 1];
      if (v.ahead == 0) continue;
      ++with;
      EXPECT_EQ(v.ahead, lowest(next) - lowest(v)) << what << " row " << o;
      std::int64_t last = v.n_full > 0 ? v.full_first + v.n_full - 1 : 0;
      for (int i = 0; i < v.n_part; ++i)
        last = std::max<std::int64_t>(last, v.part[i]);
      EXPECT_LT(last + v.ahead, a.source) << what << " row " << o;
    }
    if (c.ahead) {
      EXPECT_GE(with, c.count - 2) << what;  // all but the last (and one at the edge)
    } else {
      EXPECT_EQ(with, 0) << what;
    }
  }
}

// The blocks path's tables say the same sum as the float weights: emulated
// here byte by byte (blocks or gathers, and the VBMI permutes), on a random
// row, for every kind of geometry, never reading outside the row.
TEST(PreprocessAxis, BlockAndPermuteTablesSumTheSameTapsAsTheWeights) {
  using detail::build_axis;
  using detail::ResampleAxis;
  using detail::Sampling;
  struct AxisCase {
    std::int64_t count, grid;
    int shift;
    Sampling m;
    int step;
    bool blocks, gather;
    int windows;    // -1: any
    int wide = -1;  // a gather's 32-byte blocks: 1 built, 0 not, -1 either
  };
  const AxisCase cases[] = {
      {640, 1920, 0, Sampling::Bilinear, 1, true, false, -1},    // 3x: 16-byte blocks
      {640, 1920, 1, Sampling::Bilinear, 2, true, false, -1},    // its NV12 chroma
      {416, 1280, 0, Sampling::Bilinear, 1, true, false, -1},    // 3.1x: blocks, 64-byte spans
      {416, 1280, 1, Sampling::Bilinear, 1, true, false, -1},    // its I420 chroma
      {416, 1280, 1, Sampling::Bilinear, 2, true, false, -1},    // its NV12 chroma
      {416, 1280, 0, Sampling::Area, 1, true, false, -1},        // 3.1x area: spans, 2 passes
      {608, 1280, 1, Sampling::Area, 2, true, false, -1},        // NV12 chroma, 1.05x
      {320, 1920, 0, Sampling::Bilinear, 1, true, true, 1, 1},   // 6x: a gather, one window
      {320, 1920, 1, Sampling::Bilinear, 2, true, true, 1, 1},   // its NV12 chroma
      {416, 1920, 1, Sampling::Bilinear, 2, true, true, -1, 1},  // 1080p NV12 chroma -> 416
      {416, 3840, 0, Sampling::Bilinear, 1, true, true, -1, 1},  // 9.2x: 30 bytes a block
      {320, 3840, 0, Sampling::Bilinear, 1, true, true, -1, 0},  // 12x: 38 bytes, gathered
      {320, 1920, 0, Sampling::Area, 1, false, false, 1, 1},     // 7 taps: permutes, wide
      {416, 1920, 1, Sampling::Area, 2, false, false, -1, 1},    // UV bytes 2.3x: wide, 2 passes
      {320, 1920, 0, Sampling::Area, 2, false, false, 2},        // 16-bit sums of luma rows
      {320, 1920, 1, Sampling::Area, 4, false, false, 2},        // ... of UV rows
      {320, 3840, 0, Sampling::Area, 1, false, false, 2},        // 12x: two windows
      {320, 3840, 0, Sampling::Nearest, 1, true, true, 2, 0},    // nearest: 12x
      {611, 3843, 0, Sampling::Nearest, 1, true, true, -1, 1},   // nearest: 6.3x, a tail
      {1280, 1280, 0, Sampling::Bilinear, 1, true, false, -1},   // 1:1
      {1280, 720, 0, Sampling::Area, 1, true, false, -1},        // enlarging
      {300, 1001, 1, Sampling::Area, 1, true, false, -1},        // odd, I420 chroma
      {2, 40000, 0, Sampling::Area, 1, false, false, 0},         // 20000 taps: neither
  };
  std::mt19937 rng(5);
  for (const AxisCase& c : cases) {
    ResampleAxis a;
    build_axis(a, c.count, c.grid, c.shift, c.m, c.step);
    const std::string what = std::to_string(c.grid) + " -> " + std::to_string(c.count) + " shift " +
                             std::to_string(c.shift) + " step " + std::to_string(c.step);
    EXPECT_EQ(a.blocks, c.blocks) << what;
    EXPECT_EQ(a.gather, c.gather) << what;
    if (c.windows >= 0) EXPECT_EQ(a.windows, c.windows) << what;
    if (c.wide >= 0) EXPECT_EQ(!a.wide_base.empty(), c.wide == 1) << what;
    if (a.blocks && !a.gather) EXPECT_TRUE(a.wide_base.empty()) << what;
    if (!a.blocks && a.windows == 0 && a.wide_base.empty()) continue;  // no tables
    const std::int64_t bytes = a.source * c.step;
    std::vector<int> row(static_cast<std::size_t>(bytes));
    for (int& v : row)
      v = static_cast<int>(rng() % 256);
    const double one = c.m == Sampling::Nearest ? 1.0 : 32767.0;
    auto at = [&](std::int64_t i) {
      EXPECT_TRUE(i >= 0 && i < bytes) << what << ": reads byte " << i;
      return i >= 0 && i < bytes ? row[static_cast<std::size_t>(i)] : 0;
    };
    const std::int64_t vectors = a.stride / 16;
    for (std::int64_t o = 0; o < a.count; ++o) {
      for (int ch = 0; ch < c.step; ++ch) {
        double want = 0;
        for (int t = 0; t < a.taps; ++t) {
          const double w = a.weight[static_cast<std::size_t>(t * a.stride + o)];
          if (w != 0) want += w * at((a.first[static_cast<std::size_t>(o)] + t) * c.step + ch);
        }
        const std::int64_t b = o / 4, i = o % 4;
        double blocks = 0, permutes = 0, wide = 0, spans = 0;
        for (int p = 0; p < a.passes; ++p) {
          for (int half = 0; half < 2; ++half) {
            const auto k = static_cast<std::size_t>((p * a.block_count + b) * 8 + 2 * i + half);
            const int w = a.pair_weight[k];
            if (a.blocks) {
              const int idx = a.shuffle[ch][2 * k];
              const std::int64_t origin = a.gather
                                              ? a.lane_base[static_cast<std::size_t>(o)] - 4 * i
                                              : a.block_base[static_cast<std::size_t>(b)];
              if (idx != 0x80) blocks += w * at(origin + idx);
            }
            if (!a.wide_base.empty()) {  // the sample from one window or neither
              const auto pos =
                  static_cast<std::size_t>((p * a.block_count + b) * 16 + 4 * i + 2 * half);
              const int low = a.shuffle_wide[0][ch][pos], high = a.shuffle_wide[1][ch][pos];
              EXPECT_TRUE(low == 0x80 || high == 0x80) << what << " output " << o;
              const std::int64_t origin = a.wide_base[static_cast<std::size_t>(b)];
              if (low != 0x80) wide += w * at(origin + low);
              if (high != 0x80) wide += w * at(origin + 16 + high);
            }
            if (!a.pair_span_base.empty()) {  // one 64-byte span a vector
              const auto v = static_cast<std::size_t>(o / 16);
              const auto pass = static_cast<std::size_t>(p * vectors) + v;
              const int idx = a.pair_span_permute[ch][pass * 64 + static_cast<std::size_t>(
                                                                      4 * (o % 16) + 2 * half)];
              EXPECT_LT(idx, 64) << what << " output " << o;
              EXPECT_LE(a.pair_span_base[v] + 64, bytes) << what;
              if (w != 0) spans += w * at(a.pair_span_base[v] + idx);
            }
            if (a.windows > 0) {
              const std::int64_t v = o / 16, j = o % 16;
              const std::int64_t base =
                  a.window_base[static_cast<std::size_t>(4 * v + j / (16 / a.windows))];
              const int idx = a.permute[ch][static_cast<std::size_t>(((p * vectors + v) * 64) +
                                                                     4 * j + 2 * half)];
              if (w != 0) permutes += w * at(base + idx);
            }
          }
        }
        // Each weight within half a unit of 1/32767, at most 255 levels apart.
        const double tol = c.m == Sampling::Nearest ? 0 : 255.0 * a.taps * 0.5 / 32767 + 1e-9;
        if (a.blocks) ASSERT_NEAR(blocks / one, want, tol) << what << " output " << o;
        if (!a.wide_base.empty()) ASSERT_NEAR(wide / one, want, tol) << what << " output " << o;
        if (!a.wide_base.empty() && a.blocks) ASSERT_EQ(wide, blocks) << what << " output " << o;
        if (a.windows > 0) ASSERT_NEAR(permutes / one, want, tol) << what << " output " << o;
        if (!a.pair_span_base.empty()) {
          ASSERT_TRUE(!a.picks && a.taps <= 8) << what;
          ASSERT_NEAR(spans / one, want, tol) << what << " output " << o;
          if (a.blocks && !a.gather) ASSERT_EQ(spans, blocks) << what << " output " << o;
          if (a.windows > 0) ASSERT_EQ(spans, permutes) << what << " output " << o;
        }
      }
    }
  }
  // Where the spans are built: up to 8 taps whose 16 outputs a vector lie
  // within 64 bytes, not picks; 1080p NV12 chroma -> 416 spans 74 bytes.
  auto spans = [](std::int64_t count, std::int64_t grid, int shift, int step,
                  Sampling m = Sampling::Bilinear) {
    ResampleAxis a;
    build_axis(a, count, grid, shift, m, step);
    return !a.pair_span_base.empty();
  };
  EXPECT_TRUE(spans(416, 1280, 0, 1));
  EXPECT_TRUE(spans(416, 1280, 1, 2));
  EXPECT_TRUE(spans(608, 1280, 1, 1));
  EXPECT_TRUE(spans(416, 1280, 0, 1, Sampling::Area));
  EXPECT_TRUE(spans(1280, 3840, 0, 1, Sampling::Area));  // 3x area: 4 taps
  EXPECT_FALSE(spans(416, 1920, 1, 2));                  // 2.3 UV pairs an output: 74 bytes
  EXPECT_FALSE(spans(416, 1920, 0, 1, Sampling::Area));  // 4.6x: 74 bytes
  EXPECT_FALSE(spans(640, 1920, 0, 1));                  // 3x: picks
  EXPECT_FALSE(spans(320, 1920, 0, 1));                  // 6x: a gather
  EXPECT_FALSE(spans(416, 1280, 0, 1, Sampling::Nearest));
}

// The permute windows (128 bytes) and the spans (64) start on a 64-byte line
// of the row wherever the load from there still holds their taps: a row on
// a line is then read a line per load. Elsewhere at the first tap's byte.
// Either way inside the row and holding every tap of its outputs.
TEST(PreprocessAxis, WindowsAndSpansStartOnALineWhereTheyHoldTheirTaps) {
  using detail::build_axis;
  using detail::ResampleAxis;
  using detail::Sampling;
  // Bytes [lo, hi] that outputs [o0, o1) read (hi -1: none).
  auto span = [](const ResampleAxis& a, int step, std::int64_t o0, std::int64_t o1,
                 std::int64_t& lo, std::int64_t& hi) {
    lo = std::numeric_limits<std::int64_t>::max();
    hi = -1;
    for (std::int64_t o = o0; o < std::min(o1, a.count); ++o) {
      for (int t = 0; t < a.taps; ++t) {
        if (a.weight[static_cast<std::size_t>(t * a.stride + o)] == 0.f) continue;
        const std::int64_t at = (std::int64_t{a.first[static_cast<std::size_t>(o)]} + t) * step;
        lo = std::min(lo, at);
        hi = std::max(hi, at + step - 1);
      }
    }
  };
  // base for outputs [o0, o1): inside the row, holding [lo, hi], on a line
  // unless the line's load would miss hi. Counts the bases on a line.
  auto check = [&](const ResampleAxis& a, int step, std::int32_t base, std::int64_t o0,
                   std::int64_t o1, std::int64_t size, int& on_line) {
    std::int64_t lo = 0, hi = 0;
    span(a, step, o0, o1, lo, hi);
    if (hi < 0) return;
    EXPECT_GE(base, 0) << o0;
    EXPECT_LE(base + size, a.source * step) << o0;
    EXPECT_LE(base, lo) << o0;
    EXPECT_LT(hi, base + size) << o0;
    if (base % 64 == 0) {
      ++on_line;
    } else {
      EXPECT_GE(hi - base / 64 * 64, size) << o0 << ": the line's load would hold the taps";
    }
  };
  struct Case {
    int count, grid, shift;
    Sampling m;
    int step;
    bool windows, spans, pair_spans;
  };
  for (const Case& c : {
           Case{416, 1920, 0, Sampling::Bilinear, 1, true, false, false},  // 4.6x: windows
           Case{416, 1920, 0, Sampling::Area, 2, true, false, false},      // sums as words
           Case{416, 1920, 1, Sampling::Area, 4, true, false, false},      // UV pairs' sums
           Case{608, 3840, 0, Sampling::Bilinear, 1, true, false, false},  // 6.3x
           Case{416, 1280, 0, Sampling::Bilinear, 1, false, false, true},  // 3.1x: pair spans
           Case{416, 1280, 1, Sampling::Bilinear, 2, false, false, true},  // NV12 chroma
           Case{416, 1280, 0, Sampling::Nearest, 1, false, true, false},   // 3.08x: spans
           Case{417, 1282, 0, Sampling::Nearest, 1, false, true, false},   // and a tail
       }) {
    SCOPED_TRACE(::testing::Message() << c.count << " of " << c.grid << ", step " << c.step);
    ResampleAxis a;
    build_axis(a, c.count, c.grid, c.shift, c.m, c.step);
    const std::int64_t vectors = a.stride / 16;
    int on_line = 0, bases = 0;
    if (c.windows) {
      ASSERT_GT(a.windows, 0);
      const std::int64_t per = 16 / a.windows;
      for (std::int64_t v = 0; v < vectors; ++v) {
        for (int w = 0; w < a.windows; ++w, ++bases) {
          check(a, c.step, a.window_base[static_cast<std::size_t>(4 * v + w)], 16 * v + w * per,
                16 * v + (w + 1) * per, 128, on_line);
        }
      }
    }
    if (c.spans) {
      ASSERT_FALSE(a.span_base.empty());
      for (std::int64_t v = 0; v < vectors; ++v, ++bases)
        check(a, c.step, a.span_base[static_cast<std::size_t>(v)], 16 * v, 16 * v + 16, 64,
              on_line);
    }
    if (c.pair_spans) {
      ASSERT_FALSE(a.pair_span_base.empty());
      for (std::int64_t v = 0; v < vectors; ++v, ++bases) {
        check(a, c.step, a.pair_span_base[static_cast<std::size_t>(v)], 16 * v, 16 * v + 16, 64,
              on_line);
      }
    }
    // Not every base fits on a line, but a share does at every one of these
    // ratios (a test that the placement is made at all).
    EXPECT_GT(on_line, bases / 8) << on_line << " of " << bases;
  }
}

// One-pixel stripes (the worst case for aliasing): bilinear at 3x reads one
// column in three (3x + 1) and turns them into full-contrast stripes of the
// output's own; area averages each three columns (a third of the contrast).
TEST(PreprocessAccuracy, AreaAveragesWhatBilinearAliases) {
  auto f = NeatTensor::allocate_image(PixelFormat::NV12, 1920, 1080);
  auto w = std::move(*f).make_writable();
  {
    auto m = w->map(MapMode::Write);
    auto* y = reinterpret_cast<std::uint8_t*>(*m->mutable_plane_data(PlaneRole::Y));
    for (int r = 0; r < 1080; ++r)
      for (int x = 0; x < 1920; ++x)
        y[r * 1920 + x] = x % 2 ? 235 : 16;
    std::memset(*m->mutable_plane_data(PlaneRole::UV), 128, 1920 * 540);
  }
  PreprocessParams p;  // plain [0, 1] output: level / 255
  p.colorimetry = kBT601Limited;
  auto bilinear = preprocess(*w, p);
  p.interpolation = Interpolation::Area;
  auto area = preprocess(*w, p);
  NEAT_ASSERT_OK(bilinear);
  NEAT_ASSERT_OK(area);
  const auto b = values(*bilinear), a = values(*area);
  // Bilinear 1920 -> 640 reads columns 1, 4, 7, ...: white, black, white.
  EXPECT_NEAR(b[0], 1.0, 1e-3);
  EXPECT_NEAR(b[1], 0.0, 1e-3);
  // Area: (black, white, black) and (white, black, white): a third, two thirds.
  EXPECT_NEAR(a[0], 1.0 / 3, 2e-3);
  EXPECT_NEAR(a[1], 2.0 / 3, 2e-3);
}

// interp=area follows OpenCV's INTER_AREA on the converted frame (what the
// unfused chain cvtColor + resize(INTER_AREA) computes).
TEST(PreprocessAccuracy, AreaMatchesOpenCvsInterAreaChain) {
  // Camera-like (blurred noise): noise would put most pixels out of gamut,
  // where the chain clips before averaging.
  NeatTensor frame = frame_of(PixelFormat::NV12, 1280, 720, 21);
  {
    auto w = std::move(frame).make_writable();
    ASSERT_TRUE(w.ok());
    auto m = w->map(MapMode::Write);
    cv::Mat all(1080, 1280, CV_8UC1, *m->mutable_plane_data(PlaneRole::Y));
    cv::GaussianBlur(all, all, cv::Size(9, 9), 3);
    m = Result<Mapping>(internal_error("released"));
    frame = *std::move(w);
  }
  PreprocessParams p;
  p.width = 400;
  p.height = 300;
  p.colorimetry = kBT601Limited;
  p.interpolation = Interpolation::Area;
  auto ours = preprocess(frame, p);
  NEAT_ASSERT_OK(ours);
  // The reference of the same sampling, and the chain (8-bit RGB, then INTER_AREA).
  auto m = frame.map();
  cv::Mat y(720, 1280, CV_8UC1, const_cast<std::byte*>(*m->plane_data(PlaneRole::Y)));
  cv::Mat uv(360, 640, CV_8UC2, const_cast<std::byte*>(*m->plane_data(PlaneRole::UV)));
  cv::Mat rgb, small;
  cv::cvtColorTwoPlane(y, uv, rgb, cv::COLOR_YUV2RGB_NV12);
  cv::resize(rgb, small, cv::Size(400, 300), 0, 0, cv::INTER_AREA);
  const auto v = values(*ours);
  double max = 0, mean = 0;
  for (int c = 0; c < 3; ++c)
    for (int r = 0; r < 300; ++r)
      for (int x = 0; x < 400; ++x) {
        const double d = std::abs(v[static_cast<std::size_t>((c * 300 + r) * 400 + x)] * 255 -
                                  small.at<cv::Vec3b>(r, x)[c]);
        max = std::max(max, d);
        mean += d;
      }
  mean /= 3 * 300 * 400;
  // The chain rounds each converted pixel to 8 bits before averaging and
  // rounds again after (measured: mean 0.26, max 0.87 levels).
  EXPECT_LT(mean, 0.4);
  EXPECT_LT(max, 2.0);
  std::printf("area vs OpenCV's INTER_AREA chain (levels): mean %.3f, max %.2f\n", mean, max);
}

}  // namespace
}  // namespace neat

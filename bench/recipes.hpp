// The strongest ways a skilled user writes the preprocess (1080p NV12 ->
// 640x640 normalized F32 CHW) by hand with the best libraries: the
// baselines of bench/preprocess_bench.cpp and of the graph benchmarks
// (docs/benchmarks.md names them). Buffers are kept across calls.
#pragma once

#include <benchmark/benchmark.h>

#include <libyuv/convert_argb.h>
#include <libyuv/scale.h>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <neat/kernels/preprocess.hpp>

#include "frames.hpp"

namespace neat::bench {

constexpr int kOut = 640;

// band(0 .. stripes - 1): on the calling thread for one, on OpenCV's pool
// otherwise (how a user splits a single-threaded library's work).
template <class Band>
void in_bands(int stripes, Band&& band) {
  if (stripes == 1) {
    band(0);
    return;
  }
  cv::parallel_for_(cv::Range(0, stripes), [&](const cv::Range& r) {
    for (int s = r.start; s < r.end; ++s)
      band(s);
  });
}

// Every byte of a row read once: 64-bit words, four chains (vectorised).
inline std::uint64_t read_row(const void* row, std::size_t bytes) {
  const auto* q = static_cast<const std::uint64_t*>(row);
  const std::size_t words = bytes / 8;
  std::uint64_t a[4] = {};
  for (std::size_t i = 0; i + 4 <= words; i += 4) {
    a[0] ^= q[i];
    a[1] ^= q[i + 1];
    a[2] ^= q[i + 2];
    a[3] ^= q[i + 3];
  }
  return a[0] ^ a[1] ^ a[2] ^ a[3];
}

// n floats from p zeroed with streaming stores, which skip reading each
// line first (SSE2; memset elsewhere).
inline void stream_zero(float* p, std::size_t n) {
#if defined(__SSE2__)
  std::size_t i = 0;
  for (; i < n && (reinterpret_cast<std::uintptr_t>(p + i) & 15) != 0; ++i)
    p[i] = 0.f;
  const __m128 zero = _mm_setzero_ps();
  for (; i + 4 <= n; i += 4)
    _mm_stream_ps(p + i, zero);
  for (; i < n; ++i)
    p[i] = 0.f;
  _mm_sfence();
#else
  std::memset(p, 0, n * sizeof(float));
#endif
}

// Band s of `stripes`: the rows of every plane read once (read_row; all of
// them, or those `plane_rows` lists per plane), then the band's share of the
// tensor written once: with glibc's memset (plain stores up to its
// non-temporal threshold, which it sets from the last-level cache) or, with
// `stream`, streaming stores. Which is faster depends on the host's caches
// (on an Intel Xeon with a socket-wide L3, streaming, for most rows): the
// table's floor and bound take the faster.
inline void read_then_write(const std::vector<cv::Mat>& src,
                            const std::vector<std::vector<int>>* plane_rows, int s, int stripes,
                            std::vector<float>& chw, bool stream = false) {
  std::uint64_t sum = 0;
  for (std::size_t p = 0; p < src.size(); ++p) {
    const cv::Mat& m = src[p];
    const std::size_t n = plane_rows ? (*plane_rows)[p].size() : static_cast<std::size_t>(m.rows);
    const std::size_t r0 = n * static_cast<std::size_t>(s) / static_cast<std::size_t>(stripes),
                      r1 = n * static_cast<std::size_t>(s + 1) / static_cast<std::size_t>(stripes);
    const std::size_t bytes = static_cast<std::size_t>(m.cols) * m.elemSize();
    for (std::size_t i = r0; i < r1; ++i)
      sum += read_row(m.ptr(plane_rows ? (*plane_rows)[p][i] : static_cast<int>(i)), bytes);
  }
  benchmark::DoNotOptimize(sum);
  const std::size_t n = chw.size(), b0 = n * static_cast<std::size_t>(s) / stripes,
                    b1 = n * static_cast<std::size_t>(s + 1) / stripes;
  if (stream) {
    stream_zero(chw.data() + b0, b1 - b0);
  } else {
    std::memset(chw.data() + b0, 0, (b1 - b0) * sizeof(float));
  }
}

// The floor: every byte of the frame's planes read once, every byte of the
// tensor written once (streamed with `stream`); `stripes` bands as
// in_bands() splits them.
struct Floor {
  Floor(std::size_t out_floats, int stripes_, bool stream_ = false)
      : stripes(stripes_), stream(stream_), chw(out_floats) {}
  void operator()(const std::vector<cv::Mat>& src) {
    in_bands(stripes, [&](int s) { read_then_write(src, nullptr, s, stripes, chw, stream); });
    benchmark::DoNotOptimize(chw.data());
  }
  int stripes;
  bool stream;
  std::vector<float> chw;
};

// One round of a paired measurement: every way once, starting at `start`
// (which then moves on, so that each way in turn runs first, on the caches
// the others left); ns[w] accumulates way w's time.
inline void rotated_round(const std::vector<std::function<void()>>& ways, std::vector<double>& ns,
                          std::size_t& start) {
  using Clock = std::chrono::steady_clock;
  const std::size_t n = ways.size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t w = (start + i) % n;
    const auto t0 = Clock::now();
    ways[w]();
    ns[w] += std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  }
  start = (start + 1) % n;
}

// The careful OpenCV chain: cvtColor, resize (u8), split (u8), convertTo with
// scale and offset into the CHW planes. With planes_first the Y and UV planes
// are resized first and cvtColor runs at the output size.
struct OpenCvRecipe {
  OpenCvRecipe(const neat::PreprocessParams& p, bool planes_first, int interp)
      : first(planes_first), mode(interp), chw(3 * kOut * kOut) {
    for (int c = 0; c < 3; ++c) {
      out.emplace_back(kOut, kOut, CV_32F, chw.data() + c * kOut * kOut);
      alpha[c] = p.scale / p.std[static_cast<std::size_t>(c)];
      beta[c] = -p.mean[static_cast<std::size_t>(c)] / p.std[static_cast<std::size_t>(c)];
    }
  }
  void operator()(const Planes& p) {
    if (first) {
      cv::resize(p.y, ys, cv::Size(kOut, kOut), 0, 0, mode);
      cv::resize(p.uv, uvs, cv::Size(kOut / 2, kOut / 2), 0, 0, mode);
      cv::cvtColorTwoPlane(ys, uvs, small, cv::COLOR_YUV2RGB_NV12);
    } else {
      cv::cvtColorTwoPlane(p.y, p.uv, rgb, cv::COLOR_YUV2RGB_NV12);
      cv::resize(rgb, small, cv::Size(kOut, kOut), 0, 0, mode);
    }
    cv::split(small, u8);
    for (int c = 0; c < 3; ++c)
      u8[static_cast<std::size_t>(c)].convertTo(out[static_cast<std::size_t>(c)], CV_32F, alpha[c],
                                                beta[c]);
    benchmark::DoNotOptimize(chw.data());
  }
  bool first;
  int mode;
  cv::Mat rgb, small, ys, uvs;
  std::vector<cv::Mat> u8;
  std::vector<float> chw;
  std::vector<cv::Mat> out;
  double alpha[3], beta[3];
};

// cvtColor + dnn::blobFromImage (scale 1/255 and the mean; no per-channel std).
struct BlobRecipe {
  explicit BlobRecipe(const neat::PreprocessParams& p)
      : mean(p.mean[0] * 255.0, p.mean[1] * 255.0, p.mean[2] * 255.0), scale(p.scale) {}
  void operator()(const Planes& p) {
    cv::cvtColorTwoPlane(p.y, p.uv, rgb, cv::COLOR_YUV2RGB_NV12);
    cv::dnn::blobFromImage(rgb, blob, scale, cv::Size(kOut, kOut), mean, false, false, CV_32F);
    benchmark::DoNotOptimize(blob.data);
  }
  cv::Scalar mean;
  double scale;
  cv::Mat rgb, blob;
};

// libyuv: NV12Scale to the output size, NV12ToRAW (R, G, B bytes), one float
// loop into the CHW planes; `stripes` horizontal bands on OpenCV's pool.
struct LibyuvRecipe {
  LibyuvRecipe(const neat::PreprocessParams& p, int stripes_)
      : stripes(stripes_),
        y(kOut * kOut),
        uv(kOut * kOut / 2),
        rgb(3 * kOut * kOut),
        chw(3 * kOut * kOut) {
    for (int c = 0; c < 3; ++c) {
      alpha[c] = p.scale / p.std[static_cast<std::size_t>(c)];
      beta[c] = -p.mean[static_cast<std::size_t>(c)] / p.std[static_cast<std::size_t>(c)];
    }
  }
  void band(const Planes& p, int s) {
    // Source rows [sy0, sy1) (even) -> output rows [oy0, oy1).
    const int sh = p.y.rows, oy0 = kOut * s / stripes, oy1 = kOut * (s + 1) / stripes;
    const int sy0 = (sh * s / stripes) & ~1,
              sy1 = s + 1 == stripes ? sh : (sh * (s + 1) / stripes) & ~1;
    const int oh = oy1 - oy0;
    libyuv::NV12Scale(p.y.ptr(sy0), static_cast<int>(p.y.step), p.uv.ptr(sy0 / 2),
                      static_cast<int>(p.uv.step), p.y.cols, sy1 - sy0, y.data() + oy0 * kOut, kOut,
                      uv.data() + oy0 / 2 * kOut, kOut, kOut, oh, libyuv::kFilterBilinear);
    libyuv::NV12ToRAW(y.data() + oy0 * kOut, kOut, uv.data() + oy0 / 2 * kOut, kOut,
                      rgb.data() + oy0 * kOut * 3, kOut * 3, kOut, oh);
    const float a0 = alpha[0], a1 = alpha[1], a2 = alpha[2];
    const float b0 = beta[0], b1 = beta[1], b2 = beta[2];
    float* r = chw.data();
    float* g = r + kOut * kOut;
    float* b = g + kOut * kOut;
    for (int i = oy0 * kOut; i < oy1 * kOut; ++i) {
      const std::uint8_t* px = rgb.data() + 3 * i;
      r[i] = px[0] * a0 + b0;
      g[i] = px[1] * a1 + b1;
      b[i] = px[2] * a2 + b2;
    }
  }
  void operator()(const Planes& p) {
    in_bands(stripes, [&](int s) { band(p, s); });
    benchmark::DoNotOptimize(chw.data());
  }
  int stripes;
  std::vector<std::uint8_t> y, uv, rgb;
  std::vector<float> chw;
  float alpha[3], beta[3];
};

}  // namespace neat::bench

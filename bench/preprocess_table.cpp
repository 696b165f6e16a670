// neat_preprocess_table: the fused preprocess against the strongest hand
// recipes at every detector input (make bench-preprocess; the table in
// docs/benchmarks.md). For each row (source size and format, output size,
// stretch or letterbox, interpolation, threads) every way runs once per
// iteration in an order that rotates, so load and cache state hit all alike;
// the row reports ours, the fastest recipe, the speed-up (recipe / ours) and
// ours / the read-once-write-once floor, and heap allocations per call of
// ours once warm. --runs N measures every row N times, in passes over the
// whole table, and prints the run of median speed-up among the runs the
// host ran unslowed: a probe beside every run (HostProbe) marks the others,
// and a line after the rows counts them.
//
// Recipes (buffers kept across calls, as a careful user keeps them):
//   cv-planes   cv::resize of the Y and chroma planes to the content size,
//               cvtColor(TwoPlane) there, split, convertTo with scale and
//               offset straight into the CHW planes (padding set per call)
//   cv-rgb      cvtColor of the whole frame, cv::resize of the RGB image,
//               split, convertTo into the CHW planes
//   libyuv      NV12Scale / I420Scale to the content size (kFilterBilinear,
//               kFilterBox for area, kFilterNone for nearest), NV12ToRAW /
//               I420ToRAW, split, convertTo into the CHW planes; with 2
//               threads, two bands on OpenCV's pool
//   floor       every byte of the frame read once, every byte of the tensor
//               written once (not a recipe: the memory bound)
//   bound       every byte of the source rows the interpolation needs read
//               once (area: all of them; bilinear: the two rows around each
//               output row, one where it falls on a row; nearest: one), every
//               byte of the tensor written once: the least memory traffic of
//               any implementation of the row (a needed row's every cache
//               line holds a sample an output reads at these ratios). When
//               half the fastest recipe's time is below it, 2x that recipe
//               is out of reach on this machine.
//   The floor and the bound write the tensor twice over, by plain stores
//   (glibc's memset) and by streaming stores, and take the faster: which
//   one wins depends on the host's caches (with memset alone, half the rows
//   of a run on an Intel Xeon, whose L3 is the whole socket's, beat their
//   bound).
#include <hwy/targets.h>
#include <libyuv/convert_argb.h>
#include <libyuv/cpu_id.h>
#include <libyuv/scale.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <neat/kernels/preprocess.hpp>
#include <neat/neat.hpp>

#include "alloc_counter.hpp"
#include "frames.hpp"
#include "recipes.hpp"

namespace {

using neat::bench::in_bands;
using Clock = std::chrono::steady_clock;

struct Source {
  std::string name;
  int width, height;
};
const Source kSources[] = {{"720p", 1280, 720}, {"1080p", 1920, 1080}, {"4k", 3840, 2160}};

// A camera-like frame (blurred noise) of the format, BT.601 limited (the one
// standard OpenCV's and libyuv's converters implement).
neat::NeatTensor make_frame(neat::PixelFormat format, int w, int h) {
  auto f = neat::NeatTensor::allocate_image(format, w, h, {.zero_fill = false});
  auto wr = std::move(*f).make_writable();
  {
    auto m = wr->map(neat::MapMode::Write);
    for (int i = 0; i < wr->plane_count(); ++i) {
      const auto& l = wr->plane_layout(i);
      cv::Mat view(static_cast<int>(l.rows), static_cast<int>(l.cols * l.samples), CV_8UC1,
                   *m->mutable_plane_data(l.role), static_cast<std::size_t>(l.row_stride));
      cv::randu(view, 0, 256);
      cv::GaussianBlur(view, view, cv::Size(9, 9), 3);
    }
  }
  return *std::move(wr)->with_colorimetry(neat::kBT601Limited);
}

// The frame's planes as cv::Mat views: Y, then UV (NV12) or U and V (I420).
std::vector<cv::Mat> plane_mats(const neat::Mapping& m, const neat::NeatTensor& f) {
  std::vector<cv::Mat> out;
  for (int i = 0; i < f.plane_count(); ++i) {
    const auto& l = f.plane_layout(i);
    out.emplace_back(
        static_cast<int>(l.rows), static_cast<int>(l.cols), l.samples == 2 ? CV_8UC2 : CV_8UC1,
        const_cast<std::byte*>(*m.plane_data(l.role)), static_cast<std::size_t>(l.row_stride));
  }
  return out;
}

struct Row {
  const Source* source;
  bool nv12;
  int out;
  bool letterbox;
  neat::Interpolation interp;
  int threads;
};

// The CHW destination the recipes write: three float planes, the content at
// the box, the padding set per call to the normalized pad level.
struct Chw {
  Chw(const neat::PreprocessParams& p, const neat::LetterboxBox& b)
      : box(b), data(3 * static_cast<std::size_t>(p.width * p.height)) {
    for (int c = 0; c < 3; ++c) {
      const auto u = static_cast<std::size_t>(c);
      planes.emplace_back(static_cast<int>(p.height), static_cast<int>(p.width), CV_32F,
                          data.data() + c * p.width * p.height);
      content.push_back(
          planes.back()(cv::Rect(static_cast<int>(b.x), static_cast<int>(b.y),
                                 static_cast<int>(b.width), static_cast<int>(b.height))));
      alpha[c] = p.scale / p.std[u];
      beta[c] = -p.mean[u] / p.std[u];
      pad[c] = p.pad_value * alpha[c] + beta[c];
    }
  }
  // u8 RGB at the content size -> the CHW planes (and the padding).
  void store(const cv::Mat& rgb) {
    cv::split(rgb, u8);
    for (int c = 0; c < 3; ++c) {
      const auto u = static_cast<std::size_t>(c);
      u8[u].convertTo(content[u], CV_32F, alpha[c], beta[c]);
      fill_pad(c);
    }
  }
  void fill_pad(int c) {
    cv::Mat& pl = planes[static_cast<std::size_t>(c)];
    const int x = static_cast<int>(box.x), y = static_cast<int>(box.y);
    const int w = static_cast<int>(box.width), h = static_cast<int>(box.height);
    if (y > 0) pl.rowRange(0, y).setTo(pad[c]);
    if (y + h < pl.rows) pl.rowRange(y + h, pl.rows).setTo(pad[c]);
    if (x > 0) pl(cv::Rect(0, y, x, h)).setTo(pad[c]);
    if (x + w < pl.cols) pl(cv::Rect(x + w, y, pl.cols - x - w, h)).setTo(pad[c]);
  }
  neat::LetterboxBox box;
  std::vector<float> data;
  std::vector<cv::Mat> planes, content, u8;
  double alpha[3], beta[3], pad[3];
};

int cv_interp(neat::Interpolation i) {
  return i == neat::Interpolation::Nearest ? cv::INTER_NEAREST
         : i == neat::Interpolation::Area  ? cv::INTER_AREA
                                           : cv::INTER_LINEAR;
}

struct CvPlanes {
  CvPlanes(const neat::PreprocessParams& p, const neat::LetterboxBox& b, bool nv12_)
      : chw(p, b), nv12(nv12_), mode(cv_interp(p.interpolation)) {
    const int w = static_cast<int>(b.width), h = static_cast<int>(b.height);
    if (nv12) {
      ys.create(h, w, CV_8UC1);
      uvs.create(h / 2, w / 2, CV_8UC2);
    } else {  // one contiguous I420 image, as cvtColor takes it
      i420.create(h * 3 / 2, w, CV_8UC1);
      ys = i420.rowRange(0, h);
      us = cv::Mat(h / 2, w / 2, CV_8UC1, i420.ptr(h));
      vs = cv::Mat(h / 2, w / 2, CV_8UC1, i420.ptr(h) + (h / 2) * (w / 2));
    }
  }
  void operator()(const std::vector<cv::Mat>& src) {
    cv::resize(src[0], ys, ys.size(), 0, 0, mode);
    if (nv12) {
      cv::resize(src[1], uvs, uvs.size(), 0, 0, mode);
      cv::cvtColorTwoPlane(ys, uvs, rgb, cv::COLOR_YUV2RGB_NV12);
    } else {
      cv::resize(src[1], us, us.size(), 0, 0, mode);
      cv::resize(src[2], vs, vs.size(), 0, 0, mode);
      cv::cvtColor(i420, rgb, cv::COLOR_YUV2RGB_I420);
    }
    chw.store(rgb);
  }
  Chw chw;
  bool nv12;
  int mode;
  cv::Mat ys, uvs, us, vs, i420, rgb;
};

struct CvRgb {
  CvRgb(const neat::PreprocessParams& p, const neat::LetterboxBox& b, const neat::NeatTensor& f)
      : chw(p, b),
        nv12(f.image().format == neat::PixelFormat::NV12),
        mode(cv_interp(p.interpolation)),
        size(static_cast<int>(b.width), static_cast<int>(b.height)) {
    if (!nv12)
      i420.create(static_cast<int>(f.image().height * 3 / 2), static_cast<int>(f.image().width),
                  CV_8UC1);
  }
  void operator()(const std::vector<cv::Mat>& src) {
    if (nv12) {
      cv::cvtColorTwoPlane(src[0], src[1], rgb, cv::COLOR_YUV2RGB_NV12);
    } else if (src[0].isContinuous() && src[1].data == src[0].data + src[0].total() &&
               src[2].data == src[1].data + src[1].total()) {
      cv::cvtColor(cv::Mat(src[0].rows * 3 / 2, src[0].cols, CV_8UC1, src[0].data), rgb,
                   cv::COLOR_YUV2RGB_I420);
    } else {
      cv::cvtColorTwoPlane(src[0], src[1], rgb, cv::COLOR_YUV2RGB_NV12);  // unreachable here
    }
    cv::resize(rgb, small, size, 0, 0, mode);
    chw.store(small);
  }
  Chw chw;
  bool nv12;
  int mode;
  cv::Size size;
  cv::Mat rgb, small, i420;
};

struct Libyuv {
  Libyuv(const neat::PreprocessParams& p, const neat::LetterboxBox& b, bool nv12_, int stripes_)
      : chw(p, b),
        nv12(nv12_),
        stripes(stripes_),
        w(static_cast<int>(b.width)),
        h(static_cast<int>(b.height)),
        filter(p.interpolation == neat::Interpolation::Nearest ? libyuv::kFilterNone
               : p.interpolation == neat::Interpolation::Area  ? libyuv::kFilterBox
                                                               : libyuv::kFilterBilinear),
        y(static_cast<std::size_t>(w * h)),
        u(static_cast<std::size_t>(w * h / 2)),
        v(static_cast<std::size_t>(w * h / 4)),
        rgb(h, w, CV_8UC3) {}
  void band(const std::vector<cv::Mat>& src, int s) {
    const int sh = src[0].rows, oy0 = (h * s / stripes) & ~1,
              oy1 = s + 1 == stripes ? h : (h * (s + 1) / stripes) & ~1;
    const int sy0 = (sh * s / stripes) & ~1,
              sy1 = s + 1 == stripes ? sh : (sh * (s + 1) / stripes) & ~1;
    const int oh = oy1 - oy0;
    if (nv12) {
      libyuv::NV12Scale(src[0].ptr(sy0), static_cast<int>(src[0].step), src[1].ptr(sy0 / 2),
                        static_cast<int>(src[1].step), src[0].cols, sy1 - sy0, y.data() + oy0 * w,
                        w, u.data() + oy0 / 2 * w, w, w, oh, filter);
      libyuv::NV12ToRAW(y.data() + oy0 * w, w, u.data() + oy0 / 2 * w, w, rgb.ptr(oy0),
                        static_cast<int>(rgb.step), w, oh);
    } else {
      const int cw = w / 2;
      libyuv::I420Scale(src[0].ptr(sy0), static_cast<int>(src[0].step), src[1].ptr(sy0 / 2),
                        static_cast<int>(src[1].step), src[2].ptr(sy0 / 2),
                        static_cast<int>(src[2].step), src[0].cols, sy1 - sy0, y.data() + oy0 * w,
                        w, u.data() + oy0 / 2 * cw, cw, v.data() + oy0 / 2 * cw, cw, w, oh, filter);
      libyuv::I420ToRAW(y.data() + oy0 * w, w, u.data() + oy0 / 2 * cw, cw, v.data() + oy0 / 2 * cw,
                        cw, rgb.ptr(oy0), static_cast<int>(rgb.step), w, oh);
    }
  }
  void operator()(const std::vector<cv::Mat>& src) {
    in_bands(stripes, [&](int s) { band(src, s); });
    chw.store(rgb);
  }
  Chw chw;
  bool nv12;
  int stripes, w, h;
  libyuv::FilterMode filter;
  std::vector<std::uint8_t> y, u, v;
  cv::Mat rgb;
};

// The source rows (of the full-resolution grid) that content rows
// [0, out) of an axis of `in` rows read: OpenCV's mappings (bilinear:
// (o + 0.5) * in / out - 0.5, both neighbours unless it falls on a row;
// nearest: floor(o * in / out); area, or enlarging: every row).
std::vector<int> needed_rows(int in, int out, neat::Interpolation interp) {
  std::vector<char> need(static_cast<std::size_t>(in), 0);
  const double r = static_cast<double>(in) / out;
  for (int o = 0; o < out; ++o) {
    if (interp == neat::Interpolation::Area || r <= 1.0) {
      std::fill(need.begin(), need.end(), 1);
      break;
    }
    if (interp == neat::Interpolation::Nearest) {
      need[static_cast<std::size_t>(std::min(in - 1, static_cast<int>(std::floor(o * r))))] = 1;
      continue;
    }
    const double sy = std::max(0.0, (o + 0.5) * r - 0.5);
    const int j = std::min(in - 1, static_cast<int>(std::floor(sy)));
    need[static_cast<std::size_t>(j)] = 1;
    if (sy > j && j + 1 < in) need[static_cast<std::size_t>(j + 1)] = 1;
  }
  std::vector<int> rows;
  for (int i = 0; i < in; ++i)
    if (need[static_cast<std::size_t>(i)]) rows.push_back(i);
  return rows;
}

// The bound: the needed rows of every plane read once (as the floor reads),
// the tensor written once (streamed with `stream`); in bands with the row's
// threads.
struct Bound {
  Bound(const std::vector<cv::Mat>& src, const neat::LetterboxBox& box, neat::Interpolation interp,
        std::size_t out_floats, int stripes_, bool stream_)
      : stripes(stripes_), stream(stream_), chw(out_floats) {
    const std::vector<int> luma = needed_rows(src[0].rows, static_cast<int>(box.height), interp);
    for (std::size_t p = 0; p < src.size(); ++p) {
      std::vector<int> rows;
      for (int y : luma) {
        const int r = p == 0 ? y : y / 2;  // 4:2:0 chroma: the stored row under the grid row
        if (rows.empty() || rows.back() != r) rows.push_back(r);
      }
      plane_rows.push_back(std::move(rows));
    }
  }
  void operator()(const std::vector<cv::Mat>& src) {
    in_bands(stripes, [&](int s) {
      neat::bench::read_then_write(src, &plane_rows, s, stripes, chw, stream);
    });
    benchmark::DoNotOptimize(chw.data());
  }
  int stripes;
  bool stream;
  std::vector<float> chw;
  std::vector<std::vector<int>> plane_rows;
};

// The host's own speed beside every run of a row. On a shared host (a VM
// whose cores' other hardware threads, caches and memory serve other
// tenants) a spell of contention slows vector work and cache writes, and
// slows ours, the fastest way and the one most bound by them, by a larger
// share than the recipes. On the Zen 5 VM of session 51, in one such spell
// (minutes), one vCPU ran AVX-512 multiply-adds at 0.66x the other's speed
// and wrote a 6 MiB buffer at 0.38x; pinned there, 4K I420 -> 416
// letterboxed area took 1.28 ms against 0.47 on the other, its speed-up
// 0.91x against 1.83x. Minutes later both vCPUs ran alike.
// The probe times a fixed block of vector multiply-adds (the widest the CPU
// has; about 22 us on that host, within 10% from call to call), the best of
// three, on as many threads as the row has, at once (two runnable threads
// on two vCPUs: each vCPU probed), the slowest of them; a run's figure is
// the slower of its probes before and after. A write to the caches was
// tried as a second probe: the best of three 4 MiB writes ranged 91-200 us
// between neighbouring runs, too noisy to mark one.
struct HostProbe {
  // 8 chains of multiply-adds on 64-byte vectors: one register each with
  // AVX-512, two with AVX2, four with SSE (one copy per target, picked
  // when the program loads).
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) static float
  madds() {
    typedef float V __attribute__((vector_size(64)));
    V a[8];
    for (int i = 0; i < 8; ++i)
      for (int l = 0; l < 16; ++l)
        a[i][l] = 1.f + static_cast<float>(i) * 1e-3f;
    V m, b;
    for (int l = 0; l < 16; ++l) {
      m[l] = 0.999999f;
      b[l] = 1e-7f;
    }
    for (int i = 0; i < 20000; ++i)
      for (V& x : a)
        x = x * m + b;
    float sum = 0;
    for (const V& x : a)
      for (int l = 0; l < 16; ++l)
        sum += x[l];
    return sum;
  }
  // Nanoseconds, the best of three on one thread.
  static double once() {
    double best = 1e300;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = Clock::now();
      benchmark::DoNotOptimize(madds());
      best = std::min(best, std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
    }
    return best;
  }
  // The slowest of `threads` threads probing at once (the calling thread one of them).
  double operator()(int threads) const {
    std::vector<double> others(static_cast<std::size_t>(std::max(threads - 1, 0)));
    std::vector<std::thread> pool;
    for (double& t : others)
      pool.emplace_back([&t] { t = once(); });
    double slowest = once();
    for (std::size_t i = 0; i < pool.size(); ++i) {
      pool[i].join();
      slowest = std::max(slowest, others[i]);
    }
    return slowest;
  }
};

struct Result {
  double ours_us = 0, best_us = 0, floor_us = 0, bound_us = 0, allocs = 0;
  std::string best;
  double host_ns = 0;  // the slower of the probes before and after (HostProbe)
};

// frames: one (every call reads the same frame: it stays in the caches that
// hold it), or with --fresh enough copies that each call reads the next and
// none is still cached when its turn comes again (a camera's frames, fresh
// from memory).
Result measure(const Row& row, const std::vector<neat::NeatTensor>& frames, double seconds,
               const HostProbe& probe) {
  const neat::NeatTensor& frame = frames.front();
  cv::setNumThreads(row.threads);
  auto prm = neat::bench::model_params();
  prm.width = prm.height = row.out;
  prm.interpolation = row.interp;
  prm.resize_mode = row.letterbox ? neat::ResizeMode::Letterbox : neat::ResizeMode::Stretch;
  const neat::LetterboxBox box =
      row.letterbox ? neat::letterbox_box(row.source->width, row.source->height, row.out, row.out)
                    : neat::LetterboxBox{row.out, row.out, 0, 0};
  std::vector<neat::Mapping> mappings;
  std::vector<std::vector<cv::Mat>> sources;
  for (const neat::NeatTensor& f : frames) {
    mappings.push_back(*f.map());
    sources.push_back(plane_mats(mappings.back(), f));
  }
  const std::vector<cv::Mat>& src = sources.front();
  std::size_t call = 0;  // each call takes the next frame
  auto next = [&] { return call++ % frames.size(); };
  CvPlanes planes(prm, box, row.nv12);
  CvRgb rgb(prm, box, frame);
  Libyuv yuv(prm, box, row.nv12, row.threads);
  // The floor and the bound each write the tensor with plain stores and
  // with streaming stores, and take the faster (which one depends on the host).
  const auto out_floats = 3 * static_cast<std::size_t>(row.out * row.out);
  neat::bench::Floor floor(out_floats, row.threads), floor_streamed(out_floats, row.threads, true);
  Bound bound(src, box, row.interp, out_floats, row.threads, false),
      bound_streamed(src, box, row.interp, out_floats, row.threads, true);
  const neat::ConversionOptions options{.threads = row.threads};
  std::uint64_t allocs = 0;
  // neat, the recipes (kRecipes of them), then the bound and the floor,
  // each plain and streamed.
  constexpr std::size_t kRecipes = 3;
  const std::vector<std::string> names = {"neat", "cv-planes", "cv-rgb", "libyuv"};
  const std::vector<std::function<void()>> ways = {
      [&] {
        const std::uint64_t before = neat::bench::allocation_count();
        {
          auto out = neat::preprocess(frames[next()], prm, options);
          benchmark::DoNotOptimize(out);
        }  // the tensor goes back to the pool
        allocs += neat::bench::allocation_count() - before;
      },
      [&] { planes(sources[next()]); },
      [&] { rgb(sources[next()]); },
      [&] { yuv(sources[next()]); },
      [&] { bound(sources[next()]); },
      [&] { bound_streamed(sources[next()]); },
      [&] { floor(sources[next()]); },
      [&] { floor_streamed(sources[next()]); }};
  const std::size_t n = ways.size();
  for (std::size_t w = 0; w < n; ++w)  // warm: tables, pools, OpenCV's buffers
    for (int i = 0; i < 3; ++i)
      ways[w]();
  allocs = 0;
  const double before = probe(row.threads);
  std::vector<double> ns(n, 0.0);
  std::size_t start = 0, iters = 0;
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (iters < 5 || Clock::now() < until) {
    neat::bench::rotated_round(ways, ns, start);
    ++iters;
  }
  const double after = probe(row.threads);
  Result r;
  r.host_ns = std::max(before, after);
  const double it = static_cast<double>(iters);
  r.ours_us = ns[0] / it / 1e3;
  r.bound_us = std::min(ns[kRecipes + 1], ns[kRecipes + 2]) / it / 1e3;
  r.floor_us = std::min(ns[kRecipes + 3], ns[kRecipes + 4]) / it / 1e3;
  r.best_us = 1e300;
  for (std::size_t w = 1; w <= kRecipes; ++w) {
    if (ns[w] / it / 1e3 < r.best_us) {
      r.best_us = ns[w] / it / 1e3;
      r.best = names[w];
    }
  }
  r.allocs = static_cast<double>(allocs) / it;
  return r;
}

// The machine the table ran on: CPU model and family (the same code ranks
// differently against the recipes on different cores: docs/benchmarks.md),
// and the caches as the library sizes its streaming stores by them.
std::string host_summary() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU", family, number;
  auto value = [](const std::string& l) {
    const auto colon = l.find(':');
    return colon == std::string::npos ? std::string()
                                      : l.substr(l.find_first_not_of(" \t", colon + 1));
  };
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0)
      model = value(line);
    else if (line.rfind("cpu family", 0) == 0)
      family = value(line);
    else if (line.rfind("model", 0) == 0 && line.find("name") == std::string::npos)
      number = value(line);
    if (line.empty()) break;  // the first processor's block
  }
  char text[256];
  std::snprintf(text, sizeof text, "%s (family %s, model %s), L2 %ld KiB, L3 %ld KiB as reported",
                model.c_str(), family.c_str(), number.c_str(),
                sysconf(_SC_LEVEL2_CACHE_SIZE) / 1024, sysconf(_SC_LEVEL3_CACHE_SIZE) / 1024);
  return text;
}

// --simd avx2: every way runs its AVX2 code. OpenCV reads its switch
// (OPENCV_CPU_DISABLE) when it loads, so the program starts itself again
// with it set; libyuv and Highway (ours) take theirs in the process.
bool limit_to_avx2(char** argv) {
  static constexpr char kOpenCv[] = "AVX512-SKX,AVX512F";
  const char* set = std::getenv("OPENCV_CPU_DISABLE");
  if (set == nullptr || std::string(set) != kOpenCv) {
    setenv("OPENCV_CPU_DISABLE", kOpenCv, 1);
    execv("/proc/self/exe", argv);
    std::fprintf(stderr, "--simd avx2: could not restart with OPENCV_CPU_DISABLE=%s: %s\n", kOpenCv,
                 std::strerror(errno));
    return false;
  }
  if (cv::checkHardwareSupport(CV_CPU_AVX512_SKX)) {
    std::fprintf(stderr, "--simd avx2: OpenCV still dispatches AVX-512\n");
    return false;
  }
  libyuv::MaskCpuFlags(~(libyuv::kCpuHasAVX512BW | libyuv::kCpuHasAVX512VL |
                         libyuv::kCpuHasAVX512VNNI | libyuv::kCpuHasAVX512VBMI |
                         libyuv::kCpuHasAVX512VBMI2 | libyuv::kCpuHasAVX512VBITALG |
                         libyuv::kCpuHasAVX512VPOPCNTDQ));
  hwy::DisableTargets(HWY_AVX3 | HWY_AVX3_DL);
  if (std::string(neat::preprocess_simd_target()) != "AVX2") {
    std::fprintf(stderr, "--simd avx2: this CPU runs the engine on %s, not AVX2\n",
                 neat::preprocess_simd_target());
    return false;
  }
  return true;
}

// The goals the table is held to (docs/benchmarks.md): every row at least
// 2x the fastest recipe on one thread and 1.7x on more; 1080p NV12 -> 640
// square at 2.5x on one thread, a margin for a noisy machine; ours within
// 2x of the floor. A miss whose own bound is below the goal ("reachable"
// under it) is out of reach of any implementation on this machine; one
// within 15% of its bound has little left to take.
constexpr double kGoalOneThread = 2.0, kGoalThreads = 1.7, kGoalHeadline = 2.5;
constexpr double kNearBound = 1.15;

// Allocations per call as the row prints them: whole counts as they are, a
// fraction (some calls allocated, most not) with two significant digits, so
// that a row never reads 0 where the summary counts it as allocating.
std::string allocs_text(double per_call) {
  char text[32];
  if (per_call == std::floor(per_call)) {
    std::snprintf(text, sizeof text, "%.0f", per_call);
  } else {
    std::snprintf(text, sizeof text, "%.2g", per_call);
  }
  return text;
}

double goal_of(int threads) {
  return threads == 1 ? kGoalOneThread : kGoalThreads;
}

struct Measured {
  std::string source, format, mode, interp;
  int out = 0, threads = 0;
  Result r;
  double speedup() const { return r.best_us / r.ours_us; }
  double reachable() const { return r.best_us / r.bound_us; }
  double vs_floor() const { return r.ours_us / r.floor_us; }
  double vs_bound() const { return r.ours_us / r.bound_us; }
};

// After the rows: per interpolation and thread count, how many rows meet
// the goal, how many could (the bound allows it), the misses among those
// and how close each is to its bound; the headline row against its own goal.
void print_goals(const std::vector<Measured>& rows) {
  std::vector<std::pair<std::string, int>> groups;
  for (const Measured& m : rows) {
    const std::pair<std::string, int> g{m.interp, m.threads};
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  std::printf(
      "\nAgainst the goals (%.1fx the fastest recipe on 1 thread, %.1fx on more; reachable: "
      "the bound allows the goal; near the bound: ours within %.0f%% of it):\n\n",
      kGoalOneThread, kGoalThreads, (kNearBound - 1.0) * 100.0);
  std::printf(
      "| interp | threads | at the goal | reachable | reachable misses | of those near the bound "
      "| within 2x of the floor | rows that allocate |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::vector<const Measured*> misses;
  for (const auto& [interp, threads] : groups) {
    int n = 0, at = 0, reachable = 0, missed = 0, near = 0, floor = 0, allocating = 0;
    const double goal = goal_of(threads);
    for (const Measured& m : rows) {
      if (m.interp != interp || m.threads != threads) continue;
      ++n;
      at += m.speedup() >= goal;
      floor += m.vs_floor() <= 2.0;
      allocating += m.r.allocs > 0;
      if (m.reachable() < goal) continue;
      ++reachable;
      if (m.speedup() >= goal) continue;
      ++missed;
      near += m.vs_bound() <= kNearBound;
      misses.push_back(&m);
    }
    std::printf("| %s | %d | %d/%d at %.1fx | %d | %d | %d | %d | %d |\n", interp.c_str(), threads,
                at, n, goal, reachable, missed, near, floor, allocating);
  }
  if (!misses.empty()) {
    std::sort(misses.begin(), misses.end(),
              [](const Measured* a, const Measured* b) { return a->vs_bound() > b->vs_bound(); });
    std::printf("\nReachable misses, the most room first (ours / the bound):\n\n");
    for (const Measured* m : misses) {
      std::printf(
          "* %s %s -> %d %s, %s, %d thread%s: %.2fx of %.2fx reachable; ours %.2fx the "
          "bound\n",
          m->source.c_str(), m->format.c_str(), m->out, m->mode.c_str(), m->interp.c_str(),
          m->threads, m->threads == 1 ? "" : "s", m->speedup(), m->reachable(), m->vs_bound());
    }
  }
  bool headline = false;
  for (const Measured& m : rows) {
    if (m.source != "1080p" || m.format != "nv12" || m.out != 640 || m.mode != "square" ||
        m.threads != 1) {
      continue;
    }
    if (!headline) std::printf("\n");
    headline = true;
    std::printf("1080p nv12 -> 640 square, %s, 1 thread: %.2fx (goal %.1fx): %s\n",
                m.interp.c_str(), m.speedup(), kGoalHeadline,
                m.speedup() >= kGoalHeadline ? "met" : "missed");
  }
}

// A probe figure over this many times its fastest in the table marks the
// run as measured on a slowed host (HostProbe).
constexpr double kSlowHost = 1.25;

// The fastest probe figure of all runs: the host unslowed.
double fastest_host(const std::vector<const std::vector<Result>*>& all) {
  double f = 1e300;
  for (const auto* runs : all)
    for (const Result& r : *runs)
      f = std::min(f, r.host_ns);
  return f;
}

// The host probe times vector work only. On the Zen 5 VM of session 52 the
// memory side slowed on its own several times (a 6 MiB memset at 0.34-0.39x
// its speed while the multiply-adds kept theirs), and the probe marked
// nothing. The floor (the same bytes read and written once, timed in the
// same rotation as ours) is the memory probe: a run whose floor took over
// kSlowMemory times the fastest floor of its row's runs ran with the
// memory slowed. It marks runs only where a row has two or more.
constexpr double kSlowMemory = 1.25;

double fastest_floor(const std::vector<Result>& runs) {
  double f = 1e300;
  for (const Result& r : runs)
    f = std::min(f, r.floor_us);
  return f;
}

bool memory_slowed(const Result& r, double row_floor) {
  return r.floor_us > kSlowMemory * row_floor;
}

// The probe (vector work) over kSlowHost times its fastest in the table.
bool host_slowed(const Result& r, double fastest) {
  return r.host_ns > kSlowHost * fastest;
}

// Slowed either way: the probe (vector work) or the floor (memory).
bool slowed(const Result& r, double fastest, double row_floor) {
  return host_slowed(r, fastest) || memory_slowed(r, row_floor);
}

// The run a row reports out of several: the one of median speed-up (the
// lower of the middle two for an even count) among the runs the host ran
// unslowed (all, where every run was slowed), so that its times, floor and
// bound are one measurement; allocations per call are the most of any run,
// so that a run that allocated is never hidden.
Result median_run(const std::vector<Result>& all, double fastest) {
  const double row_floor = fastest_floor(all);
  std::vector<Result> runs;
  for (const Result& x : all)
    if (!slowed(x, fastest, row_floor)) runs.push_back(x);
  if (runs.empty()) runs = all;
  std::sort(runs.begin(), runs.end(), [](const Result& a, const Result& b) {
    return a.best_us / a.ours_us < b.best_us / b.ours_us;
  });
  Result r = runs[(runs.size() - 1) / 2];
  for (const Result& x : all)
    r.allocs = std::max(r.allocs, x.allocs);
  return r;
}

// " (1.91-2.20)": the speed-ups of a row's runs, lowest to highest; empty
// for one run.
std::string speedup_range(const std::vector<Result>& runs) {
  if (runs.size() < 2) return {};
  double lo = 1e300, hi = 0;
  for (const Result& x : runs) {
    lo = std::min(lo, x.best_us / x.ours_us);
    hi = std::max(hi, x.best_us / x.ours_us);
  }
  char text[48];
  std::snprintf(text, sizeof text, " (%.2f-%.2f)", lo, hi);
  return text;
}

std::string runs_text(int runs) {
  if (runs < 2) return {};
  return "runs: " + std::to_string(runs) +
         " per row, in passes over the whole table; each row prints its run of "
         "median speed-up, the range of all its runs in brackets, and the most allocations per "
         "call of any run\n\n";
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The fused preprocess against the strongest recipes at every detector input"};
  std::string sources = "720p,1080p,4k", formats = "nv12,i420", sizes = "320,416,512,608,640,1280",
              modes = "square,letterbox", interps = "bilinear,area,nearest", threads = "1,2";
  double seconds = 0.3;
  int runs = 1;
  bool fresh = false;
  app.add_option("--sources", sources, "720p, 1080p, 4k");
  app.add_option("--formats", formats, "nv12, i420");
  app.add_option("--sizes", sizes, "square output sizes");
  app.add_option("--modes", modes, "square (stretch), letterbox");
  app.add_option("--interp", interps, "bilinear, area, nearest");
  app.add_option("--threads", threads, "1, 2");
  app.add_option("--seconds", seconds, "measuring time per row")->check(CLI::Range(0.001, 3600.0));
  app.add_option("--runs", runs,
                 "measure every row this many times, in passes over the whole table, and "
                 "print the run of median speed-up (its range beside it); allocations "
                 "per call are the most of any run")
      ->check(CLI::Range(1, 99));
  app.add_flag("--fresh", fresh,
               "each call reads the next of enough frames (twice the last-level cache) that "
               "none is cached when it comes round again: frames fresh from memory, as a "
               "camera's; without it every call reads the same frame");
  std::string simd = "native";
  app.add_option("--simd", simd,
                 "native (the best this CPU runs) or avx2: ours, OpenCV and libyuv all without "
                 "AVX-512, for the many machines that have none")
      ->check(CLI::IsMember({"native", "avx2"}));
  CLI11_PARSE(app, argc, argv);
  if (simd == "avx2" && !limit_to_avx2(argv)) return 2;
  // Every list item is checked before the first row is measured.
  auto whole = [](const std::string& item, const char* option, int lo, int hi) {
    int v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size() || v < lo || v > hi) {
      std::fprintf(stderr, "%s: '%s' is not a whole number from %d to %d\n", option, item.c_str(),
                   lo, hi);
      return false;
    }
    return true;
  };
  auto one_of = [](const std::string& item, const char* option,
                   std::initializer_list<std::string_view> names) {
    for (std::string_view n : names)
      if (item == n) return true;
    std::string all;
    for (std::string_view n : names)
      all += (all.empty() ? "" : ", ") + std::string(n);
    std::fprintf(stderr, "%s: unknown '%s' (%s)\n", option, item.c_str(), all.c_str());
    return false;
  };
  for (const std::string& v : split_list(sizes))
    if (!whole(v, "--sizes", 16, 8192)) return 2;
  for (const std::string& v : split_list(threads))
    if (!whole(v, "--threads", 1, 256)) return 2;
  for (const std::string& v : split_list(modes))
    if (!one_of(v, "--modes", {"square", "letterbox"})) return 2;
  for (const std::string& v : split_list(interps))
    if (!one_of(v, "--interp", {"bilinear", "area", "nearest"})) return 2;

  std::printf(
      "engine: %s; speed-up = fastest recipe / ours; vs floor = ours / read+write once (the "
      "faster stores); "
      "reachable = the fastest recipe / the bound (the needed rows read once, the tensor written "
      "once, by plain or streaming stores, whichever is faster): the most any implementation could "
      "be faster than that recipe\n\nhost: %s%s\n\nframes: %s\n\n%s",
      neat::preprocess_simd_target(), host_summary().c_str(),
      simd == "avx2" ? "; --simd avx2: OpenCV and libyuv without AVX-512 too" : "",
      fresh ? "fresh (--fresh): each call reads the next of enough copies, twice the last-level "
              "cache, that none is cached when it comes round again"
            : "one, read by every call (it stays in the caches that hold it; --fresh for frames "
              "from memory)",
      runs_text(runs).c_str());
  std::printf(
      "| source | format | output | mode | interp | threads | ours ms | fastest recipe "
      "| its ms | speed-up | vs floor | reachable | allocs/call |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  // Every source and format's rows (a block: one frame), checked and
  // planned before the first row is measured.
  struct Planned {
    Row row;
    std::string size, mode, interp, threads;
    std::vector<Result> results;
  };
  struct Block {
    const Source* source;
    std::string fmt;
    neat::NeatTensor frame;
    std::vector<Planned> planned;
  };
  std::vector<Block> blocks;
  for (const std::string& sname : split_list(sources)) {
    const Source* source = nullptr;
    for (const Source& s : kSources)
      if (s.name == sname) source = &s;
    if (source == nullptr) {
      std::fprintf(stderr, "unknown source '%s' (720p, 1080p, 4k)\n", sname.c_str());
      return 2;
    }
    for (const std::string& fmt : split_list(formats)) {
      if (fmt != "nv12" && fmt != "i420") {
        std::fprintf(stderr, "unknown format '%s' (nv12, i420)\n", fmt.c_str());
        return 2;
      }
      const bool nv12 = fmt == "nv12";
      std::vector<Planned> planned;
      for (const std::string& size : split_list(sizes)) {
        for (const std::string& mode : split_list(modes)) {
          // The recipes' 4:2:0 steps (cvtColor, libyuv) need an even content size.
          const int out = std::stoi(size);
          const neat::LetterboxBox box =
              mode == "letterbox" ? neat::letterbox_box(source->width, source->height, out, out)
                                  : neat::LetterboxBox{out, out, 0, 0};
          if (box.width % 2 != 0 || box.height % 2 != 0) {
            std::fprintf(stderr,
                         "%s %s into %d: the content is %lldx%lld; the recipes' 4:2:0 steps need "
                         "an even width and height (pick another size)\n",
                         source->name.c_str(), mode.c_str(), out, static_cast<long long>(box.width),
                         static_cast<long long>(box.height));
            return 2;
          }
          for (const std::string& in : split_list(interps)) {
            const neat::Interpolation interp = in == "nearest" ? neat::Interpolation::Nearest
                                               : in == "area"  ? neat::Interpolation::Area
                                                               : neat::Interpolation::Bilinear;
            for (const std::string& t : split_list(threads)) {
              planned.push_back({Row{source, nv12, out, mode == "letterbox", interp, std::stoi(t)},
                                 size,
                                 mode,
                                 in,
                                 t,
                                 {}});
            }
          }
        }
      }
      blocks.push_back({source, fmt, neat::NeatTensor{}, std::move(planned)});
    }
  }
  for (Block& b : blocks) {
    b.frame = make_frame(b.fmt == "nv12" ? neat::PixelFormat::NV12 : neat::PixelFormat::I420,
                         b.source->width, b.source->height);
  }
  // Every row measured `runs` times, pass after pass over the whole table:
  // a spell of host noise lands on different rows in different passes. On
  // a shared host such a spell lasts seconds to minutes: in passes over one
  // block's rows at a time, all three runs of a block fell in one (a Zen 5
  // VM, session 50: the floor, the same bytes read and written, took 1.3-3x
  // the time in 720p NV12's rows that it took in I420's).
  // The rows print once every pass is done: a line on stderr says where
  // the passes are meanwhile.
  HostProbe probe;
  for (int pass = 0; pass < runs; ++pass) {
    for (Block& b : blocks) {
      std::fprintf(stderr, "measuring %s %s: %zu row%s (pass %d of %d)\n", b.source->name.c_str(),
                   b.fmt.c_str(), b.planned.size(), b.planned.size() == 1 ? "" : "s", pass + 1,
                   runs);
      std::vector<neat::NeatTensor> frames = {b.frame};
      if (fresh) {  // copies of the block's frame, for this pass only
        const std::int64_t bytes = b.frame.plane_layout(0).row_stride * b.source->height * 3 / 2;
        const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
        const std::int64_t caches = std::max<std::int64_t>(l3 > 0 ? l3 : 0, 64 << 20);
        const std::int64_t n = std::max<std::int64_t>(2, 2 * caches / bytes + 1);
        for (std::int64_t i = 1; i < n; ++i)  // the same content
          frames.push_back(b.frame.clone().value());
      }
      for (Planned& p : b.planned)
        p.results.push_back(measure(p.row, frames, seconds, probe));
    }
  }
  std::vector<const std::vector<Result>*> all;
  for (const Block& b : blocks)
    for (const Planned& p : b.planned)
      all.push_back(&p.results);
  const double fastest = fastest_host(all);
  std::vector<Measured> measured;
  std::vector<std::string> all_slowed;
  int slowed_runs = 0, total_runs = 0, probe_runs = 0, memory_runs = 0;
  double host_hi = 1, floor_hi = 1;
  for (const Block& b : blocks) {
    for (const Planned& p : b.planned) {
      int n_slowed = 0;
      const double row_floor = fastest_floor(p.results);
      for (const Result& x : p.results) {
        n_slowed += slowed(x, fastest, row_floor);
        probe_runs += host_slowed(x, fastest);
        memory_runs += memory_slowed(x, row_floor);
        host_hi = std::max(host_hi, x.host_ns / fastest);
        floor_hi = std::max(floor_hi, x.floor_us / row_floor);
      }
      slowed_runs += n_slowed;
      total_runs += static_cast<int>(p.results.size());
      if (n_slowed == static_cast<int>(p.results.size())) {
        all_slowed.push_back(b.source->name + " " + b.fmt + " -> " + p.size + " " + p.mode + ", " +
                             p.interp + ", " + p.threads + " thread" +
                             (p.threads == "1" ? "" : "s"));
      }
      const Result r = median_run(p.results, fastest);
      measured.push_back({b.source->name, b.fmt, p.mode, p.interp, p.row.out, p.row.threads, r});
      std::printf(
          "| %s | %s | %s | %s | %s | %s | %.3f | %s | %.3f | %.2fx%s | %.2fx | %.2fx | "
          "%s |\n",
          b.source->name.c_str(), b.fmt.c_str(), p.size.c_str(), p.mode.c_str(), p.interp.c_str(),
          p.threads.c_str(), r.ours_us / 1e3, r.best.c_str(), r.best_us / 1e3,
          r.best_us / r.ours_us, speedup_range(p.results).c_str(), r.ours_us / r.floor_us,
          r.best_us / r.bound_us, allocs_text(r.allocs).c_str());
    }
  }
  std::printf(
      "\nhost: its probe (HostProbe: a block of vector multiply-adds) beside each run took "
      "1.00-%.2fx its fastest time, over %.2fx in %d of %d runs; the floor of a run took "
      "1.00-%.2fx the fastest of its row's runs, over %.2fx in %d (the memory slowed). %d runs "
      "were slowed either way (other tenants on the host's cores or memory)%s\n",
      host_hi, kSlowHost, probe_runs, total_runs, floor_hi, kSlowMemory, memory_runs, slowed_runs,
      runs > 1 ? ", left out of their rows' medians (the ranges in brackets include them)" : "");
  if (!all_slowed.empty()) {
    std::printf("rows with every run on a slowed host (their medians take all runs):\n");
    for (const std::string& row : all_slowed)
      std::printf("* %s\n", row.c_str());
  }
  std::fflush(stdout);
  print_goals(measured);
  return 0;
}

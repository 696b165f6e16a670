// Shared benchmark inputs and the paired-measurement helper: a camera-like 1080p NV12 frame,
// zero-copy cv::Mat views of its planes, the model's preprocess parameters, and the unfused OpenCV
// preprocess chain the fused kernel and the graph are measured against.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

#include <neat/kernels/preprocess.hpp>
#include <neat/neat.hpp>

namespace neat::bench {

inline neat::NeatTensor nv12_1080p() {
  auto f =
      neat::NeatTensor::allocate_image(neat::PixelFormat::NV12, 1920, 1080, {.zero_fill = false});
  auto w = std::move(*f).make_writable();
  {
    auto m = w->map(neat::MapMode::Write);
    auto y = *m->mutable_plane_data(neat::PlaneRole::Y);
    cv::Mat view(1080 + 540, 1920, CV_8UC1, y);
    cv::randu(view, 0, 256);
    cv::GaussianBlur(view, view, cv::Size(9, 9), 3);  // camera-like, not noise
  }
  // BT.601 limited: the one standard OpenCV's YUV converters implement, so the
  // baselines do the same work.
  return *std::move(w)->with_colorimetry(neat::kBT601Limited);
}

struct Planes {
  cv::Mat y, uv;
};
inline Planes mats_of(const neat::Mapping& m, const neat::NeatTensor& f) {
  const auto& yl = f.plane_layout(0);
  const auto& cl = f.plane_layout(1);
  return {cv::Mat(static_cast<int>(yl.rows), static_cast<int>(yl.cols), CV_8UC1,
                  const_cast<std::byte*>(*m.plane_data(neat::PlaneRole::Y)),
                  static_cast<size_t>(yl.row_stride)),
          cv::Mat(static_cast<int>(cl.rows), static_cast<int>(cl.cols), CV_8UC2,
                  const_cast<std::byte*>(*m.plane_data(neat::PlaneRole::UV)),
                  static_cast<size_t>(cl.row_stride))};
}

// Every frame mapped once, with cv::Mat views of its planes; [i] cycles.
struct MappedPlanes {
  explicit MappedPlanes(const std::vector<neat::NeatTensor>& frames) {
    maps.reserve(frames.size());  // the Planes point into the mappings
    for (const auto& f : frames) {
      maps.push_back(*f.map());
      planes.push_back(mats_of(maps.back(), f));
    }
  }
  const Planes& operator[](std::size_t i) const { return planes[i % planes.size()]; }
  std::vector<neat::Mapping> maps;
  std::vector<Planes> planes;
};

inline neat::PreprocessParams model_params() {
  neat::PreprocessParams p;
  p.mean = {0.485f, 0.456f, 0.406f};
  p.std = {0.229f, 0.224f, 0.225f};
  return p;
}

// The unfused OpenCV chain the fused preprocess is measured against, with
// its intermediate Mats kept across calls (the strongest baseline).
struct OpenCvChain {
  explicit OpenCvChain(const neat::PreprocessParams& p)
      : prm(p),
        chw(3 * 640 * 640),
        planes{cv::Mat(640, 640, CV_32F, chw.data()),
               cv::Mat(640, 640, CV_32F, chw.data() + 640 * 640),
               cv::Mat(640, 640, CV_32F, chw.data() + 2 * 640 * 640)} {}
  void operator()(const Planes& p) {
    cv::cvtColorTwoPlane(p.y, p.uv, rgb, cv::COLOR_YUV2RGB_NV12);
    cv::resize(rgb, small, cv::Size(640, 640), 0, 0, cv::INTER_LINEAR);
    small.convertTo(fl, CV_32F, prm.scale);
    cv::subtract(fl, cv::Scalar(prm.mean[0], prm.mean[1], prm.mean[2]), fl);
    cv::divide(fl, cv::Scalar(prm.std[0], prm.std[1], prm.std[2]), fl);
    cv::split(fl, planes);
    benchmark::DoNotOptimize(chw.data());
  }
  neat::PreprocessParams prm;
  cv::Mat rgb, small, fl;
  std::vector<float> chw;
  std::vector<cv::Mat> planes;
};

// Paired measurement: the two sides alternate call by call in one loop, so
// machine drift and neighbours hit both equally; the counter "ratio" is
// sum(ours) / sum(baseline) over the run.
template <class Ours, class Baseline>
inline void paired(benchmark::State& state, Ours&& ours, Baseline&& baseline) {
  using clock = std::chrono::steady_clock;
  double ours_ns = 0, base_ns = 0;
  bool ours_first = true;  // alternate the order too, so neither side always runs on a warm cache
  for (auto _ : state) {
    if (ours_first) {
      const auto t0 = clock::now();
      ours();
      const auto t1 = clock::now();
      baseline();
      const auto t2 = clock::now();
      ours_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
      base_ns += std::chrono::duration<double, std::nano>(t2 - t1).count();
    } else {
      const auto t0 = clock::now();
      baseline();
      const auto t1 = clock::now();
      ours();
      const auto t2 = clock::now();
      base_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
      ours_ns += std::chrono::duration<double, std::nano>(t2 - t1).count();
    }
    ours_first = !ours_first;
  }
  state.counters["ours_us"] = ours_ns / 1e3 / static_cast<double>(state.iterations());
  state.counters["baseline_us"] = base_ns / 1e3 / static_cast<double>(state.iterations());
  state.counters["ratio"] = ours_ns / base_ns;
}

}  // namespace neat::bench

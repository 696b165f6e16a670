// The track stage's tracker (kernels/tracker.hpp): cost per frame for 10,
// 50 and 200 objects on a generated scene (tests/support/tracking_scenes.hpp:
// moving squares, jitter, misses and score dips), against the floor of the
// same work: OpenCV's Kalman filters alone (one cv::KalmanFilter predict and
// correct per object per frame, as the tracker runs them), in the same loop.
// Also: heap allocations per frame once warm.
#include <benchmark/benchmark.h>

#include <opencv2/video/tracking.hpp>

#include "alloc_counter.hpp"
#include "neat/kernels/tracker.hpp"
#include "support/tracking_scenes.hpp"

namespace {

using neat::scenes::make_scene;
using neat::scenes::SceneFrame;
using neat::scenes::SceneOptions;

std::vector<SceneFrame> scene(int objects) {
  SceneOptions o;
  o.objects = objects;
  o.frames = 300;
  o.height = 1080 * std::max(1, objects / 20);  // lanes of at least 50 px
  o.size = 40;
  return make_scene(o);
}

void BM_Tracker(benchmark::State& state) {
  const int objects = static_cast<int>(state.range(0));
  const auto frames = scene(objects);
  neat::ByteTracker tracker;
  std::vector<neat::TrackChange> changes;
  std::vector<float> out(static_cast<std::size_t>(objects) * 7);
  std::vector<cv::KalmanFilter> floor(static_cast<std::size_t>(objects),
                                      cv::KalmanFilter(8, 4, 0, CV_32F));
  for (auto& k : floor) {
    cv::setIdentity(k.transitionMatrix);
    cv::setIdentity(k.measurementMatrix);
    cv::setIdentity(k.processNoiseCov, cv::Scalar::all(1));
    cv::setIdentity(k.measurementNoiseCov, cv::Scalar::all(1));
    cv::setIdentity(k.errorCovPost, cv::Scalar::all(1));
  }
  std::int64_t frame = 0;
  double ours_ns = 0, floor_ns = 0;
  std::uint64_t frames_run = 0, allocs = 0;
  for (auto _ : state) {
    for (const SceneFrame& f : frames) {
      const auto a0 = neat::bench::allocation_count();
      const auto t0 = std::chrono::steady_clock::now();
      changes.clear();
      benchmark::DoNotOptimize(tracker.update(f.rows, frame++, out, changes));
      const auto t1 = std::chrono::steady_clock::now();
      const auto a1 = neat::bench::allocation_count();
      for (std::size_t i = 0; i < f.truth.size(); ++i) {
        cv::KalmanFilter& k = floor[static_cast<std::size_t>(f.truth[i])];
        k.predict();
        float z[4] = {f.rows[i * 6], f.rows[i * 6 + 1], f.rows[i * 6 + 2], f.rows[i * 6 + 3]};
        cv::Mat m(4, 1, CV_32F, z);
        benchmark::DoNotOptimize(k.correct(m).ptr<float>());
      }
      const auto t2 = std::chrono::steady_clock::now();
      // Warm after two passes: every track the scene needs (the lost ones of
      // the last pass and the new ones) has been made once and is reused.
      if (frame > 2 * static_cast<std::int64_t>(frames.size())) {
        ours_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
        floor_ns += std::chrono::duration<double, std::nano>(t2 - t1).count();
        allocs += a1 - a0;
        ++frames_run;
      }
    }
  }
  if (frames_run == 0) return;
  state.counters["us/frame"] = ours_ns / static_cast<double>(frames_run) * 1e-3;
  state.counters["kalman_floor_us/frame"] = floor_ns / static_cast<double>(frames_run) * 1e-3;
  state.counters["x_floor"] = ours_ns / floor_ns;
  state.counters["allocs/frame"] = static_cast<double>(allocs) / static_cast<double>(frames_run);
}
BENCHMARK(BM_Tracker)->Arg(10)->Arg(50)->Arg(200)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace

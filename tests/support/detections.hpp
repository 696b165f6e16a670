// Detections for the message sink tests: a tensor of detection rows with a
// frame's metadata, a source that sends moving squares at a frame rate
// (noting its longest wait between frames), and readers of what a
// subscriber received (the frame numbers on a topic, repeats removed).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "neat/contract/neat_tensor.hpp"
#include "neat/stages/source.hpp"

namespace neat::testing {

inline NeatTensor detections(const std::vector<float>& rows, std::int64_t cols, std::int64_t frame,
                             StreamId stream = {0, intern_stream_name("cam")}) {
  const auto n = static_cast<std::int64_t>(rows.size()) / cols;
  auto t = NeatTensor::allocate(DType::F32, {n, cols});
  EXPECT_TRUE(t.ok());
  auto w = std::move(*t).make_writable();
  EXPECT_TRUE(w.ok());
  {
    auto m = w->map(MapMode::Write);
    EXPECT_TRUE(m.ok());
    if (!rows.empty()) std::memcpy(m->mutable_data(), rows.data(), rows.size() * 4);
  }
  FrameMeta meta;
  meta.frame = frame;
  meta.pts_ns = frame * 20'000'000;
  meta.capture_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
  meta.stream = stream;
  meta.geometry.source_width = 1920;
  meta.geometry.source_height = 1080;
  w->set_meta(meta);
  return std::move(*w);
}

// Detections of three squares moving right, `fps` frames per second; it
// notes the longest wait between two of its frames.
class DetectionSource final : public Source {
 public:
  DetectionSource(std::int64_t frames, int fps) : frames_(frames), period_(1'000'000 / fps) {}
  std::string_view kind() const noexcept override { return "detections"; }
  Result<FrameSpec> prepare() override {
    FrameSpec s;
    s.dtype = DType::F32;
    s.shape = Dims{3, 6};
    return s;
  }
  Result<std::optional<NeatTensor>> next(const std::atomic<bool>&) override {
    if (n_ >= frames_) return std::optional<NeatTensor>{};
    const auto now = std::chrono::steady_clock::now();
    if (n_ > 0) {
      std::this_thread::sleep_until(last_ + period_);
      longest_gap_ = std::max(longest_gap_, std::chrono::steady_clock::now() - last_);
    }
    last_ = n_ > 0 ? std::chrono::steady_clock::now() : now;
    const float x = static_cast<float>(n_) * 4;
    std::vector<float> rows;
    for (int i = 0; i < 3; ++i) {
      const float y = 100.0f + 200.0f * static_cast<float>(i);
      rows.insert(rows.end(), {x, y, x + 50, y + 50, 0.9f, 0});
    }
    NeatTensor t = detections(rows, 6, n_++);
    FrameMeta m = t.meta();
    m.stream = {};
    m.frame = -1;
    m.capture_ns = -1;  // the graph stamps it
    t.set_meta(m);
    return std::optional<NeatTensor>{std::move(t)};
  }
  std::chrono::steady_clock::duration longest_gap() const { return longest_gap_; }

 private:
  std::int64_t frames_, n_ = 0;
  std::chrono::microseconds period_;
  std::chrono::steady_clock::time_point last_{};
  std::chrono::steady_clock::duration longest_gap_{};
};

// The frame numbers of one topic's detection messages, in arrival order.
inline std::vector<std::int64_t> frames_on(
    const std::vector<std::pair<std::string, std::string>>& all, const std::string& topic) {
  std::vector<std::int64_t> out;
  for (const auto& [t, payload] : all) {
    const nlohmann::json j = nlohmann::json::parse(payload);
    if (t == topic && j["schema"] == "neat.detections/1") out.push_back(j["frame"]);
  }
  return out;
}

// The frames in order once repeats (a resend after a reconnect) are removed.
inline std::vector<std::int64_t> without_repeats(const std::vector<std::int64_t>& frames,
                                                 int* repeats) {
  std::vector<std::int64_t> out;
  for (std::int64_t f : frames) {
    if (!out.empty() && f <= out.back()) {
      ++*repeats;
      continue;
    }
    out.push_back(f);
  }
  return out;
}

// How many frames a reader has, a resend counted once: what a test waits for
// (waiting for as many messages as frames ends early when one was resent).
inline std::size_t distinct_frames(const std::vector<std::int64_t>& frames) {
  int repeats = 0;
  return without_repeats(frames, &repeats).size();
}

inline std::string temp_dir(const std::string& name) {
  const auto d =
      std::filesystem::temp_directory_path() / ("neat-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

}  // namespace neat::testing

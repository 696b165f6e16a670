// Test images: deterministic pseudo-random frames in every layout the
// conversion tests need, and comparison helpers against OpenCV references.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <opencv2/core.hpp>
#include <random>
#include <vector>

#include "neat/neat.hpp"

namespace neat::testing {

/// Fills every byte of a writable tensor's storages with noise.
inline void fill_random(NeatTensor& t, unsigned seed) {
  std::mt19937 rng(seed);
  auto m = t.map(MapMode::Write);
  ASSERT_TRUE(m.ok()) << m.error().message();
  for (int s = 0; s < t.storage_count(); ++s) {
    const std::int64_t n = t.storage(s)->size_bytes();
    auto base = t.storage(s)->map(MapMode::Write);
    ASSERT_TRUE(base.ok());
    for (std::int64_t i = 0; i < n; ++i)
      (*base)[i] = static_cast<std::byte>(rng() & 0xff);
    t.storage(s)->unmap(MapMode::Write);
  }
}

/// A random planar frame; `align` pads rows.
inline NeatTensor random_frame(PixelFormat f, std::int64_t w, std::int64_t h, unsigned seed,
                               std::int64_t align = 1) {
  auto t = NeatTensor::allocate_image(f, w, h, {.zero_fill = false, .row_alignment = align});
  EXPECT_TRUE(t.ok());
  auto wr = std::move(*t).make_writable();
  EXPECT_TRUE(wr.ok());
  fill_random(*wr, seed);
  return *std::move(wr);
}

/// The same frame with each plane in its own storage, rows padded by `pad` bytes.
inline NeatTensor split_planes(const NeatTensor& f, std::int64_t pad) {
  std::vector<PlaneSpec> specs;
  auto src = f.map();
  for (int i = 0; i < f.plane_count(); ++i) {
    const PlaneLayout& p = f.plane_layout(i);
    const std::int64_t row = p.cols * p.samples, stride = row + pad;
    auto storage = default_allocator().allocate({stride * p.rows + 7, true});
    EXPECT_TRUE(storage.ok());
    auto dst = (*storage)->map(MapMode::Write);
    const std::byte* s = *src->plane_data(p.role);
    for (std::int64_t r = 0; r < p.rows; ++r) {
      std::memcpy(*dst + 7 + r * stride, s + r * p.row_stride, static_cast<std::size_t>(row));
    }
    (*storage)->unmap(MapMode::Write);
    specs.push_back({p.role, *storage, stride, 7});
  }
  auto out = NeatTensor::compose_planes(f.pixel_format(), f.image().width, f.image().height, specs);
  EXPECT_TRUE(out.ok()) << out.error().message();
  return *out;
}

/// A packed copy of a planar frame as one OpenCV Mat of (H + H/2) rows (even sizes).
/// Every element of `t` as float (through convert_dtype: F16 / BF16 widened).
inline std::vector<float> floats(const NeatTensor& t) {
  auto f = convert_dtype(t, DType::F32);
  EXPECT_TRUE(f.ok());
  if (!f.ok()) return {};
  auto m = f->map();
  auto p = m->data_ptr<const float>();
  return std::vector<float>(*p, *p + t.numel());
}

inline cv::Mat packed_yuv_mat(const NeatTensor& f) {
  auto c = f.clone();
  EXPECT_TRUE(c.ok());
  auto m = c->map();
  const std::int64_t w = f.image().width, h = f.image().height;
  cv::Mat out(static_cast<int>(h + h / 2), static_cast<int>(w), CV_8UC1);
  std::memcpy(out.data, *m->plane_data(PlaneRole::Y), static_cast<std::size_t>(w * (h + h / 2)));
  return out;
}

/// The tensor's bytes as a packed Mat (HWC / HW dense).
inline cv::Mat to_mat_copy(const NeatTensor& t) {
  auto v = mat_view(t);
  EXPECT_TRUE(v.ok()) << v.error().message();
  return v->clone();
}

inline double max_abs_diff(const cv::Mat& a, const cv::Mat& b) {
  EXPECT_EQ(a.size(), b.size());
  EXPECT_EQ(a.type(), b.type());
  if (a.size() != b.size() || a.type() != b.type()) return 1e9;
  return cv::norm(a, b, cv::NORM_INF);
}

}  // namespace neat::testing

#include "neat/kernels/preprocess.hpp"

#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "neat/kernels/cast.hpp"
#include "neat/kernels/internal/lease_pool.hpp"
#include "neat/kernels/internal/preprocess_kernel.hpp"
#include "neat/kernels/yuv_matrix.hpp"

namespace neat {

namespace {

using detail::YuvPlanes;

// OpenCV INTER_NEAREST source index of output index d.
inline std::int32_t nearest_coord(std::int64_t d, double scale, std::int64_t size) {
  return static_cast<std::int32_t>(
      std::min<std::int64_t>(static_cast<std::int64_t>(std::floor(d * scale)), size - 1));
}

template <class O>
inline void put(std::byte* plane, std::int64_t i, float v) noexcept {
  if constexpr (std::is_same_v<O, float>) {
    std::memcpy(plane + i * 4, &v, 4);
  } else if constexpr (std::is_same_v<O, Half>) {
    const Half h = to_half(v);
    std::memcpy(plane + i * 2, &h, 2);
  } else {
    const BFloat16 b = to_bfloat16(v);
    std::memcpy(plane + i * 2, &b, 2);
  }
}

struct Affine {  // out_c = rgb[map[c]] * a[c] + b[c]
  int map[3];
  float a[3], b[3];
  const YuvToRgb* yuv;  // the colour standard's coefficients
};

// Nearest: the integer formula of convert_color, so values equal the chain's.
inline void yuv_to_rgb8(int y, int u, int v, const YuvToRgb& k, float* rgb) {
  const int yy = std::max(0, y - k.y_offset) * k.y;
  const int uu = u - 128, vv = v - 128;
  constexpr int half = 1 << (kYuvShift - 1);
  auto sat = [](int x) { return static_cast<float>(std::clamp(x >> kYuvShift, 0, 255)); };
  rgb[0] = sat(yy + half + k.r_v * vv);
  rgb[1] = sat(yy + half + k.g_v * vv + k.g_u * uu);
  rgb[2] = sat(yy + half + k.b_u * uu);
}

// Letterbox padding, normalized like the pixels, per output plane.
void fill_pad(const Affine& k, const PreprocessParams& p, std::byte* const* planes,
              std::int64_t start, std::int64_t count) {
  if (count <= 0) return;
  for (int c = 0; c < 3; ++c) {
    const float pad = p.pad_value * k.a[c] + k.b[c];
    for (std::int64_t i = start; i < start + count; ++i) {
      if (p.out_dtype == DType::F32) {
        put<float>(planes[c], i, pad);
      } else if (p.out_dtype == DType::F16) {
        put<Half>(planes[c], i, pad);
      } else {
        put<BFloat16>(planes[c], i, pad);
      }
    }
  }
}

// Nearest: each output pixel is one source pixel, converted with the integer
// formula of convert_color, so values equal the unfused chain's exactly.
void nearest_rows(const YuvPlanes& s, const Affine& k, const PreprocessParams& p,
                  const LetterboxBox& box, std::byte* const* planes, std::int64_t r0,
                  std::int64_t r1) {
  const std::int64_t out_w = p.width;
  const double sx = static_cast<double>(s.width) / static_cast<double>(box.width);
  const double sy = static_cast<double>(s.height) / static_cast<double>(box.height);
  for (std::int64_t out_r = r0; out_r < r1; ++out_r) {
    if (out_r < box.y || out_r >= box.y + box.height) {
      fill_pad(k, p, planes, out_r * out_w, out_w);
      continue;
    }
    fill_pad(k, p, planes, out_r * out_w, box.x);
    fill_pad(k, p, planes, out_r * out_w + box.x + box.width, out_w - box.x - box.width);
    const std::int64_t row_start = out_r * out_w + box.x;
    const std::int32_t y0 = nearest_coord(out_r - box.y, sy, s.height);
    const std::uint8_t* ya = s.y + y0 * s.y_stride;
    const std::uint8_t* ua = s.u + (y0 / 2) * s.u_stride;
    const std::uint8_t* va = s.v + (y0 / 2) * s.v_stride;
    for (std::int64_t x = 0; x < box.width; ++x) {
      const std::int32_t x0 = nearest_coord(x, sx, s.width);
      const std::int64_t c0 = (x0 / 2) * s.uv_step();
      float rgb[3];
      yuv_to_rgb8(ya[x0], ua[c0], va[c0], *k.yuv, rgb);
      for (int c = 0; c < 3; ++c) {
        const float val = rgb[k.map[c]] * k.a[c] + k.b[c];
        if (p.out_dtype == DType::F32) {
          put<float>(planes[c], row_start + x, val);
        } else if (p.out_dtype == DType::F16) {
          put<Half>(planes[c], row_start + x, val);
        } else {
          put<BFloat16>(planes[c], row_start + x, val);
        }
      }
    }
  }
}

// The resampling tables of the last call on this thread, rebuilt only when
// the geometry or the sampling changes (a stream's frames share them).
// k when every output of the axis is the plain mean of k stored samples in
// a row, output o's from first[0] + k o (an exact k-to-1 box); else 0.
int exact_box(const detail::ResampleAxis& a) {
  const int k = a.taps;
  const float w = 1.f / static_cast<float>(k);
  for (std::int64_t o = 0; o < a.count; ++o) {
    const auto u = static_cast<std::size_t>(o);
    if (a.first[u] != a.first[0] + k * o) return 0;
    for (int t = 0; t < k; ++t)
      if (a.weight[static_cast<std::size_t>(t * a.stride + o)] != w) return 0;
  }
  return k;
}

// k when every output of the axis picks one stored sample k after the
// previous output's, from first[0] (nearest at an integer ratio, bilinear at
// an odd one); else 0.
int exact_pick(const detail::ResampleAxis& a) {
  if (!a.picks || a.count < 2) return 0;
  const int k = a.first[1] - a.first[0];
  if (k < 1) return 0;
  for (std::int64_t o = 0; o < a.count; ++o)
    if (a.first[static_cast<std::size_t>(o)] != a.first[0] + k * o) return 0;
  return k;
}

// Whether every output of the axis weighs two samples by half each
// (bilinear at an even integer ratio, 4x and up).
bool halves(const detail::ResampleAxis& a) {
  if (a.taps != 2) return false;
  for (std::int64_t o = 0; o < a.count; ++o) {
    const auto u = static_cast<std::size_t>(o);
    if (a.weight[u] != 0.5f || a.weight[u + static_cast<std::size_t>(a.stride)] != 0.5f)
      return false;
  }
  return true;
}

// k when every output of the axis weighs two adjacent samples by half each,
// k after the previous output's (bilinear at an even integer ratio); else 0.
int exact_pair(const detail::ResampleAxis& a) {
  if (a.count < 2 || !halves(a)) return 0;
  const int k = a.first[1] - a.first[0];
  if (k < 2) return 0;
  for (std::int64_t o = 0; o < a.count; ++o)
    if (a.first[static_cast<std::size_t>(o)] != a.first[0] + k * o) return 0;
  return k;
}

struct AxisCache {
  detail::ResampleAxis axis;
  std::int64_t count = -1, grid = -1;
  int shift = 0, step = 0;
  detail::Sampling sampling = detail::Sampling::Bilinear;
  int box = 0;   // exact_box(axis)
  int pick = 0;  // exact_pick(axis): nearest and bilinear
  int pair = 0;  // exact_pair(axis): bilinear
  const detail::ResampleAxis* get(std::int64_t c, std::int64_t g, int sh, detail::Sampling m,
                                  int st = 1) {
    if (c != count || g != grid || sh != shift || m != sampling || st != step) {
      count = -1;  // no geometry's until built: a build that throws leaves it so
      detail::build_axis(axis, c, g, sh, m, st);
      box = m == detail::Sampling::Nearest ? 0 : exact_box(axis);
      pick = m == detail::Sampling::Area ? 0 : exact_pick(axis);
      pair = m == detail::Sampling::Bilinear ? exact_pair(axis) : 0;
      count = c;
      grid = g;
      shift = sh;
      sampling = m;
      step = st;
    }
    return &axis;
  }
};

detail::Sampling sampling_of(Interpolation i) {
  return i == Interpolation::Area      ? detail::Sampling::Area
         : i == Interpolation::Nearest ? detail::Sampling::Nearest
                                       : detail::Sampling::Bilinear;
}

// The axes of one geometry (frame, content box, sampling), and which.
struct AxisSet {
  struct Key {
    std::int64_t width = -1, height = -1, box_width = -1, box_height = -1;
    detail::Sampling sampling = detail::Sampling::Bilinear;
    bool interleaved = false;
    // The tensor and the threads: what the stores' times depend on.
    std::int64_t out_width = -1, out_height = -1;
    DType dtype = DType::F32;
    int threads = 0;
    bool operator==(const Key&) const = default;
  };
  static Key key_of(const YuvPlanes& s, const PreprocessParams& p, const LetterboxBox& box,
                    int threads) {
    return {s.width,          s.height, box.width, box.height,  sampling_of(p.interpolation),
            s.interleaved_uv, p.width,  p.height,  p.out_dtype, threads};
  }
  Key key;
  AxisCache lx, ly, cx, cy, lsx, csx;
  detail::StoreTuner stores;  // StoreMode::Auto's, measured (StoreTuner)
};

// Axis tables lent per call (detail::LeasePool): a call finds the tables
// of its geometry if any call made them, whichever thread it ran on, and a
// process that alternates geometries keeps each (a new one takes a slot no
// geometry has used while there is one). Never destroyed, as a
// call may still run while the process exits.
detail::LeasePool<AxisSet, 16>& axis_pool() {
  static auto* pool = new detail::LeasePool<AxisSet, 16>();
  return *pool;
}

detail::PreprocessJob make_job(const YuvPlanes& s, const Affine& k, const PreprocessParams& p,
                               const LetterboxBox& box, std::byte* const* planes, AxisSet& axes,
                               const AxisSet::Key& key) {
  if (!(axes.key == key)) axes.stores = detail::StoreTuner{};  // a slot another geometry held
  axes.key = key;
  AxisCache &lx = axes.lx, &ly = axes.ly, &cx = axes.cx, &cy = axes.cy, &lsx = axes.lsx,
            &csx = axes.csx;
  // Luma on its own grid; chroma on the same grid, one stored sample per two.
  const detail::Sampling m = sampling_of(p.interpolation);
  detail::PreprocessJob j;
  static_cast<YuvPlanes&>(j) = s;
  j.luma_x = lx.get(box.width, s.width, 0, m);
  j.luma_y = ly.get(box.height, s.height, 0, m);
  j.chroma_x = cx.get(box.width, s.width, 1, m, s.interleaved_uv ? 2 : 1);
  j.chroma_y = cy.get(box.height, s.height, 1, m);
  // An exact 2x, 4x, 6x or 12x box on both axes, with 4:2:0 chroma under
  // it: the exact-box path, no tables. An exact 3x box takes it for luma;
  // its chroma (1.5x) keeps its tables.
  const int box_k = lx.box;
  if ((box_k == 2 || box_k == 4 || box_k == 6 || box_k == 12) && ly.box == box_k &&
      cx.box == box_k / 2 && cy.box == box_k / 2) {
    j.box_k = box_k;
    j.box_chroma = true;
  } else if (box_k == 3 && ly.box == 3) {
    j.box_k = 3;
  } else if (lx.pick != 0 || cx.pick != 0) {
    // Nearest at an integer ratio across, bilinear at an odd one (its outputs
    // fall on samples): samples picked k apart, no tables. Chroma alone at an
    // even one (1080p -> 320: luma weighs samples 6 o + 2 and 6 o + 3, both
    // in UV pair 3 o + 1).
    const int step = s.interleaved_uv ? 2 : 1;
    if (lx.pick != 0 && detail::fits_without_tables(lx.pick)) j.luma_x_pick = lx.pick;
    if (cx.pick != 0 && detail::fits_without_tables(cx.pick * step)) j.chroma_x_pick = cx.pick;
  } else if (m == detail::Sampling::Area) {
    // Only the horizontal axis an exact box (4K -> 320 square: 12 samples
    // across, 6.75 rows down): rows summed across without tables (from 1.6
    // rows down, after the fixed-point vertical pass: XBoxWeighedRows).
    const int step = s.interleaved_uv ? 2 : 1;
    if (box_k >= 2 && detail::fits_without_tables(box_k)) j.luma_x_box = box_k;
    if (cx.box >= 1 && box_k >= 2 && detail::fits_without_tables(cx.box * step)) {
      j.chroma_x_box = cx.box;
    }
  }
  // Bilinear at an even ratio across (720p -> 320: luma 4x, chroma 2x; 4K ->
  // 320: 12x and 6x): each output's two samples picked k apart and halved,
  // no tables.
  if (m == detail::Sampling::Bilinear && j.box_k == 0) {
    const int step = s.interleaved_uv ? 2 : 1;
    if (j.luma_x_pick == 0 && lx.pair != 0 && detail::fits_without_tables(lx.pair)) {
      j.luma_x_pick = lx.pair;
      j.luma_x_pair = true;
    }
    if (j.chroma_x_pick == 0 && cx.pair != 0 && detail::fits_without_tables(cx.pair * step)) {
      j.chroma_x_pick = cx.pair;
      j.chroma_x_pair = true;
    }
  }
  // Bilinear at 4x both ways: luma the middle 2 x 2 of each 4 x 4 block,
  // chroma the 2 x 2 under it, both exact means: the one-pass rows take it
  // as box 4's (BoxRowFused), luma from its two rows. At 6x (1080p -> 320
  // letterboxed, 4K -> 640) the same, chroma the one sample under the 2 x 2.
  if (m == detail::Sampling::Bilinear && j.box_k == 0) {
    if (lx.pair == 4 && ly.pair == 4 && cx.box == 2 && cy.box == 2) j.pair_box = 4;
    if (lx.pair == 6 && ly.pair == 6 && cx.pick == 3 && cy.pick == 3) j.pair_box = 6;
  }
  // Bilinear at an even ratio down (luma from 4x, chroma from 2x: a 4x
  // frame) weighs two rows by half each: they are summed first too, where
  // the sums take the word permutes (720p -> 320 letterboxed, chroma summed
  // too: 0.049 -> 0.046 ms; 4K -> 320: 3%).
  if (m == detail::Sampling::Bilinear && j.box_k == 0 && halves(*j.luma_y)) {
    j.luma_sum_x = lsx.get(box.width, s.width, 0, m, 2);
  }
  if (m == detail::Sampling::Bilinear && j.box_k == 0 && halves(*j.chroma_y)) {
    j.chroma_sum_x = csx.get(box.width, s.width, 1, m, s.interleaved_uv ? 4 : 2);
  }
  // Area sums its rows first from 4 taps on; with 3, where the rows are
  // weighed into the sum (weigh_rows) from 1.6 source rows per output row on
  // (below, each source row resampled once costs less: 720p -> 608 stretched,
  // 1.2 rows, 3-10% slower summed; 720p -> 512, 1.4 rows, the same; 720p ->
  // 416, 1.7 rows, 4% faster; same-session A/B).
  auto summed = [&](const detail::ResampleAxis& ay) {
    return ay.taps >= 4 || (ay.taps == 3 && 5 * ay.source >= 8 * ay.count);
  };
  if (m == detail::Sampling::Area) {
    j.weigh_rows = true;
    if (summed(*j.luma_y)) j.luma_sum_x = lsx.get(box.width, s.width, 0, m, 2);
    if (summed(*j.chroma_y)) {
      j.chroma_sum_x = csx.get(box.width, s.width, 1, m, s.interleaved_uv ? 4 : 2);
    }
  }
  j.luma_x_identity = m != detail::Sampling::Nearest && box.width == s.width;
  j.out_w = p.width;
  j.out_h = p.height;
  j.box_x = box.x;
  j.box_y = box.y;
  j.box_w = box.width;
  j.box_h = box.height;
  j.out_dtype = p.out_dtype;
  for (int c = 0; c < 3; ++c) {
    j.planes[c] = planes[c];
    j.a[c] = k.a[c];
    j.b[c] = k.b[c];
    j.pad[c] = p.pad_value * k.a[c] + k.b[c];
  }
  j.uniform_affine = j.a[0] > 0.f && j.a[1] == j.a[0] && j.a[2] == j.a[0] && j.b[0] >= 0.f &&
                     j.b[1] == j.b[0] && j.b[2] == j.b[0];
  j.r_plane = k.map[0] == 0 ? 0 : 2;  // plane c holds rgb[map[c]]
  j.b_plane = 2 - j.r_plane;
  j.yuv = k.yuv;
  j.nearest = m == detail::Sampling::Nearest;
  return j;
}

// The job's stores: the user's mode, or Auto's by the plan; for the fused
// nearest rows' pixels and bars above the plan's stream_above, measured by
// the geometry's tuner (StoreTuner). The pick says whether to time the call.
detail::StoreTuner::Pick choose_job_stores(const PreprocessParams& p, const YuvPlanes& s,
                                           detail::PreprocessJob& job, detail::StoreTuner& tuner) {
  const detail::StorePlan& plan = detail::active_store_plan();
  const std::int64_t tensor_bytes = 3 * p.width * p.height * item_size(p.out_dtype);
  detail::StoreChoice stores = detail::choose_stores(
      p.stores, plan, tensor_bytes, s.y_stride * s.height * 3 / 2, p.out_dtype,  // 4:2:0
      job.nearest);
  detail::StoreTuner::Pick pick;
  if (job.nearest && p.stores == StoreMode::Auto && tensor_bytes > plan.stream_above) {
    detail::StoreChoice flipped = stores;
    flipped.stream_bars = !stores.stream_bars;
    const detail::StoreChoice candidates[] = {stores, flipped};
    tuner.offer(candidates, 2);
    pick = tuner.pick();
    stores = tuner.candidate(pick.index);
  }
  job.stream = stores.stream;
  job.stream_bars = stores.stream_bars;
  job.stream_rows = stores.stream_rows;
  return pick;
}

}  // namespace

namespace detail {

StorePlan store_plan(std::int64_t l2, std::int64_t l3, StoreHost host) {
  constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
  if (l2 <= 0) l2 = std::int64_t{1} << 20;
  if (l3 <= 0) l3 = std::int64_t{8} << 20;
  switch (host) {
    case StoreHost::SocketWideL3:
      return {l2 / 2, 0, false, 0};
    case StoreHost::CcdL3:
      return {l2, l3 / 3, false, std::min(4 * l2, l3 / 3)};
    case StoreHost::AmdBeforeZen4:
      return {l2, kNever, true, kNever};
    case StoreHost::Unmeasured:
      break;
  }
  return {kNever, kNever, false, kNever};
}

StoreHost store_host() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return StoreHost::Unmeasured;
  char vendor[12];
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  if (std::memcmp(vendor, "GenuineIntel", 12) == 0) return StoreHost::SocketWideL3;
  if (std::memcmp(vendor, "AuthenticAMD", 12) == 0) {
    // AVX-512F (leaf 7, EBX bit 16) tells Zen 4 and later from Zen 3 and
    // earlier, whose streaming stores to three planes in turn measured
    // slower at every size.
    unsigned a7 = 0, b7 = 0, c7 = 0, d7 = 0;
    const bool avx512 = __get_cpuid_count(7, 0, &a7, &b7, &c7, &d7) != 0 && (b7 >> 16 & 1u) != 0;
    return avx512 ? StoreHost::CcdL3 : StoreHost::AmdBeforeZen4;
  }
#endif
  return StoreHost::Unmeasured;
}

const StorePlan& host_store_plan() {
  static const StorePlan plan =
      store_plan(sysconf(_SC_LEVEL2_CACHE_SIZE), sysconf(_SC_LEVEL3_CACHE_SIZE), store_host());
  return plan;
}

namespace {
std::atomic<const StorePlan*> g_plan_override{nullptr};
}  // namespace

void override_store_plan(const StorePlan* plan) {
  g_plan_override.store(plan, std::memory_order_release);
}

const StorePlan& active_store_plan() {
  const StorePlan* plan = g_plan_override.load(std::memory_order_acquire);
  return plan != nullptr ? *plan : host_store_plan();
}

StoreChoice choose_stores(StoreMode mode, const StorePlan& plan, std::int64_t tensor_bytes,
                          std::int64_t frame_bytes, DType dtype, bool nearest) {
  StoreChoice c;
  if (mode != StoreMode::Auto) {
    c.stream = c.stream_bars = mode == StoreMode::Streamed;
    return c;
  }
  const bool large = tensor_bytes > plan.stream_above;
  if (plan.by_rows) {
    c.stream_rows = large && dtype == DType::F32;
    return c;
  }
  c.stream = large;
  const std::int64_t bars_cached_within =
      nearest ? plan.nearest_cached_within : plan.bars_cached_within;
  c.stream_bars = large && frame_bytes + tensor_bytes > bars_cached_within;
  return c;
}

void StoreTuner::offer(const StoreChoice* candidates, int n) {
  n = std::clamp(n, 0, kMaxCandidates);
  if (n == n_offered_ && std::equal(candidates, candidates + n, offered_)) return;
  *this = StoreTuner{};
  std::copy(candidates, candidates + n, offered_);
  n_offered_ = n;
  for (int i = 0; i < n; ++i) {  // repeats dropped
    if (std::find(candidates_, candidates_ + n_, candidates[i]) == candidates_ + n_) {
      candidates_[n_++] = candidates[i];
    }
  }
  measuring_ = n_ > 1;
  warmup_ = measuring_ ? kWarmup : 0;
  if (n_ <= 1) chosen_ = 0;
}

StoreTuner::Pick StoreTuner::pick() {
  if (warmup_ > 0) {  // a new geometry's first calls, by the plan's stores
    --warmup_;
    return {0, false};
  }
  if (!measuring_) {
    const std::int64_t after = decisions_ == 1 ? kFirstRetuneAfter : kRetuneAfter;
    if (n_ <= 1 || ++since_ < after) return {std::max(chosen_, 0), false};
    measuring_ = true;
    std::fill(got_, got_ + n_, 0);
    in_run_ = false;
  }
  // Each candidate in a run of two calls, the second timed: the first
  // follows another candidate's stores (a streamed call leaves the tensor
  // out of the caches, where a cached call would have left it in).
  if (in_run_) {
    in_run_ = false;
    awaiting_ = current_;
    return {current_, true};
  }
  awaiting_ = -1;  // a timed call that recorded nothing (it failed) is not waited for
  // The next run's: the first of the candidates with fewest times, from an
  // offset that moves each round, so that no candidate always follows the
  // same one.
  const int round = *std::min_element(got_, got_ + n_);
  current_ = 0;
  for (int k = 0; k < n_; ++k) {
    const int i = (round + k) % n_;
    if (got_[i] == round) {
      current_ = i;
      break;
    }
  }
  in_run_ = true;
  return {current_, false};
}

void StoreTuner::record(int index, std::int64_t ns) {
  if (!measuring_ || index < 0 || index != awaiting_ || got_[index] >= kRounds) return;
  awaiting_ = -1;
  ns_[index][got_[index]++] = ns;
  if (std::all_of(got_, got_ + n_, [](int g) { return g >= kRounds; })) decide();
}

void StoreTuner::decide() {
  // Each candidate's least time but one: a call's time only grows with
  // what interrupts it, so the least are its own, and one slow call
  // (or one lucky one) does not move the choice.
  std::int64_t second[kMaxCandidates] = {};
  for (int i = 0; i < n_; ++i) {
    std::int64_t t[kRounds];
    std::copy(ns_[i], ns_[i] + kRounds, t);
    std::nth_element(t, t + 1, t + kRounds);
    second[i] = t[1];
  }
  const int best = static_cast<int>(std::min_element(second, second + n_) - second);
  chosen_ = 100 * second[best] <= 97 * second[0] ? best : 0;
  measuring_ = false;
  since_ = 0;
  ++decisions_;
}

}  // namespace detail

const char* preprocess_simd_target() noexcept {
  return detail::preprocess_simd_target();
}

const char* to_string(StoreMode mode) noexcept {
  switch (mode) {
    case StoreMode::Auto:
      return "auto";
    case StoreMode::Cached:
      return "cached";
    case StoreMode::Streamed:
      return "streamed";
  }
  return "unknown";
}

LetterboxBox letterbox_box(std::int64_t sw, std::int64_t sh, std::int64_t ow,
                           std::int64_t oh) noexcept {
  LetterboxBox b;
  if (sw <= 0 || sh <= 0 || ow <= 0 || oh <= 0) return b;
  const double scale = std::min(static_cast<double>(ow) / static_cast<double>(sw),
                                static_cast<double>(oh) / static_cast<double>(sh));
  b.width = std::clamp<std::int64_t>(std::llround(static_cast<double>(sw) * scale), 1, ow);
  b.height = std::clamp<std::int64_t>(std::llround(static_cast<double>(sh) * scale), 1, oh);
  b.x = (ow - b.width) / 2;
  b.y = (oh - b.height) / 2;
  return b;
}

Result<NeatTensor> preprocess(const NeatTensor& frame, const PreprocessParams& p,
                              ConversionOptions options, std::source_location where) {
  if (!frame.defined()) return failed_precondition("preprocess: the tensor is undefined");
  if (!frame.is_composite()) {
    return invalid_argument(
        "preprocess of " + frame.to_string() +
        ": needs a planar frame (NV12, NV21, I420, YV12); for interleaved images "
        "chain resize(), to_chw() and normalize()");
  }
  if (frame.device().type != DeviceType::Cpu) {
    return failed_precondition("preprocess of " + frame.to_string() + ": not in CPU memory");
  }
  if (p.width <= 0 || p.height <= 0 || p.width > (1 << 24) || p.height > (1 << 24)) {
    return invalid_argument("preprocess: output size " + std::to_string(p.width) + "x" +
                            std::to_string(p.height) + " must be positive and at most 2^24");
  }
  if (p.channel_order != PixelFormat::RGB && p.channel_order != PixelFormat::BGR) {
    return invalid_argument("preprocess: channel_order must be RGB or BGR");
  }
  if (p.interpolation != Interpolation::Nearest && p.interpolation != Interpolation::Bilinear &&
      p.interpolation != Interpolation::Area) {
    return invalid_argument("preprocess: interpolation must be Nearest, Bilinear or Area");
  }
  if (p.resize_mode != ResizeMode::Stretch && p.resize_mode != ResizeMode::Letterbox) {
    return invalid_argument("preprocess: resize_mode must be Stretch or Letterbox");
  }
  if (!(std::isfinite(p.pad_value) && p.pad_value >= 0.f && p.pad_value <= 255.f)) {
    return invalid_argument("preprocess: pad_value " + std::to_string(p.pad_value) +
                            " must be a pixel level from 0 to 255");
  }
  if (p.stores != StoreMode::Auto && p.stores != StoreMode::Cached &&
      p.stores != StoreMode::Streamed) {
    return invalid_argument("preprocess: stores must be Auto, Cached or Streamed, not " +
                            std::to_string(static_cast<int>(p.stores)));
  }
  if (p.out_dtype != DType::F32 && p.out_dtype != DType::F16 && p.out_dtype != DType::BF16) {
    return invalid_argument("preprocess: out_dtype must be f32, f16 or bf16, not " +
                            std::string(to_string(p.out_dtype)));
  }
  const std::int64_t sw = frame.image().width, sh = frame.image().height;
  if (sw == 0 || sh == 0)
    return invalid_argument("preprocess: the frame " + frame.to_string() + " is empty");
  Affine k{};
  for (int c = 0; c < 3; ++c) {
    const auto u = static_cast<std::size_t>(c);
    if (!(std::isfinite(p.std[u]) && p.std[u] != 0.f && std::isfinite(p.mean[u]) &&
          std::isfinite(p.scale))) {
      return invalid_argument("preprocess: channel " + std::to_string(c) +
                              " std must be finite and non-zero, mean and scale finite");
    }
    k.map[c] = p.channel_order == PixelFormat::RGB ? c : 2 - c;
    k.a[c] = p.scale / p.std[u];
    k.b[c] = -p.mean[u] / p.std[u];
  }
  const Dims shape = p.batch_dim ? Dims{1, 3, p.height, p.width} : Dims{3, p.height, p.width};
  NEAT_ASSIGN_OR_RETURN(NeatTensor dst,
                        NeatTensor::allocate(p.out_dtype, shape, destination_alloc(options)));
  // The content rectangle: the whole output, or the letterbox inside it.
  const LetterboxBox box = p.resize_mode == ResizeMode::Letterbox
                               ? letterbox_box(sw, sh, p.width, p.height)
                               : LetterboxBox{p.width, p.height, 0, 0};
  {  // the same frame; output pixel (px + u) lies at source u * sw / box.width
    FrameMeta m = frame.meta();
    const double gx = static_cast<double>(sw) / static_cast<double>(box.width);
    const double gy = static_cast<double>(sh) / static_cast<double>(box.height);
    m.geometry = frame.source_geometry().then(gx, gy, -static_cast<double>(box.x) * gx,
                                              -static_cast<double>(box.y) * gy);
    dst.set_meta(m);
  }
  ConversionSpec spec{ConversionKind::Convert,
                      ConversionReason::Normalize,
                      "preprocess",
                      "preprocess the frame explicitly with preprocess() before this consumer",
                      {}};
  bool assumed = false;
  const Colorimetry standard =
      choose_colorimetry(p.colorimetry, frame.image().colorimetry, sw, sh, &assumed);
  k.yuv = &yuv_to_rgb(standard);
  spec.detail = colorimetry_detail(standard, assumed);

  return run_conversion(
      frame, std::move(dst), spec, options, where,
      [&](const Mapping& in, const Mapping& out) -> Status {
        NEAT_ASSIGN_OR_RETURN(const YuvPlanes s, detail::yuv_planes(frame, in));
        const std::int64_t item = item_size(p.out_dtype);
        std::byte* base = out.mutable_data();
        const std::int64_t plane_bytes = p.height * p.width * item;
        std::byte* planes[3] = {base, base + plane_bytes, base + 2 * plane_bytes};
        const AxisSet::Key key = AxisSet::key_of(s, p, box, options.threads);
        const auto axes =
            axis_pool().take([&](const AxisSet& a) { return a.key == key; },
                             [](const AxisSet& a) { return a.key == AxisSet::Key{}; });
        detail::PreprocessJob job = make_job(s, k, p, box, planes, *axes, key);
        if (job.nearest && !(job.luma_x->blocks && job.chroma_x->blocks)) {
          parallel_rows(p.height, options.threads, [&](std::int64_t r0, std::int64_t r1) {
            nearest_rows(s, k, p, box, planes, r0, r1);
          });
          return {};
        }
        const detail::StoreTuner::Pick pick = choose_job_stores(p, s, job, axes->stores);
        const auto start =
            pick.timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
        // Every slot the stripes may take grown here (not capped by
        // OpenCV's thread count, which may change between calls).
        const auto stripes = static_cast<int>(std::min<std::int64_t>(options.threads, p.height));
        if (stripes > 1) detail::reserve_scratch(job, stripes);
        parallel_rows(p.height, options.threads, [&](std::int64_t r0, std::int64_t r1) {
          detail::preprocess_rows(job, r0, r1);
        });
        if (pick.timed) {
          axes->stores.record(pick.index, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::steady_clock::now() - start)
                                              .count());
        }
        return {};
      });
}

}  // namespace neat

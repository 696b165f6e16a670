// The preprocess engine's axes, built once per geometry (build_axis): each
// output's taps and weights along one axis, and the tables the SIMD paths
// read (periodic patterns, 16-byte blocks, VBMI permute windows, the
// output-by-output weights, area's row-sum plans via plan_row_sums). The
// engine that reads them is kernels/preprocess_simd.cpp; the job that names
// them, kernels/preprocess.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "neat/kernels/internal/preprocess_kernel.hpp"

namespace neat {

namespace detail {

namespace {

// Looks for a periodic pattern of `out` outputs per `in` source samples
// (weights equal to 1e-6) and records it in the axis.
bool find_pattern(ResampleAxis& a, int out, int in) {
  if (a.count < out || a.source < in) return false;
  float lanes[2][4] = {};
  for (std::int64_t o = 0; o < a.count; ++o) {
    const std::int64_t g = o / out, p = o % out;
    float row[4] = {};
    for (int t = 0; t < a.taps; ++t) {
      const float w = a.weight[static_cast<std::size_t>(t * a.stride + o)];
      if (w == 0.f) continue;
      const std::int64_t q = a.first[static_cast<std::size_t>(o)] + t - g * in;
      if (q < 0 || q >= in) return false;
      row[q] += w;
    }
    for (int q = 0; q < in; ++q) {
      if (g == 0) {
        lanes[p][q] = row[q];
      } else if (std::abs(lanes[p][q] - row[q]) > 1e-6f) {
        return false;
      }
    }
  }
  a.group_out = out;
  a.group_in = in;
  std::memcpy(a.lane_weight, lanes, sizeof lanes);
  for (int q = 0; q < 4; ++q)
    a.lane_used[q] = lanes[0][q] != 0.f || lanes[1][q] != 0.f;
  return true;
}

// Picks whose every vector of 16 outputs repeats the first one's picks
// `period` samples on, in at most 64 bytes: ratios of a whole number of
// samples per 16 outputs that no group pattern covers (nearest's 2.5 and
// 3.75 across, 720p and 1080p -> 512; their chroma's 1.25 and 1.875). Sets
// pick_span and pick_base as the group patterns do, and pick_period.
void find_pick_period(ResampleAxis& a, int step) {
  if (a.count <= 16 || a.first[0] != 0) return;
  const std::int64_t period = a.first[16];
  if (period <= 0 || period * step > 64 || (a.first[15] + 1) * step > 64) return;
  for (std::int64_t o = 16; o < a.count; ++o) {
    const auto u = static_cast<std::size_t>(o);
    if (a.first[u] != a.first[u % 16] + o / 16 * period) return;
  }
  a.pick_span = static_cast<int>(period * step);
  for (int i = 0; i < 16; ++i)
    a.pick_base[i] = a.first[static_cast<std::size_t>(i)] * step;
  a.pick_period = true;
}

// The picks' pattern (ResampleAxis::pick_span): the group pattern's, or a
// period of 16 outputs.
void find_pick_pattern(ResampleAxis& a, int step) {
  a.pick_span = 0;
  a.pick_period = false;
  if (!a.picks) return;
  if (a.group_out == 0 || 16 / a.group_out * a.group_in * step > 64) {
    find_pick_period(a, step);
    return;
  }
  a.pick_span = 16 / a.group_out * a.group_in * step;
  for (int i = 0; i < 16; ++i) {
    int q = 0;  // the phase's one sample of weight 1
    while (q < a.group_in - 1 && a.lane_weight[i % a.group_out][q] == 0.f)
      ++q;
    a.pick_base[i] = ((i / a.group_out) * a.group_in + q) * step;
  }
}

// The bytes outputs [o0, o1) read from a row whose samples are `step` bytes
// apart (taps of weight 0 read nothing): [lo, hi], hi < 0 when none.
void tap_span(const ResampleAxis& a, int step, std::int64_t o0, std::int64_t o1, std::int64_t& lo,
              std::int64_t& hi) {
  lo = a.source * step;
  hi = -1;
  for (std::int64_t o = o0; o < std::min(o1, a.count); ++o) {
    for (int t = 0; t < a.taps; ++t) {
      if (a.weight[static_cast<std::size_t>(t * a.stride + o)] == 0.f) continue;
      const std::int64_t at = (a.first[static_cast<std::size_t>(o)] + t) * step;
      lo = std::min(lo, at);
      hi = std::max(hi, at + step - 1);
    }
  }
}

// Where a load of `size` bytes (64 or 128) that must hold bytes [base, hi]
// of a row starts: at the row's 64-byte line that holds `base` where the
// load from there still reaches hi, else at base. A row that starts on a
// line (the frame's rows at a stride of whole lines, as decoders lay them
// out, and the rows of sums) is then read a whole line per 64-byte load,
// where a load from `base` spans two lines whenever base is not on one.
// The windows and the spans so placed, against the first tap's byte, calls
// alternated in one process, each way's tables in their own slot and the
// slots swapped in a second run (Zen 5, one thread, frame cached; session
// 66): 4K NV12 -> 416 bilinear and nearest 0.90-0.91 of the time, 1080p
// NV12 -> 416 area 0.94-0.96, 720p I420 -> 512 and 608 area 0.94-0.95,
// 1080p I420 -> 608 letterboxed bilinear 0.96; over 180 rows (720p, 1080p
// and 4K, NV12 and I420, 320 to 640, square and letterboxed, bilinear,
// area and nearest) 0.986 geometric mean, none above 1.025.
std::int64_t LineAligned(std::int64_t base, std::int64_t hi, std::int64_t size) {
  const std::int64_t line = base / 64 * 64;
  return hi - line < size ? line : base;
}

// The byte-permute tables (see ResampleAxis::windows), in the layout of the
// pair weights: one, two or four 128-byte windows per vector of 16 outputs.
void build_permutes(ResampleAxis& a, int step) {
  a.windows = 0;
  const std::int64_t row_bytes = a.source * step;
  if (row_bytes < 128 || a.taps > 64) return;
  const std::int64_t vectors = a.stride / 16;
  for (int windows = 1; windows <= 4 && a.windows == 0; windows *= 2) {
    const std::int64_t per = 16 / windows;
    a.window_base.assign(static_cast<std::size_t>(4 * vectors), 0);
    bool fit = true;
    for (std::int64_t w = 0; fit && w < vectors * windows; ++w) {
      std::int64_t lo = 0, hi = 0;
      tap_span(a, step, w * per, (w + 1) * per, lo, hi);
      std::int64_t base = hi < 0 ? 0 : std::min(lo, row_bytes - 128);
      fit = hi - base < 128;
      if (fit) base = LineAligned(base, hi, 128);
      a.window_base[static_cast<std::size_t>(w / windows * 4 + w % windows)] =
          static_cast<std::int32_t>(base);
    }
    if (fit) a.windows = windows;
  }
  if (a.windows == 0) return;
  const auto n = static_cast<std::size_t>(a.passes * vectors * 64);
  for (int ch = 0; ch < 4; ++ch)
    a.permute[ch].assign(ch < step ? n : 0, 0);
  const std::int64_t per = 16 / a.windows;
  for (std::int64_t o = 0; o < a.count; ++o) {
    const std::int64_t v = o / 16, i = o % 16;
    const std::int64_t base = a.window_base[static_cast<std::size_t>(v * 4 + i / per)];
    for (int t = 0; t < a.taps; ++t) {
      if (a.weight[static_cast<std::size_t>(t * a.stride + o)] == 0.f) continue;
      const auto at = static_cast<std::size_t>(((t / 2) * vectors + v) * 64 + 4 * i + 2 * (t % 2));
      const std::int64_t byte = (a.first[static_cast<std::size_t>(o)] + t) * step - base;
      for (int ch = 0; ch < step; ++ch)
        a.permute[ch][at] = static_cast<std::uint8_t>(byte + ch);
    }
  }
  for (int ch = 0; ch < 4; ++ch) {  // the same samples as 16-bit lanes
    a.permute_words[ch].resize(a.permute[ch].size() / 2);
    for (std::size_t k = 0; k < a.permute_words[ch].size(); ++k)
      a.permute_words[ch][k] = static_cast<std::uint16_t>(a.permute[ch][2 * k] >> 1);
  }
}

// Where every vector of 16 outputs reads at most 64 bytes of the row: each
// vector's first byte in `base`, its 64 bytes inside the row (row_bytes >=
// 64). False where some vector's taps span 64 bytes or more.
bool span_bases(const ResampleAxis& a, int step, std::vector<std::int32_t>& base) {
  const std::int64_t row_bytes = a.source * step, vectors = a.stride / 16;
  base.assign(static_cast<std::size_t>(vectors), 0);
  for (std::int64_t v = 0; v < vectors; ++v) {
    std::int64_t lo = 0, hi = 0;
    tap_span(a, step, v * 16, (v + 1) * 16, lo, hi);
    const std::int64_t b = hi < 0 ? 0 : std::min(lo, row_bytes - 64);
    if (hi - b >= 64) return false;
    base[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(LineAligned(b, hi, 64));
  }
  return true;
}

// The span tables (see ResampleAxis::span_base): picks only, every vector's
// 16 outputs within 64 bytes of the row.
void build_spans(ResampleAxis& a, int step) {
  a.span_base.clear();
  for (auto& t : a.span_permute)
    t.clear();
  const std::int64_t row_bytes = a.source * step;
  if (!a.picks || row_bytes < 64) return;
  const std::int64_t vectors = a.stride / 16;
  std::vector<std::int32_t> base;
  if (!span_bases(a, step, base)) return;
  for (int ch = 0; ch < step; ++ch)
    a.span_permute[ch].assign(static_cast<std::size_t>(vectors * 64), 0);
  for (std::int64_t o = 0; o < a.count; ++o) {
    const auto v = static_cast<std::size_t>(o / 16);
    const std::int64_t byte = a.first[static_cast<std::size_t>(o)] * step - base[v];
    for (int ch = 0; ch < step; ++ch)
      a.span_permute[ch][v * 64 + static_cast<std::size_t>(4 * (o % 16))] =
          static_cast<std::uint8_t>(byte + ch);
  }
  a.span_base = std::move(base);
}

// Blocks 32 bytes wide (see ResampleAxis::wide_base), where the 16-byte
// blocks do not fit (`fit`) and every block of 4 outputs reads within 32
// bytes.
void build_wide(ResampleAxis& a, int step, bool fit) {
  a.wide_base.clear();
  for (auto& half : a.shuffle_wide)
    for (auto& t : half)
      t.clear();
  const std::int64_t row_bytes = a.source * step;
  if (fit || row_bytes < 32 || a.taps > 64) return;
  std::vector<std::int32_t> base(static_cast<std::size_t>(a.block_count), 0);
  for (std::int64_t b = 0; 4 * b < a.count; ++b) {
    std::int64_t lo = 0, hi = 0;
    tap_span(a, step, 4 * b, 4 * b + 4, lo, hi);
    const std::int64_t at = hi < 0 ? 0 : std::min(lo, row_bytes - 32);
    if (hi - at >= 32) return;
    base[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(at);
  }
  for (auto& half : a.shuffle_wide)
    for (int ch = 0; ch < 4; ++ch)
      half[ch].assign(ch < step ? static_cast<std::size_t>(a.passes * a.block_count * 16) : 0,
                      0x80);
  for (std::int64_t o = 0; o < a.count; ++o) {
    const std::int64_t b = o / 4, i = o % 4;
    for (int t = 0; t < a.taps; ++t) {
      if (a.weight[static_cast<std::size_t>(t * a.stride + o)] == 0.f) continue;
      const std::int64_t byte =
          (a.first[static_cast<std::size_t>(o)] + t) * step - base[static_cast<std::size_t>(b)];
      const auto at =
          static_cast<std::size_t>(((t / 2) * a.block_count + b) * 16 + 4 * i + 2 * (t % 2));
      for (int ch = 0; ch < step; ++ch) {
        const std::int64_t k = byte + ch;
        a.shuffle_wide[k < 16 ? 0 : 1][ch][at] = static_cast<std::uint8_t>(k % 16);
      }
    }
  }
  a.wide_base = std::move(base);
}

// The pair span tables (see ResampleAxis::pair_span_base): up to 8 taps,
// not picks, every vector's 16 outputs within 64 bytes.
void build_pair_spans(ResampleAxis& a, int step) {
  a.pair_span_base.clear();
  for (auto& t : a.pair_span_permute)
    t.clear();
  const std::int64_t row_bytes = a.source * step;
  if (a.picks || a.taps > 8 || a.pair_weight.empty() || row_bytes < 64) return;
  const std::int64_t vectors = a.stride / 16;
  std::vector<std::int32_t> base;
  if (!span_bases(a, step, base)) return;
  for (int ch = 0; ch < step; ++ch)
    a.pair_span_permute[ch].assign(static_cast<std::size_t>(a.passes * vectors * 64), 0);
  for (std::int64_t o = 0; o < a.count; ++o) {
    const auto v = static_cast<std::size_t>(o / 16);
    for (int t = 0; t < a.taps; ++t) {
      if (a.weight[static_cast<std::size_t>(t * a.stride + o)] == 0.f) continue;
      const std::int64_t byte = (a.first[static_cast<std::size_t>(o)] + t) * step - base[v];
      const auto at = static_cast<std::size_t>(
          ((t / 2) * vectors + static_cast<std::int64_t>(v)) * 64 + 4 * (o % 16) + 2 * (t % 2));
      for (int ch = 0; ch < step; ++ch)
        a.pair_span_permute[ch][at] = static_cast<std::uint8_t>(byte + ch);
    }
  }
  a.pair_span_base = std::move(base);
}

// The blocks path's tables (see ResampleAxis). Blocks of 4 outputs whose taps
// lie in 16 bytes; else, with one tap pair per output, a 4-byte gather per
// output; else (large area ratios) a.blocks stays false. Then the permutes'
// and the spans'.
void build_blocks(ResampleAxis& a, int step, Sampling sampling) {
  // Pair weights in 1/32767 (1 fits in 16 bits); nearest: 1, so that the
  // resampled rows hold the source levels themselves.
  const int kOne = sampling == Sampling::Nearest ? 1 : 32767;
  a.blocks = a.gather = false;
  a.windows = 0;
  a.q_taps = 0;
  a.by_output_q.clear();
  a.by_output_twice.clear();
  a.step = step;
  a.passes = (a.taps + 1) / 2;
  a.block_count = a.stride / 4;
  const std::int64_t row_bytes = a.source * step;
  if (row_bytes < 4 || a.taps > 64) return;
  auto weight = [&](std::int64_t o, int t) {
    return a.weight[static_cast<std::size_t>(t * a.stride + o)];
  };
  a.block_base.assign(static_cast<std::size_t>(a.block_count), 0);
  bool fit = row_bytes >= 16;
  for (std::int64_t b = 0; fit && 4 * b < a.count; ++b) {
    std::int64_t lo = 0, hi = 0;
    tap_span(a, step, 4 * b, 4 * b + 4, lo, hi);
    const std::int64_t base = hi < 0 ? 0 : std::min(lo, row_bytes - 16);
    fit = hi - base < 16;
    a.block_base[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(base);
  }
  // Without blocks or a gather, the pair weights are still the permutes' weights.
  const bool usable = fit || a.passes == 1;
  a.gather = !fit && usable;
  a.lane_base.assign(a.gather ? static_cast<std::size_t>(a.stride) : 0, 0);
  const auto n = static_cast<std::size_t>(a.passes * a.block_count);
  for (int ch = 0; ch < 4; ++ch)
    a.shuffle[ch].assign(ch < step ? n * 16 : 0, 0x80);
  a.pair_weight.assign(n * 8, 0);
  a.q_taps = sampling == Sampling::Nearest ? 0
             : a.taps <= 4                 ? 4
             : a.taps <= 8                 ? 8
             : a.taps <= 16                ? 16
             : a.taps <= 32                ? 32
                                           : 64;
  a.by_output_q.assign(static_cast<std::size_t>(a.stride * a.q_taps), 0);
  for (std::int64_t o = 0; o < a.count; ++o) {
    const std::int64_t b = o / 4, i = o % 4;
    std::int64_t lo = 0, hi = 0;
    tap_span(a, step, o, o + 1, lo, hi);
    if (hi < 0) continue;
    // Shuffle indices count from `origin`: the block's base, or (gather) the
    // output's own 4 bytes at lane i of the block.
    std::int64_t origin = a.block_base[static_cast<std::size_t>(b)];
    if (a.gather) {  // one tap pair: at most 4 bytes from lo, so within [base, base + 4)
      const std::int64_t base = std::min(lo, row_bytes - 4);
      a.lane_base[static_cast<std::size_t>(o)] = static_cast<std::int32_t>(base);
      origin = base - 4 * i;
    }
    // Weights rounded to 1/32767, the largest taking the rounding so they sum to 1.
    int q[64] = {}, sum = 0, largest = 0;
    for (int t = 0; t < a.taps; ++t) {
      q[t] = static_cast<int>(std::lround(weight(o, t) * kOne));
      sum += q[t];
      if (q[t] > q[largest]) largest = t;
    }
    q[largest] += kOne - sum;
    for (int t = 0; t < a.q_taps && t < a.taps; ++t)
      a.by_output_q[static_cast<std::size_t>(o * a.q_taps + t)] = static_cast<std::int16_t>(q[t]);
    for (int t = 0; t < a.taps; ++t) {
      if (weight(o, t) == 0.f) continue;
      const auto at = static_cast<std::size_t>((t / 2) * a.block_count + b);
      const std::int64_t byte = (a.first[static_cast<std::size_t>(o)] + t) * step - origin;
      for (int ch = 0; ch < step; ++ch) {
        a.shuffle[ch][at * 16 + static_cast<std::size_t>(4 * i + 2 * (t % 2))] =
            static_cast<std::uint8_t>(byte + ch);
      }
      a.pair_weight[at * 8 + static_cast<std::size_t>(2 * i + t % 2)] =
          static_cast<std::int16_t>(q[t]);
    }
  }
  if (a.q_taps == 4) {
    a.by_output_twice.assign(static_cast<std::size_t>(a.stride * 8), 0);
    for (std::int64_t o = 0; o + 8 <= a.stride; o += 8) {
      for (std::int64_t i = 0; i < 4; ++i) {
        for (std::int64_t h = 0; h < 4; ++h) {  // o + i, o + i, o + i + 4, o + i + 4
          for (std::int64_t t = 0; t < 4; ++t) {
            a.by_output_twice[static_cast<std::size_t>(o * 8 + i * 16 + h * 4 + t)] =
                a.by_output_q[static_cast<std::size_t>((o + i + h / 2 * 4) * 4 + t)];
          }
        }
      }
    }
  }
  build_wide(a, step, fit);
  a.blocks = usable;
  build_permutes(a, step);
  build_spans(a, step);
  build_pair_spans(a, step);
}

}  // namespace

void build_axis(ResampleAxis& a, std::int64_t count, std::int64_t grid, int shift,
                Sampling sampling, int step) {
  constexpr std::int64_t kPad = 64;  // a multiple of every vector width, in floats
  const double r = static_cast<double>(grid) / static_cast<double>(count);
  // OpenCV's INTER_NEAREST steps by 1 / (count / grid), which is not always
  // r to the last bit: where o x grid / count is whole, one of the two can
  // fall just below it (720p -> 416: output 39 reads sample 119, not 120).
  const double nearest_step = 1.0 / (static_cast<double>(count) / static_cast<double>(grid));
  const bool area = sampling == Sampling::Area && r > 1.0;
  const std::int64_t stored = (grid + (1 << shift) - 1) >> shift;
  a.count = count;
  a.source = stored;
  a.stride = (count + kPad - 1) / kPad * kPad;
  // Grid taps per output: 2 (bilinear) or up to ceil(r) + 1 (area); stored
  // taps never more.
  const int max_taps = area ? static_cast<int>(std::ceil(r)) + 1 : 2;
  a.first.assign(static_cast<std::size_t>(a.stride), 0);
  a.weight.assign(static_cast<std::size_t>(a.stride * max_taps), 0.f);
  a.same_as_previous.assign(static_cast<std::size_t>(count), 0);
  int used = 1;
  std::vector<double> w(static_cast<std::size_t>(max_taps) + 1);
  for (std::int64_t o = 0; o < count; ++o) {
    std::fill(w.begin(), w.end(), 0.0);
    std::int64_t first = 0;
    auto add = [&](std::int64_t j, double weight) {  // grid sample j
      if (weight <= 1e-12) return;
      const std::int64_t i = std::min(j >> shift, stored - 1) - first;
      w[static_cast<std::size_t>(i)] += weight;
      used = std::max(used, static_cast<int>(i) + 1);
    };
    if (sampling == Sampling::Nearest) {  // OpenCV's INTER_NEAREST
      const std::int64_t j = std::min<std::int64_t>(
          static_cast<std::int64_t>(std::floor(static_cast<double>(o) * nearest_step)), grid - 1);
      first = std::min(j >> shift, stored - 1);
      add(j, 1.0);
    } else if (area) {  // [o r, (o + 1) r), each grid sample weighted by its overlap
      const double lo = static_cast<double>(o) * r, hi = static_cast<double>(o + 1) * r;
      const auto j0 = static_cast<std::int64_t>(std::floor(lo));
      first = std::min(j0 >> shift, stored - 1);
      for (std::int64_t j = j0; j < grid && static_cast<double>(j) < hi; ++j) {
        add(j,
            (std::min(hi, static_cast<double>(j + 1)) - std::max(lo, static_cast<double>(j))) / r);
      }
    } else {  // OpenCV's INTER_LINEAR mapping, clamped at both edges
      const double sx = (static_cast<double>(o) + 0.5) * r - 0.5;
      auto j = static_cast<std::int64_t>(std::floor(sx));
      double f = sx - static_cast<double>(j);
      if (j < 0) {
        j = 0;
        f = 0;
      }
      if (j >= grid - 1) {
        j = grid - 1;
        f = 0;
      }
      first = std::min(j >> shift, stored - 1);
      add(j, 1.0 - f);
      add(j + 1, f);
    }
    const auto u = static_cast<std::size_t>(o);
    a.first[u] = static_cast<std::int32_t>(first);
    for (int t = 0; t < max_taps; ++t)
      a.weight[static_cast<std::size_t>(t * a.stride + o)] = static_cast<float>(w[t]);
  }
  a.taps = used;
  a.by_output_taps = used <= 8 ? 8 : used <= 16 ? 16 : 0;
  a.by_output.assign(static_cast<std::size_t>(a.stride * a.by_output_taps), 0.f);
  for (std::int64_t o = 0; a.by_output_taps > 0 && o < count; ++o) {
    for (int t = 0; t < used; ++t) {
      a.by_output[static_cast<std::size_t>(o * a.by_output_taps + t)] =
          a.weight[static_cast<std::size_t>(t * a.stride + o)];
    }
  }
  if (area) {
    plan_row_sums(a);
  } else {
    a.row_sums.clear();
  }
  a.picks = used == 1;
  for (std::int64_t o = 0; a.picks && o < count; ++o)
    a.picks = a.weight[static_cast<std::size_t>(o)] == 1.f;
  a.weight.resize(static_cast<std::size_t>(a.stride * used));  // tap-major: drop unused taps
  for (std::int64_t o = 1; o < count; ++o) {
    bool same = a.first[static_cast<std::size_t>(o)] == a.first[static_cast<std::size_t>(o - 1)];
    for (int t = 0; same && t < used; ++t) {
      same = a.weight[static_cast<std::size_t>(t * a.stride + o)] ==
             a.weight[static_cast<std::size_t>(t * a.stride + o - 1)];
    }
    a.same_as_previous[static_cast<std::size_t>(o)] = same;
  }
  for (int b = 0; b < 3; ++b) {
    const std::int64_t block = std::int64_t{4} << b;
    a.window[b] = 0;
    for (std::int64_t o = 0; o < count; o += block) {
      const std::int64_t last = std::min(o + block, count) - 1;
      a.window[b] =
          std::max<std::int64_t>(a.window[b], a.first[static_cast<std::size_t>(last)] + a.taps -
                                                  a.first[static_cast<std::size_t>(o)]);
    }
  }
  a.group_out = a.group_in = 0;
  std::memset(a.lane_weight, 0, sizeof a.lane_weight);
  std::memset(a.lane_used, 0, sizeof a.lane_used);
  for (auto [out, in] : {std::pair{1, 1}, {2, 1}, {1, 2}, {1, 3}, {2, 3}, {1, 4}}) {
    if (find_pattern(a, out, in)) break;
  }
  find_pick_pattern(a, step);
  build_blocks(a, step, sampling);
}

}  // namespace detail

}  // namespace neat

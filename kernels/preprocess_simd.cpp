// The preprocess engine (see kernels/internal/preprocess_kernel.hpp), written
// once with Highway and compiled for every x86 / Arm / ... target Highway
// knows; HWY_DYNAMIC_DISPATCH picks the best the CPU supports at run time.
//
// Per output row: the luma row is resampled (vertical taps, then horizontal
// taps) into a float row of box_w levels; the chroma row is resampled the
// same way from the chroma plane(s) into U and V rows of box_w samples, kept
// while the next output row reads the same chroma rows with the same
// weights; the final pass converts YUV to RGB, clamps to [0, 255],
// normalizes and stores the three planes in the output dtype.
// A periodic horizontal pattern (exact ratios: 1920 -> 640 reads one luma
// sample in three, and chroma samples 0 and 2 of every three for two output
// pixels) folds the horizontal taps into the vertical pass with interleaved
// loads: no gather, and only the columns that are read are loaded. Other
// ratios gather from the vertical pass's float row.

// AVX3_DL (AVX-512 with VBMI: Ice Lake, Zen 4 and later) is compiled too: its
// byte permutes serve large ratios (ResampleAxis::windows).
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL 1
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/preprocess_simd.cpp"
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "neat/kernels/internal/preprocess_kernel.hpp"
#include "neat/kernels/yuv_matrix.hpp"

HWY_BEFORE_NAMESPACE();
namespace neat::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using D8 = hn::Rebind<std::uint8_t, DF>;    // one u8 per float lane
using D16 = hn::Rebind<std::uint16_t, DF>;  // one u16 per float lane
using VF = hn::Vec<DF>;

// The blocks path's horizontally resampled source rows: one slot per source
// row (rows % slots), kept while the next output rows read it.
struct RowCache {
  std::vector<float> data;
  std::vector<std::int64_t> tag;
  std::int64_t width = 0;
  void reset(int slots, std::int64_t w) {
    width = w;
    const auto need = static_cast<std::size_t>(slots * w);
    if (data.size() < need) data.assign(need, 0.f);
    tag.assign(static_cast<std::size_t>(slots), -1);  // keeps its capacity once warm
  }
  float* slot(std::int64_t row, bool& fresh) {
    const auto k = static_cast<std::size_t>(row % static_cast<std::int64_t>(tag.size()));
    fresh = tag[k] != row;
    tag[k] = row;
    return data.data() + static_cast<std::int64_t>(k) * width;
  }
};

// A resampled row as the rows its vertical taps read: sum of w[t] * row[t].
struct RowTaps {
  const float* row[64];
  float w[64];
  int n = 0;
};
HWY_INLINE VF TapsAt(const RowTaps& t, std::int64_t x) {
  const DF df;
  VF acc = hn::Mul(hn::LoadU(df, t.row[0] + x), hn::Set(df, t.w[0]));
  if (t.n == 1) return acc;
  acc = hn::MulAdd(hn::LoadU(df, t.row[1] + x), hn::Set(df, t.w[1]), acc);
  for (int i = 2; i < t.n; ++i)
    acc = hn::MulAdd(hn::LoadU(df, t.row[i] + x), hn::Set(df, t.w[i]), acc);
  return acc;
}

// Scratch rows, reused by each thread across calls. Sized with slack for whole
// vectors past the end; grown (never shrunk) when a larger frame arrives.
struct Scratch {
  std::vector<float> vrow, urow, wrow;  // vertical pass (general path): luma, or U and V
  std::vector<float> luma;              // resampled luma, box_w
  std::vector<float> cu, cv;            // resampled chroma, box_w
  std::int64_t chroma_row = -1;         // the content row whose chroma cu/cv hold
  RowCache luma_rows, chroma_rows;      // the blocks path (chroma: U, then V)
  RowTaps luma_taps, u_taps, v_taps;    // the rows FinishRow sums
};

inline void grow(std::vector<float>& v, std::int64_t n) {
  const auto want =
      static_cast<std::size_t>(n + 4 * static_cast<std::int64_t>(hn::Lanes(DF())) + 8);
  if (v.size() < want) v.assign(want, 0.f);  // zeros: lanes past the end stay finite
}

// Q interleaved vectors of u8 / u16 samples (Q = 1: a plain load).
template <int Q, class D>
HWY_INLINE void LoadQ(D d, const hn::TFromD<D>* p, hn::Vec<D> (&v)[4]) {
  if constexpr (Q == 1) {
    v[0] = hn::LoadU(d, p);
  } else if constexpr (Q == 2) {
    hn::LoadInterleaved2(d, p, v[0], v[1]);
  } else if constexpr (Q == 3) {
    hn::LoadInterleaved3(d, p, v[0], v[1], v[2]);
  } else {
    hn::LoadInterleaved4(d, p, v[0], v[1], v[2], v[3]);
  }
}

template <class V>
HWY_INLINE VF ToFloat(V v) {
  return hn::ConvertTo(DF(), hn::PromoteTo(DI(), v));
}

// The vertical taps of one output row with a non-zero weight, in chunks of
// at most 64 (an area downscale of more than ~60x has more).
struct Taps {
  std::int64_t row[64];
  float w[64];
  int n = 0;
};
template <class F>
HWY_INLINE void ForEachTapChunk(const ResampleAxis& ax, std::int64_t r, F&& f) {
  Taps t;
  bool first_chunk = true;
  for (int i = 0; i < ax.taps; ++i) {
    const float w = ax.weight[static_cast<std::size_t>(i * ax.stride + r)];
    if (w == 0.f) continue;
    t.row[t.n] = ax.first[static_cast<std::size_t>(r)] + i;
    t.w[t.n] = w;
    if (++t.n == 64) {
      f(t, !first_chunk);
      first_chunk = false;
      t.n = 0;
    }
  }
  if (t.n > 0) f(t, !first_chunk);
}

// Accumulators of one group of vectors: phase p of P outputs.
template <int P>
HWY_INLINE void LoadAcc(bool accumulate, float* out, VF (&acc)[2]) {
  const DF df;
  if (!accumulate) {
    acc[0] = acc[1] = hn::Zero(df);
  } else if constexpr (P == 1) {
    acc[0] = hn::LoadU(df, out);
  } else {
    hn::LoadInterleaved2(df, out, acc[0], acc[1]);
  }
}
template <int P>
HWY_INLINE void StoreAcc(const VF (&acc)[2], float* out) {
  if constexpr (P == 1) {
    hn::StoreU(acc[0], DF(), out);
  } else {
    hn::StoreInterleaved2(acc[0], acc[1], DF(), out);
  }
}
// acc[p] += w * sum over q of lane_weight[p][q] * s[q].
template <int P, int Q>
HWY_INLINE void AddLanes(const ResampleAxis& ax, float w, const VF (&s)[4], VF (&acc)[2]) {
  for (int p = 0; p < P; ++p) {
    for (int q = 0; q < Q; ++q) {
      const float lw = ax.lane_weight[p][q];
      if (lw != 0.f) acc[p] = hn::MulAdd(s[q], hn::Set(DF(), w * lw), acc[p]);
    }
  }
}

// Groups [0, end) of a periodic axis that whole vectors can do without
// reading past the source or writing past `count`.
HWY_INLINE std::int64_t VectorGroups(const ResampleAxis& ax) {
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(DF()));
  const std::int64_t groups = std::min(ax.source / ax.group_in, ax.count / ax.group_out);
  return groups / lanes * lanes;
}

// Output o of the general tables from an 8-bit source row (scalar; for tails).
HWY_INLINE float HorizontalAt(const ResampleAxis& ax, const std::uint8_t* row, std::int64_t step,
                              std::int64_t o) {
  float acc = 0.f;
  for (int t = 0; t < ax.taps; ++t) {
    const float w = ax.weight[static_cast<std::size_t>(t * ax.stride + o)];
    if (w != 0.f)
      acc += w * static_cast<float>(row[(ax.first[static_cast<std::size_t>(o)] + t) * step]);
  }
  return acc;
}

// ---- luma -------------------------------------------------------------------

// Periodic fast path: P outputs per Q samples, straight from the source rows.
template <int P, int Q>
void LumaFast(const PreprocessJob& job, const Taps& taps, bool accumulate, float* out) {
  const DF df;
  const D8 d8;
  const ResampleAxis& ax = *job.luma_x;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const std::int64_t groups = VectorGroups(ax);
  for (std::int64_t g = 0; g < groups; g += lanes) {
    VF acc[2];
    LoadAcc<P>(accumulate, out + P * g, acc);
    for (int t = 0; t < taps.n; ++t) {
      hn::Vec<D8> v[4];
      LoadQ<Q>(d8, job.y + taps.row[t] * job.y_stride + Q * g, v);
      VF f[4];
      for (int q = 0; q < Q; ++q)
        f[q] = ax.lane_used[q] ? ToFloat(v[q]) : hn::Zero(df);
      AddLanes<P, Q>(ax, taps.w[t], f, acc);
    }
    StoreAcc<P>(acc, out + P * g);
  }
  for (std::int64_t o = P * groups; o < ax.count; ++o) {  // the tail, scalar
    float acc = accumulate ? out[o] : 0.f;
    for (int t = 0; t < taps.n; ++t)
      acc += taps.w[t] * HorizontalAt(ax, job.y + taps.row[t] * job.y_stride, 1, o);
    out[o] = acc;
  }
}

// Vertical pass of `width` u8 samples into a float row.
void VerticalU8(const std::uint8_t* base, std::int64_t stride, std::int64_t width, const Taps& taps,
                bool accumulate, float* out) {
  const DF df;
  const D8 d8;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t x = 0;
  for (; x + lanes <= width; x += lanes) {
    VF acc = accumulate ? hn::LoadU(df, out + x) : hn::Zero(df);
    for (int t = 0; t < taps.n; ++t) {
      const VF v = ToFloat(hn::LoadU(d8, base + taps.row[t] * stride + x));
      acc = hn::MulAdd(v, hn::Set(df, taps.w[t]), acc);
    }
    hn::StoreU(acc, df, out + x);
  }
  for (; x < width; ++x) {
    float acc = accumulate ? out[x] : 0.f;
    for (int t = 0; t < taps.n; ++t)
      acc += static_cast<float>(base[taps.row[t] * stride + x]) * taps.w[t];
    out[x] = acc;
  }
}

// Horizontal pass of the general path, from a float row (padded). A vector
// of outputs whose samples lie within at most 4 vectors of the row (ratios
// up to about 3.5) loads that window once and picks each tap's samples with
// lane permutes; wider windows gather (slower: a gather costs about a lane a
// cycle on x86).
void HorizontalGather(const ResampleAxis& ax, const float* row, float* out) {
  const DF df;
  const DI di;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  constexpr int kMaxWindow = 4;
  const int block = lanes == 4 ? 0 : lanes == 8 ? 1 : lanes == 16 ? 2 : -1;
  const std::int64_t window = block < 0 ? 0 : (ax.window[block] + lanes - 1) / lanes;
  if (block >= 0 && window <= kMaxWindow) {
    int shift = 0;
    while ((std::int64_t{1} << shift) < lanes)
      ++shift;
    const auto low = hn::Set(di, static_cast<std::int32_t>(lanes - 1));
    for (std::int64_t o = 0; o < ax.count; o += lanes) {  // tables and `out` are padded
      const std::int32_t base = ax.first[static_cast<std::size_t>(o)];
      const auto rel = hn::Sub(hn::LoadU(di, ax.first.data() + o), hn::Set(di, base));
      VF src[kMaxWindow];
      for (int k = 0; k < window; ++k)
        src[k] = hn::LoadU(df, row + base + k * lanes);
      VF acc = hn::Zero(df);
      for (int t = 0; t < ax.taps; ++t) {
        const auto idx = hn::Add(rel, hn::Set(di, t));
        const auto lane = hn::IndicesFromVec(df, hn::And(idx, low));
        const auto which = hn::ShiftRightSame(idx, shift);  // the window vector; < 0 past count
        VF v = hn::TableLookupLanes(src[0], lane);
        for (int k = 1; k < window; ++k) {
          const auto in_k = hn::RebindMask(df, hn::Eq(which, hn::Set(di, k)));
          v = hn::IfThenElse(in_k, hn::TableLookupLanes(src[k], lane), v);
        }
        acc = hn::MulAdd(v, hn::LoadU(df, ax.weight.data() + t * ax.stride + o), acc);
      }
      hn::StoreU(acc, df, out + o);
    }
    return;
  }
  for (std::int64_t o = 0; o < ax.count; o += lanes) {  // tables and `out` are padded
    const auto first = hn::LoadU(di, ax.first.data() + o);
    VF acc = hn::Zero(df);
    for (int t = 0; t < ax.taps; ++t) {
      const VF v = hn::GatherIndex(df, row, hn::Add(first, hn::Set(di, t)));
      acc = hn::MulAdd(v, hn::LoadU(df, ax.weight.data() + t * ax.stride + o), acc);
    }
    hn::StoreU(acc, df, out + o);
  }
}

template <int P, int Q>
struct Pattern {};

// Calls f(Pattern<P, Q>) for the axis's periodic pattern; false when it has none.
template <class F>
HWY_INLINE bool WithPattern(const ResampleAxis& ax, F&& f) {
  switch (ax.group_out * 8 + ax.group_in) {
    case 9:
      f(Pattern<1, 1>());
      return true;
    case 17:
      f(Pattern<2, 1>());
      return true;
    case 10:
      f(Pattern<1, 2>());
      return true;
    case 11:
      f(Pattern<1, 3>());
      return true;
    case 19:
      f(Pattern<2, 3>());
      return true;
    case 12:
      f(Pattern<1, 4>());
      return true;
    default:
      return false;
  }
}

void LumaRow(const PreprocessJob& job, Scratch& s, std::int64_t r) {
  const ResampleAxis& ax = *job.luma_x;
  bool fast = false;
  ForEachTapChunk(*job.luma_y, r, [&](const Taps& taps, bool accumulate) {
    fast = WithPattern(ax, [&](auto pattern) {
      [&]<int P, int Q>(Pattern<P, Q>) {
        LumaFast<P, Q>(job, taps, accumulate, s.luma.data());
      }(pattern);
    });
    if (!fast) VerticalU8(job.y, job.y_stride, ax.source, taps, accumulate, s.vrow.data());
  });
  if (!fast) HorizontalGather(ax, s.vrow.data(), s.luma.data());
}

// ---- chroma -----------------------------------------------------------------

// Periodic fast path on both chroma planes (or the interleaved one).
template <int P, int Q>
void ChromaFast(const PreprocessJob& job, const Taps& taps, bool accumulate, float* cu, float* cv) {
  const DF df;
  const D8 d8;
  const D16 d16;
  const ResampleAxis& ax = *job.chroma_x;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const std::int64_t groups = VectorGroups(ax);
  const bool u_low = job.u < job.v;  // interleaved: U is the low byte of each pair
  for (std::int64_t g = 0; g < groups; g += lanes) {
    VF au[2], av[2];
    LoadAcc<P>(accumulate, cu + P * g, au);
    LoadAcc<P>(accumulate, cv + P * g, av);
    for (int t = 0; t < taps.n; ++t) {
      VF fu[4], fv[4];
      if (job.interleaved_uv) {
        const std::uint8_t* p = std::min(job.u, job.v) + taps.row[t] * job.u_stride + 2 * Q * g;
        hn::Vec<D16> pairs[4];
        LoadQ<Q>(d16, reinterpret_cast<const std::uint16_t*>(p), pairs);
        for (int q = 0; q < Q; ++q) {
          fu[q] = fv[q] = hn::Zero(df);
          if (!ax.lane_used[q]) continue;
          const VF lo = ToFloat(hn::And(pairs[q], hn::Set(d16, 0xFF)));
          const VF hi = ToFloat(hn::ShiftRight<8>(pairs[q]));
          fu[q] = u_low ? lo : hi;
          fv[q] = u_low ? hi : lo;
        }
      } else {
        hn::Vec<D8> vu[4], vv[4];
        LoadQ<Q>(d8, job.u + taps.row[t] * job.u_stride + Q * g, vu);
        LoadQ<Q>(d8, job.v + taps.row[t] * job.v_stride + Q * g, vv);
        for (int q = 0; q < Q; ++q) {
          fu[q] = fv[q] = hn::Zero(df);
          if (!ax.lane_used[q]) continue;
          fu[q] = ToFloat(vu[q]);
          fv[q] = ToFloat(vv[q]);
        }
      }
      AddLanes<P, Q>(ax, taps.w[t], fu, au);
      AddLanes<P, Q>(ax, taps.w[t], fv, av);
    }
    StoreAcc<P>(au, cu + P * g);
    StoreAcc<P>(av, cv + P * g);
  }
  const std::int64_t step = job.interleaved_uv ? 2 : 1;
  for (std::int64_t o = P * groups; o < ax.count; ++o) {  // the tail, scalar
    float acc_u = accumulate ? cu[o] : 0.f, acc_v = accumulate ? cv[o] : 0.f;
    for (int t = 0; t < taps.n; ++t) {
      acc_u += taps.w[t] * HorizontalAt(ax, job.u + taps.row[t] * job.u_stride, step, o);
      acc_v += taps.w[t] * HorizontalAt(ax, job.v + taps.row[t] * job.v_stride, step, o);
    }
    cu[o] = acc_u;
    cv[o] = acc_v;
  }
}

// Vertical pass of an interleaved UV plane into separate U and V float rows.
void VerticalInterleaved(const PreprocessJob& job, std::int64_t width, const Taps& taps,
                         bool accumulate, float* out_u, float* out_v) {
  const DF df;
  const D8 d8;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const bool u_low = job.u < job.v;
  const std::uint8_t* base = std::min(job.u, job.v);
  float* lo_out = u_low ? out_u : out_v;
  float* hi_out = u_low ? out_v : out_u;
  std::int64_t x = 0;
  for (; x + lanes <= width; x += lanes) {
    VF alo = accumulate ? hn::LoadU(df, lo_out + x) : hn::Zero(df);
    VF ahi = accumulate ? hn::LoadU(df, hi_out + x) : hn::Zero(df);
    for (int t = 0; t < taps.n; ++t) {
      hn::Vec<D8> lo, hi;
      hn::LoadInterleaved2(d8, base + taps.row[t] * job.u_stride + 2 * x, lo, hi);
      const VF w = hn::Set(df, taps.w[t]);
      alo = hn::MulAdd(ToFloat(lo), w, alo);
      ahi = hn::MulAdd(ToFloat(hi), w, ahi);
    }
    hn::StoreU(alo, df, lo_out + x);
    hn::StoreU(ahi, df, hi_out + x);
  }
  for (; x < width; ++x) {
    float alo = accumulate ? lo_out[x] : 0.f, ahi = accumulate ? hi_out[x] : 0.f;
    for (int t = 0; t < taps.n; ++t) {
      const std::uint8_t* p = base + taps.row[t] * job.u_stride + 2 * x;
      alo += static_cast<float>(p[0]) * taps.w[t];
      ahi += static_cast<float>(p[1]) * taps.w[t];
    }
    lo_out[x] = alo;
    hi_out[x] = ahi;
  }
}

// Resamples the chroma of content row r into the U and V rows.
void ChromaRow(const PreprocessJob& job, Scratch& s, std::int64_t r) {
  const ResampleAxis& ax = *job.chroma_x;
  bool fast = false;
  ForEachTapChunk(*job.chroma_y, r, [&](const Taps& taps, bool accumulate) {
    fast = WithPattern(ax, [&](auto pattern) {
      [&]<int P, int Q>(Pattern<P, Q>) {
        ChromaFast<P, Q>(job, taps, accumulate, s.cu.data(), s.cv.data());
      }(pattern);
    });
    if (fast) return;
    if (job.interleaved_uv) {
      VerticalInterleaved(job, ax.source, taps, accumulate, s.urow.data(), s.wrow.data());
    } else {
      VerticalU8(job.u, job.u_stride, ax.source, taps, accumulate, s.urow.data());
      VerticalU8(job.v, job.v_stride, ax.source, taps, accumulate, s.wrow.data());
    }
  });
  if (!fast) {
    HorizontalGather(ax, s.urow.data(), s.cu.data());
    HorizontalGather(ax, s.wrow.data(), s.cv.data());
  }
  s.chroma_row = r;
}

// ---- the blocks path --------------------------------------------------------
// Horizontal taps first, straight from the 8-bit row: each 16-byte block of a
// vector is loaded from its own base, a byte shuffle places the two samples of
// a tap pair as 16-bit lanes and a 16-bit multiply-add (weights in 1/32767)
// sums them into one 32-bit lane per output. The float row (levels x 32767)
// is cached per source row, so output rows that share source rows resample
// them once; the vertical taps then combine cached rows.

#if HWY_TARGET == HWY_SCALAR
// One lane: the same tables, read one output at a time.
template <int C>
void HorizontalBlocks(const ResampleAxis& ax, const std::uint8_t* row, const int (&channel)[C],
                      float* const (&out)[C]) {
  for (std::int64_t o = 0; o < ax.count; ++o) {
    const std::int64_t b = o / 4, i = o % 4;
    const std::uint8_t* base = ax.gather ? row + ax.lane_base[static_cast<std::size_t>(o)] - 4 * i
                                         : row + ax.block_base[static_cast<std::size_t>(b)];
    for (int c = 0; c < C; ++c) {
      std::int32_t acc = 0;
      for (int p = 0; p < ax.passes; ++p) {
        const auto at = static_cast<std::size_t>(p * ax.block_count + b);
        for (int half = 0; half < 2; ++half) {
          const auto k = static_cast<std::size_t>(2 * i + half);
          const std::uint8_t idx = ax.shuffle[channel[c]][at * 16 + 2 * k];
          if (idx != 0x80) acc += base[idx] * ax.pair_weight[at * 8 + k];
        }
      }
      out[c][o] = static_cast<float>(acc);
    }
  }
}
#else
using DB = hn::Repartition<std::uint8_t, DF>;
using DW = hn::Repartition<std::int16_t, DF>;

// One vector of bytes, block k (16 bytes) loaded from row + bases[k].
template <class D>
HWY_INLINE hn::Vec<D> LoadBlocks(D d, const std::uint8_t* row, const std::int32_t* bases) {
  if constexpr (hn::MaxLanes(d) <= 16) {
    return hn::LoadU(d, row + bases[0]);
  } else {
    const hn::Half<D> dh;
    constexpr std::size_t kHalf = hn::MaxLanes(dh) / 16;
    return hn::Combine(d, LoadBlocks(dh, row, bases + kHalf), LoadBlocks(dh, row, bases));
  }
}

#if HWY_TARGET == HWY_AVX3_DL
// The byte-permute variant (ResampleAxis::windows): each vector of 16 outputs
// permutes its samples out of one or two 128-byte windows (vpermt2b).
template <int C>
void HorizontalPermutes(const ResampleAxis& ax, const std::uint8_t* row, const int (&channel)[C],
                        float* const (&out)[C]) {
  const DF df;
  const DI di;
  const DW dw;
  const std::int64_t vectors = ax.stride / 16;
  constexpr __mmask64 kEven = 0x5555555555555555ull;  // the low byte of each 16-bit lane
  constexpr __mmask64 kLow = kEven & 0x00000000FFFFFFFFull, kHigh = kEven & ~kLow;
  for (std::int64_t v = 0; v * 16 < ax.count; ++v) {
    const std::uint8_t* p0 = row + ax.window_base[static_cast<std::size_t>(2 * v)];
    const std::uint8_t* p1 = row + ax.window_base[static_cast<std::size_t>(2 * v + 1)];
    const __m512i a0 = _mm512_loadu_si512(p0), b0 = _mm512_loadu_si512(p0 + 64);
    const __m512i a1 = ax.windows == 2 ? _mm512_loadu_si512(p1) : a0;
    const __m512i b1 = ax.windows == 2 ? _mm512_loadu_si512(p1 + 64) : b0;
    hn::Vec<DI> acc0[C], acc1[C];
    for (int c = 0; c < C; ++c)
      acc0[c] = acc1[c] = hn::Zero(di);
    for (int p = 0; p < ax.passes; ++p) {
      const auto w = hn::LoadU(dw, ax.pair_weight.data() + (p * ax.block_count + 4 * v) * 8);
      for (int c = 0; c < C; ++c) {
        const __m512i idx =
            _mm512_loadu_si512(ax.permute[channel[c]].data() + (p * vectors + v) * 64);
        const __m512i pairs =
            ax.windows == 1 ? _mm512_maskz_permutex2var_epi8(kEven, a0, idx, b0)
                            : _mm512_or_si512(_mm512_maskz_permutex2var_epi8(kLow, a0, idx, b0),
                                              _mm512_maskz_permutex2var_epi8(kHigh, a1, idx, b1));
        acc0[c] = hn::ReorderWidenMulAccumulate(di, hn::Vec<DW>{pairs}, w, acc0[c], acc1[c]);
      }
    }
    for (int c = 0; c < C; ++c) {
      hn::StoreU(hn::ConvertTo(df, hn::RearrangeToOddPlusEven(acc0[c], acc1[c])), df,
                 out[c] + 16 * v);
    }
  }
}
#endif  // HWY_TARGET == HWY_AVX3_DL

// Outputs [0, ax.count) of one row (padded to whole vectors) for C channels
// of it: out[c] from shuffle[channel[c]].
template <int C>
void HorizontalBlocks(const ResampleAxis& ax, const std::uint8_t* row, const int (&channel)[C],
                      float* const (&out)[C]) {
  const DF df;
  const DI di;
  const DB db;
  const DW dw;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const std::int64_t per_vector = lanes / 4;  // blocks
#if HWY_TARGET == HWY_AVX3_DL
  // Measured: 16-byte blocks beat the permutes where they apply; the
  // permutes beat a gather by far.
  if (ax.windows > 0 && (!ax.blocks || ax.gather)) {
    HorizontalPermutes<C>(ax, row, channel, out);
    return;
  }
#endif
  // The loop with the loader and the pass count fixed (1: bilinear, nearest).
  auto run = [&](auto gather, auto one_pass) {
    const std::uint8_t* shuffle[C];
    for (int c = 0; c < C; ++c)
      shuffle[c] = ax.shuffle[channel[c]].data();
    const int passes = one_pass ? 1 : ax.passes;
    for (std::int64_t o = 0, b = 0; o < ax.count; o += lanes, b += per_vector) {
      hn::Vec<DB> bytes;
      if constexpr (gather) {
        bytes = hn::BitCast(db, hn::GatherOffset(di, reinterpret_cast<const std::int32_t*>(row),
                                                 hn::LoadU(di, ax.lane_base.data() + o)));
      } else {
        bytes = LoadBlocks(db, row, ax.block_base.data() + b);
      }
      hn::Vec<DI> acc0[C], acc1[C];
      for (int c = 0; c < C; ++c)
        acc0[c] = acc1[c] = hn::Zero(di);
      for (int p = 0; p < passes; ++p) {
        const auto at = static_cast<std::size_t>(p * ax.block_count + b);
        const auto w = hn::LoadU(dw, ax.pair_weight.data() + at * 8);
        for (int c = 0; c < C; ++c) {
          const auto idx = hn::LoadU(db, shuffle[c] + at * 16);
          const auto pairs = hn::BitCast(dw, hn::TableLookupBytesOr0(bytes, idx));
          acc0[c] = hn::ReorderWidenMulAccumulate(di, pairs, w, acc0[c], acc1[c]);
        }
      }
      for (int c = 0; c < C; ++c) {
        hn::StoreU(hn::ConvertTo(df, hn::RearrangeToOddPlusEven(acc0[c], acc1[c])), df, out[c] + o);
      }
    }
  };
  using Yes = std::true_type;
  using No = std::false_type;
  if (ax.gather) {
    run(Yes(), Yes());  // a gather serves one pass only
  } else if (ax.passes == 1) {
    run(No(), Yes());
  } else {
    run(No(), No());
  }
}
#endif  // HWY_TARGET == HWY_SCALAR

// Content row r of a plane from the cached rows its vertical taps read
// (fill(src, row) resamples source row src into a slot): the rows and their
// weights, times `scale`. FinishRow sums them as it converts.
template <class Fill>
void BlocksRow(const ResampleAxis& ay, std::int64_t r, RowCache& cache, float scale, RowTaps& out,
               Fill&& fill) {
  out.n = 0;
  for (int t = 0; t < ay.taps; ++t) {
    const float wt = ay.weight[static_cast<std::size_t>(t * ay.stride + r)];
    if (wt == 0.f) continue;
    const std::int64_t src = ay.first[static_cast<std::size_t>(r)] + t;
    bool fresh = false;
    float* h = cache.slot(src, fresh);
    if (fresh) fill(src, h);
    out.row[out.n] = h;
    out.w[out.n] = wt * scale;
    ++out.n;
  }
}

void LumaRowBlocks(const PreprocessJob& job, Scratch& s, std::int64_t r, float scale) {
  const ResampleAxis& ax = *job.luma_x;
  BlocksRow(*job.luma_y, r, s.luma_rows, scale, s.luma_taps, [&](std::int64_t src, float* h) {
    HorizontalBlocks<1>(ax, job.y + src * job.y_stride, {0}, {h});
  });
}

void ChromaRowBlocks(const PreprocessJob& job, Scratch& s, std::int64_t r, float scale) {
  const ResampleAxis& ax = *job.chroma_x;
  const std::int64_t width = ax.stride;
  BlocksRow(*job.chroma_y, r, s.chroma_rows, scale, s.u_taps, [&](std::int64_t src, float* h) {
    if (job.interleaved_uv) {
      const int u = job.u < job.v ? 0 : 1;  // U is the low byte of each pair (NV12)
      HorizontalBlocks<2>(ax, std::min(job.u, job.v) + src * job.u_stride, {u, 1 - u},
                          {h, h + width});
    } else {
      HorizontalBlocks<1>(ax, job.u + src * job.u_stride, {0}, {h});
      HorizontalBlocks<1>(ax, job.v + src * job.v_stride, {0}, {h + width});
    }
  });
  s.v_taps = s.u_taps;  // V follows U in each slot
  for (int t = 0; t < s.v_taps.n; ++t)
    s.v_taps.row[t] += width;
  s.chroma_row = r;
}

bool UseBlocks(const PreprocessJob& job) {
#if HWY_TARGET == HWY_AVX3_DL
  const bool x = (job.luma_x->blocks || job.luma_x->windows > 0) &&
                 (job.chroma_x->blocks || job.chroma_x->windows > 0);
#else
  const bool x = job.luma_x->blocks && job.chroma_x->blocks;
#endif
  return x && job.luma_y->taps < 64 && job.chroma_y->taps < 64;
}

// ---- output -----------------------------------------------------------------

// Stores `count` (<= lanes) values at element `at` of an output plane;
// whole aligned vectors bypass the caches when job.stream says so.
HWY_INLINE void StoreOut(const PreprocessJob& job, VF v, std::byte* plane, std::int64_t at,
                         std::int64_t count) {
  const DF df;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  if (job.out_dtype == DType::F32) {
    float* p = reinterpret_cast<float*>(plane) + at;
    if (count == lanes) {
      if (job.stream && (reinterpret_cast<std::uintptr_t>(p) & (sizeof(float) * lanes - 1)) == 0) {
        hn::Stream(v, df, p);
      } else {
        hn::StoreU(v, df, p);
      }
    } else {
      HWY_ALIGN float tmp[hn::MaxLanes(df)];
      hn::Store(v, df, tmp);
      std::memcpy(p, tmp, static_cast<std::size_t>(count) * sizeof(float));
    }
    return;
  }
  const D16 d16;
  hn::Vec<D16> bits;
  if (job.out_dtype == DType::F16) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    bits = hn::BitCast(d16, hn::DemoteTo(dh, v));
  } else {  // BF16, rounded to nearest even (values are finite)
    const DU du;
    const auto u = hn::BitCast(du, v);
    const auto odd = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1));
    const auto rounded = hn::ShiftRight<16>(hn::Add(hn::Add(u, hn::Set(du, 0x7FFF)), odd));
    bits = hn::DemoteTo(d16, hn::BitCast(DI(), rounded));
  }
  auto* p = reinterpret_cast<std::uint16_t*>(plane) + at;
  // Streaming stores write whole registers: only where the 16-bit vector is
  // one (not the half-register vectors of 128-bit targets), aligned to it.
  constexpr std::size_t kBytes16 = sizeof(std::uint16_t) * hn::MaxLanes(D16());
  if (count == lanes && job.stream && kBytes16 >= 16 &&
      (reinterpret_cast<std::uintptr_t>(p) & (kBytes16 - 1)) == 0) {
    hn::Stream(bits, d16, p);
  } else if (count == lanes) {
    hn::StoreU(bits, d16, p);
  } else {
    HWY_ALIGN std::uint16_t tmp[hn::MaxLanes(d16)];
    hn::Store(bits, d16, tmp);
    std::memcpy(p, tmp, static_cast<std::size_t>(count) * sizeof(std::uint16_t));
  }
}

// A RowTaps with the tap count known at compile time (0: any), its first
// two rows and weights held in registers across a row.
template <int N>
struct FixedTaps {
  explicit FixedTaps(const RowTaps& t) : all(t), r0(t.row[0]), r1(t.row[N == 2 ? 1 : 0]) {
    const DF df;
    w0 = hn::Set(df, t.w[0]);
    w1 = hn::Set(df, t.w[N == 2 ? 1 : 0]);
  }
  HWY_INLINE VF At(std::int64_t x) const {
    const DF df;
    if constexpr (N == 1) {
      return hn::Mul(hn::LoadU(df, r0 + x), w0);
    } else if constexpr (N == 2) {
      return hn::MulAdd(hn::LoadU(df, r1 + x), w1, hn::Mul(hn::LoadU(df, r0 + x), w0));
    } else {
      return TapsAt(all, x);
    }
  }
  const RowTaps& all;
  const float* r0;
  const float* r1;
  VF w0, w1;
};

// How FinishRow stores whole vectors: F32 plain or streamed (the row's
// planes aligned to the vector), or anything through StoreOut.
enum class Store : std::uint8_t { F32, F32Stream, Any };

// YUV -> RGB of one vector: in float (luma in levels times ys, chroma in
// levels), or for nearest (whole levels) with convert_color's integer formula,
// so that nearest's values equal the unfused chain's.
template <bool kNearest>
struct ToRgb {
  explicit ToRgb(const PreprocessJob& job) {
    const DF df;
    const DI di;
    zero = hn::Zero(df);
    top = hn::Set(df, 255.f);
    y0 = hn::Set(df, job.y_offset * job.ys);
    c128 = hn::Set(df, 128.f);
    rv = hn::Set(df, job.rv);
    gu = hn::Set(df, job.gu);
    gv = hn::Set(df, job.gv);
    bu = hn::Set(df, job.bu);
    izero = hn::Zero(di);
    itop = hn::Set(di, 255);
    i128 = hn::Set(di, 128);
    iy0 = hn::Set(di, job.yi_offset);
    iys = hn::Set(di, job.yi);
    half = hn::Set(di, 1 << (kYuvShift - 1));
    irv = hn::Set(di, job.rvi);
    igu = hn::Set(di, job.gui);
    igv = hn::Set(di, job.gvi);
    ibu = hn::Set(di, job.bui);
  }
  HWY_INLINE void operator()(VF y, VF cu, VF cv, VF& r, VF& g, VF& b) const {
    if constexpr (kNearest) {
      const DF df;
      const DI di;
      auto level = [&](hn::Vec<DI> x) {
        return hn::ConvertTo(df, hn::Min(hn::Max(hn::ShiftRight<kYuvShift>(x), izero), itop));
      };
      const auto u = hn::Sub(hn::ConvertTo(di, cu), i128);
      const auto v = hn::Sub(hn::ConvertTo(di, cv), i128);
      const auto yy =
          hn::Add(hn::Mul(hn::Max(hn::Sub(hn::ConvertTo(di, y), iy0), izero), iys), half);
      r = level(hn::Add(yy, hn::Mul(irv, v)));
      g = level(hn::Add(yy, hn::Add(hn::Mul(igv, v), hn::Mul(igu, u))));
      b = level(hn::Add(yy, hn::Mul(ibu, u)));
    } else {
      const VF yy = hn::Max(hn::Sub(y, y0), zero);
      const VF u = hn::Sub(cu, c128), v = hn::Sub(cv, c128);
      r = hn::Min(hn::Max(hn::MulAdd(rv, v, yy), zero), top);
      g = hn::Min(hn::Max(hn::MulAdd(gu, u, hn::MulAdd(gv, v, yy)), zero), top);
      b = hn::Min(hn::Max(hn::MulAdd(bu, u, yy), zero), top);
    }
  }
  VF zero, top, y0, c128, rv, gu, gv, bu;
  hn::Vec<DI> izero, itop, i128, iy0, iys, half, irv, igu, igv, ibu;
};

template <int LN, int CN, Store kStore, bool kNearest>
void FinishRowT(const PreprocessJob& job, const RowTaps& luma, const RowTaps& cu, const RowTaps& cv,
                std::int64_t out_r) {
  const DF df;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const ToRgb<kNearest> to_rgb(job);
  const int ri = job.r_plane, bi = job.b_plane;
  const VF ra = hn::Set(df, job.a[ri]), rb = hn::Set(df, job.b[ri]);
  const VF ga = hn::Set(df, job.a[1]), gb = hn::Set(df, job.b[1]);
  const VF ba = hn::Set(df, job.a[bi]), bb = hn::Set(df, job.b[bi]);
  const FixedTaps<LN> yt(luma);
  const FixedTaps<CN> ut(cu), vt(cv);
  const std::int64_t start = out_r * job.out_w + job.box_x, box_w = job.box_w;
  float* const pr = reinterpret_cast<float*>(job.planes[ri]) + start;
  float* const pg = reinterpret_cast<float*>(job.planes[1]) + start;
  float* const pb = reinterpret_cast<float*>(job.planes[bi]) + start;
  for (std::int64_t x = 0; x < box_w; x += lanes) {
    const std::int64_t count = std::min(lanes, box_w - x);
    VF r8, g8, b8;
    to_rgb(yt.At(x), ut.At(x), vt.At(x), r8, g8, b8);
    const VF r = hn::MulAdd(r8, ra, rb), g = hn::MulAdd(g8, ga, gb), b = hn::MulAdd(b8, ba, bb);
    if (kStore != Store::Any && count == lanes) {
      if constexpr (kStore == Store::F32Stream) {
        hn::Stream(r, df, pr + x);
        hn::Stream(g, df, pg + x);
        hn::Stream(b, df, pb + x);
      } else {
        hn::StoreU(r, df, pr + x);
        hn::StoreU(g, df, pg + x);
        hn::StoreU(b, df, pb + x);
      }
      continue;
    }
    StoreOut(job, r, job.planes[ri], start + x, count);
    StoreOut(job, g, job.planes[1], start + x, count);
    StoreOut(job, b, job.planes[bi], start + x, count);
  }
}

template <int LN, int CN, bool kNearest = false>
void FinishRowS(const PreprocessJob& job, const RowTaps& luma, const RowTaps& cu, const RowTaps& cv,
                std::int64_t out_r) {
  if (job.out_dtype != DType::F32) {
    return FinishRowT<LN, CN, Store::Any, kNearest>(job, luma, cu, cv, out_r);
  }
  const std::int64_t start = out_r * job.out_w + job.box_x;
  bool aligned = true;
  for (int c = 0; c < 3; ++c) {
    const auto at =
        reinterpret_cast<std::uintptr_t>(reinterpret_cast<float*>(job.planes[c]) + start);
    aligned = aligned && (at & (sizeof(float) * hn::Lanes(DF()) - 1)) == 0;
  }
  if (job.stream && aligned) {
    return FinishRowT<LN, CN, Store::F32Stream, kNearest>(job, luma, cu, cv, out_r);
  }
  FinishRowT<LN, CN, Store::F32, kNearest>(job, luma, cu, cv, out_r);
}

// Output row out_r from the resampled rows: luma in levels times job.ys,
// chroma in levels.
void FinishRow(const PreprocessJob& job, const RowTaps& luma, const RowTaps& cu, const RowTaps& cv,
               std::int64_t out_r) {
  if (job.nearest) return FinishRowS<1, 1, true>(job, luma, cu, cv, out_r);  // one tap of 1
  const int ln = luma.n <= 2 ? luma.n : 0, cn = cu.n <= 2 ? cu.n : 0;
  switch (ln * 3 + cn) {
    case 4:
      return FinishRowS<1, 1>(job, luma, cu, cv, out_r);
    case 5:
      return FinishRowS<1, 2>(job, luma, cu, cv, out_r);
    case 7:
      return FinishRowS<2, 1>(job, luma, cu, cv, out_r);
    case 8:
      return FinishRowS<2, 2>(job, luma, cu, cv, out_r);
    default:
      return FinishRowS<0, 0>(job, luma, cu, cv, out_r);
  }
}

void FillPad(const PreprocessJob& job, std::int64_t at, std::int64_t count) {
  if (count <= 0) return;
  for (int c = 0; c < 3; ++c) {
    if (job.out_dtype == DType::F32) {
      std::fill_n(reinterpret_cast<float*>(job.planes[c]) + at, count, job.pad[c]);
      continue;
    }
    // The pad value in the 16-bit dtype, converted by the same store as pixels.
    HWY_ALIGN std::uint16_t one[hn::MaxLanes(D16())];
    StoreOut(job, hn::Set(DF(), job.pad[c]), reinterpret_cast<std::byte*>(one), 0, 1);
    std::fill_n(reinterpret_cast<std::uint16_t*>(job.planes[c]) + at, count, one[0]);
  }
}

void PreprocessRows(const PreprocessJob& job, std::int64_t row_begin, std::int64_t row_end) {
  thread_local Scratch s;
  // Gathers may read taps - 1 samples past a row (with weight 0), windows
  // up to 4 vectors past the last block's first sample.
  const std::int64_t slack = 4 * static_cast<std::int64_t>(hn::Lanes(DF()));
  grow(s.vrow, job.luma_x->source + job.luma_x->taps + slack);
  grow(s.urow, job.chroma_x->source + job.chroma_x->taps + slack);
  grow(s.wrow, job.chroma_x->source + job.chroma_x->taps + slack);
  for (auto* v : {&s.luma, &s.cu, &s.cv})
    grow(*v, job.luma_x->stride);
  s.chroma_row = -1;
  const bool blocks = UseBlocks(job);
  if (blocks) {
    s.luma_rows.reset(job.luma_y->taps + 1, job.luma_x->stride);
    s.chroma_rows.reset(job.chroma_y->taps + 1, 2 * job.chroma_x->stride);
  }
  // The blocks path's rows hold levels x 32767 (nearest: levels); FinishRow
  // takes luma times ys.
  const float unit = job.nearest ? 1.f : 1.f / 32767.f;
  const float luma_scale = job.nearest ? 1.f : unit * job.ys;
  // The other path's rows, as taps of weight 1.
  RowTaps plain_luma, plain_u, plain_v;
  plain_luma.n = plain_u.n = plain_v.n = 1;
  plain_luma.row[0] = s.luma.data();
  plain_luma.w[0] = job.ys;
  plain_u.row[0] = s.cu.data();
  plain_v.row[0] = s.cv.data();
  plain_u.w[0] = plain_v.w[0] = 1.f;
  const std::uint8_t* reuse = job.chroma_y->same_as_previous.data();
  for (std::int64_t out_r = row_begin; out_r < row_end; ++out_r) {
    const std::int64_t row_start = out_r * job.out_w;
    if (out_r < job.box_y || out_r >= job.box_y + job.box_h) {
      FillPad(job, row_start, job.out_w);
      continue;
    }
    FillPad(job, row_start, job.box_x);
    FillPad(job, row_start + job.box_x + job.box_w, job.out_w - job.box_x - job.box_w);
    const std::int64_t r = out_r - job.box_y;
    const bool same_chroma = s.chroma_row == r - 1 && reuse[r];
    if (same_chroma) s.chroma_row = r;  // the same chroma rows and weights as the row before
    if (blocks) {
      LumaRowBlocks(job, s, r, luma_scale);
      if (!same_chroma) ChromaRowBlocks(job, s, r, unit);
      FinishRow(job, s.luma_taps, s.u_taps, s.v_taps, out_r);
      continue;
    }
    LumaRow(job, s, r);
    if (!same_chroma) ChromaRow(job, s, r);
    FinishRow(job, plain_luma, plain_u, plain_v, out_r);
  }
  if (job.stream) hwy::FlushStream();  // streamed stores are visible before the stripe ends
}

const char* TargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace HWY_NAMESPACE
}  // namespace neat::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neat::detail {

HWY_EXPORT(PreprocessRows);
HWY_EXPORT(TargetName);

void preprocess_rows(const PreprocessJob& job, std::int64_t row_begin, std::int64_t row_end) {
  HWY_DYNAMIC_DISPATCH(PreprocessRows)(job, row_begin, row_end);
}

const char* preprocess_simd_target() {
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

}  // namespace neat::detail
#endif  // HWY_ONCE

// The preprocess engine (see kernels/internal/preprocess_kernel.hpp), written
// once with Highway and compiled for every x86 / Arm / ... target Highway
// knows; HWY_DYNAMIC_DISPATCH picks the best the CPU supports at run time.
//
// Two paths resample the planes; both end in the same final pass, which sums
// the vertical taps, converts YUV to RGB (in float; nearest with
// convert_color's integer formula), clamps, normalizes and stores the three
// planes in the output dtype.
//
//  * The blocks path (preprocess_blocks-inl.h), taken whenever the target can:
//    horizontal taps first, from the 8-bit rows by byte shuffles (16-byte
//    blocks; a 4-byte gather per output; or AVX-512 VBMI permutes out of
//    128-byte windows) and 16-bit multiply-adds, into float rows cached per
//    source row; output rows read the cached rows their vertical taps name.
//  * The vertical-first path (preprocess_general-inl.h): the vertical taps
//    over the whole row in float, then the horizontal taps. It serves large
//    area ratios on targets without VBMI, and more than 63 vertical taps.

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
  std::vector<std::uint16_t> sums;      // area: a row of 16-bit sums of source rows
  std::vector<float> luma_sums;         // ... resampled: low bytes, then high bytes
  std::vector<float> chroma_sums;       // U low, V low, U high, V high
  RowTaps luma_taps, u_taps, v_taps;    // the rows FinishRow sums
};

inline void grow(std::vector<float>& v, std::int64_t n) {
  const auto want =
      static_cast<std::size_t>(n + 4 * static_cast<std::int64_t>(hn::Lanes(DF())) + 8);
  if (v.size() < want) v.assign(want, 0.f);  // zeros: lanes past the end stay finite
}

// In this order: the box path's row sums serve the blocks path.
#include "kernels/internal/preprocess_box-inl.h"
// The blocks path, then the vertical-first path.
#include "kernels/internal/preprocess_blocks-inl.h"
#include "kernels/internal/preprocess_general-inl.h"

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

// What the final pass reads: the blocks path's rows, offsets folded in (luma
// (level - y_offset) x ys, chroma level - 128); the vertical-first path's
// (luma level x ys, chroma levels); nearest's (whole levels as 32-bit
// integers, converted with convert_color's integer formula so that the values
// equal the unfused chain's).
enum class Conv : std::uint8_t { Folded, Levels, Nearest };

// YUV -> RGB of one vector, clamped to [0, 255].
template <Conv kConv>
struct ToRgb {
  explicit ToRgb(const PreprocessJob& job) {
    const YuvToRgb& k = *job.yuv;
    const DF df;
    const DI di;
    y0 = hn::Set(df, static_cast<float>(k.y_offset) * k.fy);
    c128 = hn::Set(df, 128.f);
    rv = hn::Set(df, k.frv);
    gu = hn::Set(df, k.fgu);
    gv = hn::Set(df, k.fgv);
    bu = hn::Set(df, k.fbu);
    izero = hn::Zero(di);
    itop = hn::Set(di, 255);
    i128 = hn::Set(di, 128);
    iy0 = hn::Set(di, k.y_offset);
    iys = hn::Set(di, k.y);
    half = hn::Set(di, 1 << (kYuvShift - 1));
    irv = hn::Set(di, k.r_v);
    igu = hn::Set(di, k.g_u);
    igv = hn::Set(di, k.g_v);
    ibu = hn::Set(di, k.b_u);
    itop_bits = hn::BitCast(di, hn::Set(df, 255.f));
  }
  HWY_INLINE void operator()(VF y, VF cu, VF cv, VF& r, VF& g, VF& b) const {
    if constexpr (kConv == Conv::Nearest) {
      const DF df;
      const DI di;
      auto level = [&](hn::Vec<DI> x) {
        return hn::ConvertTo(df, hn::Min(hn::Max(hn::ShiftRight<kYuvShift>(x), izero), itop));
      };
      const auto u = hn::Sub(hn::BitCast(di, cu), i128);
      const auto v = hn::Sub(hn::BitCast(di, cv), i128);
      const auto yy = hn::Add(hn::Mul(hn::Max(hn::Sub(hn::BitCast(di, y), iy0), izero), iys), half);
      r = level(hn::Add(yy, hn::Mul(irv, v)));
      g = level(hn::Add(yy, hn::Add(hn::Mul(igv, v), hn::Mul(igu, u))));
      b = level(hn::Add(yy, hn::Mul(ibu, u)));
    } else if constexpr (kConv == Conv::Folded) {
      const VF yy = Positive(y);
      r = Clamp(hn::MulAdd(rv, cv, yy));
      g = Clamp(hn::MulAdd(gu, cu, hn::MulAdd(gv, cv, yy)));
      b = Clamp(hn::MulAdd(bu, cu, yy));
    } else {
      const VF yy = Positive(hn::Sub(y, y0));
      const VF u = hn::Sub(cu, c128), v = hn::Sub(cv, c128);
      r = Clamp(hn::MulAdd(rv, v, yy));
      g = Clamp(hn::MulAdd(gu, u, hn::MulAdd(gv, v, yy)));
      b = Clamp(hn::MulAdd(bu, u, yy));
    }
  }
  // max(x, 0) and min(max(x, 0), 255) on the floats' bits as 32-bit
  // integers: non-negative floats order as their bits do, and a negative
  // one's bits are a negative integer. The same values as the float min and
  // max, on the integer units (Zen 4 has four for vectors, two for floats,
  // which the final pass's multiply-adds keep busy): 1080p -> 640 alone
  // 0.171-0.178 -> 0.160-0.169 ms, 720p -> 320 letterboxed 7%; in the table,
  // within its noise.
  HWY_INLINE VF Positive(VF x) const {
    const DF df;
    const DI di;
    return hn::BitCast(df, hn::Max(hn::BitCast(di, x), izero));
  }
  HWY_INLINE VF Clamp(VF x) const {
    const DF df;
    const DI di;
    return hn::BitCast(df, hn::Min(hn::Max(hn::BitCast(di, x), izero), itop_bits));
  }
  VF y0, c128, rv, gu, gv, bu;
  hn::Vec<DI> izero, itop, i128, iy0, iys, half, irv, igu, igv, ibu, itop_bits;
};

template <int LN, int CN, Store kStore, Conv kConv>
void FinishRowT(const PreprocessJob& job, const RowTaps& luma, const RowTaps& cu, const RowTaps& cv,
                std::int64_t out_r) {
  const DF df;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const ToRgb<kConv> to_rgb(job);
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
    if constexpr (kConv == Conv::Nearest) {  // one tap of weight 1: the row as it is
      to_rgb(hn::LoadU(df, yt.r0 + x), hn::LoadU(df, ut.r0 + x), hn::LoadU(df, vt.r0 + x), r8, g8,
             b8);
    } else {
      to_rgb(yt.At(x), ut.At(x), vt.At(x), r8, g8, b8);
    }
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

template <int LN, int CN, Conv kConv>
void FinishRowS(const PreprocessJob& job, const RowTaps& luma, const RowTaps& cu, const RowTaps& cv,
                std::int64_t out_r) {
  if (job.out_dtype != DType::F32) {
    return FinishRowT<LN, CN, Store::Any, kConv>(job, luma, cu, cv, out_r);
  }
  const std::int64_t start = out_r * job.out_w + job.box_x;
  bool aligned = true;
  for (int c = 0; c < 3; ++c) {
    const auto at =
        reinterpret_cast<std::uintptr_t>(reinterpret_cast<float*>(job.planes[c]) + start);
    aligned = aligned && (at & (sizeof(float) * hn::Lanes(DF()) - 1)) == 0;
  }
  if (job.stream && aligned) {
    return FinishRowT<LN, CN, Store::F32Stream, kConv>(job, luma, cu, cv, out_r);
  }
  FinishRowT<LN, CN, Store::F32, kConv>(job, luma, cu, cv, out_r);
}

// Output row out_r from the blocks path's rows.
void FinishRow(const PreprocessJob& job, const RowTaps& luma, const RowTaps& cu, const RowTaps& cv,
               std::int64_t out_r) {
  if (job.nearest) return FinishRowS<1, 1, Conv::Nearest>(job, luma, cu, cv, out_r);
  const int ln = luma.n <= 2 ? luma.n : 0, cn = cu.n <= 2 ? cu.n : 0;
  switch (ln * 3 + cn) {
    case 4:
      return FinishRowS<1, 1, Conv::Folded>(job, luma, cu, cv, out_r);
    case 5:
      return FinishRowS<1, 2, Conv::Folded>(job, luma, cu, cv, out_r);
    case 7:
      return FinishRowS<2, 1, Conv::Folded>(job, luma, cu, cv, out_r);
    case 8:
      return FinishRowS<2, 2, Conv::Folded>(job, luma, cu, cv, out_r);
    default:
      return FinishRowS<0, 0, Conv::Folded>(job, luma, cu, cv, out_r);
  }
}

// ---- nearest, picked and converted in one pass ---------------------------------
// Nearest where every plane's picks need no tables (samples k apart, or a
// periodic pattern one VBMI permute takes): each vector of outputs takes its
// samples from the source rows into registers and converts them there, with
// no resampled row in between and no row cache (a nearest row is read once
// going down). 720p -> 320 letterboxed: 0.027 -> 0.018 ms alone.

#if HWY_TARGET != HWY_SCALAR
// Picks k apart, G bytes per output (XPickRowG's loads): C channels, channel
// c byte channel[c] of each element.
template <int G, int C>
struct KApartPicks {
  const std::uint8_t* row;
  std::int64_t avail;  // bytes from row on
  int channel[C];
  // Whether outputs [o, o + lanes) load within the row.
  bool Whole(std::int64_t o, std::int64_t lanes) const { return (o + lanes) * G <= avail; }
  HWY_INLINE void At(std::int64_t o, hn::Vec<DI> (&out)[C]) const {
    const auto v = PickLoad<G>(row + o * G);
    for (int c = 0; c < C; ++c)
      out[c] = hn::BitCast(DI(), PickChannel<G>(v, 8 * channel[c]));
  }
  // Outputs [o, o + n) (n at most a vector) as whole levels into out[c].
  void Rest(std::int64_t o, std::int64_t n, float* const (&out)[C]) const {
    XPickRowG<C, G, true>(row + o * G, avail - o * G, n, channel, out, 0);
  }
};

#if HWY_TARGET == HWY_AVX3_DL
// Picks in a periodic pattern of at most 64 bytes per vector (PermutePicks):
// masked loads, so every vector is whole.
template <int C>
struct PatternPicksOf {
  const std::uint8_t* row;
  std::int64_t avail, span;
  __m512i idx[C];
  PatternPicksOf(const std::uint8_t* r, std::int64_t a, std::int64_t s, __m512i base,
                 const int (&channel)[C])
      : row(r), avail(a), span(s) {
    for (int c = 0; c < C; ++c)
      idx[c] = _mm512_add_epi32(base, _mm512_set1_epi32(channel[c]));
  }
  bool Whole(std::int64_t, std::int64_t) const { return true; }
  HWY_INLINE void At(std::int64_t o, hn::Vec<DI> (&out)[C]) const {
    const std::int64_t v = o / 16;
    const std::int64_t left = std::min(avail - v * span, span);
    const auto mask =
        left <= 0 ? __mmask64{0} : static_cast<__mmask64>(left >= 64 ? ~0ull : (1ull << left) - 1);
    const __m512i bytes = _mm512_maskz_loadu_epi8(mask, row + v * span);
    for (int c = 0; c < C; ++c)
      out[c] = hn::Vec<DI>{_mm512_maskz_permutexvar_epi8(0x1111111111111111ull, idx[c], bytes)};
  }
  // Outputs [o, o + n) into out[c] (a vector each): the other plane's tail.
  void Rest(std::int64_t o, std::int64_t, float* const (&out)[C]) const {
    hn::Vec<DI> v[C];
    At(o, v);
    for (int c = 0; c < C; ++c)
      hn::Store(hn::BitCast(DF(), v[c]), DF(), out[c]);
  }
};
#endif

// Picks by the blocks path's byte-shuffle tables: each 16-byte block of a
// vector from its own base (HorizontalBlocks' loads, which stay in the row).
template <int C>
struct BlockPicks {
  const std::uint8_t* row;
  const std::int32_t* base;        // ResampleAxis::block_base
  const std::uint8_t* shuffle[C];  // ResampleAxis::shuffle of each channel
  bool Whole(std::int64_t, std::int64_t) const { return true; }
  HWY_INLINE void At(std::int64_t o, hn::Vec<DI> (&out)[C]) const {
    const DB db;
    const std::int64_t b = o / 4;
    const auto bytes = LoadBlocks(db, row, base + b);
    for (int c = 0; c < C; ++c)
      out[c] =
          hn::BitCast(DI(), hn::TableLookupBytesOr0(bytes, hn::LoadU(db, shuffle[c] + b * 16)));
  }
  void Rest(std::int64_t o, std::int64_t, float* const (&out)[C]) const {
    hn::Vec<DI> v[C];
    At(o, v);
    for (int c = 0; c < C; ++c)
      hn::Store(hn::BitCast(DF(), v[c]), DF(), out[c]);
  }
};

#if HWY_TARGET == HWY_AVX3_DL
// Picks by the VBMI permute tables: each vector from 1, 2 or 4 windows of 128
// bytes (HorizontalPermutesW's loads), one vpermt2b per window and channel.
template <int C>
struct WindowPicks {
  const std::uint8_t* row;
  const std::int32_t* window_base;  // 4 per vector
  const std::uint8_t* table[C];     // ResampleAxis::permute of each channel
  int windows;
  __mmask64 part[4];  // window w's outputs: byte 0 of their 32-bit lanes
  bool Whole(std::int64_t, std::int64_t) const { return true; }
  HWY_INLINE void At(std::int64_t o, hn::Vec<DI> (&out)[C]) const {
    const std::int64_t v = o / 16;
    __m512i idx[C], acc[C];
    for (int c = 0; c < C; ++c) {
      idx[c] = _mm512_loadu_si512(table[c] + v * 64);
      acc[c] = _mm512_setzero_si512();
    }
    for (int w = 0; w < windows; ++w) {
      const std::uint8_t* p = row + window_base[4 * v + w];
      const __m512i lo = _mm512_loadu_si512(p), hi = _mm512_loadu_si512(p + 64);
      for (int c = 0; c < C; ++c)
        acc[c] = _mm512_or_si512(acc[c], _mm512_maskz_permutex2var_epi8(part[w], lo, idx[c], hi));
    }
    for (int c = 0; c < C; ++c)
      out[c] = hn::Vec<DI>{acc[c]};
  }
  void Rest(std::int64_t o, std::int64_t, float* const (&out)[C]) const {
    hn::Vec<DI> v[C];
    At(o, v);
    for (int c = 0; c < C; ++c)
      hn::Store(hn::BitCast(DF(), v[c]), DF(), out[c]);
  }
};
#endif

// Chroma from one plane of UV pairs (two channels of one picker) or from two
// planes (a picker each).
template <class P>
struct PairChroma {
  P uv;
  bool Whole(std::int64_t o, std::int64_t lanes) const { return uv.Whole(o, lanes); }
  HWY_INLINE void At(std::int64_t o, hn::Vec<DI>& u, hn::Vec<DI>& v) const {
    hn::Vec<DI> t[2];
    uv.At(o, t);
    u = t[0];
    v = t[1];
  }
  void Rest(std::int64_t o, std::int64_t n, float* u, float* v) const { uv.Rest(o, n, {u, v}); }
};
template <class P>
struct PlanarChroma {
  P u, v;
  bool Whole(std::int64_t o, std::int64_t lanes) const {
    return u.Whole(o, lanes) && v.Whole(o, lanes);
  }
  HWY_INLINE void At(std::int64_t o, hn::Vec<DI>& cu, hn::Vec<DI>& cv) const {
    hn::Vec<DI> a[1], b[1];
    u.At(o, a);
    v.At(o, b);
    cu = a[0];
    cv = b[0];
  }
  void Rest(std::int64_t o, std::int64_t n, float* cu, float* cv) const {
    u.Rest(o, n, {cu});
    v.Rest(o, n, {cv});
  }
};

// Whole levels -> the normalized output of one vector.
struct NearestOut {
  explicit NearestOut(const PreprocessJob& job) : to_rgb(job) {
    const DF df;
    const int ri = job.r_plane, bi = job.b_plane;
    ra = hn::Set(df, job.a[ri]);
    rb = hn::Set(df, job.b[ri]);
    ga = hn::Set(df, job.a[1]);
    gb = hn::Set(df, job.b[1]);
    ba = hn::Set(df, job.a[bi]);
    bb = hn::Set(df, job.b[bi]);
  }
  HWY_INLINE void operator()(hn::Vec<DI> y, hn::Vec<DI> u, hn::Vec<DI> v, VF& r, VF& g,
                             VF& b) const {
    const DF df;
    VF r8, g8, b8;
    to_rgb(hn::BitCast(df, y), hn::BitCast(df, u), hn::BitCast(df, v), r8, g8, b8);
    r = hn::MulAdd(r8, ra, rb);
    g = hn::MulAdd(g8, ga, gb);
    b = hn::MulAdd(b8, ba, bb);
  }
  ToRgb<Conv::Nearest> to_rgb;
  VF ra, rb, ga, gb, ba, bb;
};

// Outputs [x, box_w) of row out_r, whose loads would pass a row's end or
// that end mid-vector: picked into rows on the stack first, stored by count.
template <class L, class Ch>
HWY_NOINLINE void NearestRest(const PreprocessJob& job, const L& luma, const Ch& chroma,
                              std::int64_t out_r, std::int64_t x) {
  const DF df;
  const DI di;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const NearestOut convert(job);
  const std::int64_t start = out_r * job.out_w + job.box_x;
  for (; x < job.box_w; x += lanes) {
    const std::int64_t n = std::min(lanes, job.box_w - x);
    HWY_ALIGN float ys[hn::MaxLanes(df)], us[hn::MaxLanes(df)], vs[hn::MaxLanes(df)];
    luma.Rest(x, n, {ys});
    chroma.Rest(x, n, us, vs);
    VF r, g, b;
    convert(hn::BitCast(di, hn::Load(df, ys)), hn::BitCast(di, hn::Load(df, us)),
            hn::BitCast(di, hn::Load(df, vs)), r, g, b);
    StoreOut(job, r, job.planes[job.r_plane], start + x, n);
    StoreOut(job, g, job.planes[1], start + x, n);
    StoreOut(job, b, job.planes[job.b_plane], start + x, n);
  }
}

// The pickers by value: their fields stay in registers across the stores.
template <Store kStore, class L, class Ch>
void NearestRowT(const PreprocessJob& job, const L luma, const Ch chroma, std::int64_t out_r) {
  const DF df;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const NearestOut convert(job);
  const std::int64_t start = out_r * job.out_w + job.box_x, box_w = job.box_w;
  float* const pr = reinterpret_cast<float*>(job.planes[job.r_plane]) + start;
  float* const pg = reinterpret_cast<float*>(job.planes[1]) + start;
  float* const pb = reinterpret_cast<float*>(job.planes[job.b_plane]) + start;
  std::int64_t x = 0;
  for (; x + lanes <= box_w && luma.Whole(x, lanes) && chroma.Whole(x, lanes); x += lanes) {
    hn::Vec<DI> y[1], u, v;
    luma.At(x, y);
    chroma.At(x, u, v);
    VF r, g, b;
    convert(y[0], u, v, r, g, b);
    if constexpr (kStore == Store::F32Stream) {
      hn::Stream(r, df, pr + x);
      hn::Stream(g, df, pg + x);
      hn::Stream(b, df, pb + x);
    } else if constexpr (kStore == Store::F32) {
      hn::StoreU(r, df, pr + x);
      hn::StoreU(g, df, pg + x);
      hn::StoreU(b, df, pb + x);
    } else {
      StoreOut(job, r, job.planes[job.r_plane], start + x, lanes);
      StoreOut(job, g, job.planes[1], start + x, lanes);
      StoreOut(job, b, job.planes[job.b_plane], start + x, lanes);
    }
  }
  if (x < box_w) NearestRest(job, luma, chroma, out_r, x);
}

// How a plane's picks are taken (FusedNearest): G > 0 bytes per output k
// apart, or one of these.
constexpr int kPattern = 0, kBlocks = -2, kWindows = -3;

// A plane's picks at its row 0 (NearestRows moves them down): mode M.
template <int M, int C>
auto PlanePicks(const ResampleAxis& ax, const std::uint8_t* row, int step,
                const int (&channel)[C]) {
  if constexpr (M > 0) {
    const std::int64_t x0 = ax.first[0] * step;
    KApartPicks<M, C> p{row + x0, ax.source * step - x0, {}};
    for (int c = 0; c < C; ++c)
      p.channel[c] = channel[c];
    return p;
  } else if constexpr (M == kBlocks) {
    BlockPicks<C> p{row, ax.block_base.data(), {}};
    for (int c = 0; c < C; ++c)
      p.shuffle[c] = ax.shuffle[channel[c]].data();
    return p;
  } else {
#if HWY_TARGET == HWY_AVX3_DL
    if constexpr (M == kWindows) {
      WindowPicks<C> p{row, ax.window_base.data(), {}, ax.windows, {}};
      for (int c = 0; c < C; ++c)
        p.table[c] = ax.permute[channel[c]].data();
      const int bits = 64 / ax.windows;
      for (int w = 0; w < ax.windows; ++w) {
        const std::uint64_t span = bits == 64 ? ~0ull : ((1ull << bits) - 1) << (bits * w);
        p.part[w] = static_cast<__mmask64>(0x1111111111111111ull & span);
      }
      return p;
    } else {
      return PatternPicksOf<C>(row, ax.source * step, ax.pick_span,
                               _mm512_loadu_si512(ax.pick_base), channel);
    }
#endif
  }
}

// Content rows [begin, end) (output rows): luma's picks in mode LG, chroma's
// in mode CG (PlanePicks). The picks' columns are set once; each row moves them
// to its source rows.
template <int LG, int CG, bool kPlanar>
void NearestRows(const PreprocessJob& job, std::int64_t begin, std::int64_t end) {
  const auto luma0 = PlanePicks<LG, 1>(*job.luma_x, job.y, 1, {0});
  const int u = job.u < job.v ? 0 : 1;  // U is the low byte of each pair (NV12)
  auto chroma0 = [&] {
    if constexpr (kPlanar) {
      using P = decltype(PlanePicks<CG, 1>(*job.chroma_x, job.u, 1, {0}));
      return PlanarChroma<P>{PlanePicks<CG, 1>(*job.chroma_x, job.u, 1, {0}),
                             PlanePicks<CG, 1>(*job.chroma_x, job.v, 1, {0})};
    } else {
      using P = decltype(PlanePicks<CG, 2>(*job.chroma_x, job.u, 2, {0, 1}));
      return PairChroma<P>{PlanePicks<CG, 2>(*job.chroma_x, std::min(job.u, job.v), 2, {u, 1 - u})};
    }
  }();
  for (std::int64_t out_r = begin; out_r < end; ++out_r) {
    const auto r = static_cast<std::size_t>(out_r - job.box_y);
    auto luma = luma0;
    luma.row += job.luma_y->first[r] * job.y_stride;
    auto chroma = chroma0;
    const std::int64_t cr = job.chroma_y->first[r];
    if constexpr (kPlanar) {
      chroma.u.row += cr * job.u_stride;
      chroma.v.row += cr * job.v_stride;
    } else {
      chroma.uv.row += cr * job.u_stride;
    }
    if (job.out_dtype != DType::F32) {
      NearestRowT<Store::Any>(job, luma, chroma, out_r);
      continue;
    }
    const std::int64_t start = out_r * job.out_w + job.box_x;
    bool aligned = true;
    for (int c = 0; c < 3; ++c) {
      const auto at =
          reinterpret_cast<std::uintptr_t>(reinterpret_cast<float*>(job.planes[c]) + start);
      aligned = aligned && (at & (sizeof(float) * hn::Lanes(DF()) - 1)) == 0;
    }
    // Streamed only where the bars are (frame and tensor larger than a third
    // of the last-level cache): this row's stores are most of its time, and
    // through the cache they cost less (1080p -> 640: 0.131 -> 0.119 ms).
    if (job.stream_bars && aligned) {
      NearestRowT<Store::F32Stream>(job, luma, chroma, out_r);
    } else {
      NearestRowT<Store::F32>(job, luma, chroma, out_r);
    }
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

using NearestRowsFn = void (*)(const PreprocessJob&, std::int64_t, std::int64_t);

// The fused nearest rows for the job, or nullptr where a plane's picks need
// tables (the blocks path then).
NearestRowsFn FusedNearest(const PreprocessJob& job) {
#if HWY_TARGET == HWY_SCALAR
  (void)job;
  return nullptr;
#else
  if (!job.nearest || job.box_k != 0) return nullptr;
  // A plane's picks as HorizontalBlocks would take them: G bytes per output
  // k apart, the axis's pattern or its tables (16-byte blocks; VBMI windows);
  // -1: none of these (gathers).
  auto mode = [](int k, int step, const ResampleAxis& ax) {
#if HWY_TARGET == HWY_AVX3_DL
    if (k != 0) return k * step == 3 && ax.pick_span != 0 ? kPattern : k * step;
    if (ax.pick_span != 0) return kPattern;
    if (ax.windows > 0 && (!ax.blocks || ax.gather)) return kWindows;
#else
    if (k != 0) return k * step;
#endif
    if (ax.picks && ax.blocks && !ax.gather && ax.passes == 1) return kBlocks;
    return -1;
  };
  const bool planar = !job.interleaved_uv;
  const int l = mode(job.luma_x_pick, 1, *job.luma_x);
  const int c = mode(job.chroma_x_pick, planar ? 1 : 2, *job.chroma_x);
  constexpr auto key = [](int luma, int chroma, bool plane) {
    return (plane ? 1000 : 0) + (luma + 4) * 32 + (chroma + 4);
  };
  // The pairs real ratios make: luma k apart with chroma k / 2 apart (UV
  // pairs: k bytes), patterns, tables.
  switch (key(l, c, planar)) {
    case key(2, 2, false):
      return NearestRows<2, 2, false>;
    case key(4, 4, false):
      return NearestRows<4, 4, false>;
    case key(6, 6, false):
      return NearestRows<6, 6, false>;
    case key(12, 12, false):
      return NearestRows<12, 12, false>;
    case key(2, 1, true):
      return NearestRows<2, 1, true>;
    case key(4, 2, true):
      return NearestRows<4, 2, true>;
    case key(6, 3, true):
      return NearestRows<6, 3, true>;
    case key(12, 6, true):
      return NearestRows<12, 6, true>;
    case key(kBlocks, kBlocks, false):
      return NearestRows<kBlocks, kBlocks, false>;
    case key(kBlocks, kBlocks, true):
      return NearestRows<kBlocks, kBlocks, true>;
#if HWY_TARGET == HWY_AVX3_DL
    case key(kPattern, kPattern, false):
      return NearestRows<kPattern, kPattern, false>;
    case key(kPattern, kPattern, true):
      return NearestRows<kPattern, kPattern, true>;
    case key(1, kPattern, false):
      return NearestRows<1, kPattern, false>;
    case key(1, kPattern, true):
      return NearestRows<1, kPattern, true>;
    case key(6, kPattern, true):  // I420 chroma 3 apart as a pattern
      return NearestRows<6, kPattern, true>;
    case key(kWindows, kWindows, false):
      return NearestRows<kWindows, kWindows, false>;
    case key(kWindows, kWindows, true):
      return NearestRows<kWindows, kWindows, true>;
    case key(kWindows, kBlocks, false):
      return NearestRows<kWindows, kBlocks, false>;
    case key(kWindows, kBlocks, true):
      return NearestRows<kWindows, kBlocks, true>;
    case key(kBlocks, kWindows, false):
      return NearestRows<kBlocks, kWindows, false>;
    case key(kBlocks, kWindows, true):
      return NearestRows<kBlocks, kWindows, true>;
#endif
    default:
      return nullptr;
  }
#endif
}

// Fills `count` samples from `at` of every output plane with its pad value.
// Where job.stream_bars says so (a large output that would not stay in the
// last-level cache with its frame), with streaming stores from the first
// vector-aligned sample on: a letterbox's bars are up to half of it, and
// plain stores would read every line first.
template <typename T>
HWY_INLINE void FillRun(const PreprocessJob& job, T* p, std::int64_t count, T value) {
  using DT = hn::ScalableTag<T>;
  const DT dt;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(dt));
  constexpr std::size_t kBytes = sizeof(T) * hn::MaxLanes(DT());
  if (!job.stream_bars || count < 2 * lanes || kBytes < 16) {
    std::fill_n(p, count, value);
    return;
  }
  const auto misaligned = reinterpret_cast<std::uintptr_t>(p) & (kBytes - 1);
  const std::int64_t head =
      misaligned == 0 ? 0 : static_cast<std::int64_t>((kBytes - misaligned) / sizeof(T));
  std::fill_n(p, head, value);
  const auto v = hn::Set(dt, value);
  std::int64_t i = head;
  for (; i + lanes <= count; i += lanes)
    hn::Stream(v, dt, p + i);
  std::fill_n(p + i, count - i, value);
}

void FillPad(const PreprocessJob& job, std::int64_t at, std::int64_t count) {
  if (count <= 0) return;
  for (int c = 0; c < 3; ++c) {
    if (job.out_dtype == DType::F32) {
      FillRun(job, reinterpret_cast<float*>(job.planes[c]) + at, count, job.pad[c]);
      continue;
    }
    // The pad value in the 16-bit dtype, converted by the same store as pixels.
    HWY_ALIGN std::uint16_t one[hn::MaxLanes(D16())];
    StoreOut(job, hn::Set(DF(), job.pad[c]), reinterpret_cast<std::byte*>(one), 0, 1);
    FillRun(job, reinterpret_cast<std::uint16_t*>(job.planes[c]) + at, count, one[0]);
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
  if ((job.box_k > 2 || job.luma_x_box != 0 || job.chroma_x_box != 0) &&
      s.sums.size() < static_cast<std::size_t>(job.luma_x->source + 64)) {
    s.sums.assign(static_cast<std::size_t>(job.luma_x->source + 64), 0);  // rows summed first
  }
  const bool blocks = UseBlocks(job);
  if (blocks) {
    s.luma_rows.reset(job.luma_y->taps + 1, job.luma_x->stride);
    s.chroma_rows.reset(job.chroma_y->taps + 1, 2 * job.chroma_x->stride);
    if (job.luma_sum_x != nullptr || job.chroma_sum_x != nullptr) {
      const std::int64_t chroma_bytes = job.chroma_x->source * (job.interleaved_uv ? 2 : 1);
      const auto bytes = static_cast<std::size_t>(std::max(job.luma_x->source, chroma_bytes));
      if (s.sums.size() < bytes + 64) s.sums.assign(bytes + 64, 0);
      grow(s.luma_sums, 2 * job.luma_x->stride);
      grow(s.chroma_sums, 4 * job.chroma_x->stride);
    }
  }
  // The blocks path's rows hold levels x 32767 (nearest: levels); FinishRow
  // takes luma times ys.
  const float unit = job.nearest ? 1.f : 1.f / 32767.f;
  const float luma_scale = job.nearest ? 1.f : unit * job.yuv->fy;
  // The other path's rows, as taps of weight 1.
  RowTaps plain_luma, plain_u, plain_v;
  plain_luma.n = plain_u.n = plain_v.n = 1;
  plain_luma.row[0] = s.luma.data();
  plain_luma.w[0] = job.yuv->fy;
  plain_u.row[0] = s.cu.data();
  plain_v.row[0] = s.cv.data();
  plain_u.w[0] = plain_v.w[0] = 1.f;
  const std::uint8_t* reuse = job.chroma_y->same_as_previous.data();
  const NearestRowsFn nearest = FusedNearest(job);
  for (std::int64_t out_r = row_begin; out_r < row_end; ++out_r) {
    const std::int64_t row_start = out_r * job.out_w;
    if (out_r < job.box_y || out_r >= job.box_y + job.box_h) {
      FillPad(job, row_start, job.out_w);
      continue;
    }
    FillPad(job, row_start, job.box_x);
    FillPad(job, row_start + job.box_x + job.box_w, job.out_w - job.box_x - job.box_w);
    if (nearest != nullptr) {  // the content rows, after their bars (below)
      continue;
    }
    const std::int64_t r = out_r - job.box_y;
    const bool same_chroma = s.chroma_row == r - 1 && reuse[r];
    if (same_chroma) s.chroma_row = r;  // the same chroma rows and weights as the row before
    if (job.box_k != 0 && (job.box_chroma || blocks)) {
      BoxRow(job, s, r);
      if (job.box_chroma) {
        FinishRowS<1, 1, Conv::Folded>(job, s.luma_taps, s.u_taps, s.v_taps, out_r);
        continue;
      }
      if (!same_chroma) ChromaRowBlocks(job, s, r, unit);  // 3x: chroma's 1.5x by its tables
      FinishRow(job, s.luma_taps, s.u_taps, s.v_taps, out_r);
      continue;
    }
    if (blocks) {
      LumaRowBlocks(job, s, r, luma_scale);
      if (!same_chroma) ChromaRowBlocks(job, s, r, unit);
      FinishRow(job, s.luma_taps, s.u_taps, s.v_taps, out_r);
      continue;
    }
    LumaRow(job, s, r);
    if (!same_chroma) ChromaRow(job, s, r);
    FinishRowS<1, 1, Conv::Levels>(job, plain_luma, plain_u, plain_v, out_r);
  }
  if (nearest != nullptr) {
    nearest(job, std::clamp(job.box_y, row_begin, row_end),
            std::clamp(job.box_y + job.box_h, row_begin, row_end));
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

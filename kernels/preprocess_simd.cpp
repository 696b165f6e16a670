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
//    blocks; where none fits, 4 bytes per output, gathered, or on AVX2 by
//    eight scalar loads; AVX-512 VBMI permutes out of 128-byte windows; on
//    AVX2, each output's samples loaded as one vector) and 16-bit
//    multiply-adds, into float rows cached per source row; output rows read
//    the cached rows their vertical taps name (area: the rows summed first,
//    in integers, and resampled once).
//  * The vertical-first path (preprocess_general-inl.h): the vertical taps
//    over the whole row in float, then the horizontal taps. It serves SSE4
//    and the other targets at large area ratios, more than 16 taps across
//    without VBMI, and more than 63 vertical taps.

// AVX3_DL (AVX-512 with VBMI: Ice Lake, Zen 4 and later) is compiled too: its
// byte permutes serve large ratios (ResampleAxis::windows).
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL 1
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/preprocess_simd.cpp"
#include <hwy/aligned_allocator.h>
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "neat/kernels/internal/lease_pool.hpp"
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
// bytes (job.luma_x_identity, one tap): the tap's row is a source row's
// bytes, read by the final pass as level x unit + offset, the values the
// resampled row would hold (ByteTap), its first bytes_end bytes.
struct RowTaps {
  const float* row[64];
  float w[64];
  int n = 0;
  const std::uint8_t* bytes = nullptr;
  std::int64_t bytes_end = 0;
  float unit = 0.f, offset = 0.f;
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

// Scratch rows, lent per stripe from ScratchPool() (below) and reused across
// calls. Sized with slack for whole vectors past the end; grown (never
// shrunk) when a larger frame arrives.
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
  // Bilinear's two rows down weighed into one as they are resampled (luma,
  // U, V; `fused_width` floats each, vector-aligned), where no row serves
  // two output rows.
  hwy::AlignedFreeUniquePtr<float[]> fused;
  std::int64_t fused_width = 0;
  // job.stream_rows: an output row's three planes, computed here (cached)
  // and then streamed to the tensor a plane at a time (StagedWidth each).
  hwy::AlignedFreeUniquePtr<float[]> staged;
  std::int64_t staged_width = 0;
};

// Floats per staged plane row: the content row in whole vectors.
inline std::int64_t StagedWidth(const PreprocessJob& job) {
  return (job.box_w + 16 + 15) / 16 * 16;
}

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

// Stores to the output planes: pixels (StoreOut), cached rows (StreamRow)
// and the pad (FillPad, BarStores).
#include "kernels/internal/preprocess_stores-inl.h"

// A RowTaps with the tap count known at compile time (0: any), its rows and
// weights held in registers across a row (in memory, a RowTaps would be read
// again per vector: the stores may alias it). kScaled: every weight times
// `scale`, and `bias` added by the first tap's multiply-add (Conv::Scaled's
// luma; its chroma with bias 0).
template <int N, bool kScaled = false>
struct FixedTaps {
  explicit FixedTaps(const RowTaps& t, float scale = 1.f, float bias = 0.f) : all(t) {
    const DF df;
    for (int i = 0; i < (N == 0 ? 1 : N); ++i) {
      r[i] = t.row[i];
      w[i] = hn::Set(df, kScaled ? t.w[i] * scale : t.w[i]);
    }
    s = hn::Set(df, scale);
    b = hn::Set(df, bias);
  }
  HWY_INLINE VF At(std::int64_t x) const {
    const DF df;
    if constexpr (N == 0) {
      return kScaled ? hn::MulAdd(TapsAt(all, x), s, b) : TapsAt(all, x);
    } else {
      VF acc = kScaled ? hn::MulAdd(hn::LoadU(df, r[0] + x), w[0], b)
                       : hn::Mul(hn::LoadU(df, r[0] + x), w[0]);
      for (int i = 1; i < N; ++i)
        acc = hn::MulAdd(hn::LoadU(df, r[i] + x), w[i], acc);
      return acc;
    }
  }
  const RowTaps& all;
  const float* r[N == 0 ? 1 : N];
  VF w[N == 0 ? 1 : N];
  VF s, b;
};

// FinishRowT's luma count for RowTaps::bytes (ByteTap in place of FixedTaps).
constexpr int kByteTap = -1;

// The luma's one tap read from a source row's bytes (RowTaps::bytes): the
// level converted as the resampled row's pass converts it (level x unit +
// offset, exact in float), then weighed as FixedTaps<1> weighs that row, so
// that the values are the same bit for bit. At(x) reads a whole vector's
// bytes (x + lanes <= bytes_end); Last(x) the row's last, by count.
template <bool kScaled>
struct ByteTap {
  explicit ByteTap(const RowTaps& t, float scale = 1.f, float bias = 0.f)
      : p(t.bytes), end(t.bytes_end) {
    const DF df;
    w = hn::Set(df, kScaled ? t.w[0] * scale : t.w[0]);
    b = hn::Set(df, bias);
    unit = hn::Set(df, t.unit);
    offset = hn::Set(df, t.offset);
  }
  HWY_INLINE VF From(hn::Vec<hn::Rebind<std::uint8_t, DI>> levels) const {
    const DF df;
    const VF v = hn::MulAdd(hn::ConvertTo(df, hn::PromoteTo(DI(), levels)), unit, offset);
    return kScaled ? hn::MulAdd(v, w, b) : hn::Mul(v, w);
  }
  HWY_INLINE VF At(std::int64_t x) const {
    return From(hn::LoadU(hn::Rebind<std::uint8_t, DI>(), p + x));
  }
  VF Last(std::int64_t x) const {
    const hn::Rebind<std::uint8_t, DI> d8;
    HWY_ALIGN std::uint8_t last[hn::MaxLanes(d8)] = {};
    std::memcpy(last, p + x,
                static_cast<std::size_t>(
                    std::min<std::int64_t>(static_cast<std::int64_t>(hn::Lanes(d8)), end - x)));
    return From(hn::Load(d8, last));
  }
  const std::uint8_t* p;
  std::int64_t end;
  VF w, b, unit, offset;
};

// How RgbOut stores whole vectors: F32 plain or streamed (the row's
// planes aligned to the vector), F32 to the staged rows (job.stream_rows;
// the last vector too), or anything through StoreOut.
enum class Store : std::uint8_t { F32, F32Stream, F32Rows, Any };

// What the final pass reads: the blocks path's rows, offsets folded in (luma
// (level - y_offset) x ys, chroma level - 128); the vertical-first path's
// (luma level x ys, chroma levels); nearest's (whole levels as 32-bit
// integers, converted with convert_color's integer formula so that the values
// equal the unfused chain's). Scaled: Folded's rows where the job's a and b
// are the same in every plane (PreprocessJob::uniform_affine), a folded into
// the taps' weights and b into the luma's first, so that the RGB comes out
// normalized, clamped to [b, 255 a + b], with no multiply-add per plane after.
enum class Conv : std::uint8_t { Folded, Levels, Nearest, Scaled };

// YUV -> RGB of one vector, clamped to [0, 255] (Scaled: [b, 255 a + b]).
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
#if HWY_TARGET != HWY_SCALAR
    iy0_bytes = hn::BitCast(
        di, hn::Set(hn::Repartition<std::uint8_t, DI>(), static_cast<std::uint8_t>(k.y_offset)));
#endif
    iys = hn::Set(di, k.y);
    half = hn::Set(di, 1 << (kYuvShift - 1));
    irv = hn::Set(di, k.r_v);
    igu = hn::Set(di, k.g_u);
    igv = hn::Set(di, k.g_v);
    ibu = hn::Set(di, k.b_u);
    itop_bits = hn::BitCast(di, hn::Set(df, 255.f));
    if constexpr (kConv == Conv::Scaled) {
      const float bias = job.b[0] + 0.f;  // -0 as +0: its bits order as a float's
      izero = hn::BitCast(di, hn::Set(df, bias));
      itop_bits = hn::BitCast(di, hn::Set(df, 255.f * job.a[0] + bias));
    }
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
      const auto yy = hn::Add(hn::Mul(AboveOffset(hn::BitCast(di, y)), iys), half);
      r = level(hn::Add(yy, hn::Mul(irv, v)));
      g = level(hn::Add(yy, hn::Add(hn::Mul(igv, v), hn::Mul(igu, u))));
      b = level(hn::Add(yy, hn::Mul(ibu, u)));
    } else if constexpr (kConv == Conv::Folded || kConv == Conv::Scaled) {
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
  // max(y - y_offset, 0) of whole levels (nearest's): one saturating
  // subtract of bytes, as a lane's level is its low byte and the other three
  // are zero (and stay so), in place of a subtract and a max.
  HWY_INLINE hn::Vec<DI> AboveOffset(hn::Vec<DI> y) const {
#if HWY_TARGET == HWY_SCALAR
    return hn::Max(hn::Sub(y, iy0), izero);
#else
    const hn::Repartition<std::uint8_t, DI> d8;
    return hn::BitCast(DI(), hn::SaturatedSub(hn::BitCast(d8, y), hn::BitCast(d8, iy0_bytes)));
#endif
  }
  // max(x, 0) and min(max(x, 0), 255) on the floats' bits as 32-bit
  // integers (Scaled: max(x, b) and min(max(x, b), 255 a + b), b >= 0):
  // non-negative floats order as their bits do, and a negative
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
  hn::Vec<DI> izero, itop, i128, iy0, iy0_bytes, iys, half, irv, igu, igv, ibu, itop_bits;
};

// The final step of every path: RGB levels normalized (x a + b per plane)
// and stored at element `at` of row out_r's content; whole vectors by
// kStore, a row's last (n < lanes) and other dtypes through StoreOut.
// kAffine false: the levels come normalized already (Conv::Scaled).
template <Store kStore, bool kAffine = true>
struct RgbOut {
  RgbOut(const PreprocessJob& of, std::int64_t out_r, float* staged = nullptr) : job(of) {
    const DF df;
    const int ri = job.r_plane, bi = job.b_plane;
    ra = hn::Set(df, job.a[ri]);
    rb = hn::Set(df, job.b[ri]);
    ga = hn::Set(df, job.a[1]);
    gb = hn::Set(df, job.b[1]);
    ba = hn::Set(df, job.a[bi]);
    bb = hn::Set(df, job.b[bi]);
    start = out_r * job.out_w + job.box_x;
    pr = reinterpret_cast<float*>(job.planes[ri]) + start;
    pg = reinterpret_cast<float*>(job.planes[1]) + start;
    pb = reinterpret_cast<float*>(job.planes[bi]) + start;
    if constexpr (kStore == Store::F32Rows) {
      const std::int64_t width = StagedWidth(job);
      sr = staged;
      sg = staged + width;
      sb = staged + 2 * width;
    }
  }
  // A whole vector (F32Rows: any, the staged rows being padded), with no
  // call: for kStore other than Any.
  HWY_INLINE void Whole(std::int64_t at, VF r8, VF g8, VF b8) const {
    static_assert(kStore != Store::Any);
    const DF df;
    const VF r = Normalize(r8, ra, rb), g = Normalize(g8, ga, gb), b = Normalize(b8, ba, bb);
    if constexpr (kStore == Store::F32Rows) {
      hn::Store(r, df, sr + at);
      hn::Store(g, df, sg + at);
      hn::Store(b, df, sb + at);
    } else if constexpr (kStore == Store::F32Stream) {
      hn::Stream(r, df, pr + at);
      hn::Stream(g, df, pg + at);
      hn::Stream(b, df, pb + at);
    } else {
      hn::StoreU(r, df, pr + at);
      hn::StoreU(g, df, pg + at);
      hn::StoreU(b, df, pb + at);
    }
  }
  // n values (a row's last vector, or any through StoreOut).
  HWY_INLINE void operator()(std::int64_t at, VF r8, VF g8, VF b8, std::int64_t n) const {
    if constexpr (kStore != Store::Any) {
      if (kStore == Store::F32Rows || n == static_cast<std::int64_t>(hn::Lanes(DF()))) {
        return Whole(at, r8, g8, b8);
      }
    }
    const VF r = Normalize(r8, ra, rb), g = Normalize(g8, ga, gb), b = Normalize(b8, ba, bb);
    StoreOut(job, r, job.planes[job.r_plane], start + at, n);
    StoreOut(job, g, job.planes[1], start + at, n);
    StoreOut(job, b, job.planes[job.b_plane], start + at, n);
  }
  static HWY_INLINE VF Normalize(VF x, VF a, VF b) {
    if constexpr (kAffine) {
      return hn::MulAdd(x, a, b);
    } else {
      return x;
    }
  }
  // F32Rows: the staged row's n floats to each plane, one plane at a time.
  void StreamRows(std::int64_t n) const {
    StreamRow(sr, pr, n);
    StreamRow(sg, pg, n);
    StreamRow(sb, pb, n);
  }
  const PreprocessJob& job;
  VF ra, rb, ga, gb, ba, bb;
  std::int64_t start;
  float *pr, *pg, *pb;
  float *sr = nullptr, *sg = nullptr, *sb = nullptr;
};

template <int LN, int CN, Store kStore, Conv kConv>
void FinishRowT(const PreprocessJob& job, const RowTaps& luma, const RowTaps& cu, const RowTaps& cv,
                std::int64_t out_r, float* staged) {
  const DF df;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const ToRgb<kConv> to_rgb(job);
  const RgbOut<kStore, kConv != Conv::Scaled> out(job, out_r, staged);
  // Scaled: a in every weight, b in the luma (the job's a and b are uniform).
  constexpr bool kScaled = kConv == Conv::Scaled;
  const float scale = kScaled ? job.a[0] : 1.f, bias = kScaled ? job.b[0] + 0.f : 0.f;
  using LumaTaps = std::conditional_t<LN == kByteTap, ByteTap<kScaled>, FixedTaps<LN, kScaled>>;
  const LumaTaps yt(luma, scale, bias);
  const FixedTaps<CN, kScaled> ut(cu, scale), vt(cv, scale);
  const std::int64_t box_w = job.box_w;
  auto rgb = [&](std::int64_t x, VF& r8, VF& g8, VF& b8) HWY_ATTR {
    if constexpr (kConv == Conv::Nearest) {  // one tap of weight 1: the row as it is
      to_rgb(hn::LoadU(df, yt.r[0] + x), hn::LoadU(df, ut.r[0] + x), hn::LoadU(df, vt.r[0] + x), r8,
             g8, b8);
    } else {
      to_rgb(yt.At(x), ut.At(x), vt.At(x), r8, g8, b8);
    }
  };
  // A row's last vector: ByteTap's bytes by count (a whole vector's load
  // would pass the source row's end).
  auto rgb_last = [&](std::int64_t x, VF& r8, VF& g8, VF& b8) HWY_ATTR {
    if constexpr (LN == kByteTap) {
      if (x + lanes > box_w) return to_rgb(yt.Last(x), ut.At(x), vt.At(x), r8, g8, b8);
    }
    rgb(x, r8, g8, b8);
  };
  std::int64_t x = 0;
  // The whole vectors first, in a loop with no call: a call in it (the last
  // vector's memcpy, in StoreOut, on a path the loop rarely takes) made the
  // compiler keep the planes' pointers (and with plain stores the constants)
  // on the stack and load them per vector, as a call may overwrite every
  // vector register. Zen 5, calls alternated in one process, outputs bit for
  // bit the same: 1080p NV12 -> 640 bilinear 0.84 of the time, area 0.87,
  // 720p -> 416 area 0.89, -> 512 0.79, 4K -> 640 bilinear 0.92, AVX2 0.83-0.90,
  // plain stores 0.64-0.73 (session 35).
  if constexpr (kStore != Store::Any) {
    for (; x + lanes <= box_w; x += lanes) {
      VF r8, g8, b8;
      rgb(x, r8, g8, b8);
      out.Whole(x, r8, g8, b8);
    }
  }
  for (; x < box_w; x += lanes) {
    VF r8, g8, b8;
    rgb_last(x, r8, g8, b8);
    out(x, r8, g8, b8, std::min(lanes, box_w - x));
  }
  if constexpr (kStore == Store::F32Rows) out.StreamRows(box_w);
}

// Whether output row out_r's content starts on a whole vector in every
// F32 plane (streaming stores need it).
bool RowAligned(const PreprocessJob& job, std::int64_t out_r) {
  const std::int64_t start = out_r * job.out_w + job.box_x;
  bool aligned = true;
  for (int c = 0; c < 3; ++c) {
    const auto at =
        reinterpret_cast<std::uintptr_t>(reinterpret_cast<float*>(job.planes[c]) + start);
    aligned = aligned && (at & (sizeof(float) * hn::Lanes(DF()) - 1)) == 0;
  }
  return aligned;
}

// `staged`: the scratch's staged rows (job.stream_rows).
template <int LN, int CN, Conv kConv>
void FinishRowS(const PreprocessJob& job, const RowTaps& luma, const RowTaps& cu, const RowTaps& cv,
                std::int64_t out_r, float* staged) {
  if (job.out_dtype != DType::F32) {
    return FinishRowT<LN, CN, Store::Any, kConv>(job, luma, cu, cv, out_r, staged);
  }
  if (job.stream_rows) {
    return FinishRowT<LN, CN, Store::F32Rows, kConv>(job, luma, cu, cv, out_r, staged);
  }
  if (job.stream && RowAligned(job, out_r)) {
    return FinishRowT<LN, CN, Store::F32Stream, kConv>(job, luma, cu, cv, out_r, staged);
  }
  FinishRowT<LN, CN, Store::F32, kConv>(job, luma, cu, cv, out_r, staged);
}

// FinishRowS by its tap counts: luma 1-4 and chroma 1-3 compiled, 0 any.
using FinishFn = void (*)(const PreprocessJob&, const RowTaps&, const RowTaps&, const RowTaps&,
                          std::int64_t, float*);
template <Conv kConv>
constexpr FinishFn kFinishByTaps[5][4] = {{FinishRowS<0, 0, kConv>, FinishRowS<0, 0, kConv>,
                                           FinishRowS<0, 0, kConv>, FinishRowS<0, 0, kConv>},
                                          {FinishRowS<0, 0, kConv>, FinishRowS<1, 1, kConv>,
                                           FinishRowS<1, 2, kConv>, FinishRowS<1, 3, kConv>},
                                          {FinishRowS<0, 0, kConv>, FinishRowS<2, 1, kConv>,
                                           FinishRowS<2, 2, kConv>, FinishRowS<2, 3, kConv>},
                                          {FinishRowS<0, 0, kConv>, FinishRowS<3, 1, kConv>,
                                           FinishRowS<3, 2, kConv>, FinishRowS<3, 3, kConv>},
                                          {FinishRowS<0, 0, kConv>, FinishRowS<4, 1, kConv>,
                                           FinishRowS<4, 2, kConv>, FinishRowS<4, 3, kConv>}};

// The same with the luma's one tap from the frame's bytes (RowTaps::bytes),
// by the chroma's tap count.
template <Conv kConv>
constexpr FinishFn kFinishByteTap[4] = {
    FinishRowS<kByteTap, 0, kConv>, FinishRowS<kByteTap, 1, kConv>, FinishRowS<kByteTap, 2, kConv>,
    FinishRowS<kByteTap, 3, kConv>};

// Output row out_r from the blocks path's rows.
void FinishRow(const PreprocessJob& job, const RowTaps& luma, const RowTaps& cu, const RowTaps& cv,
               std::int64_t out_r, float* staged) {
  if (job.nearest) return FinishRowS<1, 1, Conv::Nearest>(job, luma, cu, cv, out_r, staged);
  const int cn = cu.n <= 3 ? cu.n : 0;
  if (luma.bytes != nullptr) {
    const auto& by_taps =
        job.uniform_affine ? kFinishByteTap<Conv::Scaled> : kFinishByteTap<Conv::Folded>;
    return by_taps[cn](job, luma, cu, cv, out_r, staged);
  }
  // Tap counts compiled: luma 1-4, chroma 1-3 (bilinear 1-2; area's summed
  // rows and partial rows 2-4; 4K -> 416 area: 3 and 3); others any.
  // Conv::Scaled where the job's a and b are uniform (the default scale
  // 1/255 with no mean): three multiply-adds fewer per vector. Zen 5, calls
  // alternated in one process: 720p -> 416 and 512 bilinear 0.96-0.97 of
  // the time, area 0.98, 1080p -> 640 bilinear 0.985, 1080p -> 416 area
  // 0.99, 4K -> 640 0.99; AVX2 0.89-0.96.
  const int ln = luma.n <= 4 ? luma.n : 0;
  const auto& by_taps =
      job.uniform_affine ? kFinishByTaps<Conv::Scaled> : kFinishByTaps<Conv::Folded>;
  by_taps[ln][cn](job, luma, cu, cv, out_r, staged);
}

// The exact boxes of 2 and 4 in one pass (BoxRowFused).
#include "kernels/internal/preprocess_box_one_pass-inl.h"

// Nearest picked and converted in one pass (FusedNearest).
#include "kernels/internal/preprocess_nearest-inl.h"

// Scratch rows lent per stripe (LeasePool): a stripe finds rows a warm
// call grew, whichever thread runs it; per thread, a thread's first call
// (a pool's worker new to the stripe, a caller's short-lived thread) grew
// its own, 58-97 allocations at 1080p -> 416. Never destroyed, as a call
// may still run while the process exits.
LeasePool<Scratch, 32>& ScratchPool() {
  static auto* pool = new LeasePool<Scratch, 32>();
  return *pool;
}

// Scratch s grown to the job's rows and its per-call state reset.
void PrepareScratch(const PreprocessJob& job, Scratch& s) {
  // Gathers may read taps - 1 samples past a row (with weight 0), windows
  // up to 4 vectors past the last block's first sample.
  const std::int64_t slack = 4 * static_cast<std::int64_t>(hn::Lanes(DF()));
  grow(s.vrow, job.luma_x->source + job.luma_x->taps + slack);
  grow(s.urow, job.chroma_x->source + job.chroma_x->taps + slack);
  grow(s.wrow, job.chroma_x->source + job.chroma_x->taps + slack);
  for (auto* v : {&s.luma, &s.cu, &s.cv})
    grow(*v, job.luma_x->stride);
  s.chroma_row = -1;
  s.luma_taps.bytes = nullptr;  // set row by row where the job reads them
  if ((job.box_k > 2 || job.luma_x_box != 0 || job.chroma_x_box != 0) &&
      s.sums.size() < static_cast<std::size_t>(job.luma_x->source + 64)) {
    s.sums.assign(static_cast<std::size_t>(job.luma_x->source + 64), 0);  // rows summed first
  }
  const bool blocks = UseBlocks(job);
  if (blocks && s.fused_width < job.luma_x->stride + 64) {
    // The width is set once its rows exist: a scratch lent again after a
    // call that ran out of memory here must not claim rows it lacks.
    const std::int64_t width = (job.luma_x->stride + 64 + 15) / 16 * 16;
    s.fused_width = 0;
    s.fused = hwy::AllocateAligned<float>(static_cast<std::size_t>(3 * width));
    if (!s.fused) throw std::bad_alloc();  // as the vectors above would
    s.fused_width = width;
    std::fill_n(s.fused.get(), 3 * s.fused_width, 0.f);
  }
  if (job.stream_rows && s.staged_width < StagedWidth(job)) {
    s.staged_width = 0;  // as `fused`: claimed once the rows exist
    s.staged = hwy::AllocateAligned<float>(static_cast<std::size_t>(3 * StagedWidth(job)));
    if (!s.staged) throw std::bad_alloc();
    s.staged_width = StagedWidth(job);
  }
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
}

// Grows the scratch of as many slots as the call has stripes, each held at
// once so that they are distinct: whichever slots the stripes then take
// (the first free ones), they find them grown, however the call's stripes
// were scheduled before. Without it a slot grew only when stripes first
// ran side by side: a call whose warm-up stripes all ran on one thread (a
// worker busy or asleep) allocated later, when they first overlapped
// (0.03-1.2 allocations per call in two-thread rows of the table while the
// host was busy).
void ReserveScratch(const PreprocessJob& job, int stripes) {
  using Pool = LeasePool<Scratch, 32>;
  std::optional<Pool::Lease> held[32];
  const int n = std::clamp(stripes, 0, 32);
  for (int i = 0; i < n; ++i) {
    held[i].emplace(ScratchPool().take());
    PrepareScratch(job, **held[i]);
  }
}

void PreprocessRows(const PreprocessJob& job, std::int64_t row_begin, std::int64_t row_end) {
  const auto lease = ScratchPool().take();
  Scratch& s = *lease;
  PrepareScratch(job, s);
  const bool blocks = UseBlocks(job);
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
  float* const staged = s.staged.get();
  // The stripe's bar rows (a letterbox's, above and below the content),
  // spread among its content rows: each content row first fills its share,
  // so that the bars' stores drain while the content rows compute, in place
  // of all the top rows, then the content, then the bottom rows. With the
  // bars' stores as BarStores has them, calls alternated in one process,
  // letterboxed bilinear: 720p NV12 -> 640 0.70-0.83 of the time, 1080p ->
  // 640 0.78-0.89, 1080p -> 1280 0.79-0.84, 4K -> 640 0.77-0.87, 1080p I420
  // -> 512 0.85-0.94 (the frame cached or 12 frames from memory alike); two
  // threads 0.77-0.94; area 0.90-0.98; AVX2 0.91-0.96; square rows and
  // nearest (not spread) 0.99-1.02. Nearest's content rows come after, in
  // one call of their own (below).
  // Content rows of the 2x or 4x box in one pass (BoxRowFused).
  [[maybe_unused]] const bool fused_box =  // unused on the scalar target
      HWY_TARGET != HWY_SCALAR && job.box_chroma && (job.box_k == 2 || job.box_k == 4);
  const bool stream_bars = BarStores(job, nearest != nullptr);
  const std::int64_t content_begin = std::clamp(job.box_y, row_begin, row_end),
                     content_end = std::clamp(job.box_y + job.box_h, row_begin, row_end);
  const std::int64_t top = content_begin - row_begin, bars = top + (row_end - content_end),
                     content = content_end - content_begin;
  std::int64_t bars_done = 0;
  auto fill_bars = [&](std::int64_t upto) {
    for (; bars_done < upto; ++bars_done) {
      const std::int64_t row =
          bars_done < top ? row_begin + bars_done : content_end + (bars_done - top);
      FillPad(job, row * job.out_w, job.out_w, stream_bars);
    }
  };
  const bool spread = nearest == nullptr && content > 0;
  if (!spread) fill_bars(bars);
  for (std::int64_t out_r = content_begin; out_r < content_end; ++out_r) {
    const std::int64_t row_start = out_r * job.out_w;
    if (spread) fill_bars((out_r - content_begin) * bars / content);
    FillPad(job, row_start, job.box_x, stream_bars);
    FillPad(job, row_start + job.box_x + job.box_w, job.out_w - job.box_x - job.box_w, stream_bars);
    if (nearest != nullptr) {  // the content rows, after their bars (below)
      continue;
    }
    const std::int64_t r = out_r - job.box_y;
    const bool same_chroma = s.chroma_row == r - 1 && reuse[r];
    if (same_chroma) s.chroma_row = r;  // the same chroma rows and weights as the row before
#if HWY_TARGET != HWY_SCALAR
    if (fused_box) {
      if (job.box_k == 2) {
        BoxRowFused<2>(job, r, out_r);
      } else {
        BoxRowFused<4>(job, r, out_r);
      }
      continue;
    }
#endif
    if (job.box_k != 0 && (job.box_chroma || blocks)) {
      BoxRow(job, s, r);
      if (job.box_chroma) {
        if (job.uniform_affine) {
          FinishRowS<1, 1, Conv::Scaled>(job, s.luma_taps, s.u_taps, s.v_taps, out_r, staged);
        } else {
          FinishRowS<1, 1, Conv::Folded>(job, s.luma_taps, s.u_taps, s.v_taps, out_r, staged);
        }
        continue;
      }
      if (!same_chroma) ChromaRowBlocks(job, s, r, unit);  // 3x: chroma's 1.5x by its tables
      FinishRow(job, s.luma_taps, s.u_taps, s.v_taps, out_r, staged);
      continue;
    }
    if (blocks) {
      LumaRowBlocks(job, s, r, luma_scale);
      if (!same_chroma) ChromaRowBlocks(job, s, r, unit);
      FinishRow(job, s.luma_taps, s.u_taps, s.v_taps, out_r, staged);
      continue;
    }
    LumaRow(job, s, r);
    if (!same_chroma) ChromaRow(job, s, r);
    FinishRowS<1, 1, Conv::Levels>(job, plain_luma, plain_u, plain_v, out_r, staged);
  }
  fill_bars(bars);
  if (nearest != nullptr) nearest(job, content_begin, content_end);
  if (job.stream || job.stream_rows) hwy::FlushStream();  // visible before the stripe ends
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
HWY_EXPORT(ReserveScratch);
HWY_EXPORT(TargetName);

void preprocess_rows(const PreprocessJob& job, std::int64_t row_begin, std::int64_t row_end) {
  HWY_DYNAMIC_DISPATCH(PreprocessRows)(job, row_begin, row_end);
}

void reserve_scratch(const PreprocessJob& job, int stripes) {
  HWY_DYNAMIC_DISPATCH(ReserveScratch)(job, stripes);
}

const char* preprocess_simd_target() {
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

}  // namespace neat::detail
#endif  // HWY_ONCE

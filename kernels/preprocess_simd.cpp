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
  LineVector<float> data;
  LineVector<std::int64_t> tag;  // written per row: on lines of its own
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
// shrunk) when a larger frame arrives. The rows on lines of their own
// (LineVector), as is each slot: another stripe's scratch shares none.
struct Scratch {
  LineVector<float> vrow, urow, wrow;  // vertical pass (general path): luma, or U and V
  LineVector<float> luma;              // resampled luma, box_w
  LineVector<float> cu, cv;            // resampled chroma, box_w
  std::int64_t chroma_row = -1;        // the content row whose chroma cu/cv hold
  RowCache luma_rows, chroma_rows;     // the blocks path (chroma: U, then V)
  LineVector<std::uint16_t> sums;      // area: a row of 16-bit sums of source rows
  LineVector<float> luma_sums;         // ... resampled: low bytes, then high bytes
  LineVector<float> chroma_sums;       // U low, V low, U high, V high
  RowTaps luma_taps, u_taps, v_taps;   // the rows FinishRow sums
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

inline void grow(LineVector<float>& v, std::int64_t n) {
  const auto want =
      static_cast<std::size_t>(n + 4 * static_cast<std::int64_t>(hn::Lanes(DF())) + 8);
  if (v.size() < want) v.assign(want, 0.f);  // zeros: lanes past the end stay finite
}

// A row's last bytes [0, n) of `from` into `to`: kBytes, zeros after n,
// for the whole-vector loads that follow (a load in the row would pass its
// end). Where the target's masked loads never touch the masked-off bytes
// (AVX-512): one masked load and one whole-vector store per vector, with no
// `rep stos`. The copy it replaced zeroed its array with `= {}` (compiled
// to `rep stosq`) and then memcpy'd over it; the first load after it
// stalled, most likely until those string stores were written out behind
// the row's streaming stores: 1080p NV12 -> 320 letterboxed bilinear (the
// pairs at 6x, the last 32 of each row's 320 outputs from the copy) took
// 56 us a call, with half of perf's samples on that load; this copy 31 us,
// vector zeroing and memcpy 33, no copy at all (reading past the row: a
// test, not safe) 30 (Zen 5, one thread, the frame cached, session 52).
// Elsewhere (AVX2 and below, whose masked byte loads read the whole
// vector): vector zeroing and memcpy.
// d8: the loads' vectors (to aligned to them; kBytes a whole number of them).
template <std::size_t kBytes, class D8>
HWY_INLINE void CopyTail(D8 d8, std::uint8_t* HWY_RESTRICT to,
                         const std::uint8_t* HWY_RESTRICT from, std::size_t n) {
#if HWY_TARGET != HWY_SCALAR && !HWY_MEM_OPS_MIGHT_FAULT
  const std::size_t lanes = hn::Lanes(d8);
  static_assert(kBytes % hn::MaxLanes(D8()) == 0, "whole vectors");
  for (std::size_t o = 0; o < kBytes; o += lanes) {
    if (o < n) {
      hn::Store(hn::MaskedLoad(hn::FirstN(d8, std::min(n - o, lanes)), d8, from + o), d8, to + o);
    } else {  // zeros, with no pointer formed past the bytes copied
      hn::Store(hn::Zero(d8), d8, to + o);
    }
  }
#else
  (void)d8;
  std::memset(to, 0, kBytes);
  std::memcpy(to, from, n);
#endif
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

// The final pass: the rows' taps summed, converted to RGB, normalized and
// stored (FinishRow).
#include "kernels/internal/preprocess_final_pass-inl.h"

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
  // Bilinear at 4x and 6x both ways (job.pair_box) the same way, luma's
  // 2 x 2 from two rows.
  [[maybe_unused]] const bool fused_box =  // unused on the scalar target
      HWY_TARGET != HWY_SCALAR &&
      ((job.box_chroma && (job.box_k == 2 || job.box_k == 4)) || job.pair_box != 0);
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
      if (job.pair_box == 4) {
        BoxRowFused<4, 4>(job, r, out_r);
      } else if (job.pair_box == 6) {
        BoxRowFused<2, 6>(job, r, out_r);
      } else if (job.box_k == 2) {
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

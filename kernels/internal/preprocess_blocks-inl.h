// The blocks path of the preprocess engine (see the comment below).
// A fragment of kernels/preprocess_simd.cpp (not a header of its own): it is
// included there once per SIMD target, inside neat::detail::HWY_NAMESPACE,
// after the types it uses (Scratch, RowTaps, DF and the other tags). The
// guard toggles with each target, as Highway's own -inl.h files do.
#if defined(NEAT_KERNELS_INTERNAL_PREPROCESS_BLOCKS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEAT_KERNELS_INTERNAL_PREPROCESS_BLOCKS_INL_H_
#undef NEAT_KERNELS_INTERNAL_PREPROCESS_BLOCKS_INL_H_
#else
#define NEAT_KERNELS_INTERNAL_PREPROCESS_BLOCKS_INL_H_
#endif

// ---- the blocks path --------------------------------------------------------
// Horizontal taps first, straight from the 8-bit row: each 16-byte block of a
// vector is loaded from its own base, a byte shuffle places the two samples of
// a tap pair as 16-bit lanes and a 16-bit multiply-add (weights in 1/32767)
// sums them into one 32-bit lane per output. The row of sums (levels minus
// the plane's offset, x 32767; nearest: whole levels, as integers) is cached
// per source row, so output rows that share source rows resample them once;
// the final pass sums the cached rows its vertical taps name.

// The cached rows hold (level - offset) x 32767 (luma: y_offset, chroma: 128),
// so that the final pass need not subtract; nearest's hold whole levels.
constexpr std::int32_t kOne = 32767;

// Whether this target takes the wide blocks (ResampleAxis::wide_base) where
// the 16-byte blocks do not fit: x86 without VBMI, whose byte shuffles work
// within 16 bytes and whose gathers are slow (AVX2's microcoded on AMD; on
// Intel, AVX2's and AVX-512's slowed by the Gather Data Sampling fix; SSE4's
// and SSSE3's four loads and inserts).
constexpr bool kWideBlocks = HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 ||
                             HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3;

#if HWY_TARGET == HWY_SCALAR
// One lane: the same tables, read one output at a time.
template <int C>
void HorizontalBlocks(const ResampleAxis& ax, const std::uint8_t* row, const int (&channel)[C],
                      float* const (&out)[C], const std::int32_t (&offset)[C], bool raw,
                      std::ptrdiff_t = 0) {
  for (std::int64_t o = 0; o < ax.count; ++o) {
    const std::int64_t b = o / 4, i = o % 4;
    // Where the shuffle indices count from (see build_blocks).
    const std::int64_t origin = ax.gather ? ax.lane_base[static_cast<std::size_t>(o)] - 4 * i
                                          : ax.block_base[static_cast<std::size_t>(b)];
    for (int c = 0; c < C; ++c) {
      std::int32_t acc = offset[c];
      for (int p = 0; p < ax.passes; ++p) {
        const auto at = static_cast<std::size_t>(p * ax.block_count + b);
        for (int half = 0; half < 2; ++half) {
          const auto k = static_cast<std::size_t>(2 * i + half);
          const std::uint8_t idx = ax.shuffle[channel[c]][at * 16 + 2 * k];
          if (idx != 0x80) acc += row[origin + idx] * ax.pair_weight[at * 8 + k];
        }
      }
      if (raw) {
        std::memcpy(&out[c][o], &acc, sizeof acc);
      } else {
        out[c][o] = static_cast<float>(acc);
      }
    }
  }
}
template <int C>
void HorizontalBlocksPair(const ResampleAxis& ax, const std::uint8_t* row0,
                          const std::uint8_t* row1, const int (&channel)[C],
                          float* const (&out0)[C], float* const (&out1)[C],
                          const std::int32_t (&offset)[C], bool raw, std::ptrdiff_t = 0) {
  HorizontalBlocks<C>(ax, row0, channel, out0, offset, raw);
  HorizontalBlocks<C>(ax, row1, channel, out1, offset, raw);
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

// A vector of sums into a cached row: as floats, or (raw: nearest's whole
// levels) their 32-bit integers as they are.
HWY_INLINE void StoreSums(hn::Vec<DI> sums, bool raw, float* out) {
  const DF df;
  hn::StoreU(raw ? hn::BitCast(df, sums) : hn::ConvertTo(df, sums), df, out);
}

// Without VBMI: rows of large ratios (past the wide blocks' 32 bytes), and
// rows of sums, output by output;
// with it, rows of more taps than the permutes take well.
#include "kernels/internal/preprocess_by_output-inl.h"
// The VBMI permutes (ResampleAxis::windows, pick patterns).
#include "kernels/internal/preprocess_permutes-inl.h"

// Outputs [0, ax.count) of R rows (padded to whole vectors) for C channels
// of each: out[k * C + c] from shuffle[channel[c]] of rows[k]. Two rows (a
// bilinear output row's two fresh source rows) share each vector's block
// bases, shuffles and weights (1080p -> 512 letterboxed bilinear: 0.111 ->
// 0.104 ms; 720p -> 416 letterboxed: 5%; same-session A/B).
// The 16-byte blocks or a gather only: the caller takes the permutes.
// `row_weights` (R = 2, not raw): the two rows' sums weighed by
// row_weights[0] and [1] (adding up to 1) into out[c] alone (bilinear's two
// rows down); `ahead`: how far on the next output row's rows lie (0: none
// to prefetch).
template <int C, int R>
void HorizontalBlocksRows(const ResampleAxis& ax, const std::uint8_t* const* rows,
                          const int (&channel)[C], float* const* out,
                          const std::int32_t (&offset)[C], bool raw,
                          const float* row_weights = nullptr, std::ptrdiff_t ahead = 0) {
  const DF df;
  const DI di;
  const DB db;
  const DW dw;
  const bool weighed = R == 2 && row_weights != nullptr;
  // The loop with the loader and the pass count fixed (1: bilinear, nearest;
  // 2 and 3: area, below).
  auto run = [&](auto load_c, auto passes_c, auto pick, auto weighed_c, auto raw_c) {
    // How each vector's bytes load: 0 the 16-byte blocks, 1 a gather, 2
    // the wide blocks (two 16-byte windows each: ResampleAxis::wide_base),
    // 3 one 64-byte span permuted (VBMI: ResampleAxis::pair_span_base).
    constexpr int kLoad = static_cast<int>(decltype(load_c)::value);
    constexpr bool gather = kLoad == 1;
    constexpr int kPasses = decltype(passes_c)::value;  // 0: ax.passes, in a loop
    constexpr bool kWeighed = decltype(weighed_c)::value;
    constexpr bool kRaw = decltype(raw_c)::value;
    // Everything the loop reads but its stores, in locals: the stores (which
    // may alias anything) would make the compiler load them again per vector.
    // So are what the lambda would read through its captures where it is
    // not inlined (AVX2: the weights down and `ahead`, reloaded per
    // vector). On Zen 5, time locals / captures: AVX2 720p I420 -> 416
    // letterboxed bilinear 0.81, NV12 0.87, 1080p -> 416 0.72, 4K -> 416
    // 0.81; SSE4 0.73-0.80; AVX-512 without VBMI 0.87-0.91.
    const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
    const std::int64_t per_vector = lanes / 4;  // blocks
    // A pick (one tap of weight 1: nearest, bilinear at an odd ratio) needs
    // no multiply: the shuffle leaves each sample alone in its 32-bit lane,
    // kept as it is (raw) or converted, times 32767, offset added.
    const VF one = hn::Set(df, static_cast<float>(kOne));
    const VF w_first = hn::Set(df, kWeighed ? row_weights[0] : 0.f);
    const VF w_next = hn::Set(df, kWeighed ? row_weights[1] : 0.f);
    const std::ptrdiff_t fetch_ahead = ahead;
    const std::uint8_t* shuffle[C];
    const std::uint8_t* shuffle_high[C];  // wide: the second window's
    const std::uint8_t* row[R];
    float* dst[R][C];
    hn::Vec<DI> start[C];
    VF start_f[C];
    for (int c = 0; c < C; ++c) {
      shuffle[c] = kLoad == 2   ? ax.shuffle_wide[0][channel[c]].data()
                   : kLoad == 3 ? ax.pair_span_permute[channel[c]].data()
                                : ax.shuffle[channel[c]].data();
      shuffle_high[c] = kLoad == 2 ? ax.shuffle_wide[1][channel[c]].data() : nullptr;
      start[c] = hn::Set(di, offset[c]);
      start_f[c] = hn::Set(df, static_cast<float>(offset[c]));
    }
    for (int k = 0; k < R; ++k) {
      row[k] = rows[k];
      for (int c = 0; c < C; ++c)
        dst[k][c] = out[k * C + c];
    }
    const std::int16_t* const weights = ax.pair_weight.data();
    const std::int32_t* const block_base = kLoad == 2 ? ax.wide_base.data() : ax.block_base.data();
    const std::int32_t* const lane_base = ax.lane_base.data();
    [[maybe_unused]] const std::int32_t* const span_base = ax.pair_span_base.data();
    const std::int64_t count = ax.count, block_count = ax.block_count;
    const int passes = kPasses != 0 ? kPasses : ax.passes;
    for (std::int64_t o = 0, b = 0; o < count; o += lanes, b += per_vector) {
      hn::Vec<DB> bytes[R];
      [[maybe_unused]] hn::Vec<DB> high[R];  // wide: the second window
      // The samples `idx` picks (wide: ORed with those of the second
      // window by the table at idx_high).
      auto look = [&](int k, hn::Vec<DB> idx, [[maybe_unused]] const std::uint8_t* idx_high) {
        if constexpr (kLoad == 2) {
          return hn::Or(hn::TableLookupBytesOr0(bytes[k], idx),
                        hn::TableLookupBytesOr0(high[k], hn::LoadU(db, idx_high)));
#if HWY_TARGET == HWY_AVX3_DL
        } else if constexpr (kLoad == 3) {
          return hn::Vec<DB>{
              _mm512_maskz_permutexvar_epi8(0x5555555555555555ull, idx.raw, bytes[k].raw)};
#endif
        } else {
          return hn::TableLookupBytesOr0(bytes[k], idx);
        }
      };
      if constexpr (kLoad == 2) {
        for (int k = 0; k < R; ++k) {
          bytes[k] = LoadBlocks(db, row[k], block_base + b);
          high[k] = LoadBlocks(db, row[k] + 16, block_base + b);
        }
      } else if constexpr (kLoad == 3) {
        const std::int32_t at = span_base[o / 16];
        for (int k = 0; k < R; ++k)
          bytes[k] = hn::LoadU(db, row[k] + at);
      } else if constexpr (gather) {
#if HWY_TARGET == HWY_AVX2
        // Eight 4-byte loads, not vpgatherdd: microcoded on AMD (Zen 3: 80%
        // of 4K -> 416 bilinear was its gathers) and slowed by Intel's
        // Gather Data Sampling fix on the cores that run this target. In one
        // process on Zen 3, calls alternated: 4K NV12 -> 416 bilinear 1088 ->
        // 756 us, -> 608 3442 -> 2248, 1080p -> 416 541 -> 432.
        constexpr std::size_t kLanes = hn::MaxLanes(di);
        for (int k = 0; k < R; ++k) {
          alignas(32) std::int32_t words[kLanes];
          for (std::size_t i = 0; i < kLanes; ++i)
            std::memcpy(&words[i], row[k] + lane_base[o + i], 4);
          bytes[k] = hn::BitCast(db, hn::Load(di, words));
        }
#else
        const auto at = hn::LoadU(di, lane_base + o);
        for (int k = 0; k < R; ++k) {
          bytes[k] = hn::BitCast(
              db, hn::GatherOffset(di, reinterpret_cast<const std::int32_t*>(row[k]), at));
        }
#endif
      } else {
        for (int k = 0; k < R; ++k)
          bytes[k] = LoadBlocks(db, row[k], block_base + b);
      }
      // The next output row's rows (ahead: FreshRowsAhead), at this
      // vector's first sample: where rows are skipped the hardware's
      // prefetchers do not see them coming. AVX2 on Zen 3, calls alternated
      // in one process: 4K NV12 -> 416 bilinear 0.79-0.82 of the time (the
      // frame cached or fresh from memory), -> 512 0.83-0.85, -> 608
      // 0.82-0.87; 1080p -> 416 0.89 fresh, 1.00 cached. A second prefetch
      // at the vector's last sample (a gather's 8 outputs span up to 74
      // bytes at 4K -> 416) bought nothing.
      if (fetch_ahead != 0) {
        for (int k = 0; k < R; ++k)
          hwy::Prefetch(row[k] +
                        (kLoad == 3 ? span_base[o / 16]
                         : gather   ? lane_base[o]
                                    : block_base[b]) +
                        fetch_ahead);
      }
      if constexpr (pick) {
        for (int c = 0; c < C; ++c) {
          const auto idx = hn::LoadU(db, shuffle[c] + b * 16);
          const std::uint8_t* idx_high = kLoad == 2 ? shuffle_high[c] + b * 16 : nullptr;
          if constexpr (R == 2 && kWeighed) {  // each row's level x 32767 + offset, weighed
            auto value = [&](int k) {
              const auto level = hn::BitCast(di, look(k, idx, idx_high));
              return hn::MulAdd(hn::ConvertTo(df, level), one, start_f[c]);
            };
            hn::StoreU(hn::MulAdd(value(0), w_first, hn::Mul(value(1), w_next)), df, dst[0][c] + o);
            continue;
          }
          for (int k = 0; k < R; ++k) {
            const auto level = hn::BitCast(di, look(k, idx, idx_high));
            if constexpr (kRaw) {
              hn::StoreU(hn::BitCast(df, level), df, dst[k][c] + o);
            } else {
              hn::StoreU(hn::MulAdd(hn::ConvertTo(df, level), one, start_f[c]), df, dst[k][c] + o);
            }
          }
        }
        continue;
      }
      hn::Vec<DI> acc0[R][C], acc1[R][C];
      for (int k = 0; k < R; ++k) {
        for (int c = 0; c < C; ++c) {
          acc0[k][c] = start[c];
          acc1[k][c] = hn::Zero(di);
        }
      }
      for (int p = 0; p < passes; ++p) {
        const auto at = static_cast<std::size_t>(p * block_count + b);
        const auto w = hn::LoadU(dw, weights + at * 8);
        for (int c = 0; c < C; ++c) {
          const auto idx = hn::LoadU(db, shuffle[c] + at * 16);
          const std::uint8_t* idx_high = kLoad == 2 ? shuffle_high[c] + at * 16 : nullptr;
          for (int k = 0; k < R; ++k) {
            const auto pairs = hn::BitCast(dw, look(k, idx, idx_high));
#if HWY_TARGET == HWY_AVX3_DL
            acc0[k][c] = MulAddPairs<kPasses == 1>(pairs, w, acc0[k][c]);
#else
            acc0[k][c] = hn::ReorderWidenMulAccumulate(di, pairs, w, acc0[k][c], acc1[k][c]);
#endif
          }
        }
      }
      if constexpr (R == 2 && kWeighed) {
        for (int c = 0; c < C; ++c) {
          const VF first = hn::ConvertTo(df, hn::RearrangeToOddPlusEven(acc0[0][c], acc1[0][c]));
          const VF next = hn::ConvertTo(df, hn::RearrangeToOddPlusEven(acc0[1][c], acc1[1][c]));
          hn::StoreU(hn::MulAdd(first, w_first, hn::Mul(next, w_next)), df, dst[0][c] + o);
        }
        continue;
      }
      for (int k = 0; k < R; ++k) {
        for (int c = 0; c < C; ++c)
          StoreSums(hn::RearrangeToOddPlusEven(acc0[k][c], acc1[k][c]), kRaw, dst[k][c] + o);
      }
    }
  };
  using Yes = std::true_type;
  using No = std::false_type;
  const bool pick = ax.picks;
  // The rows' kind too, weighed (two rows into one, never raw), raw or not:
  // 1080p -> 416 to 608 and 720p -> 416 bilinear 0.99 of the time.
  auto kind = [&](auto gather, auto passes_c, auto pick_c) {
    if constexpr (R == 2) {
      if (weighed) return run(gather, passes_c, pick_c, Yes(), No());
    }
    return raw ? run(gather, passes_c, pick_c, No(), Yes())
               : run(gather, passes_c, pick_c, No(), No());
  };
  // Two and three passes (area's 3 to 6 taps: 720p -> 416 to 608, 1080p
  // -> 608 letterboxed) compiled as such, their loop unrolled: AVX2 on Zen
  // 3, calls alternated in one process, 720p NV12 -> 416 and -> 608 area
  // 0.93-0.94 of the time, I420 -> 416 0.96, 1080p -> 608 letterboxed
  // 0.93-0.94, two threads 0.91-0.96; the other rows 0.99-1.00.
  using One = std::integral_constant<int, 1>;
  // A loader with its passes: one (picks, where pick_c says so, take one
  // tap), two or three compiled as such, more in a loop.
  auto by_passes = [&](auto load_c, auto pick_c) {
    if (ax.passes == 1) {
      kind(load_c, One(), pick_c);
    } else if (ax.passes == 2) {
      kind(load_c, std::integral_constant<int, 2>(), No());
    } else if (ax.passes == 3) {
      kind(load_c, std::integral_constant<int, 3>(), No());
    } else {
      kind(load_c, std::integral_constant<int, 0>(), No());
    }
  };
#if HWY_TARGET == HWY_AVX3_DL
  // Where each vector's 16 outputs lie within 64 bytes (TakesSpans): one
  // 64-byte load and one byte permute per row, vector and pass, in place of
  // four 16-byte loads merged and a shuffle (bilinear), or of the permutes
  // out of two 64-byte halves of a 128-byte window (area, whose blocks do
  // not fit). Zen 5, calls alternated in one process, the same bytes out,
  // time spans / before, the frame cached and then 16 MiB written between
  // calls: bilinear 720p I420 -> 416 letterboxed 0.86 and 0.94-0.98, two
  // threads 0.91; NV12 0.92 and 0.96-0.97; 720p I420 -> 608 0.87 and
  // 0.86-0.89; 1080p NV12 -> 512 letterboxed 0.92 and 1.00; 1080p I420 ->
  // 416 letterboxed 0.93 and 0.91-0.95, -> 1280 letterboxed 0.92. Area
  // 720p NV12 -> 416 0.93 and 0.97, I420 0.85 and 0.92, NV12 -> 608 0.90
  // and 0.97, two threads 0.96-0.97. The other rows 0.96-1.01 (session 65).
  if (TakesSpans(ax)) {  // never picks
    by_passes(std::integral_constant<int, 3>(), No());
    return;
  }
#endif
  if (ax.gather) {  // a gather serves one pass only
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_SSE4 || \
    HWY_TARGET == HWY_SSSE3
    // Where a block's taps lie within 32 bytes, two 16-byte windows per
    // block in place of the 4-byte loads (Zen 5, AVX2, calls alternated in
    // one process, time wide / gathered: 4K NV12 -> 416 to 608 bilinear
    // 0.77-0.82, I420 0.83-0.87, nearest 0.78-0.90; 1080p NV12 -> 416 0.89;
    // with 32 MiB written between calls 0.88-0.95; the same bytes out).
    // AVX-512 without VBMI (Skylake-X to Cooper Lake) the same in place of
    // vpgatherdd, which Intel's Gather Data Sampling fix slows on those
    // cores; its target run on Zen 5, whose gathers are not slowed, time
    // wide / gathered: 4K NV12 -> 416 bilinear 0.59, -> 608 letterboxed
    // 0.62, I420 -> 512 0.71, nearest 0.69-0.78; 1080p NV12 -> 416 0.74-0.80;
    // 32 MiB written between calls 0.54-0.80, two threads 0.62-0.75. SSE4
    // and SSSE3 (Tremont's edge boxes) in place of four loads and inserts:
    // SSE4 on Zen 5, 4K NV12 -> 416 bilinear 0.91-0.93, -> 608 letterboxed
    // 0.91, I420 -> 512 0.93, nearest 0.93-0.94; 1080p 0.98-1.01.
    if (!ax.wide_base.empty()) {
      using Wide = std::integral_constant<int, 2>;
      pick ? kind(Wide(), One(), Yes()) : kind(Wide(), One(), No());
      return;
    }
#endif
    pick ? kind(Yes(), One(), Yes()) : kind(Yes(), One(), No());
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_SSE4 || \
    HWY_TARGET == HWY_SSSE3
  } else if (!ax.blocks) {
    // More taps than a gather takes, within 32 bytes a block: the wide
    // blocks pass by pass, in place of the taps output by output (1080p
    // NV12 -> 416 area, its UV bytes 2.3x across: 0.86-0.90 of the time,
    // 0.97-0.98 with 32 MiB written between calls; the other area rows of
    // 720p to 4K into 416 and 608 0.98-1.02; the same bytes out).
    by_passes(std::integral_constant<int, 2>(), No());  // two passes or more
#endif
  } else {
    pick ? by_passes(No(), Yes()) : by_passes(No(), No());
  }
}

// Whether HorizontalBlocks takes the 16-byte blocks, a gather or the 64-byte
// spans (not the VBMI pattern picks or windows).
template <int C>
bool TakesBlocks(const ResampleAxis& ax, const std::int32_t (&offset)[C]) {
#if HWY_TARGET == HWY_AVX3_DL
  return !HasPatternPicks<C>(ax, offset) && !TakesPermutes(ax) && !TakesByOutput(ax);
#else
  (void)offset;
  return ax.blocks || (kWideBlocks && !ax.wide_base.empty());
#endif
}

// Outputs [0, ax.count) of one row (padded to whole vectors) for C channels
// of it: out[c] from shuffle[channel[c]]. `ahead`: as HorizontalBlocksRows',
// by the 16-byte blocks and the gathers (the rows the row cache fills one
// by one: nearest, and bilinear's rows that are not weighed in one pass,
// from about 3x down). AVX2 on Zen 3, calls alternated in one process: 4K
// NV12 -> 416 nearest 0.73 of the time fresh from memory, 0.97 cached; ->
// 512 0.70 and 0.88; -> 608 0.74 and 0.74; I420 and letterboxed 0.70-0.78
// fresh; two threads 0.95-1.00; rows below 3x down and the other paths
// 0.98-1.03 (noise).
template <int C>
void HorizontalBlocks(const ResampleAxis& ax, const std::uint8_t* row, const int (&channel)[C],
                      float* const (&out)[C], const std::int32_t (&offset)[C], bool raw,
                      std::ptrdiff_t ahead = 0) {
#if HWY_TARGET == HWY_AVX3_DL
  // Measured: 16-byte blocks beat the permutes where they apply, picks too
  // (1080p -> 640 bilinear: 2.4x the fastest recipe against 2.1x); the
  // permutes beat a gather by far. Where a vector's 16 outputs fit in 64
  // bytes, one span beats both (TakesSpans, in HorizontalBlocksRows).
  // Picks in a pattern: one permute per vector, its indices in a register
  // (1080p -> 640: 0.197 -> 0.179 ms alone; within noise in the table).
  if (PatternPicks<C>(ax, row, channel, out, offset, raw, ahead)) return;
  if (TakesByOutput(ax)) {
    HorizontalByOutput<C, false>(ax, row, channel, out, offset, raw);
    return;
  }
  // The next row's lines prefetched into the L1 as this row's windows are
  // read (NV12 chroma from about 2x across: 1080p -> 416, 4K -> 416 to 608).
  // Zen 5, calls alternated in one process, time with / without: 1080p NV12
  // -> 416 area 0.87-0.88 (12 frames in turn, from memory), 0.92-0.93 (24
  // MiB written between calls), 1.03 (the frame cached); bilinear 0.87,
  // 0.94, 1.04; 4K -> 608 letterboxed bilinear 0.84, 0.85, 1.02. Into the
  // L2 only (as the two rows weighed take it): 1.03-1.08 of the time from
  // memory, the same cached.
  if (TakesPermutes(ax)) {
    HorizontalPermutes<C>(ax, row, channel, out, offset, raw, ahead, true);
    return;
  }
#elif HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
  // Taps that fit neither the blocks nor a gather nor the wide blocks.
  if (!ax.blocks && ax.wide_base.empty()) {
    HorizontalByOutput<C, false>(ax, row, channel, out, offset, raw);
    return;
  }
#endif
  const std::uint8_t* rows[1] = {row};
  HorizontalBlocksRows<C, 1>(ax, rows, channel, out, offset, raw, nullptr, ahead);
}

// Two rows, each as HorizontalBlocks: in one pass where they take the blocks.
template <int C>
void HorizontalBlocksPair(const ResampleAxis& ax, const std::uint8_t* row0,
                          const std::uint8_t* row1, const int (&channel)[C],
                          float* const (&out0)[C], float* const (&out1)[C],
                          const std::int32_t (&offset)[C], bool raw, std::ptrdiff_t ahead = 0) {
  if (!TakesBlocks<C>(ax, offset)) {
    HorizontalBlocks<C>(ax, row0, channel, out0, offset, raw, ahead);
    HorizontalBlocks<C>(ax, row1, channel, out1, offset, raw, ahead);
    return;
  }
  const std::uint8_t* rows[2] = {row0, row1};
  float* outs[2 * C];
  for (int c = 0; c < C; ++c) {
    outs[c] = out0[c];
    outs[C + c] = out1[c];
  }
  HorizontalBlocksRows<C, 2>(ax, rows, channel, outs, offset, raw, nullptr, ahead);
}

// Two rows of one axis weighed into one row, out[c] = row0's sums x w[0] +
// row1's x w[1] (bilinear's two rows down where no other output row reads
// them: TwoRowsWeighed), in one pass: by the 16-byte blocks, or with VBMI by
// the permutes out of windows (their tables and weights loaded once for both
// rows); either prefetches the next output row's rows (ahead). False where
// neither takes the axis: the caller resamples the rows one by one.
template <int C>
bool HorizontalRowsWeighed(const ResampleAxis& ax, const std::uint8_t* row0,
                           const std::uint8_t* row1, const int (&channel)[C],
                           float* const (&out)[C], const std::int32_t (&offset)[C],
                           const float (&w)[2], std::ptrdiff_t ahead) {
  if (TakesBlocks<C>(ax, offset)) {
    const std::uint8_t* rows[2] = {row0, row1};
    float* outs[2 * C];
    for (int c = 0; c < C; ++c)
      outs[c] = outs[C + c] = out[c];
    HorizontalBlocksRows<C, 2>(ax, rows, channel, outs, offset, false, w, ahead);
    return true;
  }
#if HWY_TARGET == HWY_AVX3_DL
  if (TakesPermutes(ax) && !ax.picks && !HasPatternPicks<C>(ax, offset)) {
    switch (ax.windows) {
      case 1:
        HorizontalPermutesW<C, false, 1>(ax, row0, channel, out, offset, false, row1, w, ahead);
        break;
      case 2:
        HorizontalPermutesW<C, false, 2>(ax, row0, channel, out, offset, false, row1, w, ahead);
        break;
      default:
        HorizontalPermutesW<C, false, 4>(ax, row0, channel, out, offset, false, row1, w, ahead);
    }
    return true;
  }
#endif
  return false;
}
#endif  // HWY_TARGET == HWY_SCALAR

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
// Rows of sums as 16-bit samples, output by output (the word permutes' work),
// where the sums' taps fit no blocks (where they do, the bytes' tables take
// them as two channels, as before).
// Measured against the vertical-first path on AVX2 (in-process A/B): 1080p
// -> 416 area 1.6x faster, letterboxed 1.85x, 1080p -> 320 1.8-2x, 4K ->
// 416 1.3-1.9x; I420 1080p -> 416 2.1-2.3x.
template <int C>
void HorizontalPermutesWords(const ResampleAxis& ax, const std::uint8_t* row,
                             const int (&channel)[C], float* const (&out)[C],
                             const std::int32_t (&offset)[C]) {
  HorizontalByOutput<C, true>(ax, row, channel, out, offset, false);
}
bool SumsAsWords(const ResampleAxis& sx) {
  return !sx.blocks && sx.q_taps > 0;
}
#elif HWY_TARGET != HWY_AVX3_DL  // the words need VBMI's permutes or AVX2
template <int C>
void HorizontalPermutesWords(const ResampleAxis&, const std::uint8_t*, const int (&)[C],
                             float* const (&)[C], const std::int32_t (&)[C]) {}
bool SumsAsWords(const ResampleAxis&) {
  return false;
}
#endif

// Content row r of a plane from the cached rows its vertical taps read
// (fill(src, row) resamples source row src into a slot): the rows and their
// weights, times `scale`. FinishRow sums them as it converts.
// Taps of weight `skip` are left out (SumsRow sums them).
// fill2(src0, row0, src1, row1, rows_ahead), where given, resamples two
// fresh rows at once (bilinear's two taps, when no earlier row had them),
// prefetching rows_ahead rows on (0: as the caller's fill would).
// With pair_ahead (where the pair takes one pass of the blocks), a row that
// brings one fresh row also resamples the next source row with it, if one
// of the next two output rows reads it: where the output rows step less than
// a row down (chroma into 416 to 608 from 720p, luma 720p -> 608), each then
// takes its rows two at a time, the blocks' tables loaded once for both,
// and the two rows after them prefetched. Zen 5, calls alternated in one
// process, time with / without: 720p NV12 -> 416 area 0.90-0.94 (the
// frame cached or 32 MiB written between calls), two threads 0.92; -> 512
// 0.90-0.97; 720p NV12 and I420 -> 608 bilinear 0.93-0.96; 1080p NV12 ->
// 608 bilinear 0.87 and 1080p -> 512 letterboxed 0.85 with 32 MiB between
// calls (0.98-1.01 cached); AVX2 0.87-0.93. Without the prefetch of the
// two rows after, 1.09-1.20 with 32 MiB between calls. I420's chroma rows
// already take U and V in one pass (ChromaRowBlocks), so it stays one row
// at a time: paired, 1.02 (720p -> 416 area).
struct NoPair {};
// Whether two rows of the axis resample in one pass of the blocks
// (HorizontalBlocksPair), their tables loaded once for both.
template <int C>
bool PairsInOnePass(const ResampleAxis& ax, const std::int32_t (&offset)[C]) {
#if HWY_TARGET == HWY_SCALAR
  (void)ax;
  (void)offset;
  return false;
#else
  return TakesBlocks<C>(ax, offset);
#endif
}

// Whether source row src is read by one of the two output rows after r
// (with a weight other than 0 and skip).
inline bool ReadSoon(const ResampleAxis& ay, std::int64_t r, std::int64_t src, float skip) {
  for (std::int64_t q = r + 1; q <= r + 2 && q < ay.count; ++q) {
    const std::int64_t t = src - ay.first[static_cast<std::size_t>(q)];
    if (t < 0 || t >= ay.taps) continue;
    const float w = ay.weight[static_cast<std::size_t>(t * ay.stride + q)];
    if (w != 0.f && w != skip) return true;
  }
  return false;
}
template <class Fill, class Fill2 = NoPair>
void BlocksRow(const ResampleAxis& ay, std::int64_t r, RowCache& cache, float scale, RowTaps& out,
               Fill&& fill, float skip = 0.f, Fill2&& fill2 = NoPair(), bool pair_ahead = true) {
  out.n = 0;
  std::int64_t pending_src = -1;
  float* pending = nullptr;
  for (int t = 0; t < ay.taps; ++t) {
    const float wt = ay.weight[static_cast<std::size_t>(t * ay.stride + r)];
    if (wt == 0.f || wt == skip) continue;
    const std::int64_t src = ay.first[static_cast<std::size_t>(r)] + t;
    bool fresh = false;
    float* h = cache.slot(src, fresh);
    if (fresh) {
      if constexpr (std::is_same_v<std::decay_t<Fill2>, NoPair>) {
        fill(src, h);
      } else if (pending == nullptr) {
        pending_src = src;
        pending = h;
      } else {
        fill2(pending_src, pending, src, h, 0);
        pending = nullptr;
      }
    }
    out.row[out.n] = h;
    out.w[out.n] = wt * scale;
    ++out.n;
  }
  if (pending != nullptr) {
    if constexpr (!std::is_same_v<std::decay_t<Fill2>, NoPair>) {
      const std::int64_t next = pending_src + 1;
      if (pair_ahead && next < ay.source && ReadSoon(ay, r, next, skip)) {
        bool fresh = false;
        float* h = cache.slot(next, fresh);
        if (fresh) {
          fill2(pending_src, pending, next, h, next + 2 < ay.source ? 2 : 0);
          return;
        }
      }
    }
    fill(pending_src, pending);
  }
}

// ---- area with many vertical taps (and bilinear's halves) --------------------
// An output row's source rows of full weight (all but the partial ones at its
// edges; bilinear at an even ratio: its two rows of half weight) are summed
// first, as 16-bit integers (exact), and the sum is resampled once: as 16-bit
// samples by the word permutes (VBMI) or output by output (AVX2, where the
// plane's byte rows fit no blocks: where they do, each row resampled by the
// blocks measured faster, 720p -> 416 area 1.4x), or as a row of bytes whose samples are
// 2 (or, for the UV plane, 4) bytes apart, the same tables resampling its low
// and its high bytes as two channels, the high ones weighed 256 times more.
// The partial rows come from the cache as usual.

bool Usable(const ResampleAxis* ax, const ResampleAxis& x) {
#if HWY_TARGET == HWY_AVX3_DL
  (void)x;
  return ax != nullptr && (ax->blocks || ax->windows > 0 || TakesByOutput(*ax));
#elif HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
  return ax != nullptr && (ax->blocks || (ax->q_taps > 0 && !x.blocks));
#else
  (void)x;
  return ax != nullptr && ax->blocks;
#endif
}

// As BlocksRow, with the rows of full weight summed first (sum(rows, n,
// taps) resamples them and adds its rows to `taps`); false, doing nothing,
// when fewer than min_rows rows have the full weight.
template <class Fill, class Sum>
bool SumsRow(const ResampleAxis& ay, std::int64_t r, RowCache& cache, float scale, RowTaps& out,
             Fill&& fill, Sum&& sum, int min_rows = 3) {
  float full = 0.f;
  for (int t = 0; t < ay.taps; ++t)
    full = std::max(full, ay.weight[static_cast<std::size_t>(t * ay.stride + r)]);
  std::int64_t rows[64];
  int n = 0;
  for (int t = 0; t < ay.taps; ++t) {
    if (ay.weight[static_cast<std::size_t>(t * ay.stride + r)] == full)
      rows[n++] = ay.first[static_cast<std::size_t>(r)] + t;
  }
  if (n < min_rows) return false;
  BlocksRow(ay, r, cache, scale, out, fill, full);  // the partial rows
  sum(rows, n, full * scale, out);
  return true;
}

// Output row r's plan for area's fixed-point vertical pass; null where it
// does not apply (see plan_row_sums).
const RowSumPlan* WeighedPlan(const ResampleAxis& ay, std::int64_t r) {
  if (ay.row_sums.empty()) return nullptr;
  const RowSumPlan& v = ay.row_sums[static_cast<std::size_t>(r)];
  return v.n_full + v.n_part == 0 ? nullptr : &v;
}

// Area's fixed-point vertical pass (ResampleAxis::row_sums) of output row r of a plane,
// resampled once by the word permutes or output by output (sx: its sums axis) into `out` (C
// channels: U and V of the interleaved plane; sum(plan) sums the rows),
// as the one tap of `taps` (weight `scale` per level of the mean). False,
// doing nothing, where the plan does not apply.
template <int C, class Sum>
bool WeighedRow(const ResampleAxis& ay, const ResampleAxis& sx, std::int64_t r, Scratch& s,
                std::int32_t offset, float scale, const int (&channel)[C], float* const (&out)[C],
                RowTaps& taps, Sum&& sum) {
  const RowSumPlan* plan = SumsAsWords(sx) ? WeighedPlan(ay, r) : nullptr;
  if (plan == nullptr) return false;
  const RowSumPlan& v = *plan;
  const auto start = static_cast<std::int32_t>(std::lround(static_cast<double>(offset) * v.units));
  std::int32_t starts[C];
  for (int c = 0; c < C; ++c)
    starts[c] = start;
  sum(v);
  HorizontalPermutesWords<C>(sx, reinterpret_cast<const std::uint8_t*>(s.sums.data()), channel, out,
                             starts);
  taps.n = 1;
  taps.row[0] = out[0];
  taps.w[0] = scale / v.units;
  return true;
}

// Adds a resampled row of sums to `taps`: its low bytes' row and its high
// bytes' row (weighed 256 times more).
void AddSums(RowTaps& taps, const float* low, const float* high, float weight) {
  taps.row[taps.n] = low;
  taps.w[taps.n++] = weight;
  taps.row[taps.n] = high;
  taps.w[taps.n++] = 256.f * weight;
}

// Whether an axis's picks (k apart; pair: bilinear's two samples) take
// XPickRow rather than the tables' blocks: on every target, now that a pair
// of any pitch is one multiply-add of bytes (PairOf) or, with VBMI, one
// permute. Measured against the blocks (in-process A/B): VBMI pairs of 2 and
// 4 bytes 0.84-0.94 of the time (720p -> 320 and -> 640), of 6 and 12 by
// the permutes (sessions 14 and 20); AVX2 pairs of 6 and 12 0.68-0.91
// (1080p -> 320, 4K -> 320 and -> 640); AVX2 pairs of 2 and 4, which kept
// the blocks until session 32 (masks and shifts: 1.09-1.14), with PairOf:
// 720p NV12 -> 320 0.86-0.96 (the frame cached or fresh), I420 0.93-0.98,
// -> 640 0.95-0.98, two threads 0.93-0.94.
HWY_INLINE bool TakesPicks(int k) {
  return k != 0;
}

// How far on (in bytes) output row r + 1's source rows lie from row r's,
// for prefetching them as row r's are read; where the rows follow on with
// no row skipped (below 3x down or so), one row on: the row after row r's
// last. 0 for the last output row, and where no row follows. One row on in
// place of none (which a Zen 4 host, session 20, measured 2-5% faster with
// the frame cached, 1080p -> 640), on Zen 5 in one process, calls
// alternated, time with / without: 1080p NV12 -> 640 bilinear 0.95-0.99
// (cached, 24 MiB written between calls, four frames in turn), 4K -> 640
// 0.89-0.97, 720p -> 416 and 512 0.98-1.03 (sessions 33-34).
std::ptrdiff_t FreshRowsAhead(const ResampleAxis& ay, std::int64_t r, std::int64_t stride) {
  if (r + 1 >= ay.count) return 0;
  const auto at = static_cast<std::size_t>(r);
  const std::int64_t d = ay.first[at + 1] - ay.first[at];
  if (d > ay.taps) return static_cast<std::ptrdiff_t>(d * stride);
  return ay.first[at] + ay.taps < ay.source ? static_cast<std::ptrdiff_t>(stride) : 0;
}

// Where output row r reads its two source rows in one pass: how far on the
// next output row's two rows lie (0: none, or past the plane), for the
// prefetch of both as these are read.
inline std::ptrdiff_t TwoRowsAhead(const ResampleAxis& ay, std::int64_t r, std::int64_t stride) {
  if (r + 1 >= ay.count) return 0;
  const auto at = static_cast<std::size_t>(r);
  const std::int64_t d = ay.first[at + 1] - ay.first[at];
  if (d < 1 || ay.first[at + 1] + 1 >= ay.source) return 0;
  return static_cast<std::ptrdiff_t>(d * stride);
}

// Whether bilinear's output row r reads two source rows that no other
// output row reads (2 or more rows down: the cache would buy nothing), both
// of non-zero weight: then its rows are resampled and weighed into one row
// in one pass, and w holds their weights (first, first + 1).
bool TwoRowsWeighed(const ResampleAxis& ay, std::int64_t r, float (&w)[2]) {
  if (ay.taps != 2 || 2 * ay.count > ay.source) return false;
  const auto at = static_cast<std::size_t>(r);
  w[0] = ay.weight[at];
  w[1] = ay.weight[static_cast<std::size_t>(ay.stride) + at];
  return w[0] != 0.f && w[1] != 0.f;
}

// Luma row r's one tap down straight from the frame's bytes, where the
// axis across is the identity (job.luma_x_identity) and the row has one tap
// of non-zero weight (the frame as tall as the content too: 720p
// letterboxed into 1280): the final pass converts the bytes as the
// resampled row would have held them (ByteTap), with no row resampled and
// stored between. False, doing nothing, elsewhere.
bool LumaByteTap(const PreprocessJob& job, Scratch& s, std::int64_t r, float scale,
                 std::int32_t offset) {
  const ResampleAxis& ay = *job.luma_y;
  int tap = -1;
  for (int t = 0; t < ay.taps; ++t) {
    if (ay.weight[static_cast<std::size_t>(t * ay.stride + r)] == 0.f) continue;
    if (tap >= 0) return false;
    tap = t;
  }
  if (tap < 0) return false;
  const std::int64_t src = ay.first[static_cast<std::size_t>(r)] + tap;
  RowTaps& taps = s.luma_taps;
  taps.n = 1;
  taps.row[0] = nullptr;
  taps.w[0] = ay.weight[static_cast<std::size_t>(tap * ay.stride + r)] * scale;
  taps.bytes = job.y + src * job.y_stride;
  taps.bytes_end = job.box_w;
  taps.unit = static_cast<float>(kOne);
  taps.offset = static_cast<float>(offset);
  return true;
}

void LumaRowBlocks(const PreprocessJob& job, Scratch& s, std::int64_t r, float scale) {
  const ResampleAxis& ax = *job.luma_x;
  const std::int32_t offset = job.nearest ? 0 : -job.yuv->y_offset * kOne;
  s.luma_taps.bytes = nullptr;
  // Calls alternated in one process, time with / without: 720p NV12 ->
  // 1280 letterboxed bilinear 0.96, area 0.94-0.98, 640x480 -> 640
  // letterboxed 0.96; AVX2 0.91-0.92 (session 44).
  if (job.luma_x_identity && LumaByteTap(job, s, r, scale, offset)) return;
  if (const int k = job.luma_x_box; k != 0) {  // area, an exact box across: no tables
    const std::int64_t x0 = ax.first[0];
    auto fill = [&](std::int64_t src, float* h) {
      XBoxRows<1>(job.y, job.y_stride, &src, 1, x0, k, 1, ax.count, {0}, {h}, job.yuv->y_offset,
                  s.sums.data());
    };
    auto sum = [&](const std::int64_t* rows, int n, float weight, RowTaps& taps) {
      float* row = s.luma_sums.data();
      XBoxRows<1>(job.y, job.y_stride, rows, n, x0, k, 1, ax.count, {0}, {row}, job.yuv->y_offset,
                  s.sums.data());
      taps.row[taps.n] = row;
      taps.w[taps.n++] = weight;
    };
    // From 1.6 rows down, all of the row's source rows by the fixed-point
    // vertical pass, then summed across once: in place of the full rows
    // summed and each partial row summed across on its own (4K -> 320 square
    // 0.71-0.87 of the time, 1080p -> 320 0.68-0.71, 4K -> 640 0.72-0.81;
    // in-process A/B, session 11, native and AVX2).
    if (job.luma_sum_x != nullptr && job.weigh_rows) {
      if (const RowSumPlan* v = WeighedPlan(*job.luma_y, r); v != nullptr) {
        float* row = s.luma_sums.data();
        XBoxWeighedRows<1>(job.y, job.y_stride, *v, x0, k, 1, ax.count, {0}, {row},
                           job.yuv->y_offset, s.sums.data());
        s.luma_taps.n = 1;
        s.luma_taps.row[0] = row;
        s.luma_taps.w[0] = scale / v->units;
        return;
      }
    }
    if (job.luma_sum_x != nullptr &&
        SumsRow(*job.luma_y, r, s.luma_rows, scale, s.luma_taps, fill, sum)) {
      return;
    }
    BlocksRow(*job.luma_y, r, s.luma_rows, scale, s.luma_taps, fill);
    return;
  }
  const bool picks = TakesPicks(job.luma_x_pick);
  auto fill = [&](std::int64_t src, float* h) {
    // Picks k apart (nearest; bilinear at odd ratios, pairs at even ones): no tables.
    if (picks) {
      XPickRow<1>(job.y + src * job.y_stride + ax.first[0], ax.source - ax.first[0],
                  job.luma_x_pick, 1, ax.count, {0}, {h}, job.nearest, offset, job.luma_x_pair,
                  FreshRowsAhead(*job.luma_y, r, job.y_stride));
      return;
    }
    HorizontalBlocks<1>(ax, job.y + src * job.y_stride, {0}, {h}, {offset}, job.nearest,
                        FreshRowsAhead(*job.luma_y, r, job.y_stride));
  };
  // Bilinear at an even ratio both ways, 2 or 4 samples across (720p -> 320
  // letterboxed): each output's two rows of half weight and two samples of
  // half weight summed straight from the bytes, in one pass (PairSums), in
  // place of the two rows summed as words and the sums resampled (VBMI) or
  // each row resampled by the tables (AVX2): the exact sums, where those
  // weighed them in 1/32767. 720p NV12 -> 320 letterboxed 0.69-0.71 of the
  // time, I420 0.67-0.70; AVX2 0.74-0.76 and 0.77-0.89 (in-process A/B).
  // With VBMI, pairs of 6 bytes too (1080p -> 320 letterboxed, 4K -> 640
  // letterboxed): both rows' pairs by one pass of the permutes
  // (PairPermutes): 1080p NV12 -> 320 letterboxed 0.68-0.73, I420
  // 0.71-0.73, 4K -> 640 letterboxed 0.94. Without VBMI, PairSums takes them
  // as three-way loads of 16-bit elements (AVX2: 0.76-0.89, 0.85-0.89).
  // With VBMI, pairs of 12 bytes too (4K -> 320 letterboxed, UV as well: see
  // ChromaRowBlocks), by two permutes of three registers, in place of the
  // two rows summed as words across the whole row and the sums resampled:
  // with the next row prefetched (PermutePicks' ahead), 4K NV12 -> 320
  // letterboxed 0.84-0.85 of the time, I420 0.81-0.86 (the frame in the
  // cache), 0.73-0.78 (fresh from memory); in-process A/B, session 20.
  // Without VBMI, PairSums takes 12 as three-way loads of 32-bit elements.
  const bool permutes = job.luma_x_pick == 6 || job.luma_x_pick == 12;
  if (job.luma_sum_x != nullptr && !job.weigh_rows && job.luma_x_pair &&
      (job.luma_x_pick <= 4 || permutes)) {
    auto pairs = [&](const std::int64_t* rows, int n, float weight, RowTaps& taps) {
      const std::int64_t x0 = ax.first[0];
      const std::uint8_t* from[4];  // n = 2 (halves)
      for (int t = 0; t < n; ++t)
        from[t] = job.y + rows[t] * job.y_stride + x0;
      float* low = s.luma_sums.data();
#if HWY_TARGET == HWY_AVX3_DL
      if (permutes && n == 2) {
        const std::ptrdiff_t ahead = FreshRowsAhead(*job.luma_y, r, job.y_stride);
        PairPermutes<1>(from[0], from[1], ax.source - x0, job.luma_x_pick, 1, ax.count, {0}, {low},
                        n * offset, ahead);
        taps.row[taps.n] = low;
        taps.w[taps.n++] = weight;
        return;
      }
#endif
      PairSums(from, n, ax.source - x0, job.luma_x_pick, 1, 0, ax.count,
               static_cast<float>(2 * n * job.yuv->y_offset), kOne / 2.f, low,
               FreshRowsAhead(*job.luma_y, r, job.y_stride));
      taps.row[taps.n] = low;
      taps.w[taps.n++] = weight;
    };
    if (SumsRow(*job.luma_y, r, s.luma_rows, scale, s.luma_taps, fill, pairs, 2)) return;
  }
  if (Usable(job.luma_sum_x, *job.luma_x)) {
    const ResampleAxis& sx = *job.luma_sum_x;
    if (job.weigh_rows &&
        WeighedRow<1>(*job.luma_y, sx, r, s, offset, scale, {0}, {s.luma_sums.data()}, s.luma_taps,
                      [&](const RowSumPlan& v) {
                        VerticalSumRow(job.y, job.y_stride, v, ax.source, s.sums.data());
                      })) {
      return;
    }
    auto sum = [&](const std::int64_t* rows, int n, float weight, RowTaps& taps) {
      SumRows(job.y, job.y_stride, rows, n, ax.source, s.sums.data());
      float* low = s.luma_sums.data();
      float* high = low + sx.stride;
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(s.sums.data());
      if (SumsAsWords(sx)) {  // one row of whole sums
        HorizontalPermutesWords<1>(sx, bytes, {0}, {low}, {n * offset});
        taps.row[taps.n] = low;
        taps.w[taps.n++] = weight;
        return;
      }
      HorizontalBlocks<2>(sx, bytes, {0, 1}, {low, high}, {n * offset, 0}, false);
      AddSums(taps, low, high, weight);
    };
    // As words, two rows summed cost less than two resampled (bilinear at an
    // even ratio: 1080p -> 320 letterboxed, 0.059 -> 0.054 ms); as two byte
    // channels, about the same.
    if (SumsRow(*job.luma_y, r, s.luma_rows, scale, s.luma_taps, fill, sum,
                SumsAsWords(sx) ? 2 : 3)) {
      return;
    }
  }
  // Bilinear's pairs across (an even ratio) at 2 or more rows down, where no
  // source row serves two output rows and caching them buys nothing: both
  // rows' pairs taken and weighed in one pass into one row (PickPairsTwoRows),
  // in place of each row picked into the cache and the two summed by the
  // final pass. In the table (one build, the path switched off and on, two
  // runs each): 720p -> 320 0.120 against 0.137-0.143 ms (NV12), 0.111-0.125
  // against 0.129-0.148 (I420); 1080p -> 320 0.163-0.169 against 0.178-0.195
  // (NV12), 0.154 against 0.164-0.193 (I420). 4K -> 640 0.88 of the time,
  // AVX2 0.93 (in-process A/B).
  float w[2];
  if (picks && job.luma_x_pair && TwoRowsWeighed(*job.luma_y, r, w)) {
    const std::int64_t src = job.luma_y->first[static_cast<std::size_t>(r)], x0 = ax.first[0];
    float* row = s.fused.get();
    PickPairsTwoRows<1>(job.y + src * job.y_stride + x0, job.y + (src + 1) * job.y_stride + x0,
                        ax.source - x0, job.luma_x_pick, 1, ax.count, {0}, {row}, offset, w,
                        FreshRowsAhead(*job.luma_y, r, job.y_stride));
    s.luma_taps.n = 1;
    s.luma_taps.row[0] = row;
    s.luma_taps.w[0] = scale;
    return;
  }
#if HWY_TARGET == HWY_AVX3_DL
  // Bilinear picks 3 apart (an odd ratio across: 1080p -> 640, 4K -> 1280)
  // between two rows of non-zero weight: both rows picked by the permutes and
  // weighed in one pass into one row (PermutePicks' two rows weighed), in
  // place of each row picked into the cache and the two summed by the final
  // pass, though at 1.7x down most rows serve two output rows and are picked
  // twice: the cache's row stores and the final pass's second luma row cost
  // more than the second picks. The next output row's rows prefetched
  // (TwoRowsAhead). Zen 5, calls alternated in one process, time with /
  // without: 1080p NV12 -> 640 0.89 (frame cached), 0.84 (12 frames in turn,
  // from memory), 0.91 (24 MiB written between calls); I420 0.88, 0.84, 0.93;
  // 4K -> 1280 0.92, 0.97, 0.91. With FreshRowsAhead's prefetch (the one row
  // after the two) in place of TwoRowsAhead, from memory 1.02-1.09.
  if (picks && !job.luma_x_pair && !job.nearest && job.luma_x_pick == 3 && job.luma_y->taps == 2) {
    const auto at = static_cast<std::size_t>(r);
    w[0] = job.luma_y->weight[at];
    w[1] = job.luma_y->weight[static_cast<std::size_t>(job.luma_y->stride) + at];
    if (w[0] != 0.f && w[1] != 0.f) {
      const std::int64_t src = job.luma_y->first[at], x0 = ax.first[0];
      float* row = s.fused.get();
      const __m512i base =
          _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                             _mm512_set1_epi32(3));
      PermutePicks<1>(job.y + src * job.y_stride + x0, ax.source - x0, 48, base, {0}, ax.count,
                      {row}, false, offset, 0, job.y + (src + 1) * job.y_stride + x0, w,
                      TwoRowsAhead(*job.luma_y, r, job.y_stride));
      s.luma_taps.n = 1;
      s.luma_taps.row[0] = row;
      s.luma_taps.w[0] = scale;
      return;
    }
  }
#endif
  if (picks) {
    BlocksRow(*job.luma_y, r, s.luma_rows, scale, s.luma_taps, fill);
    return;
  }
#if HWY_TARGET != HWY_SCALAR
  // The same with the tables' blocks (1080p -> 416 and 512, square and
  // letterboxed; 720p -> 416 to 608 letterboxed), chroma too where its rows
  // are 2 or more down: both rows in one pass of the blocks, as before, now
  // weighed into one row rather than stored as two. In one process (calls
  // alternated, caches polluted between them): 1080p I420 -> 416 letterboxed
  // 0.87, -> 608 letterboxed 0.88, 1080p NV12 -> 416 0.93, 720p and 1080p
  // into 512 and 416 letterboxed 0.95-0.97. In the table (one build, the path
  // off and on, two runs each, 24 rows from 720p and 1080p into 416, 512 and
  // 608): rows at 2x the fastest recipe 6.5 -> 19 of 24.
  // With VBMI, the rows the permutes take (4K -> 416 to 608, which no blocks
  // fit) the same way, the next row's rows prefetched, in place of each row
  // resampled into the cache and the two summed by the final pass: 4K NV12
  // -> 416 0.91 of the time, -> 512 0.85, letterboxed 0.93; I420 -> 416
  // letterboxed 0.93, -> 608 0.93 (the frame in the cache); 0.77-0.84 fresh
  // from memory (in-process A/B, session 21).
  if (!job.nearest && TwoRowsWeighed(*job.luma_y, r, w)) {
    const std::int64_t src = job.luma_y->first[static_cast<std::size_t>(r)];
    float* row = s.fused.get();
    if (HorizontalRowsWeighed<1>(ax, job.y + src * job.y_stride, job.y + (src + 1) * job.y_stride,
                                 {0}, {row}, {offset}, w,
                                 FreshRowsAhead(*job.luma_y, r, job.y_stride))) {
      s.luma_taps.n = 1;
      s.luma_taps.row[0] = row;
      s.luma_taps.w[0] = scale;
      return;
    }
  }
#endif
  auto fill2 = [&](std::int64_t src0, float* h0, std::int64_t src1, float* h1, int rows_ahead) {
    HorizontalBlocksPair<1>(
        ax, job.y + src0 * job.y_stride, job.y + src1 * job.y_stride, {0}, {h0}, {h1}, {offset},
        job.nearest,
        rows_ahead != 0 ? rows_ahead * job.y_stride : FreshRowsAhead(*job.luma_y, r, job.y_stride));
  };
  BlocksRow(*job.luma_y, r, s.luma_rows, scale, s.luma_taps, fill, 0.f, fill2,
            PairsInOnePass<1>(ax, {offset}));
}

// Chroma row r's taps (U; V follows U in each slot, `width` floats on): its
// rows of full weight summed first when `sums` allows and there are at least
// min_rows of them, else row by row.
template <class Fill, class Sum, class Fill2 = NoPair>
void ChromaTaps(const PreprocessJob& job, Scratch& s, std::int64_t r, float scale,
                std::int64_t width, bool sums, int min_rows, Fill&& fill, Sum&& sum,
                Fill2&& fill2 = NoPair()) {
  if (!(sums && SumsRow(*job.chroma_y, r, s.chroma_rows, scale, s.u_taps, fill, sum, min_rows))) {
    BlocksRow(
        *job.chroma_y, r, s.chroma_rows, scale, s.u_taps, fill, 0.f, fill2,
        job.interleaved_uv && PairsInOnePass<2>(*job.chroma_x, {job.nearest ? 0 : -128 * kOne,
                                                                job.nearest ? 0 : -128 * kOne}));
  }
  s.v_taps.n = s.u_taps.n;  // its taps only (a whole RowTaps is 776 bytes)
  for (int t = 0; t < s.u_taps.n; ++t) {
    s.v_taps.row[t] = s.u_taps.row[t] + width;
    s.v_taps.w[t] = s.u_taps.w[t];
  }
  s.chroma_row = r;
}

// Chroma rows of area whose horizontal axis is an exact box: U, then V.
void ChromaRowXBox(const PreprocessJob& job, Scratch& s, std::int64_t r, float scale) {
  const ResampleAxis& ax = *job.chroma_x;
  const std::int64_t width = ax.stride, x0 = ax.first[0];
  const int k = job.chroma_x_box;
  const int u = job.u < job.v ? 0 : 1;
  // n rows into U at out, V at out + width.
  auto rows_into = [&](const std::int64_t* rows, int n, float* out) {
    if (job.interleaved_uv) {
      XBoxRows<2>(std::min(job.u, job.v), job.u_stride, rows, n, 2 * x0, k, 2, ax.count, {u, 1 - u},
                  {out, out + width}, 128, s.sums.data());
    } else {
      XBoxRows<1>(job.u, job.u_stride, rows, n, x0, k, 1, ax.count, {0}, {out}, 128, s.sums.data());
      XBoxRows<1>(job.v, job.v_stride, rows, n, x0, k, 1, ax.count, {0}, {out + width}, 128,
                  s.sums.data());
    }
  };
  auto fill = [&](std::int64_t src, float* h) { rows_into(&src, 1, h); };
  auto sum = [&](const std::int64_t* rows, int n, float weight, RowTaps& taps) {
    float* row = s.chroma_sums.data();
    rows_into(rows, n, row);
    taps.row[taps.n] = row;
    taps.w[taps.n++] = weight;
  };
  const RowSumPlan* v =
      job.chroma_sum_x != nullptr && job.weigh_rows ? WeighedPlan(*job.chroma_y, r) : nullptr;
  if (v != nullptr) {  // U, then V: one tap each
    float* out = s.chroma_sums.data();
    if (job.interleaved_uv) {
      XBoxWeighedRows<2>(std::min(job.u, job.v), job.u_stride, *v, 2 * x0, k, 2, ax.count,
                         {u, 1 - u}, {out, out + width}, 128, s.sums.data());
    } else {
      XBoxWeighedRows<1>(job.u, job.u_stride, *v, x0, k, 1, ax.count, {0}, {out}, 128,
                         s.sums.data());
      XBoxWeighedRows<1>(job.v, job.v_stride, *v, x0, k, 1, ax.count, {0}, {out + width}, 128,
                         s.sums.data());
    }
    s.u_taps.n = s.v_taps.n = 1;
    s.u_taps.row[0] = out;
    s.v_taps.row[0] = out + width;
    s.u_taps.w[0] = s.v_taps.w[0] = scale / v->units;
    s.chroma_row = r;
    return;
  }
  ChromaTaps(job, s, r, scale, width, job.chroma_sum_x != nullptr, 3, fill, sum);
}

// Chroma row r by area's fixed-point vertical pass (WeighedRow): U, then V
// `width` floats on, as ChromaTaps leaves them.
bool ChromaWeighedRow(const PreprocessJob& job, Scratch& s, std::int64_t r, float scale) {
  const ResampleAxis& ay = *job.chroma_y;
  const ResampleAxis& sx = *job.chroma_sum_x;
  const std::int64_t width = job.chroma_x->stride, bytes = job.chroma_x->source;
  const std::int32_t offset = -128 * kOne;
  float* const low = s.chroma_sums.data();
  bool done = false;
  if (job.interleaved_uv) {
    const std::uint8_t* uv = std::min(job.u, job.v);
    const int u = job.u < job.v ? 0 : 1;  // U is the low byte of each pair (NV12)
    done = WeighedRow<2>(ay, sx, r, s, offset, scale, {2 * u, 2 - 2 * u}, {low, low + width},
                         s.u_taps, [&](const RowSumPlan& v) {
                           VerticalSumRow(uv, job.u_stride, v, 2 * bytes, s.sums.data());
                         });
  } else {  // the same plan for both planes
    done = WeighedRow<1>(ay, sx, r, s, offset, scale, {0}, {low}, s.u_taps,
                         [&](const RowSumPlan& v) {
                           VerticalSumRow(job.u, job.u_stride, v, bytes, s.sums.data());
                         }) &&
           WeighedRow<1>(ay, sx, r, s, offset, scale, {0}, {low + width}, s.v_taps,
                         [&](const RowSumPlan& v) {
                           VerticalSumRow(job.v, job.v_stride, v, bytes, s.sums.data());
                         });
  }
  if (!done) return false;
  s.v_taps.n = 1;
  s.v_taps.row[0] = low + width;
  s.v_taps.w[0] = s.u_taps.w[0];
  s.chroma_row = r;
  return true;
}

void ChromaRowBlocks(const PreprocessJob& job, Scratch& s, std::int64_t r, float scale) {
  if (job.chroma_x_box != 0) return ChromaRowXBox(job, s, r, scale);
  const ResampleAxis& ax = *job.chroma_x;
  const std::int64_t width = ax.stride;
  const std::int32_t offset = job.nearest ? 0 : -128 * kOne;
  const bool raw = job.nearest;
  const int u = job.u < job.v ? 0 : 1;  // interleaved: U is the low byte of each pair (NV12)
  const bool picks = TakesPicks(job.chroma_x_pick);
  auto fill = [&](std::int64_t src, float* h) {
    if (const int k = job.chroma_x_pick; picks) {  // picks k apart: no tables
      const std::int64_t x0 = ax.first[0];
      if (job.interleaved_uv) {
        XPickRow<2>(std::min(job.u, job.v) + src * job.u_stride + 2 * x0, 2 * (ax.source - x0), k,
                    2, ax.count, {u, 1 - u}, {h, h + width}, raw, offset, job.chroma_x_pair,
                    FreshRowsAhead(*job.chroma_y, r, job.u_stride));
      } else {
        XPickRow<1>(job.u + src * job.u_stride + x0, ax.source - x0, k, 1, ax.count, {0}, {h}, raw,
                    offset, job.chroma_x_pair, FreshRowsAhead(*job.chroma_y, r, job.u_stride));
        XPickRow<1>(job.v + src * job.v_stride + x0, ax.source - x0, k, 1, ax.count, {0},
                    {h + width}, raw, offset, job.chroma_x_pair,
                    FreshRowsAhead(*job.chroma_y, r, job.v_stride));
      }
      return;
    }
    if (job.interleaved_uv) {
      HorizontalBlocks<2>(ax, std::min(job.u, job.v) + src * job.u_stride, {u, 1 - u},
                          {h, h + width}, {offset, offset}, raw,
                          FreshRowsAhead(*job.chroma_y, r, job.u_stride));
    } else {
      // U and V share the axis: one pass of the blocks takes both rows
      // (their block bases, shuffles and weights loaded once) where the
      // taps take one pass (bilinear; area near 1x). In one process (caches
      // polluted between calls): 720p I420 -> 416 and 512 bilinear
      // 0.93-0.98 of the time, 1080p -> 416 0.97, letterboxed 0.97; 720p ->
      // 608 area 0.97; AVX2 0.97-1.01. Where the taps take two passes (area
      // 720p -> 416, 1080p -> 416) the pair came out 1.00-1.02 on the hosts
      // before session 42; on Zen 5 with VBMI (session 42, the same way):
      // 720p I420 -> 416 area 0.94-0.96 (cached, 24 MiB between calls, 12
      // frames in turn), letterboxed 0.98-0.99, 1080p -> 416 0.98-0.99,
      // letterboxed 0.99-1.05, 4K -> 416 1.00-1.01. AVX2 keeps one pass only.
      if (ax.passes == 1 || (HWY_TARGET == HWY_AVX3_DL && ax.passes == 2)) {
        // One distance for both rows: the planes' strides alike (as a
        // decoder lays them out), else none.
        HorizontalBlocksPair<1>(
            ax, job.u + src * job.u_stride, job.v + src * job.v_stride, {0}, {h}, {h + width},
            {offset}, raw,
            job.u_stride == job.v_stride ? FreshRowsAhead(*job.chroma_y, r, job.u_stride) : 0);
      } else {
        HorizontalBlocks<1>(ax, job.u + src * job.u_stride, {0}, {h}, {offset}, raw,
                            FreshRowsAhead(*job.chroma_y, r, job.u_stride));
        HorizontalBlocks<1>(ax, job.v + src * job.v_stride, {0}, {h + width}, {offset}, raw,
                            FreshRowsAhead(*job.chroma_y, r, job.v_stride));
      }
    }
  };
  // Sums: U low, V low, U high, V high, so that V follows U as in the cache.
  auto sum = [&](const std::int64_t* rows, int n, float weight, RowTaps& taps) {
    const ResampleAxis& sx = *job.chroma_sum_x;
    float* low = s.chroma_sums.data();
    float* high = low + 2 * width;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(s.sums.data());
    if (SumsAsWords(sx)) {  // one row of whole sums: U, then V
      if (job.interleaved_uv) {
        SumRows(std::min(job.u, job.v), job.u_stride, rows, n, 2 * ax.source, s.sums.data());
        const int uc = 2 * u, vc = 2 - 2 * u;
        HorizontalPermutesWords<2>(sx, bytes, {uc, vc}, {low, low + width},
                                   {n * offset, n * offset});
      } else {
        SumRows(job.u, job.u_stride, rows, n, ax.source, s.sums.data());
        HorizontalPermutesWords<1>(sx, bytes, {0}, {low}, {n * offset});
        SumRows(job.v, job.v_stride, rows, n, ax.source, s.sums.data());
        HorizontalPermutesWords<1>(sx, bytes, {0}, {low + width}, {n * offset});
      }
      taps.row[taps.n] = low;
      taps.w[taps.n++] = weight;
      return;
    }
    if (job.interleaved_uv) {
      SumRows(std::min(job.u, job.v), job.u_stride, rows, n, 2 * ax.source, s.sums.data());
      const int uc = 2 * u, vc = 2 - 2 * u;  // each sample: U low, U high, V low, V high (NV12)
      HorizontalBlocks<4>(sx, bytes, {uc, uc + 1, vc, vc + 1},
                          {low, high, low + width, high + width}, {n * offset, 0, n * offset, 0},
                          false);
    } else {
      SumRows(job.u, job.u_stride, rows, n, ax.source, s.sums.data());
      HorizontalBlocks<2>(sx, bytes, {0, 1}, {low, high}, {n * offset, 0}, false);
      SumRows(job.v, job.v_stride, rows, n, ax.source, s.sums.data());
      HorizontalBlocks<2>(sx, bytes, {0, 1}, {low + width, high + width}, {n * offset, 0}, false);
    }
    AddSums(taps, low, high, weight);
  };
  // As luma's: two rows summed as words (bilinear's halves) beat two rows
  // resampled.
  const bool sums = Usable(job.chroma_sum_x, *job.chroma_x);
  // As luma's: bilinear's pairs both ways, 2, 4, 6 or 12 bytes an output
  // (4K -> 320: I420's 6, NV12's 12), straight from the bytes (PairSums);
  // with VBMI 6 and 12 both rows by the permutes (PairPermutes).
  const int step = job.interleaved_uv ? 2 : 1;
  const int pitch = job.chroma_x_pick * step;
  if (job.chroma_sum_x != nullptr && !job.weigh_rows && job.chroma_x_pair &&
      (pitch <= 4 || pitch == 6 || pitch == 12)) {
    auto pairs = [&](const std::int64_t* rows, int n, float weight, RowTaps& taps) {
      const std::int64_t x0 = ax.first[0];
      const int g = job.chroma_x_pick * step;
      const auto bias = static_cast<float>(2 * n * 128);
      float* low = s.chroma_sums.data();
      const std::uint8_t* from[4];  // n = 2 (halves)
#if HWY_TARGET == HWY_AVX3_DL
      if (g > 4 && n == 2) {
        const std::int32_t off = n * offset;
        const std::ptrdiff_t ahead = FreshRowsAhead(*job.chroma_y, r, job.u_stride);
        if (job.interleaved_uv) {
          const std::uint8_t* uv = std::min(job.u, job.v);
          PairPermutes<2>(uv + rows[0] * job.u_stride + 2 * x0,
                          uv + rows[1] * job.u_stride + 2 * x0, 2 * (ax.source - x0), g, 2,
                          ax.count, {u, 1 - u}, {low, low + width}, off, ahead);
        } else {
          PairPermutes<1>(job.u + rows[0] * job.u_stride + x0, job.u + rows[1] * job.u_stride + x0,
                          ax.source - x0, g, 1, ax.count, {0}, {low}, off, ahead);
          PairPermutes<1>(job.v + rows[0] * job.v_stride + x0, job.v + rows[1] * job.v_stride + x0,
                          ax.source - x0, g, 1, ax.count, {0}, {low + width}, off, ahead);
        }
        taps.row[taps.n] = low;
        taps.w[taps.n++] = weight;
        return;
      }
#endif
      if (job.interleaved_uv) {
        for (int t = 0; t < n; ++t)
          from[t] = std::min(job.u, job.v) + rows[t] * job.u_stride + 2 * x0;
        // U and V: at 12 bytes an output from one load, else a pass each
        // (the second prefetches nothing: the first fetched its lines).
        PairSums(from, n, 2 * (ax.source - x0), g, 2, u, ax.count, bias, kOne / 2.f, low,
                 FreshRowsAhead(*job.chroma_y, r, job.u_stride), low + width);
      } else {
        for (int t = 0; t < n; ++t)
          from[t] = job.u + rows[t] * job.u_stride + x0;
        PairSums(from, n, ax.source - x0, g, 1, 0, ax.count, bias, kOne / 2.f, low,
                 FreshRowsAhead(*job.chroma_y, r, job.u_stride));
        for (int t = 0; t < n; ++t)
          from[t] = job.v + rows[t] * job.v_stride + x0;
        PairSums(from, n, ax.source - x0, g, 1, 0, ax.count, bias, kOne / 2.f, low + width,
                 FreshRowsAhead(*job.chroma_y, r, job.v_stride));
      }
      taps.row[taps.n] = low;
      taps.w[taps.n++] = weight;
    };
    ChromaTaps(job, s, r, scale, width, true, 2, fill, pairs);
    return;
  }
  const int min_rows = sums && SumsAsWords(*job.chroma_sum_x) ? 2 : 3;
  if (picks) {
    ChromaTaps(job, s, r, scale, width, sums, min_rows, fill, sum);
    return;
  }
  if (sums && job.weigh_rows && ChromaWeighedRow(job, s, r, scale)) return;
  auto fill2 = [&](std::int64_t src0, float* h0, std::int64_t src1, float* h1, int rows_ahead) {
    if (job.interleaved_uv) {
      const std::uint8_t* uv = std::min(job.u, job.v);
      HorizontalBlocksPair<2>(ax, uv + src0 * job.u_stride, uv + src1 * job.u_stride, {u, 1 - u},
                              {h0, h0 + width}, {h1, h1 + width}, {offset, offset}, raw,
                              rows_ahead * job.u_stride);
    } else {
      HorizontalBlocksPair<1>(ax, job.u + src0 * job.u_stride, job.u + src1 * job.u_stride, {0},
                              {h0}, {h1}, {offset}, raw, rows_ahead * job.u_stride);
      HorizontalBlocksPair<1>(ax, job.v + src0 * job.v_stride, job.v + src1 * job.v_stride, {0},
                              {h0 + width}, {h1 + width}, {offset}, raw, rows_ahead * job.v_stride);
    }
  };
#if HWY_TARGET != HWY_SCALAR
  float w[2];
  // Both planes' rows weighed in one pass each (LumaRowBlocks' note).
  auto weighed = [&](float* cu, float* cv) {
    const std::int64_t src = job.chroma_y->first[static_cast<std::size_t>(r)];
    if (job.interleaved_uv) {
      const std::uint8_t* uv = std::min(job.u, job.v);
      return HorizontalRowsWeighed<2>(ax, uv + src * job.u_stride, uv + (src + 1) * job.u_stride,
                                      {u, 1 - u}, {cu, cv}, {offset, offset}, w,
                                      FreshRowsAhead(*job.chroma_y, r, job.u_stride));
    }
    // Both planes or neither: the one axis decides.
    return HorizontalRowsWeighed<1>(ax, job.u + src * job.u_stride,
                                    job.u + (src + 1) * job.u_stride, {0}, {cu}, {offset}, w,
                                    FreshRowsAhead(*job.chroma_y, r, job.u_stride)) &&
           HorizontalRowsWeighed<1>(ax, job.v + src * job.v_stride,
                                    job.v + (src + 1) * job.v_stride, {0}, {cv}, {offset}, w,
                                    FreshRowsAhead(*job.chroma_y, r, job.v_stride));
  };
  float* cu = s.fused.get() + s.fused_width;
  float* cv = cu + s.fused_width;
  if (!raw && TwoRowsWeighed(*job.chroma_y, r, w) && weighed(cu, cv)) {
    s.u_taps.n = s.v_taps.n = 1;
    s.u_taps.row[0] = cu;
    s.v_taps.row[0] = cv;
    s.u_taps.w[0] = s.v_taps.w[0] = scale;
    s.chroma_row = r;
    return;
  }
#endif
  ChromaTaps(job, s, r, scale, width, sums, min_rows, fill, sum, fill2);
}

bool UseBlocks(const PreprocessJob& job) {
#if HWY_TARGET == HWY_AVX3_DL
  const bool x =
      (job.luma_x->blocks || job.luma_x->windows > 0 || TakesByOutput(*job.luma_x)) &&
      (job.chroma_x->blocks || job.chroma_x->windows > 0 || TakesByOutput(*job.chroma_x));
#elif HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
  const bool x = (job.luma_x->blocks || (job.luma_x->q_taps > 0)) &&
                 (job.chroma_x->blocks || (job.chroma_x->q_taps > 0));
#else
  // SSE4 and SSSE3 take rows whose blocks fit no 16 bytes by the wide
  // blocks where those fit (no taps output by output there), in place of
  // the float path: SSE4 on Zen 5, calls alternated in one process, 1080p
  // NV12 and I420 -> 416 area 0.26-0.27 of the time, letterboxed 0.39,
  // -> 320 0.30, 4K -> 608 0.41-0.51; 32 MiB written between calls 0.31,
  // two threads 0.27. Values within 0.016 levels of the float path's.
  auto takes = [](const ResampleAxis& a) {
    return a.blocks || (kWideBlocks && !a.wide_base.empty());
  };
  const bool x = takes(*job.luma_x) && takes(*job.chroma_x);
#endif
  return x && job.luma_y->taps < 64 && job.chroma_y->taps < 64;
}

#endif  // NEAT_KERNELS_INTERNAL_PREPROCESS_BLOCKS_INL_H_

// The VBMI byte and word permutes of the blocks path (AVX3_DL only).
// A fragment of kernels/preprocess_simd.cpp (not a header of its own): it is
// included by preprocess_blocks-inl.h, once per SIMD target, inside
// neat::detail::HWY_NAMESPACE, after what it uses (DF, DI, DW, VF, kOne,
// StoreSums; PermutePicks from preprocess_box-inl.h). The guard toggles with
// each target, as Highway's own -inl.h files do.
#if defined(NEAT_KERNELS_INTERNAL_PREPROCESS_PERMUTES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEAT_KERNELS_INTERNAL_PREPROCESS_PERMUTES_INL_H_
#undef NEAT_KERNELS_INTERNAL_PREPROCESS_PERMUTES_INL_H_
#else
#define NEAT_KERNELS_INTERNAL_PREPROCESS_PERMUTES_INL_H_
#endif

#if HWY_TARGET == HWY_AVX3_DL
// acc + the pairwise products of 16-bit lanes (each 32-bit lane: a0 b0 +
// a1 b1). kFused (one pass of taps): one VNNI instruction, where a
// multiply-add and an add take two; over several passes the multiply-adds
// stay independent and only the adds chain, which is faster (area 4K -> 416:
// the fused chain 4% slower). The same sums either way (ours never
// overflow). Highway's runtime check for this target requires AVX512-VNNI,
// but its compile flags name only the 256-bit AVX-VNNI, so the instruction is
// written out.
template <bool kFused>
HWY_INLINE hn::Vec<DI> MulAddPairs(hn::Vec<DW> a, hn::Vec<DW> b, hn::Vec<DI> acc) {
  if constexpr (kFused) {
    __m512i sum = acc.raw;
    asm("vpdpwssd %2, %1, %0" : "+v"(sum) : "v"(a.raw), "v"(b.raw));
    return hn::Vec<DI>{sum};
  } else {
    return hn::Add(acc, hn::Vec<DI>{_mm512_madd_epi16(a.raw, b.raw)});
  }
}

// The byte-permute variant (ResampleAxis::windows): each vector of 16 outputs
// permutes its samples out of one, two or four 128-byte windows (vpermt2b).
//
// kWords: rows of 16-bit sums (area's rows of full weight, summed: at most
// 64 x 255, below 2^15) taken straight as 16-bit samples: the sums are
// permuted out of the same windows as 16-bit lanes (vpermt2w) and weighed in
// one multiply-add per tap pair, where the byte tables would take the low
// and the high bytes as two channels. The word indices are the byte tables'
// (the low byte's channel, `channel`) halved.
// kWindows: ax.windows, known at compile time so that the windows stay in
// registers.
//
// row2 (bytes, not picks, not raw): a second row of the same axis, its sums
// weighed by weights[1] and row's by weights[0] into one row (bilinear's two
// rows down; HorizontalBlocksRows' row_weights). ahead (non-zero): the bytes
// row + ahead on (and row2 + ahead) are prefetched as these are read, as
// PermutePicks' ahead, but into the L2 only (T1): here each vector's permutes
// take long enough that lines fetched a row early are likely gone from the L1
// (4K -> 416 to 608 with the frame in the cache: T1 0.96-1.00 of T0's time,
// 0.97-1.02 of no prefetch's; with frames fresh from memory, 0.83-0.96 of no
// prefetch's; in-process A/B, session 21, Intel Xeon). into_l1: into the L1
// (T0) in place of the L2 (one row at a time: HorizontalBlocks' permutes).
template <int C, bool kWords, int kWindows>
void HorizontalPermutesW(const ResampleAxis& ax, const std::uint8_t* row, const int (&channel)[C],
                         float* const (&out)[C], const std::int32_t (&offset)[C], bool raw,
                         const std::uint8_t* row2 = nullptr, const float* weights = nullptr,
                         std::ptrdiff_t ahead = 0, bool into_l1 = false) {
  const DF df;
  const DI di;
  const DW dw;
  const std::int64_t vectors = ax.stride / 16;
  constexpr int windows = kWindows;
  // Window w fills its share of the vector's bytes, the low byte of each
  // 16-bit lane (the high byte stays 0); words: its share of the 16-bit lanes.
  // Picks (one tap of weight 1) keep only the low byte of each 32-bit lane:
  // the output's sample, alone, an integer level.
  const bool pick = !kWords && ax.picks;
  const std::uint64_t kept = pick ? 0x1111111111111111ull : 0x5555555555555555ull;
  __mmask64 part[4];
  __mmask32 part16[4];
  for (int w = 0; w < windows; ++w) {
    const int bits = 64 / windows;
    const std::uint64_t span = bits == 64 ? ~0ull : ((1ull << bits) - 1) << (bits * w);
    part[w] = static_cast<__mmask64>(kept & span);
    const int bits16 = 32 / windows;
    part16[w] = static_cast<__mmask32>(bits16 == 32 ? ~0u : ((1u << bits16) - 1) << (bits16 * w));
  }
  // The tables in locals: the stores (which may alias anything) would make
  // the compiler load them again per vector.
  const std::uint16_t* word_table[C];
  const std::uint8_t* byte_table[C];
  for (int c = 0; c < C; ++c) {
    word_table[c] = ax.permute_words[channel[c]].data();
    byte_table[c] = ax.permute[channel[c]].data();
  }
  const std::int32_t* const window_base = ax.window_base.data();
  const std::int16_t* const pair_weights = ax.pair_weight.data();
  const std::int64_t count = ax.count, block_count = ax.block_count;
  // The tap pairs of vector v, pass p, channel c, from the loaded windows.
  const __m512i low_byte = _mm512_set1_epi16(0x00FF);
  auto gather_words = [&](const __m512i* lo, const __m512i* hi, std::int64_t at, int c) {
    const __m512i idx = _mm512_loadu_si512(word_table[c] + at * 32);
    __m512i words = _mm512_maskz_permutex2var_epi16(part16[0], lo[0], idx, hi[0]);
    for (int w = 1; w < windows; ++w)
      words = _mm512_or_si512(words, _mm512_maskz_permutex2var_epi16(part16[w], lo[w], idx, hi[w]));
    return words;
  };
  auto gather = [&](const __m512i* lo, const __m512i* hi, std::int64_t at, int c) {
    if constexpr (kWords) {
      return gather_words(lo, hi, at, c);
    } else {
      const __m512i table = _mm512_loadu_si512(byte_table[c] + at * 64);
      __m512i bytes = _mm512_maskz_permutex2var_epi8(part[0], lo[0], table, hi[0]);
      for (int w = 1; w < windows; ++w) {
        bytes =
            _mm512_or_si512(bytes, _mm512_maskz_permutex2var_epi8(part[w], lo[w], table, hi[w]));
      }
      return bytes;
    }
  };
  // UV pairs (the two bytes of each 2-byte sample): one word permute takes
  // both, split into U and V lanes after.
  // (1080p -> 416 letterboxed area: 0.22 -> 0.20 ms; 4K -> 512 area: 7-12%.)
  const bool uv_words = C == 2 && !kWords && ax.step == 2 && channel[0] + channel[C - 1] == 1;
  const VF one = hn::Set(df, static_cast<float>(kOne));
  VF offset_f[C];
  for (int c = 0; c < C; ++c)
    offset_f[c] = hn::Set(df, static_cast<float>(offset[c]));
  // Where accumulator c goes: channel c; with UV words, accumulator 0 holds
  // the low bytes (whichever channel they are), so that no lane is chosen per
  // vector. (Picks take their channels as they are.)
  float* dst[C];
  std::int32_t dst_offset[C];
  const bool by_byte = uv_words && !pick;
  const int low_channel = by_byte && channel[0] != 0 ? 1 : 0;
  for (int c = 0; c < C; ++c) {
    const int from = by_byte ? (c == 0 ? low_channel : 1 - low_channel) : c;
    dst[c] = out[from];
    dst_offset[c] = offset[from];
  }
  // The loop compiled per kind (picks, UV words, one pass of taps), so that
  // no test of them runs per vector; one pass fuses its multiply-add and add
  // (1080p -> 416 letterboxed bilinear, whose chroma rows take a third of the
  // time: 0.085 -> 0.078 ms; area 2-3%; same-session A/B).
  const bool two = row2 != nullptr && weights != nullptr;
  const VF w_first = hn::Set(df, two ? weights[0] : 0.f),
           w_next = hn::Set(df, two ? weights[1] : 0.f);
  auto run_n = [&](auto pick_c, auto uv_c, auto one_pass_c, auto two_c, auto passes_c) {
    constexpr bool kPick = decltype(pick_c)::value;
    constexpr bool kUv = decltype(uv_c)::value;
    constexpr bool kOnePass = decltype(one_pass_c)::value;
    constexpr bool kTwo = decltype(two_c)::value;
    constexpr int kPasses = decltype(passes_c)::value;
    const int passes = kOnePass ? 1 : kPasses != 0 ? kPasses : ax.passes;
    for (std::int64_t v = 0; v * 16 < count; ++v) {
      __m512i lo[4], hi[4], lo2[4], hi2[4];
      for (int w = 0; w < windows; ++w) {
        const std::uint8_t* p = row + window_base[4 * v + w];
        lo[w] = _mm512_loadu_si512(p);
        hi[w] = _mm512_loadu_si512(p + 64);
        if constexpr (kTwo) {
          const std::uint8_t* p2 = row2 + window_base[4 * v + w];
          lo2[w] = _mm512_loadu_si512(p2);
          hi2[w] = _mm512_loadu_si512(p2 + 64);
        }
      }
      if (ahead != 0) {  // this vector's first window to the next one's: each line once
        const std::int64_t from = window_base[4 * v];
        const std::int64_t to =
            (v + 1) * 16 < count ? window_base[4 * v + 4] : window_base[4 * v + windows - 1] + 128;
        for (std::int64_t b = from; b < to; b += 64) {
          if (into_l1) {
            hwy::Prefetch(row + ahead + b);
          } else {
            _mm_prefetch(reinterpret_cast<const char*>(row + ahead + b), _MM_HINT_T1);
          }
          if constexpr (kTwo)
            _mm_prefetch(reinterpret_cast<const char*>(row2 + ahead + b), _MM_HINT_T1);
        }
      }
      if constexpr (kPick) {
        for (int c = 0; c < C; ++c) {
          const hn::Vec<DI> level{gather(lo, hi, v, c)};
          if (raw) {
            hn::StoreU(hn::BitCast(df, level), df, dst[c] + 16 * v);
          } else {
            hn::StoreU(hn::MulAdd(hn::ConvertTo(df, level), one, offset_f[c]), df, dst[c] + 16 * v);
          }
        }
        continue;
      }
      // The sums of one row's windows, offset included.
      auto sums = [&](const __m512i* l, const __m512i* h, hn::Vec<DI>* acc) {
        for (int c = 0; c < C; ++c)
          acc[c] = hn::Set(di, dst_offset[c]);
        for (int p = 0; p < passes; ++p) {
          const auto w8 = hn::LoadU(dw, pair_weights + (p * block_count + 4 * v) * 8);
          if constexpr (kUv) {  // both bytes of each UV pair in one word permute
            const __m512i words = gather_words(l, h, p * vectors + v, 0);
            acc[0] =
                MulAddPairs<kOnePass>(hn::Vec<DW>{_mm512_and_si512(words, low_byte)}, w8, acc[0]);
            acc[1] = MulAddPairs<kOnePass>(hn::Vec<DW>{_mm512_srli_epi16(words, 8)}, w8, acc[1]);
          } else {
            for (int c = 0; c < C; ++c) {
              const hn::Vec<DW> pairs{gather(l, h, p * vectors + v, c)};
              acc[c] = MulAddPairs<kOnePass>(pairs, w8, acc[c]);
            }
          }
        }
      };
      hn::Vec<DI> acc[C];
      sums(lo, hi, acc);
      if constexpr (kTwo) {
        hn::Vec<DI> acc2[C];
        sums(lo2, hi2, acc2);
        for (int c = 0; c < C; ++c) {
          const VF first = hn::ConvertTo(df, acc[c]), next = hn::ConvertTo(df, acc2[c]);
          hn::StoreU(hn::MulAdd(first, w_first, hn::Mul(next, w_next)), df, dst[c] + 16 * v);
        }
      } else {
        for (int c = 0; c < C; ++c)
          StoreSums(acc[c], raw, dst[c] + 16 * v);
      }
    }
  };
  // Two and three passes of taps compiled (passes_c; 0: the axis' count),
  // so that the passes unroll: where they ran as a loop, its count and its
  // pointers took a test and integer work per vector (perf, 1080p -> 416
  // area). Calls alternated in one process (session 43, Zen 5), time with /
  // without: 1080p NV12 -> 416 area 0.954, letterboxed 0.961, -> 512 0.950,
  // 720p -> 416 area 0.956, I420 0.961, 4K -> 416 0.983, 1080p -> 608
  // bilinear 1.000.
  // Four to six passes of the sums' words too (area from about 7x across,
  // 4K -> 416 to 608: luma 8 to 11 taps; four windows a vector there).
  // Session 67, Zen 5, one thread, the frame cached, time with / without:
  // 4K NV12 and I420 -> 416, 512 and 608, square and letterboxed,
  // 0.949-0.984 (null run 1.000-1.003, the order swapped 0.96-0.97); 32
  // MiB written between calls 0.975-0.988; two threads 0.970-0.987.
  auto run = [&](auto a, auto b, auto c, auto d) {
    return run_n(a, b, c, d, std::integral_constant<int, 0>());
  };
  using Two = std::integral_constant<int, 2>;
  using Three = std::integral_constant<int, 3>;
  using Yes = std::true_type;
  using No = std::false_type;
  if constexpr (!kWords) {  // rows of sums take neither picks, UV words nor two rows
    if (pick) return run(Yes(), No(), Yes(), No());
    if (two && !raw) {
      if constexpr (C == 2) {
        if (uv_words)
          return ax.passes == 1 ? run(No(), Yes(), Yes(), Yes()) : run(No(), Yes(), No(), Yes());
      }
      return ax.passes == 1 ? run(No(), No(), Yes(), Yes()) : run(No(), No(), No(), Yes());
    }
    if constexpr (C == 2) {
      if (uv_words) {
        if (ax.passes == 1) return run(No(), Yes(), Yes(), No());
        if (ax.passes == 2) return run_n(No(), Yes(), No(), No(), Two());
        if (ax.passes == 3) return run_n(No(), Yes(), No(), No(), Three());
        return run(No(), Yes(), No(), No());
      }
    }
  }
  if (ax.passes == 1) return run(No(), No(), Yes(), No());
  if (ax.passes == 2) return run_n(No(), No(), No(), No(), Two());
  if (ax.passes == 3) return run_n(No(), No(), No(), No(), Three());
  if constexpr (kWords && kWindows == 4) {
    if (ax.passes == 4) return run_n(No(), No(), No(), No(), std::integral_constant<int, 4>());
    if (ax.passes == 5) return run_n(No(), No(), No(), No(), std::integral_constant<int, 5>());
    if (ax.passes == 6) return run_n(No(), No(), No(), No(), std::integral_constant<int, 6>());
  }
  run(No(), No(), No(), No());
}

template <int C, bool kWords = false>
void HorizontalPermutes(const ResampleAxis& ax, const std::uint8_t* row, const int (&channel)[C],
                        float* const (&out)[C], const std::int32_t (&offset)[C], bool raw,
                        std::ptrdiff_t ahead = 0, bool into_l1 = false) {
  switch (ax.windows) {
    case 1:
      return HorizontalPermutesW<C, kWords, 1>(ax, row, channel, out, offset, raw, nullptr, nullptr,
                                               ahead, into_l1);
    case 2:
      return HorizontalPermutesW<C, kWords, 2>(ax, row, channel, out, offset, raw, nullptr, nullptr,
                                               ahead, into_l1);
    default:
      return HorizontalPermutesW<C, kWords, 4>(ax, row, channel, out, offset, raw, nullptr, nullptr,
                                               ahead, into_l1);
  }
}

// Whether a row takes PatternPicks: picks in a periodic pattern whose vector
// of outputs reads at most 64 bytes (ResampleAxis::pick_span), every channel
// with the same offset.
template <int C>
bool HasPatternPicks(const ResampleAxis& ax, const std::int32_t (&offset)[C]) {
  if (ax.pick_span == 0) return false;
  for (int c = 1; c < C; ++c)
    if (offset[c] != offset[0]) return false;
  return true;
}

// Whether a row takes one 64-byte span per vector (ResampleAxis::
// pair_span_base) in place of the 16-byte blocks, a gather or the permutes
// out of 128-byte windows, where its tables are built: up to 8 taps, each
// vector's 16 outputs within 64 bytes, not picks (bilinear up to about
// 3.9x down; area to about 3x: 720p -> 416 to 608, 1080p and 4K -> 1280).
bool TakesSpans(const ResampleAxis& ax) {
  return !ax.pair_span_base.empty();
}

// Whether a row takes its taps output by output (HorizontalByOutput) in
// place of the permutes: beyond 16 taps (area from 17x across: 1080p or 4K
// -> 224, 112, 64), where the permutes' passes times windows grow with the
// taps, and where no window fits (16-bit sums of UV pairs from 8x); below
// 17 taps the permutes measured faster (1080p -> 224, 10 taps: 1.35x the
// time output by output; 4K -> 416: 1.2x). 4K -> 224 area 0.61-0.65 of the
// time, 1080p -> 64 0.60, 4K -> 128 0.52-0.57 (in-process A/B, session 13).
bool TakesByOutput(const ResampleAxis& ax) {
  return !ax.blocks && ax.q_taps > 0 && (ax.windows == 0 || ax.taps > 16) && !TakesSpans(ax);
}

// Whether a row takes the permutes out of windows rather than the 16-byte
// blocks (which measured faster where both apply), a gather (slower) or
// its taps output by output (above).
bool TakesPermutes(const ResampleAxis& ax) {
  return ax.windows > 0 && (!ax.blocks || ax.gather) && !TakesByOutput(ax) && !TakesSpans(ax);
}

// The pattern's picks: one permute per vector and channel (PermutePicks).
// False, doing nothing, when the row does not take them. ahead: as
// PermutePicks' (the next output row's row prefetched as this one is read:
// NV12 chroma of 1080p -> 640 bilinear, calls alternated in one process,
// 12 frames in turn from memory 0.88 of the time, I420 0.77, 4K -> 1280
// 0.88, two threads 0.93; with the frame cached 0.99-1.01, 4K 0.90).
template <int C>
bool PatternPicks(const ResampleAxis& ax, const std::uint8_t* row, const int (&channel)[C],
                  float* const (&out)[C], const std::int32_t (&offset)[C], bool raw,
                  std::ptrdiff_t ahead = 0) {
  if (!HasPatternPicks<C>(ax, offset)) return false;
  PermutePicks<C>(row, ax.source * ax.step, ax.pick_span, _mm512_loadu_si512(ax.pick_base), channel,
                  ax.count, out, raw, offset[0], 0, nullptr, nullptr, ahead);
  return true;
}

// Rows of 16-bit sums as 16-bit samples (HorizontalPermutes, kWords).
template <int C>
void HorizontalPermutesWords(const ResampleAxis& ax, const std::uint8_t* row,
                             const int (&channel)[C], float* const (&out)[C],
                             const std::int32_t (&offset)[C]) {
  if (TakesByOutput(ax)) {
    HorizontalByOutput<C, true>(ax, row, channel, out, offset, false);
    return;
  }
  HorizontalPermutes<C, true>(ax, row, channel, out, offset, false);
}

// Whether a row of sums takes HorizontalPermutesWords (where HorizontalBlocks
// would take the byte permutes).
bool SumsAsWords(const ResampleAxis& sx) {
  return TakesPermutes(sx) || TakesByOutput(sx);
}
#endif  // HWY_TARGET == HWY_AVX3_DL

#endif  // NEAT_KERNELS_INTERNAL_PREPROCESS_PERMUTES_INL_H_

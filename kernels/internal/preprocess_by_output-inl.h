// The blocks path's horizontal pass output by output, for AVX2 and AVX-512
// without VBMI, and on VBMI for rows of many taps (see the comment below).
// A fragment of kernels/preprocess_simd.cpp (not a header of its own): it is
// included by preprocess_blocks-inl.h, once per SIMD target, inside
// neat::detail::HWY_NAMESPACE, after what it uses (DF, DI, kOne). The guard
// toggles with each target, as Highway's own -inl.h files do.
#if defined(NEAT_KERNELS_INTERNAL_PREPROCESS_BY_OUTPUT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEAT_KERNELS_INTERNAL_PREPROCESS_BY_OUTPUT_INL_H_
#undef NEAT_KERNELS_INTERNAL_PREPROCESS_BY_OUTPUT_INL_H_
#else
#define NEAT_KERNELS_INTERNAL_PREPROCESS_BY_OUTPUT_INL_H_
#endif

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// Where a row's taps fit neither the 16-byte blocks, a gather nor the wide
// blocks' 32 bytes (area from about 7x across: 4K -> 416 reads 9.2 luma
// samples per output), and for
// rows of 16-bit sums (area's rows summed first, the fixed-point vertical
// pass), without the VBMI permutes (with them, beyond 16 taps: area from
// 17x across): each output's samples are loaded from its first (8 elements,
// or one to eight vectors of 16: bytes widened to 16-bit
// lanes, or the sums as they are), weighed with its own rounded weights
// (ResampleAxis::by_output_q, in 1/32767, 0 past its taps) in 16-bit
// multiply-adds, and a tree of horizontal adds sums eight outputs (AVX2
// beyond 16 taps, which took the float path before: 4K -> 224 area 0.36 of
// the time, 1080p -> 64 0.29, session 13). The same
// integer sums as the blocks' (the same weights), and a row of sums
// resampled once where each of its rows was resampled on its own before:
// the vertical pass of area runs first, in integers, as libyuv's box rows do.

// 8 elements at p as 16-bit lanes (128 bits).
template <bool kWords>
HWY_INLINE __m128i Elements8(const std::uint8_t* p) {
  if constexpr (kWords) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
// 16 elements at p as 16-bit lanes (256 bits).
template <bool kWords>
HWY_INLINE __m256i Elements16(const std::uint8_t* p) {
  if constexpr (kWords) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
// 8 weights as 16-bit lanes each followed by a 0 (samples two elements apart).
HWY_INLINE __m256i Spread8(const std::int16_t* q) {
  return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
}

// 4 weights as 16-bit lanes each followed by a 0, in 128 bits.
HWY_INLINE __m128i Spread4(const std::int16_t* q) {
  return _mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q)));
}

// kWords: 16-bit samples (rows of sums), else bytes; kE: elements between a
// channel's samples (1; 2 for UV pairs); kT: ResampleAxis::q_taps. Outputs
// [0, ax.count) (whole vectors of 8, the tables padded with zero weights)
// of channels at element ch[c] of each sample, from a row of `avail`
// elements: outputs whose vectors would read past it are summed one by one.
// kShared: two channels side by side (UV pairs), taken from one load: up to
// 8 taps shuffled U before V (kPairs, below), beyond that the second's
// weights moved up a lane.
template <int C, bool kWords, int kE, int kT, bool kShared>
void ByOutputRow(const ResampleAxis& ax, const std::uint8_t* row, std::int64_t avail,
                 const int (&ch)[C], float* const (&out)[C], const std::int32_t (&offset)[C],
                 bool raw) {
  constexpr int kSize = kWords ? 2 : 1;  // bytes per element
  // Elements one output's loads read: 8 (its weights past its taps 0), 16 or 32.
  constexpr int kSpan = kE * kT < 8 ? 8 : kE * kT;
  const std::int32_t* const first = ax.first.data();
  const std::int16_t* const q = ax.by_output_q.data();
  int reach = kSpan;
  for (int c = 0; c < C; ++c)
    reach = std::max(reach, ch[c] + kSpan);
  std::int64_t end = ax.count;
  while (end > 0 && first[end - 1] * kE + reach > avail)
    --end;
  end -= end % 8;
  __m256i add[C];
  for (int c = 0; c < C; ++c)
    add[c] = _mm256_set1_epi32(offset[c]);
  const int lo = kShared ? std::min(ch[0], ch[C - 1]) : 0;
  // Each output's first element: its channel's base in the row plus its
  // first sample's offset, widened from the table and scaled within the
  // load's own address (one instruction an output, where a sum in 32 bits
  // widened after took four; each output pointer too in a local, not read
  // through `out` after every store). AVX2 on Zen 5, calls alternated in one
  // process, time now / before: 1080p NV12 -> 416 area 0.89 (0.97 with 32
  // MiB written between calls, two threads 0.94), 1080p I420 -> 416
  // letterboxed 0.92, 4K NV12 -> 608 0.86, 4K I420 -> 416 0.91, 4K NV12 ->
  // 416 letterboxed 0.97; AVX-512 without VBMI 0.94-0.95; the same bytes out.
  const std::uint8_t* base[C];
  float* dst[C];
  for (int c = 0; c < C; ++c) {
    base[c] = row + (kShared ? lo : ch[c]) * kSize;
    dst[c] = out[c];
  }
  auto at = [&](std::int64_t o, int c) {
    return base[c] + static_cast<std::ptrdiff_t>(first[o]) * (kE * kSize);
  };
  auto moved = [&](__m256i w, int c) {
    return kShared && ch[c] != lo ? _mm256_slli_epi32(w, 16) : w;
  };
  // Output o's products, lanes to be summed across: 8 32-bit lanes. kLoads
  // vectors of 16 elements each (kE = 2: every other one the channel's).
  constexpr int kLoads = kSpan / 16 > 0 ? kSpan / 16 : 1;
  auto products = [&](std::int64_t o, int c, const __m256i* w) {
    __m256i p = _mm256_madd_epi16(Elements16<kWords>(at(o, c)), moved(w[0], c));
    for (int i = 1; i < kLoads; ++i) {
      p = _mm256_add_epi32(
          p, _mm256_madd_epi16(Elements16<kWords>(at(o, c) + 16 * i * kSize), moved(w[i], c)));
    }
    return p;
  };
  auto weights = [&](std::int64_t o, __m256i* w) {
    for (int i = 0; i < kLoads; ++i) {
      if constexpr (kE == 1) {
        w[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + o * kT + 16 * i));
      } else {
        w[i] = Spread8(q + o * kT + 8 * i);
      }
    }
  };
  auto store = [&](__m256i sums, int c, std::int64_t o) {
    sums = _mm256_add_epi32(sums, add[c]);
    _mm256_storeu_ps(dst[c] + o, raw ? _mm256_castsi256_ps(sums) : _mm256_cvtepi32_ps(sums));
  };
  // UV pairs of up to 8 taps (kShared; NV12 chroma of area between 2x and
  // 8x across, rows of bytes or of sums): a shuffle within each 128 bits puts
  // 4 U samples of an output, as 16-bit lanes, before its 4 V, so that one
  // multiply-add weighs both channels (the output's weights twice), where
  // two multiply-adds of weights spread over every other lane did; one level
  // of horizontal adds fewer and a shuffle of 32-bit lanes part them. 4
  // taps: outputs o and o + 4 share a vector; 8: a vector per output. AVX2
  // on Zen 3, calls alternated in one process: 1080p NV12 -> 416 area 0.90-
  // 0.92 of the time (letterboxed 0.95), 1080p -> 400x150 0.94-0.95, 4K ->
  // 608 and -> 416 area 0.93-0.94.
  constexpr bool kPairs = kShared && kE == 2 && (kT == 4 || kT == 8) && C == 2;
  if constexpr (kPairs) {
    constexpr int kLoad = kT == 4 ? 16 / kSize : 16;  // elements an output's load reads
    while (end > 0 && first[end - 1] * kE + lo + kLoad > avail)
      --end;
    end -= end % 8;
  }
  // Each 128 bits' 4 UV pairs of 16-bit sums as U U U U V V V V; of bytes
  // (kT = 4: 8 bytes), the same widened to 16-bit lanes.
  [[maybe_unused]] const __m256i words =
      _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9, 12,
                       13, 2, 3, 6, 7, 10, 11, 14, 15);
  [[maybe_unused]] const __m256i order =
      kWords ? words
             : _mm256_setr_epi8(0, -128, 2, -128, 4, -128, 6, -128, 1, -128, 3, -128, 5, -128, 7,
                                -128, 0, -128, 2, -128, 4, -128, 6, -128, 1, -128, 3, -128, 5, -128,
                                7, -128);
  // 4 taps: each output's weights twice, laid out as the loop loads them
  // (ResampleAxis::by_output_twice), one load where two loads and three
  // shuffles built them: 1080p NV12 -> 416 area 0.91-0.97 of the time,
  // letterboxed 0.94 (calls alternated). For 8 taps (one broadcast load and
  // a shuffle) the same measured 0.99-1.01 at 4K -> 416 to 608.
  [[maybe_unused]] const std::int16_t* const twice_q = ax.by_output_twice.data();
  // 8 taps: weights 0-3 twice in the low half, 4-7 twice in the high.
  [[maybe_unused]] const __m256i halves =
      _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                       8, 9, 10, 11, 12, 13, 14, 15);
  [[maybe_unused]] auto block = [&](std::int64_t k) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(at(k, 0)));
  };
  // The channel of the pair's first element (ch == lo) and of its second.
  [[maybe_unused]] const int even = ch[0] == lo ? 0 : 1;
  std::int64_t o = 0;
  for (; o < end; o += 8) {
    if constexpr (kPairs && kT == 8) {
      __m256i h[4];
      for (int i = 0; i < 8; i += 2) {
        __m256i p[2];
        for (int j = 0; j < 2; ++j) {
          const __m256i w = _mm256_shuffle_epi8(
              _mm256_broadcastsi128_si256(
                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + (o + i + j) * kT))),
              halves);
          p[j] = _mm256_madd_epi16(_mm256_shuffle_epi8(Elements16<kWords>(at(o + i + j, 0)), words),
                                   w);
        }
        // [U i, V i, U i+1, V i+1], of taps 0-3 in the low half, 4-7 in the high.
        h[i / 2] = _mm256_hadd_epi32(p[0], p[1]);
      }
      auto part = [&](bool first_of_pair) {
        const __m256 a = _mm256_castsi256_ps(h[0]), b = _mm256_castsi256_ps(h[1]);
        const __m256 c = _mm256_castsi256_ps(h[2]), d = _mm256_castsi256_ps(h[3]);
        const __m256i lo4 = _mm256_castps_si256(first_of_pair ? _mm256_shuffle_ps(a, b, 0x88)
                                                              : _mm256_shuffle_ps(a, b, 0xDD));
        const __m256i hi4 = _mm256_castps_si256(first_of_pair ? _mm256_shuffle_ps(c, d, 0x88)
                                                              : _mm256_shuffle_ps(c, d, 0xDD));
        return _mm256_add_epi32(_mm256_permute2x128_si256(lo4, hi4, 0x20),
                                _mm256_permute2x128_si256(lo4, hi4, 0x31));
      };
      const __m256i first_ch = part(true), second_ch = part(false);
      store(first_ch, even, o);
      store(second_ch, 1 - even, o);
    } else if constexpr (kPairs) {
      __m256i p[4];
      for (int i = 0; i < 4; ++i) {
        const __m256i w =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(twice_q + o * 8 + i * 16));
        const __m256i v =
            _mm256_inserti128_si256(_mm256_castsi128_si256(block(o + i)), block(o + i + 4), 1);
        p[i] = _mm256_madd_epi16(_mm256_shuffle_epi8(v, order), w);
      }
      // [U o, V o, U o+1, V o+1 | o+4, o+5] and the same of o+2, o+3 | o+6, o+7.
      const __m256 h01 = _mm256_castsi256_ps(_mm256_hadd_epi32(p[0], p[1]));
      const __m256 h23 = _mm256_castsi256_ps(_mm256_hadd_epi32(p[2], p[3]));
      const __m256i first_ch = _mm256_castps_si256(_mm256_shuffle_ps(h01, h23, 0x88));
      const __m256i second_ch = _mm256_castps_si256(_mm256_shuffle_ps(h01, h23, 0xDD));
      store(first_ch, even, o);
      store(second_ch, 1 - even, o);
    } else if constexpr (kSpan == 8) {
      // 8 elements per output, two outputs a vector. Of 8 taps each (kE 1),
      // outputs 2i and 2i + 1 share vector i, their weights one load of the
      // table as it lies; two levels of horizontal adds leave the even
      // outputs in the low half, the odd in the high, and a permute puts
      // them in order. AVX2 on Zen 5, calls alternated in one process, time
      // against outputs i and i + 4 a vector (their weights two loads and an
      // insert): 1080p NV12 -> 416 area 0.97 (with 32 MiB written between
      // calls too), 1080p I420 -> 416 letterboxed, 4K NV12 -> 608 and 4K
      // I420 -> 416 0.97-0.98; AVX-512 without VBMI 0.97. Otherwise (4 taps,
      // or UV pairs) outputs i and i + 4 share a vector, and the halves come
      // out in order.
      constexpr bool kAdjacent = kE == 1 && kT == 8;
      constexpr std::int64_t kNext = kAdjacent ? 2 : 1, kPartner = kAdjacent ? 1 : 4;
      auto half = [&](std::int64_t k) {
        const std::int16_t* p = q + k * kT;
        if constexpr (kE == 2) {
          return Spread4(p);
        } else if constexpr (kT == 4) {
          return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
        } else {
          return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        }
      };
      __m256i w[4];
      for (int i = 0; i < 4; ++i) {
        if constexpr (kAdjacent) {
          w[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + (o + 2 * i) * kT));
        } else {
          w[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(half(o + i)), half(o + i + 4), 1);
        }
      }
      __m256i sums[C];
      for (int c = 0; c < C; ++c) {
        __m256i p[4];
        for (int i = 0; i < 4; ++i) {
          const std::int64_t k0 = o + kNext * i, k1 = k0 + kPartner;
          __m256i v;
          if constexpr (kWords) {
            v = _mm256_inserti128_si256(_mm256_castsi128_si256(Elements8<true>(at(k0, c))),
                                        Elements8<true>(at(k1, c)), 1);
          } else {
            v = _mm256_cvtepu8_epi16(
                _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(at(k0, c))),
                                   _mm_loadl_epi64(reinterpret_cast<const __m128i*>(at(k1, c)))));
          }
          p[i] = _mm256_madd_epi16(v, moved(w[i], c));
        }
        sums[c] = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
        if constexpr (kAdjacent) {
          sums[c] = _mm256_permutevar8x32_epi32(sums[c], _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        }
      }
      for (int c = 0; c < C; ++c)  // after the loads: the stores could alias the row
        store(sums[c], c, o);
    } else {
      // A vector per output: hadd(a, b) = [a0+a1, a2+a3, b0+b1, b2+b3 | the
      // same of lanes 4-7]; after two levels h[0] holds outputs 0-3's sums of
      // lanes 0-3 in its low half and of lanes 4-7 in its high half, h[1]
      // outputs 4-7's.
      __m256i pair[C][4];
      for (int i = 0; i < 8; i += 2) {
        __m256i w0[kLoads], w1[kLoads];
        weights(o + i, w0);
        weights(o + i + 1, w1);
        for (int c = 0; c < C; ++c)
          pair[c][i / 2] = _mm256_hadd_epi32(products(o + i, c, w0), products(o + i + 1, c, w1));
      }
      for (int c = 0; c < C; ++c) {
        const __m256i h0 = _mm256_hadd_epi32(pair[c][0], pair[c][1]);
        const __m256i h1 = _mm256_hadd_epi32(pair[c][2], pair[c][3]);
        store(_mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20),
                               _mm256_permute2x128_si256(h0, h1, 0x31)),
              c, o);
      }
    }
  }
  // The last outputs (and the padding to a whole vector), one at a time:
  // only taps of non-zero weight, which lie within the row.
  const std::int64_t padded = (ax.count + 7) / 8 * 8;
  for (; o < padded; ++o) {
    for (int c = 0; c < C; ++c) {
      std::int32_t acc = offset[c];
      for (int t = 0; o < ax.count && t < kT; ++t) {
        const std::int16_t wt = q[o * kT + t];
        if (wt == 0) continue;
        const std::uint8_t* p = row + ((first[o] + t) * kE + ch[c]) * kSize;
        std::int32_t level = p[0];
        if constexpr (kWords) {
          std::uint16_t word;
          std::memcpy(&word, p, sizeof word);
          level = word;
        }
        acc += wt * level;
      }
      if (raw) {
        std::memcpy(out[c] + o, &acc, sizeof acc);
      } else {
        out[c][o] = static_cast<float>(acc);
      }
    }
  }
}

// Outputs [0, ax.count) of one row by output (ax.q_taps > 0): of bytes
// (channel: the byte of each ax.step-byte sample), or of 16-bit sums
// (kWords; channel: the low byte's, of ax.step-byte samples of one or two
// sums), as HorizontalBlocks stores them.
template <int C, bool kWords>
void HorizontalByOutput(const ResampleAxis& ax, const std::uint8_t* row, const int (&channel)[C],
                        float* const (&out)[C], const std::int32_t (&offset)[C], bool raw) {
  const int e = kWords ? ax.step / 2 : ax.step;
  int ch[C];
  for (int c = 0; c < C; ++c)
    ch[c] = kWords ? channel[c] / 2 : channel[c];
  const std::int64_t avail = ax.source * e;
  auto with = [&](auto e_c, auto shared_c) {
    constexpr int kE = decltype(e_c)::value;
    constexpr bool kShared = decltype(shared_c)::value;
    switch (ax.q_taps) {
      case 4:
        return ByOutputRow<C, kWords, kE, 4, kShared>(ax, row, avail, ch, out, offset, raw);
      case 8:
        return ByOutputRow<C, kWords, kE, 8, kShared>(ax, row, avail, ch, out, offset, raw);
      case 16:
        return ByOutputRow<C, kWords, kE, 16, kShared>(ax, row, avail, ch, out, offset, raw);
      case 32:
        return ByOutputRow<C, kWords, kE, 32, kShared>(ax, row, avail, ch, out, offset, raw);
      default:
        return ByOutputRow<C, kWords, kE, 64, kShared>(ax, row, avail, ch, out, offset, raw);
    }
  };
  using One = std::integral_constant<int, 1>;
  using Two = std::integral_constant<int, 2>;
  if (e == 1) return with(One(), std::false_type());
  if (C == 2 && std::abs(ch[0] - ch[C - 1]) == 1) return with(Two(), std::true_type());
  with(Two(), std::false_type());
}
#endif  // HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

#endif  // NEAT_KERNELS_INTERNAL_PREPROCESS_BY_OUTPUT_INL_H_

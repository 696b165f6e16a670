// The exact-box path of the preprocess engine (see the comment below).
// A fragment of kernels/preprocess_simd.cpp (not a header of its own): it is
// included there once per SIMD target, inside neat::detail::HWY_NAMESPACE,
// after the types it uses (Scratch, RowTaps, DF). The guard toggles with each
// target, as Highway's own -inl.h files do.
#if defined(NEAT_KERNELS_INTERNAL_PREPROCESS_BOX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEAT_KERNELS_INTERNAL_PREPROCESS_BOX_INL_H_
#undef NEAT_KERNELS_INTERNAL_PREPROCESS_BOX_INL_H_
#else
#define NEAT_KERNELS_INTERNAL_PREPROCESS_BOX_INL_H_
#endif

// ---- rows of 16-bit sums (also the blocks path's area sums) -------------------
// Each source row is read front to back, as the hardware prefetchers follow
// best (the rows all at once, a vector of each in turn, ran about 2x the time
// of reading the frame once at 4K), up to 8 rows side by side per pass over
// the sum row (in L1), the passes as even as can be: 12 rows as 6 + 6, 11 as
// 5 + 6. One pass of up to 8 rows, in place of passes of at most 4 (session
// 10 found 4 better than 2): 4K -> 320 area 0.89-0.92 of the time, -> 640
// letterboxed 0.85-0.91, 1080p -> 320 letterboxed 0.93, AVX2 4K -> 320
// 0.85-0.87 (in-process A/B, session 17). Two passes of 6 in place of three
// of 4 (4K -> 320 letterboxed, 12 rows) came out even.

#if HWY_TARGET != HWY_SCALAR
// out = (out if add) + the N rows; if finish, then shifted left by f, plus
// the partial rows p0 and p1 (where not null) times w0 and w1 (samples x 128,
// a rounding 15-bit fixed-point multiply). ahead (bytes; 0: none): each
// line read, the line that far on is prefetched, the next output row's rows
// (RowSumPlan::ahead): memory then works while the word permutes that follow
// run from the L1.
template <int N, bool add, bool finish>
HWY_NOINLINE void SumPass(const std::uint8_t* const* rows, const std::uint8_t* p0,
                          const std::uint8_t* p1, std::int16_t w0, std::int16_t w1, int f,
                          std::int64_t bytes, std::uint16_t* out, std::ptrdiff_t ahead) {
  // The pointers in locals: read through `rows` they would be loaded again
  // after every store (the compiler cannot tell the stores miss them).
  const std::uint8_t* r[N > 0 ? N : 1] = {};
  for (int i = 0; i < N; ++i)
    r[i] = rows[i];
  const hn::ScalableTag<std::int16_t> d16;
  const hn::Rebind<std::uint8_t, decltype(d16)> d8;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d16));
  const auto b0 = hn::Set(d16, w0), b1 = hn::Set(d16, w1);
  auto row = [&](const std::uint8_t* p) {
    return hn::BitCast(d16, hn::PromoteTo(hn::RebindToUnsigned<decltype(d16)>(), hn::LoadU(d8, p)));
  };
  auto term = [&](const std::uint8_t* p, hn::Vec<decltype(d16)> b) {
    return hn::MulFixedPoint15(hn::ShiftLeft<7>(row(p)), b);
  };
  auto* o = reinterpret_cast<std::int16_t*>(out);
  auto step = [&](std::int64_t x) HWY_ATTR {
    auto acc = hn::Zero(d16);
    if constexpr (add) acc = hn::LoadU(d16, o + x);
    if constexpr (N >= 2) {
      acc = hn::Add(acc, hn::Add(row(r[0] + x), row(r[1] + x)));
    } else if constexpr (N == 1) {
      acc = hn::Add(acc, row(r[0] + x));
    }
    if constexpr (N >= 4)
      acc = hn::Add(acc, hn::Add(row(r[2] + x), row(r[3] + x)));
    else if constexpr (N == 3)
      acc = hn::Add(acc, row(r[2] + x));
    if constexpr (N >= 6)
      acc = hn::Add(acc, hn::Add(row(r[4] + x), row(r[5] + x)));
    else if constexpr (N == 5)
      acc = hn::Add(acc, row(r[4] + x));
    if constexpr (N >= 8)
      acc = hn::Add(acc, hn::Add(row(r[6] + x), row(r[7] + x)));
    else if constexpr (N == 7)
      acc = hn::Add(acc, row(r[6] + x));
    if constexpr (finish) {
      acc = hn::ShiftLeftSame(acc, f);
      if (p0 != nullptr) acc = hn::Add(acc, term(p0 + x, b0));
      if (p1 != nullptr) acc = hn::Add(acc, term(p1 + x, b1));
    }
    hn::StoreU(acc, d16, o + x);
  };
  std::int64_t x = 0;
  if (ahead != 0) {  // a line of each row at a time, its line `ahead` on prefetched
    const std::int64_t chunk = std::max<std::int64_t>(64, lanes);
    for (; x + chunk <= bytes; x += chunk) {
      for (int i = 0; i < N; ++i)
        hwy::Prefetch(r[i] + x + ahead);
      if constexpr (finish) {
        if (p0 != nullptr) hwy::Prefetch(p0 + x + ahead);
        if (p1 != nullptr) hwy::Prefetch(p1 + x + ahead);
      }
      for (std::int64_t j = 0; j < chunk; j += lanes)
        step(x + j);
    }
  }
  for (; x + lanes <= bytes; x += lanes)
    step(x);
  for (; x < bytes; ++x) {
    int acc = add ? out[x] : 0;
    for (int i = 0; i < N; ++i)
      acc += r[i][x];
    if constexpr (finish) {
      acc <<= f;
      if (p0 != nullptr) acc += (p0[x] * 128 * w0 + (1 << 14)) >> 15;
      if (p1 != nullptr) acc += (p1[x] * 128 * w1 + (1 << 14)) >> 15;
    }
    out[x] = static_cast<std::uint16_t>(acc);
  }
}

// Rows rows[0..n) of the plane (rows null: first, first + 1, ...) summed in
// passes of at most 8 rows each, as even as can be; the last adds the
// partial rows (p0, p1: null for none) and shifts by f first.
HWY_INLINE void SumPasses(const std::uint8_t* plane, std::int64_t stride, const std::int64_t* rows,
                          std::int64_t first, int n, const std::uint8_t* p0, const std::uint8_t* p1,
                          std::int16_t w0, std::int16_t w1, int f, std::int64_t bytes,
                          std::uint16_t* out, std::ptrdiff_t ahead = 0) {
  const int n_part = (p0 != nullptr) + (p1 != nullptr);
  const int streams = n + n_part, passes = streams > 8 ? (streams + 7) / 8 : 1;
  int done = 0;
  for (int pass = 0; pass < passes; ++pass) {
    const bool last = pass == passes - 1;
    const int k = last ? n - done : streams * (pass + 1) / passes - streams * pass / passes;
    const std::uint8_t* q[8];
    for (int i = 0; i < k; ++i)
      q[i] = plane + (rows != nullptr ? rows[done + i] : first + done + i) * stride;
    const bool finish = last && (p0 != nullptr || p1 != nullptr || f != 0);
    using Pass =
        void (*)(const std::uint8_t* const*, const std::uint8_t*, const std::uint8_t*, std::int16_t,
                 std::int16_t, int, std::int64_t, std::uint16_t*, std::ptrdiff_t);
    // SumPass<k, add, finish> for k = 0..8, add = pass > 0.
    static constexpr auto kPasses = []<int... K>(std::integer_sequence<int, K...>) {
      return std::array<std::array<Pass, 9>, 4>{{{SumPass<K, false, false>...},
                                                 {SumPass<K, false, true>...},
                                                 {SumPass<K, true, false>...},
                                                 {SumPass<K, true, true>...}}};
    }
    (std::make_integer_sequence<int, 9>());
    kPasses[2 * (pass > 0) + finish][k](q, p0, p1, w0, w1, f, bytes, out, ahead);
    done += k;
  }
}
#endif

// out[x] = the sum over i < n of row rows[i] of the plane at x, x < bytes.
// Three rows or more in passes of up to 8 (SumPasses); one or two (and on
// the scalar target, all) two at a time.
void SumRows(const std::uint8_t* plane, std::int64_t stride, const std::int64_t* rows, int n,
             std::int64_t bytes, std::uint16_t* out) {
#if HWY_TARGET != HWY_SCALAR
  if (n >= 3) {
    SumPasses(plane, stride, rows, 0, n, nullptr, nullptr, 0, 0, 0, bytes, out);
    return;
  }
#endif
  const hn::ScalableTag<std::uint16_t> d16;
  const hn::Rebind<std::uint8_t, decltype(d16)> d8;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d16));
  const std::int64_t whole = bytes - bytes % lanes;
  for (int i = 0; i < n; i += 2) {
    const std::uint8_t* a = plane + rows[i] * stride;
    const std::uint8_t* b = i + 1 < n ? plane + rows[i + 1] * stride : nullptr;
    for (std::int64_t x = 0; x < whole; x += lanes) {
      auto acc = hn::PromoteTo(d16, hn::LoadU(d8, a + x));
      if (b != nullptr) acc = hn::Add(acc, hn::PromoteTo(d16, hn::LoadU(d8, b + x)));
      if (i > 0) acc = hn::Add(acc, hn::LoadU(d16, out + x));
      hn::StoreU(acc, d16, out + x);
    }
  }
  for (std::int64_t x = whole; x < bytes; ++x) {
    std::uint16_t acc = 0;
    for (int r = 0; r < n; ++r)
      acc = static_cast<std::uint16_t>(acc + plane[rows[r] * stride + x]);
    out[x] = acc;
  }
}

// ---- area's fixed-point vertical pass ----------------------------------------
// An output row of area at a ratio that is not whole reads its source rows of
// full weight and, at its two edges, rows of partial weight. Where the sums
// are taken as 16-bit samples (the word permutes of VBMI; on AVX2, output by
// output), the whole vertical pass runs first, in 16-bit
// fixed point, and the row is resampled once: the full rows summed exactly,
// each partial row's samples times its weight (in 2^-(f + 8) of a full row's)
// rounded to 2^-f level, the sum kept in units of 2^-f level, f as large as
// fits below 2^15 (6 at a 1.8x ratio, 5 at 2.6x, 4 at 4.6x to 7.5x, 3 at 12x). The mean
// is over the weights so quantized (a flat area stays exact). In place of
// resampling each partial row on its own and summing three rows per plane in
// the final pass. Each row's plan is made with the axis (RowSumPlan,
// kernels/preprocess_row_sums.cpp): planned per call, it was 5% of 1080p ->
// 416 letterboxed.

// The plan's sum of `bytes` bytes of each row from `plane`, into out:
// partial samples x 128 times b, rounded (a 15-bit fixed-point multiply).
// The full rows, the shift by f and both partial terms in passes of up to 8
// rows (SumPasses), the partial rows and the shift in the last. The full
// rows' sum is exact in 16 bits before the shift (the plan's f sees to it),
// so the split into passes changes no integer.
void VerticalSumRow(const std::uint8_t* plane, std::int64_t stride, const RowSumPlan& v,
                    std::int64_t bytes, std::uint16_t* out) {
  const std::uint8_t* p0 = v.n_part > 0 ? plane + v.part[0] * stride : nullptr;
  const std::uint8_t* p1 = v.n_part > 1 ? plane + v.part[1] * stride : nullptr;
#if HWY_TARGET != HWY_SCALAR
  SumPasses(plane, stride, nullptr, v.full_first, v.n_full, p0, p1, v.b[0], v.b[1], v.f, bytes, out,
            static_cast<std::ptrdiff_t>(v.ahead) * stride);
#else
  const std::uint8_t* first = plane + v.full_first * stride;
  for (std::int64_t x = 0; x < bytes; ++x) {
    int acc = 0;
    for (int i = 0; i < v.n_full; ++i)
      acc += first[i * stride + x];
    acc <<= v.f;
    if (p0 != nullptr) acc += (p0[x] * 128 * v.b[0] + (1 << 14)) >> 15;
    if (p1 != nullptr) acc += (p1[x] * 128 * v.b[1] + (1 << 14)) >> 15;
    out[x] = static_cast<std::uint16_t>(acc);
  }
#endif
}

// ---- the exact-box path -----------------------------------------------------
// When every output pixel is the plain mean of a k x k block of luma samples
// (k = 2, 4, 6 or 12: area at an exact ratio, and bilinear at 2x, which
// weighs the two samples around each output equally) and of the k/2 x k/2
// chroma samples under it, the taps need no tables: each output row sums
// its k source rows and k samples per output with integer adds (a pair of
// bytes by one multiply-add of bytes, BytePairs; one byte of each 16-bit
// lane, a channel of UV, masked or shifted down), exactly, and the final
// pass takes one row per plane. This is the work libyuv's
// 2x and 4x box rows do, without a pass of their own.

// Outputs [o, count) one at a time: the scalar target's, and the vector
// targets' last outputs.
HWY_INLINE void BoxSumsFrom(std::int64_t o, const std::uint8_t* const* rows, int n, int k, int step,
                            int channel, std::int64_t count, float bias, float* out,
                            float scale = 1.f) {
  for (; o < count; ++o) {
    std::uint32_t acc = 0;
    for (int t = 0; t < n; ++t)
      for (int i = 0; i < k; ++i)
        acc += rows[t][(o * k + i) * step + channel];
    out[o] = (static_cast<float>(acc) - bias) * scale;
  }
}

// The line at byte `at` of each of n rows, `ahead` bytes on (the next output
// row's rows: FreshRowsAhead), prefetched into the L1; none where ahead is 0.
// In the pair and box sums of bilinear's even ratios, one line a vector
// (720p -> 320 letterboxed, NV12 and I420: 0.92-0.93 of the time with the
// frame in the cache, two threads 0.95-0.97, fresh from memory 0.84-0.85;
// AVX2 1080p -> 320 letterboxed 0.92, 4K -> 640 letterboxed 0.99 and fresh
// 0.95. Into the L2 only: 0.94-0.95 cached. In-process A/B, session 21).
HWY_INLINE void PrefetchRows(const std::uint8_t* const* rows, int n, std::int64_t at,
                             std::ptrdiff_t ahead) {
  if (ahead == 0) return;
  for (int t = 0; t < n; ++t)
    hwy::Prefetch(rows[t] + at + ahead);
}

#if HWY_TARGET == HWY_SCALAR
HWY_INLINE void BoxSums(const std::uint8_t* const* rows, int n, int k, int step, int channel,
                        std::int64_t count, float bias, float* out, float scale = 1.f,
                        std::ptrdiff_t = 0, float* other = nullptr) {
  BoxSumsFrom(0, rows, n, k, step, channel, count, bias, out, scale);
  if (other != nullptr) BoxSumsFrom(0, rows, n, k, step, 1 - channel, count, bias, other, scale);
}
#else
using DBox32 = hn::ScalableTag<std::uint32_t>;
using DBox16 = hn::Repartition<std::uint16_t, DBox32>;
using DBox8 = hn::Repartition<std::uint8_t, DBox32>;

// (v - bias) x scale, as floats (a scale of 1 leaves the difference exact).
HWY_INLINE void StoreU32AsFloat(hn::Vec<DBox32> v, VF bias, VF scale, float* out) {
  const DF df;
  hn::StoreU(hn::Mul(hn::Sub(hn::ConvertTo(df, hn::BitCast(DI(), v)), bias), scale), df, out);
}
// Lanes(DBox16) outputs: the lower half's, then the upper half's.
HWY_INLINE void StoreU16AsFloat(hn::Vec<DBox16> v, VF bias, VF scale, float* out) {
  const DBox32 d32;
  const hn::Half<DBox16> dh;
  StoreU32AsFloat(hn::PromoteTo(d32, hn::LowerHalf(dh, v)), bias, scale, out);
  StoreU32AsFloat(hn::PromoteTo(d32, hn::UpperHalf(dh, v)), bias, scale, out + hn::Lanes(d32));
}

// x86 vectors (SSSE3 and up; not the emulated 128-bit target of a build
// without them, whose vectors are arrays).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSSE3
HWY_INLINE __m128i MulAddBytes(__m128i a, __m128i b) {
  return _mm_maddubs_epi16(a, b);
}
HWY_INLINE __m128i MulAddWords(__m128i a, __m128i b) {
  return _mm_madd_epi16(a, b);
}
#if HWY_TARGET <= HWY_AVX2
HWY_INLINE __m256i MulAddBytes(__m256i a, __m256i b) {
  return _mm256_maddubs_epi16(a, b);
}
HWY_INLINE __m256i MulAddWords(__m256i a, __m256i b) {
  return _mm256_madd_epi16(a, b);
}
#endif
#if HWY_TARGET <= HWY_AVX3
HWY_INLINE __m512i MulAddBytes(__m512i a, __m512i b) {
  return _mm512_maddubs_epi16(a, b);
}
HWY_INLINE __m512i MulAddWords(__m512i a, __m512i b) {
  return _mm512_madd_epi16(a, b);
}
#endif
#endif

// The two bytes of each 16-bit lane of v, each times its byte of `pattern`
// (0 or 1), added: one multiply-add of bytes on x86 (pmaddubsw), where a
// mask, a shift and an add took three instructions, five for a pair at any
// two bytes of a 32-bit lane (PairOf). Sums up to 510: no saturation.
HWY_INLINE hn::Vec<DBox16> BytePairs(hn::Vec<DBox8> v, hn::Vec<DBox8> pattern) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSSE3
  return hn::Vec<DBox16>{MulAddBytes(v.raw, pattern.raw)};
#else
  const DBox16 d16;
  const auto a = hn::BitCast(d16, v), w = hn::BitCast(d16, pattern);
  const auto low = hn::Set(d16, 0xFF);
  return hn::Add(hn::Mul(hn::And(a, low), hn::And(w, low)),
                 hn::Mul(hn::ShiftRight<8>(a), hn::ShiftRight<8>(w)));
#endif
}
// The two 16-bit halves of each 32-bit lane added (sums below 2^15).
HWY_INLINE hn::Vec<DBox32> SumHalves(hn::Vec<DBox16> v) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSSE3
  return hn::Vec<DBox32>{MulAddWords(v.raw, hn::Set(DBox16(), 1).raw)};
#else
  const DBox32 d32;
  const auto w = hn::BitCast(d32, v);
  return hn::Add(hn::And(w, hn::Set(d32, 0xFFFFu)), hn::ShiftRight<16>(w));
#endif
}
// A pattern for BytePairs: bytes `first` and `second` of each 32-bit lane 1.
HWY_INLINE hn::Vec<DBox8> PairPattern(int first, int second) {
  return hn::BitCast(DBox8(), hn::Set(DBox32(), (1u << (8 * first)) | (1u << (8 * second))));
}
// The sum of bytes `first` and `second` of each 32-bit lane of v (a pattern
// from PairPattern).
HWY_INLINE hn::Vec<DBox32> PairOf(hn::Vec<DBox32> v, hn::Vec<DBox8> pattern) {
  return SumHalves(BytePairs(hn::BitCast(DBox8(), v), pattern));
}
// The first of each three-way element of Lanes(DBox32) elements of 32 bits
// (12 bytes each) or of 16 bits (6 bytes, widened) from p. On AVX2 from
// four 16-byte loads: 32-bit elements by one shuffle of 32-bit lanes
// (elements 0 and 3 of a load at each 24 bytes), 16-bit by a byte shuffle
// each and an OR; else the interleaved loads (Highway's, which shuffle all
// three ways out). AVX2 on Zen 3, calls alternated in one process: 1080p
// -> 320 bilinear (luma pairs and UV picks 6 bytes apart) 0.97-0.98 of the
// time, I420 0.97-0.98, nearest 0.95-0.97; 4K NV12 -> 320 letterboxed
// (pairs of 12) 0.95, I420 0.98-0.99; 1080p -> 320 letterboxed 0.99.
HWY_INLINE hn::Vec<DBox32> FirstOfThree32(const std::uint8_t* p) {
#if HWY_TARGET == HWY_AVX2
  auto load = [&](std::int64_t at) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
  };
  const __m256 a =
      _mm256_castsi256_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(load(0)), load(48), 1));
  const __m256 b =
      _mm256_castsi256_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(load(24)), load(72), 1));
  return hn::Vec<DBox32>{_mm256_castps_si256(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 0, 3, 0)))};
#else
  const DBox32 d32;
  hn::Vec<DBox32> a, b, c;
  hn::LoadInterleaved3(d32, reinterpret_cast<const std::uint32_t*>(p), a, b, c);
  return a;
#endif
}
HWY_INLINE hn::Vec<DBox32> FirstOfThree16(const std::uint8_t* p) {
#if HWY_TARGET == HWY_AVX2
  // Outputs 0-2 of each 24 bytes from its first 16, output 3 (bytes 18-19)
  // from the 16 at 4 on.
  auto load = [&](std::int64_t at, std::int64_t high) {
    return _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + high)), 1);
  };
  const __m256i first = _mm256_setr_epi8(0, 1, -128, -128, 6, 7, -128, -128, 12, 13, -128, -128,
                                         -128, -128, -128, -128, 0, 1, -128, -128, 6, 7, -128, -128,
                                         12, 13, -128, -128, -128, -128, -128, -128);
  const __m256i last = _mm256_setr_epi8(
      -128, -128, -128, -128, -128, -128, -128, -128, -128, -128, -128, -128, 14, 15, -128, -128,
      -128, -128, -128, -128, -128, -128, -128, -128, -128, -128, -128, -128, 14, 15, -128, -128);
  return hn::Vec<DBox32>{_mm256_or_si256(_mm256_shuffle_epi8(load(0, 24), first),
                                         _mm256_shuffle_epi8(load(4, 28), last))};
#else
  const DBox32 d32;
  const hn::Rebind<std::uint16_t, DBox32> d16h;
  hn::Vec<decltype(d16h)> a, b, c;
  hn::LoadInterleaved3(d16h, reinterpret_cast<const std::uint16_t*>(p), a, b, c);
  return hn::PromoteTo(d32, a);
#endif
}

// The even (low) or odd (high) byte of each 16-bit lane of 2 x Lanes(DBox16) bytes.
template <int kOdd>
HWY_INLINE hn::Vec<DBox16> Bytes16(const std::uint8_t* p) {
  const DBox16 d16;
  const auto v = hn::BitCast(d16, hn::LoadU(DBox8(), p));
  if constexpr (kOdd) return hn::ShiftRight<8>(v);
  return hn::And(v, hn::Set(d16, 0xFF));
}

// out[o] = the sum over n rows of k samples from o * k (samples `step`
// bytes apart: 1, or 2 for one channel of interleaved UV at `channel`),
// minus bias. k * step is 1, 2 or 4 bytes per output; n <= 4. ahead: as
// PairSums'. `other` (step 2): channel 1 - channel's sums the same way, from
// the same loads (NV12's U and V in one pass over the rows).
// A pair of bytes by one multiply-add of bytes (BytePairs) and the halves
// of a 32-bit lane by one of words (SumHalves), in place of masks, shifts
// and adds, with PairSums' likewise and UV from one load: AVX2 on Zen 3, the
// builds before and after loaded side by side in one process, calls
// alternated, each build first in turn: 720p NV12 -> 320 letterboxed 0.85
// of the time, I420 0.88; 1080p and 4K -> 320 letterboxed 0.92-0.94, 4K ->
// 640 letterboxed 0.94-0.96; 720p -> 320 area 0.85-0.94, -> 640 1.00.
HWY_INLINE void BoxSums(const std::uint8_t* const* rows, int n, int k, int step, int channel,
                        std::int64_t count, float bias, float* out, float scale = 1.f,
                        std::ptrdiff_t ahead = 0, float* other = nullptr) {
  const DBox32 d32;
  const DBox16 d16;
  const VF vbias = hn::Set(DF(), bias), vscale = hn::Set(DF(), scale);
  const int per = k * step;  // bytes per output
  const auto ones = hn::Set(DBox8(), 1);
  std::int64_t o = 0;
  if (per == 1) {  // a byte per output: widen and convert
    const hn::Rebind<std::uint8_t, DBox32> d8;
    const auto lanes = static_cast<std::int64_t>(hn::Lanes(d32));
    for (; o + lanes <= count; o += lanes) {
      if (o % 64 == 0) PrefetchRows(rows, n, o, ahead);
      auto acc = hn::PromoteTo(d32, hn::LoadU(d8, rows[0] + o));
      for (int t = 1; t < n; ++t)
        acc = hn::Add(acc, hn::PromoteTo(d32, hn::LoadU(d8, rows[t] + o)));
      StoreU32AsFloat(acc, vbias, vscale, out + o);
    }
  } else if (per == 2) {  // two bytes per output: one 16-bit lane each
    const auto lanes = static_cast<std::int64_t>(hn::Lanes(d16));
    for (; o + lanes <= count; o += lanes) {
      PrefetchRows(rows, n, 2 * o, ahead);
      hn::Vec<DBox16> acc = hn::Zero(d16), acc2 = hn::Zero(d16);
      for (int t = 0; t < n; ++t) {
        const std::uint8_t* p = rows[t] + 2 * o;
        if (step == 1) {  // both bytes: a pair of samples
          acc = hn::Add(acc, BytePairs(hn::LoadU(DBox8(), p), ones));
        } else {  // one of the two: a channel of interleaved UV
          acc = hn::Add(acc, channel == 0 ? Bytes16<0>(p) : Bytes16<1>(p));
          if (other != nullptr) acc2 = hn::Add(acc2, channel == 0 ? Bytes16<1>(p) : Bytes16<0>(p));
        }
      }
      StoreU16AsFloat(acc, vbias, vscale, out + o);
      if (other != nullptr) StoreU16AsFloat(acc2, vbias, vscale, other + o);
    }
  } else {  // four bytes per output: 16-bit pair sums, then the two 16-bit halves of each 32
    const auto lanes = static_cast<std::int64_t>(hn::Lanes(d32));
    for (; o + lanes <= count; o += lanes) {
      PrefetchRows(rows, n, 4 * o, ahead);
      hn::Vec<DBox16> acc = hn::Zero(d16), acc2 = hn::Zero(d16);
      for (int t = 0; t < n; ++t) {
        const std::uint8_t* p = rows[t] + 4 * o;
        if (step == 1) {
          acc = hn::Add(acc, BytePairs(hn::LoadU(DBox8(), p), ones));
        } else {
          acc = hn::Add(acc, channel == 0 ? Bytes16<0>(p) : Bytes16<1>(p));
          if (other != nullptr) acc2 = hn::Add(acc2, channel == 0 ? Bytes16<1>(p) : Bytes16<0>(p));
        }
      }
      StoreU32AsFloat(SumHalves(acc), vbias, vscale, out + o);
      if (other != nullptr) StoreU32AsFloat(SumHalves(acc2), vbias, vscale, other + o);
    }
  }
  if (other != nullptr) BoxSumsFrom(o, rows, n, k, step, 1 - channel, count, bias, other, scale);
  BoxSumsFrom(o, rows, n, k, step, channel, count, bias, out, scale);
}
#endif

// ---- bilinear's pairs, summed down and across from the bytes ------------------
// Bilinear at an even ratio both ways (720p -> 320 letterboxed: luma 4x,
// chroma 2x) weighs each output's two samples across by half, in two rows
// of half weight down. Output o's samples are bytes g o + channel and g o +
// channel + step of rows[t] (g = k x step, the output's pitch in bytes: 2
// or 4, 6 for one plane's samples, 12 for either; rows[t] at the first
// output's first sample, channel taken away);
// out[o] = (their sum over the n <= 4 rows, minus bias) x scale; `other`
// (step 2): channel 1 - channel's sums the same way. Vectors
// while their lanes lie within the `avail` bytes from rows[t] (the last
// output's lane may end past the row), then one output at a time. ahead:
// the next output row's rows prefetched as these are read (PrefetchRows).
HWY_INLINE void PairSumsFrom(std::int64_t o, const std::uint8_t* const* rows, int n, int g,
                             int step, int channel, std::int64_t count, float bias, float scale,
                             float* out) {
  for (; o < count; ++o) {
    std::uint32_t acc = 0;
    for (int t = 0; t < n; ++t)
      acc += rows[t][g * o + channel] + rows[t][g * o + channel + step];
    out[o] = (static_cast<float>(acc) - bias) * scale;
  }
}

#if HWY_TARGET == HWY_SCALAR
HWY_INLINE void PairSums(const std::uint8_t* const* rows, int n, std::int64_t, int g, int step,
                         int channel, std::int64_t count, float bias, float scale, float* out,
                         std::ptrdiff_t = 0, float* other = nullptr) {
  PairSumsFrom(0, rows, n, g, step, channel, count, bias, scale, out);
  if (other != nullptr) PairSumsFrom(0, rows, n, g, step, 1 - channel, count, bias, scale, other);
}
#else
HWY_INLINE void PairSums(const std::uint8_t* const* rows, int n, std::int64_t avail, int g,
                         int step, int channel, std::int64_t count, float bias, float scale,
                         float* out, std::ptrdiff_t ahead = 0, float* other = nullptr) {
  // Pairs two samples apart (k = 2: 2 or 4 bytes, the pitch the pair): the
  // exact boxes' sums, which read no byte past the last pair (UV: both
  // channels from one load).
  if (g == 2 * step) {
    return BoxSums(rows, n, 2, step, channel, count, bias, out, scale, ahead, other);
  }
  if (other != nullptr && !(g == 12 && step == 2)) {  // each channel on its own
    PairSums(rows, n, avail, g, step, channel, count, bias, scale, out, ahead);
    return PairSums(rows, n, avail, g, step, 1 - channel, count, bias, scale, other);
  }
  const DBox32 d32;
  const DBox16 d16;
  const VF vbias = hn::Set(DF(), bias), vscale = hn::Set(DF(), scale);
  std::int64_t o = 0;
  if (g == 4 && step == 1) {  // one 32-bit lane an output: bytes 0 and 1
    const auto lanes = static_cast<std::int64_t>(hn::Lanes(d32));
    const auto pattern = PairPattern(0, 1);
    for (; o + lanes <= count && 4 * (o + lanes) <= avail; o += lanes) {
      PrefetchRows(rows, n, 4 * o, ahead);
      hn::Vec<DBox16> acc = hn::Zero(d16);  // the lanes' upper halves stay 0
      for (int t = 0; t < n; ++t)
        acc = hn::Add(acc, BytePairs(hn::LoadU(DBox8(), rows[t] + 4 * o), pattern));
      StoreU32AsFloat(hn::BitCast(d32, acc), vbias, vscale, out + o);
    }
  } else if (g == 6 && step == 1) {  // three 16-bit elements an output: the first's bytes
    // (AVX2, against each row's pairs picked on its own: 1080p -> 320
    // letterboxed 0.76-0.89 of the time, 4K -> 640 letterboxed 0.85-0.89)
    const auto lanes = static_cast<std::int64_t>(hn::Lanes(d16));
    const auto ones = hn::Set(DBox8(), 1);
    for (; o + lanes <= count && 6 * (o + lanes) <= avail; o += lanes) {
      PrefetchRows(rows, n, 6 * o, ahead);
      if (6 * lanes > 64) PrefetchRows(rows, n, 6 * o + 64, ahead);
      hn::Vec<DBox16> acc = hn::Zero(d16);
      for (int t = 0; t < n; ++t) {
        hn::Vec<DBox16> a, b, c;
        hn::LoadInterleaved3(d16, reinterpret_cast<const std::uint16_t*>(rows[t] + 6 * o), a, b, c);
        acc = hn::Add(acc, BytePairs(hn::BitCast(DBox8(), a), ones));
      }
      StoreU16AsFloat(acc, vbias, vscale, out + o);
    }
  } else if (g == 12) {  // three 32-bit elements an output: the pair in the first's bytes
    // (4K -> 320 letterboxed: luma 12 bytes apart, NV12's UV pairs too),
    // where one output at a time took them before. AVX2 on Zen 3, with
    // I420's chroma at 6 (above) in place of its picks, calls alternated in
    // one process: 4K I420 -> 320 letterboxed bilinear 0.70 of the time
    // (the frame cached; fresh from memory 0.81), NV12 0.81 (0.86); two
    // threads I420 0.69 (0.83), NV12 0.92 (0.86).
    // `other` (UV pairs, step 2): both channels from one load, bytes 0 and
    // 2 of each element one, 1 and 3 the other, as two 16-bit halves (4K
    // NV12 -> 320 letterboxed, against a pass per channel: 0.87-0.92 of the
    // time, 0.93 fresh; two threads 0.86-0.89, 0.96 fresh).
    const auto lanes = static_cast<std::int64_t>(hn::Lanes(d32));
    const auto mine = PairPattern(channel, channel + step);
    const auto theirs = PairPattern(1 - channel, 1 - channel + step);
    for (; o + lanes <= count && 12 * (o + lanes) <= avail; o += lanes) {
      for (std::int64_t at = 0; at < 12 * lanes; at += 64)
        PrefetchRows(rows, n, 12 * o + at, ahead);
      hn::Vec<DBox16> acc = hn::Zero(d16), acc2 = hn::Zero(d16);
      for (int t = 0; t < n; ++t) {
        const auto a = hn::BitCast(DBox8(), FirstOfThree32(rows[t] + 12 * o));
        acc = hn::Add(acc, BytePairs(a, mine));
        if (other != nullptr) acc2 = hn::Add(acc2, BytePairs(a, theirs));
      }
      StoreU32AsFloat(SumHalves(acc), vbias, vscale, out + o);
      if (other != nullptr) StoreU32AsFloat(SumHalves(acc2), vbias, vscale, other + o);
    }
    if (other != nullptr) PairSumsFrom(o, rows, n, g, step, 1 - channel, count, bias, scale, other);
  }
  PairSumsFrom(o, rows, n, g, step, channel, count, bias, scale, out);
}
#endif

// ---- 6x and 12x: rows summed first --------------------------------------------
// Larger boxes sum their k rows into a row of 16-bit sums first (SumRows,
// each source row read front to back), then sum each output's k sums. A
// box of k samples `step` apart is g = k * step sums; for g = 3, 6 or 12 the
// sums are loaded as elements of g / 3 sums (16, 32 or 64 bits) three ways
// interleaved (LoadInterleaved3), added lane by lane, and the parts of an
// element added or picked (its channel). Each part stays below 2^16 (at most
// 12 x 12 x 255), so adding whole 32- and 64-bit elements never carries
// from one part into the next.

// out[o] = (the sum of sums[(o * k + i) * step + channel], i < k, minus
// bias) times scale; outputs [o, count).
HWY_INLINE void BoxSums16From(std::int64_t o, const std::uint16_t* sums, int k, int step,
                              int channel, std::int64_t count, float bias, float scale,
                              float* out) {
  for (; o < count; ++o) {
    std::uint32_t acc = 0;
    for (int i = 0; i < k; ++i)
      acc += sums[(o * k + i) * step + channel];
    out[o] = (static_cast<float>(acc) - bias) * scale;
  }
}

#if HWY_TARGET == HWY_SCALAR
HWY_INLINE void BoxSums16(const std::uint16_t* sums, int k, int step, int channel,
                          std::int64_t count, float bias, float* out, float scale = 1.f,
                          float* high = nullptr) {
  BoxSums16From(0, sums, k, step, high != nullptr ? 0 : channel, count, bias, scale, out);
  if (high != nullptr) BoxSums16From(0, sums, k, step, 1, count, bias, scale, high);
}
HWY_INLINE void BoxSumsWide(const std::uint16_t* sums, int k, int step, int channel,
                            std::int64_t count, float bias, float scale, float* out,
                            float* high = nullptr) {
  BoxSums16(sums, k, step, channel, count, bias, out, scale, high);
}
#else
// The three ways of 3 x Lanes(d) elements at p, added.
template <class D>
HWY_INLINE hn::Vec<D> Sum3(D d, const std::uint16_t* p) {
  using T = hn::TFromD<D>;
  hn::Vec<D> a, b, c;
  hn::LoadInterleaved3(d, reinterpret_cast<const T*>(p), a, b, c);
  return hn::Add(hn::Add(a, b), c);
}

HWY_INLINE void StoreScaled(hn::Vec<DBox32> v, VF bias, VF scale, float* out) {
  const DF df;
  hn::StoreU(hn::Mul(hn::Sub(hn::ConvertTo(df, hn::BitCast(DI(), v)), bias), scale), df, out);
}

// g = k * step sums per output: 1 (a sample as it is), 2, 4 (elements of 32
// and 64 bits), 3, 6, 12 (elements of g / 3 sums, three ways interleaved).
// high (UV pairs, step 2): where given, channel 1's outputs, and `out`
// channel 0's, both from the same loads (`channel` unused): the loads and
// their three ways' shuffles are most of the work, and each channel on its
// own took them twice.
HWY_INLINE void BoxSums16(const std::uint16_t* sums, int k, int step, int channel,
                          std::int64_t count, float bias, float* out, float scale = 1.f,
                          float* high = nullptr) {
  const DBox32 d32;
  const hn::Rebind<std::uint16_t, DBox32> d16h;  // one u16 per 32-bit lane
  const DBox16 d16;
  const hn::Repartition<std::uint64_t, DBox32> d64;
  const VF vbias = hn::Set(DF(), bias), vscale = hn::Set(DF(), scale);
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d32));
  const auto low16 = hn::Set(d32, 0xFFFFu);
  const int g = k * step;
  if (high != nullptr) channel = 0;
  // An element of two sums: their sum (one channel), or one of them (UV pairs).
  auto pair = [&](hn::Vec<DBox32> v, int ch) {
    return step == 1 ? hn::Add(hn::And(v, low16), hn::ShiftRight<16>(v))
           : ch ? hn::ShiftRight<16>(v)
                : hn::And(v, low16);
  };
  // An element of four sums (in the even 32-bit lanes): parts 0 + 2 and 1 + 3
  // (halves), then as a pair.
  auto halves = [&](hn::Vec<decltype(d64)> v) {
    return hn::BitCast(d32, hn::Add(v, hn::ShiftRight<32>(v)));
  };
  auto quad = [&](hn::Vec<DBox32> w, int ch) {
    return step == 1 ? hn::Add(hn::And(w, low16), hn::And(hn::ShiftRight<16>(w), low16))
           : ch ? hn::And(hn::ShiftRight<16>(w), low16)
                : hn::And(w, low16);
  };
  // One vector of outputs stored: of(ch) is channel ch's, `at` the first.
  auto store = [&](auto&& of, std::int64_t at) {
    StoreScaled(of(channel), vbias, vscale, out + at);
    if (high != nullptr) StoreScaled(of(1), vbias, vscale, high + at);
  };
  std::int64_t o = 0;
  if (g == 1) {
    for (; o + lanes <= count; o += lanes)
      StoreScaled(hn::PromoteTo(d32, hn::LoadU(d16h, sums + o)), vbias, vscale, out + o);
  } else if (g == 2) {
    for (; o + lanes <= count; o += lanes) {
      const auto v = hn::LoadU(d32, reinterpret_cast<const std::uint32_t*>(sums + 2 * o));
      store([&](int ch) { return pair(v, ch); }, o);
    }
  } else if (g == 3) {  // one sum per element: a plane of its own, 3 samples
    const hn::Half<DBox16> dh;
    for (; o + 2 * lanes <= count; o += 2 * lanes) {
      const auto v = Sum3(d16, sums + 3 * o);
      StoreScaled(hn::PromoteTo(d32, hn::LowerHalf(dh, v)), vbias, vscale, out + o);
      StoreScaled(hn::PromoteTo(d32, hn::UpperHalf(dh, v)), vbias, vscale, out + o + lanes);
    }
  } else if (g == 4) {  // two vectors of four-sum elements per store
    auto part = [&](const std::uint16_t* p) {
      return halves(hn::LoadU(d64, reinterpret_cast<const std::uint64_t*>(p)));
    };
    for (; o + lanes <= count; o += lanes) {
      const auto lo = part(sums + 4 * o), hi = part(sums + 4 * o + 2 * lanes);
      store([&](int ch) { return hn::ConcatEven(d32, quad(hi, ch), quad(lo, ch)); }, o);
    }
  } else if (g == 6) {  // two per element: 6 samples, or 3 UV pairs
    for (; o + lanes <= count; o += lanes) {
      const auto v = Sum3(d32, sums + 6 * o);
      store([&](int ch) { return pair(v, ch); }, o);
    }
  } else if (g == 12) {  // four per element: 12 samples, or 6 UV pairs
    for (; o + lanes <= count; o += lanes) {
      const auto lo = halves(Sum3(d64, sums + 12 * o)),
                 hi = halves(Sum3(d64, sums + 12 * o + 6 * lanes));
      store([&](int ch) { return hn::ConcatEven(d32, quad(hi, ch), quad(lo, ch)); }, o);
    }
  }
  BoxSums16From(o, sums, k, step, channel, count, bias, scale, out);
  if (high != nullptr) BoxSums16From(o, sums, k, step, 1, count, bias, scale, high);
}

// As BoxSums16, for sums of up to 16 bits each (area's fixed-point vertical
// pass keeps them below 2^15, not below 12 x 12 x 255): each 32-bit lane's
// two sums are taken apart (added, or the channel's picked) before any add,
// so that no part carries into the next. high: as BoxSums16's.
HWY_INLINE void BoxSumsWide(const std::uint16_t* sums, int k, int step, int channel,
                            std::int64_t count, float bias, float scale, float* out,
                            float* high = nullptr) {
  const int g = k * step;
  // A sum or a pair per output: BoxSums16 adds nothing in 16 bits there.
  if (g <= 2) return BoxSums16(sums, k, step, channel, count, bias, out, scale, high);
  const DBox32 d32;
  const hn::Rebind<std::uint16_t, DBox32> d16h;
  const hn::Repartition<std::uint64_t, DBox32> d64;
  const VF vbias = hn::Set(DF(), bias), vscale = hn::Set(DF(), scale);
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d32));
  const auto low16 = hn::Set(d32, 0xFFFFu);
  if (high != nullptr) channel = 0;
  auto pair = [&](hn::Vec<DBox32> v, int ch) {
    return step == 1 ? hn::Add(hn::And(v, low16), hn::ShiftRight<16>(v))
           : ch ? hn::ShiftRight<16>(v)
                : hn::And(v, low16);
  };
  // The two lanes of each 64-bit element added (into its even lane).
  auto halves = [&](hn::Vec<DBox32> w) {
    const auto t = hn::BitCast(d64, w);
    return hn::BitCast(d32, hn::Add(t, hn::ShiftRight<32>(t)));
  };
  auto store = [&](auto&& of, std::int64_t at) {
    StoreScaled(of(channel), vbias, vscale, out + at);
    if (high != nullptr) StoreScaled(of(1), vbias, vscale, high + at);
  };
  std::int64_t o = 0;
  if (g == 3) {
    for (; o + lanes <= count; o += lanes) {
      hn::Vec<decltype(d16h)> a, b, c;
      hn::LoadInterleaved3(d16h, sums + 3 * o, a, b, c);
      StoreScaled(
          hn::Add(hn::Add(hn::PromoteTo(d32, a), hn::PromoteTo(d32, b)), hn::PromoteTo(d32, c)),
          vbias, vscale, out + o);
    }
  } else if (g == 6) {
    for (; o + lanes <= count; o += lanes) {
      hn::Vec<DBox32> a, b, c;
      hn::LoadInterleaved3(d32, reinterpret_cast<const std::uint32_t*>(sums + 6 * o), a, b, c);
      store([&](int ch) { return hn::Add(hn::Add(pair(a, ch), pair(b, ch)), pair(c, ch)); }, o);
    }
  } else if (g == 4) {  // elements of four sums: each 32-bit lane's pair, then halves
    for (; o + lanes <= count; o += lanes) {
      const auto lo = hn::LoadU(d32, reinterpret_cast<const std::uint32_t*>(sums + 4 * o));
      const auto hi =
          hn::LoadU(d32, reinterpret_cast<const std::uint32_t*>(sums + 4 * o + 2 * lanes));
      store([&](int ch) { return hn::ConcatEven(d32, halves(pair(hi, ch)), halves(pair(lo, ch))); },
            o);
    }
  } else if (g == 12) {  // three ways of four-sum elements
    for (; o + lanes <= count; o += lanes) {
      hn::Vec<decltype(d64)> a0, b0, c0, a1, b1, c1;
      hn::LoadInterleaved3(d64, reinterpret_cast<const std::uint64_t*>(sums + 12 * o), a0, b0, c0);
      hn::LoadInterleaved3(d64, reinterpret_cast<const std::uint64_t*>(sums + 12 * o + 6 * lanes),
                           a1, b1, c1);
      auto three = [&](hn::Vec<decltype(d64)> a, hn::Vec<decltype(d64)> b, hn::Vec<decltype(d64)> c,
                       int ch) {
        return halves(hn::Add(hn::Add(pair(hn::BitCast(d32, a), ch), pair(hn::BitCast(d32, b), ch)),
                              pair(hn::BitCast(d32, c), ch)));
      };
      store(
          [&](int ch) { return hn::ConcatEven(d32, three(a1, b1, c1, ch), three(a0, b0, c0, ch)); },
          o);
    }
  }
  BoxSums16From(o, sums, k, step, channel, count, bias, scale, out);
  if (high != nullptr) BoxSums16From(o, sums, k, step, 1, count, bias, scale, high);
}
#endif

#if HWY_TARGET == HWY_AVX3_DL
// Picks with AVX-512 VBMI: vector v (outputs [16 v, 16 v + 16)) loads the
// `span` bytes (one, two or three registers; see span below) at row + v
// span, whole registers while they lie within the `avail` bytes of the row
// and masked to them after (no read past it), and output i of channel c
// takes byte base[i] + channel[c] of them (base: one per 32-bit lane) into
// the low byte of its 32-bit lane: one permute across the registers, no
// tables. As XPickRow stores: whole levels (raw), else
// level x 32767 + offset in float; whole vectors (the rows are padded to
// them). `pair` (bilinear at an even ratio; not raw): each output is the mean
// of its byte and the byte `pair` on, both taken by the one permute (bytes 0
// and 2 of the lane) and added as 16-bit halves, as XPickRowG's pairs;
// with `row2` (pairs only), the pairs of that row too, added (bilinear's two
// rows of half weight down: the outputs hold the sum of both rows' means).
// `weights` (with row2): bilinear's two rows of any weights down, the two
// rows' means (single picks too, without `pair`: the two rows' bytes)
// weighed by weights[0] and weights[1] (which add up to 1).
// span: up to 192 bytes (12 an output): past 128, the lanes whose bytes lie
// in the third register take them by a second permute (of the second and
// third). ahead (non-zero): the bytes row + ahead on (and row2 + ahead) are
// prefetched as these are read, a vector's span at a time: the next output
// row's source rows, ready when it comes (frames fresh from memory: 4K ->
// 320 letterboxed 0.73-0.78 of the time, 4K -> 640 0.82-0.85, 1080p -> 320
// 0.73-0.76; frames in the cache 0.84-0.99, and 1.02-1.08 at 4K -> 640
// stretched; in-process A/B, session 20, Intel Xeon).
template <int C>
void PermutePicks(const std::uint8_t* row, std::int64_t avail, std::int64_t span, __m512i base,
                  const int (&channel)[C], std::int64_t count, float* const (&out)[C], bool raw,
                  std::int32_t offset, int pair = 0, const std::uint8_t* row2 = nullptr,
                  const float* weights = nullptr, std::ptrdiff_t ahead = 0) {
  const DF df;
  const VF one = hn::Set(df, pair != 0 ? 16383.5f : 32767.f),
           off = hn::Set(df, static_cast<float>(offset));
  const bool weighed = row2 != nullptr && weights != nullptr;
  const float wunit = pair != 0 ? 16383.5f : 32767.f;
  const VF w1 = hn::Set(df, weighed ? wunit * weights[0] : 0.f),
           w2 = hn::Set(df, weighed ? wunit * weights[1] : 0.f);
  __m512i idx[C];
  for (int c = 0; c < C; ++c) {
    idx[c] = _mm512_add_epi32(base, _mm512_set1_epi32(channel[c]));
    if (pair != 0)
      idx[c] = _mm512_or_si512(
          idx[c], _mm512_slli_epi32(_mm512_add_epi32(idx[c], _mm512_set1_epi32(pair)), 16));
  }
  const __mmask64 low = pair != 0 ? 0x5555555555555555ull   // bytes 0 and 2 of each 32-bit lane
                                  : 0x1111111111111111ull;  // byte 0 of each 32-bit lane
  const __m512i ones = _mm512_set1_epi16(1);
  // The first `n` bytes of a register (0 to 64).
  auto first = [](std::int64_t n) {
    return n >= 64  ? static_cast<__mmask64>(~0ull)
           : n <= 0 ? __mmask64{0}
                    : static_cast<__mmask64>((1ull << n) - 1);
  };
  // Spans of more than 128 bytes (at most 192: 12 bytes an output) take a
  // third register: the lanes whose last byte lies past the first two take
  // theirs from the second and third, by a second permute.
  const int registers = span > 128 ? 3 : span > 64 ? 2 : 1;
  __mmask64 near[C], far[C];
  __m512i idx_far[C];
  for (int c = 0; c < C; ++c) {
    near[c] = low;
    far[c] = 0;
    idx_far[c] = _mm512_sub_epi8(idx[c], _mm512_set1_epi8(64));
    if (registers < 3) continue;
    alignas(64) std::int32_t lane[16];
    _mm512_store_si512(lane, idx[c]);
    for (int i = 0; i < 16; ++i) {
      const int last = pair != 0 ? (lane[i] >> 16) & 0xFF : lane[i] & 0xFF;
      if (last >= 128) far[c] |= __mmask64{0xF} << (4 * i);
    }
    far[c] &= low;
    near[c] = low & ~far[c];
  }
  float* dst[C];
  for (int c = 0; c < C; ++c)
    dst[c] = out[c];
  // The loop compiled per kind (registers a span, pairs, the rows and how
  // they add), so that no test of them runs per vector, and whole registers
  // loaded unmasked while they lie inside the row. Before, the kinds were
  // tested per vector: 1080p -> 320 bilinear took 0.80 of the time (NV12;
  // 0.88 frames fresh from memory), I420 0.63-0.76, 1080p -> 640 0.83; the
  // 4K rows, whose frame streams from the L3, 0.94-1.02 (in-process A/B,
  // session 22, Intel Xeon).
  // kRows: 0 one row (kRaw: whole levels), 1 two rows added, 2 two weighed.
  auto run = [&](auto registers_c, auto pair_c, auto rows_c, auto raw_c) {
    constexpr int kRegisters = decltype(registers_c)::value;
    constexpr bool kPair = decltype(pair_c)::value;
    constexpr int kRows = decltype(rows_c)::value;
    constexpr bool kRaw = decltype(raw_c)::value;
    // One or two channels' indices and the constants as plain locals of this
    // loop, not elements of arrays (those the compiler kept on the stack,
    // loading them per vector): NV12 chroma's two channels, calls alternated
    // in one process, 1080p -> 640 bilinear 0.92 of the time, -> 320 0.90;
    // one channel (I420) unchanged (Zen 5, session 35).
    const __m512i i0 = idx[0], i1 = idx[C - 1], f0 = idx_far[0], f1 = idx_far[C - 1];
    const __mmask64 n0 = near[0], n1 = near[C - 1], x0 = far[0], x1 = far[C - 1];
    const VF one_c = one, off_c = off, w1_c = w1, w2_c = w2;
    // The rows, their bounds and the outputs too: read through the closure,
    // every one was loaded again after each store (a vector store may alias
    // anything), about ten loads a vector.
    const __m512i ones_c = ones;
    const __mmask64 low_c = low;
    const std::uint8_t* const row_c = row;
    const std::uint8_t* const row2_c = row2;
    const std::int64_t span_c = span, avail_c = avail, count_c = count;
    const std::ptrdiff_t ahead_c = ahead;
    float* const out0 = dst[0];
    float* const out1 = dst[C - 1];
    // Picks of one row from its registers.
    auto pick = [&](int c, const __m512i(&r)[3]) {
      const __m512i ic = C > 2 ? idx[c] : c == 0 ? i0 : i1;
      if constexpr (kRegisters == 3) {
        const __m512i fc = C > 2 ? idx_far[c] : c == 0 ? f0 : f1;
        const __mmask64 nc = C > 2 ? near[c] : c == 0 ? n0 : n1;
        const __mmask64 xc = C > 2 ? far[c] : c == 0 ? x0 : x1;
        return _mm512_or_si512(_mm512_maskz_permutex2var_epi8(nc, r[0], ic, r[1]),
                               _mm512_maskz_permutex2var_epi8(xc, r[1], fc, r[2]));
      } else if constexpr (kRegisters == 2) {
        return _mm512_maskz_permutex2var_epi8(low_c, r[0], ic, r[1]);
      } else {
        return _mm512_maskz_permutexvar_epi8(low_c, ic, r[0]);
      }
    };
    auto body = [&](std::int64_t o, std::int64_t v, auto whole_c) {
      constexpr bool kWhole = decltype(whole_c)::value;
      const std::uint8_t* at = row_c + v * span_c;
      __m512i r1[3], r2[3];
      const std::int64_t left = kWhole ? 0 : std::min(avail_c - v * span_c, span_c);
      for (int k = 0; k < kRegisters; ++k) {
        if constexpr (kWhole) {
          r1[k] = _mm512_loadu_si512(at + 64 * k);
          if constexpr (kRows > 0) r2[k] = _mm512_loadu_si512(row2_c + v * span_c + 64 * k);
        } else {
          r1[k] = _mm512_maskz_loadu_epi8(first(left - 64 * k), at + 64 * k);
          if constexpr (kRows > 0)
            r2[k] = _mm512_maskz_loadu_epi8(first(left - 64 * k), row2_c + v * span_c + 64 * k);
        }
      }
      if (ahead_c != 0) {
        for (int k = 0; k < kRegisters; ++k) {
          _mm_prefetch(reinterpret_cast<const char*>(at + ahead_c + 64 * k), _MM_HINT_T0);
          if constexpr (kRows > 0)
            _mm_prefetch(reinterpret_cast<const char*>(row2_c + v * span_c + ahead_c + 64 * k),
                         _MM_HINT_T0);
        }
      }
      for (int c = 0; c < C; ++c) {
        float* const to = C > 2 ? dst[c] : c == 0 ? out0 : out1;
        __m512i picked = pick(c, r1);
        if constexpr (kPair) picked = _mm512_madd_epi16(picked, ones_c);
        if constexpr (kRows == 2) {
          const VF a = hn::ConvertTo(df, hn::Vec<DI>{picked});
          const VF b = hn::ConvertTo(
              df, hn::Vec<DI>{kPair ? _mm512_madd_epi16(pick(c, r2), ones_c) : pick(c, r2)});
          hn::StoreU(hn::MulAdd(a, w1_c, hn::MulAdd(b, w2_c, off_c)), df, to + o);
          continue;
        }
        if constexpr (kRows == 1)
          picked = _mm512_add_epi32(picked, _mm512_madd_epi16(pick(c, r2), ones_c));
        const hn::Vec<DI> level{picked};
        if constexpr (kRaw) {
          hn::StoreU(hn::BitCast(df, level), df, to + o);
        } else {
          hn::StoreU(hn::MulAdd(hn::ConvertTo(df, level), one_c, off_c), df, to + o);
        }
      }
    };
    // Whole registers while they lie inside the row, then masked to it.
    std::int64_t o = 0, v = 0;
    for (; o < count_c && v * span_c + 64 * kRegisters <= avail_c; o += 16, ++v)
      body(o, v, std::true_type());
    for (; o < count_c; o += 16, ++v)
      body(o, v, std::false_type());
  };
  using Yes = std::true_type;
  using No = std::false_type;
  auto rows = [&](auto registers_c) {
    if (pair == 0) {
      if (row2 != nullptr && weighed)
        return run(registers_c, No(), std::integral_constant<int, 2>(), No());
      return raw ? run(registers_c, No(), std::integral_constant<int, 0>(), Yes())
                 : run(registers_c, No(), std::integral_constant<int, 0>(), No());
    }
    if (row2 == nullptr) return run(registers_c, Yes(), std::integral_constant<int, 0>(), No());
    return weighed ? run(registers_c, Yes(), std::integral_constant<int, 2>(), No())
                   : run(registers_c, Yes(), std::integral_constant<int, 1>(), No());
  };
  registers == 3   ? rows(std::integral_constant<int, 3>())
  : registers == 2 ? rows(std::integral_constant<int, 2>())
                   : rows(std::integral_constant<int, 1>());
}
#endif

#if HWY_TARGET != HWY_SCALAR
// Outputs [0, lanes) of picks 3 bytes apart from p, one byte per 32-bit lane,
// for vectors of two or four 16-byte blocks: block b loaded from p + 12 b
// (four outputs' bytes), the last from 4 bytes earlier so that it ends at
// the last output's element, and one byte shuffle placing bytes 0, 3, 6 and
// 9 of each block (4, 7, 10 and 13 of the last) in its four lanes. Four
// instructions on AVX2 where the three-way interleaved load and the
// widening took nine.
template <class D8>
HWY_INLINE hn::Vec<D8> PickThirds(D8 d8, const std::uint8_t* p) {
  constexpr std::size_t kBlocks = hn::MaxLanes(d8) / 16;
  static_assert(kBlocks == 2 || kBlocks == 4);
  alignas(64) static constexpr std::uint8_t kTable[2][64] = {
      {0, 128, 128, 128, 3, 128, 128, 128, 6,  128, 128, 128, 9,  128, 128, 128,
       4, 128, 128, 128, 7, 128, 128, 128, 10, 128, 128, 128, 13, 128, 128, 128},
      {0, 128, 128, 128, 3, 128, 128, 128, 6,  128, 128, 128, 9,  128, 128, 128,
       0, 128, 128, 128, 3, 128, 128, 128, 6,  128, 128, 128, 9,  128, 128, 128,
       0, 128, 128, 128, 3, 128, 128, 128, 6,  128, 128, 128, 9,  128, 128, 128,
       4, 128, 128, 128, 7, 128, 128, 128, 10, 128, 128, 128, 13, 128, 128, 128}};
  const hn::Half<D8> dh;
  hn::Vec<D8> bytes;
  if constexpr (kBlocks == 2) {
    bytes = hn::Combine(d8, hn::LoadU(dh, p + 8), hn::LoadU(dh, p));
  } else {
    const hn::Half<decltype(dh)> dq;
    bytes = hn::Combine(d8, hn::Combine(dh, hn::LoadU(dq, p + 32), hn::LoadU(dq, p + 24)),
                        hn::Combine(dh, hn::LoadU(dq, p + 12), hn::LoadU(dq, p)));
  }
  return hn::TableLookupBytesOr0(bytes, hn::Load(d8, kTable[kBlocks == 4]));
}

// The elements of outputs [0, lanes) picked k apart from p, G bytes each (an
// element of 8, 16 or 32 bits, or the first way of three), one per 32-bit
// lane: the output's byte is byte `channel` of its lane.
template <int G>
HWY_INLINE hn::Vec<DBox32> PickLoad(const std::uint8_t* p) {
  const DBox32 d32;
  const hn::Rebind<std::uint8_t, DBox32> d8q;    // one byte per 32-bit lane
  const hn::Rebind<std::uint16_t, DBox32> d16h;  // one u16 per 32-bit lane
  if constexpr (G == 1) {
    return hn::PromoteTo(d32, hn::LoadU(d8q, p));
  } else if constexpr (G == 2) {
    return hn::PromoteTo(d32, hn::LoadU(d16h, reinterpret_cast<const std::uint16_t*>(p)));
  } else if constexpr (G == 4) {
    return hn::LoadU(d32, reinterpret_cast<const std::uint32_t*>(p));
  } else if constexpr (G == 3) {
    const hn::Repartition<std::uint8_t, DBox32> d8;
    if constexpr (hn::MaxLanes(d8) >= 32) {
      return hn::BitCast(d32, PickThirds(d8, p));
    } else {
      hn::Vec<decltype(d8q)> a, b, c;
      hn::LoadInterleaved3(d8q, p, a, b, c);
      return hn::PromoteTo(d32, a);
    }
  } else if constexpr (G == 6) {
    return FirstOfThree16(p);
  } else {  // 12
    return FirstOfThree32(p);
  }
}

// Byte `channel` of each lane of PickLoad's elements, as a whole level:
// one byte shuffle (byte shift / 8 of each lane, its other three zeroed;
// the shuffle counts bytes from its 16-byte block's start) in place of a
// shift and a mask. With max(y - y_offset, 0) as one saturating
// subtract (ToRgb), calls alternated in one process, the tensor cached or
// 4 MiB written between calls: 720p -> 640 nearest 0.89-0.92 of the time,
// letterboxed 0.92, -> 320 letterboxed 0.96, 4K -> 640 0.95-0.96.
template <int G>
HWY_INLINE hn::Vec<DBox32> PickChannel(hn::Vec<DBox32> v, int shift) {
  if constexpr (G == 1) return v;                             // bytes promoted, channel 0
  if constexpr (G == 3) return hn::ShiftRightSame(v, shift);  // bytes promoted
  const hn::Repartition<std::uint8_t, DBox32> d8;
  const DBox32 d32;
  const auto lane_start = hn::And(hn::ShiftLeft<2>(hn::Iota(d32, 0)), hn::Set(d32, 15u));
  const auto pick =
      hn::Or(lane_start, hn::Set(d32, 0x80808000u | static_cast<std::uint32_t>(shift / 8)));
  return hn::BitCast(d32, hn::TableLookupBytesOr0(hn::BitCast(d8, v), hn::BitCast(d8, pick)));
}
#endif

// Nearest at an integer ratio across: out[c][o] = row[(o * k) * step +
// channel[c]] as a whole level (the blocks path's nearest rows hold 32-bit
// integers), outputs [0, count). g = k * step bytes per output: 1, 2, 4
// (elements of 8, 16, 32 bits) or 3, 6, 12 (elements of g / 3 bytes, three
// ways interleaved, the first way kept); the output's byte of its element.
// Not raw (bilinear at an odd ratio, whose outputs fall on samples): as the
// blocks path's bilinear rows, level x 32767 + offset, in float.
// `avail`: the bytes of the row from `row` on (whole vectors read no further).
// XPickRowG has g and raw fixed, so that its loop has no branch but its own
// (a run-time g and raw cost half of the picks' time: 720p -> 320 nearest).
// kPair (bilinear at an even ratio; never raw): each output is the mean of
// its byte and the byte one sample (`step` bytes) on, both in its element
// (`row` starts at the first output's first sample), level x 32767 + offset
// as the picks': the sum of the two x 16383.5, exact in float.
// kTwo (pairs only): the pairs of row2 too, the two rows' means weighed by
// weights[0] and weights[1] (bilinear's two rows down, PermutePicks' weights).
// ahead: as PermutePicks' (the next output row's source rows prefetched).
template <int C, int G, bool kRaw, bool kPair = false, bool kTwo = false>
void XPickRowG(const std::uint8_t* row, std::int64_t avail, std::int64_t count,
               const int (&channel)[C], float* const (&out)[C], std::int32_t offset, int step = 0,
               const std::uint8_t* row2 = nullptr, const float* weights = nullptr,
               std::ptrdiff_t ahead = 0) {
  static_assert(!kTwo || (kPair && !kRaw), "two rows are weighed pairs");
  std::int64_t o = 0;
  const float unit = kPair ? 16383.5f : 32767.f;
  const float u1 = kTwo ? unit * weights[0] : unit, u2 = kTwo ? unit * weights[1] : 0.f;
#if HWY_TARGET != HWY_SCALAR
  const DBox32 d32;
  const DF df;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d32));
  const VF one = hn::Set(df, unit), off = hn::Set(df, static_cast<float>(offset));
  const VF w1 = hn::Set(df, u1), w2 = hn::Set(df, u2);
  int shift[C];
  hn::Vec<DBox8> pattern[C];  // kPair: the pair's two bytes (PairOf)
  for (int c = 0; c < C; ++c) {
    shift[c] = 8 * channel[c];
    pattern[c] = PairPattern(channel[c], channel[c] + step);
  }
  // Outputs [o, o + lanes) from their elements at p (and p2: kTwo).
  auto vector = [&](const std::uint8_t* p, const std::uint8_t* p2) {
    if (ahead != 0) {
      for (std::int64_t b = 0; b < lanes * G; b += 64) {
        hwy::Prefetch(p + ahead + b);
        if constexpr (kTwo) hwy::Prefetch(p2 + ahead + b);
      }
    }
    const hn::Vec<DBox32> v = PickLoad<G>(p);
    hn::Vec<DBox32> v2;
    if constexpr (kTwo) v2 = PickLoad<G>(p2);
    for (int c = 0; c < C; ++c) {
      const auto level = kPair ? PairOf(v, pattern[c]) : PickChannel<G>(v, shift[c]);
      if constexpr (kTwo) {
        const auto level2 = PairOf(v2, pattern[c]);
        const VF first = hn::ConvertTo(df, hn::BitCast(DI(), level));
        const VF next = hn::ConvertTo(df, hn::BitCast(DI(), level2));
        hn::StoreU(hn::MulAdd(first, w1, hn::MulAdd(next, w2, off)), df, out[c] + o);
        continue;
      }
      if constexpr (kRaw) {
        hn::StoreU(hn::BitCast(df, level), df, out[c] + o);
      } else {
        hn::StoreU(hn::MulAdd(hn::ConvertTo(df, hn::BitCast(DI(), level)), one, off), df,
                   out[c] + o);
      }
    }
  };
  for (; o + lanes <= count && (o + lanes) * G <= avail; o += lanes)
    vector(row + o * G, kTwo ? row2 + o * G : nullptr);
  // The last outputs (a vector at most: picks that start mid-group end a
  // few bytes short of whole elements) from a copy of their bytes; the rows
  // written are padded to whole vectors.
  if (o < count && count - o <= lanes) {
    ahead = 0;  // the copy below has no rows on
    constexpr std::size_t kBytes = hn::MaxLanes(DBox32()) * 12;
    HWY_ALIGN std::uint8_t last[kBytes];
    HWY_ALIGN std::uint8_t last2[kTwo ? kBytes : 1];
    const auto n = static_cast<std::size_t>(std::min(avail, count * G) - o * G);
    CopyTail<kBytes>(DBox8(), last, row + o * G, n);
    if constexpr (kTwo) CopyTail<kBytes>(DBox8(), last2, row2 + o * G, n);
    vector(last, last2);
    o = count;
  }
#else
  (void)avail;  // one output at a time reads no further than its byte
  (void)ahead;
#endif
  for (; o < count; ++o) {
    for (int c = 0; c < C; ++c) {
      const std::int32_t level = row[o * G + channel[c]];
      if constexpr (kRaw) {
        std::memcpy(out[c] + o, &level, sizeof level);
      } else if constexpr (kTwo) {
        const std::int32_t first = level + row[o * G + channel[c] + step];
        const std::int32_t next = row2[o * G + channel[c]] + row2[o * G + channel[c] + step];
        out[c][o] = static_cast<float>(first) * u1 +
                    (static_cast<float>(next) * u2 + static_cast<float>(offset));
      } else if constexpr (kPair) {
        const std::int32_t second = row[o * G + channel[c] + step];
        out[c][o] = static_cast<float>(level + second) * unit + static_cast<float>(offset);
      } else {
        out[c][o] = static_cast<float>(level * 32767 + offset);
      }
    }
  }
}

template <int C>
void XPickRow(const std::uint8_t* row, std::int64_t avail, int k, int step, std::int64_t count,
              const int (&channel)[C], float* const (&out)[C], bool raw = true,
              std::int32_t offset = 0, bool pair = false, std::ptrdiff_t ahead = 0) {
  const int g = k * step;
#if HWY_TARGET == HWY_AVX3_DL
  // g 3 and 6 (6: two registers; pairs too, whose g is even) by permutes,
  // measured ahead of the three-way loads: 1080p -> 640 4% of the time;
  // NV12 1080p -> 320 bilinear, whose UV pairs are picked 3 apart, 2-3%; its
  // luma pairs 3-4% (TakesPicks). Pairs of 12 (three registers: 4K -> 320,
  // luma and NV12's UV) too, in place of the rows summed as words and the
  // sums resampled (session 20; see LumaRowBlocks).
  if (g == 3 || g == 6 || (g == 12 && pair)) {
    const __m512i base =
        _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                           _mm512_set1_epi32(g));
    PermutePicks<C>(row, avail, 16 * g, base, channel, count, out, raw && !pair, offset,
                    pair ? step : 0, nullptr, nullptr, ahead);
    return;
  }
#endif
  if (pair) {  // g: 2, 4, 6 or 12 (k even)
    switch (g) {
      case 2:
        return XPickRowG<C, 2, false, true>(row, avail, count, channel, out, offset, step, nullptr,
                                            nullptr, ahead);
      case 4:
        return XPickRowG<C, 4, false, true>(row, avail, count, channel, out, offset, step, nullptr,
                                            nullptr, ahead);
      case 6:
        return XPickRowG<C, 6, false, true>(row, avail, count, channel, out, offset, step, nullptr,
                                            nullptr, ahead);
      default:
        return XPickRowG<C, 12, false, true>(row, avail, count, channel, out, offset, step, nullptr,
                                             nullptr, ahead);
    }
  }
  auto with = [&](auto raw_t) {
    constexpr bool kRaw = decltype(raw_t)::value;
    switch (g) {
      case 1:
        return XPickRowG<C, 1, kRaw>(row, avail, count, channel, out, offset, 0, nullptr, nullptr,
                                     ahead);
      case 2:
        return XPickRowG<C, 2, kRaw>(row, avail, count, channel, out, offset, 0, nullptr, nullptr,
                                     ahead);
      case 3:
        return XPickRowG<C, 3, kRaw>(row, avail, count, channel, out, offset, 0, nullptr, nullptr,
                                     ahead);
      case 4:
        return XPickRowG<C, 4, kRaw>(row, avail, count, channel, out, offset, 0, nullptr, nullptr,
                                     ahead);
      case 6:
        return XPickRowG<C, 6, kRaw>(row, avail, count, channel, out, offset, 0, nullptr, nullptr,
                                     ahead);
      default:  // 12 (fits_without_tables)
        return XPickRowG<C, 12, kRaw>(row, avail, count, channel, out, offset, 0, nullptr, nullptr,
                                      ahead);
    }
  };
  raw ? with(std::true_type()) : with(std::false_type());
}

#if HWY_TARGET == HWY_AVX3_DL
// Bilinear's pairs of g = 6 or 12 bytes an output (luma 6x across: 1080p ->
// 320, 4K -> 640; 12x: 4K -> 320; the UV pairs of 4K -> 320, 6x, step 2) in
// two rows of half weight down: both rows' pairs taken by the permutes
// (PermutePicks) and added, in one pass. out[c]: the sum of the two rows'
// pair means of channel[c] x 32767, plus offset. ahead: see PermutePicks.
template <int C>
HWY_INLINE void PairPermutes(const std::uint8_t* row0, const std::uint8_t* row1, std::int64_t avail,
                             int g, int step, std::int64_t count, const int (&channel)[C],
                             float* const (&out)[C], std::int32_t offset,
                             std::ptrdiff_t ahead = 0) {
  const __m512i base = _mm512_mullo_epi32(
      _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(g));
  PermutePicks<C>(row0, avail, 16 * g, base, channel, count, out, false, offset, step, row1,
                  nullptr, ahead);
}
#endif

// Bilinear's pairs (an even ratio across, g = 2, 4, 6 or 12 bytes an output)
// of two rows of any weights down (weights[0], weights[1], adding up to 1):
// out = the two rows' pair means weighed, x 32767, plus offset: the row the
// final pass would have summed from the two rows' own, in one pass.
template <int C>
void PickPairsTwoRows(const std::uint8_t* row0, const std::uint8_t* row1, std::int64_t avail, int k,
                      int step, std::int64_t count, const int (&channel)[C], float* const (&out)[C],
                      std::int32_t offset, const float* weights, std::ptrdiff_t ahead = 0) {
  const int g = k * step;
#if HWY_TARGET == HWY_AVX3_DL
  if (g == 6 || g == 12) {
    const __m512i base =
        _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                           _mm512_set1_epi32(g));
    PermutePicks<C>(row0, avail, 16 * g, base, channel, count, out, false, offset, step, row1,
                    weights, ahead);
    return;
  }
#endif
  switch (g) {
    case 2:
      return XPickRowG<C, 2, false, true, true>(row0, avail, count, channel, out, offset, step,
                                                row1, weights, ahead);
    case 4:
      return XPickRowG<C, 4, false, true, true>(row0, avail, count, channel, out, offset, step,
                                                row1, weights, ahead);
    case 6:
      return XPickRowG<C, 6, false, true, true>(row0, avail, count, channel, out, offset, step,
                                                row1, weights, ahead);
    default:
      return XPickRowG<C, 12, false, true, true>(row0, avail, count, channel, out, offset, step,
                                                 row1, weights, ahead);
  }
}

// Rows of the blocks path for area whose horizontal axis is an exact box (k
// samples a step apart per output) while its vertical one is not: the n
// source rows `rows` summed (SumRows; or, below, straight from their bytes),
// each output's k sums added, in the blocks path's units ((mean - offset) x
// 32767, times the rows), no tables.
// C channels of the plane (UV pairs: 2, at channel[c]), into out[c].
template <int C>
void XBoxRows(const std::uint8_t* plane, std::int64_t stride, const std::int64_t* rows, int n,
              std::int64_t x0, int k, int step, std::int64_t count, const int (&channel)[C],
              float* const (&out)[C], int offset, std::uint16_t* sums) {
  const auto bias = static_cast<float>(n * k * offset);
  const float scale = 32767.f / static_cast<float>(k);
  // Up to 4 rows of 2 or 4 bytes an output (area 2x or 4x across: 720p ->
  // 640 and -> 320, one row at a time below 1.6 rows down) are summed
  // straight from their bytes, each output vector in one pass (BoxSums), in
  // place of a row of 16-bit sums written and read again per channel: the
  // same integer sums. 720p NV12 -> 640 area 0.69-0.76 of the time, -> 320
  // 0.84-0.86, I420 -> 320 0.89-0.93, AVX2 -> 320 0.86-0.88 (in-process A/B).
  if (k * step <= 4 && n <= 4) {
    const std::uint8_t* from[4];
    for (int t = 0; t < n; ++t)
      from[t] = plane + rows[t] * stride + x0;
    if constexpr (C == 2) {  // U and V from one load (step 2)
      BoxSums(from, n, k, step, channel[0], count, bias, out[0], scale, 0, out[1]);
    } else {
      for (int c = 0; c < C; ++c)
        BoxSums(from, n, k, step, channel[c], count, bias, out[c], scale);
    }
    return;
  }
  SumRows(plane + x0, stride, rows, n, k * step * count, sums);
  if constexpr (C == 2) {  // U and V from the same loads (step 2)
    const int low = channel[0] == 0 ? 0 : 1;
    return BoxSums16(sums, k, step, 0, count, bias, out[low], scale, out[1 - low]);
  }
  for (int c = 0; c < C; ++c)
    BoxSums16(sums, k, step, channel[c], count, bias, out[c], scale);
}

// The same rows by area's fixed-point vertical pass (plan v: all of the
// output row's source rows, full and partial, summed in one pass,
// VerticalSumRow), in units of v.units rows: in place of resampling each
// partial row on its own and weighing three rows in the final pass (4K ->
// 320 square, 12 across and 6.75 down). out[c] then holds (the weighed mean
// - offset) x 32767 x v.units.
template <int C>
void XBoxWeighedRows(const std::uint8_t* plane, std::int64_t stride, const RowSumPlan& v,
                     std::int64_t x0, int k, int step, std::int64_t count, const int (&channel)[C],
                     float* const (&out)[C], int offset, std::uint16_t* sums) {
  VerticalSumRow(plane + x0, stride, v, k * step * count, sums);
  const auto bias = static_cast<float>(k * offset) * v.units;
  const float scale = 32767.f / static_cast<float>(k);
  if constexpr (C == 2) {  // U and V from the same loads (step 2)
    const int low = channel[0] == 0 ? 0 : 1;
    return BoxSumsWide(sums, k, step, 0, count, bias, scale, out[low], out[1 - low]);
  }
  for (int c = 0; c < C; ++c)
    BoxSumsWide(sums, k, step, channel[c], count, bias, scale, out[c]);
}

// Luma's sums of k x k samples from (lx, ly) into s.luma, chroma's of
// kc x kc from (cx, cy) into s.cu and s.cv, offsets taken off (k^2 y_offset,
// kc^2 128); n outputs.
void BoxSumsDirect(const PreprocessJob& job, Scratch& s, int k, std::int64_t n, std::int64_t lx,
                   std::int64_t ly, std::int64_t cx, std::int64_t cy) {
  const int kc = k / 2;
  const std::uint8_t* rows[4];
  for (int t = 0; t < k; ++t)
    rows[t] = job.y + (ly + t) * job.y_stride + lx;
  BoxSums(rows, k, k, 1, 0, n, static_cast<float>(k * k * job.yuv->y_offset), s.luma.data());
  const auto cbias = static_cast<float>(kc * kc * 128);
  if (job.interleaved_uv) {
    const std::uint8_t* base = std::min(job.u, job.v);
    for (int t = 0; t < kc; ++t)
      rows[t] = base + (cy + t) * job.u_stride + 2 * cx;
    const int u = job.u < job.v ? 0 : 1;  // U is the low byte of each pair (NV12)
    BoxSums(rows, kc, kc, 2, u, n, cbias, s.cu.data(), 1.f, 0, s.cv.data());
  } else {
    for (int t = 0; t < kc; ++t)
      rows[t] = job.u + (cy + t) * job.u_stride + cx;
    BoxSums(rows, kc, kc, 1, 0, n, cbias, s.cu.data());
    for (int t = 0; t < kc; ++t)
      rows[t] = job.v + (cy + t) * job.v_stride + cx;
    BoxSums(rows, kc, kc, 1, 0, n, cbias, s.cv.data());
  }
}

// The same for 3 (luma only: its chroma, 1.5x, takes the blocks path), 6
// and 12, rows summed first.
void BoxSumsSummed(const PreprocessJob& job, Scratch& s, int k, std::int64_t n, std::int64_t lx,
                   std::int64_t ly, std::int64_t cx, std::int64_t cy) {
  const int kc = k / 2;
  std::int64_t src[12];
  for (int t = 0; t < k; ++t)
    src[t] = ly + t;
  SumRows(job.y + lx, job.y_stride, src, k, k * n, s.sums.data());
  BoxSums16(s.sums.data(), k, 1, 0, n, static_cast<float>(k * k * job.yuv->y_offset),
            s.luma.data());
  if (!job.box_chroma) return;
  const auto cbias = static_cast<float>(kc * kc * 128);
  for (int t = 0; t < kc; ++t)
    src[t] = cy + t;
  if (job.interleaved_uv) {
    SumRows(std::min(job.u, job.v) + 2 * cx, job.u_stride, src, kc, 2 * kc * n, s.sums.data());
    const bool u_low = job.u < job.v;  // U and V from the same loads
    BoxSums16(s.sums.data(), kc, 2, 0, n, cbias, u_low ? s.cu.data() : s.cv.data(), 1.f,
              u_low ? s.cv.data() : s.cu.data());
  } else {
    SumRows(job.u + cx, job.u_stride, src, kc, kc * n, s.sums.data());
    BoxSums16(s.sums.data(), kc, 1, 0, n, cbias, s.cu.data());
    SumRows(job.v + cx, job.v_stride, src, kc, kc * n, s.sums.data());
    BoxSums16(s.sums.data(), kc, 1, 0, n, cbias, s.cv.data());
  }
}

// The rows output row r of the box takes: luma's sums of k x k samples,
// offset folded ((level - y_offset) x k^2, weighed ys / k^2), chroma's of
// kc x kc (level - 128, x kc^2) when job.box_chroma.
void BoxRow(const PreprocessJob& job, Scratch& s, std::int64_t r) {
  const int k = job.box_k, kc = k / 2;
  const auto u = static_cast<std::size_t>(r);
  const std::int64_t lx = job.luma_x->first[0], ly = job.luma_y->first[u];
  const std::int64_t cx = job.chroma_x->first[0], cy = job.chroma_y->first[u];
  if (k == 2 || k == 4) {
    BoxSumsDirect(job, s, k, job.box_w, lx, ly, cx, cy);
  } else {
    BoxSumsSummed(job, s, k, job.box_w, lx, ly, cx, cy);
  }
  s.luma_taps.n = 1;
  s.luma_taps.row[0] = s.luma.data();
  s.luma_taps.w[0] = job.yuv->fy / static_cast<float>(k * k);
  if (!job.box_chroma) return;
  s.u_taps.n = s.v_taps.n = 1;
  s.u_taps.row[0] = s.cu.data();
  s.v_taps.row[0] = s.cv.data();
  s.u_taps.w[0] = s.v_taps.w[0] = 1.f / static_cast<float>(kc * kc);
}

#endif  // NEAT_KERNELS_INTERNAL_PREPROCESS_BOX_INL_H_

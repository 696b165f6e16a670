// The preprocess engine's exact boxes of 2 and 4 in one pass (see the
// comment below). A fragment of kernels/preprocess_simd.cpp (not a header of
// its own): it is included there once per SIMD target, inside
// neat::detail::HWY_NAMESPACE, after what it uses (ToRgb, RgbOut, RowAligned
// and the 16-bit loads of preprocess_box-inl.h). The guard toggles with each
// target, as Highway's own -inl.h files do.
#if defined(NEAT_KERNELS_INTERNAL_PREPROCESS_BOX_ONE_PASS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEAT_KERNELS_INTERNAL_PREPROCESS_BOX_ONE_PASS_INL_H_
#undef NEAT_KERNELS_INTERNAL_PREPROCESS_BOX_ONE_PASS_INL_H_
#else
#define NEAT_KERNELS_INTERNAL_PREPROCESS_BOX_ONE_PASS_INL_H_
#endif

// ---- exact boxes of 2 and 4 in one pass -------------------------------------------
// Each luma output the sum of k x k samples, each chroma output of k/2 x k/2
// (job.box_k 2 or 4 with box_chroma: 720p into a 640 letterbox, bilinear
// or area; into a 320 letterbox, area): each vector of outputs is summed,
// converted and stored straight from the source rows, with no row of sums
// written and read again in between (BoxRow and FinishRow's passes). The
// same values: the sums are exact, then (sum - k^2 y_offset) x ys / k^2 and
// (chroma sum - (k/2)^2 128) / (k/2)^2. One thread, time one pass / two
// (in-process A/B): 720p NV12 and I420 -> 640 letterboxed 0.87-0.90, frames
// fresh from memory 0.93, AVX2 0.77-0.79, two threads 0.86; -> 320
// letterboxed area 0.88-0.92, fresh 0.98, AVX2 0.82, two threads 0.86.
// Luma's pairs (and I420's chroma pairs of box 4) by one multiply-add of
// bytes (BytePairs), a lane's halves by one of words (SumHalves), in place
// of masks, shifts and adds (AVX2, session 32, calls alternated: 720p ->
// 640 letterboxed 0.975-0.99 of the time, -> 320 letterboxed area
// 0.93-0.96, fresh from memory 0.98). Plain stores here, not the staged
// rows of FinishRow on hosts that stream those (StorePlan::by_rows): staged,
// 1.05-1.28 of the time on Zen 3.
// Bilinear at 4x and 6x both ways (PreprocessJob::pair_box) is such a box
// too: each luma output the mean of a 2 x 2 (the pair across in the two
// rows down), each chroma output of the 2 x 2 under it (4x) or the one
// sample (6x), exact sums as the boxes', the next output row's bytes
// prefetched (its rows skip rows). In place of the blocks path's pairs
// summed into a row, chroma resampled into the cache and the final pass
// (Zen 4, calls alternated in one process, time one pass / before): 720p
// NV12 -> 320 letterboxed 0.67-0.90 (the frame cached, or 12 frames in
// turn from memory), I420 0.61-0.85; 1080p -> 320 letterboxed NV12
// 0.77-0.86, I420 0.68-0.79; 4K -> 640 letterboxed NV12 0.61-0.85, I420
// 0.56-0.70; AVX2 0.69-0.91, two threads 0.74-0.96. Without the prefetch,
// 1080p NV12 -> 320 letterboxed took 1.19 of the time before.
#if HWY_TARGET != HWY_SCALAR
struct BoxRowsK {
  const std::uint8_t* y[4];  // luma rows, at the first output's first sample
  const std::uint8_t* u[2];  // NV12: the UV pairs' rows; I420: the U plane's
  const std::uint8_t* v[2];  // I420: the V plane's rows
  bool u_high;               // NV12: U is the high byte of each pair (NV21)
  // Bilinear's pairs (P): bytes on from each row to the next output row's
  // (0: none), prefetched as these are read. Its rows skip rows, which the
  // hardware's prefetchers do not see coming.
  std::ptrdiff_t y_ahead, u_ahead, v_ahead;
};

// Bilinear's pairs at P x: the next output row's bytes of outputs [x, x +
// n), prefetched: P an output in each of its two luma rows, and in each of
// its chroma rows (4x: two, 6x: one) P (UV pairs) or P / 2 (I420: U and V).
template <int P, bool kPairs>
HWY_INLINE void PrefetchNext(const BoxRowsK& s, std::int64_t x, std::int64_t n) {
  if (s.y_ahead == 0) return;
  constexpr int kChromaRows = P == 4 ? 2 : 1;
  constexpr int kChromaBytes = kPairs ? P : P / 2;  // an output's, a row
  for (std::int64_t b = 0; b < P * n; b += 64) {
    hwy::Prefetch(s.y[0] + P * x + s.y_ahead + b);
    hwy::Prefetch(s.y[1] + P * x + s.y_ahead + b);
  }
  for (int t = 0; t < kChromaRows; ++t) {
    for (std::int64_t b = 0; b < kChromaBytes * n; b += 64) {
      hwy::Prefetch(s.u[t] + kChromaBytes * x + s.u_ahead + b);
      if constexpr (!kPairs) hwy::Prefetch(s.v[t] + kChromaBytes * x + s.v_ahead + b);
    }
  }
}

// Box 2: outputs [x, x + Lanes(DBox16)) as luma sums and chroma levels, 16-bit.
template <bool kPairs>
HWY_INLINE void Box2Load(const BoxRowsK& s, std::int64_t x, hn::Vec<DBox16>& y, hn::Vec<DBox16>& u,
                         hn::Vec<DBox16>& v) {
  const DBox16 d16;
  const std::uint8_t* a = s.y[0] + 2 * x;
  const std::uint8_t* b = s.y[1] + 2 * x;
  const auto ones = hn::Set(DBox8(), 1);
  y = hn::Add(BytePairs(hn::LoadU(DBox8(), a), ones), BytePairs(hn::LoadU(DBox8(), b), ones));
  if constexpr (kPairs) {
    const std::uint8_t* p = s.u[0] + 2 * x;
    const auto lo = Bytes16<0>(p), hi = Bytes16<1>(p);
    u = s.u_high ? hi : lo;
    v = s.u_high ? lo : hi;
  } else {
    const hn::Rebind<std::uint8_t, DBox16> d8;
    u = hn::PromoteTo(d16, hn::LoadU(d8, s.u[0] + x));
    v = hn::PromoteTo(d16, hn::LoadU(d8, s.v[0] + x));
  }
}

// Box 4: outputs [x, x + Lanes(DBox32)) as 32-bit sums, luma of 4 x 4
// (kMid: of the 2 x 2 at the first two bytes of each output's 4 in two
// rows, bilinear at 4x), chroma of 2 x 2 (the 16-bit pair sums stay below
// 2^12).
template <bool kPairs, bool kMid>
HWY_INLINE void Box4Load(const BoxRowsK& s, std::int64_t x, hn::Vec<DBox32>& y, hn::Vec<DBox32>& u,
                         hn::Vec<DBox32>& v) {
  const DBox32 d32;
  const auto ones = hn::Set(DBox8(), 1);
  if constexpr (kMid) {  // one pair a 32-bit lane: its upper half stays 0
    const auto first_two = PairPattern(0, 1);
    y = hn::BitCast(d32, hn::Add(BytePairs(hn::LoadU(DBox8(), s.y[0] + 4 * x), first_two),
                                 BytePairs(hn::LoadU(DBox8(), s.y[1] + 4 * x), first_two)));
  } else {
    hn::Vec<DBox16> acc = hn::Zero(DBox16());
    for (int t = 0; t < 4; ++t)
      acc = hn::Add(acc, BytePairs(hn::LoadU(DBox8(), s.y[t] + 4 * x), ones));
    y = SumHalves(acc);
  }
  if constexpr (kPairs) {  // U0 V0 U1 V1 per output
    const std::uint8_t* p = s.u[0] + 4 * x;
    const std::uint8_t* q = s.u[1] + 4 * x;
    const auto lo = SumHalves(hn::Add(Bytes16<0>(p), Bytes16<0>(q)));
    const auto hi = SumHalves(hn::Add(Bytes16<1>(p), Bytes16<1>(q)));
    u = s.u_high ? hi : lo;
    v = s.u_high ? lo : hi;
  } else {  // two bytes per output and row, in the low half of a 32-bit lane
    const hn::Rebind<std::uint16_t, DBox32> d16h;
    auto pair = [&](const std::uint8_t* p) {
      const auto w = hn::PromoteTo(d32, hn::LoadU(d16h, reinterpret_cast<const std::uint16_t*>(p)));
      return hn::BitCast(d32, BytePairs(hn::BitCast(DBox8(), w), hn::Set(DBox8(), 1)));
    };
    u = hn::Add(pair(s.u[0] + 2 * x), pair(s.u[1] + 2 * x));
    v = hn::Add(pair(s.v[0] + 2 * x), pair(s.v[1] + 2 * x));
  }
}

// Bilinear at 6x: outputs [x, x + Lanes(DBox16)) as 16-bit sums, luma of
// the 2 x 2 at the first two bytes of each output's 6 in two rows (three
// 16-bit elements an output, the first's bytes), chroma the one sample at
// the first of each output's 3 (NV12: the first UV pair of 3) in one row.
template <bool kPairs>
HWY_INLINE void Box6Load(const BoxRowsK& s, std::int64_t x, hn::Vec<DBox16>& y, hn::Vec<DBox16>& u,
                         hn::Vec<DBox16>& v) {
  const DBox16 d16;
  const auto ones = hn::Set(DBox8(), 1);
  hn::Vec<DBox16> a, b, c;
  hn::LoadInterleaved3(d16, reinterpret_cast<const std::uint16_t*>(s.y[0] + 6 * x), a, b, c);
  y = BytePairs(hn::BitCast(DBox8(), a), ones);
  hn::LoadInterleaved3(d16, reinterpret_cast<const std::uint16_t*>(s.y[1] + 6 * x), a, b, c);
  y = hn::Add(y, BytePairs(hn::BitCast(DBox8(), a), ones));
  if constexpr (kPairs) {
    hn::LoadInterleaved3(d16, reinterpret_cast<const std::uint16_t*>(s.u[0] + 6 * x), a, b, c);
    const auto lo = hn::And(a, hn::Set(d16, 0xFF)), hi = hn::ShiftRight<8>(a);
    u = s.u_high ? hi : lo;
    v = s.u_high ? lo : hi;
  } else {
    const hn::Rebind<std::uint8_t, DBox16> d8;
    hn::Vec<decltype(d8)> a8, b8, c8;
    hn::LoadInterleaved3(d8, s.u[0] + 3 * x, a8, b8, c8);
    u = hn::PromoteTo(d16, a8);
    hn::LoadInterleaved3(d8, s.v[0] + 3 * x, a8, b8, c8);
    v = hn::PromoteTo(d16, a8);
  }
}

// A box's sums -> the normalized output, stored. kConv: Folded, or Scaled
// where the job's a and b are uniform (PreprocessJob::uniform_affine): a in
// the luma's and chroma's weights and b in the luma's offset, each one
// multiply-add from the sums, and no normalization after (FinishRow's
// note). Calls alternated in one process, time with / without: 720p ->
// 640 and 320 letterboxed area and bilinear 0.99-1.02 (bound by the
// stores), AVX2 720p -> 320 letterboxed area 0.89, -> 640 0.98-0.99.
// P (bilinear at an even ratio P: 4 or 6; 0: a box): luma sums of 4
// samples, not K x K.
template <int K, Store kStore, Conv kConv = Conv::Folded, int P = 0>
struct BoxOut {
  BoxOut(const PreprocessJob& job, std::int64_t out_r) : to_rgb(job), rgb(job, out_r) {
    const DF df;
    const float a = kScaled ? job.a[0] : 1.f, b = kScaled ? job.b[0] + 0.f : 0.f;
    constexpr int kLuma = P != 0 ? 4 : K * K;  // luma samples an output
    const float y_weight = job.yuv->fy / static_cast<float>(kLuma) * a;
    const float c_weight = 4.f / static_cast<float>(K * K) * a;
    ybias = hn::Set(df, static_cast<float>(kLuma * job.yuv->y_offset));
    yw = hn::Set(df, y_weight);
    cbias = hn::Set(df, static_cast<float>(K * K / 4 * 128));
    cw = hn::Set(df, c_weight);
    // Scaled: sums x weight + offset, the level's offset taken out in it.
    yoff = hn::Set(df, b - static_cast<float>(kLuma * job.yuv->y_offset) * y_weight);
    coff = hn::Set(df, -static_cast<float>(K * K / 4 * 128) * c_weight);
  }
  static constexpr bool kScaled = kConv == Conv::Scaled;
  HWY_INLINE static VF Float(hn::Vec<DBox32> sums) {
    return hn::ConvertTo(DF(), hn::BitCast(DI(), sums));
  }
  HWY_INLINE static VF Float(hn::Vec<hn::Half<DBox16>> sums) {
    return Float(hn::PromoteTo(DBox32(), sums));
  }
  // Outputs [at, at + n) from their sums (n <= lanes; fewer: the row's
  // last, by count).
  template <class V>
  HWY_INLINE void operator()(std::int64_t at, V ys, V us, V vs, std::int64_t n) const {
    VF r8, g8, b8;
    if constexpr (kScaled) {
      to_rgb(hn::MulAdd(Float(ys), yw, yoff), hn::MulAdd(Float(us), cw, coff),
             hn::MulAdd(Float(vs), cw, coff), r8, g8, b8);
    } else {
      VF cu = hn::Sub(Float(us), cbias), cv = hn::Sub(Float(vs), cbias);
      if constexpr (K != 2) {
        cu = hn::Mul(cu, cw);
        cv = hn::Mul(cv, cw);
      }
      to_rgb(hn::Mul(hn::Sub(Float(ys), ybias), yw), cu, cv, r8, g8, b8);
    }
    rgb(at, r8, g8, b8, n);
  }
  ToRgb<kConv> to_rgb;
  RgbOut<kStore, !kScaled> rgb;
  VF yw, cw;        // both
  VF ybias, cbias;  // Folded: the sums' offsets, taken out before the weights
  VF yoff, coff;    // Scaled: the offsets after the weights (b in yoff)
};

// One step of the row's loop: Lanes(DBox16) outputs for box 2 (two float
// vectors), Lanes(DBox32) for box 4; n < the step: the row's last.
template <int K, bool kPairs, Store kStore, Conv kConv, int P = 0>
HWY_INLINE void BoxStep(const BoxOut<K, kStore, kConv, P>& out, const BoxRowsK& rows,
                        std::int64_t from, std::int64_t at, std::int64_t n) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(DF()));
  if constexpr (K == 2) {
    const hn::Half<DBox16> dh;
    hn::Vec<DBox16> y, u, v;
    if constexpr (P == 6) {
      Box6Load<kPairs>(rows, from, y, u, v);
    } else {
      Box2Load<kPairs>(rows, from, y, u, v);
    }
    out(at, hn::LowerHalf(dh, y), hn::LowerHalf(dh, u), hn::LowerHalf(dh, v), std::min(n, lanes));
    if (n > lanes) {
      out(at + lanes, hn::UpperHalf(dh, y), hn::UpperHalf(dh, u), hn::UpperHalf(dh, v), n - lanes);
    }
  } else {
    hn::Vec<DBox32> y, u, v;
    Box4Load<kPairs, P == 4>(rows, from, y, u, v);
    out(at, y, u, v, n);
  }
}

// The row's last outputs (at most a step), from x on: their bytes copied
// into whole vectors first (a load there would pass the rows' end; P: the
// last output's pair is the end of the bytes it reads), by CopyTail.
template <int K, bool kPairs, Store kStore, Conv kConv, int P = 0>
HWY_NOINLINE void BoxRest(const BoxOut<K, kStore, kConv, P>& out, const BoxRowsK& rows,
                          std::int64_t x, std::int64_t n) {
  // A step's bytes of a row: 6 an output at 6x, else 2 bytes a 16-bit lane.
  constexpr std::size_t kMax = (P == 6 ? 6 : 2) * hn::MaxLanes(DBox16());
  HWY_ALIGN std::uint8_t ys[K][kMax], us[K / 2][kMax], vs[K / 2][kMax];
  auto copy = [](std::uint8_t* to, const std::uint8_t* from, std::int64_t bytes) {
    CopyTail<kMax>(DBox8(), to, from, static_cast<std::size_t>(bytes));
  };
  BoxRowsK rest{};
  rest.u_high = rows.u_high;
  if constexpr (P != 0) {  // two rows, P bytes an output
    for (int t = 0; t < 2; ++t) {
      copy(ys[t], rows.y[t] + P * x, P * (n - 1) + 2);
      rest.y[t] = ys[t];
    }
  } else {
    for (int t = 0; t < K; ++t) {
      copy(ys[t], rows.y[t] + K * x, K * n);
      rest.y[t] = ys[t];
    }
  }
  if constexpr (P == 6) {  // one chroma row, the first sample (pair) of each output's 3
    if constexpr (kPairs) {
      copy(us[0], rows.u[0] + 6 * x, 6 * (n - 1) + 2);
    } else {
      copy(us[0], rows.u[0] + 3 * x, 3 * (n - 1) + 1);
      copy(vs[0], rows.v[0] + 3 * x, 3 * (n - 1) + 1);
      rest.v[0] = vs[0];
    }
    rest.u[0] = us[0];
    BoxStep<K, kPairs>(out, rest, 0, x, n);
    return;
  }
  for (int t = 0; t < K / 2; ++t) {
    if constexpr (kPairs) {
      copy(us[t], rows.u[t] + K * x, K * n);
    } else {
      copy(us[t], rows.u[t] + K / 2 * x, K / 2 * n);
      copy(vs[t], rows.v[t] + K / 2 * x, K / 2 * n);
      rest.v[t] = vs[t];
    }
    rest.u[t] = us[t];
  }
  BoxStep<K, kPairs>(out, rest, 0, x, n);
}

template <int K, bool kPairs, Store kStore, Conv kConv, int P = 0>
void BoxRowT(const PreprocessJob& job, const BoxRowsK& rows, std::int64_t out_r) {
  const auto step = static_cast<std::int64_t>(K == 2 ? hn::Lanes(DBox16()) : hn::Lanes(DBox32()));
  const BoxOut<K, kStore, kConv, P> out(job, out_r);
  const std::int64_t box_w = job.box_w;
  // P: whole steps while their loads stay within the rows (the last
  // output's P bytes of luma may end past it; at 6x its 3 chroma samples).
  std::int64_t whole = box_w;
  if constexpr (P != 0) {
    whole = std::min(whole, (job.luma_x->source - job.luma_x->first[0]) / P);
    if (P == 6) whole = std::min(whole, (job.chroma_x->source - job.chroma_x->first[0]) / 3);
  }
  std::int64_t x = 0;
  for (; x + step <= whole; x += step) {
    if constexpr (P != 0) PrefetchNext<P, kPairs>(rows, x, step);
    BoxStep<K, kPairs>(out, rows, x, x, step);
  }
  for (; x < box_w; x += step)
    BoxRest<K, kPairs>(out, rows, x, std::min(step, box_w - x));
}

// Output row out_r (box row r) by BoxRowT. P: bilinear at 4x or 6x
// (job.pair_box; K 4 or 2), luma the 2 x 2 of each output from the two
// rows its vertical taps name; at 6x chroma the one sample its picks name.
template <int K, int P = 0>
void BoxRowFused(const PreprocessJob& job, std::int64_t r, std::int64_t out_r) {
  const auto i = static_cast<std::size_t>(r);
  const std::int64_t lx = job.luma_x->first[0], ly = job.luma_y->first[i];
  const std::int64_t cx = job.chroma_x->first[0], cy = job.chroma_y->first[i];
  BoxRowsK rows{};
  for (int t = 0; t < (P != 0 ? 2 : K); ++t)
    rows.y[t] = job.y + (ly + t) * job.y_stride + lx;
  for (int t = 0; t < K / 2; ++t) {
    if (job.interleaved_uv) {
      rows.u[t] = std::min(job.u, job.v) + (cy + t) * job.u_stride + 2 * cx;
    } else {
      rows.u[t] = job.u + (cy + t) * job.u_stride + cx;
      rows.v[t] = job.v + (cy + t) * job.v_stride + cx;
    }
  }
  rows.u_high = job.interleaved_uv && job.v < job.u;
  if (P != 0 && r + 1 < job.luma_y->count) {
    const std::int64_t dy = job.luma_y->first[i + 1] - ly, dc = job.chroma_y->first[i + 1] - cy;
    rows.y_ahead = dy * job.y_stride;
    rows.u_ahead = dc * job.u_stride;
    rows.v_ahead = dc * job.v_stride;
  }
  auto run = [&]<bool kPairs, Conv kConv>() {
    if (job.out_dtype != DType::F32) {
      return BoxRowT<K, kPairs, Store::Any, kConv, P>(job, rows, out_r);
    }
    if (job.stream && RowAligned(job, out_r)) {
      return BoxRowT<K, kPairs, Store::F32Stream, kConv, P>(job, rows, out_r);
    }
    BoxRowT<K, kPairs, Store::F32, kConv, P>(job, rows, out_r);
  };
  const bool scaled = job.uniform_affine;
  if (job.interleaved_uv) {
    if (scaled) return run.template operator()<true, Conv::Scaled>();
    return run.template operator()<true, Conv::Folded>();
  }
  if (scaled) return run.template operator()<false, Conv::Scaled>();
  run.template operator()<false, Conv::Folded>();
}
#endif  // HWY_TARGET != HWY_SCALAR

#endif  // NEAT_KERNELS_INTERNAL_PREPROCESS_BOX_ONE_PASS_INL_H_

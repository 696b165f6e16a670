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
#if HWY_TARGET != HWY_SCALAR
struct BoxRowsK {
  const std::uint8_t* y[4];  // luma rows, at the first output's first sample
  const std::uint8_t* u[2];  // NV12: the UV pairs' rows; I420: the U plane's
  const std::uint8_t* v[2];  // I420: the V plane's rows
  bool u_high;               // NV12: U is the high byte of each pair (NV21)
};

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

// Box 4: outputs [x, x + Lanes(DBox32)) as 32-bit sums, luma of 4 x 4,
// chroma of 2 x 2 (the 16-bit pair sums stay below 2^12).
template <bool kPairs>
HWY_INLINE void Box4Load(const BoxRowsK& s, std::int64_t x, hn::Vec<DBox32>& y, hn::Vec<DBox32>& u,
                         hn::Vec<DBox32>& v) {
  const DBox32 d32;
  const auto ones = hn::Set(DBox8(), 1);
  hn::Vec<DBox16> acc = hn::Zero(DBox16());
  for (int t = 0; t < 4; ++t)
    acc = hn::Add(acc, BytePairs(hn::LoadU(DBox8(), s.y[t] + 4 * x), ones));
  y = SumHalves(acc);
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

// A box's sums -> the normalized output, stored. kConv: Folded, or Scaled
// where the job's a and b are uniform (PreprocessJob::uniform_affine): a in
// the luma's and chroma's weights and b in the luma's offset, each one
// multiply-add from the sums, and no normalization after (FinishRow's
// note). Calls alternated in one process, time with / without: 720p ->
// 640 and 320 letterboxed area and bilinear 0.99-1.02 (bound by the
// stores), AVX2 720p -> 320 letterboxed area 0.89, -> 640 0.98-0.99.
template <int K, Store kStore, Conv kConv = Conv::Folded>
struct BoxOut {
  BoxOut(const PreprocessJob& job, std::int64_t out_r) : to_rgb(job), rgb(job, out_r) {
    const DF df;
    const float a = kScaled ? job.a[0] : 1.f, b = kScaled ? job.b[0] + 0.f : 0.f;
    const float y_weight = job.yuv->fy / static_cast<float>(K * K) * a;
    const float c_weight = 4.f / static_cast<float>(K * K) * a;
    ybias = hn::Set(df, static_cast<float>(K * K * job.yuv->y_offset));
    yw = hn::Set(df, y_weight);
    cbias = hn::Set(df, static_cast<float>(K * K / 4 * 128));
    cw = hn::Set(df, c_weight);
    // Scaled: sums x weight + offset, the level's offset taken out in it.
    yoff = hn::Set(df, b - static_cast<float>(K * K * job.yuv->y_offset) * y_weight);
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
template <int K, bool kPairs, Store kStore, Conv kConv>
HWY_INLINE void BoxStep(const BoxOut<K, kStore, kConv>& out, const BoxRowsK& rows,
                        std::int64_t from, std::int64_t at, std::int64_t n) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(DF()));
  if constexpr (K == 2) {
    const hn::Half<DBox16> dh;
    hn::Vec<DBox16> y, u, v;
    Box2Load<kPairs>(rows, from, y, u, v);
    out(at, hn::LowerHalf(dh, y), hn::LowerHalf(dh, u), hn::LowerHalf(dh, v), std::min(n, lanes));
    if (n > lanes) {
      out(at + lanes, hn::UpperHalf(dh, y), hn::UpperHalf(dh, u), hn::UpperHalf(dh, v), n - lanes);
    }
  } else {
    hn::Vec<DBox32> y, u, v;
    Box4Load<kPairs>(rows, from, y, u, v);
    out(at, y, u, v, n);
  }
}

// The row's last outputs, from x on: their bytes copied into whole vectors
// first (a load there would pass the rows' end).
template <int K, bool kPairs, Store kStore, Conv kConv>
HWY_NOINLINE void BoxRest(const BoxOut<K, kStore, kConv>& out, const BoxRowsK& rows, std::int64_t x,
                          std::int64_t n) {
  constexpr std::size_t kMax = 2 * hn::MaxLanes(DBox16());  // a step's bytes of a row
  HWY_ALIGN std::uint8_t ys[K][kMax] = {}, us[K / 2][kMax] = {}, vs[K / 2][kMax] = {};
  BoxRowsK rest{};
  rest.u_high = rows.u_high;
  for (int t = 0; t < K; ++t) {
    std::memcpy(ys[t], rows.y[t] + K * x, static_cast<std::size_t>(K * n));
    rest.y[t] = ys[t];
  }
  for (int t = 0; t < K / 2; ++t) {
    if constexpr (kPairs) {
      std::memcpy(us[t], rows.u[t] + K * x, static_cast<std::size_t>(K * n));
    } else {
      std::memcpy(us[t], rows.u[t] + K / 2 * x, static_cast<std::size_t>(K / 2 * n));
      std::memcpy(vs[t], rows.v[t] + K / 2 * x, static_cast<std::size_t>(K / 2 * n));
    }
    rest.u[t] = us[t];
    rest.v[t] = vs[t];
  }
  BoxStep<K, kPairs>(out, rest, 0, x, n);
}

template <int K, bool kPairs, Store kStore, Conv kConv>
void BoxRowT(const PreprocessJob& job, const BoxRowsK& rows, std::int64_t out_r) {
  const auto step = static_cast<std::int64_t>(K == 2 ? hn::Lanes(DBox16()) : hn::Lanes(DBox32()));
  const BoxOut<K, kStore, kConv> out(job, out_r);
  const std::int64_t box_w = job.box_w;
  std::int64_t x = 0;
  for (; x + step <= box_w; x += step)
    BoxStep<K, kPairs>(out, rows, x, x, step);
  if (x < box_w) BoxRest<K, kPairs>(out, rows, x, box_w - x);
}

// Output row out_r (box row r) by BoxRowT.
template <int K>
void BoxRowFused(const PreprocessJob& job, std::int64_t r, std::int64_t out_r) {
  const auto i = static_cast<std::size_t>(r);
  const std::int64_t lx = job.luma_x->first[0], ly = job.luma_y->first[i];
  const std::int64_t cx = job.chroma_x->first[0], cy = job.chroma_y->first[i];
  BoxRowsK rows{};
  for (int t = 0; t < K; ++t)
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
  auto run = [&]<bool kPairs, Conv kConv>() {
    if (job.out_dtype != DType::F32) return BoxRowT<K, kPairs, Store::Any, kConv>(job, rows, out_r);
    if (job.stream && RowAligned(job, out_r)) {
      return BoxRowT<K, kPairs, Store::F32Stream, kConv>(job, rows, out_r);
    }
    BoxRowT<K, kPairs, Store::F32, kConv>(job, rows, out_r);
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

// The preprocess engine's final pass (see FinishRow): an output row's
// vertical taps summed over the cached rows (FixedTaps) or one tap read from
// the frame's bytes (ByteTap), YUV converted to RGB and clamped (ToRgb),
// normalized and stored by kind (RgbOut), compiled per tap count, store and
// conversion (FinishRowT, FinishRowS, FinishRow). A fragment of
// kernels/preprocess_simd.cpp (not a header of its own): it is included there
// once per SIMD target, inside neat::detail::HWY_NAMESPACE, after what it
// uses (RowTaps, StagedWidth and the stores of preprocess_stores-inl.h). The
// guard toggles with each target, as Highway's own -inl.h files do.
#if defined(NEAT_KERNELS_INTERNAL_PREPROCESS_FINAL_PASS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEAT_KERNELS_INTERNAL_PREPROCESS_FINAL_PASS_INL_H_
#undef NEAT_KERNELS_INTERNAL_PREPROCESS_FINAL_PASS_INL_H_
#else
#define NEAT_KERNELS_INTERNAL_PREPROCESS_FINAL_PASS_INL_H_
#endif

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
    constexpr std::size_t kBytes = hn::MaxLanes(d8);
    HWY_ALIGN std::uint8_t last[kBytes];
    const auto n = static_cast<std::size_t>(
        std::min<std::int64_t>(static_cast<std::int64_t>(hn::Lanes(d8)), end - x));
    CopyTail<kBytes>(d8, last, p + x, n);
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
template <Store kStore, bool kAffine = true, bool kUniform = false>
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
    const VF r = Normalize(r8, ra, rb), g = Normalize(g8, GA(), GB()),
             b = Normalize(b8, BA(), BB());
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
    const VF r = Normalize(r8, ra, rb), g = Normalize(g8, GA(), GB()),
             b = Normalize(b8, BA(), BB());
    StoreOut(job, r, job.planes[job.r_plane], start + at, n);
    StoreOut(job, g, job.planes[1], start + at, n);
    StoreOut(job, b, job.planes[job.b_plane], start + at, n);
  }
  // kUniform: every plane's a and b are R's (two registers, not six).
  HWY_INLINE VF GA() const { return kUniform ? ra : ga; }
  HWY_INLINE VF GB() const { return kUniform ? rb : gb; }
  HWY_INLINE VF BA() const { return kUniform ? ra : ba; }
  HWY_INLINE VF BB() const { return kUniform ? rb : bb; }
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

#endif  // NEAT_KERNELS_INTERNAL_PREPROCESS_FINAL_PASS_INL_H_

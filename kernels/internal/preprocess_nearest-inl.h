// The preprocess engine's nearest in one pass (see the comment below).
// A fragment of kernels/preprocess_simd.cpp (not a header of its own): it is
// included there once per SIMD target, inside neat::detail::HWY_NAMESPACE,
// after what it uses (ToRgb, RgbOut, RowAligned, the pick loads of
// preprocess_box-inl.h and the tables of preprocess_blocks-inl.h). The guard
// toggles with each target, as Highway's own -inl.h files do.
#if defined(NEAT_KERNELS_INTERNAL_PREPROCESS_NEAREST_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEAT_KERNELS_INTERNAL_PREPROCESS_NEAREST_INL_H_
#undef NEAT_KERNELS_INTERNAL_PREPROCESS_NEAREST_INL_H_
#else
#define NEAT_KERNELS_INTERNAL_PREPROCESS_NEAREST_INL_H_
#endif

// ---- nearest, picked and converted in one pass ---------------------------------
// Nearest where every plane's picks take no gathers (samples k apart, a
// periodic pattern one VBMI permute takes, the 16-byte blocks' shuffle
// tables or the VBMI windows): each vector of outputs takes its samples from
// the source rows into registers and converts them there, with no resampled
// row in between and no row cache (a nearest row is read once going down).
// Alone, same-session A/B: 720p -> 320 letterboxed 0.026 -> 0.020 ms, 1080p
// -> 640 0.17 -> 0.12 ms, 1080p -> 416 letterboxed 0.055 -> 0.046 ms.

#if HWY_TARGET != HWY_SCALAR
// Picks k apart, G bytes per output (XPickRowG's loads): C channels, channel
// c byte channel[c] of each element.
template <int G, int C>
struct KApartPicks {
  const std::uint8_t* row;
  std::int64_t avail;  // bytes from row on
  int channel[C];
  // Outputs [o, o + lanes) load within the row while o + lanes <= WholeEnd().
  std::int64_t WholeEnd() const { return avail / G; }
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

// A picker whose every vector loads within its rows (masked loads, or the
// tables' own bounds): the tail is a whole vector stored.
template <class P, int C>
struct AlwaysWhole {
  std::int64_t WholeEnd() const { return std::numeric_limits<std::int64_t>::max(); }
  void Rest(std::int64_t o, std::int64_t, float* const (&out)[C]) const {
    hn::Vec<DI> v[C];
    static_cast<const P*>(this)->At(o, v);
    for (int c = 0; c < C; ++c)
      hn::Store(hn::BitCast(DF(), v[c]), DF(), out[c]);
  }
};

#if HWY_TARGET == HWY_AVX3_DL
// Picks in a periodic pattern of at most 64 bytes per vector (PermutePicks):
// whole 64-byte loads inside the row, masked to it after (Rest).
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
  // Every vector: the loads that would pass the row's end are masked to it
  // (Within), in place of the row's last vectors picked into rows on the
  // stack by NearestRest (720p NV12 -> 1280 letterboxed: 3 of its 80
  // vectors a row, 7% of the time). Calls alternated in one process, time
  // with / without: 1080p NV12 -> 640 0.94-0.97, letterboxed 0.975-0.98,
  // 720p -> 1280 letterboxed 0.93 (the tensor cached), 1.00 (32 MiB
  // written between calls); 4K -> 1280 and 720p -> 416 1.00 (session 44).
  std::int64_t WholeEnd() const { return std::numeric_limits<std::int64_t>::max(); }
  HWY_INLINE void At(std::int64_t o, hn::Vec<DI> (&out)[C]) const {
    const std::int64_t at = o / 16 * span;
    if (HWY_LIKELY(at + 64 <= avail)) return Permute(_mm512_loadu_si512(row + at), out);
    Permute(_mm512_maskz_loadu_epi8(Within(at), row + at), out);
  }
  // The bytes of a load at `at` that lie in the row.
  __mmask64 Within(std::int64_t at) const {
    const std::int64_t left = std::min(avail - at, span);
    return left <= 0 ? __mmask64{0}
                     : static_cast<__mmask64>(left >= 64 ? ~0ull : (1ull << left) - 1);
  }
  // Outputs [o, o + n) (n at most a vector), the load masked to the row.
  void Rest(std::int64_t o, std::int64_t, float* const (&out)[C]) const {
    const std::int64_t at = o / 16 * span;
    hn::Vec<DI> picked[C];
    Permute(_mm512_maskz_loadu_epi8(Within(at), row + at), picked);
    for (int c = 0; c < C; ++c)
      hn::Store(hn::BitCast(DF(), picked[c]), DF(), out[c]);
  }
  HWY_INLINE void Permute(__m512i bytes, hn::Vec<DI> (&out)[C]) const {
    for (int c = 0; c < C; ++c)
      out[c] = hn::Vec<DI>{_mm512_maskz_permutexvar_epi8(0x1111111111111111ull, idx[c], bytes)};
  }
};
#endif

// Picks by the blocks path's byte-shuffle tables: each 16-byte block of a
// vector from its own base (HorizontalBlocks' loads, which stay in the row).
template <int C>
struct BlockPicks : AlwaysWhole<BlockPicks<C>, C> {
  const std::uint8_t* row;
  const std::int32_t* base;        // ResampleAxis::block_base
  const std::uint8_t* shuffle[C];  // ResampleAxis::shuffle of each channel
  HWY_INLINE void At(std::int64_t o, hn::Vec<DI> (&out)[C]) const {
    const DB db;
    const std::int64_t b = o / 4;
    const auto bytes = LoadBlocks(db, row, base + b);
    for (int c = 0; c < C; ++c)
      out[c] =
          hn::BitCast(DI(), hn::TableLookupBytesOr0(bytes, hn::LoadU(db, shuffle[c] + b * 16)));
  }
};

#if HWY_TARGET == HWY_AVX3_DL
// Picks by the VBMI permute tables: each vector from 1, 2 or 4 windows of 128
// bytes (HorizontalPermutesW's loads), one vpermt2b per window and channel.
// W: the windows a vector, compiled in (0: the axis's, read at run time).
template <int C, int W = 0>
struct WindowPicks : AlwaysWhole<WindowPicks<C, W>, C> {
  const std::uint8_t* row;
  const std::int32_t* window_base;  // 4 per vector
  const std::uint8_t* table[C];     // ResampleAxis::permute of each channel
  int windows;
  __mmask64 part[4];  // window w's outputs: byte 0 of their 32-bit lanes
  HWY_INLINE void At(std::int64_t o, hn::Vec<DI> (&out)[C]) const {
    const std::int64_t v = o / 16;
    __m512i idx[C], acc[C];
    for (int c = 0; c < C; ++c) {
      idx[c] = _mm512_loadu_si512(table[c] + v * 64);
      acc[c] = _mm512_setzero_si512();
    }
    for (int w = 0; w < (W != 0 ? W : windows); ++w) {
      const std::uint8_t* p = row + window_base[4 * v + w];
      const __m512i lo = _mm512_loadu_si512(p), hi = _mm512_loadu_si512(p + 64);
      for (int c = 0; c < C; ++c)
        acc[c] = _mm512_or_si512(acc[c], _mm512_maskz_permutex2var_epi8(part[w], lo, idx[c], hi));
    }
    for (int c = 0; c < C; ++c)
      out[c] = hn::Vec<DI>{acc[c]};
  }
};
#endif

#if HWY_TARGET == HWY_AVX3_DL
// Picks by the span tables (ResampleAxis::span_base): each vector's 16
// outputs from one 64-byte load inside the row, one vpermb per channel.
template <int C>
struct SpanPicks : AlwaysWhole<SpanPicks<C>, C> {
  const std::uint8_t* row;
  const std::int32_t* base;
  const std::uint8_t* table[C];  // ResampleAxis::span_permute of each channel
  HWY_INLINE void At(std::int64_t o, hn::Vec<DI> (&out)[C]) const {
    const std::int64_t v = o / 16;
    const __m512i bytes = _mm512_loadu_si512(row + base[v]);
    for (int c = 0; c < C; ++c) {
      out[c] = hn::Vec<DI>{_mm512_maskz_permutexvar_epi8(
          0x1111111111111111ull, _mm512_loadu_si512(table[c] + v * 64), bytes)};
    }
  }
};
#endif

// Chroma from one plane of UV pairs (two channels of one picker) or from two
// planes (a picker each).
template <class P>
struct PairChroma {
  P uv;
  std::int64_t WholeEnd() const { return uv.WholeEnd(); }
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
  std::int64_t WholeEnd() const { return std::min(u.WholeEnd(), v.WholeEnd()); }
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

// Whole levels of one vector -> RGB levels (convert_color's integer formula).
HWY_INLINE void NearestRgb(const ToRgb<Conv::Nearest>& to_rgb, hn::Vec<DI> y, hn::Vec<DI> u,
                           hn::Vec<DI> v, VF& r8, VF& g8, VF& b8) {
  const DF df;
  to_rgb(hn::BitCast(df, y), hn::BitCast(df, u), hn::BitCast(df, v), r8, g8, b8);
}

// Outputs [x, box_w) of row out_r, whose loads would pass a row's end or
// that end mid-vector: picked into rows on the stack first, stored by count.
template <class L, class Ch>
HWY_NOINLINE void NearestRest(const PreprocessJob& job, const L& luma, const Ch& chroma,
                              std::int64_t out_r, std::int64_t x) {
  const DF df;
  const DI di;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const ToRgb<Conv::Nearest> to_rgb(job);
  const RgbOut<Store::Any> out(job, out_r);
  for (; x < job.box_w; x += lanes) {
    const std::int64_t n = std::min(lanes, job.box_w - x);
    HWY_ALIGN float ys[hn::MaxLanes(df)], us[hn::MaxLanes(df)], vs[hn::MaxLanes(df)];
    luma.Rest(x, n, {ys});
    chroma.Rest(x, n, us, vs);
    VF r8, g8, b8;
    NearestRgb(to_rgb, hn::BitCast(di, hn::Load(df, ys)), hn::BitCast(di, hn::Load(df, us)),
               hn::BitCast(di, hn::Load(df, vs)), r8, g8, b8);
    out(x, r8, g8, b8, n);
  }
}

// The next output row's source rows, prefetched as this row reads its own
// (NearestRowT): where the next row skips source rows the hardware's
// prefetchers do not see it coming, and a frame fresh from memory (a
// camera's) waits on every line of it. y nullptr: nothing to prefetch; c0
// nullptr: the chroma rows are this row's; c1: I420's V (nullptr: NV12's
// one chroma plane). scale: source bytes a luma output, in 1/65536.
struct NextRows {
  const std::uint8_t* y = nullptr;
  const std::uint8_t* c0 = nullptr;
  const std::uint8_t* c1 = nullptr;
  std::int64_t scale = 0, width = 0;
};

// Whole vectors while every picker loads within its rows, from copies of
// the pickers that never leave this loop: their fields stay in registers
// across the stores, which could otherwise write over them. Each vector
// prefetches the next row's lines up to two vectors ahead of its own
// column (next).
template <Store kStore, bool kUniform, class L, class Ch>
void NearestRowT(const PreprocessJob& job, const L& luma, const Ch& chroma, std::int64_t out_r,
                 const NextRows& next) {
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(DF()));
  const ToRgb<Conv::Nearest> to_rgb(job);
  const RgbOut<kStore, true, kUniform> out(job, out_r);
  const std::int64_t box_w = job.box_w;
  const std::int64_t end = std::min({box_w, luma.WholeEnd(), chroma.WholeEnd()});
  std::int64_t x = 0;
  {
    const L l = luma;
    const Ch ch = chroma;
    const NextRows nx = next;
    std::int64_t line = 0;  // the next line of the next rows to prefetch
    for (; x + lanes <= end; x += lanes) {
      if (nx.y != nullptr) {
        const std::int64_t upto = std::min(((x + 2 * lanes) * nx.scale) >> 16, nx.width);
        for (; line < upto; line += 64) {
          hwy::Prefetch(nx.y + line);
          if (nx.c0 == nullptr) continue;
          if (nx.c1 == nullptr) {  // NV12: a chroma row's bytes are luma's
            hwy::Prefetch(nx.c0 + line);
          } else if (line % 128 == 0) {  // I420: half as many in each plane
            hwy::Prefetch(nx.c0 + line / 2);
            hwy::Prefetch(nx.c1 + line / 2);
          }
        }
      }
      hn::Vec<DI> y[1], u, v;
      l.At(x, y);
      ch.At(x, u, v);
      VF r8, g8, b8;
      NearestRgb(to_rgb, y[0], u, v, r8, g8, b8);
      out(x, r8, g8, b8, lanes);
    }
  }
  if (x < box_w) NearestRest(job, luma, chroma, out_r, x);
}

// How a plane's picks are taken (FusedNearest): G > 0 bytes per output k
// apart, or one of these.
constexpr int kPattern = 0, kBlocks = -2, kWindows = -3, kSpans = -4;

// A plane's picks at its row 0 (NearestRows moves them down): mode M (W:
// the windows a vector of kWindows, 0 for the axis's at run time).
template <int M, int C, int W = 0>
auto PlanePicks(const ResampleAxis& ax, const std::uint8_t* row, int step,
                const int (&channel)[C]) {
  if constexpr (M > 0) {
    const std::int64_t x0 = ax.first[0] * step;
    KApartPicks<M, C> p{row + x0, ax.source * step - x0, {}};
    for (int c = 0; c < C; ++c)
      p.channel[c] = channel[c];
    return p;
  } else if constexpr (M == kBlocks) {
    BlockPicks<C> p{{}, row, ax.block_base.data(), {}};
    for (int c = 0; c < C; ++c)
      p.shuffle[c] = ax.shuffle[channel[c]].data();
    return p;
  } else {
#if HWY_TARGET == HWY_AVX3_DL
    if constexpr (M == kSpans) {
      SpanPicks<C> p{{}, row, ax.span_base.data(), {}};
      for (int c = 0; c < C; ++c)
        p.table[c] = ax.span_permute[channel[c]].data();
      return p;
    } else if constexpr (M == kWindows) {
      WindowPicks<C, W> p{{}, row, ax.window_base.data(), {}, ax.windows, {}};
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
// in mode CG (PlanePicks; LW and CW their windows a vector where they take
// windows). The picks' columns are set once; each row moves them to its
// source rows.
template <int LG, int CG, bool kPlanar, int LW = 0, int CW = 0>
void NearestRows(const PreprocessJob& job, std::int64_t begin, std::int64_t end) {
  const auto luma0 = PlanePicks<LG, 1, LW>(*job.luma_x, job.y, 1, {0});
  const int u = job.u < job.v ? 0 : 1;  // U is the low byte of each pair (NV12)
  auto chroma0 = [&] {
    if constexpr (kPlanar) {
      using P = decltype(PlanePicks<CG, 1, CW>(*job.chroma_x, job.u, 1, {0}));
      return PlanarChroma<P>{PlanePicks<CG, 1, CW>(*job.chroma_x, job.u, 1, {0}),
                             PlanePicks<CG, 1, CW>(*job.chroma_x, job.v, 1, {0})};
    } else {
      using P = decltype(PlanePicks<CG, 2, CW>(*job.chroma_x, job.u, 2, {0, 1}));
      return PairChroma<P>{
          PlanePicks<CG, 2, CW>(*job.chroma_x, std::min(job.u, job.v), 2, {u, 1 - u})};
    }
  }();
  [[maybe_unused]] const bool uniform =  // used on AVX2 only (below)
      job.a[1] == job.a[0] && job.a[2] == job.a[0] && job.b[1] == job.b[0] && job.b[2] == job.b[0];
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
    // The next row's rows where it skips luma rows: calls alternated in
    // one process, time with / without, 24 MiB written between calls (the
    // frame from memory): 1080p NV12 and I420 -> 640 0.63-0.70, letterboxed
    // 0.63-0.67; with the frame cached 0.95-1.03. In the table with fresh
    // frames (--fresh), one thread: 720p rows 0.72, 1080p 0.84 (geometric
    // means); with its one cached frame, 1.01.
    NextRows next;
    if (out_r + 1 < end && job.luma_y->first[r + 1] - job.luma_y->first[r] > 1) {
      next.y = job.y + job.luma_y->first[r + 1] * job.y_stride;
      next.scale = (job.width << 16) / job.box_w;
      next.width = job.width;
      const std::int64_t next_cr = job.chroma_y->first[r + 1];
      if (next_cr != cr) {
        next.c0 = job.u + next_cr * job.u_stride;
        if constexpr (kPlanar) next.c1 = job.v + next_cr * job.v_stride;
      }
    }
    if (job.out_dtype != DType::F32) {
      NearestRowT<Store::Any, false>(job, luma, chroma, out_r, next);
      continue;
    }
#if HWY_TARGET == HWY_AVX2
    // The same a and b in every plane (scale 1/255 and no mean, as most
    // detectors take): two registers for the normalization, not six. AVX2's
    // 16 registers then hold the loop's constants (convert_color's
    // coefficients and the picks' shuffles) with fewer reloaded from the
    // stack per vector. Zen 5, calls alternated in one process, time with /
    // without: 1080p NV12 -> 640 0.93-0.96 (0.95 with 32 MiB written between
    // calls), 1080p I420 -> 416 and 512 0.95, 720p I420 -> 608 letterboxed
    // 0.94, 720p NV12 -> 416 letterboxed 0.96; 4K NV12 -> 640 (its 12 MB
    // frame from memory) and 1080p -> 416 letterboxed with 32 MiB written
    // between calls 1.00; the same floats out. SSE4 (16 registers too)
    // 0.98-1.02: not taken there.
    if (uniform) {
      if (job.stream_bars && RowAligned(job, out_r)) {
        NearestRowT<Store::F32Stream, true>(job, luma, chroma, out_r, next);
      } else {
        NearestRowT<Store::F32, true>(job, luma, chroma, out_r, next);
      }
      continue;
    }
#endif
    // Streamed only where the bars are (PreprocessJob::stream_bars: for these
    // rows, frame and tensor above StorePlan::nearest_cached_within, or
    // where the tuner measured streamed faster): this row's stores are most
    // of its time, and through a cache that still holds the tensor they cost
    // less (1080p -> 640 alone: 0.131 -> 0.119 ms).
    if (job.stream_bars && RowAligned(job, out_r)) {
      NearestRowT<Store::F32Stream, false>(job, luma, chroma, out_r, next);
    } else {
      NearestRowT<Store::F32, false>(job, luma, chroma, out_r, next);
    }
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

using NearestRowsFn = void (*)(const PreprocessJob&, std::int64_t, std::int64_t);

#if HWY_TARGET != HWY_SCALAR
// The fused nearest rows for luma's picks in mode l and chroma's in mode c
// (PlanePicks' modes), or nullptr for a pair no real ratio makes.
NearestRowsFn NearestRowsFor(const PreprocessJob& job, int l, int c, bool planar) {
  (void)job;  // the windows a vector: AVX3_DL only
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
    // Without VBMI, luma 3 apart (1080p -> 640, 4K -> 1280) or 1 apart
    // (720p -> 1280) with chroma at 1.5x or 0.5x by the 16-byte blocks.
    case key(3, kBlocks, false):
      return NearestRows<3, kBlocks, false>;
    case key(3, kBlocks, true):
      return NearestRows<3, kBlocks, true>;
    case key(1, kBlocks, false):
      return NearestRows<1, kBlocks, false>;
    case key(1, kBlocks, true):
      return NearestRows<1, kBlocks, true>;
    case key(kBlocks, kBlocks, false):
      return NearestRows<kBlocks, kBlocks, false>;
    case key(kBlocks, kBlocks, true):
      return NearestRows<kBlocks, kBlocks, true>;
#if HWY_TARGET == HWY_AVX3_DL
    case key(kSpans, kSpans, false):
      return NearestRows<kSpans, kSpans, false>;
    case key(kSpans, kSpans, true):
      return NearestRows<kSpans, kSpans, true>;
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
    case key(kWindows, kWindows, true): {
      // NV12: the windows compiled in for the counts real ratios make (UV
      // pairs as many as luma), in place of the count read per vector: 4K
      // NV12 -> 416 and 512 0.96-0.98 of the time. I420 reads its counts:
      // compiled in, they were no faster (in-process A/B, session 22).
      if (planar) return NearestRows<kWindows, kWindows, true>;
      const int lw = job.luma_x->windows, cw = job.chroma_x->windows;
      if (lw == 1 && cw == 1) return NearestRows<kWindows, kWindows, false, 1, 1>;
      if (lw == 2 && cw == 2) return NearestRows<kWindows, kWindows, false, 2, 2>;
      if (lw == 4 && cw == 4) return NearestRows<kWindows, kWindows, false, 4, 4>;
      return NearestRows<kWindows, kWindows, false>;
    }
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
}
#endif

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
  // -1: none of these (gathers). single: the picks of one 64-byte load a
  // vector count too, a pattern found as a period of 16 outputs
  // (ResampleAxis::pick_period) and the span tables (span_base).
  auto mode = [](int k, int step, const ResampleAxis& ax, bool single) {
#if HWY_TARGET == HWY_AVX3_DL
    if (k != 0) return k * step == 3 && ax.pick_span != 0 ? kPattern : k * step;
    if (ax.pick_span != 0 && (single || !ax.pick_period)) return kPattern;
    if (single && !ax.span_base.empty()) return kSpans;
    if (TakesPermutes(ax)) return kWindows;
#else
    (void)single;
    if (k != 0) return k * step;
#endif
    if (ax.picks && ax.blocks && !ax.gather && ax.passes == 1) return kBlocks;
    return -1;
  };
  const bool planar = !job.interleaved_uv;
  auto rows = [&](bool single) {
    return NearestRowsFor(job, mode(job.luma_x_pick, 1, *job.luma_x, single),
                          mode(job.chroma_x_pick, planar ? 1 : 2, *job.chroma_x, single), planar);
  };
  // One plane's picks by one load a vector where the other's mode has no
  // pair with them: both planes as without those. The spans (720p -> 416 and
  // 608, 1080p -> 608 nearest, where the 16-byte blocks took four loads a
  // vector), calls alternated in one process: 0.82-0.88 of the time with 4
  // MiB written between calls, 0.84-0.86 cached, 0.86-0.94 with frames fresh
  // from memory, two threads 0.87. The windows (two loads and a two-register
  // permute) in the blocks' place took 1.01-1.05x.
  const NearestRowsFn single = rows(true);
  return single != nullptr ? single : rows(false);
#endif
}

#endif  // NEAT_KERNELS_INTERNAL_PREPROCESS_NEAREST_INL_H_

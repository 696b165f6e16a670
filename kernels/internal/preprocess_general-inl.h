// The vertical-first path of the preprocess engine: the vertical taps over the
// whole 8-bit row in float, then the horizontal taps (a periodic pattern's
// interleaved loads, or lane permutes and gathers from the float row). It
// serves what the blocks path cannot on a target (large area ratios without
// AVX-512 VBMI; more than 63 vertical taps).
// A fragment of kernels/preprocess_simd.cpp (not a header of its own): it is
// included there once per SIMD target, inside neat::detail::HWY_NAMESPACE,
// after the types it uses (Scratch, RowTaps, DF and the other tags). The
// guard toggles with each target, as Highway's own -inl.h files do.
#if defined(NEAT_KERNELS_INTERNAL_PREPROCESS_GENERAL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEAT_KERNELS_INTERNAL_PREPROCESS_GENERAL_INL_H_
#undef NEAT_KERNELS_INTERNAL_PREPROCESS_GENERAL_INL_H_
#else
#define NEAT_KERNELS_INTERNAL_PREPROCESS_GENERAL_INL_H_
#endif

// Q interleaved vectors of u8 / u16 samples (Q = 1: a plain load).
template <int Q, class D>
HWY_INLINE void LoadQ(D d, const hn::TFromD<D>* p, hn::Vec<D> (&v)[4]) {
  if constexpr (Q == 1) {
    v[0] = hn::LoadU(d, p);
  } else if constexpr (Q == 2) {
    hn::LoadInterleaved2(d, p, v[0], v[1]);
  } else if constexpr (Q == 3) {
    hn::LoadInterleaved3(d, p, v[0], v[1], v[2]);
  } else {
    hn::LoadInterleaved4(d, p, v[0], v[1], v[2], v[3]);
  }
}

template <class V>
HWY_INLINE VF ToFloat(V v) {
  return hn::ConvertTo(DF(), hn::PromoteTo(DI(), v));
}

// The vertical taps of one output row with a non-zero weight, in chunks of
// at most 64 (an area downscale of more than ~60x has more).
struct Taps {
  std::int64_t row[64];
  float w[64];
  int n = 0;
};
template <class F>
HWY_INLINE void ForEachTapChunk(const ResampleAxis& ax, std::int64_t r, F&& f) {
  Taps t;
  bool first_chunk = true;
  for (int i = 0; i < ax.taps; ++i) {
    const float w = ax.weight[static_cast<std::size_t>(i * ax.stride + r)];
    if (w == 0.f) continue;
    t.row[t.n] = ax.first[static_cast<std::size_t>(r)] + i;
    t.w[t.n] = w;
    if (++t.n == 64) {
      f(t, !first_chunk);
      first_chunk = false;
      t.n = 0;
    }
  }
  if (t.n > 0) f(t, !first_chunk);
}

// Accumulators of one group of vectors: phase p of P outputs.
template <int P>
HWY_INLINE void LoadAcc(bool accumulate, float* out, VF (&acc)[2]) {
  const DF df;
  if (!accumulate) {
    acc[0] = acc[1] = hn::Zero(df);
  } else if constexpr (P == 1) {
    acc[0] = hn::LoadU(df, out);
  } else {
    hn::LoadInterleaved2(df, out, acc[0], acc[1]);
  }
}
template <int P>
HWY_INLINE void StoreAcc(const VF (&acc)[2], float* out) {
  if constexpr (P == 1) {
    hn::StoreU(acc[0], DF(), out);
  } else {
    hn::StoreInterleaved2(acc[0], acc[1], DF(), out);
  }
}
// acc[p] += w * sum over q of lane_weight[p][q] * s[q].
template <int P, int Q>
HWY_INLINE void AddLanes(const ResampleAxis& ax, float w, const VF (&s)[4], VF (&acc)[2]) {
  for (int p = 0; p < P; ++p) {
    for (int q = 0; q < Q; ++q) {
      const float lw = ax.lane_weight[p][q];
      if (lw != 0.f) acc[p] = hn::MulAdd(s[q], hn::Set(DF(), w * lw), acc[p]);
    }
  }
}

// Groups [0, end) of a periodic axis that whole vectors can do without
// reading past the source or writing past `count`.
HWY_INLINE std::int64_t VectorGroups(const ResampleAxis& ax) {
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(DF()));
  const std::int64_t groups = std::min(ax.source / ax.group_in, ax.count / ax.group_out);
  return groups / lanes * lanes;
}

// Output o of the general tables from an 8-bit source row (scalar; for tails).
HWY_INLINE float HorizontalAt(const ResampleAxis& ax, const std::uint8_t* row, std::int64_t step,
                              std::int64_t o) {
  float acc = 0.f;
  for (int t = 0; t < ax.taps; ++t) {
    const float w = ax.weight[static_cast<std::size_t>(t * ax.stride + o)];
    if (w != 0.f)
      acc += w * static_cast<float>(row[(ax.first[static_cast<std::size_t>(o)] + t) * step]);
  }
  return acc;
}

// ---- luma -------------------------------------------------------------------

// Periodic fast path: P outputs per Q samples, straight from the source rows.
template <int P, int Q>
void LumaFast(const PreprocessJob& job, const Taps& taps, bool accumulate, float* out) {
  const DF df;
  const D8 d8;
  const ResampleAxis& ax = *job.luma_x;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const std::int64_t groups = VectorGroups(ax);
  for (std::int64_t g = 0; g < groups; g += lanes) {
    VF acc[2];
    LoadAcc<P>(accumulate, out + P * g, acc);
    for (int t = 0; t < taps.n; ++t) {
      hn::Vec<D8> v[4];
      LoadQ<Q>(d8, job.y + taps.row[t] * job.y_stride + Q * g, v);
      VF f[4];
      for (int q = 0; q < Q; ++q)
        f[q] = ax.lane_used[q] ? ToFloat(v[q]) : hn::Zero(df);
      AddLanes<P, Q>(ax, taps.w[t], f, acc);
    }
    StoreAcc<P>(acc, out + P * g);
  }
  for (std::int64_t o = P * groups; o < ax.count; ++o) {  // the tail, scalar
    float acc = accumulate ? out[o] : 0.f;
    for (int t = 0; t < taps.n; ++t)
      acc += taps.w[t] * HorizontalAt(ax, job.y + taps.row[t] * job.y_stride, 1, o);
    out[o] = acc;
  }
}

// Vertical pass of `width` u8 samples into a float row.
void VerticalU8(const std::uint8_t* base, std::int64_t stride, std::int64_t width, const Taps& taps,
                bool accumulate, float* out) {
  const DF df;
  const D8 d8;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t x = 0;
  for (; x + lanes <= width; x += lanes) {
    VF acc = accumulate ? hn::LoadU(df, out + x) : hn::Zero(df);
    for (int t = 0; t < taps.n; ++t) {
      const VF v = ToFloat(hn::LoadU(d8, base + taps.row[t] * stride + x));
      acc = hn::MulAdd(v, hn::Set(df, taps.w[t]), acc);
    }
    hn::StoreU(acc, df, out + x);
  }
  for (; x < width; ++x) {
    float acc = accumulate ? out[x] : 0.f;
    for (int t = 0; t < taps.n; ++t)
      acc += static_cast<float>(base[taps.row[t] * stride + x]) * taps.w[t];
    out[x] = acc;
  }
}

// Horizontal pass of the general path, from a float row (padded). A vector
// of outputs whose samples lie within at most 4 vectors of the row (ratios
// up to about 3.5) loads that window once and picks each tap's samples with
// lane permutes; wider windows gather (slower: a gather costs about a lane a
// cycle on x86).
void HorizontalGather(const ResampleAxis& ax, const float* row, float* out) {
  const DF df;
  const DI di;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  constexpr int kMaxWindow = 4;
  const int block = lanes == 4 ? 0 : lanes == 8 ? 1 : lanes == 16 ? 2 : -1;
  const std::int64_t window = block < 0 ? 0 : (ax.window[block] + lanes - 1) / lanes;
  if (block >= 0 && window <= kMaxWindow) {
    int shift = 0;
    while ((std::int64_t{1} << shift) < lanes)
      ++shift;
    const auto low = hn::Set(di, static_cast<std::int32_t>(lanes - 1));
    for (std::int64_t o = 0; o < ax.count; o += lanes) {  // tables and `out` are padded
      const std::int32_t base = ax.first[static_cast<std::size_t>(o)];
      const auto rel = hn::Sub(hn::LoadU(di, ax.first.data() + o), hn::Set(di, base));
      VF src[kMaxWindow];
      for (int k = 0; k < window; ++k)
        src[k] = hn::LoadU(df, row + base + k * lanes);
      VF acc = hn::Zero(df);
      for (int t = 0; t < ax.taps; ++t) {
        const auto idx = hn::Add(rel, hn::Set(di, t));
        const auto lane = hn::IndicesFromVec(df, hn::And(idx, low));
        const auto which = hn::ShiftRightSame(idx, shift);  // the window vector; < 0 past count
        VF v = hn::TableLookupLanes(src[0], lane);
        for (int k = 1; k < window; ++k) {
          const auto in_k = hn::RebindMask(df, hn::Eq(which, hn::Set(di, k)));
          v = hn::IfThenElse(in_k, hn::TableLookupLanes(src[k], lane), v);
        }
        acc = hn::MulAdd(v, hn::LoadU(df, ax.weight.data() + t * ax.stride + o), acc);
      }
      hn::StoreU(acc, df, out + o);
    }
    return;
  }
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
  // Eight outputs at a time: each output's taps as one or two vectors of
  // samples from its first, times its weights (0 past its taps; the row's
  // slack is zeros), the eight products summed across by a tree of
  // horizontal adds. A gather takes about a cycle per lane on these CPUs;
  // 1080p -> 416 area on AVX2 spent 40% of its time in them (this: 16% less
  // time, 4K -> 416 25-35%). Two taps (bilinear) gather as fast.
  if (ax.by_output_taps > 0 && ax.taps > 2) {
    const std::int32_t* const first = ax.first.data();
    const float* const weights = ax.by_output.data();
    const bool two = ax.by_output_taps == 16;
    for (std::int64_t o = 0; o < ax.count; o += 8) {  // tables and `out` are padded
      __m256 p[8];
      for (int i = 0; i < 8; ++i) {
        const float* x = row + first[o + i];
        const float* w = weights + (o + i) * ax.by_output_taps;
        p[i] = _mm256_mul_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(w));
        if (two) p[i] = _mm256_fmadd_ps(_mm256_loadu_ps(x + 8), _mm256_loadu_ps(w + 8), p[i]);
      }
      // hadd(a, b) = [a0+a1, a2+a3, b0+b1, b2+b3 | a4+a5, a6+a7, b4+b5, b6+b7]:
      // after two levels q0 holds outputs 0-3's sums of lanes 0-3 in its lanes
      // 0-3 and of lanes 4-7 in its lanes 4-7; q1 the same for outputs 4-7.
      const __m256 q0 = _mm256_hadd_ps(_mm256_hadd_ps(p[0], p[1]), _mm256_hadd_ps(p[2], p[3]));
      const __m256 q1 = _mm256_hadd_ps(_mm256_hadd_ps(p[4], p[5]), _mm256_hadd_ps(p[6], p[7]));
      _mm256_storeu_ps(out + o, _mm256_add_ps(_mm256_permute2f128_ps(q0, q1, 0x20),
                                              _mm256_permute2f128_ps(q0, q1, 0x31)));
    }
    return;
  }
#endif
  for (std::int64_t o = 0; o < ax.count; o += lanes) {  // tables and `out` are padded
    const auto first = hn::LoadU(di, ax.first.data() + o);
    VF acc = hn::Zero(df);
    for (int t = 0; t < ax.taps; ++t) {
      const VF v = hn::GatherIndex(df, row, hn::Add(first, hn::Set(di, t)));
      acc = hn::MulAdd(v, hn::LoadU(df, ax.weight.data() + t * ax.stride + o), acc);
    }
    hn::StoreU(acc, df, out + o);
  }
}

template <int P, int Q>
struct Pattern {};

// Calls f(Pattern<P, Q>) for the axis's periodic pattern; false when it has none.
template <class F>
HWY_INLINE bool WithPattern(const ResampleAxis& ax, F&& f) {
  switch (ax.group_out * 8 + ax.group_in) {
    case 9:
      f(Pattern<1, 1>());
      return true;
    case 17:
      f(Pattern<2, 1>());
      return true;
    case 10:
      f(Pattern<1, 2>());
      return true;
    case 11:
      f(Pattern<1, 3>());
      return true;
    case 19:
      f(Pattern<2, 3>());
      return true;
    case 12:
      f(Pattern<1, 4>());
      return true;
    default:
      return false;
  }
}

void LumaRow(const PreprocessJob& job, Scratch& s, std::int64_t r) {
  const ResampleAxis& ax = *job.luma_x;
  bool fast = false;
  ForEachTapChunk(*job.luma_y, r, [&](const Taps& taps, bool accumulate) {
    fast = WithPattern(ax, [&](auto pattern) {
      [&]<int P, int Q>(Pattern<P, Q>) {
        LumaFast<P, Q>(job, taps, accumulate, s.luma.data());
      }(pattern);
    });
    if (!fast) VerticalU8(job.y, job.y_stride, ax.source, taps, accumulate, s.vrow.data());
  });
  if (!fast) HorizontalGather(ax, s.vrow.data(), s.luma.data());
}

// ---- chroma -----------------------------------------------------------------

// Periodic fast path on both chroma planes (or the interleaved one).
template <int P, int Q>
void ChromaFast(const PreprocessJob& job, const Taps& taps, bool accumulate, float* cu, float* cv) {
  const DF df;
  const D8 d8;
  const D16 d16;
  const ResampleAxis& ax = *job.chroma_x;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const std::int64_t groups = VectorGroups(ax);
  const bool u_low = job.u < job.v;  // interleaved: U is the low byte of each pair
  for (std::int64_t g = 0; g < groups; g += lanes) {
    VF au[2], av[2];
    LoadAcc<P>(accumulate, cu + P * g, au);
    LoadAcc<P>(accumulate, cv + P * g, av);
    for (int t = 0; t < taps.n; ++t) {
      VF fu[4], fv[4];
      if (job.interleaved_uv) {
        const std::uint8_t* p = std::min(job.u, job.v) + taps.row[t] * job.u_stride + 2 * Q * g;
        hn::Vec<D16> pairs[4];
        LoadQ<Q>(d16, reinterpret_cast<const std::uint16_t*>(p), pairs);
        for (int q = 0; q < Q; ++q) {
          fu[q] = fv[q] = hn::Zero(df);
          if (!ax.lane_used[q]) continue;
          const VF lo = ToFloat(hn::And(pairs[q], hn::Set(d16, 0xFF)));
          const VF hi = ToFloat(hn::ShiftRight<8>(pairs[q]));
          fu[q] = u_low ? lo : hi;
          fv[q] = u_low ? hi : lo;
        }
      } else {
        hn::Vec<D8> vu[4], vv[4];
        LoadQ<Q>(d8, job.u + taps.row[t] * job.u_stride + Q * g, vu);
        LoadQ<Q>(d8, job.v + taps.row[t] * job.v_stride + Q * g, vv);
        for (int q = 0; q < Q; ++q) {
          fu[q] = fv[q] = hn::Zero(df);
          if (!ax.lane_used[q]) continue;
          fu[q] = ToFloat(vu[q]);
          fv[q] = ToFloat(vv[q]);
        }
      }
      AddLanes<P, Q>(ax, taps.w[t], fu, au);
      AddLanes<P, Q>(ax, taps.w[t], fv, av);
    }
    StoreAcc<P>(au, cu + P * g);
    StoreAcc<P>(av, cv + P * g);
  }
  const std::int64_t step = job.interleaved_uv ? 2 : 1;
  for (std::int64_t o = P * groups; o < ax.count; ++o) {  // the tail, scalar
    float acc_u = accumulate ? cu[o] : 0.f, acc_v = accumulate ? cv[o] : 0.f;
    for (int t = 0; t < taps.n; ++t) {
      acc_u += taps.w[t] * HorizontalAt(ax, job.u + taps.row[t] * job.u_stride, step, o);
      acc_v += taps.w[t] * HorizontalAt(ax, job.v + taps.row[t] * job.v_stride, step, o);
    }
    cu[o] = acc_u;
    cv[o] = acc_v;
  }
}

// Vertical pass of an interleaved UV plane into separate U and V float rows.
void VerticalInterleaved(const PreprocessJob& job, std::int64_t width, const Taps& taps,
                         bool accumulate, float* out_u, float* out_v) {
  const DF df;
  const D8 d8;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const bool u_low = job.u < job.v;
  const std::uint8_t* base = std::min(job.u, job.v);
  float* lo_out = u_low ? out_u : out_v;
  float* hi_out = u_low ? out_v : out_u;
  std::int64_t x = 0;
  for (; x + lanes <= width; x += lanes) {
    VF alo = accumulate ? hn::LoadU(df, lo_out + x) : hn::Zero(df);
    VF ahi = accumulate ? hn::LoadU(df, hi_out + x) : hn::Zero(df);
    for (int t = 0; t < taps.n; ++t) {
      hn::Vec<D8> lo, hi;
      hn::LoadInterleaved2(d8, base + taps.row[t] * job.u_stride + 2 * x, lo, hi);
      const VF w = hn::Set(df, taps.w[t]);
      alo = hn::MulAdd(ToFloat(lo), w, alo);
      ahi = hn::MulAdd(ToFloat(hi), w, ahi);
    }
    hn::StoreU(alo, df, lo_out + x);
    hn::StoreU(ahi, df, hi_out + x);
  }
  for (; x < width; ++x) {
    float alo = accumulate ? lo_out[x] : 0.f, ahi = accumulate ? hi_out[x] : 0.f;
    for (int t = 0; t < taps.n; ++t) {
      const std::uint8_t* p = base + taps.row[t] * job.u_stride + 2 * x;
      alo += static_cast<float>(p[0]) * taps.w[t];
      ahi += static_cast<float>(p[1]) * taps.w[t];
    }
    lo_out[x] = alo;
    hi_out[x] = ahi;
  }
}

// Resamples the chroma of content row r into the U and V rows.
void ChromaRow(const PreprocessJob& job, Scratch& s, std::int64_t r) {
  const ResampleAxis& ax = *job.chroma_x;
  bool fast = false;
  ForEachTapChunk(*job.chroma_y, r, [&](const Taps& taps, bool accumulate) {
    fast = WithPattern(ax, [&](auto pattern) {
      [&]<int P, int Q>(Pattern<P, Q>) {
        ChromaFast<P, Q>(job, taps, accumulate, s.cu.data(), s.cv.data());
      }(pattern);
    });
    if (fast) return;
    if (job.interleaved_uv) {
      VerticalInterleaved(job, ax.source, taps, accumulate, s.urow.data(), s.wrow.data());
    } else {
      VerticalU8(job.u, job.u_stride, ax.source, taps, accumulate, s.urow.data());
      VerticalU8(job.v, job.v_stride, ax.source, taps, accumulate, s.wrow.data());
    }
  });
  if (!fast) {
    HorizontalGather(ax, s.urow.data(), s.cu.data());
    HorizontalGather(ax, s.wrow.data(), s.cv.data());
  }
  s.chroma_row = r;
}

#endif  // NEAT_KERNELS_INTERNAL_PREPROCESS_GENERAL_INL_H_

// The preprocess engine's stores to the output tensor: one vector of
// pixels in any dtype (StoreOut), a staged row streamed out (StreamRow), and
// the pad of a letterbox's bars and sides (FillRun, FillPad) with the rule
// for how the bars are stored (BarStores). A fragment of
// kernels/preprocess_simd.cpp (not a header of its own): it is included there
// once per SIMD target, inside neat::detail::HWY_NAMESPACE, after the vector
// types it uses (DF, D16, DU, DI). The guard toggles with each target, as
// Highway's own -inl.h files do.
#if defined(NEAT_KERNELS_INTERNAL_PREPROCESS_STORES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEAT_KERNELS_INTERNAL_PREPROCESS_STORES_INL_H_
#undef NEAT_KERNELS_INTERNAL_PREPROCESS_STORES_INL_H_
#else
#define NEAT_KERNELS_INTERNAL_PREPROCESS_STORES_INL_H_
#endif

// Bytes of `count` (< lanes) values kept in a temporary of `cap` lanes. The
// clamp changes nothing at run time; it lets the compiler see the copy stays
// inside the temporary (GCC 12 otherwise warns on the one-lane scalar target).
template <typename T>
HWY_INLINE std::size_t PartialBytes(std::int64_t count, std::size_t cap) {
  const auto n = static_cast<std::size_t>(count);
  return (n < cap ? n : cap) * sizeof(T);
}

// Stores `count` (<= lanes) values at element `at` of an output plane;
// whole aligned vectors bypass the caches when job.stream says so.
HWY_INLINE void StoreOut(const PreprocessJob& job, VF v, std::byte* plane, std::int64_t at,
                         std::int64_t count) {
  const DF df;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  if (job.out_dtype == DType::F32) {
    float* p = reinterpret_cast<float*>(plane) + at;
    if (count == lanes) {
      if (job.stream && (reinterpret_cast<std::uintptr_t>(p) & (sizeof(float) * lanes - 1)) == 0) {
        hn::Stream(v, df, p);
      } else {
        hn::StoreU(v, df, p);
      }
    } else {
      HWY_ALIGN float tmp[hn::MaxLanes(df)];
      hn::Store(v, df, tmp);
      std::memcpy(p, tmp, PartialBytes<float>(count, hn::MaxLanes(df)));
    }
    return;
  }
  const D16 d16;
  hn::Vec<D16> bits;
  if (job.out_dtype == DType::F16) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    bits = hn::BitCast(d16, hn::DemoteTo(dh, v));
  } else {  // BF16, rounded to nearest even (values are finite)
    const DU du;
    const auto u = hn::BitCast(du, v);
    const auto odd = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1));
    const auto rounded = hn::ShiftRight<16>(hn::Add(hn::Add(u, hn::Set(du, 0x7FFF)), odd));
    bits = hn::DemoteTo(d16, hn::BitCast(DI(), rounded));
  }
  auto* p = reinterpret_cast<std::uint16_t*>(plane) + at;
  // Streaming stores write whole registers: only where the 16-bit vector is
  // one (not the half-register vectors of 128-bit targets), aligned to it.
  constexpr std::size_t kBytes16 = sizeof(std::uint16_t) * hn::MaxLanes(D16());
  if (count == lanes && job.stream && kBytes16 >= 16 &&
      (reinterpret_cast<std::uintptr_t>(p) & (kBytes16 - 1)) == 0) {
    hn::Stream(bits, d16, p);
  } else if (count == lanes) {
    hn::StoreU(bits, d16, p);
  } else {
    HWY_ALIGN std::uint16_t tmp[hn::MaxLanes(d16)];
    hn::Store(bits, d16, tmp);
    std::memcpy(p, tmp, PartialBytes<std::uint16_t>(count, hn::MaxLanes(d16)));
  }
}

// n floats from a cached row to one of the tensor's, streamed from the
// first vector-aligned float on; the ends by plain stores.
HWY_INLINE void StreamRow(const float* from, float* to, std::int64_t n) {
  const DF df;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(df));
  constexpr std::uintptr_t kBytes = sizeof(float) * hn::MaxLanes(DF());
  std::int64_t i = 0;
  while (i < n && (reinterpret_cast<std::uintptr_t>(to + i) & (kBytes - 1)) != 0)
    ++i;
  if (n - i < lanes) i = n;  // too short to stream: one plain copy
  std::memcpy(to, from, static_cast<std::size_t>(i) * sizeof(float));
  for (; i + lanes <= n; i += lanes)
    hn::Stream(hn::LoadU(df, from + i), df, to + i);
  std::memcpy(to + i, from + i, static_cast<std::size_t>(n - i) * sizeof(float));
}

// Fills `count` samples from `at` of every output plane with its pad value.
// Where `stream` says so (BarStores), with streaming stores from the first
// vector-aligned sample on: a letterbox's bars are up to half of the output,
// and plain stores would read every line first.
template <typename T>
HWY_INLINE void FillRun(bool stream, T* p, std::int64_t count, T value) {
  using DT = hn::ScalableTag<T>;
  const DT dt;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(dt));
  constexpr std::size_t kBytes = sizeof(T) * hn::MaxLanes(DT());
  if (!stream || count < 2 * lanes || kBytes < 16) {
    std::fill_n(p, count, value);
    return;
  }
  const auto misaligned = reinterpret_cast<std::uintptr_t>(p) & (kBytes - 1);
  const std::int64_t head =
      misaligned == 0 ? 0 : static_cast<std::int64_t>((kBytes - misaligned) / sizeof(T));
  std::fill_n(p, head, value);
  const auto v = hn::Set(dt, value);
  std::int64_t i = head;
  for (; i + lanes <= count; i += lanes)
    hn::Stream(v, dt, p + i);
  std::fill_n(p + i, count - i, value);
}

void FillPad(const PreprocessJob& job, std::int64_t at, std::int64_t count, bool stream) {
  if (count <= 0) return;
  for (int c = 0; c < 3; ++c) {
    if (job.out_dtype == DType::F32) {
      FillRun(stream, reinterpret_cast<float*>(job.planes[c]) + at, count, job.pad[c]);
      continue;
    }
    // The pad value in the 16-bit dtype, converted by the same store as pixels.
    HWY_ALIGN std::uint16_t one[hn::MaxLanes(D16())];
    StoreOut(job, hn::Set(DF(), job.pad[c]), reinterpret_cast<std::byte*>(one), 0, 1);
    FillRun(stream, reinterpret_cast<std::uint16_t*>(job.planes[c]) + at, count, one[0]);
  }
}

// Whether the bars take streaming stores: whenever the content rows do,
// but beside nearest's content (`nearest`), which keeps job.stream_bars.
// Beside the blocks path's content (made from scratch rows: the row caches,
// sums and picks), plain bars' lines would evict those rows (the bars
// spread, 1080p I420 -> 512 letterboxed bilinear: plain 1.05 of the time,
// streamed 0.91-0.93; not spread, streamed bars alone 1.02-1.08). Beside
// the 2x and 4x boxes fused in one pass, the tensor's lines are seldom in
// the caches when the next frame comes (a model ran between), and plain
// bars read each first: calls alternated in one process, streamed over
// plain, 720p NV12 and I420 -> 640 letterboxed 0.69-0.78 of the time with
// 24 MiB written between calls, 0.75-0.99 with frames fresh from memory
// too, 0.82-1.03 with the frame and tensor cached; -> 320 letterboxed area
// 0.76-0.96; in the table's own loop 0.67-0.78 run second in ours' slot,
// 0.79-0.86 run first (the slot favours the second). Nearest's bars come before
// its content rows, not spread among them; streamed there, 4K I420 -> 416
// and 1080p -> 512 letterboxed took 1.12-1.24 of the time with the frame
// cached (0.91-0.95 fresh from memory).
bool BarStores(const PreprocessJob& job, bool nearest) {
  return job.stream_bars || (job.stream && !nearest);
}

#endif  // NEAT_KERNELS_INTERNAL_PREPROCESS_STORES_INL_H_

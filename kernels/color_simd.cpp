// YUV 4:2:0 -> packed RGB / BGR (see kernels/internal/color_kernel.hpp),
// written once with Highway and compiled for every target it knows;
// HWY_DYNAMIC_DISPATCH picks the best the CPU supports at run time.
//
// A vector of N pixels: N luma bytes, the N / 2 chroma pairs under them
// duplicated to N lanes with one byte shuffle, widened to int32, OpenCV's
// fixed-point formula, saturated back to bytes and stored interleaved.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/color_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>

#include "neat/kernels/internal/color_kernel.hpp"

HWY_BEFORE_NAMESPACE();
namespace neat::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DI = hn::ScalableTag<std::int32_t>;
using D8 = hn::Rebind<std::uint8_t, DI>;  // one byte per int32 lane

inline std::uint8_t Saturate(int v) {
  return static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// Pixels [x0, width) of one row, one at a time (tails, and targets with
// fewer than 4 lanes).
void ScalarPixels(const YuvRowsJob& j, const std::uint8_t* yr, const std::uint8_t* ur,
                  const std::uint8_t* vr, std::int64_t step, std::int64_t x0, std::uint8_t* d) {
  const YuvToRgb& k = *j.coefficients;
  const int half = 1 << (kYuvShift - 1);
  const int ri = j.bgr ? 2 : 0, bi = 2 - ri;
  for (std::int64_t x = x0; x < j.width; ++x) {
    const int u = int(ur[(x / 2) * step]) - 128, v = int(vr[(x / 2) * step]) - 128;
    const int yy = std::max(0, int(yr[x]) - k.y_offset) * k.y;
    std::uint8_t* px = d + 3 * x;
    px[ri] = Saturate((yy + half + k.r_v * v) >> kYuvShift);
    px[1] = Saturate((yy + half + k.g_v * v + k.g_u * u) >> kYuvShift);
    px[bi] = Saturate((yy + half + k.b_u * u) >> kYuvShift);
  }
}

#if HWY_TARGET == HWY_SCALAR
void YuvRows(const YuvRowsJob& j, std::int64_t row_begin, std::int64_t row_end) {
  for (std::int64_t r = row_begin; r < row_end; ++r) {
    ScalarPixels(j, j.y + r * j.y_stride, j.u + (r / 2) * j.u_stride, j.v + (r / 2) * j.v_stride,
                 j.interleaved_uv ? 2 : 1, 0, j.dst + r * j.dst_stride);
  }
}
#else
void YuvRows(const YuvRowsJob& j, std::int64_t row_begin, std::int64_t row_end) {
  const DI di;
  const D8 d8;
  const std::int64_t n = static_cast<std::int64_t>(hn::Lanes(di));
  const YuvToRgb& k = *j.coefficients;
  const auto zero = hn::Zero(di), c128 = hn::Set(di, 128);
  const auto black = hn::Set(d8, static_cast<std::uint8_t>(k.y_offset));
  const auto cy = hn::Set(di, k.y), half = hn::Set(di, 1 << (kYuvShift - 1));
  const auto rv = hn::Set(di, k.r_v), gv = hn::Set(di, k.g_v), gu = hn::Set(di, k.g_u),
             bu = hn::Set(di, k.b_u);
  // Two vectors of pixels, A = [x, x + n) and B = [x + n, x + 2n), share n
  // chroma samples. Their terms are computed once per sample, in the lane
  // order that InterleaveLower / InterleaveUpper (which work within 128-bit
  // blocks) turn into each sample twice, in pixel order: lane 4b + i holds
  // sample 2b + i (i < 2, for A) or n / 2 + 2b + i - 2 (i >= 2, for B).
  HWY_ALIGN std::uint8_t order_idx[hn::MaxLanes(d8)];
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t b = i / 4, q = i % 4;
    order_idx[i] = static_cast<std::uint8_t>(q < 2 ? 2 * b + q : n / 2 + 2 * b + q - 2);
  }
  const auto order = hn::Load(d8, order_idx);
  // Interleaved chroma: the same order straight from the two halves of the
  // 2n pair bytes (index 0x80 gives 0; U at even bytes, V at odd).
  HWY_ALIGN std::uint8_t even_lo[hn::MaxLanes(d8)], even_hi[hn::MaxLanes(d8)],
      odd_lo[hn::MaxLanes(d8)], odd_hi[hn::MaxLanes(d8)];
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t b = 2 * order_idx[i];  // the pair's first byte in [0, 2n)
    even_lo[i] = b < n ? static_cast<std::uint8_t>(b) : 0x80;
    odd_lo[i] = b < n ? static_cast<std::uint8_t>(b + 1) : 0x80;
    even_hi[i] = b >= n ? static_cast<std::uint8_t>(b - n) : 0x80;
    odd_hi[i] = b >= n ? static_cast<std::uint8_t>(b - n + 1) : 0x80;
  }
  const auto elo = hn::Load(d8, even_lo), ehi = hn::Load(d8, even_hi);
  const auto olo = hn::Load(d8, odd_lo), ohi = hn::Load(d8, odd_hi);
  // Packing: each pixel as one int32 word (first byte, second, third, 0);
  // per 128-bit block the 4 words' first three bytes to its first 12 bytes,
  // then the blocks' first three words next to each other: 3n / 4 words.
  using DB = hn::Repartition<std::uint8_t, DI>;
  const DB db;
  HWY_ALIGN std::uint8_t bytes_idx[hn::MaxLanes(db)];
  HWY_ALIGN std::int32_t words_idx[hn::MaxLanes(di)];
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(hn::Lanes(db)); ++i) {
    const std::int64_t q = i % 16;
    bytes_idx[i] = static_cast<std::uint8_t>(q < 12 ? (q / 3) * 4 + q % 3 : 15);
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t w = std::min(i, 3 * n / 4 - 1);
    words_idx[i] = static_cast<std::int32_t>((w / 3) * 4 + w % 3);
  }
  const auto pack_bytes = hn::Load(db, bytes_idx);
  const auto pack_words = hn::SetTableIndices(di, words_idx);
  const auto store_mask = hn::FirstN(di, static_cast<std::size_t>(3 * n / 4));
  const auto c255 = hn::Set(di, 255);
  auto clamp = [&](hn::Vec<DI> v) { return hn::Min(hn::Max(v, zero), c255); };
  const bool u_low = j.u < j.v;
  const std::int64_t step = j.interleaved_uv ? 2 : 1;
  // Whole steps of 2n pixels keep every load inside its row: luma
  // [x, x + 2n), chroma samples [x / 2, x / 2 + n).
  const std::int64_t vector_end = n < 4 ? -1 : j.width - 2 * n;
  for (std::int64_t r = row_begin; r < row_end; ++r) {
    const std::uint8_t* yr = j.y + r * j.y_stride;
    const std::uint8_t* ur = j.u + (r / 2) * j.u_stride;
    const std::uint8_t* vr = j.v + (r / 2) * j.v_stride;
    std::uint8_t* d = j.dst + r * j.dst_stride;
    std::int64_t x = 0;
    for (; x <= vector_end; x += 2 * n) {
      hn::Vec<D8> u8, v8;
      if (j.interleaved_uv) {
        const std::uint8_t* c = std::min(ur, vr) + x;
        const auto lo = hn::LoadU(d8, c), hi = hn::LoadU(d8, c + n);
        const auto even =
            hn::Or(hn::TableLookupBytesOr0(lo, elo), hn::TableLookupBytesOr0(hi, ehi));
        const auto odd = hn::Or(hn::TableLookupBytesOr0(lo, olo), hn::TableLookupBytesOr0(hi, ohi));
        u8 = u_low ? even : odd;
        v8 = u_low ? odd : even;
      } else {
        u8 = hn::TableLookupBytes(hn::LoadU(d8, ur + x / 2), order);
        v8 = hn::TableLookupBytes(hn::LoadU(d8, vr + x / 2), order);
      }
      const auto u = hn::Sub(hn::PromoteTo(di, u8), c128);
      const auto v = hn::Sub(hn::PromoteTo(di, v8), c128);
      const auto rt = hn::Mul(v, rv);
      const auto gt = hn::Add(hn::Mul(v, gv), hn::Mul(u, gu));
      const auto bt = hn::Mul(u, bu);
      for (int part = 0; part < 2; ++part) {
        const auto rp =
            part == 0 ? hn::InterleaveLower(di, rt, rt) : hn::InterleaveUpper(di, rt, rt);
        const auto gp =
            part == 0 ? hn::InterleaveLower(di, gt, gt) : hn::InterleaveUpper(di, gt, gt);
        const auto bp =
            part == 0 ? hn::InterleaveLower(di, bt, bt) : hn::InterleaveUpper(di, bt, bt);
        const std::int64_t px = x + part * n;
        // max(0, Y - black) on bytes (saturating), then widened.
        const auto y = hn::PromoteTo(di, hn::SaturatedSub(hn::LoadU(d8, yr + px), black));
        const auto yy = hn::Add(hn::Mul(y, cy), half);
        const auto r32 = clamp(hn::ShiftRight<kYuvShift>(hn::Add(yy, rp)));
        const auto g32 = clamp(hn::ShiftRight<kYuvShift>(hn::Add(yy, gp)));
        const auto b32 = clamp(hn::ShiftRight<kYuvShift>(hn::Add(yy, bp)));
        const auto first = j.bgr ? b32 : r32, third = j.bgr ? r32 : b32;
        const auto word = hn::Or3(first, hn::ShiftLeft<8>(g32), hn::ShiftLeft<16>(third));
        const auto packed = hn::TableLookupLanes(
            hn::BitCast(di, hn::TableLookupBytes(hn::BitCast(db, word), pack_bytes)), pack_words);
        hn::BlendedStore(packed, store_mask, di, reinterpret_cast<std::int32_t*>(d + 3 * px));
      }
    }
    ScalarPixels(j, yr, ur, vr, step, x, d);
  }
}
#endif  // HWY_TARGET == HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace neat::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neat::detail {

HWY_EXPORT(YuvRows);

void yuv420_to_rgb_rows(const YuvRowsJob& job, std::int64_t row_begin, std::int64_t row_end) {
  HWY_DYNAMIC_DISPATCH(YuvRows)(job, row_begin, row_end);
}

}  // namespace neat::detail
#endif  // HWY_ONCE

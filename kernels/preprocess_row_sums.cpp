// Area's fixed-point vertical pass, planned once per geometry: for each
// output row, which source rows it sums at full weight, which two it weighs,
// and in what units (see RowSumPlan in preprocess_kernel.hpp; the pass itself
// is VerticalSumRow in preprocess_box-inl.h).
#include <algorithm>
#include <cstdint>
#include <limits>

#include "neat/kernels/internal/preprocess_kernel.hpp"

namespace neat::detail {
namespace {

// Output row o's plan; a default plan (no rows) where it does not apply:
// more than two rows of partial weight, rows of full weight not one run,
// fewer than two rows, or a sum that would not fit in 15 bits.
RowSumPlan plan_row(const ResampleAxis& a, std::int64_t o) {
  const auto u = static_cast<std::size_t>(o);
  const auto at = [&](int t) { return a.weight[static_cast<std::size_t>(t) * a.stride + u]; };
  float full = 0.f;
  for (int t = 0; t < a.taps; ++t)
    full = std::max(full, at(t));
  RowSumPlan p;
  if (full <= 0.f) return {};
  double q[2] = {};
  int n_full = 0, n_part = 0, last_full = -2;
  for (int t = 0; t < a.taps; ++t) {
    const double share = static_cast<double>(at(t)) / full;
    if (share <= 0) continue;
    const std::int64_t src = a.first[u] + t;
    if (share >= 1.0 - 1.0 / 65536) {
      if (n_full > 0 && last_full != t - 1) return {};
      if (n_full == 0) p.full_first = static_cast<std::int32_t>(src);
      ++n_full;
      last_full = t;
    } else if (n_part == 2) {
      return {};
    } else {
      p.part[n_part] = static_cast<std::int32_t>(src);
      q[n_part++] = share;
    }
  }
  if (n_full + n_part < 2) return {};
  // The largest f whose sum fits: each partial term rounds up by at most
  // half a unit; one step lower where the rounded weights do not.
  const double rows = n_full + q[0] + q[1];
  int f = 6;  // 7 fits no two rows
  while (f >= 0 && 255.0 * rows * (1 << f) + 1.0 > 32767.0)
    --f;
  for (; f >= 0; --f) {
    std::int64_t top = (std::int64_t{255} * n_full) << f;
    std::int64_t units256 = std::int64_t{n_full} << (f + 8);  // the units, x 256
    for (int i = 0; i < n_part; ++i) {
      const auto b = static_cast<std::int64_t>(q[i] * (1 << (f + 8)) + 0.5);
      p.b[i] = static_cast<std::int16_t>(std::min<std::int64_t>(b, 32767));
      top += (255 * 128 * p.b[i] + (1 << 14)) >> 15;  // as the rounding multiply
      units256 += p.b[i];
    }
    if (top <= 32767) {  // the word permutes take the sums as signed words
      p.n_full = static_cast<std::int16_t>(n_full);
      p.n_part = static_cast<std::int16_t>(n_part);
      p.f = f;
      p.units = static_cast<float>(units256) / 256.f;
      return p;
    }
  }
  return {};
}

}  // namespace

void plan_row_sums(ResampleAxis& a) {
  a.row_sums.resize(static_cast<std::size_t>(a.count));
  for (std::int64_t o = 0; o < a.count; ++o)
    a.row_sums[static_cast<std::size_t>(o)] = plan_row(a, o);
  // From 1.5 rows down, each row's pass prefetches the next output row's
  // rows (RowSumPlan::ahead), none past the plane's last; a row's rows start
  // at its first of full or of partial weight.
  if (2 * a.source < 3 * a.count) return;
  auto lowest = [](const RowSumPlan& v) {
    std::int64_t low = v.n_full > 0 ? v.full_first : std::numeric_limits<std::int64_t>::max();
    for (int i = 0; i < v.n_part; ++i)
      low = std::min<std::int64_t>(low, v.part[i]);
    return low;
  };
  for (std::size_t o = 0; o + 1 < a.row_sums.size(); ++o) {
    RowSumPlan &v = a.row_sums[o], &next = a.row_sums[o + 1];
    if (v.n_full + v.n_part == 0 || next.n_full + next.n_part == 0) continue;
    const std::int64_t d = lowest(next) - lowest(v);
    if (d <= 0) continue;
    std::int64_t last = v.n_full > 0 ? v.full_first + v.n_full - 1 : 0;
    for (int i = 0; i < v.n_part; ++i)
      last = std::max<std::int64_t>(last, v.part[i]);
    if (last + d < a.source) v.ahead = static_cast<std::int32_t>(d);
  }
}

}  // namespace neat::detail

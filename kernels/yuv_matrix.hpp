// The YUV -> RGB coefficients of every colour standard the contract carries
// (BT.601, BT.709, BT.2020; limited and full range), in the two forms the
// kernels use: fixed point with 20 fractional bits (convert_color) and float
// (the fused preprocess). One table, so every YUV path converts alike.
//
//   R = ys (Y - y0)                    + rv (V - 128)
//   G = ys (Y - y0) + gu (U - 128)     + gv (V - 128)
//   B = ys (Y - y0) + bu (U - 128)
//
// with Kr, Kb of the matrix, Kg = 1 - Kr - Kb, and for limited range
// ys = 255/219, chroma scale 255/224, y0 = 16; for full range ys = 1, chroma
// scale 1, y0 = 0: rv = 2(1-Kr) c, bu = 2(1-Kb) c, gu = -2(1-Kb)Kb/Kg c,
// gv = -2(1-Kr)Kr/Kg c. BT.601 limited uses OpenCV's rounded constants
// (1.164, 1.596, -0.813, -0.391, 2.018) so that it stays bit-exact with
// cv::cvtColor; they differ from the exact ones by less than 0.05 %.
// Limited-range luma below 16 is clamped to 16 (as OpenCV does).
//
// Threading: pure functions over constant tables.
#pragma once

#include <cstdint>
#include <string_view>

#include "neat/contract/image.hpp"

namespace neat {

struct YuvToRgb {
  Colorimetry colorimetry;
  int y_offset = 16;                                 ///< y0: 16 (limited) or 0 (full)
  std::int32_t y = 0;                                ///< ys, fixed point (1 << 20 = 1.0)
  std::int32_t r_v = 0;                              ///< rv
  std::int32_t g_u = 0;                              ///< gu (negative)
  std::int32_t g_v = 0;                              ///< gv (negative)
  std::int32_t b_u = 0;                              ///< bu
  float fy = 0, frv = 0, fgu = 0, fgv = 0, fbu = 0;  ///< the same, as floats
};
inline constexpr int kYuvShift = 20;

/// The coefficients of a resolved colorimetry (each part known; an Unknown
/// part is resolved with GStreamer's default for SD, BT.601 limited).
const YuvToRgb& yuv_to_rgb(Colorimetry colorimetry) noexcept;

/// What a conversion's event says about its colour standard, e.g.
/// "yuv bt709 limited (from the frame)" or "yuv bt709 limited (assumed:
/// GStreamer's default for the frame size; the frame does not say)".
/// Static strings: valid for the life of the process.
std::string_view colorimetry_detail(Colorimetry resolved, bool assumed) noexcept;

}  // namespace neat

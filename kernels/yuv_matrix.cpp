#include "neat/kernels/yuv_matrix.hpp"

#include <array>
#include <cmath>
#include <string>

namespace neat {
namespace {

constexpr double kOne = 1 << kYuvShift;

YuvToRgb exact(Colorimetry c) {
  double kr = 0.299, kb = 0.114;  // BT.601
  if (c.matrix == YuvMatrix::BT709) kr = 0.2126, kb = 0.0722;
  if (c.matrix == YuvMatrix::BT2020) kr = 0.2627, kb = 0.0593;
  const double kg = 1.0 - kr - kb;
  const bool limited = c.range != ColorRange::Full;
  const double ys = limited ? 255.0 / 219.0 : 1.0;
  const double cs = limited ? 255.0 / 224.0 : 1.0;
  const double rv = 2 * (1 - kr) * cs, bu = 2 * (1 - kb) * cs;
  const double gu = -2 * (1 - kb) * kb / kg * cs, gv = -2 * (1 - kr) * kr / kg * cs;
  YuvToRgb k;
  k.colorimetry = c;
  k.y_offset = limited ? 16 : 0;
  auto fixed = [](double v) { return static_cast<std::int32_t>(std::lround(v * kOne)); };
  k.y = fixed(ys), k.r_v = fixed(rv), k.g_u = fixed(gu), k.g_v = fixed(gv), k.b_u = fixed(bu);
  if (c == kBT601Limited) {  // OpenCV's constants: bit-exact with cv::cvtColor
    k.y = 1220542, k.r_v = 1673527, k.g_u = -409993, k.g_v = -852492, k.b_u = 2116026;
  }
  k.fy = static_cast<float>(k.y / kOne), k.frv = static_cast<float>(k.r_v / kOne);
  k.fgu = static_cast<float>(k.g_u / kOne), k.fgv = static_cast<float>(k.g_v / kOne);
  k.fbu = static_cast<float>(k.b_u / kOne);
  return k;
}

int index_of(Colorimetry c) noexcept {
  const int m = c.matrix == YuvMatrix::BT709 ? 1 : c.matrix == YuvMatrix::BT2020 ? 2 : 0;
  return m * 2 + (c.range == ColorRange::Full ? 1 : 0);
}

const std::array<YuvToRgb, 6>& table() {
  static const std::array<YuvToRgb, 6> t = [] {
    std::array<YuvToRgb, 6> a{};
    for (YuvMatrix m : {YuvMatrix::BT601, YuvMatrix::BT709, YuvMatrix::BT2020}) {
      for (ColorRange r : {ColorRange::Limited, ColorRange::Full}) {
        a[static_cast<std::size_t>(index_of({m, r}))] = exact({m, r});
      }
    }
    return a;
  }();
  return t;
}

}  // namespace

const YuvToRgb& yuv_to_rgb(Colorimetry colorimetry) noexcept {
  return table()[static_cast<std::size_t>(index_of(resolve_colorimetry(colorimetry, 0, 0)))];
}

std::string_view colorimetry_detail(Colorimetry resolved, bool assumed) noexcept {
  static const std::array<std::string, 12> texts = [] {
    std::array<std::string, 12> a;
    for (YuvMatrix m : {YuvMatrix::BT601, YuvMatrix::BT709, YuvMatrix::BT2020}) {
      for (ColorRange r : {ColorRange::Limited, ColorRange::Full}) {
        const int i = index_of({m, r});
        const std::string name = "yuv " + to_string(Colorimetry{m, r});
        a[static_cast<std::size_t>(2 * i)] = name + " (from the frame)";
        a[static_cast<std::size_t>(2 * i + 1)] =
            name + " (assumed: the frame does not say; GStreamer's default for its size)";
      }
    }
    return a;
  }();
  return texts[static_cast<std::size_t>(2 * index_of(resolved) + (assumed ? 1 : 0))];
}

}  // namespace neat

// Internal (not installed): the SIMD YUV 4:2:0 -> packed RGB / BGR kernel
// behind convert_color() (kernels/color_simd.cpp), written once with Highway
// and dispatched at run time to the best instruction set of the CPU.
//
// The arithmetic is OpenCV's: 20-bit fixed-point coefficients from
// yuv_matrix.hpp, chroma replicated over each 2x2 block, luma below the
// range's black clamped, results rounded and saturated; with BT.601 limited
// the bytes equal cv::cvtColor's.
#pragma once

#include <cstdint>

#include "neat/kernels/internal/yuv_planes.hpp"
#include "neat/kernels/yuv_matrix.hpp"

namespace neat::detail {

struct YuvRowsJob : YuvPlanes {
  const YuvToRgb* coefficients = nullptr;
  bool bgr = false;  ///< B, G, R bytes instead of R, G, B
  std::uint8_t* dst = nullptr;
  std::int64_t dst_stride = 0;
};

/// Converts rows [row_begin, row_end). Thread-safe for disjoint rows.
void yuv420_to_rgb_rows(const YuvRowsJob& job, std::int64_t row_begin, std::int64_t row_end);

}  // namespace neat::detail

// Pixel-format conversion: NV12, NV21, I420, YV12 (any plane strides and
// offsets, planes in one storage or several, odd sizes) to RGB, BGR or GRAY8;
// RGB <-> BGR; RGBA/BGRA <-> RGB/BGR; interleaved -> GRAY8; GRAY8 -> RGB/BGR.
//
// YUV is BT.601 limited range, bit-exact with OpenCV's COLOR_YUV2RGB_*.
// OpenCV does the work when it can take the layout as it is (cvtColorTwoPlane
// takes padded NV12; cvtColor takes row-padded interleaved images and
// canonical I420); otherwise NeatTensor's own kernels run on the strided
// planes directly. Nothing is staged or packed first.
//
// Every call is an explicit `convert` (reason pixel_format) through the copy
// gate. Threading: independent calls may run concurrently.
#pragma once

#include <source_location>

#include "neat/contract/neat_tensor.hpp"
#include "neat/policy/conversion.hpp"

namespace neat {

/// A new interleaved HWC image (GRAY8: [H, W, 1]) in `to`. When `src` is
/// already in `to`, returns `src` itself (no copy, no event).
Result<NeatTensor> convert_color(const NeatTensor& src, PixelFormat to, ConvertOptions options = {},
                                 std::source_location where = std::source_location::current());

/// True when convert_color(src-format -> to) is supported.
bool color_conversion_supported(PixelFormat from, PixelFormat to) noexcept;

}  // namespace neat

// Pixel-format conversion: NV12, NV21, I420, YV12 (any plane strides and
// offsets, planes in one storage or several, odd sizes) to RGB, BGR or GRAY8;
// RGB <-> BGR; RGBA/BGRA <-> RGB/BGR; interleaved -> GRAY8; GRAY8 -> RGB/BGR.
//
// YUV -> RGB follows the frame's colour standard (ImageSpec::colorimetry:
// BT.601, BT.709 or BT.2020, limited or full range; see yuv_matrix.hpp for the
// formulas). A part the frame does not state is taken from the `assume`
// argument, else from GStreamer's default for the frame size (BT.709 above
// 576 rows, BT.601 otherwise, limited range), and the event says it was
// assumed. Chroma is upsampled by replication (each 2x2 block shares one
// U, V pair). Every standard and layout runs one SIMD kernel on the strided
// planes directly (Highway, dispatched at run time: kernels/color_simd.cpp),
// with OpenCV's fixed-point formula: BT.601 limited is bit-exact with
// OpenCV's COLOR_YUV2RGB_*, about 1.6x faster. Nothing is staged or packed
// first. YUV -> GRAY8 is the Y plane as stored; interleaved conversions run
// cv::cvtColor on zero-copy views.
//
// Every call is an explicit `convert` (reason pixel_format) through the copy
// gate. Threading: independent calls may run concurrently.
#pragma once

#include <source_location>

#include "neat/contract/neat_tensor.hpp"
#include "neat/kernels/kernel.hpp"

namespace neat {

/// A new interleaved HWC image (GRAY8: [H, W, 1]) in `to`. When `src` is
/// already in `to`, returns `src` itself (no copy, no event).
Result<NeatTensor> convert_color(const NeatTensor& src, PixelFormat to,
                                 ConversionOptions options = {},
                                 std::source_location where = std::source_location::current());

/// As above, with the colour standard to convert a YUV frame with: each known
/// part of `assume` overrides the frame's own.
Result<NeatTensor> convert_color(const NeatTensor& src, PixelFormat to, Colorimetry assume,
                                 ConversionOptions options = {},
                                 std::source_location where = std::source_location::current());

/// True when convert_color(src-format -> to) is supported.
bool color_conversion_supported(PixelFormat from, PixelFormat to) noexcept;

}  // namespace neat

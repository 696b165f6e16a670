// Image resizing: nearest, bilinear or area, for interleaved images (HWC, HW, CHW),
// planar frames (each plane to its new geometry) and dense [H, W] / [H, W, C]
// tensors of OpenCV's dtypes; and crop + resize in one call (the crop is a
// view, never copied). An explicit `convert` (reason resize) through the gate.
//
// Bilinear follows OpenCV's INTER_LINEAR (pixel centres aligned), nearest
// its INTER_NEAREST, area its INTER_AREA (the average of the source area each
// output pixel covers: the antialiased choice for large downscales; bilinear
// when enlarging); all run on OpenCV over zero-copy views of the mapped
// tensors, so padded rows and ROIs are read in place.
//
// Threading: independent calls may run concurrently (OpenCV's pool inside).
#pragma once

#include <source_location>

#include "neat/contract/neat_tensor.hpp"
#include "neat/kernels/kernel.hpp"

namespace neat {

enum class Interpolation : std::uint8_t {
  Nearest,   ///< the nearest source pixel (OpenCV's INTER_NEAREST)
  Bilinear,  ///< two taps per axis (INTER_LINEAR); aliases below 1/2 scale
  Area,      ///< the average of the covered source area (INTER_AREA); bilinear when enlarging
};

/// "nearest", "bilinear" or "area".
const char* to_string(Interpolation interpolation) noexcept;

/// A new image / tensor of width x height. Same size: returns src (no copy).
Result<NeatTensor> resize(const NeatTensor& src, std::int64_t width, std::int64_t height,
                          Interpolation interpolation = Interpolation::Bilinear,
                          ConversionOptions options = {},
                          std::source_location where = std::source_location::current());

/// Pixels [x, x+w) x [y, y+h) of `src`, resized to out_width x out_height.
/// The crop follows crop()'s rules (planar crops start on even coordinates).
Result<NeatTensor> crop_resize(const NeatTensor& src, std::int64_t x, std::int64_t y,
                               std::int64_t w, std::int64_t h, std::int64_t out_width,
                               std::int64_t out_height,
                               Interpolation interpolation = Interpolation::Bilinear,
                               ConversionOptions options = {},
                               std::source_location where = std::source_location::current());

}  // namespace neat

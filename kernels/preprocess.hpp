// The fused model-input path: a planar frame (NV12, NV21, I420, YV12; any
// strides, separate planes, odd sizes) to a resized, normalized CHW tensor
// (F32, F16 or BF16) in one pass over the output, without building the RGB
// frame, the resized frame or the float frame that the unfused chain
// (convert_color + resize + convert_dtype + normalize) goes through.
//
// Accuracy against the unfused chain (tested, see docs/conversions.md):
// YUV -> RGB follows the frame's colour standard (or params.colorimetry), with
// the coefficients of yuv_matrix.hpp, like convert_color().
//
//  * Nearest: identical source pixels and the same integer formula:
//    equal up to float rounding of the normalization (< 1e-5 after /255).
//  * Bilinear: samples Y, U and V at the source position (OpenCV's
//    INTER_LINEAR mapping; chroma on the full-resolution grid) and converts
//    once in float, where the chain converts each source pixel to 8-bit RGB
//    and then interpolates. On camera-like frames the difference is at most
//    a few 8-bit levels (mean below half a level); it is larger only where
//    neighbouring source pixels are out of the RGB gamut (the chain clips
//    each before interpolating).
//  * Area: the average of the source area each output pixel covers (OpenCV's
//    INTER_AREA; bilinear when enlarging), Y, U and V alike: the antialiased
//    choice for large downscales.
//
// Every interpolation runs a SIMD engine written once with Highway and
// dispatched at run time (preprocess_simd_target() says which instruction
// set); at 1080p -> 640x640 it is 2.3-3x the fastest OpenCV or libyuv
// recipe on one thread, by host (docs/benchmarks.md has every detector
// input, with and without AVX-512). No allocation once warm.
//
// An explicit `convert` (reason normalize, operation "preprocess") through
// the gate. Threading: rows are split over ConversionOptions::threads.
#pragma once

#include <array>
#include <source_location>

#include "neat/contract/neat_tensor.hpp"
#include "neat/kernels/kernel.hpp"
#include "neat/kernels/resize.hpp"

namespace neat {

/// How the frame fills the model's width x height.
enum class ResizeMode : std::uint8_t {
  Stretch,    ///< scale each axis to fill (the aspect ratio changes)
  Letterbox,  ///< keep the aspect ratio, centre, pad the rest with pad_value
};

/// How the preprocess writes the tensor: through the caches (plain stores,
/// as OpenCV and libyuv do) or around them (streaming stores, which skip
/// reading each destination line first). Which wins depends on the core and
/// on what runs between calls; Auto follows the host's measured rule, and
/// for the fused nearest rows, whose time is mostly stores, times both in
/// a geometry's first calls and keeps the faster (docs/conversions.md,
/// "Which stores bypass the caches").
enum class StoreMode : std::uint8_t {
  Auto,      ///< the host's rule (CPU, cache sizes, tensor size); nearest's measured
  Cached,    ///< plain stores everywhere (a consumer reads the tensor at once)
  Streamed,  ///< streaming stores for every whole aligned vector, letterbox bars too
};

/// "auto", "cached" or "streamed".
const char* to_string(StoreMode mode) noexcept;

/// Where a letterboxed frame lands in the output: the scaled content's size
/// and its top-left corner (the padding on the left and on top).
struct LetterboxBox {
  std::int64_t width = 0;
  std::int64_t height = 0;
  std::int64_t x = 0;
  std::int64_t y = 0;
};
/// The letterbox of a src_width x src_height frame in out_width x
/// out_height: scale = min(out_w / src_w, out_h / src_h), content rounded to
/// whole pixels (at least 1), centred (an odd padding puts the extra pixel
/// on the right / bottom).
LetterboxBox letterbox_box(std::int64_t src_width, std::int64_t src_height, std::int64_t out_width,
                           std::int64_t out_height) noexcept;

struct PreprocessParams {
  std::int64_t width = 640;
  std::int64_t height = 640;
  Interpolation interpolation = Interpolation::Bilinear;
  PixelFormat channel_order = PixelFormat::RGB;  ///< RGB or BGR: the order of the 3 output planes
  float scale = 1.0f / 255.0f;
  std::array<float, 3> mean{0.f, 0.f, 0.f};  ///< per output channel, after scale
  std::array<float, 3> std{1.f, 1.f, 1.f};
  DType out_dtype = DType::F32;  ///< F32, F16 or BF16
  bool batch_dim = false;        ///< [1, 3, H, W] instead of [3, H, W]
  /// The colour standard to decode the frame with: each known part overrides
  /// the frame's own; what neither states is GStreamer's default for the frame
  /// size (and the event says it was assumed). See convert_color().
  Colorimetry colorimetry{};
  /// Stretch (default) or Letterbox. The output's meta().geometry maps its
  /// pixels back to the frame's either way (yolo decodes boxes with it).
  ResizeMode resize_mode = ResizeMode::Stretch;
  /// Letterbox padding, as a pixel level 0..255 before scale / mean / std
  /// (114: the grey Ultralytics' detectors are trained with).
  float pad_value = 114.0f;
  /// Through the caches or around them (the speed only: the values are the
  /// same either way). Auto suits most hosts; see StoreMode.
  StoreMode stores = StoreMode::Auto;
};

/// The instruction set the preprocess engine runs with on this CPU, chosen at
/// run time (e.g. "AVX3_DL", "AVX2", "SSE4"; "EMU128" when none applies).
const char* preprocess_simd_target() noexcept;

/// The model input for `frame`.
Result<NeatTensor> preprocess(const NeatTensor& frame, const PreprocessParams& params,
                              ConversionOptions options = {},
                              std::source_location where = std::source_location::current());

}  // namespace neat

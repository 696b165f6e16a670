// The built-in stages over the conversion kernels: pixel-format convert,
// resize, crop (a view), normalize, cast, layout, pack, transfer, the fused
// preprocess, and inspect (a passthrough that can look at every frame). The
// graph plans an edge's implicit conversions as these same stages (convert,
// cast, layout, pack, transfer), run with StageContext::implicit set. Each declares what it
// accepts and what it produces, so build() can check a graph before a frame
// flows; each writes its outputs into its own pooled allocator.
//
// Ownership: the factories return stages for GraphBuilder::add_stage().
// Threading: a stage instance runs on one thread at a time.
#pragma once

#include <array>
#include <functional>
#include <memory>

#include "neat/kernels/normalize.hpp"
#include "neat/kernels/preprocess.hpp"
#include "neat/kernels/resize.hpp"
#include "neat/stages/stage.hpp"

namespace neat {

/// convert_color() to `to` (NV12/NV21/I420/YV12 -> RGB/BGR/GRAY8, RGB <-> BGR, ...).
/// `assume`: the colour standard to decode YUV frames with; each known part
/// overrides the frame's own (see convert_color()).
std::unique_ptr<Stage> convert_stage(PixelFormat to, Colorimetry assume = {});
/// resize() of images (interleaved, CHW or planar) to width x height.
std::unique_ptr<Stage> resize_stage(std::int64_t width, std::int64_t height,
                                    Interpolation interpolation = Interpolation::Bilinear);
/// A crop view (no copy): pixels [x, x+width) x [y, y+height). Planar
/// frames need even x and y.
std::unique_ptr<Stage> crop_stage(std::int64_t x, std::int64_t y, std::int64_t width,
                                  std::int64_t height);
/// normalize(): (x * scale - mean) / std into F32/F16/BF16, CHW or HWC. In place
/// when it holds the frame alone and the dtype and layout stay.
std::unique_ptr<Stage> normalize_stage(NormalizeParams params);
/// convert_dtype() to `to`.
std::unique_ptr<Stage> cast_stage(DType to);
/// to_chw() (Layout::CHW) or to_hwc() (Layout::HWC).
std::unique_ptr<Stage> layout_stage(Layout to);
/// preprocess(): NV12/NV21/I420/YV12 -> resized, normalized planar RGB/BGR in one pass.
std::unique_ptr<Stage> preprocess_stage(PreprocessParams params);
/// contiguous(): packs strided frames; contiguous ones pass through untouched.
std::unique_ptr<Stage> pack_stage();
/// to_cpu_if_needed(): frames on another device are transferred to `to` (the
/// CPU; other targets are refused at build()); CPU frames pass through.
std::unique_ptr<Stage> transfer_stage(Device to = kCpu);
/// Hands every frame on unchanged; calls `look` (if any) with a borrowed view first.
std::unique_ptr<Stage> inspect_stage(std::function<void(const NeatTensorRef&)> look = {});

}  // namespace neat

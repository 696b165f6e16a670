// Layout conversion: HWC <-> CHW, with or without a batch dimension, for
// images and dense tensors of any dtype, from any strides into a new packed
// tensor. An explicit `convert` (reason layout) through the copy gate.
//
// What counts as HWC / CHW: an image's spec says it; a dense rank-3 tensor
// is taken as [H, W, C] (to_chw) or [C, H, W] (to_hwc), a rank-4 one as
// [N, H, W, C] / [N, C, H, W].
//
// Threading: independent calls may run concurrently.
#pragma once

#include <source_location>

#include "neat/contract/neat_tensor.hpp"
#include "neat/kernels/kernel.hpp"

namespace neat {

/// [H, W, C] -> [C, H, W] (and [N, H, W, C] -> [N, C, H, W]). An image keeps
/// its format with layout CHW. A tensor already CHW is returned as is.
Result<NeatTensor> to_chw(const NeatTensor& src, ConversionOptions options = {},
                          std::source_location where = std::source_location::current());
/// [C, H, W] -> [H, W, C] (and [N, C, H, W] -> [N, H, W, C]).
Result<NeatTensor> to_hwc(const NeatTensor& src, ConversionOptions options = {},
                          std::source_location where = std::source_location::current());

}  // namespace neat

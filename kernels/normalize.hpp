// Normalization for model inputs: y = (x * scale - mean[c]) / std[c] per
// channel, into F32, F16 or BF16, laid out HWC or CHW, from U8, U16, F16,
// BF16 or F32 input with any strides.
//
// Donation: normalize() takes its input by value. When the output has the
// input's dtype and layout and the caller gave the buffer away (held alone),
// it normalizes in place: no allocation, no copy, no event. Otherwise it
// writes a new tensor: an explicit `convert` (reason normalize) through the
// gate. Donation::MustDonate that cannot be honoured is an error under
// Strict and a loud event otherwise; AlwaysCopy never writes in place.
//
// Arithmetic: y = x * (scale / std[c]) + (-mean[c] / std[c]) in float, then
// rounded to the output dtype (F16/BF16: nearest even).
//
// Threading: independent calls may run concurrently.
#pragma once

#include <array>
#include <source_location>

#include "neat/contract/neat_tensor.hpp"
#include "neat/kernels/kernel.hpp"

namespace neat {

struct NormalizeParams {
  float scale = 1.0f;
  std::array<float, 4> mean{0.f, 0.f, 0.f, 0.f};
  std::array<float, 4> std{1.f, 1.f, 1.f, 1.f};
  DType out_dtype = DType::F32;     ///< F32, F16 or BF16
  Layout out_layout = Layout::CHW;  ///< CHW or HWC
  /// How to read a dense rank-3 input: HWC (default) or CHW. Images use their spec.
  Layout in_layout = Layout::HWC;
  Donation donation = Donation::ReuseIfUnique;
};

/// The normalized tensor ([C, H, W] or [H, W, C]; rank-2 input gives C = 1).
Result<NeatTensor> normalize(NeatTensor src, const NormalizeParams& params,
                             ConversionOptions options = {},
                             std::source_location where = std::source_location::current());

}  // namespace neat

// The entry point for implicit conversions: what a consumer (a stage, a sink,
// an export) calls when it needs something of a tensor the producer did not
// give. When the tensor already satisfies the need, it is passed through
// untouched: no copy, no event, a few flag tests. Otherwise the conversion
// goes through the copy gate as implicit, so the policy rules it (refused
// under Strict with an error naming the consumer and the fix).
//
// Threading: as NeatTensor.
#pragma once

#include <source_location>
#include <string_view>

#include "neat/contract/neat_tensor.hpp"

namespace neat {

/// True when `t` is dense-or-planar contiguous and not broadcast: the fast
/// check consumers run per frame.
inline bool satisfies_contiguous(const NeatTensor& t) noexcept {
  return t.is_contiguous() && !t.is_broadcast();
}

/// `t` itself when contiguous; else an implicit pack ruled by the policy
/// (options.implicit is set; options.requested_by names the consumer, e.g.
/// "stage 'detector' input").
Result<NeatTensor> accept_contiguous(NeatTensor t, ConversionOptions options = {},
                                     std::source_location where = std::source_location::current());

}  // namespace neat

#include "neat/policy/implicit.hpp"

namespace neat {

Result<NeatTensor> accept_contiguous(NeatTensor t, ConversionOptions options,
                                     std::source_location where) {
  if (!t.defined()) return failed_precondition("accept_contiguous: the tensor is undefined");
  if (satisfies_contiguous(t)) return t;
  options.implicit = true;
  if (options.requested_by.empty()) options.requested_by = "accept_contiguous";
  if (options.fix.empty()) {
    options.fix =
        "call contiguous() on the tensor before handing it over (an explicit, recorded pack), "
        "or give the consumer a contiguous tensor";
  }
  return t.contiguous(options, where);
}

}  // namespace neat

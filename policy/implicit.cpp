#include "neat/policy/implicit.hpp"

namespace neat {

Result<NeatTensor> accept_contiguous(NeatTensor t, ImplicitOptions options,
                                     std::source_location where) {
  if (!t.defined()) return failed_precondition("accept_contiguous: the tensor is undefined");
  if (satisfies_contiguous(t)) return t;
  CopyOptions copy;
  copy.policy = options.policy;
  copy.allocator = options.allocator;
  copy.implicit = true;
  copy.requested_by =
      options.consumer.empty() ? std::string_view("accept_contiguous") : options.consumer;
  copy.fix =
      "call contiguous() on the tensor before handing it over (an explicit, recorded pack), "
      "or give the consumer a contiguous tensor";
  return t.contiguous(copy, where);
}

}  // namespace neat

// PolicyGate: the implementation of the contract's copy gate. It admits every
// explicit conversion unless a copy budget or steady-state rule with a Fail
// action forbids it (rules.hpp), rules implicit ones by the effective policy
// (refusing them under Strict with an error that names the kind, the place,
// the bytes and the fix), and records what ran: counters always; an event to
// the sinks for explicit conversions, for implicit ones under AllowWithTrace,
// and for refused must-donate requests (loud) under any policy.
//
// Threading: thread-safe. The unlabeled counters are lock-free; record() takes
// the labeled metrics' mutex once per conversion (and the rules' lock when
// budgets or rules are registered), never on a path where nothing converts.
// record() allocates nothing unless a sink does or a label set is new.
#pragma once

#include "neat/contract/copy_gate.hpp"

namespace neat {

class PolicyGate final : public CopyGate {
 public:
  Result<ConversionPolicy> admit(const CopyRequest& request) override;
  void record(const CopyRequest& request, ConversionPolicy policy,
              const CopyOutcome& outcome) noexcept override;
};

/// The process's PolicyGate (what default_copy_gate() returns).
PolicyGate& policy_gate() noexcept;

}  // namespace neat

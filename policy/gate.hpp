// PolicyGate: the implementation of the contract's copy gate. It admits every
// explicit conversion, rules implicit ones by the effective policy (refusing
// them under Strict with an error that names the kind, the place, the bytes
// and the fix), and records what ran: counters always; an event to the sinks
// for explicit conversions, for implicit ones under AllowWithTrace, and for
// refused must-donate requests (loud) under any policy.
//
// Threading: thread-safe; admit() and record() take no lock, and record()
// allocates nothing unless a sink does.
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

// Which ConversionPolicy rules an implicit conversion. From strongest to
// weakest: the per-call option, a ScopedPolicy on the calling thread, the
// graph / stage / edge policy in the thread's ConversionContext, and the
// process default. The process default is Strict unless set with
// set_process_policy(); NEAT_POLICY=strict|trace|silent in the environment
// overrides it, so operators can change it without a rebuild.
//
// Threading: process functions are thread-safe; ScopedPolicy is per thread.
#pragma once

#include <optional>
#include <string_view>

#include "neat/contract/conversion.hpp"
#include "neat/contract/error.hpp"

namespace neat {

/// The process default in force (NEAT_POLICY if set and valid, else the value
/// of set_process_policy(), else Strict).
ConversionPolicy process_policy() noexcept;
/// Sets the process default (NEAT_POLICY, when set, still wins).
void set_process_policy(ConversionPolicy policy) noexcept;

/// Parses a NEAT_POLICY value: nullopt for null/empty, an InvalidArgument
/// error naming the value and the accepted spellings otherwise.
Result<std::optional<ConversionPolicy>> parse_policy_env(const char* value);
/// The NEAT_POLICY of the environment, read now.
Result<std::optional<ConversionPolicy>> policy_from_environment();

/// Overrides the policy on the calling thread while it lives. Nests.
class ScopedPolicy {
 public:
  explicit ScopedPolicy(ConversionPolicy policy) noexcept;
  ~ScopedPolicy();
  ScopedPolicy(const ScopedPolicy&) = delete;
  ScopedPolicy& operator=(const ScopedPolicy&) = delete;

 private:
  std::optional<ConversionPolicy> previous_;
};

/// The calling thread's ScopedPolicy, if any.
std::optional<ConversionPolicy> scoped_policy() noexcept;

/// The policy that rules a conversion with the given per-call override.
ConversionPolicy effective_policy(std::optional<ConversionPolicy> per_call = std::nullopt) noexcept;

}  // namespace neat

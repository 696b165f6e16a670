#include "neat/policy/policy.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "neat/telemetry/context.hpp"

namespace neat {

namespace {

std::atomic<ConversionPolicy> g_process{ConversionPolicy::Strict};
thread_local std::optional<ConversionPolicy> t_scoped;

// NEAT_POLICY, read once. An invalid value is reported once on stderr and
// ignored (Strict, the safe default, stays in force).
std::optional<ConversionPolicy> env_policy() noexcept {
  static const std::optional<ConversionPolicy> value = []() -> std::optional<ConversionPolicy> {
    auto r = policy_from_environment();
    if (!r.ok()) {
      std::fprintf(stderr, "neat: %s; keeping the process default\n", r.error().message().c_str());
      return std::nullopt;
    }
    return *r;
  }();
  return value;
}

}  // namespace

Result<std::optional<ConversionPolicy>> parse_policy_env(const char* value) {
  if (value == nullptr || *value == '\0') return std::optional<ConversionPolicy>();
  if (auto p = parse_conversion_policy(value)) return std::optional<ConversionPolicy>(*p);
  return invalid_argument(std::string("NEAT_POLICY='") + value +
                          "' is not a policy; use strict, trace or silent");
}

Result<std::optional<ConversionPolicy>> policy_from_environment() {
  return parse_policy_env(std::getenv("NEAT_POLICY"));
}

ConversionPolicy process_policy() noexcept {
  if (auto e = env_policy()) return *e;
  return g_process.load(std::memory_order_relaxed);
}

void set_process_policy(ConversionPolicy policy) noexcept {
  g_process.store(policy, std::memory_order_relaxed);
}

ScopedPolicy::ScopedPolicy(ConversionPolicy policy) noexcept : previous_(t_scoped) {
  t_scoped = policy;
}

ScopedPolicy::~ScopedPolicy() {
  t_scoped = previous_;
}

std::optional<ConversionPolicy> scoped_policy() noexcept {
  return t_scoped;
}

ConversionPolicy effective_policy(std::optional<ConversionPolicy> per_call) noexcept {
  if (per_call) return *per_call;
  if (t_scoped) return *t_scoped;
  if (const auto& c = current_context(); c.policy) return *c.policy;
  return process_policy();
}

}  // namespace neat

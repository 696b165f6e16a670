#include "neat/policy/rules.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>

#include "neat/telemetry/context.hpp"

namespace neat {

namespace {

constexpr std::size_t kKeptBreaches = 64;

struct Rule {
  bool is_budget = true;
  CopyBudget budget;
  SteadyStateRule steady;
  // Per-frame tally (budgets).
  std::int64_t frame = -1, bytes = 0, count = 0;
  std::uint64_t breaches = 0;
  bool warned = false;
  std::deque<RuleBreach> kept;

  std::string name() const {
    const std::string& g = is_budget ? budget.graph : steady.graph;
    const std::string& e = is_budget ? budget.edge : steady.edge;
    std::string scope = e.empty() ? (g.empty() ? std::string("the process") : "graph '" + g + "'")
                                  : "edge '" + e + "'" + (g.empty() ? "" : " of graph '" + g + "'");
    if (!is_budget) {
      std::string kinds;
      for (ConversionKind k : steady.kinds)
        kinds += (kinds.empty() ? "" : "/") + std::string(to_string(k));
      return "steady state of " + scope + ": no " + kinds + " from frame " +
             std::to_string(steady.after_frames);
    }
    std::string limit;
    if (budget.max_bytes_per_frame >= 0)
      limit = std::to_string(budget.max_bytes_per_frame) + " bytes";
    if (budget.max_count_per_frame >= 0) {
      limit += (limit.empty() ? "" : " and ") + std::to_string(budget.max_count_per_frame) +
               " conversions";
    }
    return "copy budget of " + scope + ": " + limit + " per frame";
  }
  bool applies(const ConversionContext& c) const {
    const std::string& g = is_budget ? budget.graph : steady.graph;
    const std::string& e = is_budget ? budget.edge : steady.edge;
    return c.frame >= 0 && (g.empty() || g == c.graph) && (e.empty() || e == c.edge);
  }
  RuleAction action(ConversionPolicy policy) const {
    const RuleAction a = is_budget ? budget.action : steady.action;
    if (a != RuleAction::ByPolicy) return a;
    switch (policy) {
      case ConversionPolicy::Strict:
        return RuleAction::Fail;
      case ConversionPolicy::AllowWithTrace:
        return RuleAction::Warn;
      case ConversionPolicy::AllowSilent:
        return RuleAction::Count;
    }
    return RuleAction::Fail;
  }
  // Would `bytes` more breach this rule at the context's frame?
  bool breached_by(const CopyRequest& r, const ConversionContext& c, std::int64_t add_bytes) const {
    if (!is_budget) {
      return c.frame >= steady.after_frames &&
             std::find(steady.kinds.begin(), steady.kinds.end(), r.kind) != steady.kinds.end();
    }
    const std::int64_t b = (frame == c.frame ? bytes : 0) + add_bytes;
    const std::int64_t n = (frame == c.frame ? count : 0) + 1;
    return (budget.max_bytes_per_frame >= 0 && b > budget.max_bytes_per_frame) ||
           (budget.max_count_per_frame >= 0 && n > budget.max_count_per_frame);
  }
};

struct Registry {
  std::mutex mutex;
  std::map<std::uint64_t, Rule> rules;
  std::atomic<std::size_t> size{0};
  std::uint64_t next = 1;
};

Registry& registry() {
  static Registry r;
  return r;
}

std::string describe(const CopyRequest& r, std::int64_t bytes) {
  std::string s(to_string(r.kind));
  s += " (" + std::string(to_string(r.reason)) + ") " + std::to_string(bytes) + " B";
  if (!r.operation.empty()) s += " in " + std::string(r.operation);
  s += " at " + std::string(r.where.file_name()) + ":" + std::to_string(r.where.line());
  return s;
}

Result<RuleRegistration> add(Rule rule) {
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  const std::uint64_t id = reg.next++;
  reg.rules.emplace(id, std::move(rule));
  reg.size.store(reg.rules.size(), std::memory_order_release);
  return RuleRegistration(id);
}

}  // namespace

RuleRegistration& RuleRegistration::operator=(RuleRegistration&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = o.id_;
    o.id_ = 0;
  }
  return *this;
}

void RuleRegistration::reset() noexcept {
  if (id_ == 0) return;
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  reg.rules.erase(id_);
  reg.size.store(reg.rules.size(), std::memory_order_release);
  id_ = 0;
}

std::vector<RuleBreach> RuleRegistration::breaches() const {
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  auto it = reg.rules.find(id_);
  if (it == reg.rules.end()) return {};
  return {it->second.kept.begin(), it->second.kept.end()};
}

std::uint64_t RuleRegistration::breach_count() const {
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  auto it = reg.rules.find(id_);
  return it == reg.rules.end() ? 0 : it->second.breaches;
}

Status RuleRegistration::check() const {
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  auto it = reg.rules.find(id_);
  if (it == reg.rules.end()) return failed_precondition("check: the rule is not registered");
  const Rule& r = it->second;
  if (r.breaches == 0) return {};
  std::string msg = r.name() + ": " + std::to_string(r.breaches) + " breach(es)";
  for (const RuleBreach& b : r.kept) {
    msg += "; frame " + std::to_string(b.frame) + ": " + b.conversion + " (frame total " +
           std::to_string(b.bytes) + " B in " + std::to_string(b.count) + " conversions)";
    if (msg.size() > 2000) {
      msg += "; ...";
      break;
    }
  }
  return failed_precondition(std::move(msg));
}

Result<RuleRegistration> add_copy_budget(const CopyBudget& budget) {
  if (budget.max_bytes_per_frame < -1 || budget.max_count_per_frame < -1) {
    return invalid_argument("add_copy_budget: limits must be >= 0, or -1 for none (got " +
                            std::to_string(budget.max_bytes_per_frame) + " bytes, " +
                            std::to_string(budget.max_count_per_frame) + " conversions)");
  }
  if (budget.max_bytes_per_frame < 0 && budget.max_count_per_frame < 0) {
    return invalid_argument("add_copy_budget: set max_bytes_per_frame or max_count_per_frame");
  }
  if (!budget.edge.empty() && budget.graph.empty()) {
    return invalid_argument("add_copy_budget: edge '" + budget.edge + "' needs its graph's name");
  }
  Rule r;
  r.budget = budget;
  return add(std::move(r));
}

Result<RuleRegistration> add_steady_state_rule(const SteadyStateRule& rule) {
  if (rule.after_frames < 0) {
    return invalid_argument("add_steady_state_rule: after_frames " +
                            std::to_string(rule.after_frames) + " is negative");
  }
  if (rule.kinds.empty())
    return invalid_argument("add_steady_state_rule: no conversion kinds listed");
  Rule r;
  r.is_budget = false;
  r.steady = rule;
  return add(std::move(r));
}

namespace detail {

Status rules_admit(const CopyRequest& request, ConversionPolicy policy) {
  Registry& reg = registry();
  if (reg.size.load(std::memory_order_acquire) == 0) return {};
  const ConversionContext& c = current_context();
  std::lock_guard lock(reg.mutex);
  for (auto& [id, r] : reg.rules) {
    if (r.action(policy) != RuleAction::Fail || !r.applies(c) ||
        !r.breached_by(request, c, request.bytes))
      continue;
    r.breaches += 1;
    const std::int64_t b = (r.frame == c.frame ? r.bytes : 0) + request.bytes;
    const std::int64_t n = (r.frame == c.frame ? r.count : 0) + 1;
    if (r.kept.size() == kKeptBreaches) r.kept.pop_front();
    r.kept.push_back(RuleBreach{r.name(), c.frame, b, n, describe(request, request.bytes)});
    return failed_precondition(r.name() + " refuses " + describe(request, request.bytes) +
                               " at frame " + std::to_string(c.frame) + " (the frame would reach " +
                               std::to_string(b) + " B in " + std::to_string(n) + " conversions)");
  }
  return {};
}

bool rules_record(const CopyRequest& request, std::int64_t bytes, ConversionPolicy policy) {
  Registry& reg = registry();
  if (reg.size.load(std::memory_order_acquire) == 0) return false;
  const ConversionContext& c = current_context();
  bool loud = false;
  std::lock_guard lock(reg.mutex);
  for (auto& [id, r] : reg.rules) {
    if (!r.applies(c)) continue;
    const bool breach = r.breached_by(request, c, bytes);
    if (r.frame != c.frame) {
      r.frame = c.frame;
      r.bytes = 0;
      r.count = 0;
    }
    r.bytes += bytes;
    r.count += 1;
    const RuleAction action = r.action(policy);
    if (!breach || action == RuleAction::Fail) continue;
    r.breaches += 1;
    if (r.kept.size() == kKeptBreaches) r.kept.pop_front();
    r.kept.push_back(RuleBreach{r.name(), c.frame, r.bytes, r.count, describe(request, bytes)});
    if (action == RuleAction::Warn) {
      loud = true;
      if (!r.warned) {
        r.warned = true;
        std::fprintf(stderr, "neat: warning: %s breached at frame %lld by %s (reported once)\n",
                     r.name().c_str(), static_cast<long long>(c.frame),
                     describe(request, bytes).c_str());
      }
    }
  }
  return loud;
}

}  // namespace detail

}  // namespace neat

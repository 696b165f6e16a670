// Copy budgets and steady-state canaries: limits the copy gate enforces on
// top of the policy, for production guard rails and for tests.
//
//  * CopyBudget: the most bytes and/or conversions a scope (the process, a
//    graph, or one edge of a graph) may copy per frame. Frames come from the
//    thread's ConversionContext; conversions with no frame number are not
//    budgeted.
//  * SteadyStateRule: "no conversion of these kinds after N frames" in a
//    scope: the canary for a pipeline that should have stopped allocating.
//
// Actions: Fail refuses the conversion before it copies anything (an error
// naming the scope, the limit and the frame); Warn lets it run, marks its
// event loud and warns once on stderr; Count only counts. ByPolicy (the
// default) takes the action from the policy in force for that conversion:
// Strict fails, AllowWithTrace warns, AllowSilent counts. Every breach is
// counted and kept (the most recent 64) for check() and breaches().
//
// Threading: thread-safe. Rules cost nothing while none is registered; with
// rules registered, the gate takes one lock per conversion.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "neat/contract/copy_gate.hpp"
#include "neat/contract/error.hpp"

namespace neat {

enum class RuleAction : std::uint8_t {
  ByPolicy,  ///< the policy in force decides: Strict -> Fail, AllowWithTrace -> Warn, AllowSilent
             ///< -> Count
  Fail,
  Warn,
  Count,
};

struct CopyBudget {
  std::string graph;  ///< empty: any graph (with `edge` empty: the whole process)
  std::string edge;   ///< empty: the whole graph
  std::int64_t max_bytes_per_frame = -1;  ///< -1: no byte limit
  std::int64_t max_count_per_frame = -1;  ///< -1: no count limit
  RuleAction action = RuleAction::ByPolicy;
};

struct SteadyStateRule {
  std::int64_t after_frames = 0;  ///< frames numbered from 0; frame >= after_frames is steady
  std::vector<ConversionKind> kinds{ConversionKind::Pack, ConversionKind::Convert,
                                    ConversionKind::Transfer};
  std::string graph;  ///< empty: any
  std::string edge;   ///< empty: any
  RuleAction action = RuleAction::ByPolicy;
};

/// A recorded breach of a budget or canary.
struct RuleBreach {
  std::string rule;  ///< "budget edge 'a->b' of graph 'g': 1000 bytes per frame", ...
  std::int64_t frame = -1;
  std::int64_t bytes = 0;  ///< the frame's total with this conversion
  std::int64_t count = 0;
  std::string conversion;  ///< "pack (stride_mismatch) 6220800 B in clone at file:line"
};

/// Keeps a rule registered while alive.
class RuleRegistration {
 public:
  RuleRegistration() = default;
  explicit RuleRegistration(std::uint64_t id) noexcept : id_(id) {}
  RuleRegistration(RuleRegistration&& o) noexcept : id_(o.id_) { o.id_ = 0; }
  RuleRegistration& operator=(RuleRegistration&& o) noexcept;
  RuleRegistration(const RuleRegistration&) = delete;
  RuleRegistration& operator=(const RuleRegistration&) = delete;
  ~RuleRegistration() { reset(); }
  void reset() noexcept;
  std::uint64_t id() const noexcept { return id_; }

  /// Ok while this rule has no breach; else an error listing them.
  Status check() const;
  std::vector<RuleBreach> breaches() const;
  std::uint64_t breach_count() const;

 private:
  std::uint64_t id_ = 0;
};

/// Registers a budget. InvalidArgument when it limits nothing or has a
/// negative limit other than -1, or an edge without a graph.
Result<RuleRegistration> add_copy_budget(const CopyBudget& budget);
/// Registers a steady-state canary. InvalidArgument for a negative frame count
/// or an empty kind list.
Result<RuleRegistration> add_steady_state_rule(const SteadyStateRule& rule);

namespace detail {
/// Called by the copy gate: refuses a conversion a Fail rule forbids
/// (`policy` is the policy in force, for ByPolicy rules).
Status rules_admit(const CopyRequest& request, ConversionPolicy policy);
/// Called by the copy gate after a conversion ran; returns true when it
/// breached a Warn rule (its event is then loud).
bool rules_record(const CopyRequest& request, std::int64_t bytes, ConversionPolicy policy);
}  // namespace detail

}  // namespace neat

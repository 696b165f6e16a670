// Copy budgets and steady-state canaries, each action.
#include "neat/policy/rules.hpp"

#include <gtest/gtest.h>

#include "neat/neat.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

class Rules : public testing::TelemetryTest {};

Status copy_at(const NeatTensor& t, std::int64_t frame, const char* edge = "a->b") {
  ScopedContext ctx({.graph = "g", .stage = "s", .edge = edge, .frame = frame});
  auto c = t.clone();
  if (!c.ok()) return std::move(c).error();
  return {};
}

TEST_F(Rules, BudgetFailRefusesBeforeCopyingAndResetsEachFrame) {
  auto t = NeatTensor::allocate(DType::U8, {100});
  auto budget = add_copy_budget(
      {.graph = "g", .edge = "a->b", .max_bytes_per_frame = 250, .action = RuleAction::Fail});
  ASSERT_TRUE(budget.ok());
  EXPECT_TRUE(copy_at(*t, 1).ok());
  EXPECT_TRUE(copy_at(*t, 1).ok());
  const Status third = copy_at(*t, 1);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code(), ErrorCode::FailedPrecondition);
  EXPECT_NE(third.error().message().find(
                "copy budget of edge 'a->b' of graph 'g': 250 bytes per frame refuses pack"),
            std::string::npos)
      << third.error().message();
  EXPECT_NE(third.error().message().find("frame would reach 300 B in 3 conversions"),
            std::string::npos);
  EXPECT_EQ(delta().total().count, 2u) << "the refused copy did not run";
  EXPECT_EQ(delta().total().refused, 1u);
  EXPECT_TRUE(copy_at(*t, 2).ok()) << "a new frame starts a new tally";
  EXPECT_TRUE(copy_at(*t, 1, "other").ok()) << "another edge is not budgeted";
  EXPECT_EQ(budget->breach_count(), 1u);
  NEAT_EXPECT_ERROR(budget->check(), ErrorCode::FailedPrecondition, "1 breach(es); frame 1");
}

TEST_F(Rules, BudgetWarnRunsTheCopyAndMakesItsEventLoud) {
  auto t = NeatTensor::allocate(DType::U8, {100});
  auto budget =
      add_copy_budget({.graph = "g", .max_count_per_frame = 1, .action = RuleAction::Warn});
  EXPECT_TRUE(copy_at(*t, 7).ok());
  EXPECT_TRUE(copy_at(*t, 7).ok());
  auto ev = events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_FALSE(ev[0].event.loud);
  EXPECT_TRUE(ev[1].event.loud);
  ASSERT_EQ(budget->breaches().size(), 1u);
  EXPECT_EQ(budget->breaches()[0].frame, 7);
  EXPECT_EQ(budget->breaches()[0].count, 2);
}

TEST_F(Rules, BudgetCountOnlyCounts) {
  auto t = NeatTensor::allocate(DType::U8, {100});
  auto budget = add_copy_budget({.max_bytes_per_frame = 0, .action = RuleAction::Count});
  EXPECT_TRUE(copy_at(*t, 1).ok());
  EXPECT_FALSE(events()[0].event.loud);
  EXPECT_EQ(budget->breach_count(), 1u);
  budget->reset();
  EXPECT_TRUE(copy_at(*t, 1).ok());
}

TEST_F(Rules, SteadyStateCanaryAsTestAssertionAndProductionGuard) {
  auto t = NeatTensor::allocate(DType::U8, {10});
  auto canary = add_steady_state_rule(
      {.after_frames = 3, .kinds = {ConversionKind::Pack}, .action = RuleAction::Count});
  ASSERT_TRUE(canary.ok());
  for (int f = 0; f < 3; ++f)
    EXPECT_TRUE(copy_at(*t, f).ok()) << "warm-up frames may copy";
  EXPECT_TRUE(canary->check().ok());
  EXPECT_TRUE(copy_at(*t, 3).ok());
  NEAT_EXPECT_ERROR(canary->check(), ErrorCode::FailedPrecondition,
                    "steady state of the process: no pack from frame 3: 1 breach(es); frame 3: "
                    "pack (user_request) 10 B in clone");
  auto guard =
      add_steady_state_rule({.after_frames = 10, .graph = "g", .action = RuleAction::Fail});
  EXPECT_TRUE(copy_at(*t, 9).ok());
  NEAT_EXPECT_ERROR(copy_at(*t, 10), ErrorCode::FailedPrecondition, "steady state of graph 'g'");
}

TEST_F(Rules, ByPolicyTakesTheActionFromThePolicyInForce) {
  auto t = NeatTensor::allocate(DType::U8, {100});
  auto budget = add_copy_budget({.graph = "g", .max_count_per_frame = 0});  // ByPolicy: the default
  {
    ScopedPolicy strict(ConversionPolicy::Strict);
    NEAT_EXPECT_ERROR(copy_at(*t, 1), ErrorCode::FailedPrecondition, "copy budget of graph 'g'");
  }
  {
    ScopedPolicy trace(ConversionPolicy::AllowWithTrace);
    EXPECT_TRUE(copy_at(*t, 2).ok());
    ASSERT_FALSE(events().empty());
    EXPECT_TRUE(events().back().event.loud) << "warn plus event";
  }
  {
    ScopedPolicy silent(ConversionPolicy::AllowSilent);
    const auto n = events().size();
    EXPECT_TRUE(copy_at(*t, 3).ok());
    EXPECT_FALSE(events().back().event.loud) << "count only";
    EXPECT_EQ(events().size(), n + 1) << "the clone is explicit: it is still traced";
  }
  EXPECT_EQ(budget->breach_count(), 3u);
}

TEST(RulesBadInput, MalformedRulesAreRejected) {
  NEAT_EXPECT_ERROR(add_copy_budget({}), ErrorCode::InvalidArgument, "set max_bytes_per_frame");
  NEAT_EXPECT_ERROR(add_copy_budget({.max_bytes_per_frame = -5}), ErrorCode::InvalidArgument,
                    ">= 0, or -1");
  NEAT_EXPECT_ERROR(add_copy_budget({.edge = "x", .max_bytes_per_frame = 1}),
                    ErrorCode::InvalidArgument, "needs its graph's name");
  NEAT_EXPECT_ERROR(add_steady_state_rule({.after_frames = -1}), ErrorCode::InvalidArgument,
                    "negative");
  NEAT_EXPECT_ERROR(add_steady_state_rule({.kinds = {}}), ErrorCode::InvalidArgument,
                    "no conversion kinds");
  RuleRegistration none;
  NEAT_EXPECT_ERROR(none.check(), ErrorCode::FailedPrecondition, "not registered");
}

}  // namespace
}  // namespace neat

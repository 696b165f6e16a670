// Policy precedence, NEAT_POLICY, the gate's refusals and implicit conversions.
#include <gtest/gtest.h>

#include <cstdlib>

#include "neat/neat.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

class PolicyTest : public testing::TelemetryTest {};

TEST_F(PolicyTest, DefaultIsStrictAndPrecedenceIsCallScopeContextProcess) {
  if (std::getenv("NEAT_POLICY")) GTEST_SKIP() << "NEAT_POLICY is set in this environment";
  EXPECT_EQ(process_policy(), ConversionPolicy::Strict);
  EXPECT_EQ(effective_policy(), ConversionPolicy::Strict);
  set_process_policy(ConversionPolicy::AllowSilent);
  EXPECT_EQ(effective_policy(), ConversionPolicy::AllowSilent);
  {
    ScopedContext ctx({.stage = "s", .policy = ConversionPolicy::AllowWithTrace});
    EXPECT_EQ(effective_policy(), ConversionPolicy::AllowWithTrace);
    {
      ScopedPolicy scoped(ConversionPolicy::Strict);
      EXPECT_EQ(effective_policy(), ConversionPolicy::Strict);
      EXPECT_EQ(effective_policy(ConversionPolicy::AllowSilent), ConversionPolicy::AllowSilent);
    }
  }
  set_process_policy(ConversionPolicy::Strict);
}

TEST_F(PolicyTest, ScopedPolicyIsPerThread) {
  ScopedPolicy p(ConversionPolicy::AllowSilent);
  std::optional<ConversionPolicy> other;
  std::thread([&] { other = scoped_policy(); }).join();
  EXPECT_EQ(other, std::nullopt);
  EXPECT_EQ(scoped_policy(), ConversionPolicy::AllowSilent);
}

TEST(PolicyEnv, ParsesOperatorSpellingsAndRejectsOthers) {
  EXPECT_EQ(*parse_policy_env("strict"), ConversionPolicy::Strict);
  EXPECT_EQ(*parse_policy_env("trace"), ConversionPolicy::AllowWithTrace);
  EXPECT_EQ(*parse_policy_env("silent"), ConversionPolicy::AllowSilent);
  EXPECT_EQ(*parse_policy_env(nullptr), std::nullopt);
  EXPECT_EQ(*parse_policy_env(""), std::nullopt);
  NEAT_EXPECT_ERROR(parse_policy_env("loose"), ErrorCode::InvalidArgument,
                    "NEAT_POLICY='loose' is not a policy; use strict, trace or silent");
  ::setenv("NEAT_POLICY", "trace", 1);
  EXPECT_EQ(*policy_from_environment(), ConversionPolicy::AllowWithTrace);
  ::unsetenv("NEAT_POLICY");
}

TEST_F(PolicyTest, ImplicitPackRefusedUnderStrictNamesKindPlaceBytesAndFix) {
  auto t = NeatTensor::allocate(DType::U8, {4, 8});
  auto strided = t->transpose(0, 1);
  ScopedContext ctx({.graph = "cam", .stage = "detector", .edge = "resize->detector", .frame = 3});
  auto r = accept_contiguous(
      *strided, {.policy = ConversionPolicy::Strict, .requested_by = "stage 'detector' input"});
  ASSERT_FALSE(r.ok());
  const std::string& m = r.error().message();
  EXPECT_EQ(r.error().code(), ErrorCode::FailedPrecondition);
  for (const char* part :
       {"Strict policy refused an implicit pack (stride_mismatch)", "stage 'detector' input",
        "policy_test.cpp", "stage 'detector'", "edge 'resize->detector'", "frame 3",
        "would copy 32 bytes", "u8 [8, 4] cpu:0 heap (strided)", "Fix: call contiguous()",
        "NEAT_POLICY=trace"}) {
    EXPECT_NE(m.find(part), std::string::npos) << "missing '" << part << "' in: " << m;
  }
  EXPECT_EQ(delta().at(ConversionKind::Pack, ConversionReason::StrideMismatch, false).refused, 1u);
  EXPECT_TRUE(events().empty());
}

TEST_F(PolicyTest, ImplicitPackUnderTraceRunsAndRecordsAnEvent) {
  auto t = NeatTensor::allocate(DType::U8, {4, 8});
  ScopedPolicy trace(ConversionPolicy::AllowWithTrace);
  auto r = accept_contiguous(*t->transpose(0, 1), {.requested_by = "sink 'out'"});
  NEAT_ASSERT_OK(r);
  EXPECT_TRUE(r->is_contiguous());
  auto ev = events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_FALSE(ev[0].event.explicit_call);
  EXPECT_EQ(ev[0].event.policy, ConversionPolicy::AllowWithTrace);
  EXPECT_EQ(ev[0].operation, "sink 'out'");
  EXPECT_EQ(delta().at(ConversionKind::Pack, ConversionReason::StrideMismatch, false).count, 1u);
}

TEST_F(PolicyTest, ImplicitPackUnderSilentCountsButDoesNotTrace) {
  auto t = NeatTensor::allocate(DType::U8, {4, 8});
  auto r = accept_contiguous(*t->transpose(0, 1), {.policy = ConversionPolicy::AllowSilent});
  NEAT_ASSERT_OK(r);
  EXPECT_TRUE(events().empty());
  EXPECT_EQ(delta().at(ConversionKind::Pack, ConversionReason::StrideMismatch, false).count, 1u);
  EXPECT_EQ(delta().at(ConversionKind::Pack, ConversionReason::StrideMismatch, false).bytes, 32u);
}

TEST_F(PolicyTest, ExplicitConversionsRunUnderStrictAndAreAlwaysRecorded) {
  ScopedPolicy strict(ConversionPolicy::Strict);
  auto t = NeatTensor::allocate(DType::F32, {4, 8});
  NEAT_ASSERT_OK(t->transpose(0, 1)->contiguous());
  NEAT_ASSERT_OK(t->clone({.policy = ConversionPolicy::AllowSilent}));
  EXPECT_EQ(events().size(), 2u);
  EXPECT_EQ(delta().total().count, 2u);
}

TEST_F(PolicyTest, ContiguousInputPassesThroughWithNothingRecorded) {
  auto t = NeatTensor::allocate(DType::F32, {4, 8});
  ScopedPolicy strict(ConversionPolicy::Strict);
  auto r = accept_contiguous(*t);
  NEAT_ASSERT_OK(r);
  EXPECT_EQ(r->identity(), t->identity());
  EXPECT_EQ(delta().total().count + delta().total().refused, 0u);
  NEAT_EXPECT_ERROR(accept_contiguous(NeatTensor()), ErrorCode::FailedPrecondition, "undefined");
}

TEST_F(PolicyTest, AFakeGateSeesEveryCopyRequest) {
  struct Recording final : CopyGate {
    Result<ConversionPolicy> admit(const CopyRequest& r) override {
      requests.push_back(r.operation);
      return ConversionPolicy::AllowSilent;
    }
    void record(const CopyRequest&, ConversionPolicy, const CopyOutcome& o) noexcept override {
      bytes += o.bytes_written;
    }
    std::vector<std::string_view> requests;
    std::int64_t bytes = 0;
  } gate;
  CopyGate* previous = set_copy_gate(&gate);
  auto t = NeatTensor::allocate(DType::U8, {10});
  NeatTensor other = *t;
  (void)t->clone();
  (void)t->transpose(0, 0)->contiguous();  // contiguous already: no request
  (void)std::move(*t).make_writable();
  set_copy_gate(previous);
  EXPECT_EQ(gate.requests, (std::vector<std::string_view>{"clone", "make_writable"}));
  EXPECT_EQ(gate.bytes, 20);
  EXPECT_EQ(&copy_gate(), &default_copy_gate());
}

}  // namespace
}  // namespace neat

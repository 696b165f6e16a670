#include "neat/contract/error.hpp"

#include <gtest/gtest.h>

namespace neat {
namespace {

Result<int> half(int x) {
  if (x % 2) return invalid_argument("x=" + std::to_string(x) + " is odd");
  return x / 2;
}

Result<int> quarter(int x) {
  NEAT_ASSIGN_OR_RETURN(int h, half(x));
  return half(h);
}

TEST(Error, CodesHaveStableNames) {
  EXPECT_EQ(to_string(ErrorCode::InvalidArgument), "invalid_argument");
  EXPECT_EQ(to_string(ErrorCode::ResourceExhausted), "resource_exhausted");
  EXPECT_EQ(static_cast<int>(ErrorCode::Internal), 6);
}

TEST(Error, ResultCarriesValueOrError) {
  auto ok = quarter(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 2);
  auto bad = quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(bad.error().message(), "x=3 is odd");
  EXPECT_EQ(bad.error().to_string(), "invalid_argument: x=3 is odd");
}

TEST(Error, ValueOnErrorThrowsTypedException) {
  auto bad = half(1);
  EXPECT_THROW((void)bad.value(), BadResultAccess);
  Status s = failed_precondition("nope");
  EXPECT_THROW(s.value(), BadResultAccess);
}

TEST(Error, WithContextPrefixes) {
  Error e = out_of_range("index 9").with_context("slice");
  EXPECT_EQ(e.message(), "slice: index 9");
  EXPECT_EQ(e.code(), ErrorCode::OutOfRange);
}

}  // namespace
}  // namespace neat

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

TEST(Error, PartsComposeTheMessageInEachApisWords) {
  Error e(ErrorCode::FailedPrecondition, "map(write)", "the tensor is shared",
          {Fix{"call std::move(t).make_writable() first", "call t = t.make_writable() first"},
           Fix{"map it for reading", {}}});
  EXPECT_EQ(e.message(),
            "map(write): the tensor is shared. Fix: call std::move(t).make_writable() first. Or "
            "map it for reading.");
  EXPECT_EQ(e.message(Spelling::Python),
            "map(write): the tensor is shared. Fix: call t = t.make_writable() first. Or map it "
            "for reading.");
  EXPECT_EQ(e.what(), "the tensor is shared");
  EXPECT_EQ(e.where(), "map(write)");
  ASSERT_EQ(e.fixes().size(), 2u);
  EXPECT_EQ(e.fixes()[1].in(true), "map it for reading");  // no Python words: the same
  EXPECT_EQ(e.first_fix(), &e.fixes()[0]);

  // Context joins the place; the fixes stay data.
  Error placed = e.with_context("stage 'pre'");
  EXPECT_EQ(placed.where(), "stage 'pre': map(write)");
  EXPECT_EQ(placed.fixes().size(), 2u);
  EXPECT_EQ(placed.message().rfind("stage 'pre': map(write): the tensor is shared.", 0), 0u);

  // A plain error gains parts when a fix is added; its text becomes the problem.
  Error plain = invalid_argument("size 0x0").with_fix(Fix{"give a size", {}});
  EXPECT_EQ(plain.message(), "size 0x0. Fix: give a size.");
  EXPECT_EQ(plain.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(invalid_argument("x").first_fix(), nullptr);
  EXPECT_TRUE(invalid_argument("x").fixes().empty());
  EXPECT_TRUE(invalid_argument("x").where().empty());
}

TEST(Error, ACollectingErrorListsItsCausesAndFindsTheirFixes) {
  Error list =
      Error::collect(ErrorCode::FailedPrecondition, "graph 'g' cannot be built (2 problems):",
                     {failed_precondition("the graph has no sinks"),
                      Error(ErrorCode::FailedPrecondition, "edge 'a->b'", "it needs a convert",
                            {Fix{"insert `convert`", {}}})});
  EXPECT_EQ(list.message(),
            "graph 'g' cannot be built (2 problems):\n  - the graph has no sinks\n  - edge "
            "'a->b': it needs a convert. Fix: insert `convert`.");
  ASSERT_EQ(list.causes().size(), 2u);
  ASSERT_NE(list.first_fix(), nullptr);
  EXPECT_EQ(list.first_fix()->cpp, "insert `convert`");
  EXPECT_TRUE(list.fixes().empty());  // its own: none

  // A problem told over several lines gets its fixes on lines of their own.
  Error multi(ErrorCode::FailedPrecondition, "frame memory", "pools:\n  a\n  b",
              {Fix{"raise it", {}}});
  EXPECT_EQ(multi.message(), "frame memory: pools:\n  a\n  b\n    Fix: raise it.");
}

}  // namespace
}  // namespace neat

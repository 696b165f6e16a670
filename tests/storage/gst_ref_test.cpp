// GstRef (storage/internal/gst_ref.hpp): one reference held, dropped exactly
// once on every path; for_each_element walks nested bins.
#include "neat/storage/internal/gst_ref.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <string>
#include <vector>

#include "neat/storage/gstreamer.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

using detail::for_each_element;
using detail::GstRef;

class GstRefTest : public ::testing::Test {
 protected:
  void SetUp() override { NEAT_ASSERT_OK(ensure_gstreamer()); }
};

TEST_F(GstRefTest, AdoptsMovesAndDropsOneReference) {
  GstCaps* raw = gst_caps_new_empty_simple("video/x-raw");
  gst_caps_ref(raw);  // the test's own reference, to watch the count
  {
    GstRef<GstCaps> a(raw);
    EXPECT_EQ(GST_CAPS_REFCOUNT_VALUE(raw), 2);
    GstRef<GstCaps> b(std::move(a));
    EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    EXPECT_EQ(b.get(), raw);
    EXPECT_EQ(GST_CAPS_REFCOUNT_VALUE(raw), 2);  // a move takes no reference
    GstRef<GstCaps> c;
    c = std::move(b);
    EXPECT_EQ(GST_CAPS_REFCOUNT_VALUE(raw), 2);
  }
  EXPECT_EQ(GST_CAPS_REFCOUNT_VALUE(raw), 1);  // dropped exactly once
  gst_caps_unref(raw);
}

TEST_F(GstRefTest, ResetAndReleaseHandOverOwnership) {
  GstBuffer* raw = gst_buffer_new();
  gst_buffer_ref(raw);
  GstRef<GstBuffer> a(raw);
  GstBuffer* handed = a.release();
  EXPECT_FALSE(a);
  EXPECT_EQ(GST_MINI_OBJECT_REFCOUNT_VALUE(raw), 2);
  a.reset(handed);  // adopt it back
  a.reset();        // and drop it
  EXPECT_EQ(GST_MINI_OBJECT_REFCOUNT_VALUE(raw), 1);
  gst_buffer_unref(raw);
}

TEST_F(GstRefTest, OutParameterFillsAndFreesAnError) {
  GstRef<GError> err;
  GstRef<GstElement> pipeline(gst_parse_launch("no_such_element_anywhere", err.out()));
  ASSERT_TRUE(err);
  EXPECT_NE(std::string(err->message).find("no_such_element_anywhere"), std::string::npos)
      << err->message;
  // A second use drops the first error before the callee writes the new one
  // (GLib requires an empty GError** on entry).
  GstRef<GstElement> again(gst_parse_launch("another_missing_element", err.out()));
  ASSERT_TRUE(err);
  EXPECT_NE(std::string(err->message).find("another_missing_element"), std::string::npos);
}

TEST_F(GstRefTest, ForEachElementVisitsNestedBinsAndStops) {
  GstRef<GError> err;
  GstRef<GstElement> pipeline(gst_parse_launch(
      "videotestsrc name=a ! bin. ( name=bin identity name=b ! identity name=c ) ! fakesink name=d",
      err.out()));
  ASSERT_FALSE(err) << err->message;
  ASSERT_TRUE(pipeline);
  std::vector<std::string> names;
  for_each_element(GST_BIN(pipeline.get()), [&](GstElement* e) {
    names.emplace_back(GST_OBJECT_NAME(e));
    return false;
  });
  for (const char* n : {"a", "bin", "b", "c", "d"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
  GstElement* found = for_each_element(GST_BIN(pipeline.get()), [](GstElement* e) {
    return std::string(GST_OBJECT_NAME(e)) == "c";
  });
  ASSERT_NE(found, nullptr);
  EXPECT_STREQ(GST_OBJECT_NAME(found), "c");
  EXPECT_EQ(for_each_element(GST_BIN(pipeline.get()), [](GstElement*) { return false; }), nullptr);
}

}  // namespace
}  // namespace neat

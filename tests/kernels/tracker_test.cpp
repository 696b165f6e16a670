// The ByteTrack-style tracker (kernels/tracker.hpp) on generated scenes:
// the assignment against brute force, ids kept through misses, score dips and
// crossings, tentative tracks, ends after max-age, a reset.
#include "neat/kernels/tracker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>

#include "support/tracking_scenes.hpp"

namespace neat {
namespace {

using scenes::IdentityScore;
using scenes::make_scene;
using scenes::SceneOptions;

double brute_force(const std::vector<double>& cost, std::size_t rows, std::size_t cols) {
  // Rows <= cols: every injection of rows into columns.
  std::vector<int> perm(cols);
  std::iota(perm.begin(), perm.end(), 0);
  double best = 1e300;
  do {
    double s = 0;
    for (std::size_t r = 0; r < rows; ++r)
      s += cost[r * cols + static_cast<std::size_t>(perm[r])];
    best = std::min(best, s);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

TEST(Assignment, FindsTheMinimumTotalCostOfEveryShape) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t rows = 1 + rng() % 5, cols = 1 + rng() % 5;
    std::vector<double> cost(rows * cols);
    for (double& c : cost)
      c = u(rng);
    std::vector<int> match;
    solve_assignment(cost, rows, cols, 10.0, match);
    double total = 0;
    std::vector<int> used(cols, 0);
    std::size_t made = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      if (match[r] < 0) continue;
      ASSERT_EQ(used[static_cast<std::size_t>(match[r])]++, 0) << "a column matched twice";
      total += cost[r * cols + static_cast<std::size_t>(match[r])];
      ++made;
    }
    ASSERT_EQ(made, std::min(rows, cols));
    if (rows <= cols) {
      EXPECT_NEAR(total, brute_force(cost, rows, cols), 1e-9) << rows << "x" << cols;
    } else {  // the transpose
      std::vector<double> t(cost.size());
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c)
          t[c * rows + r] = cost[r * cols + c];
      EXPECT_NEAR(total, brute_force(t, cols, rows), 1e-9) << rows << "x" << cols;
    }
  }
}

TEST(Assignment, NeverMakesAForbiddenPairAndPrefersMorePairs) {
  // Row 0 may only take column 0; row 1 prefers column 0 but can take 1.
  const std::vector<double> cost = {0.9, 5.0, 0.1, 0.8};
  std::vector<int> match;
  solve_assignment(cost, 2, 2, 5.0, match);
  EXPECT_EQ(match, (std::vector<int>{0, 1}));
  const std::vector<double> none = {5.0, 7.0};
  solve_assignment(none, 1, 2, 5.0, match);
  EXPECT_EQ(match, (std::vector<int>{-1}));
}

IdentityScore run(const SceneOptions& o, TrackerParams p = {}) {
  ByteTracker t(p);
  IdentityScore score;
  std::vector<TrackChange> changes;
  std::vector<float> out;
  const auto frames = make_scene(o);
  for (std::size_t f = 0; f < frames.size(); ++f) {
    out.assign(frames[f].rows.size() / 6 * 7, 0);
    const std::size_t m = t.update(frames[f].rows, static_cast<std::int64_t>(f), out, changes);
    out.resize(m * 7);
    score.add(frames[f].truth, frames[f].rows, out);
  }
  return score;
}

TEST(Tracker, ObjectsThatNeverCrossKeepOneIdEndToEndThroughMissesAndScoreDips) {
  SceneOptions o;
  o.objects = 12;
  o.frames = 300;
  o.miss_every = 5;  // a missed detection every 5th frame
  o.dip_every = 7;   // half hidden (score 0.3) every 7th frame
  const IdentityScore s = run(o);
  EXPECT_EQ(s.switches, 0);
  EXPECT_EQ(s.fragments, 0);
  for (const auto& [object, ids] : s.ids)
    EXPECT_EQ(ids.size(), 1u) << "object " << object << " got " << ids.size() << " ids";
  EXPECT_GT(s.tracked, s.truths * 98 / 100) << s.tracked << " of " << s.truths;
}

TEST(Tracker, CrossingObjectsOfOneClassAreToldApartByTheirMotion) {
  SceneOptions o;
  o.objects = 8;
  o.crossings = 3;  // three pairs cross head-on in the middle of the run
  o.frames = 240;
  o.miss_every = 9;
  const IdentityScore s = run(o);
  std::printf("crossings: %d id switches, %d fragments, %d of %d tracked\n", s.switches,
              s.fragments, s.tracked, s.truths);
  // Where two squares meet exactly, the detector's NMS keeps one box and
  // both tracks predict the same place: that frame's box may go to either
  // (two switches, there and back). After the crossing each object has its
  // own id again, the one it had before.
  EXPECT_LE(s.switches, 2 * o.crossings);
  EXPECT_EQ(s.fragments, 0);
  for (const auto& [object, ids] : s.ids) {
    const auto most = std::max_element(
        ids.begin(), ids.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    EXPECT_EQ(s.last.at(object), most->first) << "object " << object << " ended on another id";
    EXPECT_LE(ids.size(), 2u) << "object " << object;
  }
}

TEST(Tracker, AOneFrameFalseDetectionNeverGetsAnId) {
  ByteTracker t;
  std::vector<TrackChange> changes;
  std::vector<float> out(14);
  const std::vector<float> one = {10, 10, 50, 50, 0.9f, 0};
  EXPECT_EQ(t.update(one, 0, out, changes), 1u);  // the first frame: confirmed at once
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, TrackChange::Kind::Start);
  EXPECT_EQ(out[6], 1.0f);
  const std::vector<float> two = {12, 10, 52, 50, 0.9f, 0, 500, 500, 540, 540, 0.9f, 1};
  EXPECT_EQ(t.update(two, 1, out, changes), 1u) << "the newcomer is tentative";
  EXPECT_EQ(t.update(one, 2, out, changes), 1u);
  EXPECT_EQ(changes.size(), 1u) << "the tentative track that missed ended without an id";
  // The newcomer seen twice in a row is confirmed with id 2.
  EXPECT_EQ(t.update(two, 3, out, changes), 1u);
  EXPECT_EQ(t.update(two, 4, out, changes), 2u);
  EXPECT_EQ(out[13], 2.0f);
}

TEST(Tracker, ALostTrackEndsAfterMaxAgeAndAResetEndsEveryTrack) {
  TrackerParams p;
  p.max_age = 5;
  ByteTracker t(p);
  std::vector<TrackChange> changes;
  std::vector<float> out(14);
  const std::vector<float> two = {10, 10, 50, 50, 0.9f, 0, 300, 300, 340, 340, 0.8f, 2};
  const std::vector<float> one = {300, 300, 340, 340, 0.8f, 2};
  t.update(two, 0, out, changes);
  for (int f = 1; f <= 5; ++f)
    t.update(one, f, out, changes);
  EXPECT_EQ(changes.size(), 2u) << "lost for 5 frames: not yet ended";
  t.update(one, 6, out, changes);
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[2].kind, TrackChange::Kind::End);
  EXPECT_EQ(changes[2].id, 1);
  EXPECT_EQ(changes[2].last_frame, 0);
  EXPECT_EQ(t.live_tracks(), 1u);
  std::vector<TrackChange> ended;
  t.reset(ended);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].id, 2);
  EXPECT_EQ(ended[0].hits, 7);
  EXPECT_EQ(t.update(one, 7, out, changes), 1u);
  EXPECT_EQ(out[6], 1.0f) << "ids start again from 1";
}

TEST(Tracker, ATrackTakesOnlyItsOwnClassUnlessAskedNotTo) {
  for (bool per_class : {true, false}) {
    TrackerParams p;
    p.per_class = per_class;
    ByteTracker t(p);
    std::vector<TrackChange> changes;
    std::vector<float> out(7);
    t.update(std::vector<float>{10, 10, 50, 50, 0.9f, 0}, 0, out, changes);
    const std::size_t m = t.update(std::vector<float>{11, 10, 51, 50, 0.9f, 1}, 1, out, changes);
    EXPECT_EQ(m, per_class ? 0u : 1u) << "per_class " << per_class;
  }
}

}  // namespace
}  // namespace neat

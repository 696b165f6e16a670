// Generated tracking sequences and the scores of a tracker on them, for the
// tracker's tests and its benchmark: squares that move at constant speed
// (some crossing each other), detected with jitter, a missed detection every
// few frames and scores that dip, with the ground truth kept; and the CLEAR
// MOT counts the literature reports (id switches, fragmentation).
//
// Header-only, deterministic (a fixed seed gives the same scene).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

namespace neat::scenes {

struct SceneOptions {
  int objects = 10;
  int frames = 200;
  int width = 1920, height = 1080;
  float size = 60;         ///< square side, pixels
  float speed = 6;         ///< pixels per frame
  float jitter = 1.5f;     ///< detection noise, pixels
  int miss_every = 7;      ///< each object is missed on every Nth frame (0: never)
  int crossings = 0;       ///< pairs of objects set on crossing paths
  float dip_score = 0.3f;  ///< the score on frames where an object is half hidden
  int dip_every = 11;      ///< ... every Nth frame (0: never)
  std::uint32_t seed = 1;
};

/// One frame: detection rows (x1, y1, x2, y2, score, class) and the true
/// object of each row.
struct SceneFrame {
  std::vector<float> rows;
  std::vector<int> truth;
};

/// What a detector's NMS does to objects that overlap (IoU above 0.45, one
/// class): only the best scored box is left, the hidden object is missed.
inline void suppress_overlaps(SceneFrame& fr) {
  auto iou = [&](std::size_t a, std::size_t b) {
    const float* p = &fr.rows[a * 6];
    const float* q = &fr.rows[b * 6];
    const float w = std::min(p[2], q[2]) - std::max(p[0], q[0]);
    const float h = std::min(p[3], q[3]) - std::max(p[1], q[1]);
    if (w <= 0 || h <= 0) return 0.0f;
    const float i = w * h;
    return i / ((p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - i);
  };
  const std::size_t n = fr.truth.size();
  std::vector<bool> gone(n, false);
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b) {
      if (gone[a] || gone[b] || fr.rows[a * 6 + 5] != fr.rows[b * 6 + 5] || iou(a, b) <= 0.45f)
        continue;
      gone[fr.rows[a * 6 + 4] >= fr.rows[b * 6 + 4] ? b : a] = true;
    }
  SceneFrame kept;
  for (std::size_t i = 0; i < n; ++i) {
    if (gone[i]) continue;
    kept.rows.insert(kept.rows.end(), fr.rows.begin() + static_cast<std::ptrdiff_t>(i * 6),
                     fr.rows.begin() + static_cast<std::ptrdiff_t>(i * 6 + 6));
    kept.truth.push_back(fr.truth[i]);
  }
  fr = std::move(kept);
}

inline std::vector<SceneFrame> make_scene(const SceneOptions& o) {
  std::mt19937 rng(o.seed);
  std::uniform_real_distribution<float> unit(0, 1);
  std::normal_distribution<float> noise(0, o.jitter);
  struct Object {
    float x, y, vx, vy;
    int cls;
  };
  std::vector<Object> objs;
  // Non-crossing objects move along their own horizontal lane; crossing
  // pairs start on opposite sides of one lane's crossing point.
  const int lanes = o.objects;
  const float lane_h = static_cast<float>(o.height) / static_cast<float>(lanes + 1);
  for (int i = 0; i < o.objects; ++i) {
    Object b;
    b.cls = i % 3;
    const bool crossing = i < 2 * o.crossings;
    if (crossing) {
      const int pair = i / 2;
      const float cy = lane_h * static_cast<float>(pair * 2 + 1);
      const float cx = static_cast<float>(o.width) / 2;
      const float t = static_cast<float>(o.frames) / 2;
      const float dir = (i % 2 == 0) ? 1.0f : -1.0f;
      b.vx = dir * o.speed;
      b.vy = dir * o.speed * 0.5f;
      b.x = cx - b.vx * t;
      b.y = cy - b.vy * t;
      b.cls = 0;  // the same class: only the motion tells them apart
    } else {
      b.x = unit(rng) * static_cast<float>(o.width) * 0.3f;
      b.y = lane_h * static_cast<float>(i + 1);
      b.vx = o.speed * (0.5f + unit(rng));
      b.vy = 0;
    }
    objs.push_back(b);
  }
  std::vector<SceneFrame> frames(static_cast<std::size_t>(o.frames));
  for (int f = 0; f < o.frames; ++f) {
    SceneFrame& fr = frames[static_cast<std::size_t>(f)];
    for (int i = 0; i < o.objects; ++i) {
      const Object& b = objs[static_cast<std::size_t>(i)];
      const float cx = b.x + b.vx * static_cast<float>(f), cy = b.y + b.vy * static_cast<float>(f);
      if (cx < 0 || cy < 0 || cx > static_cast<float>(o.width) || cy > static_cast<float>(o.height))
        continue;  // out of the picture
      if (o.miss_every > 0 && (f + i) % o.miss_every == o.miss_every - 1) continue;
      const float score = (o.dip_every > 0 && (f + 2 * i) % o.dip_every == 0) ? o.dip_score : 0.85f;
      const float h = o.size / 2;
      fr.rows.insert(fr.rows.end(), {cx - h + noise(rng), cy - h + noise(rng), cx + h + noise(rng),
                                     cy + h + noise(rng), score, static_cast<float>(b.cls)});
      fr.truth.push_back(i);
    }
    suppress_overlaps(fr);
  }
  return frames;
}

/// CLEAR MOT identity counts over a run: `switches` counts frames where a
/// true object is given another id than the one it had last; `fragments`
/// counts the times an object's track is interrupted (tracked, then not,
/// then tracked again); `ids` is the number of distinct ids each object got.
struct IdentityScore {
  int switches = 0;
  int fragments = 0;
  int tracked = 0;                          ///< (object, frame) pairs given an id
  int truths = 0;                           ///< (object, frame) pairs detected
  std::map<int, std::map<float, int>> ids;  ///< object -> id -> frames
  std::map<int, float> last;                ///< object -> the id it had last
  void add(const std::vector<int>& truth, const std::vector<float>& in_rows,
           const std::vector<float>& out_rows) {
    truths += static_cast<int>(truth.size());
    std::map<int, float> now;  // object -> id this frame
    for (std::size_t o = 0; o + 7 <= out_rows.size(); o += 7) {
      for (std::size_t i = 0; i < truth.size(); ++i) {
        bool same = true;
        for (int k = 0; k < 4; ++k)
          same = same && in_rows[i * 6 + static_cast<std::size_t>(k)] ==
                             out_rows[o + static_cast<std::size_t>(k)];
        if (same) now[truth[i]] = out_rows[o + 6];
      }
    }
    for (int obj : truth) {
      auto it = now.find(obj);
      const bool has = it != now.end();
      if (has) {
        ++tracked;
        auto l = last.find(obj);
        if (l != last.end() && l->second != it->second) ++switches;
        if (was_lost[obj]) ++fragments;
        last[obj] = it->second;
        ids[obj][it->second] += 1;
        was_lost[obj] = false;
      } else if (last.count(obj)) {
        was_lost[obj] = true;
      }
    }
  }

 private:
  std::map<int, bool> was_lost;
};

}  // namespace neat::scenes

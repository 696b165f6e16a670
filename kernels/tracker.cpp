#include "neat/kernels/tracker.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <opencv2/video/tracking.hpp>

namespace neat {

// ---- The assignment ----------------------------------------------------------------------

namespace {

// Shortest augmenting paths with potentials (the Hungarian method in its
// O(rows^2 x cols) form) for rows <= cols; costs already clamped.
struct Hungarian {
  std::vector<double> u, v, minv;
  std::vector<int> p, way;
  std::vector<char> used;

  void solve(const double* a, std::size_t rows, std::size_t cols, bool transposed,
             std::vector<int>& row_match) {
    const std::size_t n = transposed ? cols : rows, m = transposed ? rows : cols;
    auto cost = [&](std::size_t i, std::size_t j) {
      return transposed ? a[j * cols + i] : a[i * cols + j];
    };
    constexpr double kInf = std::numeric_limits<double>::infinity();
    u.assign(n + 1, 0);
    v.assign(m + 1, 0);
    p.assign(m + 1, 0);
    way.assign(m + 1, 0);
    for (std::size_t i = 1; i <= n; ++i) {
      p[0] = static_cast<int>(i);
      std::size_t j0 = 0;
      minv.assign(m + 1, kInf);
      used.assign(m + 1, 0);
      do {
        used[j0] = 1;
        const auto i0 = static_cast<std::size_t>(p[j0]);
        double delta = kInf;
        std::size_t j1 = 0;
        for (std::size_t j = 1; j <= m; ++j) {
          if (used[j]) continue;
          const double cur = cost(i0 - 1, j - 1) - u[i0] - v[j];
          if (cur < minv[j]) {
            minv[j] = cur;
            way[j] = static_cast<int>(j0);
          }
          if (minv[j] < delta) {
            delta = minv[j];
            j1 = j;
          }
        }
        for (std::size_t j = 0; j <= m; ++j) {
          if (used[j]) {
            u[static_cast<std::size_t>(p[j])] += delta;
            v[j] -= delta;
          } else {
            minv[j] -= delta;
          }
        }
        j0 = j1;
      } while (p[j0] != 0);
      do {
        const auto j1 = static_cast<std::size_t>(way[j0]);
        p[j0] = p[j1];
        j0 = j1;
      } while (j0 != 0);
    }
    row_match.assign(rows, -1);
    for (std::size_t j = 1; j <= m; ++j) {
      if (p[j] == 0) continue;
      const auto i = static_cast<std::size_t>(p[j] - 1);
      if (transposed) {
        row_match[j - 1] = static_cast<int>(i);
      } else {
        row_match[i] = static_cast<int>(j - 1);
      }
    }
  }
};

}  // namespace

void solve_assignment(std::span<const double> cost, std::size_t rows, std::size_t cols,
                      double forbidden, std::vector<int>& match) {
  match.assign(rows, -1);
  if (rows == 0 || cols == 0) return;
  thread_local Hungarian h;
  thread_local std::vector<double> clamped;
  clamped.assign(cost.begin(), cost.begin() + static_cast<std::ptrdiff_t>(rows * cols));
  for (double& c : clamped)
    c = std::min(c, forbidden);  // every forbidden pair costs the same: most pairs first
  h.solve(clamped.data(), rows, cols, rows > cols, match);
  for (std::size_t r = 0; r < rows; ++r) {
    const int c = match[r];
    if (c >= 0 && cost[r * cols + static_cast<std::size_t>(c)] >= forbidden) match[r] = -1;
  }
}

// ---- Tracks --------------------------------------------------------------------------------

namespace {

constexpr float kWeightPosition = 1.0f / 20;   // position noise per pixel of box height
constexpr float kWeightVelocity = 1.0f / 160;  // velocity noise per pixel of box height

enum class Status : std::uint8_t { Tentative, Tracked, Lost };

struct Box {
  float x1, y1, x2, y2;
};

float iou(const Box& a, const Box& b) {
  const float w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  const float h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  if (w <= 0 || h <= 0) return 0;
  const float inter = w * h;
  const float uni = (a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter;
  return uni > 0 ? inter / uni : 0;
}

struct Track {
  cv::KalmanFilter kf{8, 4, 0, CV_32F};
  std::int64_t id = 0;  // 0 until confirmed
  int class_id = 0;
  Status status = Status::Tentative;
  int hits_in_row = 0;
  std::int64_t hits = 0, first_frame = 0, last_frame = 0;
  Box box{};        // the last detection
  Box predicted{};  // this frame's prediction

  Track() {
    cv::setIdentity(kf.transitionMatrix);
    for (int i = 0; i < 4; ++i)
      kf.transitionMatrix.at<float>(i, i + 4) = 1;
    kf.measurementMatrix.setTo(0);
    for (int i = 0; i < 4; ++i)
      kf.measurementMatrix.at<float>(i, i) = 1;
  }
  static void measurement(const Box& b, float z[4]) {
    z[0] = (b.x1 + b.x2) / 2;
    z[1] = (b.y1 + b.y2) / 2;
    z[2] = std::max(b.x2 - b.x1, 1.0f);
    z[3] = std::max(b.y2 - b.y1, 1.0f);
  }
  void start(const Box& b, int cls, std::int64_t frame) {
    float z[4];
    measurement(b, z);
    kf.statePost.setTo(0);
    for (int i = 0; i < 4; ++i)
      kf.statePost.at<float>(i) = z[i];
    const float sp = 2 * kWeightPosition * z[3], sv = 10 * kWeightVelocity * z[3];
    kf.errorCovPost.setTo(0);
    for (int i = 0; i < 4; ++i) {
      kf.errorCovPost.at<float>(i, i) = sp * sp;
      kf.errorCovPost.at<float>(i + 4, i + 4) = sv * sv;
    }
    id = 0;
    class_id = cls;
    status = Status::Tentative;
    hits_in_row = 1;
    hits = 1;
    first_frame = last_frame = frame;
    box = predicted = b;
  }
  void predict() {
    if (status == Status::Lost) kf.statePost.at<float>(7) = 0;  // ByteTrack: no growth while lost
    const float h = std::max(kf.statePost.at<float>(3), 1.0f);
    const float sp = kWeightPosition * h, sv = kWeightVelocity * h;
    for (int i = 0; i < 4; ++i) {
      kf.processNoiseCov.at<float>(i, i) = sp * sp;
      kf.processNoiseCov.at<float>(i + 4, i + 4) = sv * sv;
    }
    const cv::Mat& s = kf.predict();
    const float w = std::max(s.at<float>(2), 1.0f), hh = std::max(s.at<float>(3), 1.0f);
    predicted = {s.at<float>(0) - w / 2, s.at<float>(1) - hh / 2, s.at<float>(0) + w / 2,
                 s.at<float>(1) + hh / 2};
  }
  void correct(const Box& b, std::int64_t frame) {
    float z[4];
    measurement(b, z);
    const float sp = kWeightPosition * z[3];
    cv::setIdentity(kf.measurementNoiseCov, cv::Scalar::all(sp * sp));
    cv::Mat m(4, 1, CV_32F, z);  // over z: no allocation
    kf.correct(m);
    box = b;
    ++hits;
    hits_in_row = last_frame == frame - 1 ? hits_in_row + 1 : 1;
    last_frame = frame;
  }
  TrackChange change(TrackChange::Kind kind) const {
    TrackChange c;
    c.kind = kind;
    c.id = id;
    c.class_id = class_id;
    c.first_frame = first_frame;
    c.last_frame = last_frame;
    c.hits = hits;
    c.box[0] = box.x1;
    c.box[1] = box.y1;
    c.box[2] = box.x2;
    c.box[3] = box.y2;
    return c;
  }
};

}  // namespace

struct ByteTracker::State {
  std::vector<std::unique_ptr<Track>> tracks, spare;
  std::int64_t next_id = 1;
  std::int64_t frames = 0;  // frames seen since the start or reset
  // Per-frame scratch, reused.
  std::vector<Box> boxes;
  std::vector<int> det_track;  // detection -> track index, -1
  std::vector<int> high, low, pool, left;
  std::vector<double> cost;
  std::vector<int> match, parent;
  std::vector<int> sub_rows, sub_cols, sub_match;
  std::vector<double> sub_cost;
  std::vector<char> matched_track;

  int find(int x) {
    while (parent[static_cast<std::size_t>(x)] != x)
      x = parent[static_cast<std::size_t>(x)] =
          parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
    return x;
  }

  // Matches tracks `pool` to detections `dets` by IoU >= `min_iou` (and
  // class), optimally within each group of overlapping pairs. Matched pairs
  // go to det_track; `dets` keeps the unmatched detections, `pool` the
  // unmatched tracks.
  void associate(std::vector<int>& pool_in, std::vector<int>& dets, const std::span<const float> d,
                 float min_iou, bool per_class) {
    const std::size_t nt = pool_in.size(), nd = dets.size();
    if (nt == 0 || nd == 0) return;
    constexpr double kForbidden = 2.0;
    cost.assign(nt * nd, kForbidden);
    parent.resize(nt + nd);
    std::iota(parent.begin(), parent.end(), 0);
    for (std::size_t t = 0; t < nt; ++t) {
      const Track& tr = *tracks[static_cast<std::size_t>(pool_in[t])];
      for (std::size_t k = 0; k < nd; ++k) {
        const auto di = static_cast<std::size_t>(dets[k]);
        if (per_class && static_cast<int>(d[di * 6 + 5]) != tr.class_id) continue;
        const float o = iou(tr.predicted, boxes[di]);
        if (o < min_iou || o <= 0) continue;
        cost[t * nd + k] = 1.0 - o;
        const int a = find(static_cast<int>(t)), b = find(static_cast<int>(nt + k));
        if (a != b) parent[static_cast<std::size_t>(a)] = b;
      }
    }
    match.assign(nt, -1);
    // Solve each group of pairs that compete apart (most are one track, one detection).
    for (std::size_t root = 0; root < nt + nd; ++root) {
      if (find(static_cast<int>(root)) != static_cast<int>(root)) continue;
      sub_rows.clear();
      sub_cols.clear();
      for (std::size_t t = 0; t < nt; ++t)
        if (find(static_cast<int>(t)) == static_cast<int>(root))
          sub_rows.push_back(static_cast<int>(t));
      for (std::size_t k = 0; k < nd; ++k)
        if (find(static_cast<int>(nt + k)) == static_cast<int>(root))
          sub_cols.push_back(static_cast<int>(k));
      if (sub_rows.empty() || sub_cols.empty()) continue;
      sub_cost.resize(sub_rows.size() * sub_cols.size());
      for (std::size_t r = 0; r < sub_rows.size(); ++r)
        for (std::size_t c = 0; c < sub_cols.size(); ++c)
          sub_cost[r * sub_cols.size() + c] = cost[static_cast<std::size_t>(sub_rows[r]) * nd +
                                                   static_cast<std::size_t>(sub_cols[c])];
      solve_assignment(sub_cost, sub_rows.size(), sub_cols.size(), kForbidden, sub_match);
      for (std::size_t r = 0; r < sub_rows.size(); ++r)
        if (sub_match[r] >= 0)
          match[static_cast<std::size_t>(sub_rows[r])] =
              sub_cols[static_cast<std::size_t>(sub_match[r])];
    }
    left.clear();
    std::vector<int>& unmatched_tracks = left;
    for (std::size_t t = 0; t < nt; ++t) {
      if (match[t] < 0) {
        unmatched_tracks.push_back(pool_in[t]);
      } else {
        det_track[static_cast<std::size_t>(dets[static_cast<std::size_t>(match[t])])] = pool_in[t];
        dets[static_cast<std::size_t>(match[t])] = -1;
      }
    }
    pool_in.swap(unmatched_tracks);
    std::erase(dets, -1);
  }
};

ByteTracker::ByteTracker(TrackerParams params)
    : params_(params), state_(std::make_unique<State>()) {}
ByteTracker::~ByteTracker() = default;
ByteTracker::ByteTracker(ByteTracker&&) noexcept = default;
ByteTracker& ByteTracker::operator=(ByteTracker&&) noexcept = default;

std::size_t ByteTracker::live_tracks() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(state_->tracks.begin(), state_->tracks.end(),
                    [](const std::unique_ptr<Track>& t) { return t->id != 0; }));
}

void ByteTracker::reset(std::vector<TrackChange>& ended) {
  State& s = *state_;
  for (auto& t : s.tracks) {
    if (t->id != 0) ended.push_back(t->change(TrackChange::Kind::End));
    s.spare.push_back(std::move(t));
  }
  s.tracks.clear();
  s.next_id = 1;
  s.frames = 0;
}

std::size_t ByteTracker::update(std::span<const float> d, std::int64_t frame, std::span<float> out,
                                std::vector<TrackChange>& changes) {
  State& s = *state_;
  const TrackerParams& p = params_;
  const std::size_t n = d.size() / 6;
  s.boxes.resize(n);
  s.det_track.assign(n, -1);
  s.high.clear();
  s.low.clear();
  for (std::size_t i = 0; i < n; ++i) {
    s.boxes[i] = {d[i * 6], d[i * 6 + 1], d[i * 6 + 2], d[i * 6 + 3]};
    const float score = d[i * 6 + 4];
    if (score >= p.high) {
      s.high.push_back(static_cast<int>(i));
    } else if (score >= p.low) {
      s.low.push_back(static_cast<int>(i));
    }
  }
  for (auto& t : s.tracks)
    t->predict();

  // 1. Confident detections -> tracked and lost tracks.
  s.pool.clear();
  for (std::size_t t = 0; t < s.tracks.size(); ++t)
    if (s.tracks[t]->status != Status::Tentative) s.pool.push_back(static_cast<int>(t));
  s.associate(s.pool, s.high, d, p.match_iou, p.per_class);
  // 2. Weak detections -> the tracks left (an occluded object scores lower).
  // Unlike ByteTrack, lost tracks take part too (at this pass's stricter
  // IoU): an object missed once and then half hidden keeps its track.
  s.associate(s.pool, s.low, d, p.low_match_iou, p.per_class);
  for (int t : s.pool)
    s.tracks[static_cast<std::size_t>(t)]->status = Status::Lost;
  // 3. Tentative tracks -> the confident detections left.
  s.pool.clear();
  for (std::size_t t = 0; t < s.tracks.size(); ++t)
    if (s.tracks[t]->status == Status::Tentative) s.pool.push_back(static_cast<int>(t));
  s.associate(s.pool, s.high, d, p.tentative_iou, p.per_class);
  s.matched_track.assign(s.tracks.size(), 0);
  for (int t : s.pool)
    s.matched_track[static_cast<std::size_t>(t)] = 2;  // an unconfirmed track that missed: gone

  for (std::size_t i = 0; i < n; ++i) {
    const int t = s.det_track[i];
    if (t < 0) continue;
    Track& tr = *s.tracks[static_cast<std::size_t>(t)];
    tr.correct(s.boxes[i], frame);
    s.matched_track[static_cast<std::size_t>(t)] = 1;
    if (tr.status == Status::Tentative && tr.hits_in_row >= p.min_hits) {
      tr.id = s.next_id++;
      changes.push_back(tr.change(TrackChange::Kind::Start));
    }
    if (tr.id != 0) tr.status = Status::Tracked;
  }
  // 4. New tracks from the confident detections left over.
  for (int i : s.high) {
    const auto di = static_cast<std::size_t>(i);
    if (d[di * 6 + 4] < p.new_track) continue;
    std::unique_ptr<Track> tr;
    if (!s.spare.empty()) {
      tr = std::move(s.spare.back());
      s.spare.pop_back();
    } else {
      tr = std::make_unique<Track>();
    }
    tr->start(s.boxes[di], static_cast<int>(d[di * 6 + 5]), frame);
    if (s.frames == 0 || p.min_hits <= 1) {  // a stream's first frame: every object is real
      tr->id = s.next_id++;
      tr->status = Status::Tracked;
      changes.push_back(tr->change(TrackChange::Kind::Start));
    }
    s.det_track[di] = static_cast<int>(s.tracks.size());
    s.tracks.push_back(std::move(tr));
    s.matched_track.push_back(1);
  }
  // 5. The tracked detections, in input order.
  std::size_t written = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int t = s.det_track[i];
    if (t < 0 || s.tracks[static_cast<std::size_t>(t)]->id == 0) continue;
    float* row = out.data() + written * 7;
    std::copy_n(d.data() + i * 6, 6, row);
    row[6] = static_cast<float>(s.tracks[static_cast<std::size_t>(t)]->id);
    ++written;
  }
  // 6. Ends: unconfirmed tracks that missed, lost tracks past max_age.
  std::size_t keep = 0;
  for (std::size_t t = 0; t < s.tracks.size(); ++t) {
    std::unique_ptr<Track>& tr = s.tracks[t];
    const bool gone = s.matched_track[t] == 2 ||
                      (tr->status == Status::Lost && frame - tr->last_frame > p.max_age);
    if (gone) {
      if (tr->id != 0) changes.push_back(tr->change(TrackChange::Kind::End));
      s.spare.push_back(std::move(tr));
    } else {
      s.tracks[keep++] = std::move(tr);
    }
  }
  s.tracks.resize(keep);
  ++s.frames;
  return written;
}

}  // namespace neat

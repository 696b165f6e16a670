// Multi-object tracking of one stream's detections, ByteTrack-style: stable
// ids for the objects a detector finds frame after frame.
//
// Each track has a constant-velocity Kalman filter (cv::KalmanFilter over
// centre, size and their velocities, noise scaled by the box's height).
// Every frame: the tracks predict; the confident detections (score >=
// `high`) are matched to the tracked and lost tracks by IoU with an optimal
// assignment; the weak ones (`low` <= score < `high`) then to the tracks
// left over (an occluded object's score drops: it keeps its id; ByteTrack
// leaves lost tracks out of this pass, here they take part at its stricter
// IoU, so a miss followed by a weak detection does not break the track);
// tentative tracks take what confident detections remain. A confident
// detection left over (score >= `new_track`) starts a tentative track, which
// is confirmed after `min_hits` frames in a row (at once on a stream's first
// frame). A track without a detection is lost; lost for more than `max_age`
// frames it ends.
//
// Input rows (x1, y1, x2, y2, score, class), as the yolo stage makes them;
// output rows (x1, y1, x2, y2, score, class, track id) of the detections
// that belong to a confirmed track, in input order. Ids count from 1 per
// tracker. Starts and ends are reported as TrackChange records.
//
// Threading: one tracker per stream, used by one thread at a time.
// Allocation: vectors grow to the largest frame seen and are reused; a new
// track allocates its filter once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace neat {

struct TrackerParams {
  float high = 0.5f;           ///< first association: detections at least this score
  float low = 0.1f;            ///< second association: weaker detections down to this score
  float new_track = 0.6f;      ///< a detection left over at least this score starts a track
  float match_iou = 0.2f;      ///< first association: IoU at least this
  float low_match_iou = 0.5f;  ///< second association (weak detections): IoU at least this
  float tentative_iou = 0.3f;  ///< a tentative track's next detection: IoU at least this
  int max_age = 30;            ///< frames a lost track waits for its object before it ends
  int min_hits = 2;            ///< frames in a row that confirm a new track
  bool per_class = true;       ///< a track only takes detections of its own class
};

/// A track started (confirmed) or ended (lost for longer than max_age, or
/// the tracker was reset).
struct TrackChange {
  enum class Kind : std::uint8_t { Start, End };
  Kind kind = Kind::Start;
  std::int64_t id = 0;
  int class_id = 0;
  std::int64_t first_frame = 0;  ///< the frame of its first detection
  std::int64_t last_frame = 0;   ///< the frame of its last detection
  std::int64_t hits = 0;         ///< frames it had a detection in
  float box[4] = {0, 0, 0, 0};   ///< its last detected box x1, y1, x2, y2
};

class ByteTracker {
 public:
  explicit ByteTracker(TrackerParams params = {});
  ~ByteTracker();
  ByteTracker(ByteTracker&&) noexcept;
  ByteTracker& operator=(ByteTracker&&) noexcept;

  /// One frame's detections (`rows` x 6 floats) -> the tracked ones into
  /// `out` (room for `rows` x 7 floats); returns how many were written.
  /// Track starts and ends are appended to `changes`.
  std::size_t update(std::span<const float> detections, std::int64_t frame, std::span<float> out,
                     std::vector<TrackChange>& changes);
  /// Ends every confirmed track (appended to `ended`) and starts again from
  /// id 1: the stream restarted.
  void reset(std::vector<TrackChange>& ended);
  /// Confirmed tracks, tracked or lost.
  std::size_t live_tracks() const noexcept;
  const TrackerParams& params() const noexcept { return params_; }

 private:
  struct State;
  TrackerParams params_;
  std::unique_ptr<State> state_;
};

/// The optimal assignment (minimum total cost) of a rows x cols cost matrix
/// (row-major): `match[r]` is the column of row r, or -1. Pairs whose cost is
/// at least `forbidden` are never made. Exposed for tests.
void solve_assignment(std::span<const double> cost, std::size_t rows, std::size_t cols,
                      double forbidden, std::vector<int>& match);

}  // namespace neat

// The `track` stage: stable ids for a detector's objects, one tracker per
// stream (kernels/tracker.hpp, ByteTrack-style), and the journal through
// which track starts and ends reach the message sinks.
//
// track: takes the yolo stage's F32 [N, 6] detections (x1, y1, x2, y2,
// score, class) and hands on F32 [M, 7] rows, the same plus the track id,
// for the detections that belong to a confirmed track (M <= N). Each stream
// of the graph (FrameMeta::stream) has its own tracker and ids; a stream
// whose source the graph restarted (StreamId::session) starts over, its
// tracks ended. The output comes from the stage's pool: steady state
// allocates nothing but a new track's filter.
//
// Threading: a stage instance runs on one thread at a time; a TrackJournal
// is shared by that thread and the sinks' threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "neat/kernels/tracker.hpp"
#include "neat/stages/stage.hpp"

namespace neat {

/// A track that started or ended, on the frame where it did.
struct TrackRecord {
  StreamId stream;
  std::int64_t frame = -1;
  std::int64_t pts_ns = -1;
  std::int64_t capture_ns = -1;  ///< the frame's capture time (steady clock)
  TrackChange change;
};

/// Track starts and ends from track stages to the sinks that publish them.
/// Records are kept only while some reader is attached (a message sink
/// attaches at build), so a journal nobody reads never grows.
class TrackJournal {
 public:
  /// Bounds what waits for a reader; past it the oldest records are dropped
  /// and counted (dropped()).
  explicit TrackJournal(std::size_t capacity = 65536) : capacity_(capacity) {}
  void attach_reader() noexcept { readers_.fetch_add(1, std::memory_order_relaxed); }
  void post(const TrackRecord& record);
  /// Moves the records of stream `stream_index` at frames up to `frame` into
  /// `out`, oldest first. Takes no lock while nothing waits.
  void take(std::int32_t stream_index, std::int64_t frame, std::vector<TrackRecord>& out);
  /// Moves every record left (end of stream) into `out`.
  void take_all(std::vector<TrackRecord>& out);
  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

 private:
  std::size_t capacity_;
  std::atomic<int> readers_{0};
  std::atomic<std::size_t> pending_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::mutex mutex_;
  std::deque<TrackRecord> records_;
};

struct TrackOptions {
  TrackerParams tracker;
  /// Where starts and ends go (a message sink reads them); null: counted only.
  std::shared_ptr<TrackJournal> journal;
};

/// Bad parameters (thresholds outside [0, 1], max-age or min-hits below 1)
/// fail here.
Result<std::unique_ptr<Stage>> track_stage(TrackOptions options);

}  // namespace neat

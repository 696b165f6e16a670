// Streams: what a graph does with each of its sources (a camera). Each
// source is one stream, named after it; its frames carry it
// (FrameMeta::stream). A watchdog sees a stream that stops sending frames
// (stalled), a source that fails or a live source that ends (down), and
// restarts that source alone, with exponential backoff, while the other
// streams go on. A stream's states, restarts, frames and drops are live in
// GraphStats::streams, in the metrics (neat_stream_*), and in the trace (one
// "stream" record per state change, with the reason).
//
//   neat::GraphBuilder b("cameras");
//   b.add_source("door", neat::gst_source("rtspsrc location=rtsp://... ! ..."),
//                {.stall_timeout = 5s, .rate = 10});  // restart: live sources by default
//
// Threading: plain values.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace neat {

/// When a source whose stream went down (an error, a stall, the end of a
/// live source) is restarted.
enum class RestartPolicy : std::uint8_t {
  Live,    ///< live sources (cameras, network streams) only: the default
  Always,  ///< any source, a file too (it plays again from its start)
  Never,   ///< never: the stream going down fails the graph (fail fast)
};
std::string_view to_string(RestartPolicy p) noexcept;

/// What a graph does with one source's stream (GraphBuilder::add_source).
struct SourceOptions {
  /// No frame for this long after the stream's first frame: stalled (the
  /// source is restarted as for an error). 0: no watchdog.
  std::chrono::milliseconds stall_timeout{5000};
  RestartPolicy restart = RestartPolicy::Live;
  /// Restart delays: from `backoff_min`, doubled per failed attempt up to
  /// `backoff_max`, each with up to 25% jitter; attempts are unlimited.
  std::chrono::milliseconds backoff_min{500};
  std::chrono::milliseconds backoff_max{30000};
  /// The most frames per second to take from the stream (by the frames'
  /// timestamps); frames beyond it are skipped at the source and counted
  /// (reason "rate"). 0: every frame.
  double rate = 0;
};

enum class StreamState : std::uint8_t {
  Starting,    ///< started, no frame yet
  Up,          ///< frames flow
  Stalled,     ///< no frame for stall_timeout: about to restart
  Restarting,  ///< down, waiting for its next attempt or preparing again
  Ended,       ///< ended by itself (a file, a --frames limit) or the graph stopped
  Failed,      ///< down for good (restart never, or it came back unlike itself)
};
std::string_view to_string(StreamState s) noexcept;

/// One stream's live state (GraphStats::streams).
struct StreamStats {
  std::string name;  ///< the source's name
  std::int32_t index = 0;
  StreamState state = StreamState::Starting;
  std::uint64_t frames = 0;    ///< frames it handed to the graph
  std::uint64_t restarts = 0;  ///< restart attempts
  /// Frames of this stream not handed on, by reason: "rate" (skipped at the
  /// source), "late" (waited longer than a stage's max latency), and the
  /// graph's drop reasons for frames of this stream.
  std::map<std::string, std::uint64_t> dropped;
  double last_frame_age_seconds = -1;  ///< since its last frame; -1: none yet
  std::string last_error;              ///< why it last went down ("" when it never did)
};

}  // namespace neat

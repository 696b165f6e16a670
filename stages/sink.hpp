// Sink: where a graph's frames leave it. Built in: AppSink (frames handed to
// the application: pull, try-pull or callback) and, in gst_io.hpp, an appsrc
// that feeds a downstream GStreamer pipeline without a copy.
//
// Ownership: graphs hold sinks by std::shared_ptr, so the application can
// keep one (an AppSink it pulls from).
// Threading: consume()/finish()/abort() are called from the sink's own graph
// thread (abort() also from the thread stopping the graph).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "neat/contract/neat_tensor.hpp"
#include "neat/stages/frame_spec.hpp"

namespace neat {

/// What became of a frame handed to a sink.
enum class SinkOutcome : std::uint8_t {
  Consumed,       ///< the sink took it
  DroppedOldest,  ///< taken, and an older queued frame was dropped to make room
  Stopped,        ///< not taken: the graph is stopping
};

/// A sink that sends results out of the process (mqtt, kafka): its delivery so far.
struct DeliveryStats {
  std::string endpoint;  ///< "mqtt 127.0.0.1:1883"
  bool connected = false;
  std::uint64_t queued = 0;     ///< messages made
  std::uint64_t delivered = 0;  ///< acknowledged by the broker
  std::uint64_t dropped = 0;    ///< dropped from a full spool, never sent (the oldest first)
  std::uint64_t resent = 0;     ///< sent again after a reconnect
  std::uint64_t spooled = 0;    ///< waiting now (sent or not, not yet acknowledged)
  std::uint64_t reconnects = 0;
  std::uint64_t recovered = 0;  ///< found in the spool directory at start (an earlier run's)
  std::uint64_t kept = 0;       ///< left in the spool directory at the end, for the next run
  std::string last_error;       ///< why the broker was last unreachable ("" when never)
};

class Sink {
 public:
  virtual ~Sink() = default;
  virtual std::string_view kind() const noexcept = 0;
  virtual Accepts accepts() const = 0;
  /// Called by build() with the spec of the frames it will receive. May open
  /// what the sink writes to (a file, a device, a downstream pipeline).
  virtual Status prepare(const FrameSpec& input) = 0;
  /// Called by GraphBuilder::plan() (`neat explain`) instead of prepare():
  /// what prepare() would refuse, found without opening or writing anything.
  virtual Status check(const FrameSpec& input) const {
    (void)input;
    return {};
  }
  /// One frame (by value: the sink may keep it). Errors stop the graph.
  virtual Result<SinkOutcome> consume(NeatTensor frame, std::int64_t frame_number) = 0;
  /// After consume() returned DroppedOldest: the stream index
  /// (FrameMeta::stream) of the older frame it dropped, so the drop counts
  /// against that stream; -1 when the sink does not know. Called on the
  /// graph's sink thread, right after consume().
  virtual std::int32_t dropped_stream() const noexcept { return -1; }
  /// End of stream: no more frames will come.
  virtual Status finish() = 0;
  /// The graph stops now: wake anything waiting, take no more frames.
  virtual void abort() = 0;
  /// Asked by the graph every 100 ms while the sink waits for its next
  /// frame: an error stops the graph now (e.g. the downstream pipeline of a
  /// gst: sink failed while no frame was coming). Must be cheap (an atomic
  /// load in the common case).
  virtual Status health() { return {}; }
  virtual std::string describe() const { return std::string(kind()); }
  /// A message sink's delivery (any thread); nullopt for other sinks.
  virtual std::optional<DeliveryStats> delivery() const { return std::nullopt; }
  /// Called by the graph before it takes the sink's next frame from the
  /// input edge: waits up to `timeout` until consume() would take a frame
  /// without waiting (a queue with room). True when it would (or when the
  /// sink is stopping); false on timeout (the graph asks again). So a frame is
  /// never held by the graph's thread while the sink is full, and the memory
  /// plan needs no slot for it. Default: always ready.
  virtual bool wait_for_room(std::chrono::nanoseconds timeout) {
    (void)timeout;
    return true;
  }
  /// How many frames the sink may keep alive at once after consume()
  /// returned, counting the one in consume() (its queue, plus the frame the
  /// application is working on). The graph sizes the upstream buffer pools
  /// and its memory plan from it. Called by build(), after prepare().
  virtual int max_frames_held() const { return 1; }
  /// What max_frames_held() counts, for the memory plan ("queue 2 + 1 pulled").
  virtual std::string frames_held_text() const { return {}; }
  /// After prepare(): what the sink converts inside itself on every frame.
  virtual std::vector<InnerConversion> inner_conversions() const { return {}; }
};

}  // namespace neat

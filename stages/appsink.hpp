// AppSink: hands a graph's frames to the application, as NeatTensor (pull
// with a timeout, try_pull) or as a borrowed NeatTensorRef (a callback on the
// sink's thread). A bounded queue sits in between; when it is full the graph
// either waits (Overflow::Block: backpressure up to the source) or the oldest
// queued frame is dropped (Overflow::DropOldest), counted in stats().
//
//   auto sink = neat::AppSink::create({.capacity = 4});
//   builder.add_sink("out", sink);  ...  graph.start();
//   while (auto frame = sink->pull(std::chrono::seconds(1))) { use(*frame); }
//   if (sink->at_end()) ...  // end of stream, every frame pulled
//
// Ownership: shared between the graph and the application.
// Threading: pull/try_pull/stats from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "neat/stages/queue.hpp"
#include "neat/stages/sink.hpp"
#include "neat/stages/stage.hpp"

namespace neat {

enum class Overflow : std::uint8_t { Block, DropOldest };

struct AppSinkOptions {
  /// Frames queued for the application. With the edge queue in front of the
  /// sink, 1 keeps two frames ready while the application works on a third
  /// (measured: deeper queues add a frame of memory each, no throughput;
  /// docs/graphs.md). Raise it for an application whose time per frame varies.
  std::size_t capacity = 1;
  Overflow overflow = Overflow::Block;
  Accepts accepts = Accepts::anything();
};

class AppSink final : public Sink {
 public:
  static std::shared_ptr<AppSink> create(AppSinkOptions options = {});
  explicit AppSink(AppSinkOptions options);

  /// The next frame, waiting up to `timeout`; std::nullopt on timeout, at the
  /// end of the stream, or when the graph stopped (tell them apart with at_end()).
  std::optional<NeatTensor> pull(std::chrono::milliseconds timeout);
  /// The next frame if one is queued.
  std::optional<NeatTensor> try_pull();
  /// Takes every frame queued now, without waiting, handing each to `take`
  /// (in order); returns how many. A branch nobody reads from is drained
  /// with `drain()`: its frames are let go and never hold the graph back.
  template <class Take>
  std::size_t drain(Take&& take) {
    std::size_t n = 0;
    while (auto f = try_pull()) {
      take(std::move(*f));
      ++n;
    }
    return n;
  }
  std::size_t drain() {
    return drain([](NeatTensor&&) {});
  }
  /// Frames go to `callback` (on the sink's thread) instead of the queue. Set
  /// it before the graph starts. The reference is valid during the call only.
  void set_callback(std::function<void(const NeatTensorRef&)> callback);
  /// True once the stream ended (or the graph stopped) and the queue is empty.
  bool at_end() const;

  struct Stats {
    std::uint64_t received = 0;  ///< frames the graph handed over
    std::uint64_t pulled = 0;    ///< frames the application took (or the callback saw)
    std::uint64_t dropped = 0;   ///< frames dropped by DropOldest
    std::size_t queued = 0;
  };
  Stats stats() const;
  const AppSinkOptions& options() const noexcept { return options_; }

  // Sink (called by the graph runtime).
  std::string_view kind() const noexcept override { return "appsink"; }
  Accepts accepts() const override { return options_.accepts; }
  Status prepare(const FrameSpec& input) override;
  Result<SinkOutcome> consume(NeatTensor frame, std::int64_t frame_number) override;
  Status finish() override;
  void abort() override;
  std::string describe() const override;
  /// Waits for room in the queue (Block without a callback).
  bool wait_for_room(std::chrono::nanoseconds timeout) override;
  /// With a callback, the frame in the callback; otherwise the queue and the
  /// frame the application pulled last (one it keeps longer is not counted:
  /// under a frame-memory budget the graph then waits for it).
  int max_frames_held() const override;
  std::string frames_held_text() const override;
  std::int32_t dropped_stream() const noexcept override { return dropped_stream_; }

 private:
  AppSinkOptions options_;
  BoundedQueue<NeatTensor> queue_;
  std::function<void(const NeatTensorRef&)> callback_;
  std::atomic<std::uint64_t> received_{0};
  std::atomic<std::uint64_t> pulled_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<bool> ended_{false};
  std::int32_t dropped_stream_ = -1;  // written and read on the graph's sink thread
};

}  // namespace neat

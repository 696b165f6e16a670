// Sources: where a graph's frames come from. A source states at build() what
// it will produce (prepare()), then hands out frames until end of stream.
// Built in: SyntheticSource (generated frames, for tests and benchmarks),
// PushSource (an application pushes its own tensors), and, in gst_io.hpp, a
// GStreamer launch description ending in an appsink.
//
// Ownership: the graph owns its sources (std::unique_ptr); a PushSource is
// shared (std::shared_ptr) between the graph and the application pushing.
// Threading: next() is called from the source's own thread; PushSource::push()
// from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "neat/contract/neat_tensor.hpp"
#include "neat/stages/frame_spec.hpp"
#include "neat/stages/queue.hpp"

namespace neat {

class Source {
 public:
  virtual ~Source() = default;
  virtual std::string_view kind() const noexcept = 0;
  /// Readies the source (a GStreamer source prerolls here) and states what it
  /// will produce. Called once, by build().
  virtual Result<FrameSpec> prepare() = 0;
  /// The next frame; std::nullopt at end of stream. Must return within a
  /// bounded time (about 100 ms) once `stop` is set.
  virtual Result<std::optional<NeatTensor>> next(const std::atomic<bool>& stop) = 0;
  /// Releases what prepare() took. Called once the graph stops.
  virtual void close() {}
  /// Releases what prepare() took when only a plan was made
  /// (GraphBuilder::plan(), `neat explain`): build() may prepare the source
  /// again. Default: close().
  virtual void close_after_plan() { close(); }
  virtual std::string describe() const { return std::string(kind()); }
  /// After prepare(): whether the source is live (a camera, a network
  /// stream: frames come at their own pace and its end means it went down).
  virtual bool live() const { return false; }
  /// Brings the source back after an error, a stall or the end of a live
  /// stream (the graph's supervision, on the source's thread): what it will
  /// produce now. Must return within a bounded time once `stop` is set.
  /// Default: close(), then prepare() again.
  virtual Result<FrameSpec> restart(const std::atomic<bool>& stop) {
    (void)stop;
    close();
    return prepare();
  }
  /// After prepare(): what the source converts inside itself on every frame.
  virtual std::vector<InnerConversion> inner_conversions() const { return {}; }
  /// Frames of its own the source may keep alive besides the ones the graph
  /// holds (a GStreamer source: its appsink queue and the frame its pipeline
  /// is making), for the graph's memory plan; `text` says which.
  virtual int frames_held_inside() const { return 0; }
  virtual std::string frames_held_inside_text() const { return {}; }
};

/// `frames` generated frames of `spec` (an image or a dense tensor) from a
/// pool of its own: each frame's first row carries its frame number (bytes
/// frame + column), the rest is left as the pool gives it.
std::unique_ptr<Source> synthetic_source(FrameSpec spec, std::int64_t frames);

/// A source the application feeds. Frames must match the spec given at
/// creation (checked on push).
class PushSource final : public Source {
 public:
  static std::shared_ptr<PushSource> create(FrameSpec spec, std::size_t capacity = 4);
  PushSource(FrameSpec spec, std::size_t capacity);

  /// Queues a frame, waiting up to `timeout` while the graph is behind.
  /// InvalidArgument when the frame does not match the spec; ResourceExhausted
  /// on timeout; FailedPrecondition after end_of_stream() or once the graph stopped.
  Status push(NeatTensor frame, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  /// No more frames: the graph drains what is queued, then ends.
  void end_of_stream();

  std::string_view kind() const noexcept override { return "push"; }
  Result<FrameSpec> prepare() override { return spec_; }
  /// What every pushed frame must be.
  const FrameSpec& spec() const noexcept { return spec_; }
  Result<std::optional<NeatTensor>> next(const std::atomic<bool>& stop) override;
  void close() override;
  /// prepare() took nothing: frames already pushed stay queued for build().
  void close_after_plan() override {}
  std::string describe() const override { return "push " + spec_.to_string(); }
  /// The frames queued by push() and not yet taken by the graph.
  int frames_held_inside() const override { return static_cast<int>(queue_.capacity()); }
  std::string frames_held_inside_text() const override { return "push source queue"; }

 private:
  FrameSpec spec_;
  BoundedQueue<NeatTensor> queue_;
};

/// Lets a graph hold a PushSource the application also holds.
std::unique_ptr<Source> shared_source(std::shared_ptr<Source> source);

}  // namespace neat

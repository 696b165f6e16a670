#include "neat/stages/appsink.hpp"

#include <algorithm>

namespace neat {

std::shared_ptr<AppSink> AppSink::create(AppSinkOptions options) {
  return std::make_shared<AppSink>(std::move(options));
}

AppSink::AppSink(AppSinkOptions options)
    : options_(std::move(options)), queue_(options_.capacity) {}

std::optional<NeatTensor> AppSink::pull(std::chrono::milliseconds timeout) {
  NeatTensor t;
  if (queue_.pop(t, timeout) == BoundedQueue<NeatTensor>::PopResult::Popped) {
    pulled_.fetch_add(1, std::memory_order_relaxed);
    return t;
  }
  return std::nullopt;
}

std::optional<NeatTensor> AppSink::try_pull() {
  return pull(std::chrono::milliseconds(0));
}

void AppSink::set_callback(std::function<void(const NeatTensorRef&)> callback) {
  callback_ = std::move(callback);
}

bool AppSink::at_end() const {
  return ended_.load() && queue_.size() == 0;
}

AppSink::Stats AppSink::stats() const {
  return Stats{received_.load(), pulled_.load(), dropped_.load(), queue_.size()};
}

Status AppSink::prepare(const FrameSpec&) {
  if (options_.capacity == 0) return invalid_argument("appsink: capacity must be at least 1");
  return {};
}

Result<SinkOutcome> AppSink::consume(NeatTensor frame, std::int64_t) {
  received_.fetch_add(1, std::memory_order_relaxed);
  if (callback_) {
    callback_(NeatTensorRef(frame));
    pulled_.fetch_add(1, std::memory_order_relaxed);
    return SinkOutcome::Consumed;
  }
  if (options_.overflow == Overflow::DropOldest) {
    std::optional<NeatTensor> dropped;
    if (queue_.push_drop_oldest(frame, dropped) != BoundedQueue<NeatTensor>::PushResult::Pushed) {
      return SinkOutcome::Stopped;
    }
    if (dropped) {
      dropped_stream_ = dropped->meta().stream.index;
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return SinkOutcome::DroppedOldest;
    }
    return SinkOutcome::Consumed;
  }
  if (queue_.push(frame) != BoundedQueue<NeatTensor>::PushResult::Pushed) {
    return SinkOutcome::Stopped;
  }
  return SinkOutcome::Consumed;
}

Status AppSink::finish() {
  ended_.store(true);
  queue_.close();
  return {};
}

void AppSink::abort() {
  // Frames already queued stay pullable: they were delivered. Only waiting stops.
  ended_.store(true);
  queue_.close();
}

bool AppSink::wait_for_room(std::chrono::nanoseconds timeout) {
  if (callback_ || options_.overflow == Overflow::DropOldest) return true;  // never waits
  return queue_.wait_room(timeout) != BoundedQueue<NeatTensor>::RoomResult::Timeout;
}

int AppSink::max_frames_held() const {
  if (callback_) return 1;
  // The queue and the frame the application pulled last (the graph waits for
  // room before it takes a frame for the sink: wait_for_room()). DropOldest
  // also holds the frame it is replacing for a moment.
  return static_cast<int>(std::min<std::size_t>(options_.capacity, 1 << 16)) + 1 +
         (options_.overflow == Overflow::DropOldest ? 1 : 0);
}

std::string AppSink::frames_held_text() const {
  if (callback_) return "callback 1";
  return "queue " + std::to_string(options_.capacity) + " + 1 pulled" +
         (options_.overflow == Overflow::DropOldest ? " + 1 replaced" : "");
}

std::string AppSink::describe() const {
  return "appsink capacity=" + std::to_string(options_.capacity) +
         (options_.overflow == Overflow::DropOldest ? " drop-oldest" : " block");
}

}  // namespace neat

// BoundedQueue: the queue on every edge of a running graph. Bounded (a full
// queue blocks the producer: backpressure), closable (end of stream: the
// consumer drains what is queued, then sees the end), abortable (a stop or an
// error wakes every waiter at once; what is still queued is handed back for
// counting as dropped). Also used by AppSink and PushSource.
//
// Threading: any number of producers and consumers; one mutex, two condition
// variables. A fixed ring: no allocation per item. A Doorbell lets one
// consumer wait on several queues.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace neat {

/// Wakes a consumer that waits on several queues at once (a node fed by
/// several streams): every queue it watches rings it on a push, a close or
/// an abort. The consumer reads rings() before it looks at its queues and
/// waits for a ring after that, so no wake-up falls between the two.
class Doorbell {
 public:
  void ring() {
    {
      std::lock_guard lock(mutex_);
      ++rings_;
    }
    rung_.notify_all();
  }
  std::uint64_t rings() const {
    std::lock_guard lock(mutex_);
    return rings_;
  }
  /// Waits up to `timeout` for a ring after the `seen`th.
  void wait(std::uint64_t seen, std::chrono::nanoseconds timeout) {
    std::unique_lock lock(mutex_);
    rung_.wait_for(lock, timeout, [&] { return rings_ != seen; });
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable rung_;
  std::uint64_t rings_ = 0;
};

template <class T>
class BoundedQueue {
 public:
  enum class PushResult { Pushed, Aborted, Closed, Timeout };
  enum class PopResult { Popped, Timeout, Closed, Aborted };
  enum class RoomResult { Room, Timeout, Closed, Aborted };

  explicit BoundedQueue(std::size_t capacity)
      : capacity_(capacity == 0 ? 1 : capacity), ring_(capacity_) {}

  /// Rings `bell` on every push, close and abort from now on (set before the
  /// queue is shared; the bell outlives the queue's use).
  void set_doorbell(Doorbell* bell) noexcept { doorbell_ = bell; }

  /// Waits while full. Aborted/Closed: the item was not queued (it stays in `item`).
  PushResult push(T& item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return aborted_ || closed_ || count_ < capacity_; });
    if (aborted_) return PushResult::Aborted;
    if (closed_) return PushResult::Closed;
    put(item);
    return PushResult::Pushed;
  }

  /// As push(), waiting at most `timeout` for room.
  PushResult push_for(T& item, std::chrono::nanoseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!not_full_.wait_for(lock, timeout,
                            [&] { return aborted_ || closed_ || count_ < capacity_; })) {
      return PushResult::Timeout;
    }
    if (aborted_) return PushResult::Aborted;
    if (closed_) return PushResult::Closed;
    put(item);
    return PushResult::Pushed;
  }

  /// Never waits: when full, the oldest item is removed into `dropped`.
  PushResult push_drop_oldest(T& item, std::optional<T>& dropped) {
    std::lock_guard lock(mutex_);
    if (aborted_) return PushResult::Aborted;
    if (closed_) return PushResult::Closed;
    if (count_ >= capacity_) dropped.emplace(take());
    put(item);
    return PushResult::Pushed;
  }

  /// Waits up to `timeout` until the queue has room for one more item. With a
  /// single producer the room stays until that producer pushes: a node that
  /// waits for room before it takes its next frame never holds a finished
  /// frame while it waits (the graph's memory plan counts on that).
  RoomResult wait_room(std::chrono::nanoseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!not_full_.wait_for(lock, timeout,
                            [&] { return aborted_ || closed_ || count_ < capacity_; })) {
      return RoomResult::Timeout;
    }
    if (aborted_) return RoomResult::Aborted;
    if (closed_) return RoomResult::Closed;
    return RoomResult::Room;
  }

  /// Waits up to `timeout` until an item is queued, without taking it
  /// (Popped: one is there; with a single consumer it stays until that
  /// consumer pops it), or the queue is closed and drained, or aborted.
  PopResult wait_item(std::chrono::nanoseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!not_empty_.wait_for(lock, timeout, [&] { return aborted_ || closed_ || count_ > 0; })) {
      return PopResult::Timeout;
    }
    if (aborted_) return PopResult::Aborted;
    return count_ > 0 ? PopResult::Popped : PopResult::Closed;
  }

  /// Waits up to `timeout` for an item.
  PopResult pop(T& out, std::chrono::nanoseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!not_empty_.wait_for(lock, timeout, [&] { return aborted_ || closed_ || count_ > 0; })) {
      return PopResult::Timeout;
    }
    if (aborted_) return PopResult::Aborted;
    if (count_ == 0) return PopResult::Closed;
    out = take();
    not_full_.notify_one();
    return PopResult::Popped;
  }

  PopResult try_pop(T& out) { return pop(out, std::chrono::nanoseconds(0)); }

  /// End of stream: producers stop, consumers drain then see Closed.
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
    if (doorbell_ != nullptr) doorbell_->ring();
  }

  /// Stops everything now and returns what was still queued.
  std::vector<T> abort() {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    std::vector<T> left;
    left.reserve(count_);
    while (count_ > 0)
      left.push_back(take());
    not_empty_.notify_all();
    not_full_.notify_all();
    if (doorbell_ != nullptr) doorbell_->ring();
    return left;
  }

  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return count_;
  }
  std::size_t capacity() const noexcept { return capacity_; }
  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }
  bool aborted() const {
    std::lock_guard lock(mutex_);
    return aborted_;
  }
  /// Items ever queued.
  std::uint64_t pushed() const {
    std::lock_guard lock(mutex_);
    return pushed_;
  }

 private:
  void put(T& item) {
    ring_[(head_ + count_) % capacity_].emplace(std::move(item));
    ++count_;
    ++pushed_;
    not_empty_.notify_one();
    if (doorbell_ != nullptr) doorbell_->ring();
  }
  T take() {
    T out = std::move(*ring_[head_]);
    ring_[head_].reset();
    head_ = (head_ + 1) % capacity_;
    --count_;
    return out;
  }

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::vector<std::optional<T>> ring_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  std::uint64_t pushed_ = 0;
  bool closed_ = false;
  bool aborted_ = false;
  Doorbell* doorbell_ = nullptr;
};

}  // namespace neat

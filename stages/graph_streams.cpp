// Streams of a running graph: their states and reasons, the stall watchdog's
// check, restart delays, and the pacing of a source's frames (rate limit,
// timestamps across restarts). The source thread's supervision loop that
// uses them is in graph_runtime.cpp.
#include <algorithm>
#include <chrono>

#include "neat/stages/internal/graph_impl.hpp"
#include "neat/telemetry/event_sink.hpp"

namespace neat {

std::string_view to_string(RestartPolicy p) noexcept {
  switch (p) {
    case RestartPolicy::Live:
      return "live";
    case RestartPolicy::Always:
      return "always";
    case RestartPolicy::Never:
      return "never";
  }
  return "?";
}

std::string_view to_string(StreamState s) noexcept {
  switch (s) {
    case StreamState::Starting:
      return "starting";
    case StreamState::Up:
      return "up";
    case StreamState::Stalled:
      return "stalled";
    case StreamState::Restarting:
      return "restarting";
    case StreamState::Ended:
      return "ended";
    case StreamState::Failed:
      return "failed";
  }
  return "?";
}

namespace detail {

StreamStats StreamRt::stats(std::int64_t now_ns) const {
  StreamStats out;
  out.name = std::string(name);
  out.index = index;
  out.state = current();
  out.frames = frames.load(std::memory_order_relaxed);
  out.restarts = restarts.load(std::memory_order_relaxed);
  out.dropped["rate"] = skipped.load(std::memory_order_relaxed);
  for (std::size_t r = 0; r < kReasons; ++r)
    out.dropped[kDropNames[r]] = dropped[r].load(std::memory_order_relaxed);
  const std::int64_t last = last_frame_ns.load(std::memory_order_relaxed);
  out.last_frame_age_seconds = last < 0 ? -1.0 : static_cast<double>(now_ns - last) * 1e-9;
  std::lock_guard lock(mutex);
  out.last_error = last_error;
  return out;
}

void set_stream_state(std::string_view graph, StreamRt& s, StreamState state,
                      std::string_view reason) {
  s.state.store(static_cast<int>(state));
  if (state == StreamState::Stalled || state == StreamState::Failed ||
      (state == StreamState::Restarting && !reason.empty())) {
    std::lock_guard lock(s.mutex);
    s.last_error = std::string(reason);
  }
  if (event_sink_count() == 0) return;
  StreamEvent e;
  e.graph = graph;
  e.stream = s.name;
  e.state = to_string(state);
  e.reason = reason;
  e.restarts = s.restarts.load(std::memory_order_relaxed);
  e.timestamp_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  e.thread_id = current_thread_number();
  emit_stream_event(e);
}

void check_stall(std::string_view graph, StreamRt& s, std::int64_t now_ns) {
  const auto timeout = s.options.stall_timeout;
  if (timeout.count() <= 0 || s.current() != StreamState::Up) return;
  const std::int64_t since = s.asking_since_ns.load(std::memory_order_relaxed);
  const std::int64_t limit = std::chrono::nanoseconds(timeout).count();
  if (since < 0 || now_ns - since <= limit) return;
  int up = static_cast<int>(StreamState::Up);
  // The source's own thread may change the state meanwhile (it ended): only Up stalls.
  if (!s.state.compare_exchange_strong(up, static_cast<int>(StreamState::Stalled))) return;
  char reason[96];
  std::snprintf(reason, sizeof reason, "no frame for %.1f s (stall timeout %.1f s)",
                static_cast<double>(now_ns - since) * 1e-9,
                static_cast<double>(timeout.count()) / 1e3);
  set_stream_state(graph, s, StreamState::Stalled, reason);
  s.interrupt.store(true);
}

std::chrono::milliseconds restart_delay(const SourceOptions& o, int attempt, std::uint64_t& seed) {
  std::int64_t ms = o.backoff_min.count();
  for (int i = 0; i < attempt && ms < o.backoff_max.count(); ++i)
    ms *= 2;
  ms = std::min<std::int64_t>(ms, o.backoff_max.count());
  // xorshift: jitter so that cameras that went down together do not come back in step.
  seed ^= seed << 13;
  seed ^= seed >> 7;
  seed ^= seed << 17;
  const std::int64_t jitter =
      ms / 4 > 0 ? static_cast<std::int64_t>(seed % static_cast<std::uint64_t>(ms / 4 + 1)) : 0;
  return std::chrono::milliseconds(ms + jitter);
}

bool SourcePacing::admit(FrameMeta& meta) {
  if (meta.pts_ns >= 0) {
    if (restarted_ && last_pts_ >= 0) {
      // The restarted source counts from its own start: follow on from the last frame.
      shift_ = last_pts_ + std::max<std::int64_t>(last_step_, 1) - meta.pts_ns;
    }
    restarted_ = false;
    meta.pts_ns += shift_;
  }
  if (meta.pts_ns >= 0) {  // every frame, skipped or not: where the stream is
    if (last_pts_ >= 0 && meta.pts_ns > last_pts_) last_step_ = meta.pts_ns - last_pts_;
    if (meta.duration_ns > 0) last_step_ = meta.duration_ns;
    last_pts_ = meta.pts_ns;
  }
  if (period_ns_ <= 0) return true;
  const std::int64_t t = meta.pts_ns >= 0 ? meta.pts_ns : meta.capture_ns;
  if (t < 0) return true;
  // A tenth of a period early still counts as on time (timestamps jitter).
  if (next_due_ >= 0 && t < next_due_ - period_ns_ / 10) return false;
  next_due_ = next_due_ < 0 || t - next_due_ > period_ns_ ? t + period_ns_ : next_due_ + period_ns_;
  return true;
}

}  // namespace detail
}  // namespace neat

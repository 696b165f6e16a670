// Streams of a running graph: their states and reasons, the stall watchdog's
// check, restart delays, and the pacing of a source's frames (rate limit,
// timestamps across restarts). The source thread's supervision loop that
// uses them is at the end of this file.
#include <algorithm>
#include <chrono>

#include "neat/stages/internal/graph_runtime.hpp"

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

// How a source's run of frames ended.

// A source's thread: its frames, and when its stream goes down (an error,
// a stall, the end of a live stream) the source alone restarted with
// backoff, as its SourceOptions say, while the other streams go on.
void Graph::Impl::run_source(NodeRt& node) {
  StreamRt& st = *node.stream;
  ConversionContext cx;
  cx.graph = plan.graph;
  cx.stage = node.plan.name;
  cx.stream = st.name;
  ScopedContext scope(cx);
  SourceRun run{SourcePacing(st.options.rate)};
  run.seed = 0x9E3779B97F4A7C15ULL ^ static_cast<std::uint64_t>(st.index + 1) ^
             static_cast<std::uint64_t>(steady_ns());
  for (;;) {
    std::optional<Error> why_down;
    const SourceEnd end = pump_source(node, run, scope, why_down);
    if (!down(node, end, why_down) || !restart(node, run)) break;
  }
  close_outputs(node);
  node.source->close();
}

// Frames until the source ends, stalls, fails or the graph stops.
Graph::Impl::SourceEnd Graph::Impl::pump_source(NodeRt& node, SourceRun& run, ScopedContext& scope,
                                                std::optional<Error>& down_error) {
  StreamRt& st = *node.stream;
  const StreamId stream{st.index, st.name,
                        static_cast<std::int32_t>(st.restarts.load(std::memory_order_relaxed))};
  const std::int64_t limit = plan.max_source_frames;
  for (;;) {
    if (stop.load(std::memory_order_relaxed)) return SourceEnd::Stopped;
    if (limit > 0 && run.emitted >= limit) return SourceEnd::Limit;  // as if it had ended
    if (!wait_for_outputs(node)) return SourceEnd::Stopped;
    scope.set_frame(run.frame);  // what the source records while producing it
    st.asking_since_ns.store(steady_ns(), std::memory_order_relaxed);
    auto next = guarded([&] { return node.source->next(st.interrupt); }, "next()");
    st.asking_since_ns.store(-1, std::memory_order_relaxed);
    if (!next.ok()) {
      down_error = next.error();
      return SourceEnd::Error;
    }
    if (!next->has_value()) {
      if (stop.load()) return SourceEnd::Stopped;
      return st.interrupt.load() ? SourceEnd::Stalled : SourceEnd::Ended;
    }
    NeatTensor& t = **next;
    // Every frame leaves its source numbered, its geometry rooted in itself.
    FrameMeta meta = t.meta();
    if (meta.frame < 0 || st.restarts.load(std::memory_order_relaxed) > 0) meta.frame = run.frame;
    if (meta.capture_ns < 0) meta.capture_ns = steady_ns();  // when the source handed it over
    meta.geometry = t.source_geometry();
    meta.stream = stream;
    const std::int64_t frame = run.frame++;
    st.last_frame_ns.store(steady_ns(), std::memory_order_relaxed);
    if (st.current() != StreamState::Up) {
      run.attempt = 0;
      set_stream_state(plan.graph, st, StreamState::Up,
                       frame == 0 ? "first frame" : "frames again");
    }
    if (!run.pacing.admit(meta)) {
      st.skipped.fetch_add(1, std::memory_order_relaxed);  // over the stream's rate
      continue;
    }
    t.set_meta(meta);
    ++run.emitted;
    source_frames.fetch_add(1, std::memory_order_relaxed);
    st.frames.fetch_add(1, std::memory_order_relaxed);
    node.counters->frames_out.fetch_add(1, std::memory_order_relaxed);
    produced.fetch_add(node.out_edges.size(), std::memory_order_relaxed);
    Item item{std::move(t), frame};
    emit(node, item);
  }
}

// The stream went down or ended: true when its source is to be restarted;
// otherwise its final state is set (and a failure that may not be
// restarted fails the graph).
bool Graph::Impl::down(NodeRt& node, SourceEnd end, const std::optional<Error>& down_error) {
  StreamRt& st = *node.stream;
  const bool live = node.source->live();
  if (end == SourceEnd::Stopped || end == SourceEnd::Limit ||
      (end == SourceEnd::Ended && !live && st.options.restart != RestartPolicy::Always)) {
    set_stream_state(plan.graph, st, StreamState::Ended,
                     end == SourceEnd::Stopped ? "the graph stopped"
                     : end == SourceEnd::Limit ? "frame limit reached"
                                               : "end of stream");
    return false;
  }
  std::string why = end == SourceEnd::Error ? down_error->message()
                      : end == SourceEnd::Stalled
                          ? [&] {
                              std::lock_guard lock(st.mutex);
                              return st.last_error;
                            }()
                          : std::string("the live source ended its stream");
  const bool restarts = st.options.restart == RestartPolicy::Always ||
                        (st.options.restart == RestartPolicy::Live && live);
  if (restarts) {
    set_stream_state(plan.graph, st, StreamState::Restarting, why);
    return true;
  }
  set_stream_state(plan.graph, st, StreamState::Failed, why);
  const std::string fix =
      st.options.restart == RestartPolicy::Never
          ? " (restart never: the graph fails fast; restart=live or always brings it back)"
          : " (not a live source: restart=always would start it again)";
  fail(node, end == SourceEnd::Error
                 ? down_error->with_context("stream '" + std::string(st.name) + "' went down" + fix)
                 : unavailable("stream '" + std::string(st.name) + "' went down: " + why + fix));
  return false;
}

// Waits out the backoff and brings the source back, attempt after
// attempt, until it is back (true) or the graph stops or the source comes
// back unlike itself (false).
bool Graph::Impl::restart(NodeRt& node, SourceRun& run) {
  StreamRt& st = *node.stream;
  for (;;) {
    const auto delay = restart_delay(st.options, run.attempt++, run.seed);
    const auto until = std::chrono::steady_clock::now() + delay;
    while (std::chrono::steady_clock::now() < until) {
      if (stop.load()) return stopped(st);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (stop.load()) return stopped(st);
    st.interrupt.store(false);
    if (stop.load()) st.interrupt.store(true);  // stop_all() ran meanwhile
    st.restarts.fetch_add(1, std::memory_order_relaxed);
    auto spec = guarded([&] { return node.source->restart(st.interrupt); }, "restart()");
    if (stop.load()) return stopped(st);
    if (!spec.ok()) {
      set_stream_state(plan.graph, st, StreamState::Restarting, spec.error().message());
      continue;
    }
    if (!same_frames(*spec, node.plan.output)) {
      const std::string why = "came back with " + spec->to_string() +
                              ", but the graph was built for " + node.plan.output.to_string();
      set_stream_state(plan.graph, st, StreamState::Failed, why);
      fail(node,
           failed_precondition("stream '" + std::string(st.name) + "' " + why +
                               " (fix the camera's mode, or scale it in its gst: "
                               "description, e.g. videoscale ! video/x-raw,width=W,height=H)"));
      return false;
    }
    run.pacing.restarted();
    set_stream_state(plan.graph, st, StreamState::Starting, "restarted");
    return true;
  }
}

bool Graph::Impl::stopped(StreamRt& st) {
  set_stream_state(plan.graph, st, StreamState::Ended, "the graph stopped");
  return false;
}

// The watchdog: every 100 ms, a stream whose last frame is older than its
// stall timeout is stalled (its source's next() is interrupted).
void Graph::Impl::watch_streams() {
  while (!stop.load() && sources_running.load() > 0) {
    const std::int64_t now = steady_ns();
    for (NodeRt& n : nodes) {
      if (n.stream) check_stall(plan.graph, *n.stream, now);
    }
    std::unique_lock lock(watchdog_mutex);
    watchdog_wake.wait_for(lock, kPollSlice,
                           [&] { return stop.load() || sources_running.load() == 0; });
  }
}

}  // namespace neat

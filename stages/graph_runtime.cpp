// The graph runtime: a thread per node, a bounded queue per edge, the edges'
// implicit conversions, exact frame accounting, and the public Graph calls.
#include "neat/stages/graph.hpp"

#include <mutex>
#include <optional>

#include "neat/stages/internal/graph_impl.hpp"
#include "neat/telemetry/context.hpp"
#include "neat/telemetry/event_sink.hpp"

namespace neat {

using namespace detail;

namespace {

constexpr auto kPollSlice = std::chrono::milliseconds(100);

// Runs user code (a stage, source or sink) so that an exception it throws
// becomes an error value naming it, instead of terminating the process.
template <class F>
auto guarded(F&& f, const char* what) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return internal_error(std::string(what) + " threw " + e.what() +
                          " (stages report errors as values; this one threw)");
  } catch (...) {
    return internal_error(std::string(what) + " threw a non-standard exception");
  }
}

}  // namespace

struct Graph::Impl {
  GraphPlan plan;
  std::vector<NodeRt> nodes;
  std::vector<std::unique_ptr<EdgeRt>> edges;
  std::vector<RuleRegistration> rules;
  std::atomic<bool> stop{false};
  std::atomic<bool> hard_stop{false};  // abort(): sinks get no end of stream
  std::atomic<bool> started{false};    // atomic: stats() reads it from any thread
  bool joined = false;
  std::mutex error_mutex;
  std::optional<Error> error;
  std::atomic<std::uint64_t> source_frames{0};
  std::atomic<std::uint64_t> produced{0};
  std::atomic<std::uint64_t> consumed{0};
  std::array<std::atomic<std::uint64_t>, kReasons> dropped{};
  std::chrono::steady_clock::time_point t0;
  double seconds = 0;
  std::atomic<int> live_threads{0};
  std::atomic<int> sources_running{0};  // the watchdog watches while any runs
  std::thread watchdog;
  std::mutex watchdog_mutex;
  std::condition_variable watchdog_wake;
  std::atomic<std::int64_t> finished_ns{-1};  // since t0, when the last thread ended

  void source_done() {
    {
      std::lock_guard lock(watchdog_mutex);
      sources_running.fetch_sub(1);
    }
    watchdog_wake.notify_all();
  }

  void thread_done() {
    if (live_threads.fetch_sub(1) == 1) {
      finished_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - t0)
                            .count());
    }
  }

  // A drop counted for the graph, for the node it happened at (an edge's
  // drops count for its consumer) and for the frame's stream.
  void drop(NodeRt& at, DropReason r, std::int32_t stream = -1) {
    dropped[r].fetch_add(1, std::memory_order_relaxed);
    at.counters->dropped[r].fetch_add(1, std::memory_order_relaxed);
    if (stream >= 0 && static_cast<std::size_t>(stream) < streams.size()) {
      streams[static_cast<std::size_t>(stream)]->dropped[r].fetch_add(1, std::memory_order_relaxed);
    }
  }
  static std::int32_t stream_of(const Item& item) noexcept {
    return item.tensor.meta().stream.index;
  }
  std::vector<StreamRt*> streams;  // by stream index (owned by the source nodes)
  NodeRt& consumer(const EdgeRt& e) { return nodes[static_cast<std::size_t>(e.to)]; }

  // Stops the graph: sources stop, the edges' queued frames are dropped
  // ("stopped"). `hard`: sinks are aborted now; otherwise each sink's own
  // thread gives it its end of stream (run_sink) once it stops waiting.
  void stop_all(bool hard) {
    if (hard) hard_stop.store(true);
    stop.store(true);
    for (StreamRt* s : streams)
      s->interrupt.store(true);
    watchdog_wake.notify_all();
    for (auto& e : edges) {
      auto left = e->queue.abort();
      for (const Item& item : left)
        drop(consumer(*e), kStopped, stream_of(item));
    }
    if (!hard) return;
    for (auto& n : nodes) {
      if (n.sink) n.sink->abort();
    }
  }

  void fail(const NodeRt& node, const Error& e) {
    {
      std::lock_guard lock(error_mutex);
      if (!error) {
        error = e.with_context(std::string(node_kind_text(node.plan.kind)) + " '" + node.plan.name +
                               "' of graph '" + plan.graph + "'");
      }
    }
    stop_all(/*hard=*/false);  // the other sinks still finish: their files stay whole
  }

  // Hands `item` to every output edge of `node` (the last one gets the original).
  void emit(NodeRt& node, Item& item) {
    const std::size_t n = node.out_edges.size();
    for (std::size_t k = 0; k < n; ++k) {
      EdgeRt& e = *edges[static_cast<std::size_t>(node.out_edges[k])];
      Item copy;
      if (k + 1 < n) {
        copy = item;
      } else {
        copy = std::move(item);
      }
      copy.queued_ns = steady_ns();
      if (e.queue.push(copy) == BoundedQueue<Item>::PushResult::Pushed) {
        e.frames.fetch_add(1, std::memory_order_relaxed);
      } else {
        drop(consumer(e), kStopped, stream_of(copy));
      }
    }
  }

  // Waits until every output edge of `node` has room for a frame, so that the
  // node never holds a finished frame while its consumers are behind (the
  // memory plan counts on it). False when the graph stops.
  bool wait_for_outputs(NodeRt& node) {
    for (int ei : node.out_edges) {
      BoundedQueue<Item>& q = edges[static_cast<std::size_t>(ei)]->queue;
      for (;;) {
        const auto r = q.wait_room(kPollSlice);
        if (r == BoundedQueue<Item>::RoomResult::Room) break;
        if (r != BoundedQueue<Item>::RoomResult::Timeout || stop.load(std::memory_order_relaxed))
          return false;
      }
    }
    return true;
  }

  void close_outputs(NodeRt& node) {
    for (int e : node.out_edges)
      edges[static_cast<std::size_t>(e)]->queue.close();
  }

  // The edge's planned conversions: their stages, run implicitly (ruled by
  // the edge's policy).
  Result<NeatTensor> convert(EdgeRt& e, NeatTensor t, std::int64_t frame) {
    for (std::size_t i = 0; i < e.plan.conversions.size(); ++i) {
      StageContext& ctx = e.contexts[i];
      ctx.frame = frame;
      const FrameMeta meta = t.meta();
      NEAT_ASSIGN_OR_RETURN(t, e.plan.conversions[i].stage->process(std::move(t), ctx));
      if (t.meta().empty()) t.set_meta(meta);
    }
    return t;
  }

  // The item's frame through its input edge's conversions, for a stage or a
  // sink; a conversion's failure drops the frame and fails the node (nullopt).
  std::optional<NeatTensor> take_input(NodeRt& node, EdgeRt& in, Item& item) {
    const std::int32_t stream = stream_of(item);
    auto input = convert(in, std::move(item.tensor), item.frame);
    if (input.ok()) return std::move(*input);
    drop(node, kStageError, stream);
    fail(node, input.error().with_context("input edge '" + in.plan.name + "'"));
    return std::nullopt;
  }

  // How a source's run of frames ended.
  enum class SourceEnd { Ended, Limit, Stalled, Error, Stopped };

  // A source's thread: its frames, and when its stream goes down (an error,
  // a stall, the end of a live stream) the source alone restarted with
  // backoff, as its SourceOptions say, while the other streams go on.
  void run_source(NodeRt& node) {
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

  struct SourceRun {
    SourcePacing pacing;
    std::int64_t frame = 0;    // the stream's frame numbers (skipped frames too), across restarts
    std::int64_t emitted = 0;  // frames handed on (the --frames limit counts these)
    int attempt = 0;           // failed restart attempts since the last frame
    std::uint64_t seed = 0;    // restart jitter
  };

  // Frames until the source ends, stalls, fails or the graph stops.
  SourceEnd pump_source(NodeRt& node, SourceRun& run, ScopedContext& scope,
                        std::optional<Error>& down_error) {
    StreamRt& st = *node.stream;
    const StreamId stream{st.index, st.name};
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
  bool down(NodeRt& node, SourceEnd end, const std::optional<Error>& down_error) {
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
  bool restart(NodeRt& node, SourceRun& run) {
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

  bool stopped(StreamRt& st) {
    set_stream_state(plan.graph, st, StreamState::Ended, "the graph stopped");
    return false;
  }

  // The watchdog: every 100 ms, a stream whose last frame is older than its
  // stall timeout is stalled (its source's next() is interrupted).
  void watch_streams() {
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

  EdgeRt& input_edge(const NodeRt& node, std::size_t i) {
    return *edges[static_cast<std::size_t>(node.in_edges[i])];
  }

  // A sink is asked for its health while it waits (every kPollSlice): an
  // error there (its downstream pipeline failed) fails the node.
  bool healthy(NodeRt& node, bool* failed) {
    if (!node.sink) return true;
    Status st = node.sink->health();
    if (st.ok()) return true;
    fail(node, st.error());
    if (failed != nullptr) *failed = true;
    return false;
  }

  // Looks at the node's inputs once, round-robin from the one after the input
  // served last: Popped (into `item`, when given: else only seen) with `from`
  // the input, Closed when every input is closed and drained, Aborted, or
  // Timeout when none has a frame yet (after waiting up to kPollSlice).
  BoundedQueue<Item>::PopResult look(NodeRt& node, Item* item, std::size_t& from) {
    using R = BoundedQueue<Item>::PopResult;
    const std::size_t n = node.in_edges.size();
    if (n == 1) {
      from = 0;
      auto& q = input_edge(node, 0).queue;
      return item != nullptr ? q.pop(*item, kPollSlice) : q.wait_item(kPollSlice);
    }
    const std::uint64_t seen = node.doorbell->rings();
    bool open = false;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = (node.next_input + k) % n;
      auto& q = input_edge(node, i).queue;
      const R r = item != nullptr ? q.try_pop(*item) : q.wait_item(std::chrono::nanoseconds(0));
      if (r == R::Popped) {
        from = i;
        if (item != nullptr) node.next_input = (i + 1) % n;
        return r;
      }
      if (r == R::Aborted) return r;
      open |= r == R::Timeout;
    }
    if (!open) return R::Closed;
    node.doorbell->wait(seen, kPollSlice);
    return R::Timeout;
  }

  // Pops the node's next item (from input `from`); false at end of stream or
  // stop, or when a sink turned unhealthy (`failed` says so).
  bool pop(NodeRt& node, Item& item, std::size_t& from, bool* failed = nullptr) {
    for (;;) {
      switch (look(node, &item, from)) {
        case BoundedQueue<Item>::PopResult::Popped:
          node.counters->queue_wait.add(steady_ns() - item.queued_ns);
          return true;
        case BoundedQueue<Item>::PopResult::Timeout:
          if (!healthy(node, failed)) return false;
          continue;
        case BoundedQueue<Item>::PopResult::Closed:
        case BoundedQueue<Item>::PopResult::Aborted:
          return false;
      }
    }
  }

  // What a stage's or sink's conversions are attributed to: its graph, its
  // name, its input edge and that edge's policy.
  ConversionContext consumer_context(const NodeRt& node, const EdgeRt& in) const {
    ConversionContext cx;
    cx.graph = plan.graph;
    cx.stage = node.plan.name;
    cx.edge = in.plan.name;
    cx.policy = in.plan.policy;
    return cx;
  }

  // A frame that waited longer since its capture than the stage's max latency.
  static bool too_late(const NodeRt& node, const Item& item) {
    const auto bound = node.plan.max_latency;
    if (bound.count() <= 0) return false;
    const std::int64_t captured = item.tensor.meta().capture_ns;
    return captured >= 0 && steady_ns() - captured > std::chrono::nanoseconds(bound).count();
  }

  // A node fed by several streams: its conversions are attributed to the
  // edge the frame came by. Every frame's conversions to its stream.
  void enter(ScopedContext& scope, const NodeRt& node, const EdgeRt& in, const Item& item) {
    if (node.in_edges.size() > 1) scope.set_edge(in.plan.name, in.plan.policy);
    scope.set_stream(item.tensor.meta().stream.name);
    scope.set_frame(item.frame);
  }

  void run_stage(NodeRt& node) {
    ScopedContext scope(consumer_context(node, input_edge(node, 0)));
    StageContext sc;
    sc.graph = plan.graph;
    sc.stage = node.plan.name;
    sc.allocator = node.pool.get();
    sc.kernel_threads = plan.threads.kernels;
    NodeCounters& counters = *node.counters;
    Item item;
    std::size_t from = 0;
    while (wait_for_outputs(node) && pop(node, item, from)) {
      counters.frames_in.fetch_add(1, std::memory_order_relaxed);
      const auto busy_from = std::chrono::steady_clock::now();
      EdgeRt& in = input_edge(node, from);
      const std::int32_t stream = stream_of(item);
      if (too_late(node, item)) {  // waited longer than the stage's max latency
        drop(node, kLate, stream);
        continue;
      }
      enter(scope, node, in, item);
      sc.frame = item.frame;
      auto input = take_input(node, in, item);
      if (!input) break;
      const FrameMeta meta = input->meta();
      auto out = guarded([&] { return node.stage->process(std::move(*input), sc); }, "process()");
      counters.add_busy(std::chrono::steady_clock::now() - busy_from);
      if (!out.ok()) {
        drop(node, kStageError, stream);
        fail(node, out.error());
        break;
      }
      if (!out->defined()) {
        drop(node, kFiltered, stream);
        continue;
      }
      counters.frames_out.fetch_add(1, std::memory_order_relaxed);
      // A stage that made a new tensor without metadata still hands on its frame's.
      if (out->meta().empty()) out->set_meta(meta);
      produced.fetch_add(node.out_edges.size() - 1, std::memory_order_relaxed);
      Item next{std::move(*out), item.frame};
      emit(node, next);
    }
    close_outputs(node);
  }

  void run_sink(NodeRt& node) {
    ScopedContext scope(consumer_context(node, input_edge(node, 0)));
    NodeCounters& counters = *node.counters;
    Item item;
    bool ended = true;
    bool unhealthy = false;
    // A frame to come, then room in the sink (an AppSink's queue), then the
    // frame: the graph holds no frame while the application is behind, and a
    // full sink does not keep the graph from seeing the end of the stream.
    std::size_t from = 0;
    auto sink_ready = [&] {
      for (;;) {
        const auto r = look(node, nullptr, from);
        if (r == BoundedQueue<Item>::PopResult::Popped) break;
        if (r != BoundedQueue<Item>::PopResult::Timeout) return true;  // pop() sees the end
        if (!healthy(node, &unhealthy)) return false;
      }
      while (!node.sink->wait_for_room(kPollSlice)) {
        if (!healthy(node, &unhealthy)) return false;
        if (stop.load(std::memory_order_relaxed)) return false;
      }
      return true;
    };
    while (sink_ready() && pop(node, item, from, &unhealthy)) {
      counters.frames_in.fetch_add(1, std::memory_order_relaxed);
      const auto busy_from = std::chrono::steady_clock::now();
      EdgeRt& in = input_edge(node, from);
      const std::int32_t stream_index = stream_of(item);
      enter(scope, node, in, item);
      auto input = take_input(node, in, item);
      if (!input) {
        ended = false;
        break;
      }
      const std::int64_t capture_ns = input->meta().capture_ns;
      const std::string_view stream = input->meta().stream.name;
      auto outcome =
          guarded([&] { return node.sink->consume(std::move(*input), item.frame); }, "consume()");
      counters.add_busy(std::chrono::steady_clock::now() - busy_from);
      if (!outcome.ok()) {
        drop(node, kStageError, stream_index);
        fail(node, outcome.error());
        ended = false;
        break;
      }
      if (capture_ns >= 0 && *outcome != SinkOutcome::Stopped) {
        const std::int64_t latency = steady_ns() - capture_ns;
        counters.add_latency(latency);
        if (event_sink_count() > 0) {  // a trace is being written: it carries the latency
          FrameEvent fe;
          fe.graph = plan.graph;
          fe.sink = node.plan.name;
          fe.stream = stream;
          fe.frame = item.frame;
          fe.latency_ns = latency;
          fe.timestamp_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
          fe.thread_id = current_thread_number();
          emit_frame_event(fe);
        }
      }
      switch (*outcome) {
        case SinkOutcome::Consumed:
          consumed.fetch_add(1, std::memory_order_relaxed);
          counters.frames_out.fetch_add(1, std::memory_order_relaxed);
          break;
        case SinkOutcome::DroppedOldest:
          drop(
              node,
              kSinkOverflow);  // the older frame (its stream unknown here): this one took its place
          break;
        case SinkOutcome::Stopped:
          drop(node, kStopped, stream_index);
          break;
      }
    }
    // End of stream, a stop or another node's error: the sink finishes (a
    // recording is finalized). Its own failure, or abort(): torn down.
    if (unhealthy) ended = false;
    if (!ended) {
      node.sink->abort();
    } else if (!hard_stop.load()) {
      if (Status st = node.sink->finish(); !st.ok()) fail(node, st.error());
    }
  }

  FrameAccounting accounting() const {
    FrameAccounting a;
    a.source_frames = source_frames.load();
    a.produced = produced.load();
    a.consumed = consumed.load();
    for (std::size_t r = 0; r < kReasons; ++r)
      a.dropped[kDropNames[r]] = dropped[r].load();
    return a;
  }
};

Graph::Graph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

Graph::~Graph() {
  if (impl_ && impl_->started && !impl_->joined) {
    stop();
    (void)wait();
  }
}

const GraphPlan& Graph::plan() const noexcept {
  return impl_->plan;
}

bool Graph::running() const noexcept {
  return impl_->started && !impl_->joined;
}

bool Graph::done() const noexcept {
  return impl_->started && impl_->live_threads.load() == 0;
}

Status Graph::start() {
  if (impl_->started) {
    return failed_precondition("graph '" + impl_->plan.graph +
                               "' was already started; build a new graph to run again");
  }
  impl_->t0 = std::chrono::steady_clock::now();
  impl_->started = true;
  // Every thread counted before the first starts: the count reaches 0 only
  // when all have ended.
  impl_->live_threads.store(static_cast<int>(impl_->nodes.size()));
  impl_->sources_running.store(static_cast<int>(impl_->streams.size()));
  // Consumers first, so the sources find someone waiting.
  for (auto it = impl_->nodes.rbegin(); it != impl_->nodes.rend(); ++it) {
    NodeRt& n = *it;
    Impl* g = impl_.get();
    try {
      n.thread = std::thread([g, &n] {
        switch (n.plan.kind) {
          case NodeKind::Source:
            g->run_source(n);
            g->source_done();
            break;
          case NodeKind::Stage:
            g->run_stage(n);
            break;
          case NodeKind::Sink:
            g->run_sink(n);
            break;
        }
        g->thread_done();
      });
    } catch (const std::system_error& e) {
      for (auto rest = it; rest != impl_->nodes.rend(); ++rest) {
        g->thread_done();  // this node and the ones never started
        if (rest->plan.kind == NodeKind::Source) g->source_done();
      }
      g->fail(n, resource_exhausted(std::string("cannot start a thread: ") + e.what()));
      return {};
    }
  }
  const bool watched = std::any_of(impl_->streams.begin(), impl_->streams.end(), [](StreamRt* s) {
    return s->options.stall_timeout.count() > 0;
  });
  if (watched) {
    try {
      impl_->watchdog = std::thread([g = impl_.get()] { g->watch_streams(); });
    } catch (const std::system_error& e) {
      impl_->fail(impl_->nodes.front(),
                  resource_exhausted(std::string("cannot start the stream watchdog: ") + e.what()));
    }
  }
  return {};
}

void Graph::stop() {
  if (impl_->started && !impl_->joined) impl_->stop_all(/*hard=*/false);
}

void Graph::abort() {
  if (impl_->started && !impl_->joined) impl_->stop_all(/*hard=*/true);
}

Result<RunReport> Graph::wait() {
  if (!impl_->started)
    return failed_precondition("graph '" + impl_->plan.graph + "' was not started");
  if (!impl_->joined) {
    for (auto& n : impl_->nodes) {
      if (n.thread.joinable()) n.thread.join();
    }
    if (impl_->watchdog.joinable()) impl_->watchdog.join();
    impl_->joined = true;
    impl_->seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - impl_->t0).count();
  }
  {
    std::lock_guard lock(impl_->error_mutex);
    if (impl_->error) return *impl_->error;
  }
  RunReport r;
  r.frames = impl_->accounting();
  r.seconds = impl_->seconds;
  for (const auto& e : impl_->edges)
    r.edge_frames[e->plan.name] = e->frames.load();
  for (const auto& n : impl_->nodes) {
    if (n.plan.kind == NodeKind::Sink) r.latency[n.plan.name] = n.counters->latency.summary();
  }
  return r;
}

Result<RunReport> Graph::run() {
  NEAT_RETURN_IF_ERROR(start());
  return wait();
}

FrameAccounting Graph::frames() const {
  return impl_->accounting();
}

GraphStats Graph::stats() const {
  GraphStats g;
  g.graph = impl_->plan.graph;
  if (impl_->started.load()) {
    const std::int64_t finished = impl_->finished_ns.load();
    g.running = finished < 0;
    g.seconds =
        finished >= 0
            ? static_cast<double>(finished) * 1e-9
            : std::chrono::duration<double>(std::chrono::steady_clock::now() - impl_->t0).count();
  }
  g.frames = impl_->accounting();
  for (const NodeRt& n : impl_->nodes) {
    NodeStats s;
    s.name = n.plan.name;
    s.kind = n.plan.kind;
    const NodeCounters& c = *n.counters;
    s.frames_in = c.frames_in.load(std::memory_order_relaxed);
    s.frames_out = c.frames_out.load(std::memory_order_relaxed);
    for (std::size_t r = 0; r < kReasons; ++r)
      s.dropped[kDropNames[r]] = c.dropped[r].load(std::memory_order_relaxed);
    s.busy.bounds.assign(kBusyBounds.begin(), kBusyBounds.end());
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b < c.busy.size(); ++b) {
      cumulative += c.busy[b].load(std::memory_order_relaxed);
      if (b < kBusyBounds.size()) s.busy.cumulative.push_back(cumulative);
    }
    s.busy.count = cumulative;
    s.busy.sum_seconds = static_cast<double>(c.busy_ns.load(std::memory_order_relaxed)) * 1e-9;
    if (n.plan.kind != NodeKind::Source) {
      s.busy_summary = c.busy_log.summary();
      s.queue_wait = c.queue_wait.summary();
    }
    if (n.plan.kind == NodeKind::Sink) {
      s.latency = c.latency.summary();
      s.latency_histogram.bounds.assign(kLatencyBounds.begin(), kLatencyBounds.end());
      std::uint64_t cum = 0;
      for (std::size_t b = 0; b < c.latency_buckets.size(); ++b) {
        cum += c.latency_buckets[b].load(std::memory_order_relaxed);
        if (b < kLatencyBounds.size()) s.latency_histogram.cumulative.push_back(cum);
      }
      s.latency_histogram.count = cum;
      s.latency_histogram.sum_seconds =
          static_cast<double>(c.latency_ns.load(std::memory_order_relaxed)) * 1e-9;
    }
    if (n.pool && n.plan.kind == NodeKind::Stage) {
      g.pools.push_back({"stage '" + n.plan.name + "'", n.plan.output.bytes(), n.plan.pool_buffers,
                         n.pool->stats().peak_in_use_buffers, n.plan.allocated_by});
    }
    g.nodes.push_back(std::move(s));
  }
  g.frame_memory_bytes = impl_->plan.frame_memory_bytes();
  for (const auto& e : impl_->edges) {
    EdgeStats s;
    s.name = e->plan.name;
    s.from = e->plan.from;
    s.to = e->plan.to;
    s.frames = e->frames.load(std::memory_order_relaxed);
    s.queue_depth = e->queue.size();
    s.capacity = e->plan.capacity;
    g.edges.push_back(std::move(s));
    if (!e->plan.conversions.empty()) {
      g.pools.push_back({"edge '" + e->plan.name + "' conversions",
                         e->plan.consumed.bytes(),
                         e->plan.pool_buffers,
                         e->pool->stats().peak_in_use_buffers,
                         {}});
    }
  }
  const std::int64_t now = steady_ns();
  for (const StreamRt* st : impl_->streams)
    g.streams.push_back(st->stats(now));
  return g;
}

std::string Graph::prometheus_text() const {
  return graph_prometheus_text({stats()});
}

std::vector<RuleBreach> Graph::rule_breaches() const {
  std::vector<RuleBreach> out;
  for (const auto& r : impl_->rules) {
    auto b = r.breaches();
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

// ---- build --------------------------------------------------------------------

namespace detail {

Graph make_graph(GraphPlan plan, std::vector<NodeRt> nodes, std::vector<RuleRegistration> rules) {
  auto impl = std::make_unique<Graph::Impl>();
  impl->plan = std::move(plan);
  // The edges' contexts point at the plan's strings: made once the plan is in place.
  for (const EdgePlan& ep : impl->plan.edges) {
    impl->edges.push_back(
        std::make_unique<EdgeRt>(ep, ep.capacity, impl->plan.graph, impl->plan.threads.kernels));
  }
  impl->nodes = std::move(nodes);
  std::int32_t sources = 0;
  for (NodeRt& n : impl->nodes) {
    if (n.plan.kind == NodeKind::Source) {
      n.stream_index = sources++;
      n.stream = std::make_unique<StreamRt>();
      n.stream->index = n.stream_index;
      n.stream->name = intern_stream_name(n.plan.name);
      n.stream->options = n.plan.source;
      impl->streams.push_back(n.stream.get());
    }
    if (n.in_edges.size() < 2) continue;
    n.doorbell = std::make_unique<Doorbell>();
    for (int e : n.in_edges)
      impl->edges[static_cast<std::size_t>(e)]->queue.set_doorbell(n.doorbell.get());
  }
  for (auto& e : impl->edges) {
    for (std::size_t i = 0; i < impl->nodes.size(); ++i) {
      if (impl->nodes[i].plan.name == e->plan.to) e->to = static_cast<int>(i);
    }
  }
  impl->rules = std::move(rules);
  return Graph(std::move(impl));
}

}  // namespace detail

}  // namespace neat

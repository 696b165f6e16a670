// Internal to the graph (not installed): the runtime of a built graph, a
// thread per node, a bounded queue per edge, the edges' implicit
// conversions, exact frame accounting. graph_runtime.cpp holds the stage
// and sink threads and the public Graph calls, graph_streams.cpp the source
// threads and their supervision.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>

#include "neat/stages/graph.hpp"
#include "neat/stages/internal/graph_impl.hpp"
#include "neat/telemetry/context.hpp"
#include "neat/telemetry/event_sink.hpp"

namespace neat {

namespace detail {

inline constexpr auto kPollSlice = std::chrono::milliseconds(100);

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

}  // namespace detail

// Internal TUs only: the runtime speaks the detail vocabulary throughout.
using namespace detail;  // NOLINT(google-build-using-namespace)

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

  // The source threads and their supervision (graph_streams.cpp).
  enum class SourceEnd { Ended, Limit, Stalled, Error, Stopped };
  struct SourceRun {
    SourcePacing pacing;
    std::int64_t frame = 0;    // the stream's frame numbers (skipped frames too), across restarts
    std::int64_t emitted = 0;  // frames handed on (the --frames limit counts these)
    int attempt = 0;           // failed restart attempts since the last frame
    std::uint64_t seed = 0;    // restart jitter
  };
  void run_source(NodeRt& node);
  SourceEnd pump_source(NodeRt& node, SourceRun& run, ScopedContext& scope,
                        std::optional<Error>& down_error);
  bool down(NodeRt& node, SourceEnd end, const std::optional<Error>& down_error);
  bool restart(NodeRt& node, SourceRun& run);
  bool stopped(StreamRt& st);
  void watch_streams();

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
          // The older frame, of its own stream: this one took its place.
          drop(node, kSinkOverflow, node.sink->dropped_stream());
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

}  // namespace neat

// Internal to the graph (not installed): the declarations the builder, the
// planner and the runtime share. graph.cpp is the public API (builder,
// GraphPlan, FrameAccounting), graph_explain.cpp the plan as text,
// graph_plan.cpp build() as named steps, graph_runtime.cpp the threads,
// queues and accounting.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "neat/stages/graph.hpp"
#include "neat/stages/queue.hpp"
#include "neat/storage/heap.hpp"
#include "neat/telemetry/duration_histogram.hpp"
#include "neat/telemetry/units.hpp"

namespace neat::detail {

inline std::string_view node_kind_text(NodeKind k) {
  switch (k) {
    case NodeKind::Source:
      return "source";
    case NodeKind::Stage:
      return "stage";
    case NodeKind::Sink:
      return "sink";
  }
  return "?";
}

template <class T>
inline bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

struct NodeDecl {
  std::string name;
  NodeKind kind = NodeKind::Stage;
  std::unique_ptr<Source> source;
  std::unique_ptr<Stage> stage;
  std::shared_ptr<Sink> sink;
  StageOptions options;
  SourceOptions source_options;
};

struct EdgeDecl {
  std::string from, to;
  EdgeOptions options;
};

enum DropReason : std::size_t { kStopped, kStageError, kSinkOverflow, kFiltered, kLate, kReasons };
inline constexpr std::array<const char*, kReasons> kDropNames = {
    "stopped", "stage_error", "sink_overflow", "filtered", "late"};

// Busy-time histogram bounds of the live metrics, seconds.
inline constexpr std::array<double, 12> kBusyBounds = {1e-5, 5e-5, 1e-4,   5e-4, 1e-3, 2.5e-3,
                                                       5e-3, 1e-2, 2.5e-2, 5e-2, 0.1,  1.0};

// Latency histogram bounds of the live metrics, seconds: 34 and 67 ms sit just
// above the 30 and 15 fps frame intervals.
inline constexpr std::array<double, 14> kLatencyBounds = {
    1e-3, 2.5e-3, 5e-3, 1e-2, 2e-2, 3.4e-2, 5e-2, 6.7e-2, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0};

inline std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A node's live counters: relaxed atomics, written by the node's thread,
// read by stats() from any thread (no lock, no allocation per frame).
struct NodeCounters {
  std::atomic<std::uint64_t> frames_in{0};
  std::atomic<std::uint64_t> frames_out{0};
  std::array<std::atomic<std::uint64_t>, kReasons> dropped{};
  std::array<std::atomic<std::uint64_t>, kBusyBounds.size() + 1> busy{};  // per bucket, +Inf last
  std::atomic<std::uint64_t> busy_ns{0};

  DurationRecorder busy_log;    // the same as busy, for percentiles
  DurationRecorder queue_wait;  // in the input edge's queue
  DurationRecorder latency;     // sinks: capture to taken
  std::array<std::atomic<std::uint64_t>, kLatencyBounds.size() + 1> latency_buckets{};
  std::atomic<std::uint64_t> latency_ns{0};

  void add_busy(std::chrono::steady_clock::duration d) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    const double s = static_cast<double>(ns) * 1e-9;
    std::size_t b = 0;
    while (b < kBusyBounds.size() && s > kBusyBounds[b])
      ++b;
    busy[b].fetch_add(1, std::memory_order_relaxed);
    busy_ns.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
    busy_log.add(ns);
  }
  void add_latency(std::int64_t ns) {
    const double s = static_cast<double>(ns) * 1e-9;
    std::size_t b = 0;
    while (b < kLatencyBounds.size() && s > kLatencyBounds[b])
      ++b;
    latency_buckets[b].fetch_add(1, std::memory_order_relaxed);
    latency_ns.fetch_add(static_cast<std::uint64_t>(std::max<std::int64_t>(ns, 0)),
                         std::memory_order_relaxed);
    latency.add(ns);
  }
};

struct Item {
  NeatTensor tensor;
  std::int64_t frame = -1;
  std::int64_t queued_ns = 0;  // steady clock, when it entered the edge's queue
};

// A pool recycling up to `buffers` frames of `frame_bytes` (the memory plan's
// count): it grows on demand to what is really in flight together, never
// beyond what it keeps, and frees a buffer allocated beyond the plan when it
// comes back. A little room (64 KiB) for stages whose outputs vary in size.
inline HeapPoolConfig pool_config(int buffers, std::int64_t frame_bytes) {
  HeapPoolConfig c;
  c.max_cached_buffers = std::max(buffers, 4);
  const std::int64_t page = 4096;
  c.max_cached_bytes = static_cast<std::int64_t>(std::max(buffers, 1)) *
                           ((std::max<std::int64_t>(frame_bytes, 0) + page - 1) / page * page) +
                       (std::int64_t{64} << 10);
  c.prefill_buffers = 0;
  return c;
}

struct EdgeRt {
  EdgePlan plan;
  std::string requested_by;
  BoundedQueue<Item> queue;
  std::shared_ptr<HeapPool> pool;
  std::atomic<std::uint64_t> frames{0};
  int to = -1;  ///< the consumer's index in the graph's nodes
  /// One context per planned conversion: its stage runs implicitly, under the
  /// edge's policy, into the edge's pool.
  std::vector<StageContext> contexts;
  EdgeRt(EdgePlan p, std::size_t capacity, std::string_view graph, int kernel_threads)
      : plan(std::move(p)),
        requested_by("edge '" + plan.name + "'"),
        queue(capacity),
        pool(HeapPool::create(pool_config(plan.pool_buffers, plan.consumed.bytes()))) {
    for (const PlannedConversion& c : plan.conversions) {
      StageContext ctx;
      ctx.graph = graph;
      ctx.stage = plan.to;
      ctx.allocator = pool.get();
      ctx.implicit = true;
      ctx.policy = plan.policy;
      ctx.requested_by = requested_by;
      ctx.fix = c.fix;
      ctx.kernel_threads = kernel_threads;
      contexts.push_back(ctx);
    }
  }
};

// One stream's live state: written by its source's thread (and the
// watchdog: state, interrupt), read by stats() from any thread.
struct StreamRt {
  std::int32_t index = -1;
  std::string_view name;  ///< interned (intern_stream_name)
  SourceOptions options;
  std::atomic<int> state{static_cast<int>(StreamState::Starting)};
  std::atomic<std::int64_t> last_frame_ns{-1};  ///< steady clock
  /// Since when the source has been asked for its next frame (steady
  /// clock; -1: not asking now, e.g. waiting for room downstream, which is
  /// backpressure, not a stall).
  std::atomic<std::int64_t> asking_since_ns{-1};
  std::atomic<std::uint64_t> frames{0}, restarts{0}, skipped{0};
  std::array<std::atomic<std::uint64_t>, kReasons> dropped{};
  /// What the source's next() watches: the graph's stop, or the watchdog
  /// seeing a stall.
  std::atomic<bool> interrupt{false};
  mutable std::mutex mutex;  ///< guards last_error
  std::string last_error;

  StreamState current() const noexcept { return static_cast<StreamState>(state.load()); }
  StreamStats stats(std::int64_t now_ns) const;
};

/// Moves `s` to `state` with the reason: last_error (when going down) and a
/// "stream" record to the event sinks (traces).
void set_stream_state(std::string_view graph, StreamRt& s, StreamState state,
                      std::string_view reason);
/// The watchdog's state change: Up -> Stalled when the source has been
/// asked for a frame for longer than the stall timeout (its next() is then
/// interrupted).
void check_stall(std::string_view graph, StreamRt& s, std::int64_t now_ns);
/// The wait before restart attempt `attempt` (0-based): backoff_min doubled
/// per attempt up to backoff_max, plus up to 25% jitter.
std::chrono::milliseconds restart_delay(const SourceOptions& o, int attempt, std::uint64_t& seed);

// What a source's frames go through on their way out: the rate limit (by
// the frames' timestamps) and timestamps that continue across restarts.
class SourcePacing {
 public:
  explicit SourcePacing(double rate)
      : period_ns_(rate > 0 ? static_cast<std::int64_t>(1e9 / rate) : 0) {}
  /// False: skip this frame (over the rate). `meta`'s pts is shifted to
  /// follow the stream's last frame after a restart.
  bool admit(FrameMeta& meta);
  /// The source was restarted: its next frame's timestamps start afresh.
  void restarted() noexcept { restarted_ = true; }

 private:
  std::int64_t period_ns_;
  std::int64_t next_due_ = -1;
  std::int64_t shift_ = 0;
  std::int64_t last_pts_ = -1, last_step_ = 0;
  bool restarted_ = false;
};

struct NodeRt {
  NodePlan plan;
  std::unique_ptr<Source> source;
  std::unique_ptr<Stage> stage;
  std::shared_ptr<Sink> sink;
  /// Its input edges: one, or one per stream feeding it (then it takes
  /// them round-robin and `doorbell` wakes it when any has a frame).
  std::vector<int> in_edges;
  std::unique_ptr<Doorbell> doorbell;
  std::size_t next_input = 0;        ///< round-robin: the input to look at first
  std::int32_t stream_index = -1;    ///< sources: their stream's index (plan order)
  std::unique_ptr<StreamRt> stream;  ///< sources: their stream's state
  std::vector<int> out_edges;
  std::shared_ptr<HeapPool> pool;
  std::thread thread;
  std::unique_ptr<NodeCounters> counters = std::make_unique<NodeCounters>();
};

/// The runnable graph from its plan, its nodes (in plan order) and its rules;
/// the edges' runtime (queues, pools, implicit stages) is made from the plan
/// (graph_runtime.cpp).
Graph make_graph(GraphPlan plan, std::vector<NodeRt> nodes, std::vector<RuleRegistration> rules);

}  // namespace neat::detail

namespace neat {

struct GraphBuilder::Impl {
  using NodeDecl = detail::NodeDecl;
  using EdgeDecl = detail::EdgeDecl;

  std::string name;
  std::optional<ConversionPolicy> policy;
  std::int64_t max_frame_memory = 0;
  std::int64_t max_source_frames = 0;
  std::vector<CopyBudget> budgets;
  std::vector<SteadyStateRule> rules;
  std::vector<NodeDecl> nodes;
  std::vector<EdgeDecl> edges;
  std::vector<std::string> problems;

  int find(std::string_view n) const {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].name == n) return static_cast<int>(i);
    }
    return -1;
  }
  void add(NodeDecl d) {
    if (d.name.empty()) {
      problems.push_back("a " + std::string(detail::node_kind_text(d.kind)) + " has an empty name");
    } else if (find(d.name) >= 0) {
      problems.push_back("two nodes are named '" + d.name + "'");
    }
    nodes.push_back(std::move(d));
  }
};

}  // namespace neat

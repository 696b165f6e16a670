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
#include <string>
#include <thread>
#include <vector>

#include "neat/stages/graph.hpp"
#include "neat/stages/queue.hpp"
#include "neat/storage/heap.hpp"

namespace neat::detail {

inline std::string bytes_text(std::int64_t b) {
  char buf[48];
  if (b >= (std::int64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  } else if (b >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  }
  return buf;
}

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
};

struct EdgeDecl {
  std::string from, to;
  EdgeOptions options;
};

enum DropReason : std::size_t { kStopped, kStageError, kSinkOverflow, kFiltered, kReasons };
inline constexpr std::array<const char*, kReasons> kDropNames = {"stopped", "stage_error",
                                                                 "sink_overflow", "filtered"};

// Busy-time histogram bounds of the live metrics, seconds.
inline constexpr std::array<double, 12> kBusyBounds = {1e-5, 5e-5, 1e-4,   5e-4, 1e-3, 2.5e-3,
                                                       5e-3, 1e-2, 2.5e-2, 5e-2, 0.1,  1.0};

// A node's live counters: relaxed atomics, written by the node's thread,
// read by stats() from any thread (no lock, no allocation per frame).
struct NodeCounters {
  std::atomic<std::uint64_t> frames_in{0};
  std::atomic<std::uint64_t> frames_out{0};
  std::array<std::atomic<std::uint64_t>, kReasons> dropped{};
  std::array<std::atomic<std::uint64_t>, kBusyBounds.size() + 1> busy{};  // per bucket, +Inf last
  std::atomic<std::uint64_t> busy_ns{0};

  void add_busy(std::chrono::steady_clock::duration d) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    const double s = static_cast<double>(ns) * 1e-9;
    std::size_t b = 0;
    while (b < kBusyBounds.size() && s > kBusyBounds[b])
      ++b;
    busy[b].fetch_add(1, std::memory_order_relaxed);
    busy_ns.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
  }
};

struct Item {
  NeatTensor tensor;
  std::int64_t frame = -1;
};

// A pool holding `buffers` frames: allocated together on the first frame
// (pages faulted in), then recycled. Bounded by the count, not by bytes: it
// never holds more than the frames that were in flight together.
inline HeapPoolConfig pool_config(int buffers) {
  HeapPoolConfig c;
  c.max_cached_buffers = std::max(buffers, 4);
  c.max_cached_bytes = std::int64_t{1} << 40;  // bounded by the count: frames in flight
  c.prefill_buffers = buffers;
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
  EdgeRt(EdgePlan p, std::size_t capacity, std::string_view graph)
      : plan(std::move(p)),
        requested_by("edge '" + plan.name + "'"),
        queue(capacity),
        pool(HeapPool::create(pool_config(plan.pool_buffers))) {
    for (const PlannedConversion& c : plan.conversions) {
      StageContext ctx;
      ctx.graph = graph;
      ctx.stage = plan.to;
      ctx.allocator = pool.get();
      ctx.implicit = true;
      ctx.policy = plan.policy;
      ctx.requested_by = requested_by;
      ctx.fix = c.fix;
      contexts.push_back(ctx);
    }
  }
};

struct NodeRt {
  NodePlan plan;
  std::unique_ptr<Source> source;
  std::unique_ptr<Stage> stage;
  std::shared_ptr<Sink> sink;
  int in_edge = -1;
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

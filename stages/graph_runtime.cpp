// The graph runtime: the stage and sink threads (Graph::Impl, in
// internal/graph_runtime.hpp), the public Graph calls, and make_graph. The
// source threads and their supervision are in graph_streams.cpp.
#include "neat/stages/internal/graph_runtime.hpp"

namespace neat {

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
    if (n.plan.kind == NodeKind::Sink && n.sink) {
      if (auto d = n.sink->delivery()) r.deliveries.emplace_back(n.plan.name, std::move(*d));
    }
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
    if (n.plan.kind == NodeKind::Sink && n.sink) {
      if (auto d = n.sink->delivery()) g.deliveries.emplace_back(n.plan.name, std::move(*d));
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

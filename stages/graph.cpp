#include "neat/stages/graph.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "neat/policy/color.hpp"
#include "neat/policy/policy.hpp"
#include "neat/stages/builtin.hpp"
#include "neat/stages/queue.hpp"
#include "neat/storage/heap.hpp"
#include "neat/telemetry/context.hpp"

namespace neat {
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

std::string bytes_text(std::int64_t b) {
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

std::string_view node_kind_text(NodeKind k) {
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
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The conversions an edge needs so that frames of `in` satisfy `accepts`, as
// the built-in stages that perform them, and what the consumer then receives
// (each stage's own output_spec() says so: one rule per conversion, in the
// stage). An error when no conversion leads there.
Result<std::vector<PlannedConversion>> plan_conversions(const FrameSpec& in, const Accepts& a,
                                                        std::string_view consumer, FrameSpec& out) {
  std::vector<PlannedConversion> list;
  out = in;
  const std::string before = "before '" + std::string(consumer) + "'";
  // Appends `stage` as the next conversion: its output becomes `out`.
  auto add = [&](ConversionKind kind, ConversionReason reason, std::string what,
                 std::unique_ptr<Stage> stage) -> Status {
    PlannedConversion c;
    c.fix = "insert `" + stage->describe() + "` " + before;  // its pipeline syntax, as planned
    NEAT_ASSIGN_OR_RETURN(FrameSpec next, stage->output_spec(out));
    c.kind = kind;
    c.reason = reason;
    c.what = std::move(what);
    c.bytes_per_frame = next.bytes();
    c.stage = std::move(stage);
    out = std::move(next);
    list.push_back(std::move(c));
    return {};
  };
  if (!a.devices.empty() && !contains(a.devices, out.device.type)) {
    if (!contains(a.devices, DeviceType::Cpu)) {
      return unimplemented("'" + std::string(consumer) + "' takes frames on " +
                           std::string(to_string(a.devices.front())) +
                           " only; add a transfer stage");
    }
    NEAT_RETURN_IF_ERROR(add(ConversionKind::Transfer, ConversionReason::Device,
                             to_string(out.device) + " -> cpu:0", transfer_stage(kCpu)));
  }
  if (!a.formats.empty() && !contains(a.formats, out.format)) {
    PixelFormat target = PixelFormat::None;
    if (out.is_image() && out.dtype == DType::U8) {
      // Prefer full-colour targets in this order; then whatever is accepted.
      constexpr PixelFormat kPreferred[] = {PixelFormat::RGB, PixelFormat::BGR, PixelFormat::RGBA,
                                            PixelFormat::BGRA, PixelFormat::GRAY8};
      for (PixelFormat f : kPreferred) {
        if (contains(a.formats, f) && color_conversion_supported(out.format, f)) {
          target = f;
          break;
        }
      }
      for (PixelFormat f : a.formats) {
        if (target == PixelFormat::None && f != PixelFormat::None &&
            color_conversion_supported(out.format, f)) {
          target = f;
        }
      }
    }
    if (target == PixelFormat::None) {
      return unimplemented("'" + std::string(consumer) + "' takes " + a.to_string() +
                           ", but receives " + in.to_string() +
                           " and no pixel-format conversion leads there");
    }
    std::string what = std::string(to_string(out.format)) + " -> " + std::string(to_string(target));
    if (is_planar(out.format) && target != PixelFormat::GRAY8) {
      // Which colour standard the conversion will decode with, and whether it is assumed.
      bool assumed = false;
      const Colorimetry cm =
          choose_colorimetry({}, out.colorimetry, out.width, out.height, &assumed);
      what += " (yuv " + to_string(cm) +
              (assumed ? ", assumed: GStreamer's default for the size)" : ")");
    }
    NEAT_RETURN_IF_ERROR(add(ConversionKind::Convert, ConversionReason::PixelFormat,
                             std::move(what), convert_stage(target)));
  }
  if (!a.dtypes.empty() && !contains(a.dtypes, out.dtype)) {
    if (is_planar(out.format)) {
      return unimplemented("'" + std::string(consumer) + "' takes " + a.to_string() +
                           ", but receives planar " + in.to_string() +
                           " (convert it to an interleaved format first)");
    }
    const DType target = a.dtypes.front();
    NEAT_RETURN_IF_ERROR(
        add(ConversionKind::Convert, ConversionReason::DType,
            std::string(to_string(out.dtype)) + " -> " + std::string(to_string(target)),
            cast_stage(target)));
  }
  if (!a.layouts.empty() && !contains(a.layouts, out.layout)) {
    const Layout target = a.layouts.front();
    if ((target != Layout::CHW && target != Layout::HWC) || out.shape.size() < 3 ||
        (out.layout != Layout::CHW && out.layout != Layout::HWC && out.layout != Layout::None)) {
      return unimplemented("'" + std::string(consumer) + "' takes layout " +
                           std::string(to_string(target)) + ", but receives " + in.to_string() +
                           " and no layout conversion leads there");
    }
    NEAT_RETURN_IF_ERROR(
        add(ConversionKind::Convert, ConversionReason::Layout,
            std::string(to_string(out.layout == Layout::None ? Layout::HWC : out.layout)) + " -> " +
                std::string(to_string(target)),
            layout_stage(target)));
  }
  if (a.contiguous && !out.contiguous) {
    NEAT_RETURN_IF_ERROR(
        add(ConversionKind::Pack, ConversionReason::StrideMismatch, "pack", pack_stage()));
    list.back().fix += " (or have the producer emit packed frames)";
  }
  return list;
}

}  // namespace

// ---- plan ---------------------------------------------------------------------

std::int64_t EdgePlan::bytes_per_frame() const noexcept {
  std::int64_t b = 0;
  for (const auto& c : conversions)
    b += c.bytes_per_frame;
  if (copy_on_write) b += consumed.bytes();
  return b;
}

std::int64_t GraphPlan::edge_bytes_per_frame() const noexcept {
  std::int64_t b = 0;
  for (const auto& e : edges)
    b += e.bytes_per_frame();
  return b;
}

std::int64_t GraphPlan::inner_bytes_per_frame() const noexcept {
  std::int64_t b = 0;
  for (const auto& n : nodes) {
    for (const auto& c : n.inside)
      b += c.bytes_written;
  }
  return b;
}

std::string GraphPlan::explain() const {
  std::string out = "graph '" + graph + "' (policy " + std::string(to_string(policy)) + ")\n";
  out += "nodes:\n";
  std::size_t width = 0;
  for (const auto& n : nodes)
    width = std::max(width, n.name.size());
  for (const auto& n : nodes) {
    std::string line = "  [" + std::string(node_kind_text(n.kind)) + "] ";
    line.resize(11, ' ');
    std::string name = n.name;
    name.resize(width, ' ');
    line += name + "  " + n.description;
    if (n.kind != NodeKind::Sink) line += "  -> " + n.output.to_string();
    if (n.policy) line += "  (policy " + std::string(to_string(*n.policy)) + ")";
    if (n.kind == NodeKind::Stage) line += "  [pool " + std::to_string(n.pool_buffers) + "]";
    out += line + "\n";
    for (const auto& c : n.inside) {
      out += "      inside: " + c.element + " " + std::string(to_string(c.kind)) + " (" +
             std::string(to_string(c.reason)) + ") " + c.what + ": " + bytes_text(c.bytes_written) +
             " per frame, " +
             (c.explicit_call ? "explicit (in the description)"
                              : "implicit (inserted by NeatTensor)") +
             "\n";
    }
  }
  out += "edges:\n";
  for (const auto& e : edges) {
    out += "  " + e.name + "  [" + e.produced.to_string() + "]  policy " +
           std::string(to_string(e.policy)) + ", queue " + std::to_string(e.capacity) +
           (e.conversions.empty() ? "" : ", pool " + std::to_string(e.pool_buffers)) + "\n";
    if (e.conversions.empty() && !e.copy_on_write) {
      out += "      hand-over, no copy\n";
    }
    for (const auto& c : e.conversions) {
      out += "      " + std::string(to_string(c.kind)) + " (" + std::string(to_string(c.reason)) +
             ") " + c.what + ": " + bytes_text(c.bytes_per_frame) + " per frame  [fix: " + c.fix +
             "]\n";
    }
    if (e.copy_on_write) {
      out += "      copy-on-write: '" + e.to + "' writes frames it shares with " +
             std::to_string(e.consumers_sharing - 1) +
             " other consumer(s): " + bytes_text(e.consumed.bytes()) + " per frame\n";
    } else if (e.consumers_sharing > 1) {
      out += "      shared read-only with " + std::to_string(e.consumers_sharing - 1) +
             " other consumer(s)\n";
    }
  }
  out += "expected bytes copied per frame on edges: " + bytes_text(edge_bytes_per_frame()) + "\n";
  if (const std::int64_t inner = inner_bytes_per_frame(); inner > 0) {
    out += "expected bytes converted per frame inside GStreamer: " + bytes_text(inner) + "\n";
  }
  return out;
}

std::uint64_t FrameAccounting::dropped_total() const noexcept {
  std::uint64_t n = 0;
  for (const auto& [reason, count] : dropped)
    n += count;
  return n;
}

std::string FrameAccounting::to_string() const {
  std::string out = std::to_string(source_frames) + " source frames, " + std::to_string(produced) +
                    " deliveries: " + std::to_string(consumed) + " consumed";
  for (const auto& [reason, count] : dropped) {
    if (count > 0) out += ", " + std::to_string(count) + " dropped (" + reason + ")";
  }
  return out;
}

// ---- builder ------------------------------------------------------------------

namespace {

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
constexpr std::array<const char*, kReasons> kDropNames = {"stopped", "stage_error", "sink_overflow",
                                                          "filtered"};

struct Item {
  NeatTensor tensor;
  std::int64_t frame = -1;
};

// A pool holding `buffers` frames: allocated together on the first frame
// (pages faulted in), then recycled. Bounded by the count, not by bytes: it
// never holds more than the frames that were in flight together.
HeapPoolConfig pool_config(int buffers) {
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
};

}  // namespace

struct GraphBuilder::Impl {
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
      problems.push_back("a " + std::string(node_kind_text(d.kind)) + " has an empty name");
    } else if (find(d.name) >= 0) {
      problems.push_back("two nodes are named '" + d.name + "'");
    }
    nodes.push_back(std::move(d));
  }
};

GraphBuilder::GraphBuilder(std::string name) : impl_(std::make_unique<Impl>()) {
  impl_->name = std::move(name);
}
GraphBuilder::GraphBuilder(GraphBuilder&&) noexcept = default;
GraphBuilder& GraphBuilder::operator=(GraphBuilder&&) noexcept = default;
GraphBuilder::~GraphBuilder() = default;

GraphBuilder& GraphBuilder::set_policy(ConversionPolicy policy) {
  impl_->policy = policy;
  return *this;
}
GraphBuilder& GraphBuilder::add_budget(CopyBudget budget) {
  impl_->budgets.push_back(std::move(budget));
  return *this;
}
GraphBuilder& GraphBuilder::add_steady_state_rule(SteadyStateRule rule) {
  impl_->rules.push_back(std::move(rule));
  return *this;
}

GraphBuilder& GraphBuilder::add_source(std::string name, std::unique_ptr<Source> source) {
  if (!source) impl_->problems.push_back("source '" + name + "' is null");
  NodeDecl d;
  d.name = std::move(name);
  d.kind = NodeKind::Source;
  d.source = std::move(source);
  impl_->add(std::move(d));
  return *this;
}

GraphBuilder& GraphBuilder::add_stage(std::string name, std::unique_ptr<Stage> stage,
                                      StageOptions options) {
  if (!stage) impl_->problems.push_back("stage '" + name + "' is null");
  NodeDecl d;
  d.name = std::move(name);
  d.kind = NodeKind::Stage;
  d.stage = std::move(stage);
  d.options = options;
  impl_->add(std::move(d));
  return *this;
}

GraphBuilder& GraphBuilder::add_sink(std::string name, std::shared_ptr<Sink> sink) {
  if (!sink) impl_->problems.push_back("sink '" + name + "' is null");
  NodeDecl d;
  d.name = std::move(name);
  d.kind = NodeKind::Sink;
  d.sink = std::move(sink);
  impl_->add(std::move(d));
  return *this;
}

Status GraphBuilder::connect(std::string_view from, std::string_view to, EdgeOptions options) {
  const std::string edge = std::string(from) + "->" + std::string(to);
  auto problem = [&](std::string why) -> Status {
    impl_->problems.push_back("edge '" + edge + "': " + why);
    return invalid_argument("graph '" + impl_->name + "', edge '" + edge + "': " + why);
  };
  const int f = impl_->find(from);
  const int t = impl_->find(to);
  if (f < 0) return problem("no node is named '" + std::string(from) + "'");
  if (t < 0) return problem("no node is named '" + std::string(to) + "'");
  if (f == t) return problem("a node cannot feed itself");
  if (impl_->nodes[static_cast<std::size_t>(f)].kind == NodeKind::Sink) {
    return problem("'" + std::string(from) + "' is a sink: it has no output");
  }
  if (impl_->nodes[static_cast<std::size_t>(t)].kind == NodeKind::Source) {
    return problem("'" + std::string(to) + "' is a source: it has no input");
  }
  if (options.capacity == 0) return problem("queue capacity must be at least 1");
  for (const auto& e : impl_->edges) {
    if (e.to == to) {
      return problem("'" + std::string(to) + "' already takes its input from '" + e.from +
                     "' (a stage or sink has exactly one input)");
    }
  }
  impl_->edges.push_back(EdgeDecl{std::string(from), std::string(to), options});
  return {};
}

// ---- graph runtime ------------------------------------------------------------

struct Graph::Impl {
  GraphPlan plan;
  std::vector<NodeRt> nodes;
  std::vector<std::unique_ptr<EdgeRt>> edges;
  std::vector<RuleRegistration> rules;
  std::atomic<bool> stop{false};
  bool started = false;
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

  void drop(DropReason r, std::uint64_t n = 1) {
    dropped[r].fetch_add(n, std::memory_order_relaxed);
  }

  void abort_all() {
    stop.store(true);
    for (auto& e : edges) {
      auto left = e->queue.abort();
      if (!left.empty()) drop(kStopped, left.size());
    }
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
    abort_all();
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
      if (e.queue.push(copy) == BoundedQueue<Item>::PushResult::Pushed) {
        e.frames.fetch_add(1, std::memory_order_relaxed);
      } else {
        drop(kStopped);
      }
    }
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
      NEAT_ASSIGN_OR_RETURN(t, e.plan.conversions[i].stage->process(std::move(t), ctx));
    }
    return t;
  }

  void run_source(NodeRt& node) {
    ConversionContext cx;
    cx.graph = plan.graph;
    cx.stage = node.plan.name;
    ScopedContext scope(cx);
    std::int64_t frame = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      scope.set_frame(frame);  // what the source records while producing it (GStreamer elements)
      auto next = guarded([&] { return node.source->next(stop); }, "next()");
      if (!next.ok()) {
        fail(node, next.error());
        break;
      }
      if (!next->has_value()) break;  // end of stream
      source_frames.fetch_add(1, std::memory_order_relaxed);
      produced.fetch_add(node.out_edges.size(), std::memory_order_relaxed);
      Item item{std::move(**next), frame++};
      emit(node, item);
    }
    close_outputs(node);
    node.source->close();
  }

  // Pops the next item of the node's input; false at end of stream or stop.
  bool pop(NodeRt& node, Item& item) {
    EdgeRt& in = *edges[static_cast<std::size_t>(node.in_edge)];
    for (;;) {
      switch (in.queue.pop(item, kPollSlice)) {
        case BoundedQueue<Item>::PopResult::Popped:
          return true;
        case BoundedQueue<Item>::PopResult::Timeout:
          continue;
        case BoundedQueue<Item>::PopResult::Closed:
        case BoundedQueue<Item>::PopResult::Aborted:
          return false;
      }
    }
  }

  void run_stage(NodeRt& node) {
    EdgeRt& in = *edges[static_cast<std::size_t>(node.in_edge)];
    ConversionContext cx;
    cx.graph = plan.graph;
    cx.stage = node.plan.name;
    cx.edge = in.plan.name;
    cx.policy = in.plan.policy;
    ScopedContext scope(cx);
    StageContext sc;
    sc.graph = plan.graph;
    sc.stage = node.plan.name;
    sc.allocator = node.pool.get();
    Item item;
    while (pop(node, item)) {
      scope.set_frame(item.frame);
      sc.frame = item.frame;
      auto input = convert(in, std::move(item.tensor), item.frame);
      if (!input.ok()) {
        drop(kStageError);
        fail(node, input.error().with_context("input edge '" + in.plan.name + "'"));
        break;
      }
      auto out = guarded([&] { return node.stage->process(std::move(*input), sc); }, "process()");
      if (!out.ok()) {
        drop(kStageError);
        fail(node, out.error());
        break;
      }
      if (!out->defined()) {
        drop(kFiltered);
        continue;
      }
      produced.fetch_add(node.out_edges.size() - 1, std::memory_order_relaxed);
      Item next{std::move(*out), item.frame};
      emit(node, next);
    }
    close_outputs(node);
  }

  void run_sink(NodeRt& node) {
    EdgeRt& in = *edges[static_cast<std::size_t>(node.in_edge)];
    ConversionContext cx;
    cx.graph = plan.graph;
    cx.stage = node.plan.name;
    cx.edge = in.plan.name;
    cx.policy = in.plan.policy;
    ScopedContext scope(cx);
    Item item;
    bool ended = true;
    while (pop(node, item)) {
      scope.set_frame(item.frame);
      auto input = convert(in, std::move(item.tensor), item.frame);
      if (!input.ok()) {
        drop(kStageError);
        fail(node, input.error().with_context("input edge '" + in.plan.name + "'"));
        ended = false;
        break;
      }
      auto outcome =
          guarded([&] { return node.sink->consume(std::move(*input), item.frame); }, "consume()");
      if (!outcome.ok()) {
        drop(kStageError);
        fail(node, outcome.error());
        ended = false;
        break;
      }
      switch (*outcome) {
        case SinkOutcome::Consumed:
          consumed.fetch_add(1, std::memory_order_relaxed);
          break;
        case SinkOutcome::DroppedOldest:
          drop(kSinkOverflow);  // the older frame; this one took its place
          break;
        case SinkOutcome::Stopped:
          drop(kStopped);
          break;
      }
    }
    if (ended && !in.queue.aborted()) {
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
  impl_->started = true;
  impl_->t0 = std::chrono::steady_clock::now();
  // Consumers first, so the sources find someone waiting.
  for (auto it = impl_->nodes.rbegin(); it != impl_->nodes.rend(); ++it) {
    NodeRt& n = *it;
    Impl* g = impl_.get();
    g->live_threads.fetch_add(1);
    try {
      n.thread = std::thread([g, &n] {
        switch (n.plan.kind) {
          case NodeKind::Source:
            g->run_source(n);
            break;
          case NodeKind::Stage:
            g->run_stage(n);
            break;
          case NodeKind::Sink:
            g->run_sink(n);
            break;
        }
        g->live_threads.fetch_sub(1);
      });
    } catch (const std::system_error& e) {
      g->live_threads.fetch_sub(1);
      g->fail(n, resource_exhausted(std::string("cannot start a thread: ") + e.what()));
      break;
    }
  }
  return {};
}

void Graph::stop() {
  if (impl_->started && !impl_->joined) impl_->abort_all();
}

Result<RunReport> Graph::wait() {
  if (!impl_->started)
    return failed_precondition("graph '" + impl_->plan.graph + "' was not started");
  if (!impl_->joined) {
    for (auto& n : impl_->nodes) {
      if (n.thread.joinable()) n.thread.join();
    }
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
  return r;
}

Result<RunReport> Graph::run() {
  NEAT_RETURN_IF_ERROR(start());
  return wait();
}

FrameAccounting Graph::frames() const {
  return impl_->accounting();
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

namespace {

constexpr int kMaxPoolBuffers = 64;

// Pool sizes: how many of a node's output frames can be alive at once. A
// frame is alive in its producer's hands (1), in each edge queue downstream
// (its capacity), in the consumer's process() (1), and further on when the
// consumer may forward its input (a view, an in-place result), then in what
// the sinks keep. Reverse topological order: consumers before producers.
void size_pools(GraphPlan& plan, const std::vector<int>& order,
                const std::vector<NodeDecl>& decls) {
  const std::size_t n = plan.nodes.size();
  std::map<std::string, std::size_t, std::less<>> index;
  for (std::size_t k = 0; k < n; ++k)
    index[plan.nodes[k].name] = k;
  std::vector<std::int64_t> downstream(n, 0), held(n, 1);
  for (std::size_t k = n; k-- > 0;) {
    for (const EdgePlan& e : plan.edges) {
      if (e.from != plan.nodes[k].name) continue;
      downstream[k] += static_cast<std::int64_t>(e.capacity) + held[index.at(e.to)];
    }
    const NodeDecl& d = decls[static_cast<std::size_t>(order[k])];
    if (d.kind == NodeKind::Sink) {
      held[k] = std::max(1, d.sink->max_frames_held());
    } else if (d.kind == NodeKind::Stage) {
      const auto in = std::find_if(plan.edges.begin(), plan.edges.end(),
                                   [&](const EdgePlan& e) { return e.to == plan.nodes[k].name; });
      const bool forwards = in != plan.edges.end() && d.stage->may_forward_input(in->consumed);
      held[k] = 1 + (forwards ? downstream[k] : 0);
    }
  }
  auto clamp = [](std::int64_t v) {
    return static_cast<int>(std::min<std::int64_t>(v, kMaxPoolBuffers));
  };
  for (std::size_t k = 0; k < n; ++k) {
    if (plan.nodes[k].kind == NodeKind::Stage)
      plan.nodes[k].pool_buffers = clamp(1 + downstream[k]);
  }
  for (EdgePlan& e : plan.edges) {
    if (!e.conversions.empty()) e.pool_buffers = clamp(held[index.at(e.to)]);
  }
}

}  // namespace

Result<Graph> GraphBuilder::build() {
  Impl& b = *impl_;
  std::vector<std::string> problems = b.problems;
  const std::size_t n = b.nodes.size();
  if (n == 0) problems.push_back("the graph has no nodes");
  std::vector<std::vector<int>> outs(n);
  std::vector<int> in_edge(n, -1);
  for (std::size_t i = 0; i < b.edges.size(); ++i) {
    const int f = b.find(b.edges[i].from), t = b.find(b.edges[i].to);
    if (f < 0 || t < 0) continue;  // reported by connect()
    outs[static_cast<std::size_t>(f)].push_back(static_cast<int>(i));
    in_edge[static_cast<std::size_t>(t)] = static_cast<int>(i);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const NodeDecl& d = b.nodes[i];
    if (d.kind != NodeKind::Source && in_edge[i] < 0) {
      problems.push_back(std::string(node_kind_text(d.kind)) + " '" + d.name + "' has no input");
    }
    if (d.kind != NodeKind::Sink && outs[i].empty()) {
      problems.push_back(std::string(node_kind_text(d.kind)) + " '" + d.name +
                         "' has no output; connect it to a stage or a sink");
    }
  }
  // Topological order: breadth first from the sources (one input per node).
  std::vector<int> order;
  std::vector<bool> seen(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (b.nodes[i].kind == NodeKind::Source) {
      order.push_back(static_cast<int>(i));
      seen[i] = true;
    }
  }
  for (std::size_t k = 0; k < order.size(); ++k) {
    for (int e : outs[static_cast<std::size_t>(order[k])]) {
      const int t = b.find(b.edges[static_cast<std::size_t>(e)].to);
      if (!seen[static_cast<std::size_t>(t)]) {
        seen[static_cast<std::size_t>(t)] = true;
        order.push_back(t);
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!seen[i] && in_edge[i] >= 0) {
      problems.push_back(std::string(node_kind_text(b.nodes[i].kind)) + " '" + b.nodes[i].name +
                         "' is not reachable from any source (a cycle?)");
    }
  }
  auto fail_with = [&](std::vector<std::string> list) -> Result<Graph> {
    std::string m = "graph '" + b.name + "' cannot be built (" + std::to_string(list.size()) +
                    (list.size() == 1 ? " problem" : " problems") + "):";
    for (const auto& p : list)
      m += "\n  - " + p;
    return failed_precondition(std::move(m));
  };
  if (!problems.empty()) return fail_with(std::move(problems));

  auto impl = std::make_unique<Graph::Impl>();
  GraphPlan& plan = impl->plan;
  plan.graph = b.name;
  plan.policy = b.policy.value_or(process_policy());
  std::vector<FrameSpec> spec(n);
  std::vector<bool> spec_ok(n, false);
  std::vector<int> edge_index(b.edges.size(), -1);
  for (int idx : order) {
    const auto i = static_cast<std::size_t>(idx);
    NodeDecl& d = b.nodes[i];
    NodePlan np;
    np.name = d.name;
    np.kind = d.kind;
    if (d.kind == NodeKind::Source) {
      Result<FrameSpec> s = FrameSpec{};
      {
        // Conversions a source inserts on the user's behalf are ruled by the graph's policy.
        ScopedPolicy graph_policy(plan.policy);
        s = d.source->prepare();
      }
      np.description = d.source->describe();  // after prepare(): what it negotiated
      if (s.ok()) np.inside = d.source->inner_conversions();
      if (!s.ok()) {
        problems.push_back("source '" + d.name + "': " + s.error().message());
      } else {
        spec[i] = *s;
        spec_ok[i] = true;
      }
    } else {
      const auto& edge = b.edges[static_cast<std::size_t>(in_edge[i])];
      const int producer = b.find(edge.from);
      np.policy = d.options.policy;
      if (spec_ok[static_cast<std::size_t>(producer)]) {
        EdgePlan ep;
        ep.from = edge.from;
        ep.to = edge.to;
        ep.name = edge.from + "->" + edge.to;
        ep.produced = spec[static_cast<std::size_t>(producer)];
        ep.capacity = edge.options.capacity;
        ep.policy = edge.options.policy.value_or(d.options.policy.value_or(plan.policy));
        ep.consumers_sharing = static_cast<int>(outs[static_cast<std::size_t>(producer)].size());
        const Accepts accepts = d.kind == NodeKind::Stage ? d.stage->accepts() : d.sink->accepts();
        ep.copy_on_write = accepts.writes && ep.consumers_sharing > 1;
        auto conv = plan_conversions(ep.produced, accepts, d.name, ep.consumed);
        if (!conv.ok()) {
          problems.push_back("edge '" + ep.name + "': " + conv.error().message());
        } else {
          ep.conversions = std::move(*conv);
          if (ep.policy == ConversionPolicy::Strict) {
            for (const auto& c : ep.conversions) {
              problems.push_back(
                  "edge '" + ep.name + "' needs an implicit " + std::string(to_string(c.kind)) +
                  " (" + std::string(to_string(c.reason)) + ") " + c.what + ", " +
                  bytes_text(c.bytes_per_frame) + " per frame; Strict refuses it: " + c.fix +
                  ", or allow it with policy trace on this edge");
            }
          }
          if (d.kind == NodeKind::Stage) {
            auto out = d.stage->output_spec(ep.consumed);
            if (!out.ok()) {
              problems.push_back("stage '" + d.name + "': " + out.error().message());
            } else {
              spec[i] = *out;
              spec_ok[i] = true;
            }
          } else if (Status st = d.sink->prepare(ep.consumed); !st.ok()) {
            problems.push_back("sink '" + d.name + "': " + st.error().message());
          }
        }
        edge_index[static_cast<std::size_t>(in_edge[i])] = static_cast<int>(plan.edges.size());
        plan.edges.push_back(std::move(ep));
      }
      // After output_spec() / prepare(): stages may name what they decided (e.g. a
      // colour standard), sinks what their pipeline negotiated.
      np.description = d.kind == NodeKind::Stage ? d.stage->describe() : d.sink->describe();
      if (d.kind == NodeKind::Sink) np.inside = d.sink->inner_conversions();
    }
    np.output = spec[i];
    plan.nodes.push_back(std::move(np));
  }
  if (!problems.empty()) {
    for (auto& d : b.nodes) {
      if (d.source) d.source->close();
    }
    return fail_with(std::move(problems));
  }
  size_pools(plan, order, b.nodes);
  for (auto budget : b.budgets) {
    budget.graph = b.name;
    NEAT_ASSIGN_OR_RETURN(RuleRegistration r, add_copy_budget(budget));
    impl->rules.push_back(std::move(r));
  }
  for (auto rule : b.rules) {
    rule.graph = b.name;
    NEAT_ASSIGN_OR_RETURN(RuleRegistration r, neat::add_steady_state_rule(rule));
    impl->rules.push_back(std::move(r));
  }
  // Runtime structures, in plan order.
  for (const EdgePlan& ep : plan.edges) {
    impl->edges.push_back(std::make_unique<EdgeRt>(ep, ep.capacity, impl->plan.graph));
  }
  impl->nodes.reserve(order.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    const auto i = static_cast<std::size_t>(order[k]);
    NodeDecl& d = b.nodes[i];
    NodeRt rt;
    rt.plan = plan.nodes[k];
    rt.source = std::move(d.source);
    rt.stage = std::move(d.stage);
    rt.sink = std::move(d.sink);
    if (in_edge[i] >= 0) rt.in_edge = edge_index[static_cast<std::size_t>(in_edge[i])];
    for (int e : outs[i])
      rt.out_edges.push_back(edge_index[static_cast<std::size_t>(e)]);
    rt.pool = HeapPool::create(pool_config(rt.plan.pool_buffers));
    impl->nodes.push_back(std::move(rt));
  }
  b.nodes.clear();
  b.edges.clear();
  return Graph(std::move(impl));
}

}  // namespace neat

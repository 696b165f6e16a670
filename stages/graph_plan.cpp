// GraphBuilder::build(): checks the whole graph and plans it, as named steps.
#include "neat/stages/graph.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <thread>

#include "neat/kernels/color.hpp"
#include "neat/policy/policy.hpp"
#include "neat/stages/builtin.hpp"
#include "neat/stages/internal/graph_impl.hpp"

namespace neat {

using namespace detail;

namespace {

// The conversions an edge needs so that frames of `in` satisfy `accepts`, as
// the built-in stages that perform them, and what the consumer then receives
// (each stage's own output_spec() says so: one rule per conversion, in the
// stage). An error when no conversion leads there.
// A stage that says nothing of the frame rate keeps its input's.
void keep_rate(FrameSpec& next, const FrameSpec& in) {
  if (next.fps_n != 0) return;
  next.fps_n = in.fps_n;
  next.fps_d = in.fps_d;
}

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
    NEAT_RETURN_IF_ERROR(stage->prepare(out, next));
    keep_rate(next, out);
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
      const bool dense_only = std::all_of(a.formats.begin(), a.formats.end(),
                                          [](PixelFormat f) { return f == PixelFormat::None; });
      if (dense_only && out.is_image()) {  // a tensor stage (yolo, softmax...) given a frame
        return unimplemented("'" + std::string(consumer) + "' takes tensors, not images (" +
                             a.to_string() + "), but receives the frame " + in.to_string() +
                             "; put the stages that make its input before it (a detector's "
                             "decode: `preprocess ! infer model=... ! " +
                             std::string(consumer) + "`)");
      }
      std::string reachable;
      for (int f = 1; f <= static_cast<int>(PixelFormat::YV12); ++f) {
        const auto to = static_cast<PixelFormat>(f);
        if (to != out.format && out.dtype == DType::U8 &&
            color_conversion_supported(out.format, to))
          reachable += (reachable.empty() ? "" : ", ") + std::string(to_string(to));
      }
      return unimplemented(
          "'" + std::string(consumer) + "' takes " + a.to_string() + ", but receives " +
          in.to_string() + " and no pixel-format conversion leads there: " +
          (reachable.empty() ? std::string(to_string(out.format)) + " converts to no other format"
                             : std::string(to_string(out.format)) + " converts to " + reachable) +
          " (`convert format=...`)");
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

namespace {

constexpr int kMaxPoolBuffers = 1 << 16;

int clamp_buffers(std::int64_t v) {
  return static_cast<int>(std::clamp<std::int64_t>(v, 1, kMaxPoolBuffers));
}

// The memory plan: how many of each producer's frames can be alive at once.
// Every node waits for room in its output queues before it takes its next
// frame (or, a source, before it asks for one), so a node never holds a
// finished frame while it waits: while it makes one, each output queue holds
// at most capacity - 1. A producer's frames are therefore in its output
// queues (their capacity) and in their consumers' hands: a stage holds the
// one it processes (and, when it may forward its input: a view, an in-place
// result, what is in flight after it), a sink what it keeps
// (Sink::max_frames_held), a source what it keeps inside (its GStreamer
// queue). Reverse topological order: consumers before producers. Sets each
// stage's and each converting edge's pool_buffers and fills plan.memory.
void plan_memory(GraphPlan& plan, const std::vector<int>& order,
                 const std::vector<NodeDecl>& decls) {
  const std::size_t n = plan.nodes.size();
  std::map<std::string, std::size_t, std::less<>> index;
  for (std::size_t k = 0; k < n; ++k)
    index[plan.nodes[k].name] = k;
  auto decl = [&](std::size_t k) -> const NodeDecl& {
    return decls[static_cast<std::size_t>(order[k])];
  };
  std::vector<std::int64_t> downstream(n, 0), held(n, 1);
  std::vector<std::string> held_text(n);
  for (std::size_t k = n; k-- > 0;) {
    for (const EdgePlan& e : plan.edges) {
      if (e.from != plan.nodes[k].name) continue;
      downstream[k] += static_cast<std::int64_t>(e.capacity) + held[index.at(e.to)];
    }
    const NodeDecl& d = decl(k);
    if (d.kind == NodeKind::Sink) {
      held[k] = std::max(1, d.sink->max_frames_held());
      const std::string what = d.sink->frames_held_text();
      held_text[k] = std::string(d.sink->kind()) + " '" + d.name + "'" +
                     (what.empty() ? std::string() : " (" + what + ")");
    } else if (d.kind == NodeKind::Stage) {
      const auto in = std::find_if(plan.edges.begin(), plan.edges.end(),
                                   [&](const EdgePlan& e) { return e.to == plan.nodes[k].name; });
      const bool forwards = in != plan.edges.end() && d.stage->may_forward_input(in->consumed);
      held[k] = forwards ? std::max<std::int64_t>(1, downstream[k]) : 1;
      held_text[k] = "stage '" + d.name + "'" +
                     (forwards ? " and what it passes on (a view or in-place result)" : "");
    }
  }
  plan.memory.clear();
  for (std::size_t k = 0; k < n; ++k) {
    NodePlan& np = plan.nodes[k];
    if (np.kind == NodeKind::Sink) continue;
    FramePool pool;
    pool.name = std::string(node_kind_text(np.kind)) + " '" + np.name + "'";
    pool.frames = np.output;
    pool.frame_bytes = np.output.bytes();
    pool.allocated_by = np.allocated_by;
    std::int64_t total = 0;
    if (np.kind == NodeKind::Source) {
      const NodeDecl& d = decl(k);
      if (const int inside = d.source->frames_held_inside(); inside > 0) {
        pool.held_by.emplace_back(d.source->frames_held_inside_text(), inside);
        total += inside;
      }
    }
    for (const EdgePlan& e : plan.edges) {
      if (e.from != np.name) continue;
      pool.held_by.emplace_back("queue " + e.name, static_cast<int>(e.capacity));
      const std::size_t to = index.at(e.to);
      pool.held_by.emplace_back(held_text[to], static_cast<int>(held[to]));
      total += static_cast<std::int64_t>(e.capacity) + held[to];
    }
    pool.buffers = clamp_buffers(total);
    if (np.kind == NodeKind::Stage) np.pool_buffers = pool.buffers;
    plan.memory.push_back(std::move(pool));
  }
  for (EdgePlan& e : plan.edges) {
    if (e.conversions.empty()) continue;
    const std::size_t to = index.at(e.to);
    e.pool_buffers = clamp_buffers(held[to]);
    FramePool pool;
    pool.name = "edge '" + e.name + "' conversions";
    pool.frames = e.consumed;
    pool.frame_bytes = e.consumed.bytes();
    pool.buffers = e.pool_buffers;
    pool.held_by.emplace_back(held_text[to], static_cast<int>(held[to]));
    plan.memory.push_back(std::move(pool));
  }
}

// "stage 'pre': 3 x 4.69 MiB (f32 [3, 640, 640] CHW cpu:0) = 14.06 MiB; held by queue pre->out: 1,
// ..."
std::string pool_text(const FramePool& p) {
  std::string out = p.name + ": " + std::to_string(p.buffers) + " x " + bytes_text(p.frame_bytes) +
                    " (" + p.frames.to_string() + ") = " + bytes_text(p.bytes());
  return p.held_by.empty() ? out : out + "; held by " + p.holders();
}

}  // namespace

namespace {

// build() as named steps, in the spirit of a validated config: check the
// connections, order the nodes, plan every node and edge (sources prepare,
// specs flow, edges get their conversions, Strict refuses them), size the
// pools, register the rules, make the runtime. Problems are collected, not
// thrown: build() reports all of them at once.
class Planner {
 public:
  // open_sinks false: plan only (GraphBuilder::plan()): sinks check instead of prepare.
  Planner(GraphBuilder::Impl& b, bool open_sinks)
      : b_(b),
        open_sinks_(open_sinks),
        n_(b.nodes.size()),
        outs_(n_),
        in_edges_(n_),
        spec_(n_),
        spec_ok_(n_, false),
        edge_index_(b.edges.size(), -1),
        problems_(declared_problems(b)) {}

  Result<Graph> run() {
    NEAT_RETURN_IF_ERROR(make_plan());
    NEAT_ASSIGN_OR_RETURN(std::vector<RuleRegistration> rules, register_rules());
    return make_runtime(std::move(rules));
  }

  // The plan alone: the sources are closed again, the builder keeps its nodes.
  Result<GraphPlan> plan_only() {
    const Status st = make_plan();
    for (auto& d : b_.nodes) {
      if (d.source) d.source->close_after_plan();
    }
    if (!st.ok()) return st.error();
    return std::move(plan_);
  }

 private:
  Status make_plan() {
    check_connections();
    order_nodes();
    if (!problems_.empty()) return fail();
    plan_.graph = b_.name;
    plan_.policy = b_.policy.value_or(process_policy());
    for (int idx : order_)
      plan_node(static_cast<std::size_t>(idx));
    if (cancelled_) {  // stopped on request: not a problem of the graph
      close_sources();
      return cancelled_->with_context("graph '" + b_.name + "'");
    }
    if (!problems_.empty()) {
      close_sources();
      return fail();
    }
    plan_.max_frame_memory = b_.max_frame_memory;
    plan_.max_source_frames = b_.max_source_frames;
    plan_threads();
    plan_memory(plan_, order_, b_.nodes);
    if (b_.max_frame_memory > 0) fit_frame_memory();
    if (!problems_.empty()) {
      close_sources();
      return fail();
    }
    return {};
  }

  // The thread budget: every model engine's pool, and what is left of the
  // machine's hardware threads plus one for the kernel stages (at least one).
  void plan_threads() {
    ThreadBudget& t = plan_.threads;
    t.hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    for (int idx : order_) {
      const NodeDecl& d = b_.nodes[static_cast<std::size_t>(idx)];
      if (!d.stage) continue;
      if (auto pool = d.stage->engine_pool()) t.engines.push_back({d.name, std::move(*pool)});
    }
    int others = 0;  // threads of pools other than OpenCV's (which the kernels share)
    std::vector<std::string_view> counted;
    for (const auto& e : t.engines) {
      if (e.pool.name == "opencv" || std::ranges::find(counted, e.pool.name) != counted.end())
        continue;
      counted.push_back(e.pool.name);
      others += e.pool.threads;
    }
    t.kernels = others > 0 ? std::max(1, t.limit() - others) : t.hardware;
    for (const auto& e : t.engines) {
      const int asked = e.pool.name == "opencv" ? e.pool.threads : others + 1;
      if (e.pool.threads > t.hardware || asked > t.limit()) {
        problem("stage '" + e.stage + "'",
                "its " + e.pool.name + " pool of " + std::to_string(e.pool.threads) +
                    " threads asks for more than this machine's " + std::to_string(t.hardware) +
                    " hardware threads (a graph computes on at most " + std::to_string(t.limit()) +
                    ": the model's pool and one for the other stages)",
                {Fix{"threads=" + std::to_string(t.hardware) +
                         " or fewer (0: the machine's hardware threads)",
                     {}}});
        return;
      }
    }
  }

  // Under a frame-memory budget: lowers edge queues deeper than 1, one frame
  // at a time, each time the one whose frame saves the most bytes, until the
  // plan fits; else records a problem naming every pool, its bytes and who
  // holds them.
  void fit_frame_memory() {
    const std::int64_t budget = b_.max_frame_memory;
    while (plan_.frame_memory_bytes() > budget) {
      EdgePlan* best = nullptr;
      std::int64_t best_total = plan_.frame_memory_bytes();
      for (EdgePlan& e : plan_.edges) {  // try one frame less on each queue
        if (e.capacity <= 1) continue;
        e.capacity -= 1;
        plan_memory(plan_, order_, b_.nodes);
        if (plan_.frame_memory_bytes() < best_total) {
          best_total = plan_.frame_memory_bytes();
          best = &e;
        }
        e.capacity += 1;
      }
      if (best != nullptr) best->capacity -= 1;
      plan_memory(plan_, order_, b_.nodes);  // the plan of the capacities in place
      if (best == nullptr) break;
    }
    const std::int64_t need = plan_.frame_memory_bytes();
    if (need <= budget) return;
    std::string m = "its frames need " + bytes_text(need) + " at most, " +
                    bytes_text(need - budget) + " more than the frame-memory budget of " +
                    bytes_text(budget) + ":";
    for (const FramePool& p : plan_.memory)
      m += "\n      " + pool_text(p);
    bool at_minimum = true;
    for (const EdgePlan& e : plan_.edges)
      at_minimum = at_minimum && e.capacity <= 1;
    const std::string queues = at_minimum ? " (every queue is at its minimum of 1 already)" : "";
    const std::string raise = "raise the budget to at least " + bytes_text(need);
    problem("frame memory", std::move(m),
            {Fix{raise + " (GraphBuilder::set_max_frame_memory)",
                 raise + " (Graph.set_max_frame_memory)"},
             Fix{"lower an appsink's capacity (AppSinkOptions::capacity) or an edge's queue "
                 "(EdgeOptions::capacity)" +
                     queues,
                 "lower an appsink's capacity (capacity=N) or an edge's queue "
                 "(connect(..., capacity=N))" +
                     queues},
             Fix{"make the frames smaller", {}}});
  }

  // Every stage and sink has an input (several: it takes them in turn),
  // every source and stage an output.
  void check_connections() {
    if (n_ == 0) problem({}, "the graph has no nodes");
    for (std::size_t i = 0; i < b_.edges.size(); ++i) {
      const int f = b_.find(b_.edges[i].from), t = b_.find(b_.edges[i].to);
      if (f < 0 || t < 0) continue;  // reported by connect()
      outs_[static_cast<std::size_t>(f)].push_back(static_cast<int>(i));
      in_edges_[static_cast<std::size_t>(t)].push_back(static_cast<int>(i));
    }
    for (std::size_t i = 0; i < n_; ++i) {
      const NodeDecl& d = b_.nodes[i];
      if (d.kind != NodeKind::Source && in_edges_[i].empty()) {
        problem(node_place(d.kind, d.name), "it has no input",
                {Fix{"connect a source or a stage to it", {}}});
      }
      if (d.kind != NodeKind::Sink && outs_[i].empty()) {
        problem(node_place(d.kind, d.name), "it has no output",
                {Fix{"connect it to a stage or a sink", {}}});
      }
    }
  }

  // Topological order (Kahn): the sources, then every node once all its
  // producers are placed (a node fed by several streams follows all of them).
  void order_nodes() {
    std::vector<std::size_t> waiting(n_, 0);
    for (std::size_t i = 0; i < n_; ++i) {
      waiting[i] = in_edges_[i].size();
      if (b_.nodes[i].kind == NodeKind::Source) order_.push_back(static_cast<int>(i));
    }
    for (std::size_t k = 0; k < order_.size(); ++k) {
      for (int e : outs_[static_cast<std::size_t>(order_[k])]) {
        const int t = b_.find(b_.edges[static_cast<std::size_t>(e)].to);
        if (--waiting[static_cast<std::size_t>(t)] == 0) order_.push_back(t);
      }
    }
    for (std::size_t i = 0; i < n_; ++i) {
      if (b_.nodes[i].kind != NodeKind::Source && !in_edges_[i].empty() && waiting[i] > 0) {
        problem(node_place(b_.nodes[i].kind, b_.nodes[i].name),
                "it is not reachable from every node feeding it (a cycle?)");
      }
    }
  }

  void plan_node(std::size_t i) {
    NodeDecl& d = b_.nodes[i];
    NodePlan np;
    np.name = d.name;
    np.kind = d.kind;
    if (d.kind == NodeKind::Source) {
      plan_source(d, i, np);
    } else {
      plan_consumer(d, i, np);
    }
    np.output = spec_[i];
    plan_.nodes.push_back(std::move(np));
  }

  // A source prepares (a GStreamer source prerolls) and states its frames.
  void plan_source(NodeDecl& d, std::size_t i, NodePlan& np) {
    Result<FrameSpec> s = FrameSpec{};
    {
      // Conversions a source inserts on the user's behalf are ruled by the graph's policy.
      ScopedPolicy graph_policy(plan_.policy);
      s = d.source->prepare();
    }
    np.description = d.source->describe();  // after prepare(): what it negotiated
    if (!s.ok() && s.error().code() == ErrorCode::Cancelled) {
      cancelled_ = s.error().with_context("source '" + d.name + "'");
      return;
    }
    if (!s.ok()) {
      problems_.push_back(s.error().with_context("source '" + d.name + "'"));
      return;
    }
    np.inside = d.source->inner_conversions();
    np.source = d.source_options;
    np.live = d.source->live();
    spec_[i] = *s;
    spec_ok_[i] = true;
  }

  // A stage or sink: its input edges are planned, then its own output. Edges
  // of several streams must hand it the same frames.
  void plan_consumer(NodeDecl& d, std::size_t i, NodePlan& np) {
    np.policy = d.options.policy;
    np.max_latency = d.options.max_latency;
    np.opened = d.kind != NodeKind::Sink || open_sinks_;
    std::optional<FrameSpec> consumed;
    bool inputs_ok = true;
    for (int e : in_edges_[i]) {
      const auto& edge = b_.edges[static_cast<std::size_t>(e)];
      const auto producer = static_cast<std::size_t>(b_.find(edge.from));
      if (!spec_ok_[producer]) {
        inputs_ok = false;
        continue;
      }
      EdgePlan ep;
      if (!plan_edge(d, edge, producer, ep)) {
        inputs_ok = false;
      } else if (!consumed) {
        consumed = ep.consumed;
      } else if (!same_frames(*consumed, ep.consumed)) {
        inputs_ok = false;
        problem(
            node_place(d.kind, d.name),
            "its inputs differ: edge '" + plan_.edges[first_edge(i)].name + "' hands it " +
                consumed->to_string() + ", edge '" + ep.name + "' " + ep.consumed.to_string() +
                " (a node fed by several streams takes one kind of frame)",
            {Fix{"give every branch the same preprocess (e.g. preprocess size=640x640) before '" +
                     d.name + "'",
                 {}}});
      } else if (consumed->fps_n != ep.consumed.fps_n || consumed->fps_d != ep.consumed.fps_d) {
        consumed->fps_n = 0;  // streams at different rates: no one rate
        consumed->fps_d = 1;
      }
      edge_index_[static_cast<std::size_t>(e)] = static_cast<int>(plan_.edges.size());
      plan_.edges.push_back(std::move(ep));
    }
    if (inputs_ok && consumed) plan_output(d, i, *consumed);
    // After prepare(): stages may name what they decided (e.g. a
    // colour standard), sinks what their pipeline negotiated.
    np.description = d.kind == NodeKind::Stage ? d.stage->describe() : d.sink->describe();
    if (d.kind == NodeKind::Stage) np.allocated_by = d.stage->output_allocator();
    np.inside =
        d.kind == NodeKind::Stage ? d.stage->inner_conversions() : d.sink->inner_conversions();
  }

  // The plan index of node i's first planned input edge.
  std::size_t first_edge(std::size_t i) const {
    for (int e : in_edges_[i]) {
      if (edge_index_[static_cast<std::size_t>(e)] >= 0) {
        return static_cast<std::size_t>(edge_index_[static_cast<std::size_t>(e)]);
      }
    }
    return 0;
  }

  // A stage's output from what it receives; a sink prepares (or checks) for it.
  void plan_output(NodeDecl& d, std::size_t i, const FrameSpec& consumed) {
    if (d.kind == NodeKind::Stage) {
      auto out = d.stage->output_spec(consumed);
      Status prepared = out.ok() ? d.stage->prepare(consumed, *out) : Status{};
      if (!out.ok() || !prepared.ok()) {
        problems_.push_back(
            (out.ok() ? prepared.error() : out.error()).with_context("stage '" + d.name + "'"));
      } else {
        spec_[i] = *out;
        keep_rate(spec_[i], consumed);
        spec_ok_[i] = true;
      }
    } else if (Status st = open_sinks_ ? d.sink->prepare(consumed) : d.sink->check(consumed);
               !st.ok()) {
      problems_.push_back(st.error().with_context("sink '" + d.name + "'"));
    }
  }

  // What the producer gives, what the consumer accepts, the conversions
  // between (Strict refuses them here, before any frame flows). False when no
  // conversion leads from one to the other (the problem is recorded).
  bool plan_edge(const NodeDecl& d, const EdgeDecl& edge, std::size_t producer, EdgePlan& ep) {
    ep.from = edge.from;
    ep.to = edge.to;
    ep.name = edge.from + "->" + edge.to;
    ep.produced = spec_[producer];
    ep.capacity = edge.options.capacity.value_or(kDefaultQueueCapacity);
    ep.requested_capacity = ep.capacity;
    ep.policy = edge.options.policy.value_or(d.options.policy.value_or(plan_.policy));
    ep.consumers_sharing = static_cast<int>(outs_[producer].size());
    const Accepts accepts = d.kind == NodeKind::Stage ? d.stage->accepts() : d.sink->accepts();
    ep.copy_on_write = accepts.writes && ep.consumers_sharing > 1;
    auto conv = plan_conversions(ep.produced, accepts, d.name, ep.consumed);
    if (!conv.ok()) {
      problems_.push_back(conv.error().with_context("edge '" + ep.name + "'"));
      return false;
    }
    ep.conversions = std::move(*conv);
    if (ep.policy == ConversionPolicy::Strict) {
      for (const auto& c : ep.conversions) {
        problem("edge '" + ep.name + "'",
                "it needs an implicit " + std::string(to_string(c.kind)) + " (" +
                    std::string(to_string(c.reason)) + ") " + c.what + ", " +
                    bytes_text(c.bytes_per_frame) + " per frame, and Strict refuses it",
                {Fix{c.fix, {}},
                 Fix{"allow it with policy trace on this edge (EdgeOptions::policy)",
                     "allow it with policy trace on this edge (connect(..., policy=\"trace\"))"}});
      }
    }
    return true;
  }

  Result<std::vector<RuleRegistration>> register_rules() {
    std::vector<RuleRegistration> rules;
    for (auto budget : b_.budgets) {
      budget.graph = b_.name;
      NEAT_ASSIGN_OR_RETURN(RuleRegistration r, add_copy_budget(budget));
      rules.push_back(std::move(r));
    }
    for (auto rule : b_.rules) {
      rule.graph = b_.name;
      NEAT_ASSIGN_OR_RETURN(RuleRegistration r, neat::add_steady_state_rule(rule));
      rules.push_back(std::move(r));
    }
    return rules;
  }

  // The runtime's nodes, in plan order, each with its pool and edges.
  Result<Graph> make_runtime(std::vector<RuleRegistration> rules) {
    std::vector<NodeRt> nodes;
    nodes.reserve(order_.size());
    for (std::size_t k = 0; k < order_.size(); ++k) {
      const auto i = static_cast<std::size_t>(order_[k]);
      NodeDecl& d = b_.nodes[i];
      NodeRt rt;
      rt.plan = plan_.nodes[k];
      rt.source = std::move(d.source);
      rt.stage = std::move(d.stage);
      rt.sink = std::move(d.sink);
      for (int e : in_edges_[i])
        rt.in_edges.push_back(edge_index_[static_cast<std::size_t>(e)]);
      for (int e : outs_[i])
        rt.out_edges.push_back(edge_index_[static_cast<std::size_t>(e)]);
      rt.pool = HeapPool::create(pool_config(rt.plan.pool_buffers, rt.plan.output.bytes()));
      nodes.push_back(std::move(rt));
    }
    b_.nodes.clear();
    b_.edges.clear();
    return make_graph(std::move(plan_), std::move(nodes), std::move(rules));
  }

  void close_sources() {
    for (auto& d : b_.nodes) {
      if (d.source) d.source->close();
    }
  }

  Error fail() const {
    return Error::collect(ErrorCode::FailedPrecondition,
                          "graph '" + b_.name + "' cannot be built (" +
                              std::to_string(problems_.size()) +
                              (problems_.size() == 1 ? " problem" : " problems") + "):",
                          problems_);
  }

  // What the builder's setters found wrong, before any planning.
  static std::vector<Error> declared_problems(const GraphBuilder::Impl& b) {
    std::vector<Error> out;
    for (const std::string& p : b.problems)
      out.emplace_back(ErrorCode::FailedPrecondition, p);
    return out;
  }

  void problem(std::string where, std::string what, std::vector<Fix> fixes = {}) {
    problems_.emplace_back(ErrorCode::FailedPrecondition, std::move(where), std::move(what),
                           std::move(fixes));
  }

  static std::string node_place(NodeKind kind, const std::string& name) {
    return std::string(node_kind_text(kind)) + " '" + name + "'";
  }

  GraphBuilder::Impl& b_;
  bool open_sinks_;
  std::size_t n_;
  std::vector<std::vector<int>> outs_;
  std::vector<std::vector<int>> in_edges_;  ///< several: the node takes its streams in turn
  std::vector<int> order_;
  std::vector<FrameSpec> spec_;
  std::vector<bool> spec_ok_;
  std::vector<int> edge_index_;
  std::vector<Error> problems_;
  std::optional<Error> cancelled_;  // a source gave up on request (GstSourceOptions::cancelled)
  GraphPlan plan_;
};

}  // namespace

Result<Graph> GraphBuilder::build() {
  return Planner(*impl_, true).run();
}

Result<GraphPlan> GraphBuilder::plan() {
  return Planner(*impl_, false).plan_only();
}

}  // namespace neat

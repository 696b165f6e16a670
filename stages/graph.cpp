#include "neat/stages/graph.hpp"

#include <algorithm>

#include "neat/stages/internal/graph_impl.hpp"

namespace neat {

using namespace detail;

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

int ThreadBudget::total() const noexcept {
  int opencv = kernels;  // the kernel stages' pool is OpenCV's
  int others = 0;
  std::vector<std::string_view> counted;
  for (const Engine& e : engines) {
    if (e.pool.name == "opencv") {
      opencv = std::max(opencv, e.pool.threads);
    } else if (std::find(counted.begin(), counted.end(), e.pool.name) == counted.end()) {
      counted.push_back(e.pool.name);
      others += e.pool.threads;
    }
  }
  return opencv + others;
}

std::int64_t GraphPlan::frame_memory_bytes() const noexcept {
  std::int64_t b = 0;
  for (const auto& p : memory)
    b += p.bytes();
  return b;
}

std::string FramePool::holders() const {
  std::string out;
  for (const auto& [who, count] : held_by)
    out += (out.empty() ? "" : ", ") + who + ": " + std::to_string(count);
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
GraphBuilder& GraphBuilder::set_max_frame_memory(std::int64_t bytes) {
  if (bytes < 0) {
    impl_->problems.push_back("the frame-memory budget is negative (" + std::to_string(bytes) +
                              " bytes); 0 means none");
    return *this;
  }
  impl_->max_frame_memory = bytes;
  return *this;
}
GraphBuilder& GraphBuilder::set_max_source_frames(std::int64_t frames) {
  if (frames < 0) {
    impl_->problems.push_back("the source frame limit is negative (" + std::to_string(frames) +
                              "); 0 means none");
    return *this;
  }
  impl_->max_source_frames = frames;
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

GraphBuilder& GraphBuilder::add_source(std::string name, std::unique_ptr<Source> source,
                                       SourceOptions options) {
  if (!source) impl_->problems.push_back("source '" + name + "' is null");
  if (options.stall_timeout.count() < 0 || options.backoff_min.count() <= 0 ||
      options.backoff_max < options.backoff_min) {
    impl_->problems.push_back("source '" + name +
                              "': stall_timeout must be >= 0 and 0 < backoff_min <= backoff_max");
  }
  if (!(options.rate >= 0)) {
    impl_->problems.push_back("source '" + name + "': rate must be >= 0 frames per second");
  }
  NodeDecl d;
  d.source_options = options;
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
  if (options.capacity && *options.capacity == 0) {
    return problem("queue capacity must be at least 1");
  }
  if (options.capacity && *options.capacity > (std::size_t{1} << 16)) {
    return problem("queue capacity " + std::to_string(*options.capacity) +
                   " is more than 65536 frames");
  }
  for (const auto& e : impl_->edges) {
    if (e.to == to && e.from == from) {
      return problem("'" + std::string(from) + "' already feeds '" + std::string(to) + "'");
    }
  }
  impl_->edges.push_back(EdgeDecl{std::string(from), std::string(to), options});
  return {};
}

}  // namespace neat

// What the graph bindings share (graph.cpp: the Graph object; nodes.cpp: the
// nodes a graph is made of): the graph's state, shared by its Graph object
// and its AppSinks, and the Python objects behind elements, appsinks and
// push sources. Internal to the extension.
//
// Threading: GraphState::mutex is taken only with the GIL released.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"

namespace neatpy {

/// Waits release the GIL in slices this long (Ctrl-C gets through between them).
inline constexpr std::chrono::milliseconds kSlice{100};
/// wait() raises when an appsink Python pulled from stays full and unpulled this long.
inline constexpr std::chrono::milliseconds kHeldLimit{2000};

/// What a Python stage raised (the exception object; set and read with the
/// GIL): the graph's error reaches Python as that exception, its class kept.
struct StageException {
  PyObject* value = nullptr;  // a reference owned here; set with the GIL
  bool noted = false;         // the graph's message was added as a note
  std::string stage;
  StageException() = default;
  StageException(const StageException&) = delete;
  StageException& operator=(const StageException&) = delete;
  ~StageException() { release_object(value); }  // takes the GIL (graphs end without it)
};

struct GraphState {
  std::string name;
  /// The Python stages' exceptions (a stage keeps the first it raised).
  std::vector<std::shared_ptr<StageException>> stage_exceptions;
  neat::PipelineOptions options;
  std::mutex mutex;  // build / wait; taken only with the GIL released
  std::optional<neat::GraphBuilder> builder;
  std::optional<neat::Graph> graph;
  std::atomic<neat::Graph*> running_graph{nullptr};  // for stop() without the mutex
  std::optional<neat::Result<neat::RunReport>> result;
  bool policy_set = false;
  struct SinkEntry {
    std::string name;
    std::shared_ptr<neat::AppSink> sink;
    /// Set once Python pulls from it; until then wait() and run() take its
    /// frames (as `neat run` does), so an appsink nobody iterates never holds the graph.
    std::shared_ptr<std::atomic<bool>> taken;
  };
  std::vector<SinkEntry> appsinks;

  ~GraphState() {
    // Joins the threads; Python stages on them may need the GIL meanwhile.
    without_gil([&] {
      if (auto* g = running_graph.load()) g->stop();
      graph.reset();
      builder.reset();
    });
  }

  neat::GraphBuilder& declaring(std::string_view op) {
    if (!builder) {
      raise(neat::failed_precondition("graph '" + name + "': " + std::string(op) +
                                      ": the graph is already built; declare nodes before "
                                      "build(), start() or run()"));
    }
    return *builder;
  }

  // Builds when not built yet (GIL released by the caller).
  void ensure_built_locked() {
    if (graph) return;
    if (!builder) raise(neat::failed_precondition("graph '" + name + "': nothing to build"));
    auto g = builder->build();
    builder.reset();
    if (!g.ok()) raise(std::move(g).error());
    graph.emplace(std::move(*g));
    running_graph.store(&*graph);
  }

  neat::Result<neat::RunReport> wait_locked() {
    if (!result) result = graph->wait();
    return *result;
  }
};

struct PyElement {
  neat::PipelineElement element;
  std::string text;  // the element as pipeline text, for errors that point into it
};

struct PyAppSink {
  std::shared_ptr<neat::AppSink> sink;
  std::shared_ptr<std::atomic<bool>> taken = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<GraphState> graph;  // set once added to a graph: keeps it running
  std::string name;
};

struct PyPushSource {
  std::shared_ptr<neat::PushSource> source;
  bool added = false;
};

/// The Python object behind neat.Graph.
struct PyGraph {
  std::shared_ptr<GraphState> st;
  ~PyGraph() {
    // The last holder's destructor joins the graph's threads: never with the GIL.
    without_gil([&] { st.reset(); });
  }
};

/// Builds and starts the graph unless it was started already (the first
/// iteration of one of its appsinks starts it).
void start_if_idle(GraphState& st);
/// Seconds from Python (None: no limit) as a duration; negative is refused.
std::optional<std::chrono::nanoseconds> to_duration(std::optional<double> seconds,
                                                    std::string_view what);
/// An element of the registry with its properties as Python keywords.
PyElement make_element(const std::string& name, const py::kwargs& props);
/// The element built in `role`; its errors point into its text.
neat::BuiltElement build_element(const PyElement& e, neat::ElementRole role,
                                 const neat::PipelineOptions& options,
                                 neat::SourceOptions* source = nullptr,
                                 neat::StageOptions* stage = nullptr);
/// A Python callable as a stage (accounted like any stage).
std::unique_ptr<neat::Stage> python_stage(py::object fn, neat::Accepts accepts, py::object output,
                                          std::shared_ptr<StageException> raised);
/// Raises a graph's error: as the exception a Python stage raised when one
/// did (its class kept, the graph's message added as a note), else as a neat error.
[[noreturn]] void raise_graph_error(GraphState& st, neat::Error error);
/// Binds FrameSpec, Accepts, Element, AppSink and PushSource.
void bind_nodes(py::module_& m);
/// graph.frames: what the sources made and where it went (reports.cpp).
py::dict accounting_dict(const neat::FrameAccounting& a);
/// A finished run's frame accounting and latency per sink (reports.cpp).
py::dict report_dict(const neat::RunReport& r);
/// graph.stats(): the live counters of every node, edge and pool (reports.cpp).
py::dict stats_dict(const neat::GraphStats& s);
/// graph.plan(): what explain() prints, as data (reports.cpp).
py::dict plan_dict(const neat::GraphPlan& p);
/// Binds MetricsServer and serve_metrics (metrics.cpp).
void bind_metrics(py::module_& m);

}  // namespace neatpy

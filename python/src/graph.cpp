// neat.Graph and neat.pipeline: graphs from the pipeline text or from the
// nodes of nodes.cpp, explain / plan / build / run / start / stop / wait, live
// stats. Every wait releases the GIL, in slices that let Ctrl-C through. A
// running graph lives while its Graph object or one of its AppSink objects
// does; at exit every graph still running is stopped and joined.
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "graph_state.hpp"

namespace neatpy {

namespace {

using namespace std::chrono_literals;
using neat::FrameSpec;
using neat::NeatTensor;

std::mutex g_live_mutex;
std::vector<std::weak_ptr<GraphState>>& live_graphs() {
  static std::vector<std::weak_ptr<GraphState>> v;
  return v;
}

std::shared_ptr<GraphState> new_state(std::string name) {
  auto st = std::make_shared<GraphState>();
  st->name = std::move(name);
  std::lock_guard lock(g_live_mutex);
  auto& v = live_graphs();
  std::erase_if(v, [](const auto& w) { return w.expired(); });
  v.push_back(st);
  return st;
}

/// Runs `wait` on a graph without the GIL, in slices, raising KeyboardInterrupt
/// (after stopping the graph) when a signal arrives.
neat::RunReport wait_graph(GraphState& st, std::optional<std::chrono::nanoseconds> timeout) {
  if (!st.graph) raise(neat::failed_precondition("graph '" + st.name + "': not started"));
  const auto deadline = timeout ? std::chrono::steady_clock::now() + *timeout
                                : std::chrono::steady_clock::time_point::max();
  // An appsink Python pulled from, then left full (a `break` out of its loop):
  // the graph cannot go on, and waiting would never end. Said, with the fix.
  struct Held {
    std::uint64_t pulled = 0;
    std::chrono::steady_clock::time_point since;
  };
  std::vector<Held> held(st.appsinks.size(), Held{0, std::chrono::steady_clock::now()});
  auto check_held = [&] {
    const auto now = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < st.appsinks.size(); ++i) {
      const auto& e = st.appsinks[i];
      const auto stats = e.sink->stats();
      const bool full = e.sink->options().overflow == neat::Overflow::Block &&
                        stats.queued >= e.sink->options().capacity;
      if (!e.taken->load() || !full || stats.pulled != held[i].pulled) {
        held[i] = Held{stats.pulled, now};
        continue;
      }
      if (now - held[i].since >= kHeldLimit) {
        raise(neat::failed_precondition(
            "graph '" + st.name + "' is held by appsink '" + e.name + "': its queue is full (" +
            std::to_string(stats.queued) + " frame(s)) and nothing pulled from it for " +
            std::to_string(kHeldLimit.count() / 1000) +
            " s, so the graph cannot go on and wait() would never return. Keep iterating it to "
            "the end, or call stop() before wait() to end the run early"));
      }
    }
  };
  while (!st.graph->done()) {
    check_held();
    // Frames of appsinks nobody pulls from Python are taken here.
    bool took = false;
    neat::AppSink* waiting_on = nullptr;
    for (const auto& e : st.appsinks) {
      if (e.taken->load()) continue;
      took = e.sink->drain() > 0 || took;
      waiting_on = e.sink.get();
    }
    if (!took) {
      without_gil([&] {
        if (waiting_on != nullptr) {
          if (auto f = waiting_on->pull(5ms)) f.reset();
        } else {
          std::this_thread::sleep_for(5ms);
        }
      });
    }
    if (PyErr_CheckSignals() != 0) {
      st.graph->stop();
      throw py::error_already_set();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      raise_timeout("graph '" + st.name + "' still running after " +
                    std::to_string(std::chrono::duration<double>(*timeout).count()) +
                    " s; stop() it or wait longer");
    }
  }
  auto r = without_gil([&] {
    std::lock_guard lock(st.mutex);
    return st.wait_locked();
  });
  if (!r.ok()) raise_graph_error(st, std::move(r).error());
  return std::move(*r);
}

// ---- the Graph object
// -----------------------------------------------------------------------------

GraphState& state(PyGraph& g) {
  return *g.st;
}

// A graph that sets no policy takes the one of `with neat.policy(...)` around it.
void adopt_scoped_policy(GraphState& st) {
  if (!st.policy_set && st.builder) {
    if (auto p = neat::scoped_policy()) st.builder->set_policy(*p);
  }
}

// The built graph's plan, or the one build() would make (no side effects).
neat::GraphPlan current_plan(GraphState& st) {
  if (st.graph) return st.graph->plan();
  adopt_scoped_policy(st);
  return unwrap(without_gil([&] {
    std::lock_guard lock(st.mutex);
    if (!st.builder)
      return neat::Result<neat::GraphPlan>(
          neat::failed_precondition("graph '" + st.name + "': it was moved or failed to build"));
    return st.builder->plan();
  }));
}

void build_graph(GraphState& st) {
  adopt_scoped_policy(st);
  without_gil([&] {
    std::lock_guard lock(st.mutex);
    st.ensure_built_locked();
  });
}

}  // namespace

void raise_graph_error(GraphState& st, neat::Error error) {
  for (const auto& raised : st.stage_exceptions) {
    if (raised->value == nullptr) continue;
    py::object value = py::reinterpret_borrow<py::object>(raised->value);
    if (!raised->noted && py::hasattr(value, "add_note"))
      value.attr("add_note")(error.message(neat::Spelling::Python));
    raised->noted = true;
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(value.ptr())), value.ptr());
    throw py::error_already_set();
  }
  raise(std::move(error));
}

void start_if_idle(GraphState& st) {
  if (st.graph && (st.graph->running() || st.graph->done())) return;
  build_graph(st);
  check(st.graph->start());
}

namespace {

void add_sink_object(GraphState& st, const std::string& name, py::handle sink,
                     const std::shared_ptr<GraphState>& owner) {
  auto& b = st.declaring("add_sink");
  if (py::isinstance<PyAppSink>(sink)) {
    auto s = sink.cast<std::shared_ptr<PyAppSink>>();
    if (s->graph)
      raise(neat::invalid_argument("add_sink('" + name + "'): this AppSink is already in graph '" +
                                   s->graph->name + "'"));
    s->graph = owner;
    s->name = name;
    b.add_sink(name, s->sink);
    st.appsinks.push_back({name, s->sink, s->taken});
    return;
  }
  if (py::isinstance<PyElement>(sink)) {
    auto built = build_element(sink.cast<const PyElement&>(), neat::ElementRole::Sink, st.options);
    if (built.appsink)
      st.appsinks.push_back({name, built.appsink, std::make_shared<std::atomic<bool>>(false)});
    b.add_sink(name, std::move(built.sink));
    return;
  }
  raise(neat::invalid_argument("add_sink('" + name +
                               "'): expected a neat.AppSink or a sink element (neat.gst(...), "
                               "neat.element(\"appsink\")), got " +
                               std::string(py::str(py::type::of(sink).attr("__name__")))));
}

std::shared_ptr<PyAppSink> appsink_object(const std::shared_ptr<GraphState>& st,
                                          const GraphState::SinkEntry& e) {
  auto s = std::make_shared<PyAppSink>();
  s->sink = e.sink;
  s->taken = e.taken;
  s->graph = st;
  s->name = e.name;
  return s;
}

using GraphClass = py::class_<PyGraph>;

// Declaring a graph: its nodes.
void def_declaring(GraphClass& c) {
  c.def(py::init([](const std::string& name, std::optional<std::string> policy,
                    std::optional<std::int64_t> max_frame_memory) {
          PyGraph g{new_state(name)};
          g.st->builder.emplace(name);
          if (policy) {
            g.st->builder->set_policy(parse_policy(*policy));
            g.st->policy_set = true;
          }
          if (max_frame_memory) g.st->builder->set_max_frame_memory(*max_frame_memory);
          g.st->options.graph_name = name;
          // Track stages and message sinks added one by one share the graph's journal.
          g.st->options.tracks = std::make_shared<neat::TrackJournal>();
          return g;
        }),
        py::arg("name") = "graph", py::kw_only(), py::arg("policy") = py::none(),
        py::arg("max_frame_memory") = py::none())
      .def_property_readonly("name", [](PyGraph& g) { return state(g).name; })
      .def(
          "add_source",
          [](PyGraph& g, const std::string& name, py::handle source) {
            auto& st = state(g);
            auto& b = st.declaring("add_source");
            if (py::isinstance<PyPushSource>(source)) {
              auto s = source.cast<std::shared_ptr<PyPushSource>>();
              if (s->added)
                raise(neat::invalid_argument("add_source('" + name +
                                             "'): this PushSource is already in a graph"));
              s->added = true;
              b.add_source(name, neat::shared_source(s->source));
            } else if (py::isinstance<PyElement>(source)) {
              neat::SourceOptions so;
              auto built = build_element(source.cast<const PyElement&>(), neat::ElementRole::Source,
                                         st.options, &so);
              b.add_source(name, std::move(built.source), so);
            } else {
              raise(neat::invalid_argument(
                  "add_source('" + name +
                  "'): expected a neat.PushSource or a source element "
                  "(neat.gst(...), neat.element(\"default\"), ...), got " +
                  std::string(py::str(py::type::of(source).attr("__name__")))));
            }
            return &g;
          },
          py::arg("name"), py::arg("source"), py::return_value_policy::reference_internal)
      .def(
          "add_stage",
          [](PyGraph& g, const std::string& name, py::object stage,
             std::optional<std::string> policy, py::object accepts, py::object output) {
            auto& st = state(g);
            auto& b = st.declaring("add_stage");
            neat::StageOptions so;
            so.policy = parse_optional_policy(policy);
            if (py::isinstance<PyElement>(stage)) {
              auto built = build_element(stage.cast<const PyElement&>(), neat::ElementRole::Stage,
                                         st.options, nullptr, &so);
              b.add_stage(name, std::move(built.stage), so);
            } else if (PyCallable_Check(stage.ptr())) {
              neat::Accepts a =
                  accepts.is_none() ? neat::Accepts::anything() : accepts.cast<neat::Accepts>();
              if (!output.is_none() && !py::isinstance<FrameSpec>(output) &&
                  !PyCallable_Check(output.ptr())) {
                raise(neat::invalid_argument(
                    "add_stage('" + name +
                    "'): output= must be a neat.FrameSpec or a function of the input spec"));
              }
              auto raised = std::make_shared<StageException>();
              raised->stage = name;
              st.stage_exceptions.push_back(raised);
              b.add_stage(name, python_stage(stage, a, output, raised), so);
            } else {
              raise(neat::invalid_argument(
                  "add_stage('" + name +
                  "'): expected a stage element (neat.element(\"resize\", ...)) "
                  "or a callable taking and returning a neat.Tensor, got " +
                  std::string(py::str(py::type::of(stage).attr("__name__")))));
            }
            return &g;
          },
          py::arg("name"), py::arg("stage"), py::kw_only(), py::arg("policy") = py::none(),
          py::arg("accepts") = py::none(), py::arg("output") = py::none(),
          py::return_value_policy::reference_internal,
          R"doc(A stage: an element of the registry, or a Python callable taking a
neat.Tensor and returning a Tensor, a numpy array (wrapped) or None (drop the
frame). For a callable, accepts=neat.Accepts(...) says what it takes (the
graph plans conversions into it like for any stage) and output= the spec it
returns (a neat.FrameSpec or a function of the input spec; default: same as
the input).)doc")
      .def(
          "add_sink",
          [](PyGraph& g, const std::string& name, py::handle sink) {
            add_sink_object(state(g), name, sink, g.st);
            return &g;
          },
          py::arg("name"), py::arg("sink"), py::return_value_policy::reference_internal);
}

// Declaring a graph: its edges, budgets and rules.
void def_edges_and_rules(GraphClass& c) {
  c.def(
       "connect",
       [](PyGraph& g, const std::string& from, const std::string& to,
          std::optional<std::size_t> capacity, std::optional<std::string> policy) {
         neat::EdgeOptions o;
         o.capacity = capacity;
         o.policy = parse_optional_policy(policy);
         check(state(g).declaring("connect").connect(from, to, o));
         return &g;
       },
       py::arg("from_"), py::arg("to"), py::kw_only(), py::arg("capacity") = py::none(),
       py::arg("policy") = py::none(), py::return_value_policy::reference_internal)
      .def(
          "chain",
          [](PyGraph& g, py::args names) {
            auto& b = state(g).declaring("chain");
            std::vector<std::string> v;
            for (auto n : names)
              v.push_back(py::str(n));
            for (std::size_t i = 1; i < v.size(); ++i)
              check(b.connect(v[i - 1], v[i]));
            return &g;
          },
          py::return_value_policy::reference_internal, "connect(a, b), connect(b, c), ...")
      .def(
          "add_budget",
          [](PyGraph& g, std::int64_t max_bytes, std::int64_t max_count, const std::string& edge,
             const std::string& action) {
            neat::CopyBudget budget;
            budget.edge = edge;
            budget.max_bytes_per_frame = max_bytes;
            budget.max_count_per_frame = max_count;
            budget.action = parse_action(action);
            state(g).declaring("add_budget").add_budget(budget);
            return &g;
          },
          py::kw_only(), py::arg("max_bytes_per_frame") = -1, py::arg("max_count_per_frame") = -1,
          py::arg("edge") = "", py::arg("action") = "by_policy",
          py::return_value_policy::reference_internal,
          "A copy budget for this graph or one of its edges (\"from->to\"), enforced while it "
          "runs.")
      .def(
          "add_steady_state_rule",
          [](PyGraph& g, std::int64_t after_frames, const std::vector<std::string>& kinds,
             const std::string& edge, const std::string& action) {
            neat::SteadyStateRule r;
            r.after_frames = after_frames;
            r.kinds = parse_kinds(kinds);
            r.edge = edge;
            r.action = parse_action(action);
            state(g).declaring("add_steady_state_rule").add_steady_state_rule(r);
            return &g;
          },
          py::arg("after_frames"), py::kw_only(),
          py::arg("kinds") = std::vector<std::string>{"pack", "convert", "transfer"},
          py::arg("edge") = "", py::arg("action") = "by_policy",
          py::return_value_policy::reference_internal)
      .def(
          "set_max_frame_memory",
          [](PyGraph& g, std::int64_t bytes) {
            state(g).declaring("set_max_frame_memory").set_max_frame_memory(bytes);
            return &g;
          },
          py::arg("bytes"), py::return_value_policy::reference_internal,
          "A budget for the frames the graph holds at once; build() lowers queues to fit or "
          "fails.");
}

// Building and running it: the plan, start, stop, wait, run, live stats.
void def_running(GraphClass& c) {
  c.def(
       "plan", [](PyGraph& g) { return plan_dict(current_plan(state(g))); },
       "The plan as a dict (nodes, edges, conversions, bytes per frame, frame memory), without "
       "side effects when not built yet.")
      .def(
          "explain", [](PyGraph& g) { return current_plan(state(g)).explain(); },
          "What `neat explain` prints: nodes, edges, conversions, policies, bytes per frame, the "
          "memory plan. Before build() it has no side effects (sinks are checked, not opened).")
      .def(
          "build",
          [](PyGraph& g) {
            build_graph(state(g));
            return &g;
          },
          py::return_value_policy::reference_internal,
          "Checks and plans the graph (implicit in start() and run()).")
      .def(
          "start",
          [](PyGraph& g) {
            auto& st = state(g);
            build_graph(st);
            check(st.graph->start());
            return &g;
          },
          py::return_value_policy::reference_internal,
          "Builds if needed and starts every node's thread.")
      .def(
          "stop",
          [](PyGraph& g) {
            if (auto* gr = state(g).running_graph.load()) gr->stop();
          },
          "Asks the graph to stop now (returns at once; wait() joins).")
      .def(
          "wait",
          [](PyGraph& g, std::optional<double> timeout) {
            return report_dict(wait_graph(state(g), to_duration(timeout, "Graph.wait")));
          },
          py::arg("timeout") = py::none(),
          "Joins the graph and returns its report (frames, seconds, edge_frames, latency); raises "
          "the first error (named by its stage), or neat.Timeout after timeout seconds. Frames "
          "of appsinks Python never pulled from are taken and let go meanwhile.")
      .def(
          "run",
          [](PyGraph& g) {
            auto& st = state(g);
            build_graph(st);
            check(st.graph->start());
            return report_dict(wait_graph(st, std::nullopt));
          },
          "start() + wait(): runs to the end of the stream and returns the report. Frames of "
          "appsinks Python never pulled from are taken and let go (as `neat run` does).")
      .def_property_readonly("done",
                             [](PyGraph& g) {
                               auto* gr = state(g).running_graph.load();
                               return gr != nullptr && gr->done();
                             })
      .def_property_readonly("running",
                             [](PyGraph& g) {
                               auto* gr = state(g).running_graph.load();
                               return gr != nullptr && gr->running();
                             })
      .def_property_readonly("frames",
                             [](PyGraph& g) -> py::object {
                               auto* gr = state(g).running_graph.load();
                               if (gr == nullptr) return py::none();
                               return accounting_dict(gr->frames());
                             })
      .def(
          "stats",
          [](PyGraph& g) -> py::object {
            auto* gr = state(g).running_graph.load();
            if (gr == nullptr) return py::none();
            return stats_dict(gr->stats());
          },
          "Live per-node and per-edge counts, queue depths, latencies, pools (None before build).");
}

// What it reports and hands out: metrics, rule breaches, appsinks, its repr.
void def_results(GraphClass& c) {
  c.def("prometheus_text",
        [](PyGraph& g) {
          auto* gr = state(g).running_graph.load();
          if (gr == nullptr)
            raise(neat::failed_precondition("graph '" + state(g).name + "': not built"));
          return gr->prometheus_text();
        })
      .def("rule_breaches",
           [](PyGraph& g) {
             py::list out;
             auto* gr = state(g).running_graph.load();
             if (gr == nullptr) return out;
             for (const auto& b : gr->rule_breaches())
               out.append(breach_dict(b));
             return out;
           })
      .def_property_readonly(
          "appsink",
          [](PyGraph& g) -> py::object {
            auto& st = state(g);
            if (st.appsinks.empty()) {
              raise(neat::failed_precondition(
                  "graph '" + st.name +
                  "' has no appsink: end a branch in `appsink` (pipeline text) or add one with "
                  "add_sink(name, neat.AppSink()); graph.appsinks lists them by name"));
            }
            return py::cast(appsink_object(g.st, st.appsinks.front()));
          },
          "The first appsink (neat.FailedPrecondition when the graph has none; appsinks: all).")
      .def_property_readonly(
          "appsinks",
          [](PyGraph& g) {
            py::dict d;
            for (const auto& e : state(g).appsinks)
              d[py::str(e.name)] = py::cast(appsink_object(g.st, e));
            return d;
          },
          "Every appsink by node name.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](PyGraph& g, py::args) {
             auto& st = state(g);
             if (auto* gr = st.running_graph.load()) {
               gr->stop();
               without_gil([&] {
                 std::lock_guard lock(st.mutex);
                 (void)st.wait_locked();
               });
             }
             return false;
           })
      .def("__repr__", [](PyGraph& g) {
        auto& st = state(g);
        auto* gr = st.running_graph.load();
        const char* phase = gr == nullptr   ? "declared"
                            : gr->done()    ? "done"
                            : gr->running() ? "running"
                                            : "built";
        return "neat.Graph('" + st.name + "', " + phase + ")";
      });
}

// neat.pipeline(text) and the default pipeline text.
void bind_pipeline_functions(py::module_& m) {
  m.def(
      "pipeline",
      [](const std::string& text, std::optional<std::string> policy, const std::string& name,
         std::optional<std::int64_t> frames, double first_frame_timeout) {
        PyGraph g{new_state(name)};
        neat::PipelineOptions o;
        o.graph_name = name;
        o.policy = parse_optional_policy(policy);
        if (!o.policy) o.policy = neat::scoped_policy();
        if (frames && *frames < 1) {
          raise(neat::invalid_argument("pipeline: frames=" + std::to_string(*frames) +
                                       ": give 1 or more, or None for each source's own count"));
        }
        if (frames) o.default_frames = *frames;
        if (!(first_frame_timeout > 0))
          raise(neat::invalid_argument("pipeline: first_frame_timeout must be > 0 seconds"));
        o.first_frame_timeout =
            std::chrono::milliseconds(static_cast<std::int64_t>(first_frame_timeout * 1000));
        o.timeout_setting = "first_frame_timeout=";
        o.tracks = std::make_shared<neat::TrackJournal>();  // shared with stages added later
        auto declared = unwrap(without_gil([&] { return neat::declare_pipeline(text, o); }));
        // As `neat run --frames`: every source ends after that many frames.
        if (frames) declared.builder.set_max_source_frames(*frames);
        g.st->builder.emplace(std::move(declared.builder));
        for (auto& [name, sink] : declared.appsinks)
          g.st->appsinks.push_back({name, sink, std::make_shared<std::atomic<bool>>(false)});
        g.st->options = o;
        g.st->policy_set = true;
        return g;
      },
      py::arg("text") = neat::default_pipeline_text(), py::kw_only(),
      py::arg("policy") = py::none(), py::arg("name") = "pipeline", py::arg("frames") = py::none(),
      py::arg("first_frame_timeout") = 20.0,
      R"doc(A graph from the pipeline text of `neat run` (default: the built-in detection
demo), declared, not built: explain(), start(), run(); graph.appsink is its
first appsink. frames: as `neat run --frames`, every source (a camera, a
file, `default`) ends after at most that many frames; None: each source's
own count (300 for `default`).)doc");
  m.def("default_pipeline_text", &neat::default_pipeline_text,
        "The built-in demo pipeline's text.");

  // At exit: stop and join every graph still running, before the interpreter
  // goes (their Python stages and buffers need it).
  py::module_::import("atexit").attr("register")(py::cpp_function([] {
    std::vector<std::shared_ptr<GraphState>> alive;
    {
      std::lock_guard lock(g_live_mutex);
      for (auto& w : live_graphs())
        if (auto s = w.lock()) alive.push_back(std::move(s));
    }
    for (auto& s : alive)
      if (auto* g = s->running_graph.load()) g->stop();
    for (auto& s : alive) {
      if (s->running_graph.load() == nullptr) continue;
      without_gil([&] {
        std::lock_guard lock(s->mutex);
        (void)s->wait_locked();
      });
    }
  }));
}

}  // namespace

void bind_graph(py::module_& m) {
  GraphClass graph(m, "Graph", R"doc(
A stage graph: declare nodes (sources, stages, sinks) and edges, then
explain(), run(), or start() / stop() / wait(). build() (implicit in run and
start) checks every edge; under Strict every implicit conversion fails it,
listed with its bytes per frame and the stage that would avoid it.)doc");
  def_declaring(graph);
  def_edges_and_rules(graph);
  def_running(graph);
  def_results(graph);
  bind_pipeline_functions(m);
}

}  // namespace neatpy

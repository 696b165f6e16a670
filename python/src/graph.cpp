// Stage graphs from Python: graphs from the pipeline text or from Python
// objects (the registry's elements, Python callables as stages, push sources
// fed with numpy arrays, appsinks iterated as tensors), explain / run /
// start / stop / wait. Every wait releases the GIL, in slices of 100 ms
// that let Ctrl-C through; Python stages take the GIL on the graph's thread.
// A running graph lives while its Graph object or one of its AppSink
// objects does; at exit every graph still running is stopped and joined.
#include <pybind11/functional.h>
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common.hpp"

namespace neatpy {

py::dict duration_summary_dict(const neat::DurationSummary& s);

namespace {

using namespace std::chrono_literals;
using neat::FrameSpec;
using neat::NeatTensor;

constexpr auto kSlice = 100ms;

std::optional<std::chrono::nanoseconds> to_duration(std::optional<double> seconds,
                                                    std::string_view what) {
  if (!seconds) return std::nullopt;
  if (!(*seconds >= 0))
    raise(neat::invalid_argument(std::string(what) + ": timeout must be >= 0 seconds"));
  return std::chrono::nanoseconds(static_cast<std::int64_t>(*seconds * 1e9));
}

py::dict accounting_dict(const neat::FrameAccounting& a) {
  py::dict d;
  d["source_frames"] = a.source_frames;
  d["produced"] = a.produced;
  d["consumed"] = a.consumed;
  d["dropped"] = a.dropped;
  d["balanced"] = a.balanced();
  return d;
}

py::dict report_dict(const neat::RunReport& r) {
  py::dict d;
  d["frames"] = accounting_dict(r.frames);
  d["seconds"] = r.seconds;
  d["edge_frames"] = r.edge_frames;
  py::dict latency;
  for (const auto& [sink, s] : r.latency)
    latency[py::str(sink)] = duration_summary_dict(s);
  d["latency"] = latency;
  return d;
}

// ---- the graph's state, shared by the Graph object and its AppSinks ----------------

struct GraphState {
  std::string name;
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
  while (!st.graph->done()) {
    // Frames of appsinks nobody pulls from Python are taken here.
    bool took = false;
    neat::AppSink* waiting_on = nullptr;
    for (const auto& e : st.appsinks) {
      if (e.taken->load()) continue;
      while (auto f = e.sink->try_pull())
        took = true;
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
      py::module_ errors = py::module_::import("neat._errors");
      PyErr_SetObject(
          errors.attr("Timeout").ptr(),
          errors
              .attr("Timeout")("graph '" + st.name + "' still running after " +
                               std::to_string(std::chrono::duration<double>(*timeout).count()) +
                               " s; stop() it or wait longer")
              .ptr());
      throw py::error_already_set();
    }
  }
  auto r = without_gil([&] {
    std::lock_guard lock(st.mutex);
    return st.wait_locked();
  });
  return unwrap(std::move(r));
}

// ---- elements ------------------------------------------------------------------------

struct PyElement {
  neat::PipelineElement element;
  std::string text;  // the element as pipeline text, for errors that point into it
};

std::string quote(const std::string& v) {
  if (!v.empty() && v.find_first_of(" \t\"\\!") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::string property_text(const neat::PropertySpec* spec, py::handle value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::tuple>(value) || py::isinstance<py::list>(value)) {
    std::vector<std::string> parts;
    for (auto v : value)
      parts.push_back(py::str(v));
    const std::string sep = spec && spec->type == neat::PropertyType::Size ? "x" : ",";
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i)
      out += (i ? sep : "") + parts[i];
    return out;
  }
  return py::str(value);
}

PyElement make_element(const std::string& name, const py::kwargs& props) {
  const neat::ElementSpec* spec = neat::find_pipeline_element(name);
  if (spec == nullptr || name == "gst") {
    raise(neat::invalid_argument("element '" + name + "' is unknown (sources: " +
                                 neat::element_names(neat::ElementRole::Source) +
                                 "; stages: " + neat::element_names(neat::ElementRole::Stage) +
                                 "; sinks: " + neat::element_names(neat::ElementRole::Sink) +
                                 "); GStreamer pipelines: neat.gst(\"...\")"));
  }
  PyElement e;
  e.element.name = name;
  e.text = name;
  e.element.offset = 0;
  e.element.length = name.size();
  for (auto [k, v] : props) {
    const std::string key = py::str(k);
    const std::string value = property_text(spec->property(key), v);
    e.element.properties.emplace_back(key, value);
    e.text += " " + key + "=" + quote(value);
  }
  return e;
}

neat::BuiltElement build_element(const PyElement& e, neat::ElementRole role,
                                 const neat::PipelineOptions& options) {
  const neat::ElementSpec* spec = neat::find_pipeline_element(e.element.name);
  if (!spec->has_role(role)) {
    raise(neat::invalid_argument(
        "element '" + e.element.name + "' cannot be a " + std::string(neat::to_string(role)) +
        " (" + std::string(neat::to_string(role)) + "s: " + neat::element_names(role) + ")"));
  }
  neat::ElementArgs args(e.text, e.element, options);
  return unwrap(spec->make(args, role));
}

// ---- AppSink -------------------------------------------------------------------------------

struct PyAppSink {
  std::shared_ptr<neat::AppSink> sink;
  std::shared_ptr<std::atomic<bool>> taken = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<GraphState> graph;  // set once added to a graph: keeps it running
  std::string name;
};

py::object wrap_tensor(NeatTensor t) {
  return py::cast(PyTensor(std::move(t)));
}

[[noreturn]] void raise_timeout(const std::string& message) {
  py::module_ errors = py::module_::import("neat._errors");
  py::object exc = errors.attr("Timeout")(message);
  PyErr_SetObject(errors.attr("Timeout").ptr(), exc.ptr());
  throw py::error_already_set();
}

// The next frame; std::nullopt at the end (after raising the graph's error, if
// any) and, unless `raise_on_timeout`, on timeout.
std::optional<NeatTensor> next_frame(PyAppSink& s, std::optional<std::chrono::nanoseconds> timeout,
                                     bool raise_on_timeout) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = timeout ? start + *timeout : std::chrono::steady_clock::time_point::max();
  s.taken->store(true);
  for (;;) {
    if (auto f = s.sink->try_pull()) return f;
    const auto left = deadline - std::chrono::steady_clock::now();
    const auto slice = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::clamp<std::chrono::nanoseconds>(left, std::chrono::nanoseconds(0), kSlice));
    if (slice.count() > 0) {
      auto f = without_gil([&] { return s.sink->pull(slice); });
      if (f) return f;
    }
    if (s.sink->at_end()) {
      // The stream ended: a failed graph says why (it is done within a few
      // slices once its sinks ended).
      if (s.graph && s.graph->running_graph.load() != nullptr) {
        GraphState& st = *s.graph;
        for (int i = 0; i < 20 && !st.graph->done(); ++i)
          without_gil([] { std::this_thread::sleep_for(10ms); });
        if (st.graph->done()) {
          auto r = without_gil([&] {
            std::lock_guard lock(st.mutex);
            return st.wait_locked();
          });
          if (!r.ok()) raise(std::move(r).error());
        }
      }
      return std::nullopt;
    }
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (std::chrono::steady_clock::now() >= deadline) {
      if (!raise_on_timeout) return std::nullopt;
      raise_timeout("appsink '" + s.name + "': no frame within " +
                    std::to_string(std::chrono::duration<double>(*timeout).count()) +
                    " s (is the graph started? is its source live and sending?)");
    }
  }
}

// ---- PushSource --------------------------------------------------------------------------------

struct PyPushSource {
  std::shared_ptr<neat::PushSource> source;
  bool added = false;
};

// ---- Python stages
// -------------------------------------------------------------------------------

/// A Python callable as a stage: takes a neat.Tensor, returns a Tensor, a
/// numpy array (wrapped, no copy) or None (the frame is dropped: filtered).
class PythonStage final : public neat::Stage {
 public:
  PythonStage(py::object fn, neat::Accepts accepts, py::object output)
      : fn_(fn.release().ptr()), output_(output.release().ptr()), accepts_(std::move(accepts)) {
    py::gil_scoped_acquire gil;
    name_ = py::str(py::getattr(py::handle(fn_), "__qualname__",
                                py::getattr(py::handle(fn_), "__name__", py::str("callable"))));
  }
  ~PythonStage() override {
    release_object(fn_);
    release_object(output_);
  }
  std::string_view kind() const noexcept override { return "python"; }
  neat::Accepts accepts() const override { return accepts_; }
  std::string describe() const override { return "python " + name_; }

  neat::Result<FrameSpec> output_spec(const FrameSpec& input) const override {
    if (output_ == Py_None) {
      declared_ = input;
      return input;
    }
    py::gil_scoped_acquire gil;
    try {
      py::handle out(output_);
      py::object spec =
          py::isinstance<FrameSpec>(out) ? py::reinterpret_borrow<py::object>(out) : out(input);
      if (!py::isinstance<FrameSpec>(spec)) {
        return neat::invalid_argument("python stage " + name_ +
                                      ": output= must be a neat.FrameSpec or a callable "
                                      "returning one");
      }
      declared_ = spec.cast<FrameSpec>();
      return *declared_;
    } catch (py::error_already_set& e) {
      return neat::invalid_argument("python stage " + name_ + ": output= raised " + e.what());
    }
  }

  neat::Result<NeatTensor> process(NeatTensor frame, neat::StageContext&) override {
    py::gil_scoped_acquire gil;
    try {
      py::object r = py::handle(fn_)(wrap_tensor(std::move(frame)));
      if (r.is_none()) return NeatTensor{};
      NeatTensor out = as_tensor(r, "python stage " + name_ + " result");
      if (declared_) {
        const FrameSpec got = FrameSpec::of(out);
        const FrameSpec& want = *declared_;
        const bool same = got.dtype == want.dtype && got.format == want.format &&
                          (want.is_image() ? got.width == want.width && got.height == want.height
                                           : got.shape == want.shape);
        if (!same) {
          return neat::failed_precondition(
              "python stage " + name_ + " returned " + got.to_string() +
              " but its output spec is " + want.to_string() +
              "; pass output=neat.FrameSpec(...) (or a function of the input "
              "spec) to add_stage");
        }
      }
      return out;
    } catch (py::error_already_set& e) {
      return error_of(e);
    } catch (const NeatException& e) {
      return e.error;
    } catch (const std::exception& e) {
      return neat::internal_error("python stage " + name_ + ": " + e.what());
    }
  }

 private:
  neat::Error error_of(py::error_already_set& e) const {
    // A neat error raised inside the callable keeps its code.
    neat::ErrorCode code = neat::ErrorCode::FailedPrecondition;
    if (e.value() && py::hasattr(e.value(), "code")) {
      const std::string c = py::str(e.value().attr("code"));
      for (int i = 1; i <= 8; ++i) {
        if (neat::to_string(static_cast<neat::ErrorCode>(i)) == c)
          code = static_cast<neat::ErrorCode>(i);
      }
    }
    return neat::Error(code, "python stage " + name_ + " raised " + e.what());
  }

  PyObject* fn_;
  PyObject* output_;
  neat::Accepts accepts_;
  std::string name_;
  mutable std::optional<FrameSpec> declared_;
};

// ---- the Graph object
// -----------------------------------------------------------------------------

struct PyGraph {
  std::shared_ptr<GraphState> st;
  ~PyGraph() {
    // The last holder's destructor joins the graph's threads: never with the GIL.
    without_gil([&] { st.reset(); });
  }
};

GraphState& state(PyGraph& g) {
  return *g.st;
}

void build_graph(GraphState& st) {
  if (!st.policy_set && st.builder) {
    if (auto p = neat::scoped_policy()) st.builder->set_policy(*p);
  }
  without_gil([&] {
    std::lock_guard lock(st.mutex);
    st.ensure_built_locked();
  });
}

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

py::dict stats_dict(const neat::GraphStats& s) {
  py::dict d;
  d["graph"] = s.graph;
  d["running"] = s.running;
  d["seconds"] = s.seconds;
  d["frame_memory_bytes"] = s.frame_memory_bytes;
  d["frames"] = accounting_dict(s.frames);
  py::list nodes;
  for (const auto& n : s.nodes) {
    py::dict nd;
    nd["name"] = n.name;
    nd["kind"] = n.kind == neat::NodeKind::Source  ? "source"
                 : n.kind == neat::NodeKind::Stage ? "stage"
                                                   : "sink";
    nd["frames_in"] = n.frames_in;
    nd["frames_out"] = n.frames_out;
    nd["dropped"] = n.dropped;
    nd["busy"] = duration_summary_dict(n.busy_summary);
    nd["queue_wait"] = duration_summary_dict(n.queue_wait);
    nd["latency"] = duration_summary_dict(n.latency);
    nodes.append(nd);
  }
  d["nodes"] = nodes;
  py::list edges;
  for (const auto& e : s.edges) {
    py::dict ed;
    ed["name"] = e.name;
    ed["frames"] = e.frames;
    ed["queue_depth"] = e.queue_depth;
    ed["capacity"] = e.capacity;
    edges.append(ed);
  }
  d["edges"] = edges;
  py::list pools;
  for (const auto& p : s.pools) {
    py::dict pd;
    pd["name"] = p.name;
    pd["frame_bytes"] = p.frame_bytes;
    pd["planned_buffers"] = p.planned_buffers;
    pd["peak_buffers"] = p.peak_buffers;
    pools.append(pd);
  }
  d["pools"] = pools;
  return d;
}

py::dict plan_dict(const neat::GraphPlan& p) {
  py::dict d;
  d["graph"] = p.graph;
  d["policy"] = std::string(neat::to_string(p.policy));
  d["frame_memory_bytes"] = p.frame_memory_bytes();
  d["edge_bytes_per_frame"] = p.edge_bytes_per_frame();
  d["inner_bytes_per_frame"] = p.inner_bytes_per_frame();
  py::list nodes;
  for (const auto& n : p.nodes) {
    py::dict nd;
    nd["name"] = n.name;
    nd["description"] = n.description;
    nd["output"] = n.output.to_string();
    nodes.append(nd);
  }
  d["nodes"] = nodes;
  py::list edges;
  for (const auto& e : p.edges) {
    py::dict ed;
    ed["name"] = e.name;
    ed["produced"] = e.produced.to_string();
    ed["consumed"] = e.consumed.to_string();
    ed["policy"] = std::string(neat::to_string(e.policy));
    ed["bytes_per_frame"] = e.bytes_per_frame();
    ed["capacity"] = e.capacity;
    py::list convs;
    for (const auto& c : e.conversions) {
      py::dict cd;
      cd["kind"] = std::string(neat::to_string(c.kind));
      cd["reason"] = std::string(neat::to_string(c.reason));
      cd["what"] = c.what;
      cd["bytes_per_frame"] = c.bytes_per_frame;
      cd["fix"] = c.fix;
      convs.append(cd);
    }
    ed["conversions"] = convs;
    edges.append(ed);
  }
  d["edges"] = edges;
  return d;
}

neat::Accepts accepts_from(std::optional<std::vector<std::string>> dtypes,
                           std::optional<std::vector<std::string>> formats,
                           std::optional<std::vector<std::string>> layouts, bool contiguous,
                           bool writes) {
  neat::Accepts a;
  if (dtypes)
    for (const auto& d : *dtypes)
      a.dtypes.push_back(parse_dtype(d));
  if (formats) {
    for (const auto& f : *formats)
      a.formats.push_back(f == "dense" ? neat::PixelFormat::None : parse_format(f));
  }
  if (layouts) {
    for (const auto& l : *layouts) {
      bool found = false;
      for (auto v : {neat::Layout::HWC, neat::Layout::CHW, neat::Layout::HW, neat::Layout::None}) {
        std::string n(neat::to_string(v));
        std::string lower = n;
        for (auto& c : lower)
          c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (l == n || l == lower) {
          a.layouts.push_back(v);
          found = true;
        }
      }
      if (!found)
        raise(neat::invalid_argument("layout '" + l + "' is not one of: hwc, chw, hw, none"));
    }
  }
  a.contiguous = contiguous;
  a.writes = writes;
  return a;
}

}  // namespace

void bind_graph(py::module_& m) {
  // ---- FrameSpec / Accepts ------------------------------------------------------------------
  py::class_<FrameSpec>(m, "FrameSpec", R"doc(
What an edge carries, as known at build(): dtype, pixel format, layout, size
(images) or shape (dense), device, contiguity, colour standard, frame rate.)doc")
      .def(py::init([](const std::string& dtype, const std::vector<std::int64_t>& shape) {
             FrameSpec s;
             s.dtype = parse_dtype(dtype);
             for (auto x : shape)
               s.shape.push_back(x);
             return s;
           }),
           py::arg("dtype"), py::arg("shape"), "A dense, contiguous CPU tensor spec.")
      .def_static(
          "image",
          [](const std::string& format, std::int64_t w, std::int64_t h) {
            return FrameSpec::image(parse_format(format), w, h);
          },
          py::arg("format"), py::arg("width"), py::arg("height"),
          "An image spec in the format's default layout, contiguous, on the CPU.")
      .def_static(
          "of", [](py::handle t) { return FrameSpec::of(as_tensor(t, "FrameSpec.of")); },
          py::arg("tensor"), "The spec of an existing tensor (or numpy array).")
      .def_property_readonly(
          "dtype", [](const FrameSpec& s) { return std::string(neat::to_string(s.dtype)); })
      .def_property_readonly("format",
                             [](const FrameSpec& s) -> py::object {
                               if (!s.is_image()) return py::none();
                               return py::str(std::string(neat::to_string(s.format)));
                             })
      .def_readonly("width", &FrameSpec::width)
      .def_readonly("height", &FrameSpec::height)
      .def_property_readonly("shape",
                             [](const FrameSpec& s) {
                               std::vector<std::int64_t> v(s.shape.begin(), s.shape.end());
                               return py::tuple(py::cast(v));
                             })
      .def_property_readonly("device", [](const FrameSpec& s) { return neat::to_string(s.device); })
      .def_readonly("contiguous", &FrameSpec::contiguous)
      .def_property_readonly("bytes", &FrameSpec::bytes, "Bytes of one frame.")
      .def(py::self == py::self)
      .def("__repr__", [](const FrameSpec& s) { return "neat.FrameSpec(" + s.to_string() + ")"; });

  // ---- elements -------------------------------------------------------------------------------
  py::class_<PyElement>(m, "Element", R"doc(
An element of the pipeline registry (`neat elements` lists them) with its
properties: built when added to a graph, where its errors surface.)doc")
      .def_property_readonly("name", [](const PyElement& e) { return e.element.name; })
      .def("__repr__", [](const PyElement& e) { return "neat.Element(" + e.text + ")"; });
  m.def("element", &make_element, py::arg("name"),
        R"doc(An element of the registry with its properties as keywords, e.g.
neat.element("preprocess", size=(640, 640), mean=(0.485, 0.456, 0.406)),
neat.element("infer", model="models:detector"), neat.element("default").
Tuples become "a,b,c" (sizes "WxH"); the registry checks the values.)doc");
  m.def(
      "gst",
      [](const std::string& description) {
        PyElement e;
        e.element.name = "gst";
        e.element.gst = description;
        e.text = "gst:" + quote(description);
        e.element.length = e.text.size();
        return e;
      },
      py::arg("description"),
      "A GStreamer pipeline: as a source it ends in an appsink (the caps say what it gives); as "
      "a sink it is fed by an appsrc.");
  m.def(
      "elements", [] { return neat::describe_elements(); },
      "What `neat elements` prints: every element and its summary.");

  // ---- AppSink ----------------------------------------------------------------------------------
  py::class_<PyAppSink, std::shared_ptr<PyAppSink>>(m, "AppSink", R"doc(
Frames handed to Python: iterate it (`for frame in sink:`), pull(timeout) or
try_pull(). Waiting releases the GIL. Bounded: a full queue holds the graph
back (overflow="block") or drops the oldest frame (overflow="drop_oldest").
At the end of the stream iteration stops, raising the graph's error if it
failed.)doc")
      .def(py::init([](std::size_t capacity, const std::string& overflow) {
             if (capacity == 0) raise(neat::invalid_argument("AppSink: capacity must be >= 1"));
             neat::AppSinkOptions o;
             o.capacity = capacity;
             if (overflow == "block") {
               o.overflow = neat::Overflow::Block;
             } else if (overflow == "drop_oldest") {
               o.overflow = neat::Overflow::DropOldest;
             } else {
               raise(neat::invalid_argument("AppSink: overflow '" + overflow +
                                            "' is not one of: block, drop_oldest"));
             }
             auto s = std::make_shared<PyAppSink>();
             s->sink = neat::AppSink::create(o);
             return s;
           }),
           py::arg("capacity") = 1, py::arg("overflow") = "block")
      .def(
          "pull",
          [](PyAppSink& s, std::optional<double> timeout) -> py::object {
            s.taken->store(true);
            auto f = next_frame(s, to_duration(timeout, "AppSink.pull"), false);
            if (!f) return py::none();
            return wrap_tensor(std::move(*f));
          },
          py::arg("timeout") = py::none(),
          "The next frame, waiting up to timeout seconds (None: until one comes or the stream "
          "ends); None on timeout or at the end (tell them apart with at_end).")
      .def(
          "try_pull",
          [](PyAppSink& s) -> py::object {
            s.taken->store(true);
            auto f = s.sink->try_pull();
            if (!f) return py::none();
            return wrap_tensor(std::move(*f));
          },
          "The next frame if one is queued, else None.")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__",
           [](PyAppSink& s) {
             auto f = next_frame(s, std::nullopt, true);
             if (!f) throw py::stop_iteration();
             return wrap_tensor(std::move(*f));
           })
      .def(
          "_next",
          [](PyAppSink& s, std::optional<double> timeout) {
            auto f = next_frame(s, to_duration(timeout, "AppSink.frames"), true);
            if (!f) throw py::stop_iteration();
            return wrap_tensor(std::move(*f));
          },
          py::arg("timeout") = py::none())
      .def_property_readonly(
          "at_end", [](const PyAppSink& s) { return s.sink->at_end(); },
          "True once the stream ended (or the graph stopped) and every frame "
          "was pulled.")
      .def_property_readonly("name", [](const PyAppSink& s) { return s.name; })
      .def_property_readonly("capacity",
                             [](const PyAppSink& s) { return s.sink->options().capacity; })
      .def_property_readonly("stats",
                             [](const PyAppSink& s) {
                               auto st = s.sink->stats();
                               py::dict d;
                               d["received"] = st.received;
                               d["pulled"] = st.pulled;
                               d["dropped"] = st.dropped;
                               d["queued"] = st.queued;
                               return d;
                             })
      .def("__repr__", [](const PyAppSink& s) {
        return "neat.AppSink(" +
               (s.name.empty() ? std::string("<not in a graph>") : "'" + s.name + "'") +
               ", capacity " + std::to_string(s.sink->options().capacity) + ")";
      });

  // ---- PushSource
  // -----------------------------------------------------------------------------------
  py::class_<PyPushSource, std::shared_ptr<PyPushSource>>(m, "PushSource", R"doc(
A source fed from Python: push(tensor or numpy array) (zero copy: an array is
wrapped, the graph keeps it alive while it holds the frame), end_of_stream()
(or leave its `with` block). Frames must match the spec (checked on push).)doc")
      .def(py::init([](py::object spec, std::size_t capacity) {
             if (capacity == 0) raise(neat::invalid_argument("PushSource: capacity must be >= 1"));
             FrameSpec fs = py::isinstance<FrameSpec>(spec)
                                ? spec.cast<FrameSpec>()
                                : FrameSpec::of(as_tensor(spec, "PushSource(spec)"));
             auto s = std::make_shared<PyPushSource>();
             s->source = neat::PushSource::create(fs, capacity);
             return s;
           }),
           py::arg("spec"), py::arg("capacity") = 4,
           "spec: a neat.FrameSpec, or a tensor / numpy array whose spec the frames will have.")
      .def(
          "push",
          [](PyPushSource& s, py::handle frame, double timeout) {
            if (py::isinstance<PyTensor>(frame)) {
              const PyTensor& pt = frame.cast<const PyTensor&>();
              if (pt.exports > 0 && pt.export_map && pt.export_map->writable()) {
                raise(neat::failed_precondition(
                    "PushSource.push: the tensor is still writable through " +
                    std::to_string(pt.exports) +
                    " numpy array(s) (numpy.asarray of a writable tensor); a graph's frames are "
                    "immutable: `del` the arrays first, or push(t.clone())"));
              }
            }
            NeatTensor t = as_tensor(frame, "PushSource.push");
            const auto ms = std::chrono::milliseconds(static_cast<std::int64_t>(timeout * 1000));
            if (!(timeout >= 0))
              raise(neat::invalid_argument("PushSource.push: timeout must be >= 0"));
            check(without_gil([&] { return s.source->push(std::move(t), ms); }));
          },
          py::arg("frame"), py::arg("timeout") = 10.0,
          "Queues a frame, waiting up to timeout seconds while the graph is behind "
          "(neat.ResourceExhausted on timeout).")
      .def(
          "end_of_stream", [](PyPushSource& s) { s.source->end_of_stream(); },
          "No more frames: the graph drains what is queued, then ends.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](PyPushSource& s, py::args) {
             s.source->end_of_stream();
             return false;
           })
      .def_property_readonly("spec", [](const PyPushSource& s) { return *s.source->prepare(); });

  // ---- Graph
  // --------------------------------------------------------------------------------------------
  py::class_<PyGraph>(m, "Graph", R"doc(
A stage graph: declare nodes (sources, stages, sinks) and edges, then
explain(), run(), or start() / stop() / wait(). build() (implicit in run and
start) checks every edge; under Strict every implicit conversion fails it,
listed with its bytes per frame and the stage that would avoid it.)doc")
      .def(py::init([](const std::string& name, std::optional<std::string> policy,
                       std::optional<std::int64_t> max_frame_memory) {
             PyGraph g{new_state(name)};
             g.st->builder.emplace(name);
             if (policy) {
               g.st->builder->set_policy(parse_policy(*policy));
               g.st->policy_set = true;
             }
             if (max_frame_memory) g.st->builder->set_max_frame_memory(*max_frame_memory);
             g.st->options.graph_name = name;
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
              auto built = build_element(source.cast<const PyElement&>(), neat::ElementRole::Source,
                                         st.options);
              b.add_source(name, std::move(built.source));
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
              auto built = without_gil([&] {
                py::gil_scoped_acquire gil;
                return build_element(stage.cast<const PyElement&>(), neat::ElementRole::Stage,
                                     st.options);
              });
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
              b.add_stage(name, std::make_unique<PythonStage>(stage, a, output), so);
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
          py::arg("name"), py::arg("sink"), py::return_value_policy::reference_internal)
      .def(
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
            py::object a = py::module_::import("neat._neat").attr("_parse_action")(action);
            budget.action = static_cast<neat::RuleAction>(a.cast<int>());
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
            r.kinds.clear();
            for (const auto& k : kinds) {
              auto kind = neat::parse_conversion_kind(k);
              if (!kind)
                raise(neat::invalid_argument(
                    "conversion kind '" + k +
                    "' is not one of: reinterpret, view, pack, convert, transfer"));
              r.kinds.push_back(*kind);
            }
            r.edge = edge;
            py::object a = py::module_::import("neat._neat").attr("_parse_action")(action);
            r.action = static_cast<neat::RuleAction>(a.cast<int>());
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
          "A budget for the frames the graph holds at once; build() lowers queues to fit or fails.")
      .def(
          "plan",
          [](PyGraph& g) {
            auto& st = state(g);
            if (st.graph) return plan_dict(st.graph->plan());
            if (!st.policy_set && st.builder) {
              if (auto p = neat::scoped_policy()) st.builder->set_policy(*p);
            }
            auto plan = without_gil([&] {
              std::lock_guard lock(st.mutex);
              if (!st.builder)
                return neat::Result<neat::GraphPlan>(
                    neat::failed_precondition("graph '" + st.name + "': nothing to plan"));
              return st.builder->plan();
            });
            return plan_dict(unwrap(std::move(plan)));
          },
          "The plan as a dict (nodes, edges, conversions, bytes per frame, frame memory), without "
          "side effects when not built yet.")
      .def(
          "explain",
          [](PyGraph& g) {
            auto& st = state(g);
            if (st.graph) return st.graph->explain();
            if (!st.policy_set && st.builder) {
              if (auto p = neat::scoped_policy()) st.builder->set_policy(*p);
            }
            auto plan = without_gil([&] {
              std::lock_guard lock(st.mutex);
              if (!st.builder)
                return neat::Result<neat::GraphPlan>(
                    neat::failed_precondition("graph '" + st.name + "': nothing to explain"));
              return st.builder->plan();
            });
            return unwrap(std::move(plan)).explain();
          },
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
          "Live per-node and per-edge counts, queue depths, latencies, pools (None before build).")
      .def("prometheus_text",
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
             for (const auto& b : gr->rule_breaches()) {
               py::dict d;
               d["rule"] = b.rule;
               d["frame"] = b.frame;
               d["bytes"] = b.bytes;
               d["conversion"] = b.conversion;
               out.append(d);
             }
             return out;
           })
      .def_property_readonly(
          "appsink",
          [](PyGraph& g) -> py::object {
            auto& st = state(g);
            if (st.appsinks.empty()) return py::none();
            return py::cast(appsink_object(g.st, st.appsinks.front()));
          },
          "The first appsink (None when the graph has none).")
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

  m.def(
      "pipeline",
      [](const std::string& text, std::optional<std::string> policy, const std::string& name,
         std::int64_t frames, double first_frame_timeout) {
        PyGraph g{new_state(name)};
        neat::PipelineOptions o;
        o.graph_name = name;
        o.policy = parse_optional_policy(policy);
        if (!o.policy) o.policy = neat::scoped_policy();
        o.default_frames = frames;
        if (!(first_frame_timeout > 0))
          raise(neat::invalid_argument("pipeline: first_frame_timeout must be > 0 seconds"));
        o.first_frame_timeout =
            std::chrono::milliseconds(static_cast<std::int64_t>(first_frame_timeout * 1000));
        o.timeout_setting = "first_frame_timeout=";
        auto declared = unwrap(without_gil([&] { return neat::declare_pipeline(text, o); }));
        g.st->builder.emplace(std::move(declared.builder));
        for (auto& [name, sink] : declared.appsinks)
          g.st->appsinks.push_back({name, sink, std::make_shared<std::atomic<bool>>(false)});
        g.st->options = o;
        g.st->policy_set = true;
        return g;
      },
      py::arg("text") = neat::default_pipeline_text(), py::kw_only(),
      py::arg("policy") = py::none(), py::arg("name") = "pipeline", py::arg("frames") = 300,
      py::arg("first_frame_timeout") = 20.0,
      R"doc(A graph from the pipeline text of `neat run` (default: the built-in detection
demo), declared, not built: explain(), start(), run(); graph.appsink is its
first appsink. frames: frames of the `default` source.)doc");
  m.def("default_pipeline_text", &neat::default_pipeline_text,
        "The built-in demo pipeline's text.");
  py::class_<neat::Accepts>(m, "Accepts", "What a Python stage takes (empty lists: anything).")
      .def(py::init(&accepts_from), py::kw_only(), py::arg("dtypes") = py::none(),
           py::arg("formats") = py::none(), py::arg("layouts") = py::none(),
           py::arg("contiguous") = false, py::arg("writes") = false)
      .def("__repr__",
           [](const neat::Accepts& a) { return "neat.Accepts(" + a.to_string() + ")"; });
  m.def("_parse_action", [](const std::string& a) {
    if (a == "by_policy") return static_cast<int>(neat::RuleAction::ByPolicy);
    if (a == "fail") return static_cast<int>(neat::RuleAction::Fail);
    if (a == "warn") return static_cast<int>(neat::RuleAction::Warn);
    if (a == "count") return static_cast<int>(neat::RuleAction::Count);
    raise(neat::invalid_argument("action '" + a + "' is not one of: by_policy, fail, warn, count"));
  });

  // The C++ baseline of the Python benchmark: the same pipeline, its appsink
  // pulled in C++ as `neat run` does, in this process.
  m.def(
      "_run_cpp",
      [](const std::string& text, std::int64_t frames) {
        return unwrap(without_gil([&] {
          neat::PipelineOptions o;
          o.default_frames = frames;
          auto declared = neat::declare_pipeline(text, o);
          if (!declared.ok())
            return neat::Result<std::pair<std::uint64_t, double>>(declared.error());
          auto g = declared->builder.build();
          if (!g.ok()) return neat::Result<std::pair<std::uint64_t, double>>(g.error());
          const auto t0 = std::chrono::steady_clock::now();
          if (auto s = g->start(); !s.ok())
            return neat::Result<std::pair<std::uint64_t, double>>(s.error());
          std::uint64_t pulled = 0;
          for (;;) {
            if (auto f = declared->appsink->pull(200ms)) {
              ++pulled;
            } else if (declared->appsink->at_end() || g->done()) {
              break;
            }
          }
          auto r = g->wait();
          if (!r.ok()) return neat::Result<std::pair<std::uint64_t, double>>(r.error());
          const double s =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          return neat::Result<std::pair<std::uint64_t, double>>(std::make_pair(pulled, s));
        }));
      },
      py::arg("text"), py::arg("frames") = 300);

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

}  // namespace neatpy

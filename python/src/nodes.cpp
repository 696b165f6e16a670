// The nodes of a graph from Python: registry elements (neat.element,
// neat.gst), appsinks iterated as tensors, push sources fed with numpy, Python
// callables as stages, FrameSpec and Accepts. Every wait releases the GIL in
// slices; a Python stage takes the GIL on the graph's thread.
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <thread>

#include <neat/kernels/model.hpp>
#include "graph_state.hpp"

namespace neatpy {

using namespace std::chrono_literals;
using neat::FrameSpec;
using neat::NeatTensor;

std::optional<std::chrono::nanoseconds> to_duration(std::optional<double> seconds,
                                                    std::string_view what) {
  if (!seconds) return std::nullopt;
  if (!(*seconds >= 0))
    raise(neat::invalid_argument(std::string(what) + ": timeout must be >= 0 seconds"));
  return std::chrono::nanoseconds(static_cast<std::int64_t>(*seconds * 1e9));
}

namespace {

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

}  // namespace

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
    std::string key = py::str(k);
    // Python keywords spell a property's '-' as '_' (input_shape: input-shape).
    if (spec->property(key) == nullptr) {
      std::string dashed = key;
      std::replace(dashed.begin(), dashed.end(), '_', '-');
      if (spec->property(dashed) != nullptr) key = std::move(dashed);
    }
    const std::string value = property_text(spec->property(key), v);
    e.element.properties.emplace_back(key, value);
    e.text += " " + key + "=" + quote(value);
  }
  return e;
}

neat::BuiltElement build_element(const PyElement& e, neat::ElementRole role,
                                 const neat::PipelineOptions& options, neat::SourceOptions* source,
                                 neat::StageOptions* stage) {
  const neat::ElementSpec* spec = neat::find_pipeline_element(e.element.name);
  if (!spec->has_role(role)) {
    raise(neat::invalid_argument(
        "element '" + e.element.name + "' cannot be a " + std::string(neat::to_string(role)) +
        " (" + std::string(neat::to_string(role)) + "s: " + neat::element_names(role) + ")"));
  }
  neat::ElementArgs args(e.text, e.element, options);
  // The graph's own properties of a source (stall-timeout=, restart=, rate=)
  // and a stage (max-latency=), for add_source / add_stage.
  if (source != nullptr) *source = unwrap(args.source_options());
  if (stage != nullptr) {
    stage->max_latency = unwrap(args.duration("max-latency", std::chrono::milliseconds(0)));
  }
  return unwrap(spec->make(args, role));
}

namespace {

// The next frame; std::nullopt at the end (after raising the graph's error, if
// any) and, unless `raise_on_timeout`, on timeout.
std::optional<NeatTensor> next_frame(PyAppSink& s, std::optional<std::chrono::nanoseconds> timeout,
                                     bool raise_on_timeout) {
  // Iterating an appsink of a graph not started yet starts it (it used to
  // wait forever); one in no graph cannot get a frame.
  if (!s.graph) {
    raise(neat::failed_precondition(
        "appsink '" + s.name +
        "' is in no graph, so no frame can come: add it with graph.add_sink(name, sink) "
        "and connect a node to it"));
  }
  start_if_idle(*s.graph);
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
          if (!r.ok()) raise_graph_error(st, std::move(r).error());
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

// ---- Python stages
// -------------------------------------------------------------------------------

/// A Python callable as a stage: takes a neat.Tensor, returns a Tensor, a
/// numpy array (wrapped, no copy) or None (the frame is dropped: filtered).
class PythonStage final : public neat::Stage {
 public:
  PythonStage(py::object fn, neat::Accepts accepts, py::object output,
              std::shared_ptr<StageException> raised)
      : fn_(fn.release().ptr()),
        output_(output.release().ptr()),
        accepts_(std::move(accepts)),
        raised_(std::move(raised)) {
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
    if (output_ == Py_None) return input;
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
      return spec.cast<FrameSpec>();
    } catch (py::error_already_set& e) {
      return neat::invalid_argument("python stage " + name_ + ": output= raised " + e.what());
    }
  }

  neat::Status prepare(const FrameSpec&, const FrameSpec& output) override {
    declared_ = output;  // what a numpy result stands for, and what results are checked against
    return {};
  }

  neat::Result<NeatTensor> process(NeatTensor frame, neat::StageContext&) override {
    py::gil_scoped_acquire gil;
    try {
      py::object r = py::handle(fn_)(export_tensor(std::move(frame)));
      if (r.is_none()) return NeatTensor{};
      NeatTensor out = wrap_argument(r, "python stage " + name_ + " result");
      // A numpy array stands for the image the stage declared (its pixels).
      if (declared_ && !py::isinstance<PyTensor>(r) && !out.is_image() &&
          neat::is_interleaved(declared_->format)) {
        neat::ImageSpec image{.format = declared_->format,
                              .width = declared_->width,
                              .height = declared_->height,
                              .layout = declared_->layout};
        if (auto as_image = out.as_image(image); as_image.ok()) out = std::move(*as_image);
      }
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
      if (auto c = error_code_named(std::string(py::str(e.value().attr("code"))))) code = *c;
    }
    // A Python exception (not a neat error) reaches Python again as itself.
    if (raised_ && raised_->value == nullptr && e.value() && !py::hasattr(e.value(), "code"))
      raised_->value = e.value().inc_ref().ptr();
    return neat::Error(code, "python stage " + name_ + " raised " + e.what());
  }

  PyObject* fn_;
  PyObject* output_;
  neat::Accepts accepts_;
  std::shared_ptr<StageException> raised_;  // its value is touched with the GIL only
  std::string name_;
  std::optional<FrameSpec> declared_;  // set by prepare()
};

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
  if (layouts)
    for (const auto& l : *layouts)
      a.layouts.push_back(parse_layout(l, true));
  a.contiguous = contiguous;
  a.writes = writes;
  return a;
}

}  // namespace

std::unique_ptr<neat::Stage> python_stage(py::object fn, neat::Accepts accepts, py::object output,
                                          std::shared_ptr<StageException> raised) {
  return std::make_unique<PythonStage>(std::move(fn), std::move(accepts), std::move(output),
                                       std::move(raised));
}

namespace {

// FrameSpec: what flows on an edge.
void bind_frame_spec(py::module_& m) {
  // ---- FrameSpec / Accepts ------------------------------------------------------------------
  py::class_<FrameSpec>(m, "FrameSpec", R"doc(
What an edge carries, as known at build(): dtype, pixel format, layout, size
(images) or shape (dense), device, contiguity, colour standard, frame rate.)doc")
      .def(py::init([](const std::string& dtype, const std::vector<std::int64_t>& shape) {
             FrameSpec s;
             s.dtype = parse_dtype(dtype);
             if (shape.size() > static_cast<std::size_t>(neat::kMaxRank))
               raise(neat::invalid_argument("FrameSpec: rank " + std::to_string(shape.size()) +
                                            " is above " + std::to_string(neat::kMaxRank)));
             for (auto x : shape) {
               if (x < 0)
                 raise(neat::invalid_argument("FrameSpec: extent " + std::to_string(x) +
                                              " is negative"));
               s.shape.push_back(x);
             }
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
          "of", [](py::handle t) { return FrameSpec::of(wrap_argument(t, "FrameSpec.of")); },
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
}

// Elements of the pipeline text and their listing.
void bind_elements(py::module_& m) {
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

  // ---- libtorch's thread and memory ------------------------------------------------------------
  m.def(
      "on_torch_thread",
      [](const py::function& fn) {
        py::object result;
        {
          py::gil_scoped_release release;  // the thread takes the GIL to call fn
          neat::on_torch_thread([&] {
            py::gil_scoped_acquire acquire;
            result = fn();
          });
        }
        return result;
      },
      py::arg("fn"),
      R"doc(Calls fn() on the one thread that runs every libtorch model of the
process and returns what it returns (an exception it raises comes back
here). libtorch parallelises on OpenMP, which gives each thread that starts
parallel work its own team; with more team threads than cores every
parallel region waits for its workers to wake (yolov8n: 40 ms a forward
instead of 29). Your own torch work in a process that runs libtorch models
belongs on this thread: neat.on_torch_thread(lambda: net(x)). fn must not
wait for a graph that runs a libtorch model (its forward waits for this
thread).)doc");
  m.def(
      "torch_block_cache",
      [] {
        const neat::TorchBlockCacheStats s = neat::torch_block_cache_stats();
        py::dict d;
        d["installed"] = s.installed;
        d["limit_bytes"] = s.limit_bytes;
        d["held_bytes"] = s.held_bytes;
        d["reused"] = s.reused;
        d["from_system"] = s.from_system;
        d["released"] = s.released;
        return d;
      },
      R"doc(The block cache NeatTensor installs as libtorch's CPU allocator when
the first TorchScript model loads: installed, limit_bytes, held_bytes (free
blocks kept for the next forward), reused, from_system, released. The
environment variable NEAT_TORCH_BLOCK_CACHE_MIB sets its limit (0: torch's
own allocator).)doc");
}

// AppSink: frames handed to Python.
void bind_appsink(py::module_& m) {
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
             } else if (overflow == "drop_oldest" || overflow == "drop-oldest") {
               o.overflow = neat::Overflow::DropOldest;
             } else {
               raise(neat::invalid_argument("AppSink: overflow '" + overflow +
                                            "' is not one of: block, drop_oldest (or drop-oldest, "
                                            "as the pipeline text spells it)"));
             }
             auto s = std::make_shared<PyAppSink>();
             s->sink = neat::AppSink::create(o);
             return s;
           }),
           py::arg("capacity") = 1, py::arg("overflow") = "block")
      .def(
          "pull",
          [](PyAppSink& s, std::optional<double> timeout) -> py::object {
            auto f = next_frame(s, to_duration(timeout, "AppSink.pull"), false);
            if (!f) return py::none();
            return export_tensor(std::move(*f));
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
            return export_tensor(std::move(*f));
          },
          "The next frame if one is queued, else None.")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__",
           [](PyAppSink& s) {
             auto f = next_frame(s, std::nullopt, true);
             if (!f) throw py::stop_iteration();
             return export_tensor(std::move(*f));
           })
      .def(
          "_next",
          [](PyAppSink& s, std::optional<double> timeout) {
            auto f = next_frame(s, to_duration(timeout, "AppSink.frames"), true);
            if (!f) throw py::stop_iteration();
            return export_tensor(std::move(*f));
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
}

// PushSource (frames pushed from Python) and Accepts.
void bind_push_source(py::module_& m) {
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
                                : FrameSpec::of(wrap_argument(spec, "PushSource(spec)"));
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
            if (!(timeout >= 0))
              raise(neat::invalid_argument("PushSource.push: timeout must be >= 0 seconds"));
            NeatTensor t = wrap_argument(frame, "PushSource.push");
            // A numpy array stands for the declared interleaved image (its
            // pixels, H x W x C), as a Python stage's result does: a view.
            const FrameSpec& want = s.source->spec();
            if (!py::isinstance<PyTensor>(frame) && !t.is_image() &&
                neat::is_interleaved(want.format)) {
              auto image = t.as_image(neat::ImageSpec{.format = want.format,
                                                      .width = want.width,
                                                      .height = want.height,
                                                      .layout = want.layout});
              if (!image.ok()) {
                raise(neat::invalid_argument(
                    "PushSource.push: the array is " + FrameSpec::of(t).to_string() +
                    ", the source takes " + want.to_string() + " (" + std::to_string(want.height) +
                    " x " + std::to_string(want.width) + " x channels of " +
                    std::string(neat::to_string(want.dtype)) +
                    "); give an array of that shape, or a tensor: neat.from_numpy(a, format=\"" +
                    std::string(neat::to_string(want.format)) + "\")"));
              }
              t = std::move(*image);
            }
            const auto ms = std::chrono::milliseconds(static_cast<std::int64_t>(timeout * 1000));
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

  py::class_<neat::Accepts>(m, "Accepts", "What a Python stage takes (empty lists: anything).")
      .def(py::init(&accepts_from), py::kw_only(), py::arg("dtypes") = py::none(),
           py::arg("formats") = py::none(), py::arg("layouts") = py::none(),
           py::arg("contiguous") = false, py::arg("writes") = false)
      .def("__repr__",
           [](const neat::Accepts& a) { return "neat.Accepts(" + a.to_string() + ")"; });
}

}  // namespace

void bind_nodes(py::module_& m) {
  bind_frame_spec(m);
  bind_elements(m);
  bind_appsink(m);
  bind_push_source(m);
}

}  // namespace neatpy

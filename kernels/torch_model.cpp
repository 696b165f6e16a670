// The libtorch engine of neat::Model: a TorchScript file, frozen for
// inference, run with nothing copied at its boundary. The input is handed to
// torch over its own mapped bytes (torch::from_blob; the frame stays mapped
// for the call); each output is the at::Tensor torch made, shared with the
// NeatTensor read-only (the NeatTensor's storage keeps the at::Tensor alive).
// So the model declares no copies: explain lists none and says why.
//
// Built into the plugin libneat_torch.so with torch_block_cache.cpp, so that
// libtorch loads with the first TorchScript model (kernels/torch_engine.cpp).

#include <ATen/Parallel.h>
#include <torch/script.h>

#include <torch/csrc/jit/ir/alias_analysis.h>

#include <mutex>
#include <nlohmann/json.hpp>

#include "neat/contract/mapping.hpp"
#include "neat/kernels/internal/model_engine.hpp"
#include "neat/storage/external.hpp"

namespace neat {
namespace {

PoolSizeHold& torch_pool() {
  // OpenMP's thread count is per thread: read and set it where the models run.
  static PoolSizeHold hold(
      "libtorch",
      [] {
        int n = 0;
        on_torch_thread([&] { n = at::get_num_threads(); });
        return n;
      },
      [](int n) { on_torch_thread([n] { at::set_num_threads(n); }); });
  return hold;
}

// A frame's model runs on the intra-op pool; inter-op parallelism (forks in
// a scripted model) gets one thread, so the pool size is what the model asks
// for. Set once per process, before torch starts any inter-op work; a process
// that started it already keeps its own setting.
void single_interop_thread() {
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      at::set_num_interop_threads(1);
    } catch (const c10::Error&) {
    }
  });
}

std::optional<DType> dtype_of(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return DType::F32;
    case at::kDouble:
      return DType::F64;
    case at::kHalf:
      return DType::F16;
    case at::kBFloat16:
      return DType::BF16;
    case at::kByte:
      return DType::U8;
    case at::kChar:
      return DType::I8;
    case at::kShort:
      return DType::I16;
    case at::kInt:
      return DType::I32;
    case at::kLong:
      return DType::I64;
    case at::kBool:
      return DType::Bool;
    default:
      return std::nullopt;
  }
}

std::string torch_message(const c10::Error& e) {
  std::string m = e.what_without_backtrace();
  if (auto nl = m.find('\n'); nl != std::string::npos && nl > 0) m.resize(nl);
  return m;
}

// What keeps an output's bytes alive: torch's tensor and, when the output is
// the input itself (a model may return it), the input too.
struct OutputHold {
  at::Tensor tensor;
  NeatTensor input;
};

struct TorchModel final : Model::Impl {
  torch::jit::Module module;
  std::vector<c10::IValue> args;  // reused per run
  std::vector<at::Tensor> results_scratch;
  std::vector<Mapping> maps;  // the inputs stay mapped for the call; reused per run
  /// Per input: the module writes it in place (TorchScript's alias analysis
  /// at load). Such an input is handed over only when nobody else holds it.
  std::vector<bool> writes_input;
  std::vector<NeatTensor> own_copies;  // inputs copied for a module that writes them; per run

  ~TorchModel() override { torch_pool().release(threads); }
  std::string_view engine() const noexcept override { return "libtorch"; }
  std::string boundary() const override {
    std::string b =
        "the input is handed over its own memory (torch::from_blob) and each output is "
        "torch's own buffer, shared read-only: nothing is copied";
    if (std::find(writes_input.begin(), writes_input.end(), true) != writes_input.end()) {
      b += "; the model writes its input in place, so a frame others also hold is copied for it "
           "first (policy: not_writable)";
    }
    if (const TorchBlockCacheStats cache = torch_block_cache_stats(); cache.installed) {
      b += "; torch's freed blocks are kept for the next forward (block cache, up to " +
           std::to_string(cache.limit_bytes >> 20) + " MiB)";
    }
    return b;
  }
  void find_input_writes();
  Result<const NeatTensor*> input_for_torch(const NeatTensor& in, std::size_t k,
                                            const ConversionOptions& options,
                                            std::source_location where);

  Status open_module(const ModelOptions& options, std::string& metadata);
  Status read_inputs(const ModelOptions& options, const std::string& metadata);
  Status first_run();
  Status outputs_of(const c10::IValue& value, std::vector<at::Tensor>& out) const;
  Status run(std::span<const NeatTensor> given, std::vector<NeatTensor>& results,
             const ConversionOptions& options, std::source_location where) override;
  Result<NeatTensor> wrap_output(const at::Tensor& t, std::size_t i, const NeatTensor& input,
                                 const std::byte* input_bytes) const;
};

Status TorchModel::open_module(const ModelOptions& options, std::string& metadata) {
  NEAT_RETURN_IF_ERROR(torch_plugin::install_block_cache());
  torch::jit::ExtraFilesMap extra{{"neat.json", ""}};
  try {
    module = torch::jit::load(path, torch::kCPU, extra);
  } catch (const c10::Error& e) {
    return Error(
        ErrorCode::InvalidArgument, what(),
        "libtorch cannot load it as a TorchScript module: " + torch_message(e),
        {Fix{"save the model with torch.jit.save (torch.jit.trace or torch.jit.script)", {}},
         Fix{"give an ONNX file with backend=opencv", {}}});
  } catch (const std::exception& e) {
    return invalid_argument(what() + ": libtorch cannot load it: " + e.what());
  }
  metadata = extra["neat.json"];
  module.eval();
  try {
    module = torch::jit::freeze(module);  // weights as constants, for inference
  } catch (const c10::Error&) {
    // A module freeze cannot handle (e.g. it has attributes it mutates) runs as it is.
  }
  single_interop_thread();
  NEAT_RETURN_IF_ERROR(torch_pool().acquire(options.threads, what()));
  threads = options.threads;
  return {};
}

// A TorchScript file does not declare its input: make_models.py writes it
// into the file (neat.json: {"inputs": [{"name": ..., "shape": [...]}]}),
// else ModelOptions::input_shape gives it.
Status TorchModel::read_inputs(const ModelOptions& options, const std::string& metadata) {
  if (!metadata.empty()) {
    const auto j = nlohmann::json::parse(metadata, nullptr, false);
    if (j.is_discarded() || !j.contains("inputs") || !j["inputs"].is_array()) {
      return invalid_argument(what() + ": its neat.json is not {\"inputs\": [...]}");
    }
    for (const auto& in : j["inputs"]) {
      ModelTensorInfo info;
      info.name = in.value("name", "input" + std::to_string(inputs.size()));
      if (!in.contains("shape") || !in["shape"].is_array())
        return invalid_argument(what() + ": neat.json input '" + info.name + "' has no shape");
      for (const auto& d : in["shape"]) {
        if (!d.is_number_integer()) {
          return invalid_argument(what() + ": neat.json input '" + info.name +
                                  "' has a dimension that is not an integer");
        }
        info.shape.push_back(d.get<std::int64_t>() > 0 ? d.get<std::int64_t>() : -1);
      }
      inputs.push_back(std::move(info));
    }
  } else if (!options.input_shape.empty()) {
    ModelTensorInfo info;
    info.name = "input";
    info.shape = options.input_shape;
    inputs.push_back(std::move(info));
  }
  if (inputs.empty()) {
    return Error(
        ErrorCode::InvalidArgument, what(),
        "a TorchScript file does not say the shape of its input",
        {Fix{"give it: input-shape=1x3x640x640 on the infer element (C++: "
             "ModelOptions::input_shape = {1, 3, 640, 640})",
             "give it: neat.element('infer', ..., input_shape='1x3x640x640')"},
         Fix{"export it with a neat.json extra file, as models/make_torch_models.py does", {}}});
  }
  const ModelTensorInfo& first = inputs.front();
  if (first.shape.size() != 4 || (first.shape[1] != 3 && first.shape[1] != 1)) {
    return Error(ErrorCode::Unimplemented, what(),
                 "input " + first.to_string() + " is not an image batch [N, 3, H, W]",
                 {Fix{"export the model for [N, 3, H, W] (or [N, 1, H, W]) input", {}}});
  }
  return {};
}

Status TorchModel::outputs_of(const c10::IValue& value, std::vector<at::Tensor>& out) const {
  out.clear();
  if (value.isTensor()) {
    out.push_back(value.toTensor());
  } else if (value.isTuple()) {
    for (const c10::IValue& v : value.toTupleRef().elements()) {
      if (!v.isTensor()) return unimplemented(what() + ": returns a tuple holding a non-tensor");
      out.push_back(v.toTensor());
    }
  } else if (value.isTensorList()) {
    for (const at::Tensor& t : value.toTensorVector())
      out.push_back(t);
  } else {
    return unimplemented(what() + ": returns " + value.tagKind() +
                         ", not a tensor or a tuple of tensors");
  }
  return {};
}

// One run on zeros: a graph torch cannot run fails at load (a build()), and
// the outputs' shapes are learned.
Status TorchModel::first_run() {
  std::string shapes;
  try {
    c10::InferenceMode guard;
    std::vector<c10::IValue> zeros;
    for (const ModelTensorInfo& i : inputs) {
      std::vector<std::int64_t> dims;
      for (std::int64_t d : i.shape)
        dims.push_back(d < 0 ? 1 : d);
      shapes += (shapes.empty() ? "" : ", ") + i.to_string();
      zeros.emplace_back(torch::zeros(dims, torch::kFloat));
    }
    std::vector<at::Tensor> out;
    NEAT_RETURN_IF_ERROR(outputs_of(module.forward(zeros), out));
    for (std::size_t k = 0; k < out.size(); ++k) {
      ModelTensorInfo o;
      o.name = "output" + std::to_string(k);
      const auto dt = dtype_of(out[k].scalar_type());
      if (!dt) {
        return unimplemented(what() + ": output " + std::to_string(k) + " has torch type " +
                             std::string(c10::toString(out[k].scalar_type())));
      }
      o.dtype = *dt;
      o.shape.assign(out[k].sizes().begin(), out[k].sizes().end());
      outputs.push_back(std::move(o));
    }
  } catch (const c10::Error& e) {
    return invalid_argument(what() + ": libtorch cannot run it on input " + shapes + ": " +
                            torch_message(e));
  }
  args.reserve(inputs.size());
  maps.reserve(inputs.size());
  own_copies.reserve(inputs.size());  // (pointers into it stay valid for the run)
  return {};
}

Result<NeatTensor> TorchModel::wrap_output(const at::Tensor& t, std::size_t i,
                                           const NeatTensor& input,
                                           const std::byte* input_bytes) const {
  if (!t.device().is_cpu() || !dtype_of(t.scalar_type()) ||
      *dtype_of(t.scalar_type()) != outputs[i].dtype) {
    return internal_error(what() + ": output " + std::to_string(i) + " came back as " +
                          std::string(c10::toString(t.scalar_type())) + " on " + t.device().str());
  }
  const auto item = static_cast<std::int64_t>(t.element_size());
  Dims shape, strides;
  std::int64_t lo = 0, hi = item;  // the byte range the view covers
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    shape.push_back(t.size(d));
    strides.push_back(t.stride(d) * item);
    if (t.size(d) == 0) hi = lo;
    if (t.size(d) > 0) {
      const std::int64_t reach = (t.size(d) - 1) * t.stride(d) * item;
      if (reach < 0) lo += reach;
      if (reach > 0) hi += reach;
    }
  }
  auto* base = static_cast<std::byte*>(t.data_ptr());
  auto hold = std::make_shared<OutputHold>();
  hold->tensor = t;
  const std::int64_t in_size = input.nbytes();
  if (base >= input_bytes && base < input_bytes + in_size) hold->input = input;  // an alias
  NEAT_ASSIGN_OR_RETURN(auto storage, wrap_memory(base + lo, hi - lo, std::move(hold),
                                                  ExternalOptions{.read_only = true}));
  return NeatTensor::from_storage(std::move(storage), outputs[i].dtype, shape, strides, -lo);
}

// TorchScript's alias analysis: does forward() write an input, or a view of
// it (x.add_(1), x[0].zero_())? A model that does would write the frame it is
// handed over its own memory.
void TorchModel::find_input_writes() {
  writes_input.assign(inputs.size(), false);
  try {
    const auto graph = module.get_method("forward").graph();
    torch::jit::AliasDb aliases(graph);
    const auto values = graph->inputs();  // self, then the inputs
    for (std::size_t k = 0; k + 1 < values.size() && k < writes_input.size(); ++k)
      writes_input[k] = aliases.hasWriters(values[k + 1]);
  } catch (const c10::Error&) {
    writes_input.assign(inputs.size(), true);  // cannot tell: assume it writes
  }
}

// The tensor torch gets for input k: the frame itself, unless the module
// writes that input and someone else also holds the frame (another branch,
// a queue, the user) or its storage is read-only: then a copy of its own,
// through the copy gate (implicit, not_writable: refused under Strict).
Result<const NeatTensor*> TorchModel::input_for_torch(const NeatTensor& in, std::size_t k,
                                                      const ConversionOptions& options,
                                                      std::source_location where) {
  if (k >= writes_input.size() || !writes_input[k]) return &in;
  if (!in.writes_reach_others()) return &in;
  ConversionOptions copy = options;
  copy.implicit = true;
  copy.reason = ConversionReason::NotWritable;
  copy.requested_by = "Model::run (the model writes its input)";
  copy.fix =
      "hand the model a frame nothing else holds (make_writable() first), or export it without "
      "the in-place op on its input";
  copy.fix_python = copy.fix;
  auto c = in.clone(copy, where);
  if (!c.ok()) {
    return std::move(c).error().with_context(
        what() + ": its forward() writes input " + std::to_string(k) + " in place, and " +
        in.to_string() + " is also held elsewhere (a write would change it behind their backs)");
  }
  own_copies.push_back(std::move(*c));
  return &own_copies.back();
}

Status TorchModel::run(std::span<const NeatTensor> given, std::vector<NeatTensor>& results,
                       const ConversionOptions& options, std::source_location where) {
  // Every exit releases the mappings (and so the frames) of this run.
  struct Release {
    TorchModel& m;
    ~Release() {
      m.args.clear();
      m.maps.clear();
      m.own_copies.clear();
    }
  } release{*this};
  for (std::size_t k = 0; k < given.size(); ++k) {
    NEAT_ASSIGN_OR_RETURN(const NeatTensor* handed, input_for_torch(given[k], k, options, where));
    const NeatTensor& in = *handed;
    NEAT_ASSIGN_OR_RETURN(Mapping m, in.map(MapMode::Read));
    const c10::IntArrayRef dims(in.shape().begin(), in.shape().end());
    // torch reads the frame where it lies; a module that wrote its input in
    // place would write the frame (docs/inference.md).
    args.emplace_back(torch::from_blob(const_cast<std::byte*>(m.data()), dims, torch::kFloat));
    maps.push_back(std::move(m));
  }
  Status forward;
  on_torch_thread([&] {  // one OpenMP team for every model (kernels/torch_thread.cpp)
    try {
      c10::InferenceMode guard;
      forward = outputs_of(module.forward(args), results_scratch);
    } catch (const c10::Error& e) {
      forward = invalid_argument(what() + " on " + given[0].to_string() +
                                 ": libtorch forward: " + torch_message(e));
    } catch (const std::exception& e) {
      forward = invalid_argument(what() + " on " + given[0].to_string() +
                                 ": libtorch forward: " + e.what());
    }
  });
  NEAT_RETURN_IF_ERROR(forward);
  args.clear();  // torch's references to the inputs go before the outputs are wrapped
  if (results_scratch.size() != outputs.size()) {
    return internal_error(what() + ": returned " + std::to_string(results_scratch.size()) +
                          " outputs, " + std::to_string(outputs.size()) + " at load");
  }
  for (std::size_t i = 0; i < results_scratch.size(); ++i) {
    NEAT_ASSIGN_OR_RETURN(NeatTensor out,
                          wrap_output(results_scratch[i], i, maps[0].tensor(), maps[0].data()));
    out.set_meta(given[0].meta());
    results.push_back(std::move(out));
  }
  results_scratch.clear();
  return {};
}

Result<std::unique_ptr<Model::Impl>> open_model(const ModelOptions& options) {
  auto m = std::make_unique<TorchModel>();
  m->path = options.path;
  // Loaded, frozen and first run where its forwards will run: a load on the
  // caller's thread would give OpenMP a second team (kernels/torch_thread.cpp).
  Status opened;
  on_torch_thread([&] {
    opened = [&]() -> Status {
      std::string metadata;
      NEAT_RETURN_IF_ERROR(m->open_module(options, metadata));
      NEAT_RETURN_IF_ERROR(m->read_inputs(options, metadata));
      m->find_input_writes();
      return m->first_run();
    }();
  });
  NEAT_RETURN_IF_ERROR(opened);
  return std::unique_ptr<Model::Impl>(std::move(m));
}

constexpr TorchEngine kEngine{kTorchEngineAbi, NEAT_PROJECT_VERSION, &open_model,
                              &torch_plugin::block_cache_stats,
                              &torch_plugin::set_block_cache_limit};

}  // namespace
}  // namespace neat

// The plugin's one entry point (kernels/torch_engine.cpp looks it up).
extern "C" __attribute__((visibility("default"))) const neat::TorchEngine* neat_torch_engine() {
  return &neat::kEngine;
}

#include "neat/kernels/model.hpp"

#include <onnx/onnx_pb.h>
#include <algorithm>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <set>

#include "neat/contract/copy_gate.hpp"
#include "neat/contract/mapping.hpp"
#include "neat/kernels/internal/model_engine.hpp"
#include "neat/kernels/internal/onnx_diagnosis.hpp"
#include "neat/storage/cv_mat.hpp"

namespace neat {

// ---- what every engine shares ------------------------------------------------------------------

bool ModelTensorInfo::is_static() const noexcept {
  for (std::int64_t d : shape) {
    if (d < 0) return false;
  }
  return true;
}

std::string ModelTensorInfo::to_string() const {
  return name + " " + std::string(neat::to_string(dtype)) + " " + dims_to_string(shape);
}

std::int64_t model_tensor_bytes(DType dtype, std::span<const std::int64_t> shape) {
  std::int64_t n = static_cast<std::int64_t>(item_size(dtype));
  for (std::int64_t d : shape)
    n *= d < 0 ? 1 : d;
  return n;
}

Status PoolSizeHold::acquire(int threads, const std::string& what) {
  if (threads == 0) return {};
  std::lock_guard lock(mutex_);
  if (holders_ > 0 && threads != threads_) {
    return Error(ErrorCode::FailedPrecondition, what,
                 "threads=" + std::to_string(threads) + ", but a loaded model set " +
                     std::string(pool_) + "'s process-wide pool to " + std::to_string(threads_) +
                     " threads",
                 {Fix{"give every model on this engine the same threads=", {}},
                  Fix{"leave threads=0 and size the pool once, yourself", {}}});
  }
  if (holders_++ == 0) {
    before_ = get_();
    threads_ = threads;
    set_(threads);
  }
  return {};
}

void PoolSizeHold::release(int threads) noexcept {
  if (threads == 0) return;
  std::lock_guard lock(mutex_);
  if (--holders_ == 0) set_(before_);
}

Status Model::Impl::check_inputs(std::span<const NeatTensor> given) const {
  if (given.size() != inputs.size()) {
    return invalid_argument(what() + ": given " + std::to_string(given.size()) +
                            " input(s), it takes " + std::to_string(inputs.size()));
  }
  for (std::size_t k = 0; k < given.size(); ++k) {
    const NeatTensor& input = given[k];
    const ModelTensorInfo& want = inputs[k];
    auto where = [&] { return what() + " input '" + want.name + "' on " + input.to_string(); };
    if (!input.defined()) return failed_precondition(where() + ": undefined tensor");
    if (input.device().type != DeviceType::Cpu) {
      return Error(ErrorCode::FailedPrecondition, where(), "not in CPU memory",
                   {Fix{"transfer it with cpu() first", {}}});
    }
    if (input.dtype() != DType::F32 || input.is_composite()) {
      return Error(ErrorCode::InvalidArgument, where(), "the model takes " + want.to_string(),
                   {Fix{"convert the frame first (preprocess)", {}}});
    }
    if (input.rank() != static_cast<int>(want.shape.size())) {
      return invalid_argument(where() + ": rank " + std::to_string(input.rank()) +
                              ", the model takes " + want.to_string());
    }
    for (int i = 0; i < input.rank(); ++i) {
      const std::int64_t w = want.shape[static_cast<std::size_t>(i)];
      if (w >= 0 && input.shape()[i] != w) {
        return invalid_argument(where() + ": dimension " + std::to_string(i) + " is " +
                                std::to_string(input.shape()[i]) + ", the model takes " +
                                want.to_string());
      }
    }
    if (!input.is_contiguous()) {
      return Error(ErrorCode::FailedPrecondition, where(),
                   "strided; the model reads packed tensors",
                   {Fix{"call contiguous() first, or add a `pack` stage", {}}});
    }
  }
  return {};
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

const std::string& Model::path() const noexcept {
  return impl_->path;
}
const ModelTensorInfo& Model::input() const noexcept {
  return impl_->inputs.front();
}
const std::vector<ModelTensorInfo>& Model::inputs() const noexcept {
  return impl_->inputs;
}
const std::vector<ModelTensorInfo>& Model::outputs() const noexcept {
  return impl_->outputs;
}
std::string_view Model::engine() const noexcept {
  return impl_->engine();
}
std::string Model::boundary() const {
  return impl_->boundary();
}
int Model::threads() const noexcept {
  return impl_->threads;
}

std::int64_t Model::input_bytes() const noexcept {
  std::int64_t total = 0;
  for (const ModelTensorInfo& i : impl_->inputs)
    total += model_tensor_bytes(i.dtype, i.shape);
  return total;
}

std::vector<ModelCopy> Model::copies(std::span<const std::int64_t> input_shape) const {
  std::vector<ModelCopy> out = impl_->copies;
  for (ModelCopy& c : out) {
    if (!c.input || c.index != 0) continue;
    c.bytes = model_tensor_bytes(impl_->inputs[0].dtype, input_shape);
    c.what = "setInput copies " + impl_->inputs[0].name + " " +
             dims_to_string(std::vector<std::int64_t>(input_shape.begin(), input_shape.end())) +
             " into the net";
  }
  return out;
}

namespace {

// TorchScript files are zip archives; ONNX files are protobuf.
bool looks_like_torchscript(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}

}  // namespace

Result<std::unique_ptr<Model>> Model::load(const ModelOptions& options) {
  const std::string& path = options.path;
  const std::string what = "model '" + path + "'";
  if (path.empty()) return invalid_argument("model: no file given (model=PATH)");
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return invalid_argument(what + ": no such file");
  if (std::filesystem::is_directory(path, ec)) {
    return invalid_argument(what + ": is a directory, not a model file");
  }
  if (options.threads < 0) {
    return invalid_argument(what + ": threads=" + std::to_string(options.threads) +
                            " must be 0 (the engine's own setting) or more");
  }
  ModelBackend backend = options.backend;
  if (backend == ModelBackend::Auto)
    backend = looks_like_torchscript(path) ? ModelBackend::Torch : ModelBackend::OpenCv;
  auto impl =
      backend == ModelBackend::Torch ? open_torch_model(options) : open_opencv_model(options);
  if (!impl.ok()) return std::move(impl).error();
  return std::unique_ptr<Model>(new Model(std::move(*impl)));
}

Status Model::run(const NeatTensor& input, std::vector<NeatTensor>& results,
                  const ConversionOptions& options, std::source_location where) {
  return run(std::span<const NeatTensor>(&input, 1), results, options, where);
}

Status Model::run(std::span<const NeatTensor> inputs, std::vector<NeatTensor>& results,
                  const ConversionOptions& options, std::source_location where) {
  results.clear();
  // Every input is checked before the first copy: a refused run moves nothing.
  NEAT_RETURN_IF_ERROR(impl_->check_inputs(inputs));
  return impl_->run(inputs, results, options, where);
}

// ---- OpenCV DNN ---------------------------------------------------------------------------------

namespace {

std::optional<DType> dtype_of_onnx(int elem_type) {
  switch (elem_type) {
    case onnx::TensorProto_DataType_FLOAT:
      return DType::F32;
    case onnx::TensorProto_DataType_UINT8:
      return DType::U8;
    case onnx::TensorProto_DataType_INT8:
      return DType::I8;
    case onnx::TensorProto_DataType_UINT16:
      return DType::U16;
    case onnx::TensorProto_DataType_INT16:
      return DType::I16;
    case onnx::TensorProto_DataType_INT32:
      return DType::I32;
    case onnx::TensorProto_DataType_INT64:
      return DType::I64;
    case onnx::TensorProto_DataType_FLOAT16:
      return DType::F16;
    case onnx::TensorProto_DataType_DOUBLE:
      return DType::F64;
    case onnx::TensorProto_DataType_BFLOAT16:
      return DType::BF16;
    case onnx::TensorProto_DataType_BOOL:
      return DType::Bool;
    default:
      return std::nullopt;
  }
}

ModelTensorInfo info_of(const onnx::ValueInfoProto& v, std::string* unsupported) {
  ModelTensorInfo info;
  info.name = v.name();
  if (!v.type().has_tensor_type()) {
    *unsupported = "'" + v.name() + "' is not a tensor";
    return info;
  }
  const auto& t = v.type().tensor_type();
  const auto d = dtype_of_onnx(t.elem_type());
  if (!d) {
    *unsupported = "'" + v.name() + "' has ONNX element type " + std::to_string(t.elem_type());
  } else {
    info.dtype = *d;
  }
  for (const auto& dim : t.shape().dim()) {
    info.shape.push_back(dim.has_dim_value() && dim.dim_value() > 0 ? dim.dim_value() : -1);
  }
  return info;
}

std::string cv_message(const cv::Exception& e) {
  return e.err.empty() ? std::string(e.what()) : e.err;
}

// The first of the net's layers whose forward fails (inputs set): growing
// prefixes of the layers, in the file's order, are run (every layer of a
// prefix is an output, so a prefix runs exactly when none of its layers
// fails), halving the range each time. A failure path only: a few partial
// forwards at load.
std::optional<OnnxNode> first_failing_node(cv::dnn::Net& net, const std::string& path) {
  std::vector<cv::String> names;
  try {
    names = net.getLayerNames();
  } catch (const cv::Exception&) {
    return std::nullopt;
  }
  auto prefix_runs = [&](std::size_t last) {
    try {
      std::vector<cv::Mat> outs;
      net.forward(outs, std::vector<cv::String>(
                            names.begin(), names.begin() + static_cast<std::ptrdiff_t>(last) + 1));
      return true;
    } catch (const cv::Exception&) {
      return false;
    }
  };
  if (names.empty() || prefix_runs(names.size() - 1)) return std::nullopt;
  std::size_t lo = 0, hi = names.size() - 1;  // the prefix ending at hi fails
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (prefix_runs(mid)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  std::string type;
  try {
    type = net.getLayer(names[lo])->type;
  } catch (const cv::Exception&) {
  }
  return node_of_layer(path, names[lo], type);
}

PoolSizeHold& opencv_pool() {
  static PoolSizeHold hold(
      "OpenCV", [] { return cv::getNumThreads(); }, [](int n) { cv::setNumThreads(n); });
  return hold;
}

// The copy gate's request for one of the model's declared copies of `t`.
CopyRequest request_for(const ModelCopy& c, const NeatTensor& t, const ConversionOptions& options,
                        std::source_location where) {
  CopyRequest req;
  req.kind = c.kind;
  req.reason = c.reason;
  req.explicit_call = !options.implicit;
  req.bytes = t.nbytes();
  req.source = t.description();
  req.destination = t.description();
  (c.input ? req.destination : req.source).storage = StorageKind::Other;  // the net's buffer
  req.where = where;
  req.policy = options.policy;
  req.operation =
      options.requested_by.empty() ? std::string_view(c.operation) : options.requested_by;
  req.detail = c.detail;
  return req;
}

// An ONNX file on OpenCV DNN: setInput copies each input into the net, and
// each output is copied out of the net's buffer (both declared, both recorded).
struct OpenCvModel final : Model::Impl {
  cv::dnn::Net net;
  std::vector<cv::String> input_names;       // for setInput(blob, name)
  std::vector<cv::String> output_names;      // OpenCV's names, in outputs' order
  std::vector<cv::Mat> forward_out;          // headers over the result buffers (reused)
  std::vector<std::vector<int>> input_dims;  // per input, per run, reused
  // Per input, cv::Mat headers over the frames' bytes for setInput, found
  // again by address and shape: a header of more than 2 dimensions allocates
  // its size and step arrays, and a graph's frames come from a pool that
  // hands the same few buffers round, so once warm a run allocates none.
  struct Header {
    const std::byte* data = nullptr;
    std::vector<int> dims;
    cv::Mat mat;
  };
  static constexpr std::size_t kHeadersPerInput = 8;
  std::vector<std::vector<Header>> headers;
  std::vector<std::size_t> next_header;  // per input: the one replaced next (round-robin)

  ~OpenCvModel() override { opencv_pool().release(threads); }
  std::string_view engine() const noexcept override { return "opencv-dnn"; }
  std::string boundary() const override {
    return "setInput copies each input into the net, each output is copied out of it";
  }
  const ModelCopy& input_copy(std::size_t k) const { return copies[k]; }
  const ModelCopy& output_copy(std::size_t i) const { return copies[inputs.size() + i]; }

  // ---- load, step by step ----
  Status read_declared_inputs();
  Status open_net(const ModelOptions& options);
  Status first_run();
  void declare_copies();
  // ---- run, step by step ----
  Status run(std::span<const NeatTensor> given, std::vector<NeatTensor>& results,
             const ConversionOptions& options, std::source_location where) override {
    NEAT_RETURN_IF_ERROR(set_inputs(given, options, where));
    std::vector<Mapping> writes;
    cv::Mat single_out;
    NEAT_RETURN_IF_ERROR(forward(results, options, writes, single_out));
    return copy_outputs(results, writes, single_out, given[0], options, where);
  }
  const cv::Mat& header_over(std::size_t k, const std::byte* data);
  Status set_inputs(std::span<const NeatTensor> given, const ConversionOptions& options,
                    std::source_location where);
  Status forward(std::vector<NeatTensor>& results, const ConversionOptions& options,
                 std::vector<Mapping>& writes, cv::Mat& single_out);
  Status copy_outputs(std::vector<NeatTensor>& results, std::vector<Mapping>& writes,
                      const cv::Mat& single_out, const NeatTensor& first_input,
                      const ConversionOptions& options, std::source_location where);
};

Status OpenCvModel::read_declared_inputs() {
  onnx::ModelProto proto;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return invalid_argument(what() + ": cannot be read (permissions?)");
    if (!proto.ParseFromIstream(&in) || !proto.has_graph()) {
      return invalid_argument(what() +
                              ": not an ONNX model (the file does not parse as ModelProto)");
    }
  }
  std::set<std::string> weights;
  for (const auto& init : proto.graph().initializer())
    weights.insert(init.name());
  std::string unsupported;
  for (const auto& v : proto.graph().input()) {
    if (weights.count(v.name()) == 0) inputs.push_back(info_of(v, &unsupported));
  }
  if (inputs.empty()) {
    return unimplemented(what() + ": declares no input (every graph input is a weight)");
  }
  for (const ModelTensorInfo& i : inputs) {
    if (!unsupported.empty() || i.dtype != DType::F32) {
      return unimplemented(what() + ": input " +
                           (unsupported.empty() ? i.to_string() : unsupported) +
                           " is not f32; OpenCV DNN takes f32 input (preprocess to f32)");
    }
  }
  for (const ModelTensorInfo& i : inputs)
    input_names.push_back(i.name);
  input_dims.resize(inputs.size());
  headers.resize(inputs.size());
  next_header.resize(inputs.size(), 0);
  return {};
}

Status OpenCvModel::open_net(const ModelOptions& options) {
  try {
    net = cv::dnn::readNetFromONNX(path);
  } catch (const cv::Exception& e) {
    if (auto node = node_in_import_error(cv_message(e))) {
      return opencv_cannot(path, *node, false, {}, cv_message(e));
    }
    return invalid_argument(what() + ": OpenCV DNN cannot load it: " + cv_message(e));
  }
  if (net.empty()) return invalid_argument(what() + ": OpenCV DNN loaded an empty network");
  net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
  net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
  NEAT_RETURN_IF_ERROR(opencv_pool().acquire(options.threads, what()));
  threads = options.threads;
  output_names = net.getUnconnectedOutLayersNames();
  return {};
}

Status OpenCvModel::first_run() {
  std::string shapes;
  try {
    if (inputs.size() > 1) net.setInputsNames(input_names);
    for (const ModelTensorInfo& i : inputs) {
      std::vector<int> dims;
      for (std::int64_t d : i.shape)
        dims.push_back(d < 0 ? 1 : static_cast<int>(d));
      shapes += (shapes.empty() ? "" : ", ") + i.to_string();
      cv::Mat zeros(static_cast<int>(dims.size()), dims.data(), CV_32F, cv::Scalar(0));
      net.setInput(zeros, inputs.size() > 1 ? i.name : cv::String());
    }
    net.forward(forward_out, output_names);
  } catch (const cv::Exception& e) {
    if (auto node = first_failing_node(net, path)) {
      return opencv_cannot(path, *node, true, shapes, cv_message(e));
    }
    return invalid_argument(what() + ": OpenCV DNN cannot run it on input " + shapes + ": " +
                            cv_message(e));
  }
  for (std::size_t i = 0; i < forward_out.size(); ++i) {
    const cv::Mat& m = forward_out[i];
    // Name, dtype and shape as OpenCV produces them for the input it ran on
    // (the file's dynamic dims filled in).
    ModelTensorInfo o;
    o.name = i < output_names.size() ? output_names[i] : "output" + std::to_string(i);
    const auto dt = dtype_from_cv_depth(m.depth());
    if (!dt.ok())
      return unimplemented(what() + ": output '" + o.name + "': " + dt.error().message());
    o.dtype = *dt;
    o.shape.assign(m.size.p, m.size.p + m.dims);
    outputs.push_back(o);
  }
  return {};
}

void OpenCvModel::declare_copies() {
  const std::string file = std::filesystem::path(path).filename().string();
  auto declare = [&](bool input, std::size_t index, const ModelTensorInfo& info) {
    ModelCopy c;
    c.kind = input ? ConversionKind::Transfer : ConversionKind::Pack;
    c.reason = input ? ConversionReason::ModelInput : ConversionReason::ModelOutput;
    c.input = input;
    c.index = index;
    c.engine = "opencv-dnn";
    const std::string tensor = info.name + " " + dims_to_string(info.shape);
    c.what = input ? "setInput copies " + tensor + " into the net"
                   : "output " + tensor + " out of the net's buffer";
    c.detail = "model '" + file + (input ? "' input '" : "' output '") + info.name + "'";
    c.operation = input ? "Model::run (setInput)" : "Model::run (output)";
    c.bytes = model_tensor_bytes(info.dtype, info.shape);
    copies.push_back(std::move(c));
  };
  for (std::size_t k = 0; k < inputs.size(); ++k)
    declare(true, k, inputs[k]);
  for (std::size_t i = 0; i < outputs.size(); ++i)
    declare(false, i, outputs[i]);
}

const cv::Mat& OpenCvModel::header_over(std::size_t k, const std::byte* data) {
  const std::vector<int>& dims = input_dims[k];
  std::vector<Header>& cache = headers[k];
  for (const Header& h : cache) {
    if (h.data == data && h.dims == dims) return h.mat;
  }
  Header fresh{
      data, dims,
      cv::Mat(static_cast<int>(dims.size()), dims.data(), CV_32F, const_cast<std::byte*>(data))};
  if (cache.size() < kHeadersPerInput) {
    cache.push_back(std::move(fresh));
    return cache.back().mat;
  }
  Header& slot = cache[next_header[k]];
  next_header[k] = (next_header[k] + 1) % kHeadersPerInput;
  slot = std::move(fresh);
  return slot.mat;
}

Status OpenCvModel::set_inputs(std::span<const NeatTensor> given, const ConversionOptions& options,
                               std::source_location where) {
  for (std::size_t k = 0; k < given.size(); ++k) {
    std::vector<int>& dims = input_dims[k];
    dims.resize(static_cast<std::size_t>(given[k].rank()));
    for (int i = 0; i < given[k].rank(); ++i) {
      if (given[k].shape()[i] > INT32_MAX)
        return invalid_argument(what() + " on " + given[k].to_string() + ": too large for OpenCV");
      dims[static_cast<std::size_t>(i)] = static_cast<int>(given[k].shape()[i]);
    }
    NEAT_ASSIGN_OR_RETURN(Mapping in, given[k].map(MapMode::Read));
    const CopyRequest req = request_for(input_copy(k), given[k], options, where);
    NEAT_RETURN_IF_ERROR(run_through_gate(req, [&]() -> Status {
      try {
        const cv::Mat& blob = header_over(k, in.data());
        net.setInput(blob, inputs.size() > 1 ? input_names[k] : cv::String());
      } catch (const cv::Exception& e) {
        return invalid_argument(what() + " input '" + inputs[k].name +
                                "': OpenCV setInput: " + cv_message(e));
      }
      return {};
    }));
  }
  return {};
}

Status OpenCvModel::forward(std::vector<NeatTensor>& results, const ConversionOptions& options,
                            std::vector<Mapping>& writes, cv::Mat& single_out) {
  for (const ModelTensorInfo& o : outputs) {
    Dims shape;
    for (std::int64_t d : o.shape)
      shape.push_back(d);
    NEAT_ASSIGN_OR_RETURN(
        NeatTensor out,
        NeatTensor::allocate(o.dtype, shape, AllocOptions{false, options.allocator}));
    NEAT_ASSIGN_OR_RETURN(out, std::move(out).make_writable());
    results.push_back(std::move(out));
  }
  try {
    if (outputs.size() == 1) {
      single_out = net.forward(output_names[0]);
      return {};
    }
    forward_out.resize(results.size());
    writes.reserve(results.size());
    for (std::size_t i = 0; i < results.size(); ++i) {
      NEAT_ASSIGN_OR_RETURN(Mapping w, results[i].map(MapMode::Write));
      NEAT_ASSIGN_OR_RETURN(int depth, cv_depth_from_dtype(results[i].dtype()));
      std::vector<int> dims(results[i].shape().begin(), results[i].shape().end());
      forward_out[i] = cv::Mat(static_cast<int>(dims.size()), dims.data(), depth, w.mutable_data());
      writes.push_back(std::move(w));
    }
    net.forward(forward_out, output_names);
  } catch (const cv::Exception& e) {
    return invalid_argument(what() + ": OpenCV forward: " + cv_message(e));
  }
  return {};
}

Status OpenCvModel::copy_outputs(std::vector<NeatTensor>& results, std::vector<Mapping>& writes,
                                 const cv::Mat& single_out, const NeatTensor& first_input,
                                 const ConversionOptions& options, std::source_location where) {
  const bool single = outputs.size() == 1;
  for (std::size_t i = 0; i < results.size(); ++i) {
    NeatTensor& out = results[i];
    const cv::Mat& src = single ? single_out : forward_out[i];
    std::int64_t got = static_cast<std::int64_t>(src.total() * src.elemSize());
    if (!src.isContinuous() || got != out.nbytes() ||
        (!single && reinterpret_cast<const std::byte*>(src.data) != writes[i].data())) {
      return internal_error(what() + " on " + first_input.to_string() + ": output '" +
                            outputs[i].name + "' came back as " + std::to_string(got) + " bytes, " +
                            std::to_string(out.nbytes()) +
                            " expected (a shape that changed with the input?)");
    }
    const CopyRequest req = request_for(output_copy(i), out, options, where);
    if (single) {
      NEAT_ASSIGN_OR_RETURN(Mapping w, out.map(MapMode::Write));
      NEAT_RETURN_IF_ERROR(run_through_gate(req, [&]() -> Status {
        std::memcpy(w.mutable_data(), src.data, static_cast<std::size_t>(out.nbytes()));
        return {};
      }));
    } else {
      NEAT_RETURN_IF_ERROR(run_through_gate(req, [] { return Status{}; }));
    }
    out.set_meta(first_input.meta());
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<Model::Impl>> open_opencv_model(const ModelOptions& options) {
  auto m = std::make_unique<OpenCvModel>();
  m->path = options.path;
  NEAT_RETURN_IF_ERROR(m->read_declared_inputs());
  NEAT_RETURN_IF_ERROR(m->open_net(options));
  NEAT_RETURN_IF_ERROR(m->first_run());
  m->declare_copies();
  return std::unique_ptr<Model::Impl>(std::move(m));
}

}  // namespace neat

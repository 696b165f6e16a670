#include "neat/kernels/model.hpp"

#include <onnx/onnx_pb.h>
#include <algorithm>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <set>

#include "neat/contract/copy_gate.hpp"
#include "neat/contract/mapping.hpp"
#include "neat/storage/cv_mat.hpp"

namespace neat {

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

// OpenCV has one thread pool per process. A model that sets its size holds
// it while it lives; the size the process had comes back when the last such
// model goes, and a model asking for another size meanwhile is refused.
class OpenCvThreads {
 public:
  static Status acquire(int threads, const std::string& what) {
    if (threads == 0) return {};
    std::lock_guard lock(mutex_);
    if (holders_ > 0 && threads != threads_) {
      return Error(ErrorCode::FailedPrecondition, what,
                   "threads=" + std::to_string(threads) +
                       ", but a loaded OpenCV DNN model set OpenCV's process-wide pool to " +
                       std::to_string(threads_) + " threads",
                   {Fix{"give every OpenCV DNN model the same threads=", {}},
                    Fix{"leave threads=0 and set the pool once (cv::setNumThreads)", {}}});
    }
    if (holders_++ == 0) {
      before_ = cv::getNumThreads();
      threads_ = threads;
      cv::setNumThreads(threads);
    }
    return {};
  }
  static void release(int threads) noexcept {
    if (threads == 0) return;
    std::lock_guard lock(mutex_);
    if (--holders_ == 0) cv::setNumThreads(before_);
  }

 private:
  static inline std::mutex mutex_;
  static inline int holders_ = 0;
  static inline int threads_ = 0;
  static inline int before_ = 0;
};

}  // namespace

bool ModelTensorInfo::is_static() const noexcept {
  for (std::int64_t d : shape) {
    if (d < 0) return false;
  }
  return true;
}

std::string ModelTensorInfo::to_string() const {
  return name + " " + std::string(neat::to_string(dtype)) + " " + dims_to_string(shape);
}

struct Model::Impl {
  std::string path;
  cv::dnn::Net net;
  int threads = 0;  // OpenCV's pool size this model holds (0: none)
  std::vector<ModelTensorInfo> inputs;
  std::vector<cv::String> input_names;  // for setInput(blob, name)
  std::vector<ModelTensorInfo> outputs;
  std::vector<cv::String> output_names;      // OpenCV's names, in outputs' order
  std::vector<cv::Mat> forward_out;          // headers over the result buffers (reused)
  std::vector<std::vector<int>> input_dims;  // per input, per run, reused
  std::vector<ModelCopy> copies;             // one per input, then one per output
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

  const cv::Mat& header_over(std::size_t k, const std::byte* data);

  ~Impl() { OpenCvThreads::release(threads); }

  std::string what() const { return "model '" + path + "'"; }
  const ModelCopy& input_copy(std::size_t k) const { return copies[k]; }
  const ModelCopy& output_copy(std::size_t i) const { return copies[inputs.size() + i]; }

  // ---- load(), step by step ----
  Status read_declared_inputs();
  Status open_net(const ModelOptions& options);
  Status first_run();
  void declare_copies();
  // ---- run(), step by step ----
  Status check_inputs(std::span<const NeatTensor> given);
  Status set_inputs(std::span<const NeatTensor> given, const ConversionOptions& options,
                    std::source_location where);
  Status forward(std::vector<NeatTensor>& results, const ConversionOptions& options,
                 std::vector<Mapping>& writes, cv::Mat& single_out);
  Status copy_outputs(std::vector<NeatTensor>& results, std::vector<Mapping>& writes,
                      const cv::Mat& single_out, const NeatTensor& first_input,
                      const ConversionOptions& options, std::source_location where);
};

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
  return "opencv-dnn";
}
int Model::threads() const noexcept {
  return impl_->threads;
}

namespace {

std::int64_t bytes_of(DType dtype, std::span<const std::int64_t> shape) {
  std::int64_t n = static_cast<std::int64_t>(item_size(dtype));
  for (std::int64_t d : shape)
    n *= d < 0 ? 1 : d;
  return n;
}

}  // namespace

std::int64_t Model::input_bytes() const noexcept {
  std::int64_t total = 0;
  for (const ModelTensorInfo& i : impl_->inputs)
    total += bytes_of(i.dtype, i.shape);
  return total;
}

std::vector<ModelCopy> Model::copies(std::span<const std::int64_t> input_shape) const {
  std::vector<ModelCopy> out = impl_->copies;
  out[0].bytes = bytes_of(impl_->inputs[0].dtype, input_shape);
  out[0].what = "setInput copies " + impl_->inputs[0].name + " " +
                dims_to_string(std::vector<std::int64_t>(input_shape.begin(), input_shape.end())) +
                " into the net";
  return out;
}

// The declared inputs, from the file: OpenCV 4.6 keeps them private.
Status Model::Impl::read_declared_inputs() {
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

Status Model::Impl::open_net(const ModelOptions& options) {
  try {
    net = cv::dnn::readNetFromONNX(path);
  } catch (const cv::Exception& e) {
    return invalid_argument(what() + ": OpenCV DNN cannot load it: " + cv_message(e));
  }
  if (net.empty()) return invalid_argument(what() + ": OpenCV DNN loaded an empty network");
  net.setPreferableBackend(options.backend == ModelBackend::OpenCv ? cv::dnn::DNN_BACKEND_OPENCV
                                                                   : cv::dnn::DNN_BACKEND_DEFAULT);
  net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
  NEAT_RETURN_IF_ERROR(OpenCvThreads::acquire(options.threads, what()));
  threads = options.threads;
  output_names = net.getUnconnectedOutLayersNames();
  return {};
}

// One run on zeros: OpenCV reports unsupported layers at the first forward;
// this finds them at load (a graph's build()) and learns the outputs' shapes.
Status Model::Impl::first_run() {
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

// setInput copies each input into the net (a transfer into the model's own
// memory); each output is copied out of the net's buffer into one of ours.
void Model::Impl::declare_copies() {
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
    c.bytes = bytes_of(info.dtype, info.shape);
    copies.push_back(std::move(c));
  };
  for (std::size_t k = 0; k < inputs.size(); ++k)
    declare(true, k, inputs[k]);
  for (std::size_t i = 0; i < outputs.size(); ++i)
    declare(false, i, outputs[i]);
}

Result<std::unique_ptr<Model>> Model::load(const ModelOptions& options) {
  const std::string& path = options.path;
  const std::string what = "model '" + path + "'";
  if (path.empty()) return invalid_argument("model: no file given (model=PATH)");
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return invalid_argument(what + ": no such file");
  if (std::filesystem::is_directory(path, ec)) {
    return invalid_argument(what + ": is a directory, not an ONNX file");
  }
  if (options.threads < 0) {
    return invalid_argument(what + ": threads=" + std::to_string(options.threads) +
                            " must be 0 (OpenCV's setting) or more");
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  NEAT_RETURN_IF_ERROR(impl->read_declared_inputs());
  NEAT_RETURN_IF_ERROR(impl->open_net(options));
  NEAT_RETURN_IF_ERROR(impl->first_run());
  impl->declare_copies();
  return std::unique_ptr<Model>(new Model(std::move(impl)));
}

Status Model::run(const NeatTensor& input, std::vector<NeatTensor>& results,
                  const ConversionOptions& options, std::source_location where) {
  return run(std::span<const NeatTensor>(&input, 1), results, options, where);
}

namespace {

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

}  // namespace

Status Model::run(std::span<const NeatTensor> inputs, std::vector<NeatTensor>& results,
                  const ConversionOptions& options, std::source_location where) {
  Impl& m = *impl_;
  results.clear();
  // Every input is checked before the first copy: a refused run moves nothing.
  NEAT_RETURN_IF_ERROR(m.check_inputs(inputs));
  NEAT_RETURN_IF_ERROR(m.set_inputs(inputs, options, where));
  std::vector<Mapping> writes;
  cv::Mat single_out;
  NEAT_RETURN_IF_ERROR(m.forward(results, options, writes, single_out));
  return m.copy_outputs(results, writes, single_out, inputs[0], options, where);
}

Status Model::Impl::check_inputs(std::span<const NeatTensor> given) {
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
    std::vector<int>& dims = input_dims[k];
    dims.resize(want.shape.size());
    for (int i = 0; i < input.rank(); ++i) {
      const std::int64_t w = want.shape[static_cast<std::size_t>(i)];
      if (w >= 0 && input.shape()[i] != w) {
        return invalid_argument(where() + ": dimension " + std::to_string(i) + " is " +
                                std::to_string(input.shape()[i]) + ", the model takes " +
                                want.to_string());
      }
      if (input.shape()[i] > INT32_MAX) return invalid_argument(where() + ": too large for OpenCV");
      dims[static_cast<std::size_t>(i)] = static_cast<int>(input.shape()[i]);
    }
    if (!input.is_contiguous()) {
      return Error(ErrorCode::FailedPrecondition, where(),
                   "strided; OpenCV DNN reads packed tensors",
                   {Fix{"call contiguous() first, or add a `pack` stage", {}}});
    }
  }
  return {};
}

// A header over input k's bytes at `data` with this run's dims (OpenCV only
// reads through it; the const_cast is its constructor's signature).
const cv::Mat& Model::Impl::header_over(std::size_t k, const std::byte* data) {
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

// setInput copies each input into the net: the model's declared input copy.
// OpenCV is handed a header over the frame's mapped bytes.
Status Model::Impl::set_inputs(std::span<const NeatTensor> given, const ConversionOptions& options,
                               std::source_location where) {
  for (std::size_t k = 0; k < given.size(); ++k) {
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

// Each output gets a buffer of its own (from the pool), for the copy out of
// the net. One output: forward(name) returns a header over the net's buffer
// (which the next run overwrites) and the copy out is ours, timed. Several:
// forward(vector, names) copies each into the Mat it is given (OpenCV's
// _OutputArray::assign), so it is given headers over our buffers and OpenCV's
// copy is the only one (its time is inside forward()'s).
Status Model::Impl::forward(std::vector<NeatTensor>& results, const ConversionOptions& options,
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

// The model's declared output copies: made here (one output) or already made
// by OpenCV inside forward() (several) and recorded here.
Status Model::Impl::copy_outputs(std::vector<NeatTensor>& results, std::vector<Mapping>& writes,
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

}  // namespace neat

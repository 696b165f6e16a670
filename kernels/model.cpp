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
  std::vector<ModelTensorInfo> inputs;
  std::vector<cv::String> input_names;  // for setInput(blob, name)
  std::vector<ModelTensorInfo> outputs;
  std::vector<cv::String> output_names;      // OpenCV's names, in outputs' order
  std::vector<cv::Mat> forward_out;          // headers over the net's buffers (reused)
  std::vector<std::vector<int>> input_dims;  // per input, per run, reused
  // Per input, a header over the frame's bytes for setInput, rebound each run:
  // a header of more than 2 dimensions allocates its size and step arrays.
  std::vector<cv::Mat> input_blobs;
  std::vector<std::string> input_details;  // for the trace
  std::vector<std::string> output_details;
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
std::int64_t Model::input_bytes() const noexcept {
  std::int64_t total = 0;
  for (const ModelTensorInfo& i : impl_->inputs) {
    std::int64_t n = item_size(i.dtype);
    for (std::int64_t d : i.shape)
      n *= d < 0 ? 1 : d;
    total += n;
  }
  return total;
}

Result<std::unique_ptr<Model>> Model::load(const ModelOptions& options) {
  const std::string& path = options.path;
  const std::string what = "model '" + path + "'";
  if (path.empty()) return invalid_argument("model: no file given (model=PATH)");
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return invalid_argument(what + ": no such file");
  }
  if (std::filesystem::is_directory(path, ec)) {
    return invalid_argument(what + ": is a directory, not an ONNX file");
  }
  if (options.threads < 0) {
    return invalid_argument(what + ": threads=" + std::to_string(options.threads) +
                            " must be 0 (OpenCV's setting) or more");
  }
  // The declared inputs, from the file (OpenCV 4.6 keeps them private).
  onnx::ModelProto proto;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return invalid_argument(what + ": cannot be read (permissions?)");
    if (!proto.ParseFromIstream(&in) || !proto.has_graph()) {
      return invalid_argument(what + ": not an ONNX model (the file does not parse as ModelProto)");
    }
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  std::set<std::string> weights;
  for (const auto& init : proto.graph().initializer())
    weights.insert(init.name());
  std::vector<ModelTensorInfo> inputs;
  std::string unsupported;
  for (const auto& v : proto.graph().input()) {
    if (weights.count(v.name()) == 0) inputs.push_back(info_of(v, &unsupported));
  }
  if (inputs.empty()) {
    return unimplemented(what + ": declares no input (every graph input is a weight)");
  }
  for (const ModelTensorInfo& i : inputs) {
    if (!unsupported.empty() || i.dtype != DType::F32) {
      return unimplemented(what + ": input " + (unsupported.empty() ? i.to_string() : unsupported) +
                           " is not f32; OpenCV DNN takes f32 input (preprocess to f32)");
    }
  }
  impl->inputs = std::move(inputs);
  const std::string file = std::filesystem::path(path).filename().string();
  for (const ModelTensorInfo& i : impl->inputs) {
    impl->input_names.push_back(i.name);
    impl->input_details.push_back("model '" + file + "' input '" + i.name + "'");
  }
  impl->input_dims.resize(impl->inputs.size());

  try {
    impl->net = cv::dnn::readNetFromONNX(path);
  } catch (const cv::Exception& e) {
    return invalid_argument(what + ": OpenCV DNN cannot load it: " + cv_message(e));
  }
  if (impl->net.empty()) return invalid_argument(what + ": OpenCV DNN loaded an empty network");
  impl->net.setPreferableBackend(options.backend == ModelBackend::OpenCv
                                     ? cv::dnn::DNN_BACKEND_OPENCV
                                     : cv::dnn::DNN_BACKEND_DEFAULT);
  impl->net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
  if (options.threads > 0) cv::setNumThreads(options.threads);
  impl->output_names = impl->net.getUnconnectedOutLayersNames();

  // One run on zeros: OpenCV reports unsupported layers at the first forward;
  // this finds them now (at build()) and learns the outputs' shapes.
  std::string shapes;
  try {
    if (impl->inputs.size() > 1) impl->net.setInputsNames(impl->input_names);
    for (const ModelTensorInfo& i : impl->inputs) {
      std::vector<int> dims;
      for (std::int64_t d : i.shape)
        dims.push_back(d < 0 ? 1 : static_cast<int>(d));
      shapes += (shapes.empty() ? "" : ", ") + i.to_string();
      cv::Mat zeros(static_cast<int>(dims.size()), dims.data(), CV_32F, cv::Scalar(0));
      impl->net.setInput(zeros, impl->inputs.size() > 1 ? i.name : cv::String());
    }
    impl->net.forward(impl->forward_out, impl->output_names);
  } catch (const cv::Exception& e) {
    return invalid_argument(what + ": OpenCV DNN cannot run it on input " + shapes + ": " +
                            cv_message(e));
  }
  for (std::size_t i = 0; i < impl->forward_out.size(); ++i) {
    const cv::Mat& m = impl->forward_out[i];
    // Name, dtype and shape as OpenCV produces them for the input it ran on
    // (the file's dynamic dims filled in).
    ModelTensorInfo o;
    o.name = i < impl->output_names.size() ? impl->output_names[i] : "output" + std::to_string(i);
    const auto dt = dtype_from_cv_depth(m.depth());
    if (!dt.ok()) return unimplemented(what + ": output '" + o.name + "': " + dt.error().message());
    o.dtype = *dt;
    o.shape.assign(m.size.p, m.size.p + m.dims);
    impl->outputs.push_back(o);
    impl->output_details.push_back("model '" + file + "' output '" + o.name + "'");
  }
  return std::unique_ptr<Model>(new Model(std::move(impl)));
}

Status Model::run(const NeatTensor& input, std::vector<NeatTensor>& results,
                  const ConversionOptions& options, std::source_location where) {
  return run(std::span<const NeatTensor>(&input, 1), results, options, where);
}

Status Model::run(std::span<const NeatTensor> inputs, std::vector<NeatTensor>& results,
                  const ConversionOptions& options, std::source_location where) {
  Impl& m = *impl_;
  results.clear();
  if (inputs.size() != m.inputs.size()) {
    return invalid_argument("model '" + m.path + "': given " + std::to_string(inputs.size()) +
                            " input(s), it takes " + std::to_string(m.inputs.size()));
  }
  // Check every input before the first copy: a refused run moves nothing.
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const NeatTensor& input = inputs[k];
    const ModelTensorInfo& want = m.inputs[k];
    auto what = [&] {
      return "model '" + m.path + "' input '" + want.name + "' on " + input.to_string();
    };
    if (!input.defined()) return failed_precondition(what() + ": undefined tensor");
    if (input.device().type != DeviceType::Cpu) {
      return failed_precondition(what() + ": not in CPU memory; transfer it with cpu() first");
    }
    if (input.dtype() != DType::F32 || input.is_composite()) {
      return invalid_argument(what() + ": the model takes " + want.to_string() +
                              "; convert the frame first (preprocess)");
    }
    if (input.rank() != static_cast<int>(want.shape.size())) {
      return invalid_argument(what() + ": rank " + std::to_string(input.rank()) +
                              ", the model takes " + want.to_string());
    }
    std::vector<int>& dims = m.input_dims[k];
    dims.resize(want.shape.size());
    for (int i = 0; i < input.rank(); ++i) {
      const std::int64_t w = want.shape[static_cast<std::size_t>(i)];
      if (w >= 0 && input.shape()[i] != w) {
        return invalid_argument(what() + ": dimension " + std::to_string(i) + " is " +
                                std::to_string(input.shape()[i]) + ", the model takes " +
                                want.to_string());
      }
      if (input.shape()[i] > INT32_MAX) return invalid_argument(what() + ": too large for OpenCV");
      dims[static_cast<std::size_t>(i)] = static_cast<int>(input.shape()[i]);
    }
    if (!input.is_contiguous()) {
      return failed_precondition(what() +
                                 ": strided; OpenCV DNN reads packed tensors (call contiguous() "
                                 "first, or add a `pack` stage)");
    }
  }
  auto what = [&] { return "model '" + m.path + "' on " + inputs[0].to_string(); };
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const NeatTensor& input = inputs[k];
    NEAT_ASSIGN_OR_RETURN(Mapping in, input.map(MapMode::Read));
    // setInput copies the blob into the net: an explicit transfer into the model.
    CopyRequest req;
    req.kind = ConversionKind::Transfer;
    req.reason = ConversionReason::ModelInput;
    req.explicit_call = !options.implicit;
    req.bytes = input.nbytes();
    req.source = input.description();
    req.destination = input.description();
    req.destination.storage = StorageKind::Other;  // the net's own buffer
    req.where = where;
    req.policy = options.policy;
    req.operation = options.requested_by.empty() ? std::string_view("Model::run (setInput)")
                                                 : options.requested_by;
    req.detail = m.input_details[k];
    NEAT_RETURN_IF_ERROR(run_through_gate(req, [&]() -> Status {
      try {
        const std::vector<int>& dims = m.input_dims[k];
        auto* bytes = reinterpret_cast<uchar*>(const_cast<std::byte*>(in.data()));
        if (m.input_blobs.size() < inputs.size()) m.input_blobs.resize(inputs.size());
        cv::Mat& blob = m.input_blobs[k];
        const bool same_shape = blob.dims == static_cast<int>(dims.size()) &&
                                std::equal(dims.begin(), dims.end(), blob.size.p);
        if (same_shape) {  // the same header over this frame's bytes (no refcount: external)
          blob.data = bytes;
          blob.datastart = bytes;
          blob.dataend = blob.datalimit = bytes + blob.total() * blob.elemSize();
        } else {
          blob = cv::Mat(static_cast<int>(dims.size()), dims.data(), CV_32F, bytes);
        }
        m.net.setInput(blob, m.inputs.size() > 1 ? m.input_names[k] : cv::String());
      } catch (const cv::Exception& e) {
        return invalid_argument("model '" + m.path + "' input '" + m.inputs[k].name +
                                "': OpenCV setInput: " + cv_message(e));
      }
      return {};
    }));
  }
  // Each output gets a buffer of its own (from the pool), for the copy out
  // of the net.
  for (const ModelTensorInfo& o : m.outputs) {
    Dims shape;
    for (std::int64_t d : o.shape)
      shape.push_back(d);
    NEAT_ASSIGN_OR_RETURN(
        NeatTensor out,
        NeatTensor::allocate(o.dtype, shape, AllocOptions{false, options.allocator}));
    NEAT_ASSIGN_OR_RETURN(out, std::move(out).make_writable());
    results.push_back(std::move(out));
  }
  // One output: forward(name) returns a header over the net's buffer (which
  // the next run overwrites) and the copy out is ours, timed. Several:
  // forward(vector, names) copies each into the Mat it is given (OpenCV's
  // _OutputArray::assign), so it is given headers over our buffers and
  // OpenCV's copy is the only one (its time is inside forward()'s).
  const bool single = m.outputs.size() == 1;
  std::vector<Mapping> writes;
  cv::Mat single_out;
  try {
    if (single) {
      single_out = m.net.forward(m.output_names[0]);
    } else {
      m.forward_out.resize(results.size());
      writes.reserve(results.size());
      for (std::size_t i = 0; i < results.size(); ++i) {
        NEAT_ASSIGN_OR_RETURN(Mapping w, results[i].map(MapMode::Write));
        NEAT_ASSIGN_OR_RETURN(int depth, cv_depth_from_dtype(results[i].dtype()));
        std::vector<int> dims(results[i].shape().begin(), results[i].shape().end());
        m.forward_out[i] =
            cv::Mat(static_cast<int>(dims.size()), dims.data(), depth, w.mutable_data());
        writes.push_back(std::move(w));
      }
      m.net.forward(m.forward_out, m.output_names);
    }
  } catch (const cv::Exception& e) {
    return invalid_argument(what() + ": OpenCV forward: " + cv_message(e));
  }

  for (std::size_t i = 0; i < results.size(); ++i) {
    NeatTensor& out = results[i];
    const cv::Mat& src = single ? single_out : m.forward_out[i];
    std::int64_t got = static_cast<std::int64_t>(src.total() * src.elemSize());
    if (!src.isContinuous() || got != out.nbytes() ||
        (!single && reinterpret_cast<const std::byte*>(src.data) != writes[i].data())) {
      return internal_error(what() + ": output '" + m.outputs[i].name + "' came back as " +
                            std::to_string(got) + " bytes, " + std::to_string(out.nbytes()) +
                            " expected (a shape that changed with the input?)");
    }
    CopyRequest oreq;
    oreq.kind = ConversionKind::Pack;
    oreq.reason = ConversionReason::ModelOutput;
    oreq.explicit_call = !options.implicit;
    oreq.bytes = out.nbytes();
    oreq.source = out.description();
    oreq.source.storage = StorageKind::Other;
    oreq.destination = out.description();
    oreq.where = where;
    oreq.policy = options.policy;
    oreq.operation = options.requested_by.empty() ? std::string_view("Model::run (output)")
                                                  : options.requested_by;
    oreq.detail = m.output_details[i];
    if (single) {
      NEAT_ASSIGN_OR_RETURN(Mapping w, out.map(MapMode::Write));
      NEAT_RETURN_IF_ERROR(run_through_gate(oreq, [&]() -> Status {
        std::memcpy(w.mutable_data(), src.data, static_cast<std::size_t>(out.nbytes()));
        return {};
      }));
    } else {  // already copied by OpenCV inside forward(): recorded here
      NEAT_RETURN_IF_ERROR(run_through_gate(oreq, [] { return Status{}; }));
    }
    out.set_meta(inputs[0].meta());
  }
  return {};
}

}  // namespace neat

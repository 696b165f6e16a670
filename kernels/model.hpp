// A neural network model on OpenCV DNN (cv::dnn::readNetFromONNX), with every
// byte that crosses its boundary accounted for:
//
//  * Inputs: the model's declared inputs (name, dtype, shape) are read from
//    the ONNX file itself (OpenCV 4.6 does not expose them), so a graph's
//    build() checks the edge before a frame flows. run() takes one contiguous
//    F32 tensor per input, of its shape, and hands OpenCV a header over its
//    mapped bytes; Net::setInput copies them into the net (one explicit
//    transfer per input per run, reason model_input, recorded with its time).
//  * Outputs: Net::forward returns views of buffers the net reuses on the
//    next run, so a consumer that still held them would see them change.
//    run() copies each output into a tensor of its own (from the options'
//    allocator, so a graph's pool: no allocation in the steady state): one
//    explicit pack per output, reason model_output, recorded.
//
// Threading: a Model is not re-entrant (the net holds per-run state): one
// run() at a time; the infer stage owns one Model. OpenCV parallelises
// inside forward() on its process-wide thread pool.
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <vector>

#include "neat/contract/neat_tensor.hpp"

namespace neat {

enum class ModelBackend : std::uint8_t {
  OpenCv,   ///< OpenCV's own CPU implementation (DNN_BACKEND_OPENCV)
  Default,  ///< what OpenCV picks (DNN_BACKEND_DEFAULT: OpenCV here)
};

struct ModelOptions {
  std::string path;  ///< an ONNX file
  ModelBackend backend = ModelBackend::OpenCv;
  /// OpenCV's thread pool size (cv::setNumThreads, process-wide: OpenCV has
  /// one pool); 0 leaves it as it is.
  int threads = 0;
};

/// One input or output as the model file declares it. A dimension of -1 is
/// dynamic (a named or missing dimension in the file).
struct ModelTensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  bool is_static() const noexcept;
  /// "images f32 [1, 3, 640, 640]".
  std::string to_string() const;
};

class Model {
 public:
  /// Loads an ONNX model and runs it once on zeros (OpenCV finds unsupported
  /// layers at the first run: this moves that error to load time and learns
  /// the outputs' shapes). Errors: InvalidArgument (no such file, unreadable,
  /// not ONNX, a graph OpenCV rejects, with OpenCV's message), Unimplemented
  /// (no input, or an input that is not f32: OpenCV DNN computes in f32).
  static Result<std::unique_ptr<Model>> load(const ModelOptions& options);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::string& path() const noexcept;
  /// The first input (the only one of a model a stage feeds).
  const ModelTensorInfo& input() const noexcept;
  /// In the order the file declares them (and run() takes them).
  const std::vector<ModelTensorInfo>& inputs() const noexcept;
  /// In the order run() returns them.
  const std::vector<ModelTensorInfo>& outputs() const noexcept;
  /// The bytes setInput copies per run (all inputs; dynamic dimensions as 1).
  std::int64_t input_bytes() const noexcept;

  /// Runs the model on `input` (F32, the input's shape; dynamic dimensions
  /// take any extent; a strided tensor is refused: pack it explicitly).
  /// Fills `outputs` with one tensor per output (in outputs() order), each in
  /// its own buffer, carrying the input's frame metadata. The vector's
  /// capacity is reused: a steady loop allocates nothing here.
  Status run(const NeatTensor& input, std::vector<NeatTensor>& outputs,
             const ConversionOptions& options = {},
             std::source_location where = std::source_location::current());
  /// The same for a model with several inputs: one tensor per input, in
  /// inputs() order; the outputs carry the first input's frame metadata.
  Status run(std::span<const NeatTensor> inputs, std::vector<NeatTensor>& outputs,
             const ConversionOptions& options = {},
             std::source_location where = std::source_location::current());

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace neat

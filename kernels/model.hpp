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
// The copies at the boundary are declared once, at load (copies()): the
// infer stage's explain lists them and run() records each with the same words.
//
// Threading: a Model is not re-entrant (the net holds per-run state): one
// run() at a time; the infer stage owns one Model. OpenCV parallelises
// inside forward() on its process-wide thread pool; ModelOptions::threads
// sets that pool's size only while the model lives, and never to a size
// another live model chose.
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
  /// OpenCV's thread pool size. OpenCV has one pool per process, so this is
  /// process-wide: set while the model lives, restored when the last model
  /// that set it goes, and refused when a live model set another size. 0
  /// leaves it as it is (cv::setNumThreads, the user's own setting).
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

/// A copy the model makes at its boundary on every run, declared once when
/// it loads: the infer stage's explain lists these, and run() records each
/// through the copy gate with the same kind, reason and words.
struct ModelCopy {
  ConversionKind kind = ConversionKind::Transfer;
  ConversionReason reason = ConversionReason::ModelInput;
  bool input = true;       ///< into the model (an input) or out of it (an output)
  std::size_t index = 0;   ///< which input or output
  std::string engine;      ///< "opencv-dnn"
  std::string what;        ///< "setInput copies images f32 [1, 3, 64, 64] into the net"
  std::string detail;      ///< for the trace: "model 'det.onnx' input 'images'"
  std::string operation;   ///< "Model::run (setInput)"
  std::int64_t bytes = 0;  ///< per run, for the shapes asked about
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
  /// The copies one run makes at the boundary when the first input has
  /// `input_shape` (the others their declared shapes; dynamic dimensions as
  /// 1): one per input, then one per output, bytes filled in.
  std::vector<ModelCopy> copies(std::span<const std::int64_t> input_shape) const;
  /// The engine that runs the model ("opencv-dnn") and, when the model set
  /// it, the thread pool size (else 0).
  std::string_view engine() const noexcept;
  int threads() const noexcept;

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

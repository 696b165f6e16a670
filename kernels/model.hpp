// A neural network model on one of two engines, with every byte that
// crosses its boundary accounted for:
//
//  * OpenCV DNN (ONNX files, cv::dnn::readNetFromONNX). The declared inputs
//    (name, dtype, shape) are read from the ONNX file itself (OpenCV 4.6 does
//    not expose them), so a graph's build() checks the edge before a frame
//    flows. Net::setInput copies each input into the net (one explicit
//    transfer per input per run, reason model_input), and Net::forward
//    returns views of buffers the net reuses, so run() copies each output
//    into a tensor of its own from the options' allocator (one explicit pack
//    per output, reason model_output).
//  * libtorch (TorchScript files, torch::jit::load, frozen for inference).
//    The input's shape comes from the file's neat.json or ModelOptions. The
//    input is handed to torch over its own mapped bytes (torch::from_blob)
//    and each output is torch's own buffer, shared with the NeatTensor
//    read-only: nothing is copied, so the model declares no copies.
//
// Both engines run the model once on zeros at load: a layer the engine
// cannot run fails then (at build()), and the outputs' shapes are learned.
//
// The copies at the boundary are declared once, at load (copies()): the
// infer stage's explain lists them and run() records each with the same words.
//
// Threading: a Model is not re-entrant (the engine holds per-run state): one
// run() at a time; the infer stage owns one Model. Each engine parallelises
// inside a run on its process-wide thread pool; ModelOptions::threads sets
// that pool's size only while the model lives, and never to a size another
// live model on the same engine chose.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "neat/contract/neat_tensor.hpp"

namespace neat {

/// The engine that runs a model.
enum class ModelBackend : std::uint8_t {
  Auto,    ///< by the file: a TorchScript archive runs on libtorch, anything else on OpenCV
  OpenCv,  ///< OpenCV DNN (cv::dnn, its own CPU implementation): ONNX files
  Torch,   ///< libtorch: TorchScript files (torch.jit.save), frozen for inference
};

struct ModelOptions {
  std::string path;  ///< an ONNX or TorchScript file
  ModelBackend backend = ModelBackend::Auto;
  /// The engine's thread pool size. OpenCV and libtorch each have one pool
  /// per process, so this is process-wide: set while the model lives,
  /// restored when the last model that set it goes, and refused when a live
  /// model set another size. 0 leaves it as it is (the user's own setting).
  int threads = 0;
  /// A TorchScript file does not declare its input's shape: the one it takes
  /// ([N, 3, H, W]), when the file carries no neat.json (make_models.py
  /// writes one). Ignored for ONNX files, which declare theirs.
  std::vector<std::int64_t> input_shape;
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

/// Runs `fn()` on the one thread that runs every libtorch call of the
/// process's models (their load, each forward, the pool's size), and waits
/// for it; an exception `fn` throws is rethrown here. Why one thread:
/// libtorch parallelises on OpenMP, and libgomp gives each thread that
/// starts parallel work its own team of threads; once the teams hold more
/// threads than the machine has cores, every parallel region waits for its
/// workers to be woken (yolov8n at 640x640 on 2 cores: 40 ms a forward
/// instead of 29). Your own libtorch code in a process that runs models (a
/// second network, an embedding) belongs on this thread too. Called from
/// that thread, it runs `fn` at once. The hand-over allocates nothing and
/// takes no lock; calls from several threads run one after another. `fn`
/// must not wait for a graph that runs a libtorch model: that model's
/// forward waits for this thread.
template <class F>
void on_torch_thread(F&& fn);
/// True on that thread.
bool on_torch_thread_now() noexcept;

namespace detail {
void run_on_torch_thread(void (*call)(void*) noexcept, void* context) noexcept;
}  // namespace detail

template <class F>
void on_torch_thread(F&& fn) {
  struct Call {
    std::remove_reference_t<F>* fn;
    std::exception_ptr error;
  } call{&fn, nullptr};
  detail::run_on_torch_thread(
      [](void* c) noexcept {
        auto* k = static_cast<Call*>(c);
        try {
          (*k->fn)();
        } catch (...) {
          k->error = std::current_exception();
        }
      },
      &call);
  if (call.error) std::rethrow_exception(call.error);
}

/// libtorch's CPU memory between forwards. Torch's own allocator gives each
/// large tensor's block back to the system when the tensor dies, so every
/// forward faults its working set in again (yolov8n at 640x640: about 3,000
/// page faults, 10-13% of a forward). When the first TorchScript model loads,
/// NeatTensor installs a block cache as libtorch's CPU allocator (unless the
/// process installed its own): freed blocks of 64 KiB or more are kept by
/// size for the next forward, up to a limit of free bytes held. The
/// environment variable NEAT_TORCH_BLOCK_CACHE_MIB sets that limit at
/// install (default 512; 0 keeps libtorch's allocator). Process-wide, like
/// the engine's thread pool: python3-torch in the same process shares it.
inline constexpr std::int64_t kDefaultTorchBlockCacheBytes = std::int64_t{512} << 20;

struct TorchBlockCacheStats {
  bool installed = false;        ///< libtorch allocates through the cache now
  std::int64_t limit_bytes = 0;  ///< free bytes it may hold
  std::int64_t held_bytes = 0;   ///< free blocks held for reuse now
  std::int64_t reused = 0;       ///< large allocations served from held blocks
  std::int64_t from_system = 0;  ///< large allocations it had no block for
  std::int64_t released = 0;     ///< freed large blocks given back (over the limit)
};
TorchBlockCacheStats torch_block_cache_stats();
/// Sets the limit of free bytes held; lowering it gives blocks back now.
/// Called before the first TorchScript model loads, the limit waits for it
/// (libtorch is not loaded for it) and stands over NEAT_TORCH_BLOCK_CACHE_MIB.
/// Errors: InvalidArgument (a negative limit).
Status set_torch_block_cache_limit(std::int64_t bytes);

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
  /// The bytes of the inputs of one run (all inputs; dynamic dimensions as 1).
  std::int64_t input_bytes() const noexcept;
  /// The copies one run makes at the boundary when the first input has
  /// `input_shape` (the others their declared shapes; dynamic dimensions as
  /// 1), bytes filled in: on OpenCV one per input, then one per output; on
  /// libtorch none.
  std::vector<ModelCopy> copies(std::span<const std::int64_t> input_shape) const;
  /// The engine that runs the model ("opencv-dnn", "libtorch"), how it takes
  /// and gives its tensors (for explain) and, when the model set it, the
  /// engine's thread pool size (else 0).
  std::string_view engine() const noexcept;
  std::string boundary() const;
  int threads() const noexcept;

  /// Runs the model on `input` (F32, the input's shape; dynamic dimensions
  /// take any extent; a strided tensor is refused: pack it explicitly).
  /// Fills `outputs` with one tensor per output (in outputs() order), each in
  /// its own buffer (OpenCV: from the allocator, writable; libtorch: torch's,
  /// read-only), carrying the input's frame metadata. The vector's
  /// capacity is reused: a steady loop allocates nothing here.
  Status run(const NeatTensor& input, std::vector<NeatTensor>& outputs,
             const ConversionOptions& options = {},
             std::source_location where = std::source_location::current());
  /// The same for a model with several inputs: one tensor per input, in
  /// inputs() order; the outputs carry the first input's frame metadata.
  Status run(std::span<const NeatTensor> inputs, std::vector<NeatTensor>& outputs,
             const ConversionOptions& options = {},
             std::source_location where = std::source_location::current());

  /// The engine behind the model (kernels/internal/model_engine.hpp).
  struct Impl;

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace neat

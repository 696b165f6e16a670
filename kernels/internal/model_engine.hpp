// The engine behind a neat::Model. What every engine shares lives here: the
// file, the declared inputs and outputs, the copies at the boundary (declared
// once), the checks every input passes before anything moves, and the hold
// on a process-wide thread pool. Each engine implements the run: OpenCV DNN
// in kernels/model.cpp, libtorch (TorchScript) in kernels/torch_model.cpp,
// built as a plugin (libneat_torch.so) that kernels/torch_engine.cpp loads
// when the first TorchScript model opens.
//
// Internal: not installed.
#pragma once

#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neat/kernels/model.hpp"

namespace neat {

struct Model::Impl {
  virtual ~Impl() = default;

  std::string path;
  int threads = 0;  // the pool size this model holds (0: none)
  std::vector<ModelTensorInfo> inputs;
  std::vector<ModelTensorInfo> outputs;
  std::vector<ModelCopy> copies;  // one per copy the boundary makes (none: zero-copy)

  std::string what() const { return "model '" + path + "'"; }
  /// "opencv-dnn", "libtorch".
  virtual std::string_view engine() const noexcept = 0;
  /// How the engine takes and gives its tensors, for describe() and explain.
  virtual std::string boundary() const = 0;
  /// Every input against the model's: count, CPU, f32, rank, static
  /// dimensions, packed. A refused run moves nothing.
  Status check_inputs(std::span<const NeatTensor> given) const;
  /// Runs checked inputs; fills `results` (outputs() order) with the first
  /// input's frame metadata.
  virtual Status run(std::span<const NeatTensor> given, std::vector<NeatTensor>& results,
                     const ConversionOptions& options, std::source_location where) = 0;
};

/// NEAT_TORCH_BLOCK_CACHE_MIB's value as bytes (unset or empty: the default).
Result<std::int64_t> torch_block_cache_limit_from_env(const char* value);

/// What the libtorch plugin gives libneat: the entry point `neat_torch_engine`
/// (kTorchEngineEntry, extern "C") returns it. Change kTorchEngineAbi with
/// any change here or to Model::Impl / ModelOptions.
struct TorchEngine {
  int abi;
  const char* version;  // the NeatTensor version the plugin was built with
  Result<std::unique_ptr<Model::Impl>> (*open)(const ModelOptions& options);
  TorchBlockCacheStats (*block_cache_stats)();
  Status (*set_block_cache_limit)(std::int64_t bytes);
};
inline constexpr int kTorchEngineAbi = 1;
inline constexpr const char* kTorchEngineEntry = "neat_torch_engine";
/// True once the plugin (and so libtorch) is loaded in this process.
bool torch_engine_loaded() noexcept;
namespace detail {
/// Loads the plugin at `path` and checks its entry point, interface and
/// version: the engine, or Unavailable saying why (in the loader's words).
/// Loaded stays loaded either way (see kernels/torch_engine.cpp).
Result<const TorchEngine*> open_torch_engine(const std::string& path);
}  // namespace detail

/// Defined in the plugin only (its names differ from libneat's, so neither
/// binds to the other's).
namespace torch_plugin {
/// Installs the libtorch block cache (kernels/torch_block_cache.cpp) once
/// per process, when the first TorchScript model loads; the error of a bad
/// NEAT_TORCH_BLOCK_CACHE_MIB, every time.
Status install_block_cache();
TorchBlockCacheStats block_cache_stats();
Status set_block_cache_limit(std::int64_t bytes);
}  // namespace torch_plugin

/// A process-wide thread pool's size held by the models that set it: set
/// when the first such model loads, restored when the last goes, and a
/// model asking for another size meanwhile is refused with the fix.
class PoolSizeHold {
 public:
  using Get = int (*)();
  using Set = void (*)(int);
  PoolSizeHold(std::string_view pool, Get get, Set set) : pool_(pool), get_(get), set_(set) {}
  Status acquire(int threads, const std::string& what);
  void release(int threads) noexcept;

 private:
  std::string_view pool_;
  Get get_;
  Set set_;
  std::mutex mutex_;
  int holders_ = 0;
  int threads_ = 0;
  int before_ = 0;
};

/// The bytes of a tensor of `dtype` and `shape` (dynamic dimensions as 1).
std::int64_t model_tensor_bytes(DType dtype, std::span<const std::int64_t> shape);

/// Opens `options.path` on OpenCV DNN (an ONNX file).
Result<std::unique_ptr<Model::Impl>> open_opencv_model(const ModelOptions& options);
/// Opens `options.path` on libtorch (a TorchScript file), loading the plugin
/// first; Unavailable in a build without libtorch or when the plugin (or
/// libtorch) does not load.
Result<std::unique_ptr<Model::Impl>> open_torch_model(const ModelOptions& options);

}  // namespace neat

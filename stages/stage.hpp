// Stage: one step of a stage graph. It declares what it accepts (Accepts) and
// what it produces for a given input (output_spec, checked at build()), and
// processes frames by value, so the last consumer of a buffer can reuse it
// (make_writable donates instead of copying). Stages never throw into the
// runtime: errors are values, and the runtime prefixes them with the
// stage's name.
//
// Writing your own stage takes a few lines with make_stage():
//
//   auto invert = neat::make_stage("invert", {.dtypes = {DType::U8}, .writes = true},
//       [](NeatTensor frame, StageContext&) -> Result<NeatTensor> {
//         NEAT_ASSIGN_OR_RETURN(auto w, std::move(frame).make_writable());
//         ...  // map(MapMode::Write) and edit
//         return w;
//       });
//
// Ownership: the graph owns its stages (std::unique_ptr).
// Threading: process() is called from the stage's own thread, one frame at a
// time; output_spec() and accepts() from the thread that calls build().
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "neat/contract/allocator.hpp"
#include "neat/contract/neat_tensor.hpp"
#include "neat/stages/frame_spec.hpp"

namespace neat {

/// A borrowed view of a tensor, valid only during the call that hands it out
/// (sink callbacks, inspect stages). to_owned() keeps the frame (a handle
/// copy: shares the buffer, copies no bytes).
class NeatTensorRef {
 public:
  explicit NeatTensorRef(const NeatTensor& tensor) noexcept : tensor_(&tensor) {}
  const NeatTensor& get() const noexcept { return *tensor_; }
  const NeatTensor* operator->() const noexcept { return tensor_; }
  const NeatTensor& operator*() const noexcept { return *tensor_; }
  NeatTensor to_owned() const { return *tensor_; }

 private:
  const NeatTensor* tensor_;
};

/// What a stage knows while it processes a frame.
struct StageContext {
  std::string_view graph;
  std::string_view stage;
  std::int64_t frame = -1;
  /// The stage's own pooled allocator: outputs allocated here are recycled
  /// once downstream releases them (steady state allocates nothing).
  StorageAllocator* allocator = nullptr;
  /// Set when the graph runs the stage on an edge on the user's behalf (one
  /// of the implicit conversions its plan lists): the stage's conversions are
  /// then implicit, ruled by `policy`, attributed to `requested_by`, with
  /// `fix` in a refusal.
  bool implicit = false;
  std::optional<ConversionPolicy> policy;
  std::string_view requested_by;
  std::string_view fix;
  /// The row workers a kernel stage splits a frame over: the graph's thread
  /// budget sets it (GraphPlan::threads); 0 outside a graph (the machine's).
  int kernel_threads = 0;

  /// What a stage passes to the kernels it calls: this context's allocator,
  /// policy and implicit/explicit standing, and `threads` row workers.
  ConversionOptions conversion_options(int threads = 1) const {
    ConversionOptions o;
    o.policy = policy;
    o.allocator = allocator;
    o.implicit = implicit;
    o.requested_by = requested_by;
    o.fix = fix;
    o.threads = threads;
    return o;
  }
};

/// A thread pool a stage computes on besides the graph's own threads (a
/// model engine's process-wide pool): the graph's thread budget counts each
/// pool once.
struct EnginePool {
  std::string name;  ///< "libtorch", "opencv" (the pool the kernel stages use too)
  int threads = 0;   ///< its size while the stage lives
};

class Stage {
 public:
  virtual ~Stage() = default;
  /// The stage type, e.g. "resize" (the graph gives each instance its name).
  virtual std::string_view kind() const noexcept = 0;
  /// What the stage takes.
  virtual Accepts accepts() const = 0;
  /// What it produces from frames of `input` (already converted to what it
  /// accepts). An error says why the stage cannot take such frames. Pure: it
  /// decides, prepare() keeps (build() and plan() may ask it more than once).
  virtual Result<FrameSpec> output_spec(const FrameSpec& input) const = 0;
  /// Called by build() and plan() once output_spec(input) gave `output`,
  /// before the stage's thread starts: the stage keeps what it decided from
  /// the frames it will receive (a colour standard, a kernel's parameters, a
  /// model's batch axis), for process() and describe(). The lifecycle of
  /// sources and sinks, for stages (MediaPipe's GetContract / Open split).
  virtual Status prepare(const FrameSpec& input, const FrameSpec& output) {
    (void)input;
    (void)output;
    return {};
  }
  /// Processes one frame. Returns the output frame or an error value.
  virtual Result<NeatTensor> process(NeatTensor frame, StageContext& context) = 0;
  /// Parameters for explain(), e.g. "resize 640x640 bilinear".
  virtual std::string describe() const { return std::string(kind()); }
  /// Whether process() may return its input's buffer (the same tensor, a
  /// view of it, or an in-place result) for frames of `input`, rather than
  /// always a buffer of its own. The graph sizes buffer pools from it: a
  /// buffer passed along stays in flight downstream. The default, true, is
  /// the safe answer for a stage that does not know.
  virtual bool may_forward_input(const FrameSpec& input) const {
    (void)input;
    return true;
  }
  /// Copies the stage makes on every frame besides producing its output (a
  /// model runtime's own copy of its input, outputs moved out of the
  /// runtime's buffers), known after prepare(): explain() lists them. The
  /// stage records them itself, as they happen.
  virtual std::vector<InnerConversion> inner_conversions() const { return {}; }
  /// The engine pool the stage computes on, if it has one (the infer stage):
  /// the graph's thread budget counts it and gives the kernel stages what is left.
  virtual std::optional<EnginePool> engine_pool() const { return std::nullopt; }
  /// Who allocates the frames process() returns when not the stage's pool
  /// (StageContext::allocator): e.g. "libtorch" for a model engine's own
  /// tensors. Empty (the default): the pool. The memory plan counts the
  /// frames either way; explain and the run's report say whose they are.
  virtual std::string output_allocator() const { return {}; }
};

using StageFunction = std::function<Result<NeatTensor>(NeatTensor, StageContext&)>;
using SpecFunction = std::function<Result<FrameSpec>(const FrameSpec&)>;

/// A stage from a function. output_spec defaults to "same as the input".
std::unique_ptr<Stage> make_stage(std::string kind, Accepts accepts, StageFunction process,
                                  SpecFunction output_spec = {});

}  // namespace neat

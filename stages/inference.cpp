#include "neat/stages/inference.hpp"

#include <algorithm>
#include <thread>

#include <filesystem>
#include <vector>

namespace neat {
namespace {

class InferStage final : public Stage {
 public:
  InferStage(std::unique_ptr<Model> model, std::size_t output)
      : model_(std::move(model)), output_(output) {
    outputs_.reserve(model_->outputs().size());
  }
  std::string_view kind() const noexcept override { return "infer"; }
  Accepts accepts() const override {
    Accepts a;
    a.dtypes = {DType::F32};
    a.formats = {PixelFormat::None};
    a.contiguous = true;  // both engines read packed tensors
    return a;
  }
  Result<FrameSpec> output_spec(const FrameSpec& in) const override {
    const ModelTensorInfo& want = model_->input();
    const std::string what = "infer (model '" + model_->path() + "')";
    const std::vector<std::int64_t> got = model_input_shape(in);
    bool fits = got.size() == want.shape.size();
    for (std::size_t i = 0; fits && i < got.size(); ++i) {
      fits = want.shape[i] < 0 || want.shape[i] == got[i];
    }
    if (!fits) {
      std::string fix = "preprocess the frames to the model's input";
      if (want.shape.size() == 4 && want.shape[1] == 3 && want.shape[2] > 0 && want.shape[3] > 0) {
        fix = "e.g. `preprocess size=" + std::to_string(want.shape[3]) + "x" +
              std::to_string(want.shape[2]) + "` before `infer`";
      }
      return invalid_argument(what + ": takes " + want.to_string() + ", the edge brings " +
                              in.to_string() + "; " + fix);
    }
    const ModelTensorInfo& o = model_->outputs()[output_];
    FrameSpec out;
    out.dtype = o.dtype;
    for (std::int64_t d : o.shape)
      out.shape.push_back(d);
    out.device = kCpu;
    return out;
  }
  // The model boundary's copies for frames of `in`, as the model declares
  // them (explain lists them; the model records them as they happen), and
  // the batch axis a view adds.
  Status prepare(const FrameSpec& in, const FrameSpec&) override {
    const std::vector<std::int64_t> got = model_input_shape(in);
    add_batch_ = got.size() == static_cast<std::size_t>(in.shape.size()) + 1;
    inner_.clear();
    for (const ModelCopy& c : model_->copies(got)) {
      InnerConversion ic;
      ic.element = c.engine;
      ic.what = c.what;
      ic.kind = c.kind;
      ic.reason = c.reason;
      ic.bytes_read = ic.bytes_written = c.bytes;
      inner_.push_back(std::move(ic));
    }
    return {};
  }
  Result<NeatTensor> process(NeatTensor frame, StageContext& ctx) override {
    if (add_batch_) {
      NEAT_ASSIGN_OR_RETURN(frame, frame.unsqueeze(0));
    }
    NEAT_RETURN_IF_ERROR(model_->run(frame, outputs_, ctx.conversion_options()));
    NeatTensor out = std::move(outputs_[output_]);
    outputs_.clear();  // the others go back to the pool now
    return out;
  }
  bool may_forward_input(const FrameSpec&) const override { return false; }
  std::vector<InnerConversion> inner_conversions() const override { return inner_; }
  std::string output_allocator() const override {
    return model_->engine() == "libtorch" ? "libtorch" : std::string();
  }
  std::optional<EnginePool> engine_pool() const override {
    return EnginePool{model_->engine() == "libtorch" ? "libtorch" : "opencv", model_->threads()};
  }
  std::string describe() const override {
    return "infer model=" + std::filesystem::path(model_->path()).filename().string() + " " +
           model_->input().to_string() + " -> " + model_->outputs()[output_].to_string() + " (" +
           std::string(model_->engine()) +
           (model_->threads() > 0 ? ", holding its process-wide pool at " +
                                        std::to_string(model_->threads()) + " threads"
                                  : std::string()) +
           "; " + model_->boundary() + ")";
  }

 private:
  // The shape the model gets from frames of `in`: a [3, H, W] frame feeds a
  // [1, 3, H, W] model through a view that adds the batch axis.
  std::vector<std::int64_t> model_input_shape(const FrameSpec& in) const {
    const ModelTensorInfo& want = model_->input();
    std::vector<std::int64_t> got(in.shape.begin(), in.shape.end());
    if (got.size() + 1 == want.shape.size() && !want.shape.empty() &&
        (want.shape[0] == 1 || want.shape[0] < 0))
      got.insert(got.begin(), 1);
    return got;
  }

  std::unique_ptr<Model> model_;
  std::size_t output_;
  std::vector<NeatTensor> outputs_;
  bool add_batch_ = false;              // set by prepare()
  std::vector<InnerConversion> inner_;  // set by prepare()
};

class YoloStage final : public Stage {
 public:
  explicit YoloStage(YoloParams p) : decoder_(std::move(p)) {}
  std::string_view kind() const noexcept override { return "yolo"; }
  Accepts accepts() const override {
    Accepts a;
    a.formats = {PixelFormat::None};
    return a;
  }
  Result<FrameSpec> output_spec(const FrameSpec& in) const override {
    if (auto shape = yolo_shape(in.shape, decoder_.params()); !shape.ok()) return shape.error();
    FrameSpec out;
    out.dtype = DType::F32;
    out.shape = Dims{decoder_.params().max_detections, 6};  // at most; N rows per frame
    out.device = kCpu;
    out.contiguous = true;
    return out;
  }
  Status prepare(const FrameSpec& in, const FrameSpec&) override {
    NEAT_ASSIGN_OR_RETURN(shape_, yolo_shape(in.shape, decoder_.params()));
    return {};
  }
  Result<NeatTensor> process(NeatTensor frame, StageContext& ctx) override {
    return decoder_.decode(frame, ctx.conversion_options());
  }
  bool may_forward_input(const FrameSpec&) const override { return false; }
  std::string describe() const override {
    const YoloParams& p = decoder_.params();
    std::string s =
        "yolo " +
        std::string(shape_.layout == YoloLayout::V8 ? "v8 [1, 4 + " : "v5 [1, anchors, 5 + ") +
        std::to_string(shape_.classes) +
        (shape_.layout == YoloLayout::V8 ? ", " + std::to_string(shape_.anchors) + "]" : "]") +
        " conf=" + std::to_string(p.confidence).substr(0, 4) +
        " iou=" + std::to_string(p.iou).substr(0, 4) + " max=" + std::to_string(p.max_detections);
    if (!p.classes.empty()) s += " classes=" + std::to_string(p.classes.size());
    return s + " -> f32 [N, 6] x1 y1 x2 y2 score class, source pixels (views, no pack)";
  }

 private:
  YoloDecoder decoder_;
  YoloShape shape_;  // set by prepare(), for explain
};

}  // namespace

Result<std::unique_ptr<Stage>> infer_stage(InferOptions options) {
  if (options.model.threads == 0) {
    options.model.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }
  NEAT_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(options.model));
  if (model->inputs().size() != 1) {
    std::string names;
    for (const ModelTensorInfo& i : model->inputs())
      names += (names.empty() ? "" : ", ") + i.to_string();
    return unimplemented(
        "infer: model '" + options.model.path + "' takes " +
        std::to_string(model->inputs().size()) + " inputs (" + names +
        "); the infer stage hands the model one tensor per frame: feed a model with "
        "several inputs with neat::Model::run from C++");
  }
  std::size_t index = 0;
  if (!options.output.empty()) {
    bool found = false;
    std::string names;
    for (std::size_t i = 0; i < model->outputs().size(); ++i) {
      if (model->outputs()[i].name == options.output) {
        index = i;
        found = true;
      }
      names += (i == 0 ? "" : ", ") + model->outputs()[i].name;
    }
    if (!found) {
      return invalid_argument("infer: model '" + options.model.path + "' has no output '" +
                              options.output + "' (it has: " + names + ")");
    }
  }
  return std::unique_ptr<Stage>(new InferStage(std::move(model), index));
}

Result<std::unique_ptr<Stage>> yolo_stage(YoloParams params) {
  NEAT_RETURN_IF_ERROR(check_yolo_params(params));
  return std::unique_ptr<Stage>(new YoloStage(std::move(params)));
}

}  // namespace neat

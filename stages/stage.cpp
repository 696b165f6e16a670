#include "neat/stages/stage.hpp"

namespace neat {
namespace {

class FunctionStage final : public Stage {
 public:
  FunctionStage(std::string kind, Accepts accepts, StageFunction process, SpecFunction spec)
      : kind_(std::move(kind)),
        accepts_(std::move(accepts)),
        process_(std::move(process)),
        spec_(std::move(spec)) {}
  std::string_view kind() const noexcept override { return kind_; }
  Accepts accepts() const override { return accepts_; }
  Result<FrameSpec> output_spec(const FrameSpec& input) const override {
    if (spec_) return spec_(input);
    return input;
  }
  Result<NeatTensor> process(NeatTensor frame, StageContext& context) override {
    return process_(std::move(frame), context);
  }

 private:
  std::string kind_;
  Accepts accepts_;
  StageFunction process_;
  SpecFunction spec_;
};

}  // namespace

std::unique_ptr<Stage> make_stage(std::string kind, Accepts accepts, StageFunction process,
                                  SpecFunction output_spec) {
  return std::make_unique<FunctionStage>(std::move(kind), std::move(accepts), std::move(process),
                                         std::move(output_spec));
}

}  // namespace neat

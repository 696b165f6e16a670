// The model boundary as stages: `infer` runs a model on OpenCV DNN (ONNX) or
// libtorch (TorchScript) (kernels/model.hpp), `yolo` decodes a detector's output into detections in
// source-frame pixels (kernels/detections.hpp). Both declare what they take,
// so build() checks the edges before a frame flows: the model's input shape
// and dtype come from the model file; yolo checks the output's layout and
// class count.
//
// infer: takes a dense F32 tensor of the model's input shape ([3, H, W] is
// accepted for a [1, 3, H, W] model: a view adds the batch dimension) and
// hands on one of the model's outputs (`output`, default the first; the
// convention for models with several outputs). Copies per frame are the
// model's declared ones (Model::copies), recorded and listed by explain():
// on OpenCV, setInput's copy (transfer, model_input) and each output moved
// out of the net's reused buffer into the stage's pool (pack, model_output);
// on libtorch none (the input is handed over its own memory, the outputs
// are torch's own buffers, shared read-only).
//
// Ownership: the factories return stages for GraphBuilder::add_stage().
// Threading: a stage instance runs on one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "neat/kernels/detections.hpp"
#include "neat/kernels/model.hpp"
#include "neat/stages/stage.hpp"

namespace neat {

struct InferOptions {
  /// model.threads 0 gives the model the machine's hardware threads (a model
  /// is most of a frame's work; the graph's thread budget leaves the kernel
  /// stages one): the engine's process-wide pool, held while the stage lives.
  ModelOptions model;
  /// The output to hand on: a name, or empty for the first.
  std::string output;
};

/// Loads the model now (a missing or unsupported file fails here, before
/// build()).
Result<std::unique_ptr<Stage>> infer_stage(InferOptions options);

/// Decodes YOLOv8 / YOLOv5 outputs into F32 [N, 6] detections (x1, y1, x2,
/// y2, score, class) in the source frame's pixels. Bad parameters fail here.
Result<std::unique_ptr<Stage>> yolo_stage(YoloParams params);

}  // namespace neat

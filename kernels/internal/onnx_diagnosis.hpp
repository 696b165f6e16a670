// When OpenCV DNN cannot import or run an ONNX graph: which node it fails
// on, its op type, and what to do instead, as a typed error. Failure paths
// only (the model's load): nothing here runs per frame.
//
// Internal: not installed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "neat/contract/error.hpp"

namespace neat {

/// An ONNX graph node as the file names it.
struct OnnxNode {
  std::string name;  ///< the node's name (or its first output's, when unnamed)
  std::string op;    ///< its op type, e.g. "TopK"
};

/// The node an importer error names ("Node [TopK@ai.onnx]:(onnx_node!head/topk) ...").
std::optional<OnnxNode> node_in_import_error(std::string_view message);

/// The node of an OpenCV layer (named "onnx_node!" + the node's name, or
/// after its output), looked up in the ONNX file at `path`; `layer_type` (the
/// layer's OpenCV type) when the file does not have it.
OnnxNode node_of_layer(const std::string& path, std::string_view layer,
                       std::string_view layer_type);

/// The error of a graph OpenCV DNN cannot import (`at_run` false) or run on
/// `input` (at_run true) at `node`: Unimplemented, the node and op in the
/// place, the engine's own words in the message, and the fixes (the
/// TorchScript engine, or an export OpenCV 4.6 takes).
Error opencv_cannot(const std::string& model, const OnnxNode& node, bool at_run,
                    const std::string& input, const std::string& engine_message);

}  // namespace neat

#include "neat/kernels/internal/onnx_diagnosis.hpp"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <opencv2/core/version.hpp>
#include <vector>

namespace neat {
namespace {

// OpenCV names the layer of an ONNX node "onnx_node!" + the node's name.
constexpr std::string_view kLayerPrefix = "onnx_node!";

std::string node_name_of_layer(std::string_view layer) {
  if (layer.starts_with(kLayerPrefix)) layer.remove_prefix(kLayerPrefix.size());
  return std::string(layer);
}

// The node named `name`, or else the one producing the output `name`.
std::optional<OnnxNode> find_node(const std::string& path, const std::string& name) {
  onnx::ModelProto proto;
  std::ifstream in(path, std::ios::binary);
  if (!in || !proto.ParseFromIstream(&in)) return std::nullopt;
  for (const auto& n : proto.graph().node()) {
    if (n.name() == name) return OnnxNode{n.name(), n.op_type()};
  }
  for (const auto& n : proto.graph().node()) {
    for (const auto& out : n.output()) {
      if (out == name) return OnnxNode{n.name().empty() ? out : n.name(), n.op_type()};
    }
  }
  return std::nullopt;
}

// OpenCV's words without its frame: "OpenCV(4.6.0) file:line: error: (-2:...)
// Can't create layer ... in function 'f'" -> "Can't create layer ...".
std::string engine_words(std::string_view m) {
  if (const auto e = m.find("error: ("); e != std::string_view::npos) {
    if (const auto close = m.find(") ", e); close != std::string_view::npos) {
      m.remove_prefix(close + 2);
    }
  }
  if (const auto f = m.find(" in function"); f != std::string_view::npos) m = m.substr(0, f);
  std::string out;
  for (char c : m) {
    if (c == '\n') c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '>'))
    out.pop_back();
  return out;
}

}  // namespace

std::optional<OnnxNode> node_in_import_error(std::string_view message) {
  // "Node [TopK@ai.onnx]:(onnx_node!head/topk) parse error: ..."
  const auto open = message.find("Node [");
  const auto at = message.find('@', open);
  const auto layer = message.find(kLayerPrefix, open);
  if (open == std::string_view::npos || at == std::string_view::npos ||
      layer == std::string_view::npos) {
    return std::nullopt;
  }
  const auto close = message.find(')', layer);
  if (close == std::string_view::npos) return std::nullopt;
  OnnxNode node;
  node.op = std::string(message.substr(open + 6, at - open - 6));
  node.name = node_name_of_layer(message.substr(layer, close - layer));
  return node;
}

OnnxNode node_of_layer(const std::string& path, std::string_view layer,
                       std::string_view layer_type) {
  const std::string name = node_name_of_layer(layer);
  if (auto node = find_node(path, name)) return *node;
  return OnnxNode{name, std::string(layer_type)};
}

Error opencv_cannot(const std::string& model, const OnnxNode& node, bool at_run,
                    const std::string& input, const std::string& engine_message) {
  const std::string file = std::filesystem::path(model).filename().string();
  std::string what = at_run ? "OpenCV DNN " + std::string(CV_VERSION) +
                                  " imports the graph but cannot run this node on input " + input
                            : "OpenCV DNN " + std::string(CV_VERSION) + " cannot import this node";
  what += ": " + engine_words(engine_message);
  return Error(
      ErrorCode::Unimplemented, "model '" + file + "' node '" + node.name + "' (" + node.op + ")",
      std::move(what),
      {Fix{"run it on libtorch: export the model as TorchScript (torch.jit.trace or "
           "torch.jit.script, then torch.jit.save) and give the .pt with backend=torch",
           {}},
       Fix{"export a graph OpenCV takes: shapes as constants (no Shape/Gather feeding a Reshape "
           "or Slice), splits with constant sizes, equal shapes for element-wise ops with a "
           "constant; or export the raw head and decode with the yolo stage",
           {}}});
}

}  // namespace neat

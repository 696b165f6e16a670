// The pipeline text syntax of `neat run` / `neat explain`, close to
// gst-launch's:
//
//   gst:"videotestsrc ! video/x-raw,format=NV12,width=1920,height=1080" !
//     preprocess size=640x640 mean=0.485,0.456,0.406 std=0.229,0.224,0.225 ! appsink
//
// Elements are separated by "!". The first is a source, the last a sink, the
// ones between are stages. An element is either gst:"<description>" (a
// GStreamer source ending in an appsink, or, last, a downstream pipeline fed
// through an appsrc) or a name followed by key=value properties. Values with
// spaces are quoted ("..." with \" and \\ escapes). See docs/graphs.md for
// every element and property.
//
// Errors are InvalidArgument and point at the offending token:
//
//   pipeline: unknown stage 'resise' (stages: convert, resize, ...)
//     default ! resise size=640x640 ! appsink
//               ^^^^^^
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "neat/contract/conversion.hpp"
#include "neat/stages/appsink.hpp"
#include "neat/stages/graph.hpp"

namespace neat {

struct PipelineElement {
  std::string name;  ///< "preprocess", or "gst" for gst:"..."
  std::string gst;   ///< the GStreamer description of gst:"..."
  std::vector<std::pair<std::string, std::string>> properties;
  std::size_t offset = 0;  ///< where the element's name starts in the text
  std::size_t length = 0;
};

/// Splits and tokenizes; checks quoting and key=value shape only.
Result<std::vector<PipelineElement>> parse_pipeline(std::string_view text);

struct PipelineOptions {
  std::string graph_name = "pipeline";
  std::optional<ConversionPolicy> policy;  ///< the graph's policy
  /// Frames of the `default` source (videotestsrc num-buffers).
  std::int64_t default_frames = 300;
};

struct BuiltPipeline {
  GraphBuilder builder;
  std::shared_ptr<AppSink> appsink;  ///< the pipeline's appsink, if it ends in one
  std::string source_name;           ///< name of the source node
};

/// Parses `text` and declares the graph (not built yet: call builder.build()).
/// Unknown elements, properties and bad values are errors pointing at the token.
Result<BuiltPipeline> declare_pipeline(std::string_view text, PipelineOptions options = {});

/// The built-in demo pipeline: the default source (videotestsrc 1920x1080
/// NV12) through the fused preprocess (640x640, ImageNet mean/std) into an appsink.
std::string default_pipeline_text();

}  // namespace neat

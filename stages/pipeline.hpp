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
// spaces are quoted ("..." with \" and \\ escapes). The elements and their
// properties come from one registry (elements.hpp; `neat elements` prints it).
//
// Fan-out as in gst-launch: `tee name=t` names a branch point, and `t. ! ...`
// after the end of a chain starts a branch taking the same frames (any source
// or stage can start one by its node name); every branch ends in a sink:
//
//   default ! tee name=t ! preprocess ! appsink  t. ! gst:"x264enc ! ... filesink ..."
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
#include "neat/stages/elements.hpp"
#include "neat/stages/graph.hpp"

namespace neat {

/// Splits and tokenizes; checks quoting and key=value shape only.
Result<std::vector<PipelineElement>> parse_pipeline(std::string_view text);

struct BuiltPipeline {
  GraphBuilder builder;
  std::shared_ptr<AppSink> appsink;  ///< the pipeline's first appsink, if any
  /// Every appsink by node name, in the order of the text (branches may end in several).
  std::vector<std::pair<std::string, std::shared_ptr<AppSink>>> appsinks;
  std::string source_name;  ///< name of the source node
};

/// Parses `text` and declares the graph (not built yet: call builder.build()).
/// Unknown elements, properties and bad values are errors pointing at the token.
Result<BuiltPipeline> declare_pipeline(std::string_view text, PipelineOptions options = {});

/// The built-in demo pipeline, a detector end to end: the default source
/// (videotestsrc 1920x1080 NV12, the moving ball) letterboxed into 640x640 F32
/// by the fused preprocess, the generated YOLO-shaped detector (models:detector)
/// on OpenCV DNN, the yolo decode, detections [N, 6] in source pixels into an appsink.
std::string default_pipeline_text();

}  // namespace neat

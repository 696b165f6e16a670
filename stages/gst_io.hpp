// GStreamer at the edges of a graph: a source from any launch description
// ending in an appsink, and a sink that feeds a downstream pipeline through an
// appsrc. Frames cross in both directions without a copy (wrap_gst_sample,
// to_gst_buffer).
//
//   gst_source("videotestsrc num-buffers=300 ! video/x-raw,format=NV12,width=1920,height=1080")
//   gst_source("filesrc location=in.mkv ! decodebin ! videoconvert ! video/x-raw,format=NV12")
//   gst_appsrc_sink("videoconvert ! jpegenc ! matroskamux ! filesink location=out.mkv")
//
// A description without an appsink gets " ! appsink" appended; one that does
// not start with an appsrc gets "appsrc ! " prepended. Errors carry
// GStreamer's own text (a missing element, a bad URI, a caps mismatch).
//
// Ownership: the graph owns the source; sinks are shared.
// Threading: called from the graph's threads.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "neat/stages/sink.hpp"
#include "neat/stages/source.hpp"

namespace neat {

/// The built-in default input: videotestsrc, 1920x1080 NV12, `frames` frames.
std::string default_gst_source_description(std::int64_t frames = 300);

struct GstSourceOptions {
  int max_buffers = 4;  ///< appsink queue: GStreamer waits when the graph is behind
  std::chrono::milliseconds preroll_timeout = std::chrono::seconds(20);
};
std::unique_ptr<Source> gst_source(std::string description, GstSourceOptions options = {});

struct GstSinkOptions {
  int fps_n = 30;  ///< framerate stamped on the caps and the buffers
  int fps_d = 1;
  std::chrono::milliseconds eos_timeout = std::chrono::seconds(60);
};
std::shared_ptr<Sink> gst_appsrc_sink(std::string description, GstSinkOptions options = {});

}  // namespace neat

// GStreamer at the edges of a graph: a source from any launch description
// ending in an appsink, and a sink that feeds a downstream pipeline through an
// appsrc. Frames cross in both directions without a copy (wrap_gst_sample,
// export_gst_buffer).
//
//   gst_source("videotestsrc num-buffers=300 ! video/x-raw,format=NV12,width=1920,height=1080")
//   gst_source("filesrc location=in.mkv ! decodebin ! videoconvert ! video/x-raw,format=NV12")
//   gst_appsrc_sink("videoconvert ! jpegenc ! matroskamux ! filesink location=out.mkv")
//
// A description without an appsink gets " ! appsink" appended; one that does
// not start with an appsrc gets "appsrc ! " prepended. Errors carry
// GStreamer's own text (a missing element, a bad URI, a caps mismatch).
//
// Once a source has prerolled, every element of its pipeline that transforms
// frames (a GstBaseTransform not in passthrough for the negotiated caps:
// converters, scalers, rate changers; and video decoders and encoders) is
// listed by inner_conversions() (explain() shows it) and recorded on every
// frame as a conversion event of the source node, naming the element.
//
// Failures: a downstream pipeline's error (seen on its own threads through a
// bus sync handler) ends the sink's next consume() with GStreamer's message
// and releases a push blocked on the appsrc queue; caps the pipeline cannot
// take are refused by prepare() and check(). A source waits at most
// first_frame_timeout for its first frame, and gives up when `cancelled` says so.
//
// Ownership: the graph owns the source; sinks are shared.
// Threading: called from the graph's threads.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "neat/stages/sink.hpp"
#include "neat/stages/source.hpp"

namespace neat {

/// The built-in default input: videotestsrc, 1920x1080 NV12, `frames` frames,
/// in videotestsrc's `pattern` (empty: its default, smpte).
std::string default_gst_source_description(std::int64_t frames = 300,
                                           const std::string& pattern = {});

/// The patterns videotestsrc offers (their nicks, e.g. "smpte", "ball"), read
/// from the installed element; an error when GStreamer or the element is missing.
Result<std::vector<std::string>> videotestsrc_patterns();

struct GstSourceOptions {
  /// The appsink's queue: GStreamer waits when the graph is behind. 1 keeps
  /// the pipeline's next frame ready while the graph takes the current one
  /// (measured: deeper queues add 3 MiB per 1080p NV12 frame and no
  /// throughput; docs/graphs.md).
  int max_buffers = 1;
  /// How long prepare() waits for the first frame (a live source) or for the
  /// pipeline to preroll; then a FailedPrecondition naming `timeout_setting`.
  std::chrono::milliseconds first_frame_timeout = std::chrono::seconds(20);
  /// How the user sets first_frame_timeout, named in the timeout's message.
  std::string timeout_setting = "GstSourceOptions::first_frame_timeout";
  /// Polled every 100 ms while prepare() waits: true gives up at once with a
  /// Cancelled error (e.g. a signal arrived). Empty: never.
  std::function<bool()> cancelled;
  /// Names of elements NeatTensor inserted into the description on the user's
  /// behalf (e.g. the `file` source's videoconvert for format=): their
  /// conversions are implicit, ruled by the policy (refused under Strict at
  /// prepare() unless in passthrough). Every other converting element is explicit.
  std::vector<std::string> implicit_elements;
  /// Shown in the refusal of an implicit element: how to do without it.
  std::string implicit_fix;
};
std::unique_ptr<Source> gst_source(std::string description, GstSourceOptions options = {});

struct GstSinkOptions {
  /// Framerate announced in the caps when the frames' spec has none
  /// (FrameSpec::fps_n == 0: a synthetic or push source), and stamped on the
  /// buffers of frames without a timestamp (frames from a GStreamer source
  /// keep their own: meta().pts_ns, meta().duration_ns).
  int fps_n = 30;
  int fps_d = 1;
  std::chrono::milliseconds eos_timeout = std::chrono::seconds(60);
};
std::shared_ptr<Sink> gst_appsrc_sink(std::string description, GstSinkOptions options = {});

}  // namespace neat

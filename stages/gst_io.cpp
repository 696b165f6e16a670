#include "neat/stages/gst_io.hpp"

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <mutex>

#include "neat/storage/gstreamer.hpp"

namespace neat {
namespace {

// GStreamer's error message on the bus (if any), with the element's name.
std::string bus_error(GstElement* pipeline, GstClockTime wait = 0) {
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* msg = gst_bus_timed_pop_filtered(bus, wait, GST_MESSAGE_ERROR);
  gst_object_unref(bus);
  if (msg == nullptr) return {};
  GError* err = nullptr;
  gchar* debug = nullptr;
  gst_message_parse_error(msg, &err, &debug);
  std::string out = GST_OBJECT_NAME(GST_MESSAGE_SRC(msg));
  out += ": ";
  out += err != nullptr ? err->message : "error";
  if (debug != nullptr) {
    out += " (";
    out += debug;
    out += ")";
  }
  if (err != nullptr) g_error_free(err);
  g_free(debug);
  gst_message_unref(msg);
  return out;
}

Result<GstElement*> parse(const std::string& description, std::string_view what) {
  NEAT_RETURN_IF_ERROR(ensure_gstreamer());
  GError* err = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &err);
  if (err != nullptr) {
    std::string m =
        std::string(what) + ": GStreamer cannot parse \"" + description + "\": " + err->message;
    g_error_free(err);
    if (pipeline != nullptr) gst_object_unref(pipeline);
    return invalid_argument(std::move(m));
  }
  if (pipeline == nullptr) {
    return invalid_argument(std::string(what) + ": GStreamer cannot parse \"" + description + "\"");
  }
  return pipeline;
}

template <class Pred>
GstElement* find_element(GstElement* pipeline, Pred pred) {
  if (!GST_IS_BIN(pipeline)) return pred(pipeline) ? pipeline : nullptr;
  GstIterator* it = gst_bin_iterate_recurse(GST_BIN(pipeline));
  GValue v = G_VALUE_INIT;
  GstElement* found = nullptr;
  while (found == nullptr && gst_iterator_next(it, &v) == GST_ITERATOR_OK) {
    auto* e = GST_ELEMENT(g_value_get_object(&v));
    if (pred(e)) found = e;
    g_value_reset(&v);
  }
  g_value_unset(&v);
  gst_iterator_free(it);
  return found;
}

Result<FrameSpec> spec_from_caps(GstCaps* caps, std::string_view what) {
  GstVideoInfo info;
  if (caps == nullptr || !gst_video_info_from_caps(&info, caps)) {
    gchar* text = caps != nullptr ? gst_caps_to_string(caps) : nullptr;
    std::string m = std::string(what) + ": the appsink receives \"" +
                    (text != nullptr ? text : "no caps") +
                    "\", not raw video; end the description with e.g. \"! videoconvert ! "
                    "video/x-raw,format=NV12\"";
    g_free(text);
    return invalid_argument(std::move(m));
  }
  auto format = pixel_format_from_gst(GST_VIDEO_INFO_FORMAT(&info));
  if (!format.ok()) return format.error().with_context(what);
  FrameSpec s =
      FrameSpec::image(*format, GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info));
  if (is_planar(*format)) s.colorimetry = gst_caps_colorimetry(caps);  // what each frame carries
  // Padded rows (e.g. I420 at width 1918) make the frames non-contiguous.
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&info); ++p) {
    const std::int64_t packed = static_cast<std::int64_t>(GST_VIDEO_INFO_COMP_WIDTH(&info, p)) *
                                GST_VIDEO_INFO_COMP_PSTRIDE(&info, p);
    if (GST_VIDEO_INFO_PLANE_STRIDE(&info, p) != packed) s.contiguous = false;
  }
  return s;
}

class GstSource final : public Source {
 public:
  GstSource(std::string description, GstSourceOptions options)
      : description_(std::move(description)), options_(options) {
    if (description_.find("appsink") == std::string::npos) description_ += " ! appsink";
  }
  ~GstSource() override { close(); }
  std::string_view kind() const noexcept override { return "gst"; }
  std::string describe() const override { return "gst \"" + description_ + "\""; }

  Result<FrameSpec> prepare() override {
    NEAT_ASSIGN_OR_RETURN(pipeline_, parse(description_, "gst source"));
    sink_ = find_element(pipeline_, [](GstElement* e) { return GST_IS_APP_SINK(e) != 0; });
    if (sink_ == nullptr) {
      return invalid_argument("gst source: \"" + description_ + "\" has no appsink");
    }
    g_object_set(sink_, "sync", FALSE, "max-buffers", static_cast<guint>(options_.max_buffers),
                 "drop", FALSE, "emit-signals", FALSE, nullptr);
    const GstStateChangeReturn r = gst_element_set_state(pipeline_, GST_STATE_PAUSED);
    if (r == GST_STATE_CHANGE_FAILURE) return failure("cannot start");
    if (r == GST_STATE_CHANGE_NO_PREROLL) {
      // Live source: caps arrive with the first frame.
      if (gst_element_set_state(pipeline_, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        return failure("cannot start");
      }
      playing_ = true;
      GstSample* s = gst_app_sink_try_pull_sample(
          GST_APP_SINK(sink_),
          static_cast<GstClockTime>(options_.preroll_timeout.count()) * GST_MSECOND);
      if (s == nullptr) return failure("no first frame");
      first_ = s;
    } else {
      const auto wait = static_cast<GstClockTime>(options_.preroll_timeout.count()) * GST_MSECOND;
      if (gst_element_get_state(pipeline_, nullptr, nullptr, wait) != GST_STATE_CHANGE_SUCCESS) {
        return failure("did not preroll");
      }
      first_ = gst_app_sink_try_pull_preroll(GST_APP_SINK(sink_), 0);
      if (first_ == nullptr) {
        if (gst_app_sink_is_eos(GST_APP_SINK(sink_))) {
          empty_ = true;  // a stream without frames: valid, ends at once
          return FrameSpec{};
        }
        return failure("prerolled without a frame");
      }
    }
    spec_ = spec_from_caps(gst_sample_get_caps(first_), "gst source");
    if (first_ != nullptr && !playing_) {
      gst_sample_unref(first_);  // the preroll sample comes again as the first frame
      first_ = nullptr;
    }
    return spec_;
  }

  Result<std::optional<NeatTensor>> next(const std::atomic<bool>& stop) override {
    if (empty_) return std::optional<NeatTensor>();
    if (!playing_) {
      if (gst_element_set_state(pipeline_, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        return failure("cannot play");
      }
      playing_ = true;
    }
    for (;;) {
      GstSample* s = first_ != nullptr
                         ? std::exchange(first_, nullptr)
                         : gst_app_sink_try_pull_sample(GST_APP_SINK(sink_), 100 * GST_MSECOND);
      if (s != nullptr) {
        auto t = wrap_gst_sample(s);
        gst_sample_unref(s);
        if (!t.ok()) return t.error().with_context("gst source");
        return std::optional<NeatTensor>(std::move(*t));
      }
      if (std::string e = bus_error(pipeline_); !e.empty()) {
        return failed_precondition("gst source \"" + description_ + "\" failed: " + e);
      }
      if (gst_app_sink_is_eos(GST_APP_SINK(sink_))) return std::optional<NeatTensor>();
      if (stop.load()) return std::optional<NeatTensor>();
    }
  }

  void close() override {
    if (first_ != nullptr) gst_sample_unref(std::exchange(first_, nullptr));
    if (pipeline_ != nullptr) {
      gst_element_set_state(pipeline_, GST_STATE_NULL);
      gst_object_unref(std::exchange(pipeline_, nullptr));
      sink_ = nullptr;
    }
  }

 private:
  Error failure(std::string_view what) {
    std::string e = bus_error(pipeline_, 100 * GST_MSECOND);
    return failed_precondition("gst source \"" + description_ + "\" " + std::string(what) +
                               (e.empty() ? std::string() : ": " + e));
  }

  std::string description_;
  GstSourceOptions options_;
  GstElement* pipeline_ = nullptr;
  GstElement* sink_ = nullptr;
  GstSample* first_ = nullptr;
  Result<FrameSpec> spec_ = FrameSpec{};
  bool playing_ = false;
  bool empty_ = false;
};

class GstAppsrcSink final : public Sink {
  static constexpr guint64 kAppsrcQueue = 4;  ///< appsrc max-buffers

 public:
  GstAppsrcSink(std::string description, GstSinkOptions options)
      : description_(std::move(description)), options_(options) {
    if (description_.rfind("appsrc", 0) != 0) description_ = "appsrc ! " + description_;
  }
  ~GstAppsrcSink() override {
    if (pipeline_ != nullptr) {
      gst_element_set_state(pipeline_, GST_STATE_NULL);
      gst_object_unref(pipeline_);
    }
  }
  std::string_view kind() const noexcept override { return "gst"; }
  std::string describe() const override { return "gst \"" + description_ + "\""; }
  // appsrc's queue, plus a few frames inside the downstream elements (an
  // encoder's lookahead can hold more: those frames allocate once, then stay
  // in the pool).
  int max_frames_held() const override { return static_cast<int>(kAppsrcQueue) + 4; }
  Accepts accepts() const override {
    Accepts a;
    a.dtypes = {DType::U8};
    a.formats = {PixelFormat::GRAY8, PixelFormat::RGB,  PixelFormat::BGR,
                 PixelFormat::RGBA,  PixelFormat::BGRA, PixelFormat::NV12,
                 PixelFormat::NV21,  PixelFormat::I420, PixelFormat::YV12};
    a.layouts = {Layout::HWC, Layout::HW};
    return a;
  }

  Status prepare(const FrameSpec& input) override {
    NEAT_ASSIGN_OR_RETURN(pipeline_, parse(description_, "gst sink"));
    src_ = find_element(pipeline_, [](GstElement* e) { return GST_IS_APP_SRC(e) != 0; });
    if (src_ == nullptr)
      return invalid_argument("gst sink: \"" + description_ + "\" has no appsrc");
    NEAT_ASSIGN_OR_RETURN(GstCaps * caps,
                          gst_caps_for(ImageSpec{input.format, input.width, input.height,
                                                 Layout::None, input.colorimetry},
                                       options_.fps_n, options_.fps_d));
    g_object_set(src_, "caps", caps, "format", GST_FORMAT_TIME, "block", TRUE, "max-buffers",
                 kAppsrcQueue, nullptr);
    gst_caps_unref(caps);
    if (gst_element_set_state(pipeline_, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
      return failed_precondition("gst sink \"" + description_ +
                                 "\" cannot start: " + bus_error(pipeline_, 100 * GST_MSECOND));
    }
    return {};
  }

  Result<SinkOutcome> consume(NeatTensor frame, std::int64_t frame_number) override {
    if (aborted_.load()) return SinkOutcome::Stopped;
    NEAT_ASSIGN_OR_RETURN(GstBuffer * buffer, to_gst_buffer(std::move(frame)));
    if (options_.fps_n > 0) {
      const GstClockTime duration = gst_util_uint64_scale(
          GST_SECOND, static_cast<guint64>(options_.fps_d), static_cast<guint64>(options_.fps_n));
      GST_BUFFER_PTS(buffer) = static_cast<GstClockTime>(frame_number) * duration;
      GST_BUFFER_DURATION(buffer) = duration;
    }
    const GstFlowReturn r = gst_app_src_push_buffer(GST_APP_SRC(src_), buffer);
    if (r == GST_FLOW_FLUSHING && aborted_.load()) return SinkOutcome::Stopped;
    if (r != GST_FLOW_OK) {
      std::string e = bus_error(pipeline_, 100 * GST_MSECOND);
      return failed_precondition("gst sink \"" + description_ + "\": push failed (" +
                                 gst_flow_get_name(r) + ")" + (e.empty() ? "" : ": " + e));
    }
    return SinkOutcome::Consumed;
  }

  Status finish() override {
    gst_app_src_end_of_stream(GST_APP_SRC(src_));
    GstBus* bus = gst_element_get_bus(pipeline_);
    GstMessage* msg = gst_bus_timed_pop_filtered(
        bus, static_cast<GstClockTime>(options_.eos_timeout.count()) * GST_MSECOND,
        static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    gst_object_unref(bus);
    Status st;
    if (msg == nullptr) {
      st = failed_precondition("gst sink \"" + description_ + "\": no end of stream within " +
                               std::to_string(options_.eos_timeout.count()) + " ms");
    } else if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
      GError* err = nullptr;
      gst_message_parse_error(msg, &err, nullptr);
      st = failed_precondition("gst sink \"" + description_ +
                               "\" failed: " + (err != nullptr ? err->message : "error"));
      if (err != nullptr) g_error_free(err);
    }
    if (msg != nullptr) gst_message_unref(msg);
    gst_element_set_state(pipeline_, GST_STATE_NULL);
    return st;
  }

  void abort() override {
    aborted_.store(true);
    if (pipeline_ != nullptr) gst_element_set_state(pipeline_, GST_STATE_NULL);
  }

 private:
  std::string description_;
  GstSinkOptions options_;
  GstElement* pipeline_ = nullptr;
  GstElement* src_ = nullptr;
  std::atomic<bool> aborted_{false};
};

}  // namespace

std::string default_gst_source_description(std::int64_t frames) {
  return "videotestsrc num-buffers=" + std::to_string(frames) +
         " ! video/x-raw,format=NV12,width=1920,height=1080";
}

std::unique_ptr<Source> gst_source(std::string description, GstSourceOptions options) {
  return std::make_unique<GstSource>(std::move(description), options);
}

std::shared_ptr<Sink> gst_appsrc_sink(std::string description, GstSinkOptions options) {
  return std::make_shared<GstAppsrcSink>(std::move(description), options);
}

}  // namespace neat

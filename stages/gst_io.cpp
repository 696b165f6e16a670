#include "neat/stages/gst_io.hpp"

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>
#include <gst/video/gstvideodecoder.h>
#include <gst/video/gstvideoencoder.h>
#include <gst/video/video.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "neat/contract/copy_gate.hpp"
#include "neat/policy/policy.hpp"
#include "neat/stages/internal/gst_caps.hpp"
#include "neat/storage/gstreamer.hpp"
#include "neat/storage/internal/gst_ref.hpp"

namespace neat {
namespace {

using detail::caps_text;
using detail::ElementAccounting;
using detail::for_each_element;
using detail::GstRef;
using detail::kNegotiationLimit;
using detail::NegotiationWatch;
using detail::pad_caps;

// "element: message (debug)": GStreamer's own text of an error message.
std::string error_text(GstMessage* msg) {
  GstRef<GError> err;
  GstRef<gchar> debug;
  gst_message_parse_error(msg, err.out(), debug.out());
  std::string out;
  if (GstRef<gchar> name(gst_object_get_name(GST_MESSAGE_SRC(msg))); name) out = name.get();
  out += ": ";
  out += err ? err->message : "error";
  if (debug) {
    out += " (";
    out += debug.get();
    out += ")";
  }
  return out;
}

// GStreamer's error message on the bus (if any), with the element's name.
std::string bus_error(GstElement* pipeline, GstClockTime wait = 0) {
  GstRef<GstBus> bus(gst_element_get_bus(pipeline));
  GstRef<GstMessage> msg(gst_bus_timed_pop_filtered(bus.get(), wait, GST_MESSAGE_ERROR));
  if (!msg) return {};
  return error_text(msg.get());
}

Result<GstRef<GstElement>> parse(const std::string& description, std::string_view what) {
  NEAT_RETURN_IF_ERROR(ensure_gstreamer());
  GstRef<GError> err;
  GstRef<GstElement> pipeline(gst_parse_launch(description.c_str(), err.out()));
  if (err) {
    return invalid_argument(std::string(what) + ": GStreamer cannot parse \"" + description +
                            "\": " + err->message);
  }
  if (!pipeline) {
    return invalid_argument(std::string(what) + ": GStreamer cannot parse \"" + description + "\"");
  }
  return pipeline;
}

template <class Pred>
GstElement* find_element(GstElement* pipeline, Pred pred) {
  if (!GST_IS_BIN(pipeline)) return pred(pipeline) ? pipeline : nullptr;
  return for_each_element(GST_BIN(pipeline), pred);
}

// Where frames cross between the graph and a GStreamer pipeline.
enum class Endpoint : std::uint8_t { AppSink, AppSrc };

// Whether `description` (gst-launch syntax) has an element of `type`: the
// factory of each element's name, the first word of each "!"-separated part
// outside quotes (caps, "NAME." references and properties are skipped), asked
// for the type it makes. Never by a substring: a file path or a property may
// contain "appsink".
bool description_has(const std::string& description, GType type) {
  std::vector<std::string> parts(1);
  bool quoted = false;
  for (std::size_t i = 0; i < description.size(); ++i) {
    const char c = description[i];
    if (c == '\\' && i + 1 < description.size()) {
      parts.back() += description.substr(i, 2);
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
      parts.back() += c;
    } else if (c == '!' && !quoted) {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  for (const std::string& part : parts) {
    const auto begin = part.find_first_not_of(" \t\r\n(");
    if (begin == std::string::npos) continue;
    const auto end = part.find_first_of(" \t\r\n)", begin);
    const std::string word = part.substr(begin, end == std::string::npos ? end : end - begin);
    if (word.find_first_of("/.=,") != std::string::npos) continue;  // caps, a reference
    GstRef<GstElementFactory> factory(gst_element_factory_find(word.c_str()));
    if (!factory) continue;  // parsing says which element is unknown
    const GType made = gst_element_factory_get_element_type(factory.get());
    if (made == 0) {  // not loaded yet: load the plugin to learn it
      GstRef<GstPluginFeature> loaded(gst_plugin_feature_load(GST_PLUGIN_FEATURE(factory.get())));
      if (!loaded) continue;
      if (g_type_is_a(gst_element_factory_get_element_type(GST_ELEMENT_FACTORY(loaded.get())),
                      type))
        return true;
    } else if (g_type_is_a(made, type)) {
      return true;
    }
  }
  return false;
}

// The pipeline of `description` and its appsink (a source's) or appsrc (a
// sink's), found by type: the one the description has, else one added at its
// end (appsink) or start (appsrc), linked as gst-launch links it.
Result<GstRef<GstElement>> pipeline_with(const std::string& description, Endpoint want,
                                         std::string_view what, GstElement** endpoint) {
  NEAT_RETURN_IF_ERROR(ensure_gstreamer());
  const GType type = want == Endpoint::AppSink ? GST_TYPE_APP_SINK : GST_TYPE_APP_SRC;
  std::string full = description;
  if (!description_has(description, type))
    full = want == Endpoint::AppSink ? description + " ! appsink" : "appsrc ! " + description;
  NEAT_ASSIGN_OR_RETURN(GstRef<GstElement> pipeline, parse(full, what));
  *endpoint = find_element(
      pipeline.get(), [type](GstElement* e) { return g_type_is_a(G_OBJECT_TYPE(e), type) != 0; });
  if (*endpoint == nullptr) {
    return invalid_argument(std::string(what) + ": \"" + description + "\" has no " +
                            (want == Endpoint::AppSink ? "appsink" : "appsrc") +
                            " GStreamer can find (one inside a bin?); end the description with "
                            "the element whose frames the graph takes");
  }
  return pipeline;
}

Result<FrameSpec> spec_from_caps(GstCaps* caps, std::string_view what) {
  GstVideoInfo info;
  if (caps == nullptr || !gst_video_info_from_caps(&info, caps)) {
    GstRef<gchar> text(caps != nullptr ? gst_caps_to_string(caps) : nullptr);
    std::string m = std::string(what) + ": the appsink receives \"" +
                    (text ? text.get() : "no caps") +
                    "\", not raw video; the source must give video frames (a compressed "
                    "stream needs a decoder in the description, e.g. \"! decodebin\": decoders "
                    "hand over NV12 or I420, which the graph's own stages convert)";
    return invalid_argument(std::move(m));
  }
  auto format = pixel_format_from_gst(GST_VIDEO_INFO_FORMAT(&info));
  if (!format.ok()) return format.error().with_context(what);
  FrameSpec s =
      FrameSpec::image(*format, GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info));
  if (is_planar(*format)) s.colorimetry = gst_caps_colorimetry(caps);  // what each frame carries
  if (GST_VIDEO_INFO_FPS_N(&info) > 0 && GST_VIDEO_INFO_FPS_D(&info) > 0) {
    s.fps_n = GST_VIDEO_INFO_FPS_N(&info);
    s.fps_d = GST_VIDEO_INFO_FPS_D(&info);
  }
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
      : description_(std::move(description)), options_(options) {}
  ~GstSource() override { close(); }
  std::string_view kind() const noexcept override { return "gst"; }
  std::string describe() const override { return "gst \"" + description_ + "\""; }

  Result<FrameSpec> prepare() override {
    close();  // prepare() again (after GraphBuilder::plan()) starts afresh
    playing_ = live_ = empty_ = false;
    NEAT_ASSIGN_OR_RETURN(pipeline_,
                          pipeline_with(description_, Endpoint::AppSink, "gst source", &sink_));
    g_object_set(sink_, "sync", FALSE, "max-buffers",
                 static_cast<guint>(std::max(options_.max_buffers, 1)), "drop", FALSE,
                 "emit-signals", FALSE, nullptr);
    const GstStateChangeReturn r = gst_element_set_state(pipeline_.get(), GST_STATE_PAUSED);
    if (r == GST_STATE_CHANGE_FAILURE) return failure("cannot start");
    if (r == GST_STATE_CHANGE_NO_PREROLL) {
      // Live source: caps arrive with the first frame.
      if (gst_element_set_state(pipeline_.get(), GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        return failure("cannot start");
      }
      playing_ = true;
      live_ = true;
      NEAT_RETURN_IF_ERROR(wait_for_first_frame([this](GstClockTime slice) {
        first_.reset(gst_app_sink_try_pull_sample(GST_APP_SINK(sink_), slice));
        return first_.get() != nullptr;
      }));
    } else {
      GstStateChangeReturn state = GST_STATE_CHANGE_ASYNC;
      NEAT_RETURN_IF_ERROR(wait_for_first_frame([&](GstClockTime slice) {
        state = gst_element_get_state(pipeline_.get(), nullptr, nullptr, slice);
        return state != GST_STATE_CHANGE_ASYNC;  // prerolled, or failed
      }));
      if (state == GST_STATE_CHANGE_FAILURE) return failure("did not preroll");
      first_.reset(gst_app_sink_try_pull_preroll(GST_APP_SINK(sink_), 0));
      if (!first_) {
        if (gst_app_sink_is_eos(GST_APP_SINK(sink_))) {
          empty_ = true;  // a stream without frames: valid, ends at once
          return FrameSpec{};
        }
        return failure("prerolled without a frame");
      }
    }
    spec_ = spec_from_caps(gst_sample_get_caps(first_.get()), "gst source");
    if (!playing_) first_.reset();  // the preroll sample comes again as the first frame
    if (spec_.ok()) {
      NEAT_RETURN_IF_ERROR(elements_.plan(pipeline_.get(), sink_, "gst source",
                                          options_.implicit_elements, options_.implicit_fix));
    }
    return spec_;
  }

  bool live() const override { return live_; }

  // A restart prepares afresh (a new pipeline: an RTSP session, a socket), its
  // wait for the first frame cut short when the graph stops.
  Result<FrameSpec> restart(const std::atomic<bool>& stop) override {
    interrupt_ = &stop;
    auto spec = prepare();
    interrupt_ = nullptr;
    return spec;
  }

  std::vector<InnerConversion> inner_conversions() const override {
    return elements_.conversions();
  }
  // GStreamer's appsink queue, and the frame its streaming thread has made and
  // waits to queue. (Elements upstream may keep more: a decoder's reference
  // frames, a queue element's; those are the description's own.)
  int frames_held_inside() const override { return std::max(options_.max_buffers, 1) + 1; }
  std::string frames_held_inside_text() const override {
    return "GStreamer (appsink queue " + std::to_string(std::max(options_.max_buffers, 1)) +
           " + 1 being made)";
  }

  Result<std::optional<NeatTensor>> next(const std::atomic<bool>& stop) override {
    if (empty_) return std::optional<NeatTensor>();
    if (!playing_) {
      if (gst_element_set_state(pipeline_.get(), GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        return failure("cannot play");
      }
      playing_ = true;
    }
    for (;;) {
      GstRef<GstSample> s = first_ ? std::move(first_)
                                   : GstRef<GstSample>(gst_app_sink_try_pull_sample(
                                         GST_APP_SINK(sink_), 100 * GST_MSECOND));
      if (s) {
        const std::int64_t captured = live_ ? capture_time(s.get()) : -1;
        auto t = wrap_gst_sample(s.get());
        if (!t.ok()) return t.error().with_context("gst source");
        if (captured >= 0) {
          FrameMeta meta = t->meta();
          meta.capture_ns = captured;
          t->set_meta(meta);
        }
        NEAT_RETURN_IF_ERROR(elements_.record());
        return std::optional<NeatTensor>(std::move(*t));
      }
      if (std::string e = bus_error(pipeline_.get()); !e.empty()) {
        return failed_precondition("gst source \"" + description_ + "\" failed: " + e);
      }
      if (gst_app_sink_is_eos(GST_APP_SINK(sink_))) return std::optional<NeatTensor>();
      if (stop.load()) return std::optional<NeatTensor>();
    }
  }

  void close() override {
    first_.reset();
    if (pipeline_.get()) {
      gst_element_set_state(pipeline_.get(), GST_STATE_NULL);
      pipeline_.reset();
      sink_ = nullptr;
    }
  }

 private:
  // A live source's frame: when it was captured, on the steady clock. Its
  // timestamp is the capture's running time on the pipeline clock; how long
  // ago that was (clock now - base time - running time) taken from the steady
  // clock's now. -1 when the buffer has no timestamp or there is no clock.
  std::int64_t capture_time(GstSample* sample) const {
    GstBuffer* buffer = gst_sample_get_buffer(sample);
    if (buffer == nullptr || !GST_BUFFER_PTS_IS_VALID(buffer)) return -1;
    const GstSegment* segment = gst_sample_get_segment(sample);
    const guint64 running =
        segment != nullptr && segment->format == GST_FORMAT_TIME
            ? gst_segment_to_running_time(segment, GST_FORMAT_TIME, GST_BUFFER_PTS(buffer))
            : GST_BUFFER_PTS(buffer);
    if (!GST_CLOCK_TIME_IS_VALID(running)) return -1;
    const GstRef<GstClock> clock(gst_element_get_clock(pipeline_.get()));
    if (!clock) return -1;
    const GstClockTime now = gst_clock_get_time(clock.get());
    const GstClockTime base = gst_element_get_base_time(pipeline_.get());
    const auto age = static_cast<std::int64_t>(now) - static_cast<std::int64_t>(base + running);
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
               .count() -
           std::max<std::int64_t>(age, 0);
  }

  // Waits for the first frame in 100 ms slices (`arrived(slice)` waits one):
  // bounded by first_frame_timeout, given up when `cancelled` says so, ended
  // early by an error on the bus.
  template <class Arrived>
  Status wait_for_first_frame(Arrived arrived) {
    constexpr GstClockTime kSlice = 100 * GST_MSECOND;
    const auto deadline = std::chrono::steady_clock::now() + options_.first_frame_timeout;
    for (;;) {
      if (arrived(kSlice)) return {};
      if (std::string e = bus_error(pipeline_.get()); !e.empty()) {
        return failed_precondition("gst source \"" + description_ + "\" failed: " + e);
      }
      if ((options_.cancelled && options_.cancelled()) ||
          (interrupt_ != nullptr && interrupt_->load())) {
        return cancelled_error("gst source \"" + description_ +
                               "\": stopped while waiting for the first frame");
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        const auto ms = options_.first_frame_timeout.count();
        return failure(
            "sent no first frame within " +
            (ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms") +
            " (" + options_.timeout_setting +
            "): is the source live and connected? a camera or network source may "
            "need longer");
      }
    }
  }

  Error failure(std::string_view what) {
    std::string e = bus_error(pipeline_.get(), 100 * GST_MSECOND);
    return failed_precondition("gst source \"" + description_ + "\" " + std::string(what) +
                               (e.empty() ? std::string() : ": " + e));
  }

  std::string description_;
  GstSourceOptions options_;
  GstRef<GstElement> pipeline_;
  GstElement* sink_ = nullptr;  // borrowed: the pipeline holds it
  GstRef<GstSample> first_;
  Result<FrameSpec> spec_ = FrameSpec{};
  bool playing_ = false;
  bool live_ = false;  // frames carry their capture time on the pipeline clock
  bool empty_ = false;
  const std::atomic<bool>* interrupt_ = nullptr;  // set while restart() prepares
  ElementAccounting elements_;
};

class GstAppsrcSink final : public Sink {
  static constexpr guint64 kAppsrcQueue = 4;  ///< appsrc max-buffers

 public:
  GstAppsrcSink(std::string description, GstSinkOptions options)
      : description_(std::move(description)), options_(options) {}
  ~GstAppsrcSink() override {
    if (!pipeline_.get()) return;
    gst_element_set_state(pipeline_.get(), GST_STATE_NULL);  // joins the streaming threads
    const GstRef<GstBus> bus(gst_element_get_bus(pipeline_.get()));
    gst_bus_set_sync_handler(bus.get(), nullptr, nullptr, nullptr);
    const std::lock_guard lock(watch_.mutex);  // a handler call in flight ends first
    watch_.pipeline = nullptr;
  }
  std::string_view kind() const noexcept override { return "gst"; }
  std::string describe() const override { return "gst \"" + description_ + "\""; }
  // appsrc's queue, plus a few frames inside the downstream elements (an
  // encoder's lookahead can hold more: those frames allocate once, then stay
  // in the pool).
  int max_frames_held() const override { return static_cast<int>(kAppsrcQueue) + 4; }
  std::string frames_held_text() const override {
    return "appsrc queue " + std::to_string(kAppsrcQueue) + " + 4 downstream";
  }
  Accepts accepts() const override {
    Accepts a;
    a.dtypes = {DType::U8};
    a.formats = {PixelFormat::GRAY8, PixelFormat::RGB,  PixelFormat::BGR,
                 PixelFormat::RGBA,  PixelFormat::BGRA, PixelFormat::NV12,
                 PixelFormat::NV21,  PixelFormat::I420, PixelFormat::YV12};
    a.layouts = {Layout::HWC, Layout::HW};
    return a;
  }

  // Parses the description and asks the element after the appsrc whether it
  // takes these frames; nothing changes state, so nothing is opened or written.
  Status check(const FrameSpec& input) const override {
    GstElement* src = nullptr;
    NEAT_ASSIGN_OR_RETURN(GstRef<GstElement> pipeline,
                          pipeline_with(description_, Endpoint::AppSrc, "gst sink", &src));
    NEAT_ASSIGN_OR_RETURN(GstRef<GstCaps> caps, appsrc_caps(input));
    return check_downstream_accepts(src, caps.get());
  }

  Status prepare(const FrameSpec& input) override {
    NEAT_ASSIGN_OR_RETURN(pipeline_,
                          pipeline_with(description_, Endpoint::AppSrc, "gst sink", &src_));
    NEAT_ASSIGN_OR_RETURN(GstRef<GstCaps> caps, appsrc_caps(input));
    NEAT_RETURN_IF_ERROR(check_downstream_accepts(src_, caps.get()));
    g_object_set(src_, "caps", caps.get(), "format", GST_FORMAT_TIME, "block", TRUE, "max-buffers",
                 kAppsrcQueue, nullptr);
    // Errors of the downstream elements are seen as they happen (on their
    // streaming threads), not when the next frame is pushed: a failed pipeline
    // stops taking buffers, and a push into its full queue would wait forever.
    const GstRef<GstBus> bus(gst_element_get_bus(pipeline_.get()));
    {
      const std::lock_guard lock(watch_.mutex);
      watch_.pipeline = pipeline_.get();
    }
    watch_.self.store(&watch_, std::memory_order_release);
    gst_bus_set_sync_handler(bus.get(), &GstAppsrcSink::on_bus_message, &watch_.self, nullptr);
    NegotiationWatch negotiation(pipeline_.get());  // before PLAYING: no CAPS event is missed
    if (gst_element_set_state(pipeline_.get(), GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
      return failed_precondition("gst sink \"" + description_ +
                                 "\" cannot start: " + first_error(100 * GST_MSECOND));
    }
    // appsrc negotiates its caps on PLAYING, before the first buffer: wait
    // until every transform has its output caps, then see which convert.
    const bool negotiated = negotiation.wait(kNegotiationLimit, [this] { return failed(); });
    if (failed())
      return failed_precondition("gst sink \"" + description_ + "\" failed: " + first_error(0));
    if (!negotiated) {
      GstElement* stuck = negotiation.waiting();
      GstRef<gchar> name(stuck != nullptr ? gst_object_get_name(GST_OBJECT(stuck)) : nullptr);
      GstVideoInfo info;
      bool raw = false;
      const GstRef<GstCaps> in = stuck != nullptr ? pad_caps(stuck, "sink") : GstRef<GstCaps>();
      return failed_precondition(
          "gst sink \"" + description_ + "\": caps negotiation did not complete within " +
          std::to_string(kNegotiationLimit.count()) + " s: " + (name ? name.get() : "an element") +
          " did not settle its caps (its input: " +
          (in ? caps_text(in.get(), &info, &raw) : "none") +
          "); check that each element of the description takes what the one before gives");
    }
    return elements_.plan(pipeline_.get(), src_, "gst sink", {}, {});
  }

  std::vector<InnerConversion> inner_conversions() const override {
    return elements_.conversions();
  }

  // Room in the appsrc's queue before the graph hands over a frame, so that
  // consume()'s push never blocks: a stop() then always reaches finish() (EOS,
  // bounded by eos_timeout), even when the downstream pipeline has stalled.
  // Polled in 2 ms steps only while the queue is full (a slower downstream).
  bool wait_for_room(std::chrono::nanoseconds timeout) override {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (failed() || aborted_.load()) return true;  // consume() says why
      if (gst_app_src_get_current_level_buffers(GST_APP_SRC(src_)) < kAppsrcQueue) return true;
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  Status health() override {
    if (!failed()) return {};
    return downstream_failed().error();
  }

  Result<SinkOutcome> consume(NeatTensor frame, std::int64_t frame_number) override {
    if (failed()) return downstream_failed();
    if (aborted_.load()) return SinkOutcome::Stopped;
    const FrameMeta meta = frame.meta();
    NEAT_ASSIGN_OR_RETURN(GstBuffer * exported, export_gst_buffer(std::move(frame)));
    GstRef<GstBuffer> buffer(exported);
    if (meta.pts_ns >= 0) {  // the frame's own timestamps (from its source)
      GST_BUFFER_PTS(buffer.get()) = static_cast<GstClockTime>(meta.pts_ns);
      if (meta.duration_ns >= 0) {
        GST_BUFFER_DURATION(buffer.get()) = static_cast<GstClockTime>(meta.duration_ns);
      }
    } else if (options_.fps_n > 0) {
      const GstClockTime duration = gst_util_uint64_scale(
          GST_SECOND, static_cast<guint64>(options_.fps_d), static_cast<guint64>(options_.fps_n));
      GST_BUFFER_PTS(buffer.get()) = static_cast<GstClockTime>(frame_number) * duration;
      GST_BUFFER_DURATION(buffer.get()) = duration;
    }
    NEAT_RETURN_IF_ERROR(elements_.record());
    // appsrc takes the reference.
    const GstFlowReturn r = gst_app_src_push_buffer(GST_APP_SRC(src_), buffer.release());
    if (failed()) return downstream_failed();
    if (r == GST_FLOW_FLUSHING && aborted_.load()) return SinkOutcome::Stopped;
    if (r != GST_FLOW_OK) {
      std::string e = first_error(100 * GST_MSECOND);
      return failed_precondition("gst sink \"" + description_ + "\": push failed (" +
                                 gst_flow_get_name(r) + ")" + (e.empty() ? "" : ": " + e));
    }
    return SinkOutcome::Consumed;
  }

  Status finish() override {
    Status st;
    if (failed()) {
      st = downstream_failed().error();
    } else {
      gst_app_src_end_of_stream(GST_APP_SRC(src_));
      const GstRef<GstBus> bus(gst_element_get_bus(pipeline_.get()));
      const GstRef<GstMessage> msg(gst_bus_timed_pop_filtered(
          bus.get(), static_cast<GstClockTime>(options_.eos_timeout.count()) * GST_MSECOND,
          static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR)));
      if (!msg) {
        st = failed_precondition("gst sink \"" + description_ + "\": no end of stream within " +
                                 std::to_string(options_.eos_timeout.count()) + " ms");
      } else if (GST_MESSAGE_TYPE(msg.get()) == GST_MESSAGE_ERROR) {
        st = failed_precondition("gst sink \"" + description_ +
                                 "\" failed: " + error_text(msg.get()));
      }
    }
    gst_element_set_state(pipeline_.get(), GST_STATE_NULL);
    return st;
  }

  void abort() override {
    aborted_.store(true);
    if (pipeline_.get()) gst_element_set_state(pipeline_.get(), GST_STATE_NULL);
  }

 private:
  // The caps the appsrc announces for `input`.
  Result<GstRef<GstCaps>> appsrc_caps(const FrameSpec& input) const {
    NEAT_ASSIGN_OR_RETURN(GstCaps * caps,
                          gst_caps_for(ImageSpec{input.format, input.width, input.height,
                                                 Layout::None, input.colorimetry},
                                       input.fps_n > 0 ? input.fps_n : options_.fps_n,
                                       input.fps_n > 0 ? input.fps_d : options_.fps_d));
    return GstRef<GstCaps>(caps);
  }

  // The element after the appsrc must take these caps (an accept-caps query:
  // works before the pipeline starts), else the first frame would fail with
  // "not-negotiated" deep in a streaming thread.
  Status check_downstream_accepts(GstElement* src, GstCaps* caps) const {
    const GstRef<GstPad> pad(gst_element_get_static_pad(src, "src"));
    if (!pad || !gst_pad_is_linked(pad.get())) {
      return invalid_argument("gst sink: \"" + description_ +
                              "\": the appsrc is not linked to anything");
    }
    if (gst_pad_peer_query_accept_caps(pad.get(), caps)) return {};
    const GstRef<GstCaps> takes(gst_pad_peer_query_caps(pad.get(), nullptr));
    const GstRef<gchar> offered(gst_caps_to_string(caps));
    GstRef<gchar> wanted(takes ? gst_caps_to_string(takes.get()) : nullptr);
    std::string w = wanted ? wanted.get() : "nothing";
    if (w.size() > 240) w = w.substr(0, 240) + "...";
    return invalid_argument("gst sink: \"" + description_ + "\" does not take the frames: " +
                            "the appsrc gives " + offered.get() + ", the next element takes " + w +
                            "; convert in the graph (e.g. `convert format=RGB`) or start the "
                            "description with videoconvert");
  }

  // What the bus handler shares with the sink. The handler touches it only
  // under `mutex`, and the destructor takes `mutex` once after removing the
  // handler, so a handler call always ends before the sink goes.
  struct DownstreamWatch {
    // What the bus handler is given: the watch, published with release once
    // it is in place (GStreamer's threads are started under GLib's locks,
    // which ThreadSanitizer cannot see).
    std::atomic<DownstreamWatch*> self{nullptr};
    std::mutex mutex;
    GstElement* pipeline = nullptr;  // borrowed; guarded by mutex
    std::string error;               // the first error's text; guarded by mutex
    std::atomic<bool> failed{false};
  };

  // On the thread that posts the message (a streaming thread): keep the first
  // error and make the pipeline let go of a push waiting for queue space. The
  // state change runs on another thread (GStreamer's rule for streaming threads).
  static GstBusSyncReply on_bus_message(GstBus*, GstMessage* msg, gpointer data) {
    if (GST_MESSAGE_TYPE(msg) != GST_MESSAGE_ERROR) return GST_BUS_PASS;
    DownstreamWatch& w =
        *static_cast<std::atomic<DownstreamWatch*>*>(data)->load(std::memory_order_acquire);
    const std::lock_guard lock(w.mutex);
    if (w.error.empty()) w.error = error_text(msg);
    if (!w.failed.exchange(true, std::memory_order_acq_rel) && w.pipeline != nullptr) {
      gst_element_call_async(
          w.pipeline,
          [](GstElement* pipeline, gpointer) { gst_element_set_state(pipeline, GST_STATE_NULL); },
          nullptr, nullptr);
    }
    return GST_BUS_PASS;
  }

  bool failed() const { return watch_.failed.load(std::memory_order_acquire); }

  // The first error of the downstream pipeline (from the handler, else the bus).
  std::string first_error(GstClockTime wait) {
    {
      const std::lock_guard lock(watch_.mutex);
      if (!watch_.error.empty()) return watch_.error;
    }
    return bus_error(pipeline_.get(), wait);
  }

  Result<SinkOutcome> downstream_failed() {
    return failed_precondition("gst sink \"" + description_ + "\" failed: " + first_error(0));
  }

  std::string description_;
  GstSinkOptions options_;
  GstRef<GstElement> pipeline_;
  GstElement* src_ = nullptr;  // borrowed: the pipeline holds it
  std::atomic<bool> aborted_{false};
  DownstreamWatch watch_;
  ElementAccounting elements_;
};

}  // namespace

std::string default_gst_source_description(std::int64_t frames, const std::string& pattern) {
  return "videotestsrc num-buffers=" + std::to_string(frames) +
         (pattern.empty() ? "" : " pattern=" + pattern) +
         " ! video/x-raw,format=NV12,width=1920,height=1080";
}

Result<std::vector<std::string>> videotestsrc_patterns() {
  NEAT_RETURN_IF_ERROR(ensure_gstreamer());
  GstRef<GstElementFactory> factory(gst_element_factory_find("videotestsrc"));
  if (!factory) {
    return unavailable("GStreamer has no videotestsrc element (Debian: gstreamer1.0-plugins-base)");
  }
  GstRef<GstElement> element(gst_element_factory_create(factory.get(), nullptr));
  if (!element) return internal_error("videotestsrc: the factory made no element");
  gst_object_ref_sink(element.get());  // floating: take it, so GstRef's unref ends it
  GParamSpec* spec = g_object_class_find_property(G_OBJECT_GET_CLASS(element.get()), "pattern");
  if (spec == nullptr || !G_IS_PARAM_SPEC_ENUM(spec)) {
    return internal_error("videotestsrc has no enum property 'pattern'");
  }
  const GEnumClass* e = G_PARAM_SPEC_ENUM(spec)->enum_class;
  std::vector<std::string> names;
  for (guint i = 0; i < e->n_values; ++i)
    names.emplace_back(e->values[i].value_nick);
  return names;
}

std::unique_ptr<Source> gst_source(std::string description, GstSourceOptions options) {
  return std::make_unique<GstSource>(std::move(description), options);
}

std::shared_ptr<Sink> gst_appsrc_sink(std::string description, GstSinkOptions options) {
  return std::make_shared<GstAppsrcSink>(std::move(description), options);
}

}  // namespace neat

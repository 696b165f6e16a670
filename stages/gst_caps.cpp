#include "neat/stages/internal/gst_caps.hpp"

#include <gst/base/gstbasetransform.h>
#include <gst/video/gstvideodecoder.h>
#include <gst/video/gstvideoencoder.h>

#include <algorithm>

#include "neat/policy/policy.hpp"
#include "neat/storage/gstreamer.hpp"

namespace neat::detail {

namespace {

TensorDescription spec_of(const GstVideoInfo& info) {
  TensorDescription d;
  auto f = pixel_format_from_gst(GST_VIDEO_INFO_FORMAT(&info));
  d.format = f.ok() ? *f : PixelFormat::None;
  d.storage = StorageKind::GStreamer;
  d.rank = 2;
  d.shape = {GST_VIDEO_INFO_HEIGHT(&info), GST_VIDEO_INFO_WIDTH(&info), 0, 0};
  return d;
}

}  // namespace

// "NV12 1920x1080" for raw video caps, the media type otherwise ("image/jpeg").
std::string caps_text(GstCaps* caps, GstVideoInfo* info, bool* raw) {
  *raw = false;
  if (caps == nullptr) return "?";
  gst_video_info_init(info);
  if (gst_video_info_from_caps(info, caps) &&
      GST_VIDEO_INFO_FORMAT(info) != GST_VIDEO_FORMAT_ENCODED) {
    *raw = true;
    return std::string(gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(info))) + " " +
           std::to_string(GST_VIDEO_INFO_WIDTH(info)) + "x" +
           std::to_string(GST_VIDEO_INFO_HEIGHT(info));
  }
  const GstStructure* s = gst_caps_get_size(caps) > 0 ? gst_caps_get_structure(caps, 0) : nullptr;
  return s != nullptr ? gst_structure_get_name(s) : "?";
}

GstRef<GstCaps> pad_caps(GstElement* e, const char* pad_name) {
  GstRef<GstPad> pad(gst_element_get_static_pad(e, pad_name));
  if (!pad) return {};
  return GstRef<GstCaps>(gst_pad_get_current_caps(pad.get()));
}

// What a pad without caps yet (an encoder's output before its first frame)
// can carry, as far as it is known: "video/x-vp8 (not negotiated yet)".
std::string possible_caps_text(GstElement* e, const char* pad_name) {
  GstRef<GstPad> pad(gst_element_get_static_pad(e, pad_name));
  if (!pad) return "(no " + std::string(pad_name) + " pad)";
  const GstRef<GstCaps> caps(gst_pad_query_caps(pad.get(), nullptr));
  if (!caps || gst_caps_is_empty(caps.get()) || gst_caps_is_any(caps.get()))
    return "(not negotiated yet)";
  std::string names;
  for (guint i = 0; i < gst_caps_get_size(caps.get()) && i < 3; ++i) {
    const std::string n = gst_structure_get_name(gst_caps_get_structure(caps.get(), i));
    if (names.find(n) == std::string::npos) names += (names.empty() ? "" : " or ") + n;
  }
  return names + " (not negotiated yet)";
}

// The elements of a negotiated pipeline that transform frames.
std::vector<InnerConversion> converting_elements(GstElement* pipeline, GstElement* skip,
                                                 const std::vector<std::string>& implicit) {
  std::vector<InnerConversion> out;
  if (!GST_IS_BIN(pipeline)) return out;
  auto visit = [&](GstElement* e) {
    const bool decoder = GST_IS_VIDEO_DECODER(e) != 0, encoder = GST_IS_VIDEO_ENCODER(e) != 0;
    const bool transform =
        GST_IS_BASE_TRANSFORM(e) && !gst_base_transform_is_passthrough(GST_BASE_TRANSFORM(e));
    const GstRef<GstCaps> in = pad_caps(e, "sink");
    const GstRef<GstCaps> out_caps = pad_caps(e, "src");
    // A transform whose output caps equal its input (capsfilter, identity,
    // videorate keeping the rate) hands frames through.
    const bool same_caps = in && out_caps && gst_caps_is_equal(in.get(), out_caps.get()) != 0;
    if (e != skip && (decoder || encoder || (transform && !same_caps))) {
      InnerConversion c;
      // Under the object's lock: decodebin names the elements it plugs on its
      // own streaming thread.
      if (GstRef<gchar> name(gst_object_get_name(GST_OBJECT(e))); name) c.element = name.get();
      c.explicit_call = std::find(implicit.begin(), implicit.end(), c.element) == implicit.end();
      GstVideoInfo vi, vo;
      bool raw_in = false, raw_out = false;
      const std::string a = in ? caps_text(in.get(), &vi, &raw_in) : possible_caps_text(e, "sink"),
                        b = out_caps ? caps_text(out_caps.get(), &vo, &raw_out)
                                     : possible_caps_text(e, "src");
      if (raw_in) c.bytes_read = static_cast<std::int64_t>(GST_VIDEO_INFO_SIZE(&vi));
      if (raw_out) c.bytes_written = static_cast<std::int64_t>(GST_VIDEO_INFO_SIZE(&vo));
      c.what = (decoder ? "decode " : encoder ? "encode " : "") + a + " -> " + b;
      if (decoder) {
        c.reason = ConversionReason::Decode;
      } else if (encoder) {
        c.reason = ConversionReason::Encode;
      } else if (raw_in && raw_out && GST_VIDEO_INFO_FORMAT(&vi) == GST_VIDEO_INFO_FORMAT(&vo)) {
        const bool same_size = GST_VIDEO_INFO_WIDTH(&vi) == GST_VIDEO_INFO_WIDTH(&vo) &&
                               GST_VIDEO_INFO_HEIGHT(&vi) == GST_VIDEO_INFO_HEIGHT(&vo);
        c.reason = same_size ? (GST_VIDEO_INFO_FPS_N(&vi) * GST_VIDEO_INFO_FPS_D(&vo) !=
                                        GST_VIDEO_INFO_FPS_N(&vo) * GST_VIDEO_INFO_FPS_D(&vi)
                                    ? ConversionReason::FrameRate
                                    : ConversionReason::PixelFormat)
                             : ConversionReason::Resize;
      }
      if (raw_in) c.input = spec_of(vi);
      if (raw_out) c.output = spec_of(vo);
      out.push_back(std::move(c));
    }
    return false;  // visit every element
  };
  for_each_element(GST_BIN(pipeline), visit, [&] { out.clear(); });
  return out;
}

Status ElementAccounting::plan(GstElement* pipeline, GstElement* skip, std::string_view node,
                               const std::vector<std::string>& implicit, const std::string& fix) {
  conversions_ = converting_elements(pipeline, skip, implicit);
  fix_ = fix;
  details_.clear();
  requests_.clear();
  details_.reserve(conversions_.size());
  requests_.reserve(conversions_.size());
  const ConversionPolicy policy = effective_policy();
  for (const InnerConversion& c : conversions_) {
    details_.push_back("GStreamer element " + c.element + ": " + c.what);
    CopyRequest r;
    r.kind = c.kind;
    r.reason = c.reason;
    r.explicit_call = c.explicit_call;
    r.bytes = c.bytes_written;
    r.bytes_read = c.bytes_read;
    r.operation = node;
    r.detail = details_.back();
    r.fix = fix_;
    r.policy = policy;
    r.source = c.input;
    r.destination = c.output;
    r.where = std::source_location::current();
    requests_.push_back(r);
    if (!c.explicit_call) {
      auto admitted = copy_gate().admit(requests_.back());
      if (!admitted.ok()) {
        return admitted.error().with_context(std::string(node) + ": " + c.element + " converts " +
                                             c.what + " on every frame");
      }
    }
  }
  return {};
}
Status ElementAccounting::record() const {
  for (const CopyRequest& r : requests_) {
    NEAT_ASSIGN_OR_RETURN(ConversionPolicy p, copy_gate().admit(r));
    copy_gate().record(r, p, CopyOutcome{r.bytes_read, r.bytes, 0});
  }
  return {};
}

}  // namespace neat::detail

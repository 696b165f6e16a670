// Fuzz target: GStreamer caps and video-info import. Caps from the input, a buffer of a size from
// the input, sometimes a GstVideoMeta with offsets and strides from the input: wrap_gst_buffer
// accepts only layouts inside the buffer's memory, and every plane of what it accepts can be read.
#include <gst/gst.h>
#include <gst/video/video.h>

#include <cstdint>

#include "fuzz_input.hpp"
#include "neat/contract/mapping.hpp"
#include "neat/storage/gstreamer.hpp"

namespace {

// Caps are built field by field (not parsed from text: GStreamer 1.22's own
// caps parser leaks on malformed lists such as "rate=<", which would drown
// NeatTensor's findings): a media type, a format name (supported, unsupported
// or garbage), width, height, framerate.
GstCaps* make_caps(neat::fuzz::Input& in) {
  static const char* kMedia[] = {"video/x-raw", "audio/x-raw", "image/jpeg", "video/x-raw"};
  static const char* kFormats[] = {"NV12", "NV21",      "I420",      "YV12",    "GRAY8", "RGB",
                                   "BGR",  "RGBA",      "BGRA",      "YUY2",    "RGBx",  "NV16",
                                   "v210", "I420_10LE", "GRAY16_LE", "ENCODED", "",      "xyz"};
  const char* media = kMedia[in.u8() % 4];
  const char* format = kFormats[in.u8() % (sizeof kFormats / sizeof *kFormats)];
  const int width = static_cast<int>(in.i64_small()) * (in.boolean() ? 1 : 37);
  const int height = static_cast<int>(in.i64_small()) * (in.boolean() ? 1 : 29);
  if (in.boolean()) return gst_caps_new_empty_simple(media);
  return gst_caps_new_simple(media, "format", G_TYPE_STRING, format, "width", G_TYPE_INT, width,
                             "height", G_TYPE_INT, height, "framerate", GST_TYPE_FRACTION,
                             static_cast<int>(in.u8()), 1, nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool started = neat::ensure_gstreamer().ok();
  if (!started) return 0;
  neat::fuzz::Input in(data, size);
  const std::size_t bytes = in.u16() % 16384;
  const bool meta = in.boolean();
  gsize offsets[GST_VIDEO_MAX_PLANES] = {};
  gint strides[GST_VIDEO_MAX_PLANES] = {};
  for (int i = 0; i < 3; ++i)
    offsets[i] = in.u16();
  for (int i = 0; i < 3; ++i)
    strides[i] = static_cast<gint>(in.i64_small()) * 4;
  const int w = in.u8(), h = in.u8();
  GstCaps* caps = in.boolean() ? make_caps(in) : nullptr;
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, bytes, nullptr);
  if (meta) {
    GstVideoInfo info;
    if (caps != nullptr && gst_video_info_from_caps(&info, caps) &&
        GST_VIDEO_INFO_FORMAT(&info) != GST_VIDEO_FORMAT_UNKNOWN &&
        GST_VIDEO_INFO_N_PLANES(&info) <= 3) {
      gst_buffer_add_video_meta_full(
          buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&info), static_cast<guint>(w),
          static_cast<guint>(h), GST_VIDEO_INFO_N_PLANES(&info), offsets, strides);
    }
  }
  {
    auto t = neat::wrap_gst_buffer(buffer, caps, neat::GstTransfer::Full);
    if (t.ok()) {
      auto m = t->map();
      if (m.ok() && t->is_composite()) {
        for (int i = 0; i < t->plane_count(); ++i) {
          const auto& p = t->plane_layout(i);
          const std::byte* base = *m->plane_data(p.role);
          volatile std::byte last = base[(p.rows - 1) * p.row_stride + p.cols * p.samples - 1];
          (void)last;
        }
      } else if (m.ok()) {
        auto packed = t->contiguous();
        (void)packed;
      }
    }
  }
  if (caps != nullptr) gst_caps_unref(caps);
  return 0;
}

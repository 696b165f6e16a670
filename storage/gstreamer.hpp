// GStreamer storage: GstBuffer / GstSample wrapped as NeatTensor without a
// copy, and NeatTensor handed to GStreamer (appsrc) as a GstBuffer without a
// copy.
//
// In: the plane layout comes from the buffer's GstVideoMeta when it has one,
// otherwise from the GstVideoInfo of the caps (never inferred from the
// width); planes carry their roles (NV12 = [Y, UV], I420 = [Y, U, V]). The
// tensor is read-only unless the buffer was writable and its reference handed
// over (GstTransfer::Full); buffers pulled from an appsink never are. Mapping
// is deferred: each GstMemory is mapped on the first map() of the tensor and
// unmapped when its last mapping goes.
// Out: each storage becomes a GstMemory wrapping the mapped bytes, whose
// destroy notify releases the mapping (and so the storage); a GstVideoMeta
// carries the tensor's strides and offsets.
//
// The header names GStreamer's types without including GStreamer: include
// <gst/gst.h> and <gst/video/video.h> yourself to call GStreamer.
// Ownership: a wrapped tensor (and every view of it) holds a reference to the
// buffer; the GstBuffer from export_gst_buffer() holds the tensor's storage.
// Threading: thread-safe, as GstBuffer and NeatTensor are.
#pragma once

#include <cstdint>

#include "neat/contract/neat_tensor.hpp"

extern "C" {
typedef struct _GstBuffer GstBuffer;
typedef struct _GstSample GstSample;
typedef struct _GstCaps GstCaps;
typedef struct _GstVideoInfo GstVideoInfo;
}

namespace neat {

/// Initialises GStreamer once (gst_init_check); FailedPrecondition with
/// GStreamer's message when it cannot start. Called by every function here.
Status ensure_gstreamer();

/// Who owns the reference passed in.
enum class GstTransfer : std::uint8_t {
  None,  ///< borrowed: the tensor takes its own reference (and is read-only)
  Full,  ///< handed over: the tensor owns the caller's reference; writable when the buffer is
};

/// A frame over a buffer whose video layout `info` describes (GstVideoMeta,
/// when the buffer has one, overrides the strides and offsets). YUV frames
/// carry the colorimetry of `info` (matrix BT.601 / BT.709 / BT.2020 and range;
/// other matrices are Unknown). Formats:
/// GRAY8, RGB, BGR, RGBA, BGRA, NV12, NV21, I420, YV12; others are
/// Unimplemented, naming the fix (videoconvert to one of them). A plane that
/// spans two GstMemory blocks, or lies outside the buffer, is refused.
Result<NeatTensor> wrap_gst_buffer(GstBuffer* buffer, const GstVideoInfo& info,
                                   GstTransfer transfer = GstTransfer::None);
/// As above with the layout from video/x-raw caps.
Result<NeatTensor> wrap_gst_buffer(GstBuffer* buffer, const GstCaps* caps,
                                   GstTransfer transfer = GstTransfer::None);
/// The sample's buffer with the layout of its caps (the sample is borrowed;
/// the tensor references the buffer, not the sample). Always read-only.
Result<NeatTensor> wrap_gst_sample(GstSample* sample);

/// A new GstBuffer (transfer full) over the tensor's bytes, with a
/// GstVideoMeta for images. Interleaved images need packed pixels in rows;
/// dense tensors must be contiguous; otherwise FailedPrecondition naming the
/// fix (contiguous()). The memory is GST_MEMORY_FLAG_READONLY unless the
/// tensor was moved in and could be donated, so GStreamer never writes bytes a
/// NeatTensor still reads.
Result<GstBuffer*> export_gst_buffer(NeatTensor tensor);

/// video/x-raw caps (transfer full) for an image tensor's format and size,
/// with framerate fps_n/fps_d; YUV formats with a known colorimetry state it
/// ("colorimetry=bt709", range included).
Result<GstCaps*> gst_caps_for(const ImageSpec& image, int fps_n = 0, int fps_d = 1);

/// The colorimetry YUV frames wrapped with these caps carry (GStreamer's
/// defaults filled in when the caps name none; Unknown for non-video caps).
Colorimetry gst_caps_colorimetry(const GstCaps* caps);

/// The pixel format of a GstVideoFormat value (Unimplemented for others).
Result<PixelFormat> pixel_format_from_gst(int gst_video_format);
/// The GstVideoFormat value of a pixel format.
Result<int> gst_video_format(PixelFormat format);

/// Process-wide counts for leak and balance checks.
struct GstStorageStats {
  std::int64_t live_storages = 0;  ///< wrapped GstMemory blocks alive
  std::int64_t live_maps = 0;      ///< GstMemory blocks currently mapped
  std::uint64_t maps = 0;          ///< gst_memory_map calls
  std::uint64_t unmaps = 0;        ///< gst_memory_unmap calls
  std::int64_t live_exports = 0;   ///< GstMemory wrapping a tensor, not yet released
};
GstStorageStats gst_storage_stats() noexcept;

}  // namespace neat

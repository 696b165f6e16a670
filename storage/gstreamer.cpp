#include "neat/storage/gstreamer.hpp"

#include <gst/allocators/allocators.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <atomic>
#include <mutex>
#include <new>
#include <string>

#include "internal/block_cache.hpp"
#include "internal/gst_ref.hpp"
#include "neat/contract/mapping.hpp"

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
// Buffers cross threads through GStreamer's queues, whose GLib locks TSan
// cannot see (GLib is not instrumented): tell it about the hand-over.
#define NEAT_TSAN_RELEASE(p) __tsan_release(p)
#define NEAT_TSAN_ACQUIRE(p) __tsan_acquire(p)
#else
#define NEAT_TSAN_RELEASE(p) ((void)(p))
#define NEAT_TSAN_ACQUIRE(p) ((void)(p))
#endif

namespace neat {
namespace {

using detail::GstRef;

std::atomic<std::int64_t> g_live_storages{0};
std::atomic<std::int64_t> g_live_maps{0};
std::atomic<std::uint64_t> g_maps{0};
std::atomic<std::uint64_t> g_unmaps{0};
std::atomic<std::int64_t> g_live_exports{0};

struct FormatEntry {
  PixelFormat format;
  GstVideoFormat gst;
};
constexpr FormatEntry kFormats[] = {
    {PixelFormat::GRAY8, GST_VIDEO_FORMAT_GRAY8}, {PixelFormat::RGB, GST_VIDEO_FORMAT_RGB},
    {PixelFormat::BGR, GST_VIDEO_FORMAT_BGR},     {PixelFormat::RGBA, GST_VIDEO_FORMAT_RGBA},
    {PixelFormat::BGRA, GST_VIDEO_FORMAT_BGRA},   {PixelFormat::NV12, GST_VIDEO_FORMAT_NV12},
    {PixelFormat::NV21, GST_VIDEO_FORMAT_NV21},   {PixelFormat::I420, GST_VIDEO_FORMAT_I420},
    {PixelFormat::YV12, GST_VIDEO_FORMAT_YV12},
};

std::string gst_format_name(GstVideoFormat f) {
  if (f == GST_VIDEO_FORMAT_UNKNOWN) return "UNKNOWN";
  const char* n = gst_video_format_to_string(f);
  return n != nullptr ? n : "UNKNOWN";
}

/// One GstMemory of a buffer. The storage holds a reference to the buffer
/// (which keeps the memory), maps the memory on the first map() and unmaps it
/// when the last mapping goes.
class GstMemoryStorage final : public Storage {
 public:
  GstMemoryStorage(GstRef<GstBuffer> buffer, GstMemory* memory, std::int64_t size, bool read_only,
                   unsigned index) noexcept
      : Storage(StorageKind::GStreamer, kCpu, size, read_only, nullptr),
        buffer_(std::move(buffer)),
        memory_(memory),
        index_(index),
        fd_(gst_is_fd_memory(memory) ? gst_fd_memory_get_fd(memory) : -1) {
    g_live_storages.fetch_add(1, std::memory_order_relaxed);
  }
  ~GstMemoryStorage() override {
    if (map_count_ != 0) {  // Mapping objects always unmap; this is a safety net
      gst_memory_unmap(memory_, &info_);
      g_live_maps.fetch_sub(1, std::memory_order_relaxed);
    }
    g_live_storages.fetch_sub(1, std::memory_order_relaxed);
  }
  /// DMA-BUF and fd memories (decoders, v4l2src, GstShmAllocator) expose
  /// their fd, so export_fd() and export_dmabuf_image() work on them.
  int native_fd() const noexcept override { return fd_; }
  std::string describe() const override {
    std::string out = "gstreamer ";
    out += std::to_string(size_bytes());
    out += " B (memory ";
    out += std::to_string(index_);
    out += " of GstBuffer";
    if (GST_BUFFER_PTS_IS_VALID(buffer_.get())) {
      out += " pts ";
      out += std::to_string(GST_BUFFER_PTS(buffer_.get()));
      out += " ns";
    }
    if (memory_->allocator != nullptr && memory_->allocator->mem_type != nullptr) {
      out += ", ";
      out += memory_->allocator->mem_type;
    }
    if (read_only()) out += ", read-only";
    out += ')';
    return out;
  }

 protected:
  Result<std::byte*> map_slow(MapMode mode) override {
    if (has_write(mode) && read_only()) {  // the tensor layer checks first; kept for safety
      return failed_precondition(describe() + " is read-only");
    }
    std::lock_guard lock(mutex_);
    if (map_count_ == 0) {
      const auto flags = read_only() ? GST_MAP_READ : GST_MAP_READWRITE;
      if (!gst_memory_map(memory_, &info_, static_cast<GstMapFlags>(flags))) {
        return failed_precondition("map of " + describe() + ": gst_memory_map failed (" +
                                   (read_only() ? "read" : "read/write") + ")");
      }
      g_maps.fetch_add(1, std::memory_order_relaxed);
      g_live_maps.fetch_add(1, std::memory_order_relaxed);
    }
    ++map_count_;
    return reinterpret_cast<std::byte*>(info_.data);
  }
  void unmap_slow(MapMode) noexcept override {
    std::lock_guard lock(mutex_);
    if (map_count_ == 0) return;
    if (--map_count_ == 0) {
      gst_memory_unmap(memory_, &info_);
      g_unmaps.fetch_add(1, std::memory_order_relaxed);
      g_live_maps.fetch_sub(1, std::memory_order_relaxed);
    }
  }

 private:
  GstRef<GstBuffer> buffer_;  // declared first: memory_ lives while it does
  GstMemory* memory_;         // owned by buffer_
  unsigned index_;
  int fd_;
  std::mutex mutex_;
  GstMapInfo info_{};
  std::int64_t map_count_ = 0;
};

// Layout of one plane as GStreamer states it (offset from the buffer start).
// The parts of GStreamer's colorimetry the contract carries. Matrices it does
// not implement (FCC, SMPTE 240M, RGB) are Unknown.
Colorimetry colorimetry_of(const GstVideoColorimetry& c) noexcept {
  Colorimetry out;
  switch (c.matrix) {
    case GST_VIDEO_COLOR_MATRIX_BT601:
      out.matrix = YuvMatrix::BT601;
      break;
    case GST_VIDEO_COLOR_MATRIX_BT709:
      out.matrix = YuvMatrix::BT709;
      break;
    case GST_VIDEO_COLOR_MATRIX_BT2020:
      out.matrix = YuvMatrix::BT2020;
      break;
    default:
      break;
  }
  if (c.range == GST_VIDEO_COLOR_RANGE_0_255) out.range = ColorRange::Full;
  if (c.range == GST_VIDEO_COLOR_RANGE_16_235) out.range = ColorRange::Limited;
  return out;
}

// The colorimetry of video/x-raw caps (as gst_video_info_from_caps() reads it,
// defaults included). A source's samples share one caps object, so the last
// answer is kept per thread with a reference on its caps (the pointer cannot
// be reused for other caps while the reference is held): the wrap parses caps
// once per caps change, not per frame.
Colorimetry caps_colorimetry(GstCaps* caps) {
  struct Cache {
    GstRef<GstCaps> caps;
    Colorimetry value;
  };
  thread_local Cache cache;
  if (caps == nullptr) return {};
  if (caps == cache.caps.get()) return cache.value;
  GstVideoInfo info;
  gst_video_info_init(&info);
  Colorimetry value;
  if (gst_video_info_from_caps(&info, caps)) value = colorimetry_of(info.colorimetry);
  cache.caps.reset(gst_caps_ref(caps));
  cache.value = value;
  return value;
}

struct GstPlane {
  std::int64_t offset = 0;
  std::int64_t stride = 0;
};

// The storage objects of wrapped GstBuffers (control block and object in one
// block) are recycled: a stream wraps one per frame, and a steady pipeline
// performs no heap allocation (64 blocks cover every queue of a graph).
struct WrapBlocks {
  detail::BlockCache blocks{64, 0};
};
const std::shared_ptr<WrapBlocks>& wrap_blocks() {
  static const auto owner = std::make_shared<WrapBlocks>();
  return owner;
}

}  // namespace

Status ensure_gstreamer() {
  static const Status status = []() -> Status {
    GstRef<GError> err;
    if (!gst_init_check(nullptr, nullptr, err.out())) {
      std::string m = "GStreamer could not start: ";
      m += err ? err->message : "gst_init_check failed";
      return failed_precondition(std::move(m));
    }
    return {};
  }();
  return status;
}

Result<PixelFormat> pixel_format_from_gst(int gst_video_format) {
  for (const auto& e : kFormats) {
    if (e.gst == gst_video_format) return e.format;
  }
  return unimplemented("GStreamer format " +
                       gst_format_name(static_cast<GstVideoFormat>(gst_video_format)) +
                       " has no NeatTensor pixel format (supported: GRAY8, RGB, BGR, RGBA, BGRA, "
                       "NV12, NV21, I420, YV12): have GStreamer hand over one of them, e.g. "
                       "\"! videoconvert ! video/x-raw,format=I420\" (a conversion `neat explain` "
                       "lists and every frame records); from there the graph's own `convert` and "
                       "`preprocess` stages do the rest");
}

Result<int> gst_video_format(PixelFormat format) {
  for (const auto& e : kFormats) {
    if (e.format == format) return static_cast<int>(e.gst);
  }
  return invalid_argument(std::string(to_string(format)) + " has no GStreamer video format");
}

namespace {
Result<NeatTensor> wrap_buffer(GstBuffer* buffer, const GstVideoInfo& info, GstTransfer transfer,
                               Colorimetry colorimetry);
}  // namespace

Result<NeatTensor> wrap_gst_buffer(GstBuffer* buffer, const GstVideoInfo& info,
                                   GstTransfer transfer) {
  return wrap_buffer(buffer, info, transfer, colorimetry_of(info.colorimetry));
}

namespace {

// Where a buffer's planes are: from its GstVideoMeta when it has one, else
// from the caps' video info.
struct BufferLayout {
  GstVideoFormat gformat = GST_VIDEO_FORMAT_UNKNOWN;
  PixelFormat format = PixelFormat::None;
  std::int64_t width = 0;
  std::int64_t height = 0;
  int n_planes = 0;
  bool from_meta = false;
  std::array<GstPlane, kMaxPlanes> planes{};
};

// Built only on error paths: the success path allocates nothing for messages.
std::string describe(const BufferLayout& l) {
  return "wrap_gst_buffer (" + gst_format_name(l.gformat) + " " + std::to_string(l.width) + "x" +
         std::to_string(l.height) + ", layout from " + (l.from_meta ? "GstVideoMeta" : "caps") +
         ")";
}

Result<BufferLayout> read_layout(GstBuffer* buffer, const GstVideoInfo& info) {
  BufferLayout l;
  const GstVideoMeta* meta = gst_buffer_get_video_meta(buffer);
  l.from_meta = meta != nullptr;
  l.gformat = meta != nullptr ? meta->format : GST_VIDEO_INFO_FORMAT(&info);
  l.width = meta != nullptr ? meta->width : GST_VIDEO_INFO_WIDTH(&info);
  l.height = meta != nullptr ? meta->height : GST_VIDEO_INFO_HEIGHT(&info);
  l.n_planes = meta != nullptr ? static_cast<int>(meta->n_planes) : GST_VIDEO_INFO_N_PLANES(&info);
  if (l.gformat == GST_VIDEO_FORMAT_UNKNOWN || l.gformat == GST_VIDEO_FORMAT_ENCODED) {
    return invalid_argument(describe(l) +
                            ": the video info has no raw format (are the caps video/x-raw?)");
  }
  NEAT_ASSIGN_OR_RETURN(l.format, pixel_format_from_gst(l.gformat));
  if (l.width <= 0 || l.height <= 0) return invalid_argument(describe(l) + ": empty frame");
  const int expected = is_planar(l.format) ? plane_order(l.format).count : 1;
  if (l.n_planes != expected) {
    return invalid_argument(describe(l) + ": " + std::to_string(l.n_planes) + " planes, " +
                            std::string(to_string(l.format)) + " has " + std::to_string(expected));
  }
  for (int i = 0; i < l.n_planes; ++i) {
    auto& p = l.planes[static_cast<std::size_t>(i)];
    p.offset = static_cast<std::int64_t>(meta != nullptr ? meta->offset[i]
                                                         : GST_VIDEO_INFO_PLANE_OFFSET(&info, i));
    p.stride = meta != nullptr ? meta->stride[i] : GST_VIDEO_INFO_PLANE_STRIDE(&info, i);
    if (p.stride <= 0) {
      return unimplemented(describe(l) + ": plane " + std::to_string(i) + " has stride " +
                           std::to_string(p.stride) +
                           " (bottom-up or empty rows are not supported)");
    }
  }
  return l;
}

// One storage per GstMemory the planes touch, and where each plane starts in it.
struct PlaneViews {
  std::array<std::shared_ptr<Storage>, kMaxPlanes> storages;
  std::array<unsigned, kMaxPlanes> storage_mem{};
  int n_storages = 0;
  std::array<int, kMaxPlanes> plane_storage{};
  std::array<std::int64_t, kMaxPlanes> plane_offset{};
};

// The GstMemory block plane `i` lies in, and its offset there.
Status find_plane_memory(GstBuffer* buffer, const BufferLayout& l, int i, guint& idx, gsize& skip) {
  const auto k = static_cast<std::size_t>(i);
  const PlaneRole role = is_planar(l.format) ? plane_order(l.format).roles[k] : PlaneRole::Y;
  const PlaneGeometry g = is_planar(l.format)
                              ? plane_geometry(l.format, role, l.width, l.height)
                              : PlaneGeometry{l.height, l.width, channels(l.format)};
  const std::int64_t extent = (g.rows - 1) * l.planes[k].stride + g.cols * g.samples;
  guint length = 0;
  if (!gst_buffer_find_memory(buffer, static_cast<gsize>(l.planes[k].offset),
                              static_cast<gsize>(extent), &idx, &length, &skip)) {
    return out_of_range(describe(l) + ": plane " + std::to_string(i) + " (" +
                        std::to_string(extent) + " B at offset " +
                        std::to_string(l.planes[k].offset) + ") lies outside the buffer of " +
                        std::to_string(gst_buffer_get_size(buffer)) + " B");
  }
  if (length != 1) {
    return unimplemented(describe(l) + ": plane " + std::to_string(i) + " spans " +
                         std::to_string(length) +
                         " GstMemory blocks; NeatTensor cannot view it without a copy");
  }
  return {};
}

// The first storage takes our reference to the buffer, each further one its own.
Status view_planes(GstBuffer* buffer, GstRef<GstBuffer>& owned, const BufferLayout& l,
                   bool writable_buffer, PlaneViews& v) {
  if (gst_buffer_n_memory(buffer) == 0) {
    return invalid_argument(describe(l) + ": the buffer has no memory");
  }
  for (int i = 0; i < l.n_planes; ++i) {
    guint idx = 0;
    gsize skip = 0;
    NEAT_RETURN_IF_ERROR(find_plane_memory(buffer, l, i, idx, skip));
    int s = -1;
    for (int j = 0; j < v.n_storages; ++j) {
      if (v.storage_mem[static_cast<std::size_t>(j)] == idx) s = j;
    }
    if (s < 0) {
      GstMemory* mem = gst_buffer_peek_memory(buffer, idx);
      const bool read_only = !writable_buffer || gst_memory_is_writable(mem) == 0;
      GstRef<GstBuffer> ref =
          v.n_storages == 0 ? std::move(owned) : GstRef<GstBuffer>(gst_buffer_ref(buffer));
      try {
        v.storages[static_cast<std::size_t>(v.n_storages)] = std::allocate_shared<GstMemoryStorage>(
            detail::CachedBlockAllocator<GstMemoryStorage, WrapBlocks>(wrap_blocks()),
            std::move(ref), mem,
            static_cast<std::int64_t>(gst_memory_get_sizes(mem, nullptr, nullptr)), read_only, idx);
      } catch (const std::bad_alloc&) {
        return resource_exhausted(describe(l) + ": out of memory for the storage object");
      }
      v.storage_mem[static_cast<std::size_t>(v.n_storages)] = idx;
      s = v.n_storages++;
    }
    v.plane_storage[static_cast<std::size_t>(i)] = s;
    v.plane_offset[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(skip);
  }
  return {};
}

// The buffer's timestamps travel with the frame.
FrameMeta buffer_times(GstBuffer* buffer) {
  FrameMeta meta;
  if (GST_BUFFER_PTS_IS_VALID(buffer))
    meta.pts_ns = static_cast<std::int64_t>(GST_BUFFER_PTS(buffer));
  if (GST_BUFFER_DURATION_IS_VALID(buffer)) {
    meta.duration_ns = static_cast<std::int64_t>(GST_BUFFER_DURATION(buffer));
  }
  return meta;
}

Result<NeatTensor> compose_frame(const BufferLayout& l, const PlaneViews& v) {
  if (is_planar(l.format)) {
    const PlaneOrder order = plane_order(l.format);
    std::array<PlaneSpec, kMaxPlanes> specs{};
    for (int i = 0; i < l.n_planes; ++i) {
      const auto k = static_cast<std::size_t>(i);
      specs[k] = PlaneSpec{order.roles[k], v.storages[static_cast<std::size_t>(v.plane_storage[k])],
                           l.planes[k].stride, v.plane_offset[k]};
    }
    return NeatTensor::compose_planes(
        l.format, l.width, l.height, std::span(specs.data(), static_cast<std::size_t>(l.n_planes)));
  }
  const std::int64_t c = channels(l.format);
  const Dims shape = c == 1 ? Dims{l.height, l.width} : Dims{l.height, l.width, c};
  const Dims strides = c == 1 ? Dims{l.planes[0].stride, 1} : Dims{l.planes[0].stride, c, 1};
  NEAT_ASSIGN_OR_RETURN(NeatTensor t, NeatTensor::from_storage(v.storages[0], DType::U8, shape,
                                                               strides, v.plane_offset[0]));
  return t.as_image(ImageSpec{l.format, l.width, l.height, c == 1 ? Layout::HW : Layout::HWC});
}

Result<NeatTensor> wrap_buffer(GstBuffer* buffer, const GstVideoInfo& info, GstTransfer transfer,
                               Colorimetry colorimetry) {
  if (buffer == nullptr || !GST_IS_BUFFER(buffer)) {
    return invalid_argument("wrap_gst_buffer: not a GstBuffer (null or wrong type)");
  }
  // From here on we own one reference, whatever happens.
  if (transfer == GstTransfer::None) gst_buffer_ref(buffer);
  GstRef<GstBuffer> owned(buffer);
  NEAT_ASSIGN_OR_RETURN(BufferLayout layout, read_layout(buffer, info));
  const bool writable_buffer = transfer == GstTransfer::Full && gst_buffer_is_writable(buffer) != 0;
  PlaneViews views;
  NEAT_RETURN_IF_ERROR(view_planes(buffer, owned, layout, writable_buffer, views));
  auto t = compose_frame(layout, views);
  if (!t.ok()) return std::move(t).error().with_context(describe(layout));
  t->set_meta(buffer_times(buffer));
  if (!is_planar(layout.format)) return t;
  return t->with_colorimetry(colorimetry);
}
}  // namespace

Result<NeatTensor> wrap_gst_buffer(GstBuffer* buffer, const GstCaps* caps, GstTransfer transfer) {
  // A (transfer full) buffer is ours from here on, also when the caps are bad.
  GstRef<GstBuffer> owned(
      transfer == GstTransfer::Full && buffer != nullptr && GST_IS_BUFFER(buffer) ? buffer
                                                                                  : nullptr);
  if (caps == nullptr || !GST_IS_CAPS(caps)) {
    return invalid_argument("wrap_gst_buffer: no caps (null or not a GstCaps)");
  }
  GstVideoInfo info;
  gst_video_info_init(&info);
  if (!gst_video_info_from_caps(&info, caps)) {
    const GstRef<gchar> text(gst_caps_to_string(caps));
    std::string m = "wrap_gst_buffer: caps \"";
    m += text ? text.get() : "?";
    m += "\" are not fixed raw video caps (video/x-raw with format, width and height)";
    return invalid_argument(std::move(m));
  }
  if (owned) return wrap_gst_buffer(owned.release(), info, GstTransfer::Full);
  return wrap_gst_buffer(buffer, info, transfer);
}

Result<NeatTensor> wrap_gst_sample(GstSample* sample) {
  if (sample == nullptr || !GST_IS_SAMPLE(sample)) {
    return invalid_argument("wrap_gst_sample: not a GstSample (null or wrong type)");
  }
  GstBuffer* buffer = gst_sample_get_buffer(sample);
  if (buffer == nullptr) return invalid_argument("wrap_gst_sample: the sample has no buffer");
  if (gst_buffer_get_video_meta(buffer) != nullptr) {
    // The meta states format, size, offsets and strides: parsing the caps
    // would only repeat it (and costs more than the rest of the wrap).
    // The colour standard is only in the caps (cached per caps object).
    static const GstVideoInfo unused = [] {
      GstVideoInfo i;
      gst_video_info_init(&i);
      return i;
    }();
    return wrap_buffer(buffer, unused, GstTransfer::None,
                       caps_colorimetry(gst_sample_get_caps(sample)));
  }
  return wrap_gst_buffer(buffer, gst_sample_get_caps(sample), GstTransfer::None);
}

// ---- NeatTensor -> GstBuffer --------------------------------------------------

namespace {

// Keeps the tensor mapped (and so its storage alive) until every GstMemory
// wrapping it is freed.
struct ExportHold {
  explicit ExportHold(Mapping m) : mapping(std::move(m)) {}
  Mapping mapping;
};

// Each GstMemory owns one of these (its user data); GStreamer gives it back
// through release_export() when the memory is freed.
using ExportUser = std::shared_ptr<ExportHold>;

void release_export(gpointer data) {
  NEAT_TSAN_ACQUIRE(data);
  const std::unique_ptr<ExportUser> user(static_cast<ExportUser*>(data));
  g_live_exports.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace

namespace {

// What GStreamer can take without a copy: CPU memory, image rows packed
// (GstVideoMeta has one stride per plane), dense tensors contiguous. Gives
// the video format (UNKNOWN for a dense tensor).
Result<GstVideoFormat> exportable_format(const NeatTensor& tensor, const std::string& what) {
  if (tensor.device().type != DeviceType::Cpu) {
    return failed_precondition(what + ": it is not in CPU memory; transfer it with cpu() first");
  }
  if (!tensor.is_image()) {
    if (!tensor.is_contiguous())
      return failed_precondition(what + ": not contiguous; pack it explicitly with contiguous()");
    return GST_VIDEO_FORMAT_UNKNOWN;
  }
  NEAT_ASSIGN_OR_RETURN(int f, gst_video_format(tensor.pixel_format()));
  if (!tensor.is_composite()) {
    const std::int64_t c = channels(tensor.pixel_format());
    const bool hwc = tensor.layout() == Layout::HWC || tensor.layout() == Layout::HW;
    const bool packed =
        hwc && (tensor.rank() == 2 ? tensor.strides()[1] == 1
                                   : (tensor.strides()[1] == c && tensor.strides()[2] == 1));
    if (!packed || tensor.strides()[0] <= 0) {
      return failed_precondition(what + ": GStreamer needs pixels packed in rows (strides " +
                                 tensor.strides().to_string() +
                                 "); pack it explicitly with contiguous() or to_hwc()");
    }
  }
  return static_cast<GstVideoFormat>(f);
}

// Where a mapped tensor's bytes lie: one region (one GstMemory) per storage,
// covering its planes, and each plane's start, row stride and region.
struct ExportLayout {
  struct Region {
    const std::byte* begin = nullptr;
    const std::byte* end = nullptr;
  };
  std::array<Region, kMaxPlanes> regions{};
  std::array<const std::byte*, kMaxPlanes> plane_ptr{};
  std::array<std::int64_t, kMaxPlanes> plane_stride{};
  std::array<int, kMaxPlanes> plane_region{};
  std::array<std::int64_t, kMaxPlanes> region_offset{};  // in the buffer, once wrapped
  int n_planes = 0;
  int n_regions = 0;
};

Result<ExportLayout> export_layout(const NeatTensor& tensor, const Mapping& mapping) {
  ExportLayout l;
  if (!tensor.is_composite()) {
    l.n_planes = 1;
    l.n_regions = 1;
    l.plane_ptr[0] = mapping.data();
    l.plane_stride[0] = tensor.rank() > 0 ? tensor.strides()[0] : 0;
    const std::byte* end = mapping.data();
    if (tensor.is_image()) {
      end += (tensor.shape()[0] - 1) * tensor.strides()[0] +
             tensor.image().width * channels(tensor.pixel_format());
    } else {
      end += tensor.nbytes();
    }
    l.regions[0] = ExportLayout::Region{mapping.data(), end};
    return l;
  }
  l.n_planes = tensor.plane_count();
  for (int i = 0; i < l.n_planes; ++i) {
    const PlaneLayout& p = tensor.plane_layout(i);
    NEAT_ASSIGN_OR_RETURN(const std::byte* ptr, mapping.plane_data(p.role));
    const auto k = static_cast<std::size_t>(i);
    l.plane_ptr[k] = ptr;
    l.plane_stride[k] = p.row_stride;
    l.plane_region[k] = p.storage;
    const std::byte* end = ptr + (p.rows - 1) * p.row_stride + p.cols * p.samples;
    ExportLayout::Region& r = l.regions[static_cast<std::size_t>(p.storage)];
    if (r.begin == nullptr || ptr < r.begin) r.begin = ptr;
    if (r.end == nullptr || end > r.end) r.end = end;
    l.n_regions = std::max(l.n_regions, static_cast<int>(p.storage) + 1);
  }
  return l;
}

// Appends one wrapped GstMemory per region to `buffer`, each holding the
// mapping (through `hold`) until GStreamer releases it; `users` are the
// holders, for the TSan hand-over once the buffer is complete.
Status wrap_regions(GstBuffer* buffer, ExportLayout& l, const std::shared_ptr<ExportHold>& hold,
                    bool writable, std::array<void*, kMaxPlanes>& users, const std::string& what) {
  std::int64_t total = 0;
  const auto flags = writable ? GstMemoryFlags(0) : GST_MEMORY_FLAG_READONLY;
  for (int r = 0; r < l.n_regions; ++r) {
    const ExportLayout::Region& reg = l.regions[static_cast<std::size_t>(r)];
    const auto size = static_cast<gsize>(reg.end - reg.begin);
    std::unique_ptr<ExportUser> user;
    try {
      user = std::make_unique<ExportUser>(hold);
    } catch (const std::bad_alloc&) {
      return resource_exhausted(what + ": out of memory");
    }
    users[static_cast<std::size_t>(r)] = user.get();
    g_live_exports.fetch_add(1, std::memory_order_relaxed);
    // The memory owns `user` from here on and gives it to release_export().
    GstMemory* mem = gst_memory_new_wrapped(flags, const_cast<std::byte*>(reg.begin), size, 0, size,
                                            user.release(), release_export);
    gst_buffer_append_memory(buffer, mem);
    l.region_offset[static_cast<std::size_t>(r)] = total;
    total += static_cast<std::int64_t>(size);
  }
  return {};
}

// The GstVideoMeta of an image: each plane's offset in the buffer and stride.
Status add_video_meta(GstBuffer* buffer, const ExportLayout& l, GstVideoFormat format,
                      const NeatTensor& tensor, const std::string& what) {
  gsize offsets[GST_VIDEO_MAX_PLANES] = {};
  gint strides[GST_VIDEO_MAX_PLANES] = {};
  for (int i = 0; i < l.n_planes; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const auto region = static_cast<std::size_t>(l.plane_region[k]);
    offsets[i] =
        static_cast<gsize>(l.region_offset[region] + (l.plane_ptr[k] - l.regions[region].begin));
    if (l.plane_stride[k] > G_MAXINT) {
      return out_of_range(what + ": row stride " + std::to_string(l.plane_stride[k]) +
                          " does not fit GstVideoMeta");
    }
    strides[i] = static_cast<gint>(l.plane_stride[k]);
  }
  gst_buffer_add_video_meta_full(
      buffer, GST_VIDEO_FRAME_FLAG_NONE, format, static_cast<guint>(tensor.image().width),
      static_cast<guint>(tensor.image().height), static_cast<guint>(l.n_planes), offsets, strides);
  return {};
}

}  // namespace

Result<GstBuffer*> export_gst_buffer(NeatTensor tensor) {
  NEAT_RETURN_IF_ERROR(ensure_gstreamer());
  if (!tensor.defined()) return failed_precondition("export_gst_buffer: the tensor is undefined");
  const std::string what = "export_gst_buffer of " + tensor.to_string();
  NEAT_ASSIGN_OR_RETURN(GstVideoFormat format, exportable_format(tensor, what));
  const bool donate = tensor.can_donate();
  if (donate) {
    auto w = std::move(tensor).make_writable();
    if (!w.ok()) return std::move(w).error().with_context(what);
    tensor = std::move(*w);
  }
  NEAT_ASSIGN_OR_RETURN(Mapping mapping, tensor.map(donate ? MapMode::ReadWrite : MapMode::Read));
  NEAT_ASSIGN_OR_RETURN(ExportLayout layout, export_layout(tensor, mapping));
  std::shared_ptr<ExportHold> hold;
  try {
    hold = std::make_shared<ExportHold>(std::move(mapping));
  } catch (const std::bad_alloc&) {
    return resource_exhausted(what + ": out of memory");
  }
  GstRef<GstBuffer> buffer(gst_buffer_new());
  std::array<void*, kMaxPlanes> users{};
  NEAT_RETURN_IF_ERROR(wrap_regions(buffer.get(), layout, hold, donate, users, what));
  if (format != GST_VIDEO_FORMAT_UNKNOWN)
    NEAT_RETURN_IF_ERROR(add_video_meta(buffer.get(), layout, format, tensor, what));
  // All of the above happens before any release_export() (GStreamer may call
  // it on another thread).
  for (int r = 0; r < layout.n_regions; ++r)
    NEAT_TSAN_RELEASE(users[static_cast<std::size_t>(r)]);
  return buffer.release();
}

Result<GstCaps*> gst_caps_for(const ImageSpec& image, int fps_n, int fps_d) {
  NEAT_RETURN_IF_ERROR(ensure_gstreamer());
  NEAT_ASSIGN_OR_RETURN(int f, gst_video_format(image.format));
  if (image.width <= 0 || image.height <= 0 || image.width > G_MAXINT || image.height > G_MAXINT) {
    return invalid_argument("gst_caps_for: size " + std::to_string(image.width) + "x" +
                            std::to_string(image.height) + " is not a valid video size");
  }
  if (fps_n < 0 || fps_d <= 0) {
    return invalid_argument("gst_caps_for: framerate " + std::to_string(fps_n) + "/" +
                            std::to_string(fps_d) + " is not valid");
  }
  GstCaps* caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING,
                                      gst_video_format_to_string(static_cast<GstVideoFormat>(f)),
                                      "width", G_TYPE_INT, static_cast<int>(image.width), "height",
                                      G_TYPE_INT, static_cast<int>(image.height), "framerate",
                                      GST_TYPE_FRACTION, fps_n, fps_d, nullptr);
  // A YUV frame states its colour standard, so downstream converts it right; an
  // unknown one is left out and GStreamer applies the same default we would.
  if (is_planar(image.format) && image.colorimetry != Colorimetry{}) {
    const Colorimetry c = resolve_colorimetry(image.colorimetry, image.width, image.height);
    GstVideoColorimetry gc{};
    const char* base = c.matrix == YuvMatrix::BT709    ? GST_VIDEO_COLORIMETRY_BT709
                       : c.matrix == YuvMatrix::BT2020 ? GST_VIDEO_COLORIMETRY_BT2020
                                                       : GST_VIDEO_COLORIMETRY_BT601;
    if (gst_video_colorimetry_from_string(&gc, base)) {
      gc.range =
          c.range == ColorRange::Full ? GST_VIDEO_COLOR_RANGE_0_255 : GST_VIDEO_COLOR_RANGE_16_235;
      if (const GstRef<gchar> text(gst_video_colorimetry_to_string(&gc)); text) {
        gst_caps_set_simple(caps, "colorimetry", G_TYPE_STRING, text.get(), nullptr);
      }
    }
  }
  return caps;
}

Colorimetry gst_caps_colorimetry(const GstCaps* caps) {
  if (caps == nullptr || !GST_IS_CAPS(caps) || !ensure_gstreamer().ok()) return {};
  return caps_colorimetry(const_cast<GstCaps*>(caps));  // NOLINT: only referenced
}

GstStorageStats gst_storage_stats() noexcept {
  GstStorageStats s;
  s.live_storages = g_live_storages.load(std::memory_order_relaxed);
  s.live_maps = g_live_maps.load(std::memory_order_relaxed);
  s.maps = g_maps.load(std::memory_order_relaxed);
  s.unmaps = g_unmaps.load(std::memory_order_relaxed);
  s.live_exports = g_live_exports.load(std::memory_order_relaxed);
  return s;
}

}  // namespace neat

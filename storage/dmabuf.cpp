#include "neat/storage/dmabuf.hpp"

#include <drm_fourcc.h>
#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <new>

namespace neat {
namespace {

std::atomic<std::int64_t> g_live_storages{0};
std::atomic<std::int64_t> g_live_cpu_mappings{0};
std::atomic<std::int64_t> g_open_maps{0};
std::atomic<std::uint64_t> g_sync_starts{0};
std::atomic<std::uint64_t> g_sync_ends{0};
std::atomic<std::uint64_t> g_sync_unsupported{0};

std::uint64_t sync_flags(MapMode mode) noexcept {
  switch (mode) {
    case MapMode::Read:
      return DMA_BUF_SYNC_READ;
    case MapMode::Write:
      return DMA_BUF_SYNC_WRITE;
    case MapMode::ReadWrite:
      return DMA_BUF_SYNC_RW;
  }
  return DMA_BUF_SYNC_RW;
}

int sync_ioctl(int fd, std::uint64_t flags) noexcept {
  dma_buf_sync sync{};
  sync.flags = flags;
  int rc;
  do {
    rc = ::ioctl(fd, DMA_BUF_IOCTL_SYNC, &sync);
  } while (rc != 0 && (errno == EINTR || errno == EAGAIN));
  return rc == 0 ? 0 : errno;
}

struct FourccEntry {
  PixelFormat format;
  std::uint32_t fourcc;
};
constexpr FourccEntry kFourccs[] = {
    {PixelFormat::GRAY8, DRM_FORMAT_R8},      {PixelFormat::RGB, DRM_FORMAT_BGR888},
    {PixelFormat::BGR, DRM_FORMAT_RGB888},    {PixelFormat::RGBA, DRM_FORMAT_ABGR8888},
    {PixelFormat::BGRA, DRM_FORMAT_ARGB8888}, {PixelFormat::NV12, DRM_FORMAT_NV12},
    {PixelFormat::NV21, DRM_FORMAT_NV21},     {PixelFormat::I420, DRM_FORMAT_YUV420},
    {PixelFormat::YV12, DRM_FORMAT_YVU420},
};

}  // namespace

// ---- fourcc -------------------------------------------------------------------

Result<std::uint32_t> drm_fourcc(PixelFormat format) {
  for (const auto& e : kFourccs) {
    if (e.format == format) return e.fourcc;
  }
  return invalid_argument("drm_fourcc: " + std::string(to_string(format)) +
                          " has no DRM fourcc (not an image format)");
}

Result<PixelFormat> pixel_format_from_drm_fourcc(std::uint32_t fourcc) {
  for (const auto& e : kFourccs) {
    if (e.fourcc == fourcc) return e.format;
  }
  return unimplemented("DRM format " + fourcc_to_string(fourcc) +
                       " has no NeatTensor pixel format (supported: R8, BG24, RG24, AB24, AR24, "
                       "NV12, NV21, YU12, YV12)");
}

std::string fourcc_to_string(std::uint32_t fourcc) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    const char c = static_cast<char>((fourcc >> (8 * i)) & 0xff);
    if (c < 0x20 || c > 0x7e) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "0x%08x", fourcc);
      return buf;
    }
    s += c;
  }
  while (!s.empty() && s.back() == ' ')
    s.pop_back();
  return s;
}

// ---- sync ---------------------------------------------------------------------

Result<DmaBufSync> DmaBufSync::begin(int fd, MapMode mode) {
  const std::uint64_t flags = sync_flags(mode);
  const int err = sync_ioctl(fd, DMA_BUF_SYNC_START | flags);
  if (err != 0) {
    return os_error("DMA_BUF_IOCTL_SYNC start (" + std::string(to_string(mode)) + ") on fd " +
                        std::to_string(fd),
                    err);
  }
  g_sync_starts.fetch_add(1, std::memory_order_relaxed);
  return DmaBufSync(fd, flags);
}

DmaBufSync::DmaBufSync(DmaBufSync&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), flags_(other.flags_) {}

DmaBufSync& DmaBufSync::operator=(DmaBufSync&& other) noexcept {
  if (this != &other) {
    end();
    fd_ = std::exchange(other.fd_, -1);
    flags_ = other.flags_;
  }
  return *this;
}

DmaBufSync::~DmaBufSync() {
  end();
}

void DmaBufSync::end() noexcept {
  if (fd_ < 0) return;
  // An END that fails leaves nothing to undo; the kernel drops the bracket
  // with the fd at worst.
  (void)sync_ioctl(fd_, DMA_BUF_SYNC_END | flags_);
  g_sync_ends.fetch_add(1, std::memory_order_relaxed);
  fd_ = -1;
}

// ---- storage ------------------------------------------------------------------

struct DmaBufStorage::Private {};

DmaBufStorage::DmaBufStorage(const Private&, UniqueFd fd, std::int64_t size, FdIdentity identity,
                             DmaBufImportOptions options, bool shared)
    : Storage(StorageKind::DmaBuf, kCpu, size, options.read_only, nullptr, fd_buffer_id(identity)),
      fd_(std::move(fd)),
      identity_(identity),
      require_sync_(options.require_sync),
      shared_(shared) {
  g_live_storages.fetch_add(1, std::memory_order_relaxed);
}

DmaBufStorage::~DmaBufStorage() {
  if (std::byte* base = base_.load(); base != nullptr) {
    ::munmap(base, static_cast<std::size_t>(size_bytes()));
    g_live_cpu_mappings.fetch_sub(1, std::memory_order_relaxed);
  }
  g_live_storages.fetch_sub(1, std::memory_order_relaxed);
}

bool DmaBufStorage::donatable() const noexcept {
  return !read_only() && !shared_.load(std::memory_order_relaxed);
}

std::string DmaBufStorage::describe() const {
  std::string out = "dmabuf ";
  out += std::to_string(size_bytes());
  out += " B (fd ";
  out += std::to_string(fd_.get());
  out += ", inode ";
  out += std::to_string(identity_.inode);
  if (read_only()) out += ", read-only";
  out += ')';
  return out;
}

Result<std::byte*> DmaBufStorage::map_slow(MapMode mode) {
  std::byte* base = base_.load(std::memory_order_acquire);
  if (base == nullptr) {
    if (size_bytes() == 0) return failed_precondition(describe() + " is empty: nothing to map");
    std::lock_guard lock(mmap_mutex_);
    base = base_.load(std::memory_order_relaxed);
    if (base == nullptr) {
      const int prot = read_only() ? PROT_READ : (PROT_READ | PROT_WRITE);
      void* p =
          ::mmap(nullptr, static_cast<std::size_t>(size_bytes()), prot, MAP_SHARED, fd_.get(), 0);
      if (p == MAP_FAILED) return os_error("map of " + describe() + ": mmap", errno);
      base = static_cast<std::byte*>(p);
      base_.store(base, std::memory_order_release);
      g_live_cpu_mappings.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (!sync_unsupported_.load(std::memory_order_relaxed)) {
    const int err = sync_ioctl(fd_.get(), DMA_BUF_SYNC_START | sync_flags(mode));
    if (err == ENOTTY) {
      if (require_sync_) {
        return unimplemented("map of " + describe() +
                             ": DMA_BUF_IOCTL_SYNC is not supported (ENOTTY): the fd is not a "
                             "dma-buf; wrap it without require_sync, or with wrap_shm");
      }
      if (!sync_unsupported_.exchange(true)) {
        g_sync_unsupported.fetch_add(1, std::memory_order_relaxed);
      }
    } else if (err != 0) {
      return os_error("map of " + describe() + ": DMA_BUF_IOCTL_SYNC start", err);
    } else {
      g_sync_starts.fetch_add(1, std::memory_order_relaxed);
    }
  }
  g_open_maps.fetch_add(1, std::memory_order_relaxed);
  return base;
}

void DmaBufStorage::unmap_slow(MapMode mode) noexcept {
  if (!sync_unsupported_.load(std::memory_order_relaxed)) {
    (void)sync_ioctl(fd_.get(), DMA_BUF_SYNC_END | sync_flags(mode));
    g_sync_ends.fetch_add(1, std::memory_order_relaxed);
  }
  g_open_maps.fetch_sub(1, std::memory_order_relaxed);
}

Result<std::shared_ptr<DmaBufStorage>> DmaBufStorage::import(int fd, DmaBufImportOptions options) {
  const std::string what = "dmabuf import of fd " + std::to_string(fd);
  if (fd < 0) return invalid_argument(what + ": not a descriptor");
  NEAT_ASSIGN_OR_RETURN(UniqueFd own, UniqueFd::duplicate(fd));
  NEAT_ASSIGN_OR_RETURN(std::int64_t size, fd_size(own.get()));
  if (size <= 0) return invalid_argument(what + ": the buffer is empty (0 bytes)");
  NEAT_ASSIGN_OR_RETURN(FdIdentity identity, neat::fd_identity(own.get()));
  try {
    return std::make_shared<DmaBufStorage>(Private{}, std::move(own), size, identity, options,
                                           !options.exclusive);
  } catch (const std::bad_alloc&) {
    return resource_exhausted(what + ": out of memory for the storage object");
  }
}

Result<std::shared_ptr<DmaBufStorage>> DmaBufStorage::allocate(std::int64_t bytes,
                                                               std::string_view heap) {
  const std::string path(heap);
  if (bytes <= 0) {
    return invalid_argument("dmabuf allocate: size must be positive, not " + std::to_string(bytes));
  }
  UniqueFd heap_fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!heap_fd) return os_error("dmabuf allocate: open " + path, errno);
  dma_heap_allocation_data data{};
  data.len = static_cast<std::uint64_t>(bytes);
  data.fd_flags = O_RDWR | O_CLOEXEC;
  if (::ioctl(heap_fd.get(), DMA_HEAP_IOCTL_ALLOC, &data) != 0) {
    return os_error("dmabuf allocate: " + std::to_string(bytes) + " B from " + path, errno);
  }
  UniqueFd fd(static_cast<int>(data.fd));
  NEAT_ASSIGN_OR_RETURN(FdIdentity identity, neat::fd_identity(fd.get()));
  NEAT_ASSIGN_OR_RETURN(std::int64_t size, fd_size(fd.get()));
  try {
    return std::make_shared<DmaBufStorage>(Private{}, std::move(fd), size, identity,
                                           DmaBufImportOptions{}, false);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("dmabuf allocate: out of memory for the storage object");
  }
}

bool dma_heap_available(std::string_view heap) noexcept {
  const std::string path(heap);
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

namespace {

class DmaBufAllocator final : public StorageAllocator {
 public:
  Result<std::shared_ptr<Storage>> allocate(const AllocRequest& request) override {
    // A dma-heap rounds up to pages and hands out zeroed memory.
    NEAT_ASSIGN_OR_RETURN(std::shared_ptr<DmaBufStorage> s,
                          DmaBufStorage::allocate(request.bytes > 0 ? request.bytes : 1));
    return std::shared_ptr<Storage>(std::move(s));
  }
};

}  // namespace

StorageAllocator& dmabuf_allocator() noexcept {
  static DmaBufAllocator allocator;
  return allocator;
}

DmaBufStats dmabuf_stats() noexcept {
  DmaBufStats s;
  s.live_storages = g_live_storages.load(std::memory_order_relaxed);
  s.live_cpu_mappings = g_live_cpu_mappings.load(std::memory_order_relaxed);
  s.open_maps = g_open_maps.load(std::memory_order_relaxed);
  s.sync_starts = g_sync_starts.load(std::memory_order_relaxed);
  s.sync_ends = g_sync_ends.load(std::memory_order_relaxed);
  s.sync_unsupported = g_sync_unsupported.load(std::memory_order_relaxed);
  return s;
}

// ---- frames -------------------------------------------------------------------

Result<NeatTensor> wrap_dmabuf_image(const DmaBufImage& image, DmaBufImportOptions options) {
  NEAT_ASSIGN_OR_RETURN(PixelFormat format, pixel_format_from_drm_fourcc(image.fourcc));
  const std::string what = "wrap_dmabuf_image (" + fourcc_to_string(image.fourcc) + " " +
                           std::to_string(image.width) + "x" + std::to_string(image.height) + ")";
  if (image.modifier != kDrmFormatModLinear) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(image.modifier));
    return unimplemented(what + ": modifier " + buf +
                         " is a tiled or compressed layout the CPU cannot address; import "
                         "DRM_FORMAT_MOD_LINEAR buffers (ask the exporter for linear)");
  }
  if (image.width <= 0 || image.height <= 0) return invalid_argument(what + ": empty frame");
  const int expected = is_planar(format) ? plane_order(format).count : 1;
  if (image.plane_count != expected) {
    return invalid_argument(what + ": " + std::to_string(image.plane_count) + " planes given, " +
                            std::string(to_string(format)) + " has " + std::to_string(expected));
  }
  // Group planes by buffer: equal fds or equal (device, inode) share a storage.
  std::array<std::shared_ptr<Storage>, kMaxPlanes> storages;
  std::array<FdIdentity, kMaxPlanes> ids{};
  for (int i = 0; i < image.plane_count; ++i) {
    const DmaBufPlane& p = image.planes[static_cast<std::size_t>(i)];
    if (p.offset < 0 || p.stride <= 0) {
      return invalid_argument(what + ": plane " + std::to_string(i) + " has offset " +
                              std::to_string(p.offset) + " and stride " + std::to_string(p.stride) +
                              " (offset must be >= 0, stride > 0)");
    }
    auto id = neat::fd_identity(p.fd);
    if (!id.ok()) return std::move(id).error().with_context(what + ", plane " + std::to_string(i));
    ids[static_cast<std::size_t>(i)] = *id;
    for (int j = 0; j < i; ++j) {
      const auto& o = ids[static_cast<std::size_t>(j)];
      if (o.device == id->device && o.inode == id->inode) {
        storages[static_cast<std::size_t>(i)] = storages[static_cast<std::size_t>(j)];
        break;
      }
    }
    if (!storages[static_cast<std::size_t>(i)]) {
      auto s = DmaBufStorage::import(p.fd, options);
      if (!s.ok()) return std::move(s).error().with_context(what + ", plane " + std::to_string(i));
      storages[static_cast<std::size_t>(i)] = std::move(*s);
    }
  }
  if (is_planar(format)) {
    const PlaneOrder order = plane_order(format);
    std::array<PlaneSpec, kMaxPlanes> specs{};
    for (int i = 0; i < image.plane_count; ++i) {
      const auto k = static_cast<std::size_t>(i);
      specs[k] =
          PlaneSpec{order.roles[k], storages[k], image.planes[k].stride, image.planes[k].offset};
    }
    auto t =
        NeatTensor::compose_planes(format, image.width, image.height,
                                   std::span(specs.data(), static_cast<std::size_t>(expected)));
    if (!t.ok()) return std::move(t).error().with_context(what);
    return t->with_colorimetry(image.colorimetry);
  }
  const std::int64_t c = channels(format);
  Dims shape, strides;
  if (format == PixelFormat::GRAY8) {
    shape = Dims{image.height, image.width};
    strides = Dims{image.planes[0].stride, 1};
  } else {
    shape = Dims{image.height, image.width, c};
    strides = Dims{image.planes[0].stride, c, 1};
  }
  auto t = NeatTensor::from_storage(storages[0], DType::U8, shape, strides, image.planes[0].offset);
  if (!t.ok()) return std::move(t).error().with_context(what);
  return t->as_image(
      ImageSpec{format, image.width, image.height, c == 1 ? Layout::HW : Layout::HWC});
}

Result<NeatTensor> wrap_dmabuf(int fd, DType dtype, DimsRef shape, DimsRef strides,
                               std::int64_t byte_offset, DmaBufImportOptions options) {
  NEAT_ASSIGN_OR_RETURN(std::shared_ptr<DmaBufStorage> s, DmaBufStorage::import(fd, options));
  return NeatTensor::from_storage(std::move(s), dtype, shape, strides, byte_offset);
}

Result<DmaBufExport> export_dmabuf_image(const NeatTensor& image) {
  if (!image.is_image()) {
    return invalid_argument("export_dmabuf_image: " + image.to_string() + " is not an image");
  }
  const std::string what = "export_dmabuf_image of " + image.to_string();
  NEAT_ASSIGN_OR_RETURN(std::uint32_t fourcc, drm_fourcc(image.pixel_format()));
  DmaBufExport out;
  out.image.fourcc = fourcc;
  out.image.width = image.image().width;
  out.image.height = image.image().height;
  out.image.colorimetry = image.image().colorimetry;
  auto fd_of = [&](const Storage& s) -> Result<int> {
    if (s.native_fd() < 0) {
      return failed_precondition(
          what + ": it lives in " + s.describe() +
          ", which has no fd; allocate it with auto_allocator() / shm_allocator(), or clone it "
          "there explicitly (clone({.allocator = &auto_allocator()}))");
    }
    return s.native_fd();
  };
  if (image.is_composite()) {
    out.image.plane_count = image.plane_count();
    for (int i = 0; i < image.plane_count(); ++i) {
      const PlaneLayout& p = image.plane_layout(i);
      const Storage& s = *image.storage(p.storage);
      NEAT_ASSIGN_OR_RETURN(int fd, fd_of(s));
      NEAT_ASSIGN_OR_RETURN(out.fds[static_cast<std::size_t>(i)], UniqueFd::duplicate(fd));
      out.image.planes[static_cast<std::size_t>(i)] =
          DmaBufPlane{out.fds[static_cast<std::size_t>(i)].get(), p.byte_offset, p.row_stride};
    }
  } else {
    if (image.layout() != Layout::HWC && image.layout() != Layout::HW) {
      return failed_precondition(what +
                                 ": DRM formats are interleaved rows; convert with to_hwc()");
    }
    const std::int64_t c = channels(image.pixel_format());
    const bool packed = image.rank() == 2 ? image.strides()[1] == 1
                                          : (image.strides()[1] == c && image.strides()[2] == 1);
    if (!packed || image.strides()[0] <= 0) {
      return failed_precondition(what + ": pixels are not packed in rows (strides " +
                                 image.strides().to_string() + "); pack it with contiguous()");
    }
    const Storage& s = *image.storage(0);
    NEAT_ASSIGN_OR_RETURN(int fd, fd_of(s));
    out.image.plane_count = 1;
    NEAT_ASSIGN_OR_RETURN(out.fds[0], UniqueFd::duplicate(fd));
    out.image.planes[0] = DmaBufPlane{out.fds[0].get(), image.byte_offset(), image.strides()[0]};
  }
  for (int i = 0; i < image.storage_count(); ++i)
    image.storage(i)->note_exported();
  return out;
}

}  // namespace neat

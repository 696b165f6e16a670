// DMA-BUF storage: buffers allocated from a DMA heap (/dev/dma_heap/system)
// or imported from any dma-buf fd (one fd for all planes at offsets, or one
// fd per plane), described by libdrm fourcc codes. Every map() is bracketed
// by DMA_BUF_IOCTL_SYNC start/end (DmaBufSync, RAII) with read/write flags
// matching the map mode, so CPU access stays coherent with devices.
//
// Fds that are not dma-bufs (a memfd, as on machines without a DMA heap)
// import too: their sync ioctl fails with ENOTTY, which is recorded once per
// storage and counted (DmaBufStats::sync_unsupported), after which that
// storage maps without syncing, since such memory is plain coherent RAM.
// DmaBufImportOptions::require_sync turns ENOTTY into an error instead.
//
// Ownership: a DmaBufStorage owns a duplicate of the fd it was given (the
// caller keeps theirs) and its CPU mapping (created on the first map(),
// released with the storage). Exports hand out duplicates (UniqueFd).
// Identity: (device, inode, offset) of the fd, stable across re-imports.
// Threading: thread-safe; concurrent mappings each sync start/end.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "neat/contract/allocator.hpp"
#include "neat/contract/neat_tensor.hpp"
#include "neat/contract/storage.hpp"
#include "neat/storage/fd.hpp"

namespace neat {

/// DRM_FORMAT_MOD_LINEAR: the only modifier the CPU can map.
inline constexpr std::uint64_t kDrmFormatModLinear = 0;

/// The libdrm fourcc of a pixel format. DRM names packed formats by their
/// little-endian word, so bytes R,G,B (our RGB) are DRM_FORMAT_BGR888, R,G,B,A
/// is DRM_FORMAT_ABGR8888; GRAY8 is DRM_FORMAT_R8; I420 is DRM_FORMAT_YUV420.
Result<std::uint32_t> drm_fourcc(PixelFormat format);
/// The pixel format of a libdrm fourcc; Unimplemented for formats NeatTensor
/// has no pixel format for (named in the message).
Result<PixelFormat> pixel_format_from_drm_fourcc(std::uint32_t fourcc);
/// "NV12", "YU12", or "0x...": a fourcc as text, for messages.
std::string fourcc_to_string(std::uint32_t fourcc);

/// One plane of an imported frame. fd is borrowed for the call.
struct DmaBufPlane {
  int fd = -1;
  std::int64_t offset = 0;  ///< bytes from the start of the buffer behind fd
  std::int64_t stride = 0;  ///< bytes from one row to the next
};

/// A frame as V4L2, KMS, Wayland, GStreamer or EGL describe it.
struct DmaBufImage {
  std::uint32_t fourcc = 0;
  std::uint64_t modifier = kDrmFormatModLinear;
  std::int64_t width = 0;
  std::int64_t height = 0;
  int plane_count = 0;
  std::array<DmaBufPlane, kMaxPlanes> planes{};
  /// YUV frames: the colour standard (V4L2 / KMS / Wayland state it apart from
  /// the fourcc); imported frames carry it, exports fill it in.
  Colorimetry colorimetry{};
};

/// An exported frame: the description plus owned duplicates of its fds
/// (planes[i].fd == fds[i].get()).
struct DmaBufExport {
  DmaBufImage image;
  std::array<UniqueFd, kMaxPlanes> fds;
};

struct DmaBufImportOptions {
  bool read_only = false;  ///< the tensor is read-only; mappings are PROT_READ
  /// Nothing else (device or process) uses the buffer: make_writable() may donate.
  bool exclusive = false;
  /// Fail map() when the sync ioctl is unsupported (ENOTTY) instead of
  /// mapping without it.
  bool require_sync = false;
};

/// Process-wide counts for leak and balance checks.
struct DmaBufStats {
  std::int64_t live_storages = 0;
  std::int64_t live_cpu_mappings = 0;  ///< mmaps currently held by storages
  std::int64_t open_maps = 0;          ///< map() calls not yet unmapped
  std::uint64_t sync_starts = 0;
  std::uint64_t sync_ends = 0;
  std::uint64_t sync_unsupported = 0;  ///< storages whose fd answered ENOTTY
};
DmaBufStats dmabuf_stats() noexcept;

/// RAII bracket of CPU access to a dma-buf: DMA_BUF_SYNC_START on begin(),
/// DMA_BUF_SYNC_END on destruction, with READ, WRITE or RW matching mode.
/// EINTR/EAGAIN are retried. An fd that is not a dma-buf yields Unimplemented
/// (ENOTTY) from begin(): callers decide whether that is fatal.
class DmaBufSync {
 public:
  static Result<DmaBufSync> begin(int fd, MapMode mode);
  DmaBufSync(DmaBufSync&& other) noexcept;
  DmaBufSync& operator=(DmaBufSync&& other) noexcept;
  DmaBufSync(const DmaBufSync&) = delete;
  DmaBufSync& operator=(const DmaBufSync&) = delete;
  ~DmaBufSync();

 private:
  DmaBufSync(int fd, std::uint64_t flags) noexcept : fd_(fd), flags_(flags) {}
  void end() noexcept;
  int fd_ = -1;
  std::uint64_t flags_ = 0;
};

class DmaBufStorage final : public Storage {
 public:
  /// Imports the buffer behind fd (duplicated). Its size comes from
  /// lseek(SEEK_END) (fstat for a memfd); an empty buffer is refused.
  static Result<std::shared_ptr<DmaBufStorage>> import(int fd, DmaBufImportOptions options = {});
  /// A new buffer from a DMA heap. Unavailable when the heap does not exist
  /// (these CI machines have none) or cannot be opened.
  static Result<std::shared_ptr<DmaBufStorage>> allocate(
      std::int64_t bytes, std::string_view heap = "/dev/dma_heap/system");

  ~DmaBufStorage() override;
  bool donatable() const noexcept override;
  std::string describe() const override;
  int native_fd() const noexcept override { return fd_.get(); }
  void note_exported() const noexcept override { shared_.store(true); }
  const FdIdentity& fd_identity() const noexcept { return identity_; }
  /// False once the fd answered the sync ioctl with ENOTTY (not a dma-buf).
  bool sync_supported() const noexcept { return !sync_unsupported_.load(); }

  struct Private;
  DmaBufStorage(const Private&, UniqueFd fd, std::int64_t size, FdIdentity identity,
                DmaBufImportOptions options, bool shared);

 protected:
  Result<std::byte*> map_slow(MapMode mode) override;
  void unmap_slow(MapMode mode) noexcept override;

 private:
  UniqueFd fd_;
  FdIdentity identity_;
  std::mutex mmap_mutex_;
  std::atomic<std::byte*> base_{nullptr};
  bool require_sync_;
  mutable std::atomic<bool> shared_;
  std::atomic<bool> sync_unsupported_{false};
};

/// True when a DMA heap exists at `heap` and can be opened for allocation.
bool dma_heap_available(std::string_view heap = "/dev/dma_heap/system") noexcept;

/// Allocates from /dev/dma_heap/system (through AllocOptions::allocator).
/// Unavailable on machines without the heap.
StorageAllocator& dmabuf_allocator() noexcept;

/// A frame over imported dma-buf planes. Planes whose fds refer to the same
/// buffer (same device and inode) share one storage; each plane's extent is
/// checked against its buffer's size before anything is mapped. Only linear
/// (kDrmFormatModLinear) buffers can be mapped by the CPU: other modifiers are
/// Unimplemented.
Result<NeatTensor> wrap_dmabuf_image(const DmaBufImage& image, DmaBufImportOptions options = {});

/// A dense tensor over an imported dma-buf fd.
Result<NeatTensor> wrap_dmabuf(int fd, DType dtype, DimsRef shape, DimsRef strides,
                               std::int64_t byte_offset = 0, DmaBufImportOptions options = {});

/// Describes an image tensor that lives in fd-backed storage (DMA-BUF, memfd,
/// shm) for another API, with duplicated fds. FailedPrecondition for storage
/// without an fd (with the fix), or for pixels that are not packed in rows
/// (a transposed or strided-column view: pack it first with contiguous()).
Result<DmaBufExport> export_dmabuf_image(const NeatTensor& image);

}  // namespace neat

// Storage: the abstract owner of a tensor's bytes, which every backend
// (heap, external, cv::Mat, GStreamer, shm, DMA-BUF, GL) derives from; and
// BufferIdentity, a stable 64-bit id plus a weak liveness token.
//
// Ownership: tensors and mappings share a Storage through
// std::shared_ptr<Storage>. A Storage held by exactly one handle may donate its
// bytes to a writer (see NeatTensor::make_writable).
// Threading: a Storage is thread-safe for concurrent map()/unmap(); its
// identity and metadata are immutable.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "neat/contract/device.hpp"
#include "neat/contract/error.hpp"

namespace neat {

enum class MapMode : std::uint8_t {
  Read = 1,
  Write = 2,
  ReadWrite = 3,
};
constexpr bool has_write(MapMode m) noexcept {
  return (static_cast<int>(m) & 2) != 0;
}
std::string_view to_string(MapMode m) noexcept;

/// A stable key for a buffer: caches key on id() and test alive() to find stale
/// entries. Views of one storage share its identity. Holding a BufferIdentity
/// never keeps the bytes alive and never grants access to them.
class BufferIdentity {
 public:
  BufferIdentity() = default;
  std::uint64_t id() const noexcept { return id_; }
  /// True while some tensor, mapping or view still holds the storage.
  bool alive() const noexcept { return !token_.expired(); }
  friend bool operator==(const BufferIdentity& a, const BufferIdentity& b) noexcept {
    return a.id_ == b.id_;
  }

 private:
  friend class Storage;
  BufferIdentity(std::uint64_t id, std::weak_ptr<const void> token)
      : id_(id), token_(std::move(token)) {}
  std::uint64_t id_ = 0;
  std::weak_ptr<const void> token_;
};

/// Base class of every backend. Backends construct through std::make_shared
/// (or allocate_shared) so that identity() can hand out a liveness token.
class Storage : public std::enable_shared_from_this<Storage> {
 public:
  virtual ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  StorageKind kind() const noexcept { return kind_; }
  Device device() const noexcept { return device_; }
  /// Bytes addressable from the base returned by map().
  std::int64_t size_bytes() const noexcept { return size_; }
  /// Read-only storage can never be written through, even when held alone.
  bool read_only() const noexcept { return read_only_; }
  /// Whether map() works at all (false for GL textures).
  virtual bool mappable() const noexcept { return true; }
  /// Whether the bytes may be handed to a writer when this Storage object is
  /// held by one handle alone. False when something outside NeatTensor may
  /// still read them (external memory not declared exclusive, a cv::Mat
  /// whose other headers are alive, a non-writable GstBuffer).
  virtual bool donatable() const noexcept { return !read_only_; }
  /// "heap 6220800 B" etc., for messages and traces.
  virtual std::string describe() const;
  /// The file descriptor behind fd-backed storage (shm, memfd, DMA-BUF), or
  /// -1. Borrowed: it stays owned by the storage (see neat::export_fd).
  virtual int native_fd() const noexcept { return -1; }
  /// Copies all size_bytes() bytes into host memory at dst (dst.size() ==
  /// size_bytes()), for device storage that cannot be mapped (GL). Called by
  /// NeatTensor::cpu() inside the copy gate; never call it to bypass the gate.
  /// Default: Unimplemented, naming the storage.
  virtual Status download(std::span<std::byte> dst);
  /// Called when the fd is handed out of the process: the bytes are shared
  /// from then on and the storage must stop being donatable.
  virtual void note_exported() const noexcept {}

  std::uint64_t id() const noexcept { return id_; }
  BufferIdentity identity() const { return BufferIdentity(id_, weak_from_this()); }

  /// Maps the whole storage and returns its base address. O(1) and
  /// allocation-free for CPU-resident backends. Each successful map() must be
  /// paired with one unmap() of the same mode (Mapping does this).
  Result<std::byte*> map(MapMode mode) {
    if (resident_base_ != nullptr) return resident_base_;
    return map_slow(mode);
  }
  void unmap(MapMode mode) noexcept {
    if (resident_base_ == nullptr) unmap_slow(mode);
  }

 protected:
  /// resident_base: the CPU address of the bytes when they are always
  /// mapped (heap, external), nullptr for backends that map on demand.
  Storage(StorageKind kind, Device device, std::int64_t size_bytes, bool read_only,
          std::byte* resident_base) noexcept;
  /// As above with an identity the backend derives itself (fd-backed storage:
  /// from device, inode and offset, so re-imports of one buffer share it).
  Storage(StorageKind kind, Device device, std::int64_t size_bytes, bool read_only,
          std::byte* resident_base, std::uint64_t id) noexcept;

  /// Called by map() when resident_base is null. Default: an error naming the storage.
  virtual Result<std::byte*> map_slow(MapMode mode);
  virtual void unmap_slow(MapMode mode) noexcept;

 private:
  std::byte* resident_base_;
  std::int64_t size_;
  std::uint64_t id_;
  StorageKind kind_;
  Device device_;
  bool read_only_;
};

/// Next process-unique buffer id (never 0). Backends that derive identity
/// from the outside world (fd inode) may use their own ids instead.
std::uint64_t next_buffer_id() noexcept;

}  // namespace neat

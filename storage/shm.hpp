// Shared-memory storage: tensors on a memfd (sealable) or a POSIX shm object,
// mapped once (MAP_SHARED) so map() is O(1), with the fd exported to other
// processes and fds from them imported after a size check.
//
// Ownership: a ShmStorage owns its fd (a UniqueFd) and its mapping; both go
// when the last tensor, view or mapping of it goes. export_fd() hands out a
// duplicate the caller owns. Imports duplicate the caller's fd, which the
// caller keeps.
// Threading: ShmStorage is immutable after creation and thread-safe.
// Sharing: once exported (or when imported), another process may read and
// write the bytes at any time; such storage is never donated to a writer
// unless the importer declares it exclusive.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "neat/contract/allocator.hpp"
#include "neat/contract/neat_tensor.hpp"
#include "neat/contract/storage.hpp"
#include "neat/storage/fd.hpp"

namespace neat {

enum class ShmKind : std::uint8_t {
  Memfd,  ///< memfd_create: anonymous, sealable (default)
  Posix,  ///< shm_open under /dev/shm: named, openable by other processes by name
};

struct ShmOptions {
  ShmKind kind = ShmKind::Memfd;
  /// memfd: the name shown in /proc/<pid>/fd. Posix: the object name ("/x");
  /// empty = a unique "/neat-<pid>-<n>", unlinked when the storage goes.
  std::string_view name = {};
  /// memfd: seal the size (F_SEAL_SHRINK | F_SEAL_GROW) so no process can
  /// shrink the file under a mapping (which would SIGBUS readers).
  bool seal = true;
};

struct ShmImportOptions {
  bool read_only = false;  ///< map PROT_READ only; the tensor is read-only
  /// Nothing else reads or writes these bytes: make_writable() may then donate.
  bool exclusive = false;
  /// Refuse a memfd that is not sealed against shrinking (FailedPrecondition).
  bool require_shrink_seal = false;
};

namespace detail {
struct ShmPoolState;
}  // namespace detail

class ShmStorage final : public Storage {
 public:
  /// A new shared object of `bytes` bytes, zero-filled (the kernel zeroes it).
  static Result<std::shared_ptr<ShmStorage>> create(std::int64_t bytes, ShmOptions options = {});
  /// Maps the whole object behind fd (duplicated; the caller keeps fd). The
  /// size is checked with fstat: an empty file is refused here and a file too
  /// small for a tensor is refused by the factory that lays the tensor out,
  /// instead of SIGBUS on first touch.
  static Result<std::shared_ptr<ShmStorage>> import(int fd, ShmImportOptions options = {});
  /// Opens a POSIX shm object by name ("/x") and maps it.
  static Result<std::shared_ptr<ShmStorage>> open_posix(std::string_view name,
                                                        ShmImportOptions options = {});

  ~ShmStorage() override;
  bool donatable() const noexcept override;
  std::string describe() const override;

  int native_fd() const noexcept override { return fd_.get(); }
  void note_exported() const noexcept override { shared_.store(true); }
  const FdIdentity& fd_identity() const noexcept { return identity_; }
  ShmKind shm_kind() const noexcept { return kind_; }
  /// True when the file cannot shrink (memfd with F_SEAL_SHRINK).
  bool shrink_sealed() const noexcept { return shrink_sealed_; }

  struct Private;
  ShmStorage(const Private&, UniqueFd fd, std::byte* base, std::int64_t mapped, std::int64_t size,
             FdIdentity identity, ShmKind kind, bool read_only, bool shared, bool sealed,
             std::string unlink_name);

 private:
  friend class ShmPool;
  std::shared_ptr<detail::ShmPoolState> pool_;  ///< where the object goes back to, if pooled
  UniqueFd fd_;
  std::byte* base_;
  std::int64_t mapped_;
  FdIdentity identity_;
  std::string unlink_name_;
  ShmKind kind_;
  bool shrink_sealed_;
  mutable std::atomic<bool> shared_;
};

/// Allocates tensors on memfd storage (for clone(), allocate(), ... through
/// AllocOptions::allocator). Not pooled: each allocation is a memfd_create +
/// ftruncate + mmap (about 0.9 ms for a 1080p frame here); see ShmPool.
StorageAllocator& shm_allocator() noexcept;

struct ShmPoolConfig {
  int max_cached_buffers = 8;                               ///< memfd objects kept for reuse
  std::int64_t max_cached_bytes = std::int64_t{256} << 20;  ///< bytes kept for reuse
};

struct ShmPoolStats {
  std::uint64_t hits = 0;      ///< allocations served by a kept object
  std::uint64_t misses = 0;    ///< allocations that created a new memfd
  std::uint64_t recycled = 0;  ///< released objects kept for reuse
  /// Released objects closed instead, because they had been exported (a peer
  /// may still map them) or the pool was full.
  std::uint64_t not_recycled = 0;
  std::int64_t cached_buffers = 0;
  std::int64_t cached_bytes = 0;
};

/// Sealed memfd objects, recycled: a released storage that was never exported
/// keeps its fd and its mapping and serves the next allocation of the same
/// page-rounded size, so shareable buffers cost what heap buffers cost in
/// steady state (no memfd_create, ftruncate, mmap or page faults). A storage
/// whose fd went to another process (export_fd, export_dmabuf_image) is never
/// reused: the peer may still read or write it. The cached objects hold fds
/// (one each) until trim() or the pool's end.
/// Threading: thread-safe (a mutex on allocate and release; never on map()).
class ShmPool final : public StorageAllocator {
 public:
  static std::shared_ptr<ShmPool> create(ShmPoolConfig config = {});
  ~ShmPool() override;
  /// A memfd-backed storage of request.bytes (zeroed when asked, and always
  /// when new). Errors as ShmStorage::create.
  Result<std::shared_ptr<Storage>> allocate(const AllocRequest& request) override;
  ShmPoolStats stats() const;
  /// Closes every kept object (their fds and mappings).
  void trim();

 private:
  explicit ShmPool(std::shared_ptr<detail::ShmPoolState> state);
  std::shared_ptr<detail::ShmPoolState> state_;
};

/// A dense tensor over an imported fd. The layout is checked against the
/// file size before anything is touched.
Result<NeatTensor> wrap_shm(int fd, DType dtype, DimsRef shape, DimsRef strides,
                            std::int64_t byte_offset = 0, ShmImportOptions options = {});

/// Process-wide counts for leak checks.
struct ShmStats {
  std::int64_t live_storages = 0;
  std::int64_t live_mapped_bytes = 0;  ///< mapped by live storages (not a ShmPool's kept objects)
};
ShmStats shm_stats() noexcept;

}  // namespace neat

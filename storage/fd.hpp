// File descriptors for fd-backed storage (shm, memfd, DMA-BUF): UniqueFd,
// sole ownership of an fd (closed on destruction), and FdIdentity, what a
// buffer behind an fd is (device, inode, offset), stable across re-imports
// while fd numbers are not.
//
// Ownership: UniqueFd is move-only; release() gives the fd up to the caller.
// Threading: plain values; distinct objects may be used from different threads.
#pragma once

#include <cstdint>
#include <utility>

#include "neat/contract/error.hpp"
#include "neat/contract/neat_tensor.hpp"

namespace neat {

class UniqueFd {
 public:
  UniqueFd() noexcept = default;
  /// Takes ownership of fd (-1 = empty).
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }
  /// Gives the fd to the caller, who must close it.
  [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
  /// Closes the current fd (if any) and owns `fd` instead.
  void reset(int fd = -1) noexcept;

  /// A new descriptor for the same open file (F_DUPFD_CLOEXEC), owned by the
  /// result. ResourceExhausted at the fd limit; InvalidArgument for a bad fd.
  static Result<UniqueFd> duplicate(int fd);

 private:
  int fd_ = -1;
};

/// Which buffer an fd refers to: the file's device and inode plus a byte
/// offset into it. Two imports of one buffer (through different fds, even in
/// different processes) have equal identities.
struct FdIdentity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::int64_t offset = 0;
  friend bool operator==(const FdIdentity&, const FdIdentity&) = default;
};

/// fstat()s fd. InvalidArgument for a bad fd.
Result<FdIdentity> fd_identity(int fd, std::int64_t offset = 0);

/// The BufferIdentity id of fd-backed storage: a 64-bit mix of the identity
/// with the top bit set, so it never equals a counter id from next_buffer_id().
std::uint64_t fd_buffer_id(const FdIdentity& identity) noexcept;

/// Size of the object behind fd: st_size for files (memfd, shm), lseek(SEEK_END)
/// for DMA-BUFs (whose st_size is 0).
Result<std::int64_t> fd_size(int fd);

/// The fd behind a tensor's storage (shm, memfd, DMA-BUF), duplicated for
/// the caller, who owns it. The storage counts as shared from then on (never
/// donated to a writer). FailedPrecondition for storage without an fd, with the
/// fix. A composite whose planes live in several storages exports plane by
/// plane: use tensor.plane(role) first.
Result<UniqueFd> export_fd(const NeatTensor& tensor);

}  // namespace neat

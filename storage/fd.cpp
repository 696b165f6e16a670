#include "neat/storage/fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace neat {

void UniqueFd::reset(int fd) noexcept {
  if (fd_ >= 0 && fd_ != fd) ::close(fd_);  // close() errors leave nothing to recover
  fd_ = fd;
}

Result<UniqueFd> UniqueFd::duplicate(int fd) {
  if (fd < 0) return invalid_argument("duplicate fd " + std::to_string(fd) + ": not a descriptor");
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0)
    return os_error("duplicate fd " + std::to_string(fd) + " (fcntl F_DUPFD_CLOEXEC)", errno);
  return UniqueFd(copy);
}

Result<FdIdentity> fd_identity(int fd, std::int64_t offset) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return os_error("fstat of fd " + std::to_string(fd), errno);
  return FdIdentity{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
                    offset};
}

std::uint64_t fd_buffer_id(const FdIdentity& identity) noexcept {
  auto mix = [](std::uint64_t x) {  // splitmix64 finaliser
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  };
  std::uint64_t h = mix(identity.device);
  h = mix(h ^ identity.inode);
  h = mix(h ^ static_cast<std::uint64_t>(identity.offset));
  return h | (std::uint64_t{1} << 63);
}

Result<std::int64_t> fd_size(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return os_error("fstat of fd " + std::to_string(fd), errno);
  if (S_ISREG(st.st_mode) && st.st_size > 0) return static_cast<std::int64_t>(st.st_size);
  const off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0) return os_error("size of fd " + std::to_string(fd) + " (lseek SEEK_END)", errno);
  ::lseek(fd, 0, SEEK_SET);
  return static_cast<std::int64_t>(end);
}

Result<UniqueFd> export_fd(const NeatTensor& tensor) {
  if (!tensor.defined()) return failed_precondition("export_fd: the tensor is undefined");
  const Storage& first = *tensor.storage(0);
  for (int i = 1; i < tensor.storage_count(); ++i) {
    if (tensor.storage(i)->native_fd() != first.native_fd()) {
      return failed_precondition("export_fd: the planes of " + tensor.to_string() + " live in " +
                                 std::to_string(tensor.storage_count()) +
                                 " storages; export each with export_fd(tensor.plane(role))");
    }
  }
  if (first.native_fd() < 0) {
    return failed_precondition(
        "export_fd: " + tensor.to_string() + " lives in " + first.describe() +
        ", which has no file descriptor; allocate it with shm_allocator() or auto_allocator(), "
        "or clone it there explicitly (clone({.allocator = &shm_allocator()}))");
  }
  NEAT_ASSIGN_OR_RETURN(UniqueFd fd, UniqueFd::duplicate(first.native_fd()));
  for (int i = 0; i < tensor.storage_count(); ++i)
    tensor.storage(i)->note_exported();
  return fd;
}

}  // namespace neat

// Helpers for fd-backed storage tests: count open fds, make memfds.
#pragma once

#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace neat::testing {

/// Open descriptors of this process (entries of /proc/self/fd, minus the
/// directory's own).
inline int open_fd_count() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n - 1;
}

/// A memfd of `bytes` bytes (not sealed), or -1.
inline int make_memfd(std::int64_t bytes, const char* name = "neat-test") {
  const int fd = ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (::ftruncate(fd, bytes) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace neat::testing

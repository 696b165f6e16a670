// Helpers for fd-backed storage tests: count open fds, make memfds.
#pragma once

#include <dirent.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
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

namespace detail {
struct FdMessage {
  char byte = 'x';
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{&byte, 1};
  msghdr msg{};
  FdMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
};
}  // namespace detail

/// Sends fd over a unix socket (SCM_RIGHTS). True on success.
inline bool send_fd(int socket, int fd) {
  detail::FdMessage m;
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  return ::sendmsg(socket, &m.msg, 0) == 1;
}

/// Receives an fd sent with send_fd(), or -1.
inline int receive_fd(int socket) {
  detail::FdMessage m;
  if (::recvmsg(socket, &m.msg, 0) != 1) return -1;
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  if (c == nullptr || c->cmsg_type != SCM_RIGHTS) return -1;
  int fd;
  std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

}  // namespace neat::testing

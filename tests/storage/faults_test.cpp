// System-call faults in the fd-backed storage backends: every call the
// backends make (memfd_create, shm_open, open, ftruncate, fcntl, fstat, lseek,
// mmap, ioctl) fails in turn, the 1st, then the 2nd, ... until an operation
// runs without meeting the fault. Each time the operation either copes or
// returns a typed error (never Internal, never a crash), and nothing leaks:
// the fd count and the backends' live counts are back at their baseline.
//
// The calls are interposed by this test program (definitions here win over
// libc's for libneat's calls) and forwarded to the next definition otherwise.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <functional>
#include <string>

#include "neat/contract/mapping.hpp"
#include "neat/storage/auto_allocator.hpp"
#include "neat/storage/dmabuf.hpp"
#include "neat/storage/shm.hpp"
#include "support/fakes.hpp"
#include "support/fds.hpp"

namespace fault {

std::atomic<bool> enabled{false};
std::atomic<int> countdown{0};  // fail the call that brings this to 0
std::atomic<int> calls{0};
const char* failed_call = nullptr;

// True when this call must fail (sets errno).
bool hit(const char* name, int err) {
  if (!enabled.load(std::memory_order_relaxed)) return false;
  calls.fetch_add(1);
  if (countdown.fetch_sub(1) == 1) {
    failed_call = name;
    errno = err;
    return true;
  }
  return false;
}

template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

}  // namespace fault

extern "C" {

int memfd_create(const char* name, unsigned flags) {
  if (fault::hit("memfd_create", EMFILE)) return -1;
  static auto real = fault::next<int (*)(const char*, unsigned)>("memfd_create");
  return real(name, flags);
}

int shm_open(const char* name, int flags, mode_t mode) {
  if (fault::hit("shm_open", ENFILE)) return -1;
  static auto real = fault::next<int (*)(const char*, int, mode_t)>("shm_open");
  return real(name, flags, mode);
}

int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = (flags & O_CREAT) != 0 ? va_arg(ap, mode_t) : 0;
  va_end(ap);
  if (fault::hit("open", EACCES)) return -1;
  static auto real = fault::next<int (*)(const char*, int, ...)>("open");
  return real(path, flags, mode);
}

int ftruncate(int fd, off_t length) {
  if (fault::hit("ftruncate", ENOSPC)) return -1;
  static auto real = fault::next<int (*)(int, off_t)>("ftruncate");
  return real(fd, length);
}

int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  const long arg = va_arg(ap, long);
  va_end(ap);
  if (fault::hit("fcntl", cmd == F_DUPFD_CLOEXEC ? EMFILE : EINVAL)) return -1;
  static auto real = fault::next<int (*)(int, int, ...)>("fcntl");
  return real(fd, cmd, arg);
}
int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  const long arg = va_arg(ap, long);
  va_end(ap);
  return fcntl(fd, cmd, arg);
}

int fstat(int fd, struct stat* st) {
  if (fault::hit("fstat", EIO)) return -1;
  static auto real = fault::next<int (*)(int, struct stat*)>("fstat");
  return real(fd, st);
}
int fstat64(int fd, struct stat64* st) {
  if (fault::hit("fstat", EIO)) return -1;
  static auto real = fault::next<int (*)(int, struct stat64*)>("fstat64");
  return real(fd, st);
}

off_t lseek(int fd, off_t offset, int whence) {
  if (fault::hit("lseek", ESPIPE)) return -1;
  static auto real = fault::next<off_t (*)(int, off_t, int)>("lseek");
  return real(fd, offset, whence);
}

void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  // Only file mappings: allocators (malloc, the sanitizers) map anonymous memory.
  if (fd >= 0 && fault::hit("mmap", ENOMEM)) return MAP_FAILED;
  static auto real = fault::next<void* (*)(void*, size_t, int, int, int, off_t)>("mmap");
  return real(addr, len, prot, flags, fd, off);
}
void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mmap(addr, len, prot, flags, fd, off);
}

int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  if (fault::hit("ioctl", EIO)) return -1;
  static auto real = fault::next<int (*)(int, unsigned long, ...)>("ioctl");
  return real(fd, request, arg);
}

}  // extern "C"

namespace neat {
namespace {

struct Operation {
  const char* name;
  std::function<Status()> run;
};

Status touch(const NeatTensor& t) {
  NEAT_ASSIGN_OR_RETURN(Mapping m, t.map());
  volatile std::byte b = m.data() != nullptr ? m.data()[0] : *m.plane_data(PlaneRole::Y).value();
  (void)b;
  return {};
}

TEST(SyscallFaults, EveryCallFailsInTurnWithATypedErrorAndNoLeak) {
  // Prepared before any fault is armed.
  const int memfd = testing::make_memfd(64 * 48 * 3 / 2);
  ASSERT_GE(memfd, 0);
  auto shm_tensor = NeatTensor::allocate(DType::U8, Dims{4096}, {.allocator = &shm_allocator()});
  NEAT_ASSERT_OK(shm_tensor);
  const DmaBufImage nv12{*drm_fourcc(PixelFormat::NV12),
                         kDrmFormatModLinear,
                         64,
                         48,
                         2,
                         {DmaBufPlane{memfd, 0, 64}, DmaBufPlane{memfd, 64 * 48, 64}}};

  const Operation ops[] = {
      {"memfd create + map",
       []() -> Status {
         NEAT_ASSIGN_OR_RETURN(auto s, ShmStorage::create(8192));
         return Status();
       }},
      {"POSIX shm create",
       []() -> Status {
         NEAT_ASSIGN_OR_RETURN(auto s, ShmStorage::create(8192, {.kind = ShmKind::Posix}));
         return Status();
       }},
      {"shm import",
       [&]() -> Status {
         NEAT_ASSIGN_OR_RETURN(NeatTensor t, wrap_shm(memfd, DType::U8, Dims{100}, Dims{1}));
         return touch(t);
       }},
      {"export_fd",
       [&]() -> Status {
         NEAT_ASSIGN_OR_RETURN(UniqueFd fd, export_fd(*shm_tensor));
         return Status();
       }},
      {"dmabuf import + map",
       [&]() -> Status {
         NEAT_ASSIGN_OR_RETURN(NeatTensor t, wrap_dmabuf(memfd, DType::U8, Dims{100}, Dims{1}));
         return touch(t);
       }},
      {"dmabuf frame import + export",
       [&]() -> Status {
         NEAT_ASSIGN_OR_RETURN(NeatTensor t, wrap_dmabuf_image(nv12));
         NEAT_RETURN_IF_ERROR(touch(t));
         NEAT_ASSIGN_OR_RETURN(DmaBufExport e, export_dmabuf_image(t));
         return Status();
       }},
      {"pooled shm allocation, reuse",
       []() -> Status {
         auto pool = ShmPool::create();
         for (int i = 0; i < 2; ++i) {  // the second one reuses the first's object
           NEAT_ASSIGN_OR_RETURN(NeatTensor t, NeatTensor::allocate(DType::U8, Dims{4096},
                                                                    {.allocator = pool.get()}));
           NEAT_RETURN_IF_ERROR(touch(t));
         }
         return Status();
       }},
      {"auto allocation",
       []() -> Status {
         AutoAllocator chain({.dma_heap = "/nonexistent/dma_heap"});
         NEAT_ASSIGN_OR_RETURN(NeatTensor t,
                               NeatTensor::allocate(DType::U8, Dims{4096}, {.allocator = &chain}));
         return touch(t);
       }},
  };
  for (const Operation& op : ops) {
    int faults = 0;
    for (int k = 1; k < 64; ++k) {
      const int fds = testing::open_fd_count();
      const ShmStats shm = shm_stats();
      const DmaBufStats dma = dmabuf_stats();
      fault::failed_call = nullptr;
      fault::calls = 0;
      fault::countdown = k;
      fault::enabled = true;
      Status st = op.run();
      fault::enabled = false;
      const bool reached = fault::failed_call != nullptr;
      SCOPED_TRACE(std::string(op.name) + ", call " + std::to_string(k) +
                   (reached ? std::string(" (") + fault::failed_call + ") failed" : ""));
      if (!st.ok()) {
        EXPECT_TRUE(reached) << "an error without a fault: " << st.error().to_string();
        EXPECT_NE(st.error().code(), ErrorCode::Internal) << st.error().to_string();
        EXPECT_FALSE(st.error().message().empty());
      }
      EXPECT_EQ(testing::open_fd_count(), fds) << "an fd leaked";
      EXPECT_EQ(shm_stats().live_storages, shm.live_storages);
      EXPECT_EQ(shm_stats().live_mapped_bytes, shm.live_mapped_bytes);
      EXPECT_EQ(dmabuf_stats().live_storages, dma.live_storages);
      EXPECT_EQ(dmabuf_stats().live_cpu_mappings, dma.live_cpu_mappings);
      EXPECT_EQ(dmabuf_stats().open_maps, dma.open_maps);
      if (!reached) break;  // the operation made fewer than k calls: all were tried
      ++faults;
    }
    EXPECT_GT(faults, 0) << op.name << " makes no interposed call";
    std::printf("%-30s %d calls failed in turn\n", op.name, faults);
  }
  ::close(memfd);
}

}  // namespace
}  // namespace neat

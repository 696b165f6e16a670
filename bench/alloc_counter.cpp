// glibc exports its allocator under __libc_* names; defining the public names
// in the executable interposes them for every library in the process.
#include "alloc_counter.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);
}

namespace {
std::atomic<std::uint64_t> g_allocations{0};
inline void count() noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

std::uint64_t neat::bench::allocation_count() noexcept {
  return g_allocations.load(std::memory_order_relaxed);
}

extern "C" {
void* malloc(std::size_t n) {
  count();
  return __libc_malloc(n);
}
void* calloc(std::size_t a, std::size_t b) {
  count();
  return __libc_calloc(a, b);
}
void* realloc(void* p, std::size_t n) {
  count();
  return __libc_realloc(p, n);
}
void free(void* p) {
  __libc_free(p);
}
void* memalign(std::size_t align, std::size_t n) {
  count();
  return __libc_memalign(align, n);
}
void* aligned_alloc(std::size_t align, std::size_t n) {
  count();
  return __libc_memalign(align, n);
}
int posix_memalign(void** out, std::size_t align, std::size_t n) {
  count();
  void* p = __libc_memalign(align, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}

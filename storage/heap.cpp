#include "neat/storage/heap.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "internal/block_cache.hpp"

namespace neat {

namespace {

constexpr std::int64_t kAlign = 64;
constexpr std::int64_t kPage = 4096;
constexpr std::int64_t kMmapThreshold = 256 * 1024;

std::int64_t rounded_capacity(std::int64_t bytes) {
  const std::int64_t unit = bytes >= kPage ? kPage : kAlign;
  const std::int64_t b = bytes == 0 ? unit : bytes;
  return (b + unit - 1) / unit * unit;
}

constexpr std::int64_t kHuge = std::int64_t{2} << 20;

// Fresh memory; `zeroed` reports whether it is known to be zero already.
// Frame-sized buffers (>= 2 MiB) are 2 MiB aligned and advised for
// transparent huge pages: fewer TLB misses in memory-bound pixel kernels.
std::byte* system_alloc(std::int64_t capacity, bool* zeroed) {
  if (capacity >= kHuge) {
    const auto span = static_cast<std::size_t>(capacity + kHuge);
    void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *zeroed = true;
    if (raw == MAP_FAILED) return nullptr;
    // Keep [aligned, aligned + capacity); return the slack on both sides.
    const auto base = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned =
        (base + static_cast<std::uintptr_t>(kHuge) - 1) & ~(static_cast<std::uintptr_t>(kHuge) - 1);
    if (aligned > base) ::munmap(raw, aligned - base);
    const std::uintptr_t end = aligned + static_cast<std::uintptr_t>(capacity);
    if (base + span > end) ::munmap(reinterpret_cast<void*>(end), base + span - end);
    ::madvise(reinterpret_cast<void*>(aligned), static_cast<std::size_t>(capacity), MADV_HUGEPAGE);
    return reinterpret_cast<std::byte*>(aligned);
  }
  if (capacity >= kMmapThreshold) {
    void* p = ::mmap(nullptr, static_cast<std::size_t>(capacity), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *zeroed = true;
    return p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
  }
  void* p = nullptr;
  *zeroed = false;
  if (::posix_memalign(&p, kAlign, static_cast<std::size_t>(capacity)) != 0) return nullptr;
  return static_cast<std::byte*>(p);
}

void system_free(std::byte* p, std::int64_t capacity) {
  if (capacity >= kMmapThreshold) {
    ::munmap(p, static_cast<std::size_t>(capacity));
  } else {
    std::free(p);
  }
}

}  // namespace

struct HeapPool::State {
  explicit State(HeapPoolConfig c) : config(c) {
    free_buffers.reserve(static_cast<std::size_t>(c.max_cached_buffers));
    if (c.prefill_buffers > 1) prefilled_sizes.reserve(8);
  }
  ~State() {
    for (auto& b : free_buffers)
      system_free(b.ptr, b.capacity);
  }

  struct Buffer {
    std::byte* ptr;
    std::int64_t capacity;
  };

  // Called by HeapStorage's destructor.
  void release(std::byte* p, std::int64_t capacity) noexcept {
    std::unique_lock lock(mutex);
    in_use_buffers -= 1;
    in_use_bytes -= capacity;
    if (static_cast<int>(free_buffers.size()) < config.max_cached_buffers &&
        cached_bytes + capacity <= config.max_cached_bytes) {
      free_buffers.push_back(Buffer{p, capacity});  // no allocation: capacity reserved
      cached_bytes += capacity;
      return;
    }
    evictions += 1;
    lock.unlock();
    system_free(p, capacity);
  }

  HeapPoolConfig config;
  mutable std::mutex mutex;
  std::int64_t peak_in_use = 0;
  std::vector<Buffer> free_buffers;
  // Storage-object blocks: one per storage alive at once (prefilled with the buffers).
  detail::BlockCache blocks{static_cast<std::size_t>(config.max_cached_buffers) + 16,
                            static_cast<std::size_t>(std::max(config.prefill_buffers - 1, 0))};
  std::int64_t cached_bytes = 0;
  std::int64_t in_use_buffers = 0;
  std::int64_t in_use_bytes = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
  std::uint64_t prefilled = 0;
  std::vector<std::int64_t> prefilled_sizes;  ///< capacities prefilled once already
};

namespace {

class HeapStorage final : public Storage {
 public:
  HeapStorage(std::shared_ptr<HeapPool::State> pool, std::byte* p, std::int64_t bytes,
              std::int64_t capacity) noexcept
      : Storage(StorageKind::Heap, kCpu, bytes, false, p),
        pool_(std::move(pool)),
        ptr_(p),
        capacity_(capacity) {}
  ~HeapStorage() override { pool_->release(ptr_, capacity_); }

 private:
  std::shared_ptr<HeapPool::State> pool_;
  std::byte* ptr_;
  std::int64_t capacity_;
};

}  // namespace

std::shared_ptr<HeapPool> HeapPool::create(HeapPoolConfig config) {
  if (config.max_cached_buffers < 0) config.max_cached_buffers = 0;
  if (config.max_cached_bytes < 0) config.max_cached_bytes = 0;
  auto state = std::make_shared<State>(config);
  return std::shared_ptr<HeapPool>(new HeapPool(std::move(state)));
}

HeapPool::HeapPool(std::shared_ptr<State> state) : state_(std::move(state)) {}
HeapPool::~HeapPool() = default;

Result<std::shared_ptr<Storage>> HeapPool::allocate(const AllocRequest& request) {
  if (request.bytes < 0) {
    return invalid_argument("heap allocation of " + std::to_string(request.bytes) +
                            " bytes: the size is negative");
  }
  if (request.bytes > kMaxHeapAllocation) {
    return resource_exhausted("heap allocation of " + std::to_string(request.bytes) +
                              " bytes refused: above the " + std::to_string(kMaxHeapAllocation) +
                              "-byte limit");
  }
  const std::int64_t capacity = rounded_capacity(request.bytes);
  std::byte* p = nullptr;
  bool zeroed = false;
  {
    std::lock_guard lock(state_->mutex);
    // Most recently released first (LIFO): its bytes are the likeliest to be in cache.
    auto& fb = state_->free_buffers;
    for (std::size_t i = fb.size(); i-- > 0;) {
      if (fb[i].capacity == capacity) {
        p = fb[i].ptr;
        fb.erase(fb.begin() + static_cast<std::ptrdiff_t>(i));  // keeps the order; no allocation
        state_->cached_bytes -= capacity;
        state_->hits += 1;
        break;
      }
    }
    if (p == nullptr) state_->misses += 1;
    state_->in_use_buffers += 1;
    state_->in_use_bytes += capacity;
    state_->peak_in_use = std::max(state_->peak_in_use, state_->in_use_buffers);
  }
  if (p == nullptr && state_->config.prefill_buffers > 1) prefill(capacity);
  if (p == nullptr) {
    p = system_alloc(capacity, &zeroed);
    if (p == nullptr) {
      std::lock_guard lock(state_->mutex);
      state_->in_use_buffers -= 1;
      state_->in_use_bytes -= capacity;
      return resource_exhausted("heap allocation of " + std::to_string(request.bytes) +
                                " bytes failed: the system is out of memory");
    }
  }
  if (request.zero_fill && !zeroed) std::memset(p, 0, static_cast<std::size_t>(request.bytes));
  try {
    return std::shared_ptr<Storage>(
        std::allocate_shared<HeapStorage>(detail::CachedBlockAllocator<HeapStorage, State>(state_),
                                          state_, p, request.bytes, capacity));
  } catch (const std::bad_alloc&) {
    state_->release(p, capacity);
    return resource_exhausted("heap allocation of the storage object failed");
  }
}

// The first miss for `capacity`: allocates prefill_buffers - 1 more buffers of
// it, faults their pages in (zeroes them) and caches them. Best effort: stops
// at the cache's limits or when the system refuses memory (the request that
// missed still gets its own buffer, or its own error).
void HeapPool::prefill(std::int64_t capacity) {
  int extra = 0;
  {
    std::lock_guard lock(state_->mutex);
    auto& seen = state_->prefilled_sizes;
    if (std::find(seen.begin(), seen.end(), capacity) != seen.end()) return;
    seen.push_back(capacity);  // a miss path: may allocate once per distinct size
    const std::int64_t room_buffers =
        state_->config.max_cached_buffers - static_cast<std::int64_t>(state_->free_buffers.size());
    const std::int64_t room_bytes =
        (state_->config.max_cached_bytes - state_->cached_bytes) / capacity;
    extra = static_cast<int>(
        std::min<std::int64_t>({state_->config.prefill_buffers - 1, room_buffers, room_bytes}));
  }
  for (int k = 0; k < extra; ++k) {
    bool zeroed = false;
    std::byte* p = system_alloc(capacity, &zeroed);
    if (p == nullptr) return;
    std::memset(p, 0, static_cast<std::size_t>(capacity));  // fault the pages in now
    std::unique_lock lock(state_->mutex);
    if (static_cast<int>(state_->free_buffers.size()) >= state_->config.max_cached_buffers ||
        state_->cached_bytes + capacity > state_->config.max_cached_bytes) {
      lock.unlock();
      system_free(p, capacity);
      return;
    }
    state_->free_buffers.push_back(State::Buffer{p, capacity});
    state_->cached_bytes += capacity;
    state_->prefilled += 1;
  }
}

HeapPoolStats HeapPool::stats() const {
  std::lock_guard lock(state_->mutex);
  HeapPoolStats s;
  s.hits = state_->hits;
  s.misses = state_->misses;
  s.evictions = state_->evictions;
  s.in_use_buffers = state_->in_use_buffers;
  s.in_use_bytes = state_->in_use_bytes;
  s.cached_buffers = static_cast<std::int64_t>(state_->free_buffers.size());
  s.cached_bytes = state_->cached_bytes;
  s.prefilled = state_->prefilled;
  s.peak_in_use_buffers = state_->peak_in_use;
  return s;
}

void HeapPool::trim() {
  std::vector<State::Buffer> drop;
  {
    std::lock_guard lock(state_->mutex);
    drop.swap(state_->free_buffers);
    state_->free_buffers.reserve(static_cast<std::size_t>(state_->config.max_cached_buffers));
    state_->cached_bytes = 0;
  }
  for (auto& b : drop)
    system_free(b.ptr, b.capacity);
}

HeapPool& default_heap_pool() noexcept {
  static const std::shared_ptr<HeapPool> pool = HeapPool::create();
  return *pool;
}

StorageAllocator& default_allocator() noexcept {
  return default_heap_pool();
}

}  // namespace neat

// libtorch's CPU memory, kept between forwards.
//
// Torch's default CPU allocator gives every tensor's block back to the C
// library when the tensor dies, and glibc returns large blocks to the system
// (munmap, or a heap trim). A forward allocates its activations afresh, so
// each frame faults its whole working set in again: about 3,000 page faults
// per yolov8n frame at 640x640, 10-13% of the forward on 2 cores. The block
// cache is installed as libtorch's CPU allocator (c10::SetCPUAllocator, the
// extension point torch gives for this) when the first TorchScript model
// loads: a freed block of 64 KiB or more is kept under its size (rounded up
// to 4 KiB) and handed to the next allocation of that size, up to a limit of
// free bytes held. Smaller blocks go straight to the C library, which keeps
// them in its arenas without faults.
//
// Thread-safe: torch allocates on the model's thread and its pool, and an
// output's block dies wherever its NeatTensor does. One mutex guards the
// size classes; it is taken once per large allocation or free (tens per
// forward), as glibc's own arena locks are.

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "neat/kernels/internal/model_engine.hpp"

namespace neat {
namespace {

constexpr std::size_t kAlignment = 64;         // what torch asks of CPU memory
constexpr std::size_t kHeaderBytes = 64;       // keeps the data 64-byte aligned
constexpr std::size_t kMinCached = 64 * 1024;  // smaller blocks: the C library's arenas
constexpr std::size_t kPage = 4096;
constexpr std::size_t kClasses = 256;  // distinct sizes held at once

struct Header {
  std::size_t bytes;  // the block's size class (its usable bytes)
  Header* next;       // while free: the next free block of the class
};
static_assert(sizeof(Header) <= kHeaderBytes);

std::byte* data_of(Header* h) {
  return reinterpret_cast<std::byte*>(h) + kHeaderBytes;
}
Header* header_of(void* data) {
  return reinterpret_cast<Header*>(static_cast<std::byte*>(data) - kHeaderBytes);
}

// The free blocks, by size class, and what they count. One per process.
class Shelves {
 public:
  static Shelves& instance() {
    static auto* shelves = new Shelves();  // never destroyed: blocks outlive statics
    return *shelves;
  }

  // A held block of `bytes` (>= kMinCached), or null: the caller asks the system.
  Header* take(std::size_t bytes) {
    const std::lock_guard lock(mutex_);
    if (Class* c = find(bytes); c != nullptr && c->head != nullptr) {
      Header* h = c->head;
      c->head = h->next;
      held_ -= static_cast<std::int64_t>(bytes);
      ++reused_;
      return h;
    }
    ++from_system_;
    return nullptr;
  }

  // Holds a freed block for reuse, when the limit and the class table allow.
  bool keep(Header* h) {
    const std::lock_guard lock(mutex_);
    if (held_ + static_cast<std::int64_t>(h->bytes) > limit_) {
      ++released_;
      return false;
    }
    Class* c = find(h->bytes);
    if (c == nullptr) {
      c = vacant_class();
      if (c == nullptr) {
        ++released_;
        return false;
      }
      c->bytes = h->bytes;
    }
    h->next = c->head;
    c->head = h;
    held_ += static_cast<std::int64_t>(h->bytes);
    return true;
  }

  // Sets the limit; gives back whole classes until what is held fits.
  void set_limit(std::int64_t bytes) { free_blocks(trim(bytes, bytes)); }
  // Gives back everything held, the limit unchanged (out of memory).
  void drop_all() {
    std::int64_t limit = 0;
    {
      const std::lock_guard lock(mutex_);
      limit = limit_;
    }
    free_blocks(trim(0, limit));
  }

  TorchBlockCacheStats stats() {
    const std::lock_guard lock(mutex_);
    TorchBlockCacheStats s;
    s.limit_bytes = limit_;
    s.held_bytes = held_;
    s.reused = reused_;
    s.from_system = from_system_;
    s.released = released_;
    return s;
  }

 private:
  struct Class {
    std::size_t bytes = 0;
    Header* head = nullptr;
  };
  using Drop = std::array<Header*, kClasses>;

  // Unlinks classes until at most `fit` bytes are held, then sets the limit.
  Drop trim(std::int64_t fit, std::int64_t limit) {
    Drop drop{};
    const std::lock_guard lock(mutex_);
    for (std::size_t k = 0; k < used_ && held_ > fit; ++k) {
      Class& c = classes_[k];
      for (Header* h = c.head; h != nullptr; h = h->next) {
        held_ -= static_cast<std::int64_t>(c.bytes);
        ++released_;
      }
      drop[k] = c.head;
      c.head = nullptr;
    }
    limit_ = limit;
    return drop;
  }
  static void free_blocks(const Drop& drop) {
    for (Header* h : drop) {
      while (h != nullptr) {
        Header* next = h->next;
        std::free(h);
        h = next;
      }
    }
  }

  Class* find(std::size_t bytes) {
    for (std::size_t k = 0; k < used_; ++k)
      if (classes_[k].bytes == bytes) return &classes_[k];
    return nullptr;
  }
  // A class that holds nothing now (its size may go to another), else a new one.
  Class* vacant_class() {
    for (std::size_t k = 0; k < used_; ++k)
      if (classes_[k].head == nullptr) return &classes_[k];
    return used_ < kClasses ? &classes_[used_++] : nullptr;
  }

  std::mutex mutex_;
  std::array<Class, kClasses> classes_{};
  std::size_t used_ = 0;
  std::int64_t held_ = 0;
  std::int64_t reused_ = 0;
  std::int64_t from_system_ = 0;
  std::int64_t released_ = 0;
  std::int64_t limit_ = kDefaultTorchBlockCacheBytes;
};

// libtorch's CPU allocator (stateless: the shelves hold the state).
class BlockCache final : public c10::Allocator {
 public:
  c10::DataPtr allocate(std::size_t n) const override {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (n == 0) return {nullptr, nullptr, &release, cpu};
    const std::size_t bytes = n < kMinCached ? n : (n + kPage - 1) / kPage * kPage;
    Header* h = bytes >= kMinCached ? Shelves::instance().take(bytes) : nullptr;
    if (h == nullptr) {
      h = system_block(bytes);
      h->bytes = bytes;
    }
    h->next = nullptr;
    // torch's raw_allocate() needs the context to be the data pointer
    return {data_of(h), data_of(h), &release, cpu};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  static BlockCache& instance() {
    static auto* cache = new BlockCache();  // never destroyed, like the shelves
    return *cache;
  }

 private:
  static void release(void* data) {
    if (data == nullptr) return;
    Header* h = header_of(data);
    if (h->bytes >= kMinCached && Shelves::instance().keep(h)) return;
    std::free(h);
  }

  static Header* system_block(std::size_t bytes) {
    void* p = nullptr;
    if (posix_memalign(&p, kAlignment, bytes + kHeaderBytes) != 0) {
      // Out of memory: what the cache holds goes back, then one more try.
      Shelves::instance().drop_all();
      p = nullptr;
      if (posix_memalign(&p, kAlignment, bytes + kHeaderBytes) != 0) {
        TORCH_CHECK(false, "NeatTensor's libtorch block cache: out of memory allocating ", bytes,
                    " bytes");
      }
    }
    return static_cast<Header*>(p);
  }
};

}  // namespace

namespace torch_plugin {
namespace {
// set_torch_block_cache_limit was called (before or after the install): its
// limit stands, not NEAT_TORCH_BLOCK_CACHE_MIB's.
std::atomic<bool> g_limit_called{false};
}  // namespace

Status install_block_cache() {
  static std::once_flag once;
  static Status outcome;
  std::call_once(once, [] {
    const auto limit = torch_block_cache_limit_from_env(std::getenv("NEAT_TORCH_BLOCK_CACHE_MIB"));
    if (!limit.ok()) {
      outcome = limit.error();
      return;
    }
    if (*limit == 0) return;  // the user keeps torch's allocator
    // A process that installed its own CPU allocator keeps it.
    if (c10::GetCPUAllocator() != c10::GetDefaultCPUAllocator()) return;
    if (!g_limit_called.load()) Shelves::instance().set_limit(*limit);
    c10::SetCPUAllocator(&BlockCache::instance());
  });
  return outcome;
}

TorchBlockCacheStats block_cache_stats() {
  TorchBlockCacheStats s = Shelves::instance().stats();
  s.installed = c10::GetCPUAllocator() == &BlockCache::instance();
  return s;
}

Status set_block_cache_limit(std::int64_t bytes) {
  // libneat checked the sign (kernels/torch_engine.cpp)
  g_limit_called.store(true);
  Shelves::instance().set_limit(bytes);
  return {};
}

}  // namespace torch_plugin
}  // namespace neat

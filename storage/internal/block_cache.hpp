// Internal to the storage backends (not installed): recycles the single
// allocation std::allocate_shared makes for a pooled storage object (its
// control block with the object in it), so a pool in steady state performs
// no heap allocation at all. Used by HeapPool and ShmPool.
//
// Threading: thread-safe (one mutex, taken on take() and give()).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace neat::detail {

class BlockCache {
 public:
  /// Keeps at most `max_blocks` free blocks; on the first request also
  /// allocates `prefill` more (a block per storage the pool will hand out at
  /// once), so that the pool's first frame is its only allocating one.
  BlockCache(std::size_t max_blocks, std::size_t prefill)
      : prefill_(std::min(prefill, max_blocks)) {
    free_.reserve(max_blocks);
  }
  ~BlockCache() {
    for (void* p : free_)
      ::operator delete(p);
  }
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  void* take(std::size_t size) {
    std::size_t extra = 0;
    {
      std::lock_guard lock(mutex_);
      if (size == size_ && !free_.empty()) {
        void* p = free_.back();
        free_.pop_back();
        return p;
      }
      if (size_ == 0) {
        size_ = size;
        extra = prefill_;
      }
    }
    if (extra > 0) {
      std::vector<void*> blocks;
      blocks.reserve(extra);
      for (std::size_t k = 0; k < extra; ++k)
        blocks.push_back(::operator new(size, std::nothrow));
      std::lock_guard lock(mutex_);
      for (void* b : blocks) {
        if (b != nullptr && free_.size() < free_.capacity()) {
          free_.push_back(b);  // within the reserved capacity
        } else if (b != nullptr) {
          ::operator delete(b);
        }
      }
    }
    return ::operator new(size);
  }

  void give(void* p, std::size_t size) noexcept {
    {
      std::lock_guard lock(mutex_);
      if (size == size_ && free_.size() < free_.capacity()) {
        free_.push_back(p);
        return;
      }
    }
    ::operator delete(p);
  }

 private:
  std::mutex mutex_;
  std::vector<void*> free_;
  std::size_t size_ = 0;  // the one block size cached (a pool makes one kind of storage)
  std::size_t prefill_;
};

/// An allocator for std::allocate_shared<T> drawing on `Owner::blocks`. It
/// holds a reference to the owner, so the block goes back after the storage
/// object (and its own reference to the owner) is gone.
template <class T, class Owner>
struct CachedBlockAllocator {
  using value_type = T;
  explicit CachedBlockAllocator(std::shared_ptr<Owner> o) noexcept : owner(std::move(o)) {}
  template <class U>
  CachedBlockAllocator(const CachedBlockAllocator<U, Owner>& o) noexcept  // NOLINT
      : owner(o.owner) {}
  T* allocate(std::size_t n) { return static_cast<T*>(owner->blocks.take(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { owner->blocks.give(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const CachedBlockAllocator<U, Owner>& o) const noexcept {
    return owner == o.owner;
  }
  std::shared_ptr<Owner> owner;
};

}  // namespace neat::detail

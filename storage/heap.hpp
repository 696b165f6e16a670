// Heap storage: 64-byte aligned host memory (optionally not zero-filled),
// handed out by a bounded HeapPool that recycles both the buffers and the
// storage objects, so that a steady-state loop allocating same-sized tensors
// performs no heap allocation. The process default pool is
// neat::default_allocator().
//
// Ownership: a HeapPool is shared (std::shared_ptr); storages it hands out
// keep its state alive, so they may outlive the pool object.
// Threading: HeapPool is thread-safe (one mutex, taken on allocate and on
// release of a pooled buffer; never on map()).
#pragma once

#include <cstdint>
#include <memory>

#include "neat/contract/allocator.hpp"
#include "neat/contract/storage.hpp"

namespace neat {

struct HeapPoolConfig {
  std::int64_t max_cached_bytes = std::int64_t{512} << 20;  ///< bytes kept for reuse
  int max_cached_buffers = 64;                              ///< buffers kept for reuse
  /// On the first miss for a buffer size, the pool allocates this many
  /// buffers of that size at once (one handed out, the rest cached) and
  /// faults their pages in, so that a pipeline's memory reaches its steady
  /// state on its first frame instead of growing whenever its queues run a
  /// little deeper than before. 0 or 1: one buffer per miss. Bounded by
  /// max_cached_buffers and max_cached_bytes.
  int prefill_buffers = 0;
};

struct HeapPoolStats {
  std::uint64_t hits = 0;       ///< allocations served from the pool
  std::uint64_t misses = 0;     ///< allocations that went to the system
  std::uint64_t evictions = 0;  ///< released buffers freed because the pool was full
  std::int64_t in_use_buffers = 0;
  std::int64_t in_use_bytes = 0;
  std::int64_t cached_buffers = 0;
  std::int64_t cached_bytes = 0;
  std::uint64_t prefilled = 0;           ///< buffers allocated ahead by prefill_buffers
  std::int64_t peak_in_use_buffers = 0;  ///< the most in use at once
};

class HeapPool final : public StorageAllocator {
 public:
  static std::shared_ptr<HeapPool> create(HeapPoolConfig config = {});
  ~HeapPool() override;

  /// A 64-byte aligned buffer of request.bytes, recycled when one of the same
  /// rounded size is cached. ResourceExhausted when the system refuses.
  Result<std::shared_ptr<Storage>> allocate(const AllocRequest& request) override;
  HeapPoolStats stats() const;
  /// Frees every cached buffer.
  void trim();

  struct State;

 private:
  explicit HeapPool(std::shared_ptr<State> state);
  void prefill(std::int64_t capacity);
  std::shared_ptr<State> state_;
};

/// The process-wide pool behind default_allocator().
HeapPool& default_heap_pool() noexcept;

/// Largest single allocation attempted (64 TiB); larger requests are
/// ResourceExhausted without asking the system.
inline constexpr std::int64_t kMaxHeapAllocation = std::int64_t{1} << 46;

}  // namespace neat

// The "auto" memory chain: allocations try DMA-BUF (a DMA heap), then shm
// (memfd), then the pooled heap, so that buffers are shareable with devices
// and processes whenever the machine allows it. Every fallback is counted with
// its reason; NEAT_FORCE_HEAP=1 (read once, when auto_allocator() is first
// used) sends everything to the heap.
//
// A backend that is unavailable (no /dev/dma_heap, memfd refused by a
// sandbox) is skipped from then on without asking the system again; a
// transient failure (out of memory, fd limit) is counted and retried next
// time.
// memfd objects are pooled (AutoAllocatorConfig::shm_pool_buffers): a
// released buffer that was never exported serves the next allocation of its
// size without new system calls.
// Threading: thread-safe; the success path takes no lock but the shm pool's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "neat/contract/allocator.hpp"
#include "neat/storage/shm.hpp"

namespace neat {

enum class MemoryBackend : std::uint8_t { DmaBuf, Shm, Heap };
std::string_view to_string(MemoryBackend b) noexcept;

struct AutoAllocatorConfig {
  bool force_heap = false;                        ///< NEAT_FORCE_HEAP=1
  std::string dma_heap = "/dev/dma_heap/system";  ///< empty: never try DMA-BUF
  bool try_shm = true;
  /// memfd objects kept for reuse (a ShmPool): released buffers that were
  /// never exported serve the next allocation of their size. 0: a new memfd
  /// for every allocation. The kept objects hold one fd each.
  int shm_pool_buffers = 8;
};

/// One kind of fallback: allocations that went past `from` to a later backend.
struct AllocationFallback {
  MemoryBackend from = MemoryBackend::DmaBuf;
  std::string reason;  ///< the error that caused it (the latest one)
  std::uint64_t count = 0;
};

struct AutoAllocatorStats {
  std::uint64_t dmabuf = 0;  ///< allocations served by each backend
  std::uint64_t shm = 0;
  std::uint64_t heap = 0;
  std::uint64_t forced_heap = 0;              ///< of heap: because of force_heap / NEAT_FORCE_HEAP
  std::vector<AllocationFallback> fallbacks;  ///< DMA-BUF -> next, shm -> heap (count > 0 only)
  ShmPoolStats shm_pool;                      ///< reuse of memfd objects (shm_pool_buffers > 0)
};

class AutoAllocator final : public StorageAllocator {
 public:
  explicit AutoAllocator(AutoAllocatorConfig config = {});
  ~AutoAllocator() override;
  Result<std::shared_ptr<Storage>> allocate(const AllocRequest& request) override;
  AutoAllocatorStats stats() const;
  const AutoAllocatorConfig& config() const noexcept;
  /// Closes the memfd objects kept for reuse.
  void trim();

  struct State;

 private:
  std::unique_ptr<State> state_;
};

/// The configuration the environment asks for: NEAT_FORCE_HEAP=1 forces heap.
AutoAllocatorConfig auto_allocator_config_from_env();

/// The process-wide chain, configured from NEAT_FORCE_HEAP on first use.
AutoAllocator& auto_allocator() noexcept;

}  // namespace neat

#include "neat/storage/auto_allocator.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "neat/storage/dmabuf.hpp"
#include "neat/storage/heap.hpp"
#include "neat/storage/shm.hpp"

namespace neat {

std::string_view to_string(MemoryBackend b) noexcept {
  switch (b) {
    case MemoryBackend::DmaBuf:
      return "dmabuf";
    case MemoryBackend::Shm:
      return "shm";
    case MemoryBackend::Heap:
      return "heap";
  }
  return "?";
}

struct AutoAllocator::State {
  AutoAllocatorConfig config;
  std::atomic<bool> dmabuf_disabled{false};
  std::atomic<bool> shm_disabled{false};
  std::atomic<std::uint64_t> served[3] = {};
  std::atomic<std::uint64_t> forced{0};
  std::atomic<std::uint64_t> fallback_count[2] = {};
  mutable std::mutex reason_mutex;  // taken only when a backend fails
  std::string reason[2];
  std::shared_ptr<ShmPool> shm_pool;  // null: no pooling

  void fall_back(MemoryBackend from, const Error* error) {
    const auto i = static_cast<std::size_t>(from);
    fallback_count[i].fetch_add(1, std::memory_order_relaxed);
    if (error != nullptr) {
      std::lock_guard lock(reason_mutex);
      reason[i] = error->to_string();
    }
  }
};

AutoAllocator::AutoAllocator(AutoAllocatorConfig config) : state_(std::make_unique<State>()) {
  state_->config = std::move(config);
  if (state_->config.dma_heap.empty()) {
    state_->dmabuf_disabled = true;
    state_->reason[0] = "unavailable: no DMA heap configured";
  }
  if (state_->config.shm_pool_buffers > 0) {
    state_->shm_pool = ShmPool::create({.max_cached_buffers = state_->config.shm_pool_buffers,
                                        .max_cached_bytes = std::int64_t{1} << 40});
  }
  if (!state_->config.try_shm) {
    state_->shm_disabled = true;
    state_->reason[1] = "unavailable: shm disabled by configuration";
  }
}

AutoAllocator::~AutoAllocator() = default;

const AutoAllocatorConfig& AutoAllocator::config() const noexcept {
  return state_->config;
}

Result<std::shared_ptr<Storage>> AutoAllocator::allocate(const AllocRequest& request) {
  State& s = *state_;
  if (!s.config.force_heap) {
    if (!s.dmabuf_disabled.load(std::memory_order_relaxed)) {
      auto d = DmaBufStorage::allocate(request.bytes > 0 ? request.bytes : 1, s.config.dma_heap);
      if (d.ok()) {
        s.served[0].fetch_add(1, std::memory_order_relaxed);
        return std::shared_ptr<Storage>(std::move(*d));
      }
      if (d.error().code() == ErrorCode::Unavailable) s.dmabuf_disabled = true;
      s.fall_back(MemoryBackend::DmaBuf, &d.error());
    } else {
      s.fall_back(MemoryBackend::DmaBuf, nullptr);
    }
    if (!s.shm_disabled.load(std::memory_order_relaxed)) {
      auto m = [&]() -> Result<std::shared_ptr<Storage>> {
        if (s.shm_pool != nullptr) return s.shm_pool->allocate(request);
        NEAT_ASSIGN_OR_RETURN(std::shared_ptr<ShmStorage> fresh, ShmStorage::create(request.bytes));
        return std::shared_ptr<Storage>(std::move(fresh));
      }();
      if (m.ok()) {
        s.served[1].fetch_add(1, std::memory_order_relaxed);
        return std::move(*m);
      }
      if (m.error().code() == ErrorCode::Unavailable) s.shm_disabled = true;
      s.fall_back(MemoryBackend::Shm, &m.error());
    } else {
      s.fall_back(MemoryBackend::Shm, nullptr);
    }
  } else {
    s.forced.fetch_add(1, std::memory_order_relaxed);
  }
  NEAT_ASSIGN_OR_RETURN(std::shared_ptr<Storage> h, default_allocator().allocate(request));
  s.served[2].fetch_add(1, std::memory_order_relaxed);
  return h;
}

AutoAllocatorStats AutoAllocator::stats() const {
  const State& s = *state_;
  AutoAllocatorStats out;
  out.dmabuf = s.served[0].load(std::memory_order_relaxed);
  out.shm = s.served[1].load(std::memory_order_relaxed);
  out.heap = s.served[2].load(std::memory_order_relaxed);
  out.forced_heap = s.forced.load(std::memory_order_relaxed);
  if (s.shm_pool != nullptr) out.shm_pool = s.shm_pool->stats();
  std::lock_guard lock(s.reason_mutex);
  for (int i = 0; i < 2; ++i) {
    const auto n = s.fallback_count[i].load(std::memory_order_relaxed);
    if (n == 0) continue;
    out.fallbacks.push_back(AllocationFallback{static_cast<MemoryBackend>(i),
                                               s.reason[static_cast<std::size_t>(i)], n});
  }
  return out;
}

void AutoAllocator::trim() {
  if (state_->shm_pool != nullptr) state_->shm_pool->trim();
}

AutoAllocatorConfig auto_allocator_config_from_env() {
  AutoAllocatorConfig c;
  const char* force = std::getenv("NEAT_FORCE_HEAP");
  c.force_heap = force != nullptr && std::string_view(force) == "1";
  return c;
}

AutoAllocator& auto_allocator() noexcept {
  static AutoAllocator allocator(auto_allocator_config_from_env());
  return allocator;
}

}  // namespace neat

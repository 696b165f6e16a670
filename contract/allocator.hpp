// StorageAllocator: how the contract obtains new host storage (for clone(),
// contiguous(), copy-on-write and the allocate factories) without depending
// on a backend. The storage layer implements it (a pooled heap) and provides
// default_allocator(); callers may pass their own.
//
// Threading: implementations must be thread-safe.
#pragma once

#include <cstdint>
#include <memory>

#include "neat/contract/error.hpp"
#include "neat/contract/storage.hpp"

namespace neat {

struct AllocRequest {
  std::int64_t bytes = 0;
  bool zero_fill = true;  ///< false: contents are unspecified (faster)
};

class StorageAllocator {
 public:
  virtual ~StorageAllocator() = default;
  /// A fresh, writable, 64-byte aligned CPU storage of at least request.bytes
  /// bytes, held by nobody else. ResourceExhausted when memory is not available.
  virtual Result<std::shared_ptr<Storage>> allocate(const AllocRequest& request) = 0;
};

/// The process-wide default: a bounded pool over 64-byte aligned heap memory
/// (defined by the storage layer, neat/storage/heap.hpp).
StorageAllocator& default_allocator() noexcept;

}  // namespace neat

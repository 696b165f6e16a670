// External storage: any CPU pointer wrapped without copying, kept valid by a
// keep-alive the caller supplies (a std::shared_ptr with a deleter, a
// shared_ptr to the owning object, ...).
//
// Ownership: the ExternalStorage holds the keep-alive until the last tensor,
// view or mapping of it is gone. External memory is read-only unless the
// caller says otherwise, and is only donated to a writer when the caller
// declares it exclusive (nothing outside NeatTensor touches it).
// Threading: immutable after construction; thread-safe.
#pragma once

#include <cstdint>
#include <memory>

#include "neat/contract/neat_tensor.hpp"
#include "neat/contract/storage.hpp"

namespace neat {

struct ExternalOptions {
  bool read_only = true;   ///< false: writable once make_writable() holds it alone
  bool exclusive = false;  ///< true: nothing else reads or writes these bytes
};

class ExternalStorage final : public Storage {
 public:
  ExternalStorage(std::byte* data, std::int64_t size_bytes, std::shared_ptr<const void> keep_alive,
                  ExternalOptions options, StorageKind kind = StorageKind::External) noexcept;
  bool donatable() const noexcept override { return !read_only() && exclusive_; }

 private:
  std::shared_ptr<const void> keep_alive_;
  bool exclusive_;
};

/// Wraps [data, data + size_bytes) as a storage. InvalidArgument for a null
/// pointer with a non-zero size, a negative size, or no keep-alive.
Result<std::shared_ptr<Storage>> wrap_memory(void* data, std::int64_t size_bytes,
                                             std::shared_ptr<const void> keep_alive,
                                             ExternalOptions options = {});

/// Wraps external memory as a dense tensor in one call.
Result<NeatTensor> wrap_external(void* data, std::int64_t size_bytes,
                                 std::shared_ptr<const void> keep_alive, DType dtype, DimsRef shape,
                                 DimsRef strides, std::int64_t byte_offset = 0,
                                 ExternalOptions options = {});

}  // namespace neat

#include "neat/storage/external.hpp"

#include <string>

namespace neat {

ExternalStorage::ExternalStorage(std::byte* data, std::int64_t size_bytes,
                                 std::shared_ptr<const void> keep_alive, ExternalOptions options,
                                 StorageKind kind) noexcept
    : Storage(kind, kCpu, size_bytes, options.read_only, data),
      keep_alive_(std::move(keep_alive)),
      exclusive_(options.exclusive) {}

Result<std::shared_ptr<Storage>> wrap_memory(void* data, std::int64_t size_bytes,
                                             std::shared_ptr<const void> keep_alive,
                                             ExternalOptions options) {
  if (size_bytes < 0) {
    return invalid_argument("wrap_memory: size_bytes " + std::to_string(size_bytes) +
                            " is negative");
  }
  if (data == nullptr && size_bytes > 0) {
    return invalid_argument("wrap_memory: data is null but size_bytes is " +
                            std::to_string(size_bytes));
  }
  if (!keep_alive) {
    return invalid_argument(
        "wrap_memory: no keep-alive given; pass a std::shared_ptr that owns the memory (e.g. "
        "std::shared_ptr<void>(ptr, free)) so that the bytes outlive every tensor of them");
  }
  try {
    return std::shared_ptr<Storage>(std::make_shared<ExternalStorage>(
        static_cast<std::byte*>(data), size_bytes, std::move(keep_alive), options));
  } catch (const std::bad_alloc&) {
    return resource_exhausted("wrap_memory: out of memory for the storage object");
  }
}

Result<NeatTensor> wrap_external(void* data, std::int64_t size_bytes,
                                 std::shared_ptr<const void> keep_alive, DType dtype, DimsRef shape,
                                 DimsRef strides, std::int64_t byte_offset,
                                 ExternalOptions options) {
  NEAT_ASSIGN_OR_RETURN(std::shared_ptr<Storage> s,
                        wrap_memory(data, size_bytes, std::move(keep_alive), options));
  return NeatTensor::from_storage(std::move(s), dtype, shape, strides, byte_offset);
}

}  // namespace neat

#include "neat/contract/mapping.hpp"

#include <cstdint>
#include <string>

namespace neat {

Mapping::Mapping(const NeatTensor& tensor, MapMode mode,
                 std::array<std::byte*, kMaxPlanes> bases) noexcept
    : tensor_(tensor), bases_(bases), mode_(mode) {
  if (tensor_.plane_count_ == 0) data_ = bases_[0] + tensor_.byte_offset_;
}

Mapping::Mapping(Mapping&& other) noexcept
    : tensor_(std::move(other.tensor_)),
      bases_(other.bases_),
      data_(other.data_),
      mode_(other.mode_) {
  other.data_ = nullptr;  // a moved-from NeatTensor holds no storage: nothing to unmap
}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    release();
    tensor_ = std::move(other.tensor_);
    bases_ = other.bases_;
    data_ = other.data_;
    other.data_ = nullptr;
    mode_ = other.mode_;
  }
  return *this;
}

Mapping::~Mapping() {
  release();
}

void Mapping::release() noexcept {
  if (!tensor_.defined()) return;
  for (int i = 0; i < tensor_.storage_count_; ++i) {
    auto& s = tensor_.storages_[static_cast<std::size_t>(i)];
    s->unmap(mode_);
    s.reset();
  }
  data_ = nullptr;
}

Result<const std::byte*> Mapping::plane_data(PlaneRole role) const {
  if (!tensor_.defined())
    return failed_precondition("plane_data: the mapping is empty (moved-from)");
  for (int i = 0; i < tensor_.plane_count_; ++i) {
    const PlaneLayout& p = tensor_.planes_[static_cast<std::size_t>(i)];
    if (p.role == role)
      return const_cast<const std::byte*>(bases_[static_cast<std::size_t>(p.storage)] +
                                          p.byte_offset);
  }
  return invalid_argument("plane_data(" + std::string(neat::to_string(role)) +
                          "): " + tensor_.to_string() + " has no such plane");
}

Result<std::byte*> Mapping::mutable_plane_data(PlaneRole role) const {
  if (!writable()) {
    return failed_precondition("mutable_plane_data(" + std::string(neat::to_string(role)) +
                               "): this is a read mapping; map(MapMode::Write) a writable tensor");
  }
  NEAT_ASSIGN_OR_RETURN(const std::byte* p, plane_data(role));
  return const_cast<std::byte*>(p);
}

Result<std::byte*> Mapping::checked_data(DType dtype, bool for_write, std::size_t align) const {
  auto what = [&] { return "data_ptr<" + std::string(neat::to_string(dtype)) + ">()"; };
  if (!tensor_.defined())
    return failed_precondition(what() + ": the mapping is empty (moved-from)");
  if (tensor_.is_composite()) {
    return failed_precondition(what() + " on " + tensor_.to_string() +
                               ": a planar frame has no single data pointer; use plane_data()");
  }
  if (tensor_.dtype() != dtype) {
    return invalid_argument(what() + " on " + tensor_.to_string() + ": the tensor's dtype is " +
                            std::string(neat::to_string(tensor_.dtype())));
  }
  if (!tensor_.is_contiguous() || tensor_.is_broadcast()) {
    return failed_precondition(what() + " on " + tensor_.to_string() +
                               ": the data is not contiguous; index with strides() through "
                               "data(), or call contiguous() first (an explicit copy)");
  }
  if (for_write && !writable()) {
    return failed_precondition(what() +
                               " with a non-const element type needs a write mapping; use "
                               "data_ptr<const T>() on a read mapping");
  }
  if (reinterpret_cast<std::uintptr_t>(data_) % align != 0) {
    return invalid_argument(what() + " on " + tensor_.to_string() + ": the address (byte offset " +
                            std::to_string(tensor_.byte_offset()) + ") is not aligned to " +
                            std::to_string(align) + " bytes");
  }
  return data_;
}

}  // namespace neat

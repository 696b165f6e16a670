// Mapping: the RAII, move-only access to a tensor's bytes. It keeps the
// storages alive (and mapped) until destroyed, even after the tensor is gone.
// Raw pointers exist only through a Mapping: data_ptr<T>() checks the dtype,
// contiguity, alignment and the mapping's mode.
//
// Ownership: a Mapping owns one reference to each storage of its tensor.
// Threading: a Mapping is used by one thread at a time; distinct mappings of
// one storage may live on different threads.
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>

#include "neat/contract/error.hpp"
#include "neat/contract/neat_tensor.hpp"

namespace neat {

class Mapping {
 public:
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  MapMode mode() const noexcept { return mode_; }
  bool writable() const noexcept { return has_write(mode_); }
  /// The tensor this mapping was taken from (shape, strides, planes).
  const NeatTensor& tensor() const noexcept { return tensor_; }

  /// Address of element (0, ..., 0) of a dense tensor; nullptr for a composite.
  const std::byte* data() const noexcept { return data_; }
  /// As data(), for writing; nullptr unless this is a write mapping.
  std::byte* mutable_data() const noexcept { return writable() ? data_ : nullptr; }
  /// Address of the first byte of a plane of a composite.
  Result<const std::byte*> plane_data(PlaneRole role) const;
  /// As plane_data, for writing; fails unless this is a write mapping.
  Result<std::byte*> mutable_plane_data(PlaneRole role) const;

  /// A typed pointer to the elements: valid only for a dense, contiguous
  /// tensor of dtype_of<T>, aligned for T. Use data_ptr<const T>() on read
  /// mappings; a non-const T needs a write mapping.
  template <class T>
  Result<T*> data_ptr() const {
    NEAT_ASSIGN_OR_RETURN(std::byte * p, checked_data(dtype_of<T>, !std::is_const_v<T>,
                                                      alignof(std::remove_cv_t<T>)));
    return reinterpret_cast<T*>(p);
  }

 private:
  friend class NeatTensor;
  Mapping(const NeatTensor& tensor, MapMode mode,
          std::array<std::byte*, kMaxPlanes> bases) noexcept;
  Result<std::byte*> checked_data(DType dtype, bool for_write, std::size_t align) const;
  void release() noexcept;

  NeatTensor tensor_;
  std::array<std::byte*, kMaxPlanes> bases_{};
  std::byte* data_ = nullptr;
  MapMode mode_ = MapMode::Read;
};

}  // namespace neat

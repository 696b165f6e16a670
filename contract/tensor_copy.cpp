// The copy engine behind clone(), contiguous() and copy-on-write
// make_writable(): a strided N-D copy into fresh packed storage, run through
// the copy gate so that every byte copied is admitted and recorded.
#include <cstring>

#include "neat/contract/layout_check.hpp"
#include "neat/contract/neat_tensor.hpp"

namespace neat {

namespace {

// Merges adjacent dims that are contiguous with each other in both layouts and
// drops extent-1 dims, so that the inner loop is as long as possible.
int collapse(const Dims& shape, const Dims& a, const Dims& b, std::int64_t* ext, std::int64_t* sa,
             std::int64_t* sb) {
  int n = 0;
  for (int i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (n > 0 && sa[n - 1] == a[i] * shape[i] && sb[n - 1] == b[i] * shape[i]) {
      ext[n - 1] *= shape[i];
      sa[n - 1] = a[i];
      sb[n - 1] = b[i];
      continue;
    }
    ext[n] = shape[i];
    sa[n] = a[i];
    sb[n] = b[i];
    ++n;
  }
  return n;
}

template <std::size_t N>
void copy_elements(std::byte* d, std::int64_t sd, const std::byte* s, std::int64_t ss,
                   std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i)
    std::memcpy(d + i * sd, s + i * ss, N);
}

// `item` is 1..16 bytes: the dtype's item size, or a short packed run of
// items (an RGB pixel) that copy_strided folded into one element.
void copy_inner(std::byte* d, std::int64_t sd, const std::byte* s, std::int64_t ss, std::int64_t n,
                std::int64_t item) {
  if (sd == item && ss == item) {
    std::memcpy(d, s, static_cast<std::size_t>(n * item));
    return;
  }
  switch (item) {
    case 1:
      copy_elements<1>(d, sd, s, ss, n);
      break;
    case 2:
      copy_elements<2>(d, sd, s, ss, n);
      break;
    case 3:
      copy_elements<3>(d, sd, s, ss, n);
      break;
    case 4:
      copy_elements<4>(d, sd, s, ss, n);
      break;
    case 6:
      copy_elements<6>(d, sd, s, ss, n);
      break;
    case 8:
      copy_elements<8>(d, sd, s, ss, n);
      break;
    case 12:
      copy_elements<12>(d, sd, s, ss, n);
      break;
    case 16:
      copy_elements<16>(d, sd, s, ss, n);
      break;
    default:
      for (std::int64_t i = 0; i < n; ++i) {
        std::memcpy(d + i * sd, s + i * ss, static_cast<std::size_t>(item));
      }
  }
}

void copy_nd(std::byte* d, const std::int64_t* sd, const std::byte* s, const std::int64_t* ss,
             const std::int64_t* ext, int n, std::int64_t item) {
  if (n == 0) {
    std::memcpy(d, s, static_cast<std::size_t>(item));
    return;
  }
  if (n == 1) {
    copy_inner(d, sd[0], s, ss[0], ext[0], item);
    return;
  }
  for (std::int64_t i = 0; i < ext[0]; ++i) {
    copy_nd(d + i * sd[0], sd + 1, s + i * ss[0], ss + 1, ext + 1, n - 1, item);
  }
}

void copy_strided(std::byte* dst, const Dims& dst_strides, const std::byte* src,
                  const Dims& src_strides, const Dims& shape, std::int64_t item) {
  for (std::int64_t e : shape) {
    if (e == 0) return;
  }
  std::int64_t ext[kMaxRank], sd[kMaxRank], ss[kMaxRank];
  int n = collapse(shape, dst_strides, src_strides, ext, sd, ss);
  // A short innermost run packed on both sides becomes one wider element.
  if (n >= 2 && sd[n - 1] == item && ss[n - 1] == item && ext[n - 1] * item <= 16) {
    item *= ext[n - 1];
    --n;
  }
  copy_nd(dst, sd, src, ss, ext, n, item);
}

}  // namespace

Result<NeatTensor> NeatTensor::copy_packed(const CopyRequest& base_request,
                                           StorageAllocator* allocator) const {
  NeatTensor dst;
  if (plane_count_ > 0) {
    ImageAllocOptions o;
    o.zero_fill = false;
    o.allocator = allocator;
    NEAT_ASSIGN_OR_RETURN(dst, allocate_image(image_.format, image_.width, image_.height, o));
    dst.image_.colorimetry = image_.colorimetry;
  } else {
    AllocOptions o;
    o.zero_fill = false;
    o.allocator = allocator;
    NEAT_ASSIGN_OR_RETURN(dst, allocate(dtype_, shape_, o));
    if (is_image()) {
      NEAT_ASSIGN_OR_RETURN(dst, dst.as_image(image_));
    }
  }
  dst.meta_ = meta_;  // the same frame
  CopyRequest request = base_request;
  request.destination = dst.description();

  NEAT_ASSIGN_OR_RETURN(Mapping src_map, map(MapMode::Read));
  // dst is fresh and held only here: map its storage directly for writing.
  Storage& dst_storage = *dst.storages_[0];
  NEAT_ASSIGN_OR_RETURN(std::byte * dst_base, dst_storage.map(MapMode::Write));
  Status status = run_through_gate(request, [&]() -> Status {
    if (plane_count_ == 0) {
      copy_strided(dst_base + dst.byte_offset_, dst.strides_, src_map.data(), strides_, shape_,
                   item_size(dtype_));
      return {};
    }
    for (int i = 0; i < plane_count_; ++i) {
      const PlaneLayout& sp = planes_[static_cast<std::size_t>(i)];
      const PlaneLayout& dp = dst.planes_[static_cast<std::size_t>(i)];
      const std::byte* s = src_map.bases_[static_cast<std::size_t>(sp.storage)] + sp.byte_offset;
      std::byte* d = dst_base + dp.byte_offset;
      const std::int64_t row = sp.cols * sp.samples;
      if (sp.row_stride == row && dp.row_stride == row) {
        std::memcpy(d, s, static_cast<std::size_t>(row * sp.rows));
        continue;
      }
      for (std::int64_t r = 0; r < sp.rows; ++r) {
        std::memcpy(d + r * dp.row_stride, s + r * sp.row_stride, static_cast<std::size_t>(row));
      }
    }
    return {};
  });
  dst_storage.unmap(MapMode::Write);
  NEAT_RETURN_IF_ERROR(status);
  return dst;
}

}  // namespace neat

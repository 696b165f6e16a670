// Internal (not installed): the 8-bit planes of a mapped 4:2:0 frame (NV12,
// NV21, I420, YV12) as the YUV kernels read them: where each plane's first
// sample is and how far apart its rows are, chroma pairs interleaved or not.
// Planes may sit in one storage or several, with any row padding.
#pragma once

#include <cstdint>

#include "neat/contract/mapping.hpp"
#include "neat/contract/neat_tensor.hpp"

namespace neat::detail {

struct YuvPlanes {
  const std::uint8_t* y = nullptr;
  const std::uint8_t* u = nullptr;  ///< NV12 / NV21: both in the one chroma plane
  const std::uint8_t* v = nullptr;
  std::int64_t y_stride = 0, u_stride = 0, v_stride = 0;
  bool interleaved_uv = false;  ///< NV12 / NV21: 2 bytes a chroma pair
  std::int64_t width = 0, height = 0;
  std::int64_t uv_step() const noexcept { return interleaved_uv ? 2 : 1; }
};

/// The planes of `frame` (a planar 4:2:0 image) through its mapping.
inline Result<YuvPlanes> yuv_planes(const NeatTensor& frame, const Mapping& mapped) {
  YuvPlanes s;
  const PixelFormat f = frame.pixel_format();
  NEAT_ASSIGN_OR_RETURN(const std::byte* yp, mapped.plane_data(PlaneRole::Y));
  s.y = reinterpret_cast<const std::uint8_t*>(yp);
  s.y_stride = frame.plane_layout(0).row_stride;
  s.width = frame.image().width;
  s.height = frame.image().height;
  if (f == PixelFormat::NV12 || f == PixelFormat::NV21) {
    const PlaneLayout& c = frame.plane_layout(1);
    NEAT_ASSIGN_OR_RETURN(const std::byte* cp, mapped.plane_data(c.role));
    const auto* b = reinterpret_cast<const std::uint8_t*>(cp);
    s.u = f == PixelFormat::NV12 ? b : b + 1;
    s.v = f == PixelFormat::NV12 ? b + 1 : b;
    s.u_stride = s.v_stride = c.row_stride;
    s.interleaved_uv = true;
    return s;
  }
  NEAT_ASSIGN_OR_RETURN(const std::byte* up, mapped.plane_data(PlaneRole::U));
  NEAT_ASSIGN_OR_RETURN(const std::byte* vp, mapped.plane_data(PlaneRole::V));
  s.u = reinterpret_cast<const std::uint8_t*>(up);
  s.v = reinterpret_cast<const std::uint8_t*>(vp);
  s.u_stride = frame.plane_layout(f == PixelFormat::I420 ? 1 : 2).row_stride;
  s.v_stride = frame.plane_layout(f == PixelFormat::I420 ? 2 : 1).row_stride;
  return s;
}

}  // namespace neat::detail

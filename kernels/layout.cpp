#include "neat/kernels/layout.hpp"

#include <cstring>
#include <string>

namespace neat {

namespace {

// Copies one [rows, cols] plane of `item`-byte elements from strided source
// (row stride rs, column stride cs) into a packed destination.
template <std::size_t N>
void gather_plane(std::byte* dst, const std::byte* src, std::int64_t rows, std::int64_t cols,
                  std::int64_t rs, std::int64_t cs) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::byte* s = src + r * rs;
    std::byte* d = dst + r * cols * static_cast<std::int64_t>(N);
    for (std::int64_t c = 0; c < cols; ++c)
      std::memcpy(d + c * static_cast<std::int64_t>(N), s + c * cs, N);
  }
}

void gather(std::byte* dst, const std::byte* src, std::int64_t rows, std::int64_t cols,
            std::int64_t rs, std::int64_t cs, std::int64_t item) {
  switch (item) {
    case 1:
      gather_plane<1>(dst, src, rows, cols, rs, cs);
      break;
    case 2:
      gather_plane<2>(dst, src, rows, cols, rs, cs);
      break;
    case 4:
      gather_plane<4>(dst, src, rows, cols, rs, cs);
      break;
    default:
      gather_plane<8>(dst, src, rows, cols, rs, cs);
      break;
  }
}

enum class Direction { ToChw, ToHwc };

Result<NeatTensor> convert_layout(const NeatTensor& src, Direction dir, ConversionOptions options,
                                  std::source_location where) {
  const char* op = dir == Direction::ToChw ? "to_chw" : "to_hwc";
  if (!src.defined()) return failed_precondition(std::string(op) + ": the tensor is undefined");
  if (src.is_composite()) {
    return failed_precondition(std::string(op) + " of " + src.to_string() +
                               ": a planar frame has no HWC/CHW layout; convert_color() it first");
  }
  if (src.device().type != DeviceType::Cpu) {
    return failed_precondition(std::string(op) + " of " + src.to_string() + ": not in CPU memory");
  }
  const Layout from = dir == Direction::ToChw ? Layout::HWC : Layout::CHW;
  const Layout to = dir == Direction::ToChw ? Layout::CHW : Layout::HWC;
  if (src.is_image()) {
    if (src.layout() == to) return src;
    if (src.layout() != from) {
      return failed_precondition(std::string(op) + " of " + src.to_string() + ": the image is " +
                                 std::string(to_string(src.layout())) + ", not " +
                                 std::string(to_string(from)));
    }
  }
  if (src.rank() != 3 && src.rank() != 4) {
    return invalid_argument(std::string(op) + " of " + src.to_string() + ": rank " +
                            std::to_string(src.rank()) +
                            " is not 3 ([H, W, C]) or 4 ([N, H, W, C])");
  }
  // View the source in the target order; then pack it.
  const int b = src.rank() == 4 ? 1 : 0;
  Dims order;
  if (b) order.push_back(0);
  if (dir == Direction::ToChw) {
    order.push_back(b + 2), order.push_back(b + 0), order.push_back(b + 1);
  } else {
    order.push_back(b + 1), order.push_back(b + 2), order.push_back(b + 0);
  }
  NEAT_ASSIGN_OR_RETURN(NeatTensor view, src.as_dense());
  NEAT_ASSIGN_OR_RETURN(view, view.permute(order));
  NEAT_ASSIGN_OR_RETURN(
      NeatTensor dst, NeatTensor::allocate(src.dtype(), view.shape(), destination_alloc(options)));
  if (src.is_image()) {
    ImageSpec spec = src.image();
    spec.layout = to;
    NEAT_ASSIGN_OR_RETURN(dst, dst.as_image(spec));
  }
  const ConversionSpec spec{
      ConversionKind::Convert,
      ConversionReason::Layout,
      op,
      "convert the layout explicitly with to_chw() / to_hwc() before this consumer",
      {}};
  return run_conversion(
      src, std::move(dst), spec, options, where,
      [&](const Mapping& in, const Mapping& out) -> Status {
        // The view's last two dims form planes; everything before them is a plane index.
        const Dims& shape = view.shape();
        const Dims& st = view.strides();
        const int r = view.rank();
        const std::int64_t rows = shape[r - 2], cols = shape[r - 1];
        const std::int64_t planes = view.numel() / std::max<std::int64_t>(rows * cols, 1);
        const std::int64_t item = item_size(src.dtype());
        const std::byte* base = in.data() + (view.byte_offset() - src.byte_offset());
        std::byte* d = out.mutable_data();
        parallel_rows(planes, options.threads, [&](std::int64_t p0, std::int64_t p1) {
          for (std::int64_t p = p0; p < p1; ++p) {
            std::int64_t off = 0, rem = p;
            for (int k = r - 3; k >= 0; --k) {
              off += (rem % shape[k]) * st[k];
              rem /= shape[k];
            }
            gather(d + p * rows * cols * item, base + off, rows, cols, st[r - 2], st[r - 1], item);
          }
        });
        return {};
      });
}

}  // namespace

Result<NeatTensor> to_chw(const NeatTensor& src, ConversionOptions options,
                          std::source_location where) {
  return convert_layout(src, Direction::ToChw, options, where);
}

Result<NeatTensor> to_hwc(const NeatTensor& src, ConversionOptions options,
                          std::source_location where) {
  return convert_layout(src, Direction::ToHwc, options, where);
}

}  // namespace neat

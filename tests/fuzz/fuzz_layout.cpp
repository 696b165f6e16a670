// Fuzz target: tensor descriptors built from bytes (dtype, shape, strides,
// offset, storage size; planar frames from plane specs). Whatever the
// factories accept must be safe to map and to touch at its first and last
// addressed byte (ASan checks the bounds); whatever they refuse must be a
// typed error, never a crash.
#include <cstdint>
#include <cstring>

#include "fuzz_input.hpp"
#include "neat/contract/layout_check.hpp"
#include "neat/contract/mapping.hpp"
#include "neat/contract/neat_tensor.hpp"
#include "neat/storage/external.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  neat::fuzz::Input in(data, size);
  const std::int64_t storage_bytes = in.u16();  // small storage: real bounds
  std::vector<std::byte> bytes(static_cast<std::size_t>(storage_bytes));
  auto storage = neat::wrap_memory(bytes.data(), storage_bytes, std::make_shared<int>(0),
                                   {.read_only = false, .exclusive = true});
  if (!storage.ok()) return 0;
  if (in.boolean()) {
    // A dense tensor.
    const auto dtype = static_cast<neat::DType>(in.u8() % neat::kDTypeCount);
    const int rank = in.u8() % 10;  // 9 exceeds kMaxRank on purpose
    neat::Dims shape, strides;
    for (int i = 0; i < rank; ++i)
      shape.push_back(in.i64_small());
    for (int i = 0; i < rank; ++i)
      strides.push_back(in.i64_any());
    const std::int64_t offset = in.i64_small();
    auto t = neat::NeatTensor::from_storage(*storage, dtype, shape, strides, offset);
    if (!t.ok()) return 0;
    auto span = neat::addressed_bytes(dtype, shape, strides, offset, "fuzz");
    if (!span.ok() || span->empty) return 0;
    volatile std::byte first = bytes[static_cast<std::size_t>(span->lo)];
    volatile std::byte last = bytes[static_cast<std::size_t>(span->hi - 1)];
    (void)first;
    (void)last;
    auto m = t->map();
    if (m.ok() && t->numel() > 0 && t->numel() < 4096) {
      auto packed = t->contiguous();  // the strided copy engine on the accepted layout
      (void)packed;
    }
    // Views of accepted tensors stay valid.
    if (t->rank() > 0) (void)t->narrow(0, in.i64_small(), in.i64_small());
    if (t->rank() > 1) (void)t->transpose(0, t->rank() - 1);
    (void)t->reshape(neat::Dims{-1});
  } else {
    // A planar frame.
    constexpr neat::PixelFormat kPlanar[] = {neat::PixelFormat::NV12, neat::PixelFormat::NV21,
                                             neat::PixelFormat::I420, neat::PixelFormat::YV12};
    const auto format = kPlanar[in.u8() % 4];
    const std::int64_t w = in.i64_small(), h = in.i64_small();
    const auto order = neat::plane_order(format);
    std::vector<neat::PlaneSpec> specs;
    for (int i = 0; i < order.count; ++i) {
      specs.push_back(neat::PlaneSpec{order.roles[static_cast<std::size_t>(i)], *storage,
                                      in.i64_small(), in.i64_small()});
    }
    if (in.boolean() && !specs.empty()) specs.pop_back();
    auto f = neat::NeatTensor::compose_planes(format, w, h, specs);
    if (!f.ok()) return 0;
    auto m = f->map();
    if (m.ok()) {
      for (int i = 0; i < f->plane_count(); ++i) {
        const auto& p = f->plane_layout(i);
        if (p.rows == 0 || p.cols == 0) continue;
        const std::byte* base = *m->plane_data(p.role);
        volatile std::byte last = base[(p.rows - 1) * p.row_stride + p.cols * p.samples - 1];
        (void)last;
      }
    }
    (void)f->crop(in.i64_small(), in.i64_small(), in.i64_small(), in.i64_small());
  }
  return 0;
}

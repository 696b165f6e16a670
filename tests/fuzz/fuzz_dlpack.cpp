// Fuzz target: DLPack import. Any DLTensor (shape, strides, byte_offset,
// dtype, device, ndim) over a real buffer: wrap_dlpack either accepts a layout
// that stays inside the buffer, or refuses it; the deleter runs exactly once
// either way.
#include <dlpack/dlpack.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "fuzz_input.hpp"
#include "neat/contract/mapping.hpp"
#include "neat/storage/dlpack.hpp"

namespace {
int g_deletions = 0;
__extension__ typedef __int128 i128;  // exact arithmetic for the check
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  neat::fuzz::Input in(data, size);
  std::vector<std::uint8_t> buffer(in.u16() % 4096 + 1);
  std::int64_t shape[10], strides[10];
  DLManagedTensor m{};
  m.dl_tensor.ndim = static_cast<int>(in.u8() % 11) - 1;
  for (int i = 0; i < 10; ++i)
    shape[i] = in.i64_small();
  for (int i = 0; i < 10; ++i)
    strides[i] = in.i64_any();
  m.dl_tensor.shape = in.boolean() ? shape : nullptr;
  m.dl_tensor.strides = in.boolean() ? strides : nullptr;
  m.dl_tensor.byte_offset = static_cast<std::uint64_t>(in.u16());
  m.dl_tensor.dtype = DLDataType{static_cast<std::uint8_t>(in.u8() % 8),
                                 static_cast<std::uint8_t>(8 << (in.u8() % 4)),
                                 static_cast<std::uint16_t>(in.u8() % 3)};
  m.dl_tensor.device = DLDevice{in.u8() % 4 == 0 ? kDLCUDA : kDLCPU, 0};
  m.dl_tensor.data = in.boolean() ? buffer.data() : nullptr;
  m.deleter = [](DLManagedTensor*) { ++g_deletions; };
  const int before = g_deletions;
  {
    auto t = neat::wrap_dlpack(&m);
    if (t.ok() && t->numel() > 0) {
      // The accepted tensor must address exactly what the DLTensor describes
      // (computed here independently, in 128-bit arithmetic)...
      const DLTensor& d = m.dl_tensor;
      const auto item = static_cast<i128>(neat::item_size(t->dtype()));
      i128 lo = 0, hi = 0;
      for (int i = 0; i < d.ndim; ++i) {
        const i128 step = d.strides != nullptr ? static_cast<i128>(d.strides[i]) * item
                                               : static_cast<i128>(t->strides()[i]);
        const i128 reach = static_cast<i128>(d.shape[i] - 1) * step;
        (reach < 0 ? lo : hi) += reach;
      }
      hi += item;
      const auto* origin = static_cast<const std::uint8_t*>(d.data) + d.byte_offset;
      auto map = t->map();
      if (!map.ok()) std::abort();
      if (reinterpret_cast<const std::uint8_t*>(map->data()) != origin) std::abort();
      if (static_cast<i128>(t->storage()->size_bytes()) != hi - lo) std::abort();
      // ... and may only be read where that lies inside the real buffer (a
      // DLPack producer vouches for its memory; this one is the fuzzer).
      const i128 start = static_cast<i128>(d.byte_offset) + lo;
      // (Broadcast strides can describe billions of elements over a few bytes:
      // packing is only tried on small tensors.)
      if (start >= 0 && start + (hi - lo) <= static_cast<i128>(buffer.size()) &&
          t->numel() <= (1 << 16)) {
        auto packed = t->contiguous();  // reads every element (ASan checks the bounds)
        (void)packed;
      }
    }
  }
  if (g_deletions != before + 1) std::abort();  // exactly once, on every path
  return 0;
}

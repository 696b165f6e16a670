#include "neat/contract/copy_gate.hpp"

#include <atomic>

namespace neat {

namespace {
std::atomic<CopyGate*> g_override{nullptr};
}

CopyGate& copy_gate() noexcept {
  if (CopyGate* g = g_override.load(std::memory_order_acquire)) return *g;
  return default_copy_gate();
}

CopyGate* set_copy_gate(CopyGate* gate) noexcept {
  return g_override.exchange(gate, std::memory_order_acq_rel);
}

std::string TensorDescription::to_string() const {
  std::string out(neat::to_string(dtype));
  out += ' ';
  out += '[';
  for (int i = 0; i < rank; ++i) {
    if (i) out += ", ";
    if (i >= 4) {
      out += "...";
      break;
    }
    out += std::to_string(shape[static_cast<std::size_t>(i)]);
  }
  out += ']';
  if (format != PixelFormat::None) {
    out += ' ';
    out += neat::to_string(format);
  }
  if (layout != Layout::None) {
    out += ' ';
    out += neat::to_string(layout);
  }
  out += ' ';
  out += neat::to_string(device);
  out += ' ';
  out += neat::to_string(storage);
  if (!contiguous) out += " (strided)";
  return out;
}

}  // namespace neat

// Built against the installed tree: find_package(NeatTensor), neat::neat, <neat/neat.hpp>.
#include <cstdio>

#include <neat/neat.hpp>

int main() {
  auto frame = neat::NeatTensor::allocate_image(neat::PixelFormat::NV12, 64, 48);
  if (!frame) {
    std::fprintf(stderr, "%s\n", frame.error().to_string().c_str());
    return 1;
  }
  auto y = frame->plane(neat::PlaneRole::Y);
  auto copy = frame->clone();
  if (!y || !copy || y->shape()[1] != 64 || !copy->is_contiguous()) return 2;
  const auto packs = neat::conversion_counters().snapshot().total(neat::ConversionKind::Pack);
  std::printf("consumer ok: %s, %llu pack(s), %llu bytes\n", frame->to_string().c_str(),
              static_cast<unsigned long long>(packs.count),
              static_cast<unsigned long long>(packs.bytes));
  return packs.count == 1 ? 0 : 3;
}

#include "neat/contract/storage.hpp"

namespace neat {

std::string_view to_string(MapMode m) noexcept {
  switch (m) {
    case MapMode::Read:
      return "read";
    case MapMode::Write:
      return "write";
    case MapMode::ReadWrite:
      return "read_write";
  }
  return "?";
}

std::uint64_t next_buffer_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

Storage::Storage(StorageKind kind, Device device, std::int64_t size_bytes, bool read_only,
                 std::byte* resident_base) noexcept
    : resident_base_(resident_base),
      size_(size_bytes),
      id_(next_buffer_id()),
      kind_(kind),
      device_(device),
      read_only_(read_only) {}

Storage::Storage(StorageKind kind, Device device, std::int64_t size_bytes, bool read_only,
                 std::byte* resident_base, std::uint64_t id) noexcept
    : resident_base_(resident_base),
      size_(size_bytes),
      id_(id != 0 ? id : next_buffer_id()),
      kind_(kind),
      device_(device),
      read_only_(read_only) {}

Storage::~Storage() = default;

std::string Storage::describe() const {
  std::string out(to_string(kind_));
  out += ' ';
  out += std::to_string(size_);
  out += " B";
  if (device_.type != DeviceType::Cpu) {
    out += " on ";
    out += to_string(device_);
  }
  return out;
}

Result<std::byte*> Storage::map_slow(MapMode mode) {
  return failed_precondition(describe() + " cannot be mapped for " + std::string(to_string(mode)) +
                             "; stage it to the CPU first with cpu() or to_cpu_if_needed()");
}

void Storage::unmap_slow(MapMode) noexcept {}

Status Storage::download(std::span<std::byte>) {
  return unimplemented(describe() + " cannot be downloaded to host memory");
}

}  // namespace neat

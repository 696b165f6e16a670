// Where a tensor's bytes live: the Device {type, id} (always known) and the
// StorageKind of the backend that holds them.
//
// Threading: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace neat {

enum class DeviceType : std::uint8_t {
  Cpu,  ///< host memory: heap, external, cv::Mat, GStreamer, shm, DMA-BUF mappings
  Gl,   ///< a GL texture on an EGL context: not mappable, reached by transfer
};

struct Device {
  DeviceType type = DeviceType::Cpu;
  int id = 0;
  friend bool operator==(const Device&, const Device&) = default;
};

inline constexpr Device kCpu{DeviceType::Cpu, 0};

/// The backend that owns a tensor's bytes.
enum class StorageKind : std::uint8_t { Heap, External, CvMat, GStreamer, Shm, DmaBuf, Gl, Other };

std::string_view to_string(DeviceType t) noexcept;
std::string_view to_string(StorageKind k) noexcept;
/// "cpu:0", "gl:1".
std::string to_string(Device d);

}  // namespace neat

#include "neat/contract/device.hpp"

namespace neat {

std::string_view to_string(DeviceType t) noexcept {
  switch (t) {
    case DeviceType::Cpu:
      return "cpu";
    case DeviceType::Gl:
      return "gl";
  }
  return "?";
}

std::string_view to_string(StorageKind k) noexcept {
  switch (k) {
    case StorageKind::Heap:
      return "heap";
    case StorageKind::External:
      return "external";
    case StorageKind::CvMat:
      return "cv_mat";
    case StorageKind::GStreamer:
      return "gstreamer";
    case StorageKind::Shm:
      return "shm";
    case StorageKind::DmaBuf:
      return "dmabuf";
    case StorageKind::Gl:
      return "gl";
    case StorageKind::Other:
      return "other";
  }
  return "?";
}

std::string to_string(Device d) {
  std::string out(to_string(d.type));
  out += ':';
  out += std::to_string(d.id);
  return out;
}

}  // namespace neat

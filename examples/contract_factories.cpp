// docs/contract.md: the factories (heap, padded image, external memory, a
// cv::Mat, planes in separate storages) and device transfers. The regions
// between the docs markers are the page's code blocks
// (tests/docs/check_snippets.py keeps them equal); CI builds and runs them.
#include <array>
#include <cstdio>
#include <memory>
#include <opencv2/core.hpp>
#include <vector>

#include <neat/neat.hpp>

using namespace neat;

// The transfers of the page, on a machine with an EGL / GLES context.
int transfers(const NeatTensor& frame) {
  // [docs:transfers]
  auto gpu = upload(frame, Device{DeviceType::Gl, 0});  // upload: explicit Transfer event
  auto host = gpu->cpu();                               // download: explicit Transfer event
  auto same = frame.cpu();                              // already on the CPU: itself, no event
  auto need = gpu->to_cpu_if_needed();                  // a consumer's implicit download:
                                                        // ruled by the policy (Strict refuses)
  // [docs:end]
  return host && same && !need ? 0 : 1;  // Strict (the default) refuses the implicit download
}

int main() {
  auto buffer = std::make_shared<std::vector<std::uint16_t>>(480 * 640);
  void* ptr = buffer->data();
  const std::int64_t bytes = 480 * 640 * 2;
  std::shared_ptr<const void> keep_alive = buffer;
  cv::Mat bgr_mat(480, 640, CV_8UC3, cv::Scalar(1, 2, 3));
  const std::int64_t w = 640, h = 480, y_stride = 640, uv_stride = 640;
  auto y_storage = *default_allocator().allocate({y_stride * h, true});
  auto uv_storage = *default_allocator().allocate({uv_stride * h / 2, true});
  // [docs:factories]
  auto t = NeatTensor::allocate(DType::F32, {1, 3, 640, 640});  // zero-filled, pooled
  auto img = NeatTensor::allocate_image(PixelFormat::I420, 1918, 1080,
                                        {.row_alignment = 64});  // padded rows
  auto ext = wrap_external(ptr, bytes, keep_alive, DType::U16, {480, 640}, {1280, 2});
  auto mat = wrap_mat_image(bgr_mat, PixelFormat::BGR);  // keeps the Mat alive
  auto nv12 =
      NeatTensor::compose_planes(PixelFormat::NV12, w, h,
                                 std::array{PlaneSpec{PlaneRole::Y, y_storage, y_stride, 0},
                                            PlaneSpec{PlaneRole::UV, uv_storage, uv_stride, 0}});
  // [docs:end]
  if (!t || !img || !ext || !mat || !nv12) return 1;
  std::printf("%s\n%s\n%s\n%s\n%s\n", t->to_string().c_str(), img->to_string().c_str(),
              ext->to_string().c_str(), mat->to_string().c_str(), nv12->to_string().c_str());
  // Transfers need a GL context; without one the page's code is still compiled.
  if (!GlContext::create()) {
    std::printf("no EGL / GLES context here: transfers compiled, not run\n");
    return 0;
  }
  return transfers(*mat);
}

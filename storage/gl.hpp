// GL storage: tensors as GL textures on an EGL context (Device{Gl, id}).
// Textures are not mappable: map() fails and says to transfer. Frames reach
// them by transfer (upload(tensor, Device{Gl, id}) uploads, tensor.cpu()
// downloads), each an event through the copy gate (kind Transfer, reason
// Device), synchronised with GL fences. Where the driver has
// EGL_EXT_image_dma_buf_import, DMA-BUF frames become textures without a copy.
//
// Contexts: GlContext::create() opens a surfaceless Mesa display
// (eglGetPlatformDisplayEXT(EGL_PLATFORM_SURFACELESS_MESA)), so no window
// system is needed; on llvmpipe (these CI machines) it runs on the CPU.
// Texture formats: U8 and F32 tensors [H, W] / [H, W, C] with C in 1..4
// (R8, RG8, RGB8, RGBA8 / R32F ... RGBA32F); planar frames as one texture per
// plane (Y, U, V: R8; UV / VU: RG8).
//
// Ownership: a texture storage holds its GlContext; the texture is deleted
// when the last tensor of it goes. Threading: a GlContext is thread-safe; it
// is made current on the calling thread for each operation (serialised by a
// mutex) and released afterwards.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <string>

#include "neat/contract/neat_tensor.hpp"
#include "neat/contract/storage.hpp"
#include "neat/storage/dmabuf.hpp"

namespace neat {

class GlContext;
Result<NeatTensor> wrap_dmabuf_gl(const DmaBufImage& image, GlContext& context);

class GlContext : public std::enable_shared_from_this<GlContext> {
 public:
  /// A new GLES 3 context on the surfaceless Mesa platform. Unavailable when
  /// EGL, the platform, or a GLES 3 context cannot be had (with EGL's error).
  static Result<std::shared_ptr<GlContext>> create(int device_id = 0);
  /// The process's context for Device{Gl, id}, created on first use and kept
  /// while any texture or caller holds it.
  static Result<std::shared_ptr<GlContext>> for_device(int device_id);
  ~GlContext();
  GlContext(const GlContext&) = delete;
  GlContext& operator=(const GlContext&) = delete;

  int id() const noexcept;
  Device device() const noexcept { return Device{DeviceType::Gl, id()}; }
  /// GL_RENDERER, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)".
  const std::string& renderer() const noexcept;
  bool has_egl_extension(std::string_view name) const;
  /// EGL_EXT_image_dma_buf_import: DMA-BUF planes can become textures.
  bool supports_dmabuf_import() const;
  /// Runs fn with this context current on the calling thread (and nothing
  /// else running on it). GL errors raised inside are reported as Internal.
  Status run(const std::function<Status()>& fn);

  struct State;
  explicit GlContext(std::unique_ptr<State> state);

 private:
  friend Result<NeatTensor> wrap_dmabuf_gl(const DmaBufImage& image, GlContext& context);
  std::unique_ptr<State> state_;
};

/// Process-wide counts for leak and balance checks.
struct GlStats {
  std::int64_t live_textures = 0;
  std::uint64_t uploads = 0;
  std::uint64_t downloads = 0;
  std::uint64_t fence_waits = 0;
  std::uint64_t dmabuf_imports = 0;
};
GlStats gl_stats() noexcept;

/// The GL texture name behind a tensor's storage i (0 when it is not a GL texture).
unsigned gl_texture(const NeatTensor& tensor, int storage = 0) noexcept;

/// `tensor` on `device`: itself when already there (no event); host -> GL is
/// an upload, GL -> host a download (tensor.cpu()); both through the gate as
/// explicit transfers unless options.implicit. Uploads need pixels packed
/// within rows (padded rows are fine); otherwise FailedPrecondition naming
/// contiguous().
Result<NeatTensor> upload(const NeatTensor& tensor, Device device, ConversionOptions options = {},
                          std::source_location where = std::source_location::current());

/// A DMA-BUF frame as GL textures without a copy (EGLImage per plane).
/// Unavailable when the context lacks EGL_EXT_image_dma_buf_import (llvmpipe).
Result<NeatTensor> wrap_dmabuf_gl(const DmaBufImage& image, GlContext& context);

}  // namespace neat

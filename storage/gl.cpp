#include "neat/storage/gl.hpp"

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl3.h>

// gl2ext.h needs gl3.h's types (GL_APIENTRYP): keep it after.
#include <GLES2/gl2ext.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "neat/contract/copy_gate.hpp"
#include "neat/contract/mapping.hpp"

namespace neat {
namespace {

std::atomic<std::int64_t> g_live_textures{0};
std::atomic<std::uint64_t> g_uploads{0};
std::atomic<std::uint64_t> g_downloads{0};
std::atomic<std::uint64_t> g_fence_waits{0};
std::atomic<std::uint64_t> g_dmabuf_imports{0};

constexpr GLuint64 kFenceTimeoutNs = 10'000'000'000ULL;

std::string hex(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

struct TexFormat {
  GLenum internal = 0;
  GLenum format = 0;
  GLenum type = 0;
  int channels = 0;
  int channel_bytes = 0;
  std::int64_t pixel_bytes() const { return std::int64_t{channels} * channel_bytes; }
};

Result<TexFormat> tex_format(DType dtype, std::int64_t channels) {
  static constexpr GLenum u8_internal[] = {GL_R8, GL_RG8, GL_RGB8, GL_RGBA8};
  static constexpr GLenum f32_internal[] = {GL_R32F, GL_RG32F, GL_RGB32F, GL_RGBA32F};
  static constexpr GLenum formats[] = {GL_RED, GL_RG, GL_RGB, GL_RGBA};
  if (channels < 1 || channels > 4) {
    return unimplemented("GL textures hold 1 to 4 channels, not " + std::to_string(channels));
  }
  const auto c = static_cast<std::size_t>(channels - 1);
  if (dtype == DType::U8) {
    return TexFormat{u8_internal[c], formats[c], GL_UNSIGNED_BYTE, static_cast<int>(channels), 1};
  }
  if (dtype == DType::F32) {
    return TexFormat{f32_internal[c], formats[c], GL_FLOAT, static_cast<int>(channels), 4};
  }
  return unimplemented("GL textures hold u8 or f32 elements, not " + std::string(to_string(dtype)) +
                       "; convert_dtype() first");
}

// Saves the thread's current EGL state and restores it on destruction.
struct CurrentGuard {
  EGLDisplay display = eglGetCurrentDisplay();
  EGLContext context = eglGetCurrentContext();
  EGLSurface draw = eglGetCurrentSurface(EGL_DRAW);
  EGLSurface read = eglGetCurrentSurface(EGL_READ);
  EGLDisplay ours;
  explicit CurrentGuard(EGLDisplay d) : ours(d) {}
  ~CurrentGuard() {
    if (context != EGL_NO_CONTEXT) {
      eglMakeCurrent(display, draw, read, context);
    } else {
      eglMakeCurrent(ours, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    }
  }
};

Status wait_fence() {
  GLsync fence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  if (fence == nullptr) return internal_error("glFenceSync failed");
  const GLenum r = glClientWaitSync(fence, GL_SYNC_FLUSH_COMMANDS_BIT, kFenceTimeoutNs);
  glDeleteSync(fence);
  g_fence_waits.fetch_add(1, std::memory_order_relaxed);
  if (r == GL_TIMEOUT_EXPIRED)
    return resource_exhausted("GL fence: the device did not finish in 10 s");
  if (r == GL_WAIT_FAILED) return internal_error("GL fence: glClientWaitSync failed");
  return {};
}

}  // namespace

// ---- context ------------------------------------------------------------------

struct GlContext::State {
  EGLDisplay display = EGL_NO_DISPLAY;
  EGLContext context = EGL_NO_CONTEXT;
  int id = 0;
  std::string renderer;
  std::string egl_extensions;
  std::mutex mutex;
  PFNEGLCREATEIMAGEKHRPROC create_image = nullptr;
  PFNEGLDESTROYIMAGEKHRPROC destroy_image = nullptr;
  PFNGLEGLIMAGETARGETTEXTURE2DOESPROC image_target_texture = nullptr;
};

GlContext::GlContext(std::unique_ptr<State> state) : state_(std::move(state)) {}

GlContext::~GlContext() {
  if (state_->context != EGL_NO_CONTEXT) eglDestroyContext(state_->display, state_->context);
  // The display is shared by every context of the process: not terminated.
}

int GlContext::id() const noexcept {
  return state_->id;
}
const std::string& GlContext::renderer() const noexcept {
  return state_->renderer;
}

bool GlContext::has_egl_extension(std::string_view name) const {
  const std::string& all = state_->egl_extensions;
  std::size_t pos = 0;
  while ((pos = all.find(name, pos)) != std::string::npos) {
    const std::size_t end = pos + name.size();
    if ((pos == 0 || all[pos - 1] == ' ') && (end == all.size() || all[end] == ' ')) return true;
    pos = end;
  }
  return false;
}

bool GlContext::supports_dmabuf_import() const {
  return has_egl_extension("EGL_EXT_image_dma_buf_import") && state_->create_image != nullptr &&
         state_->image_target_texture != nullptr;
}

Result<std::shared_ptr<GlContext>> GlContext::create(int device_id) {
  if (device_id < 0)
    return invalid_argument("GlContext: device id " + std::to_string(device_id) + " is negative");
  const char* client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
  if (client == nullptr || std::strstr(client, "EGL_MESA_platform_surfaceless") == nullptr) {
    return unavailable(
        "GL: EGL has no surfaceless platform (EGL_MESA_platform_surfaceless); "
        "install Mesa's EGL (libegl-mesa0)");
  }
  auto get_display = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(
      eglGetProcAddress("eglGetPlatformDisplayEXT"));
  if (get_display == nullptr) return unavailable("GL: eglGetPlatformDisplayEXT is missing");
  auto state = std::make_unique<State>();
  state->id = device_id;
  state->display = get_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
  EGLint major = 0, minor = 0;
  if (state->display == EGL_NO_DISPLAY || !eglInitialize(state->display, &major, &minor)) {
    return unavailable("GL: cannot initialise the surfaceless EGL display (EGL error " +
                       hex(static_cast<unsigned>(eglGetError())) + ")");
  }
  const char* ext = eglQueryString(state->display, EGL_EXTENSIONS);
  state->egl_extensions = ext != nullptr ? ext : "";
  if (!eglBindAPI(EGL_OPENGL_ES_API)) return unavailable("GL: EGL cannot bind the GLES API");
  const EGLint config_attrs[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT, EGL_NONE};
  EGLConfig config = nullptr;
  EGLint n = 0;
  if (!eglChooseConfig(state->display, config_attrs, &config, 1, &n) || n == 0) {
    config = nullptr;  // EGL_KHR_no_config_context
  }
  const EGLint context_attrs[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_NONE};
  state->context = eglCreateContext(state->display, config, EGL_NO_CONTEXT, context_attrs);
  if (state->context == EGL_NO_CONTEXT) {
    return unavailable("GL: cannot create a GLES 3 context (EGL error " +
                       hex(static_cast<unsigned>(eglGetError())) + ")");
  }
  state->create_image =
      reinterpret_cast<PFNEGLCREATEIMAGEKHRPROC>(eglGetProcAddress("eglCreateImageKHR"));
  state->destroy_image =
      reinterpret_cast<PFNEGLDESTROYIMAGEKHRPROC>(eglGetProcAddress("eglDestroyImageKHR"));
  state->image_target_texture = reinterpret_cast<PFNGLEGLIMAGETARGETTEXTURE2DOESPROC>(
      eglGetProcAddress("glEGLImageTargetTexture2DOES"));
  std::shared_ptr<GlContext> ctx;
  try {
    ctx = std::make_shared<GlContext>(std::move(state));
  } catch (const std::bad_alloc&) {
    return resource_exhausted("GL: out of memory");
  }
  NEAT_RETURN_IF_ERROR(ctx->run([&]() -> Status {
    const auto* r = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
    ctx->state_->renderer = r != nullptr ? r : "unknown";
    return {};
  }));
  return ctx;
}

Result<std::shared_ptr<GlContext>> GlContext::for_device(int device_id) {
  static std::mutex mutex;
  static std::map<int, std::weak_ptr<GlContext>> contexts;
  std::lock_guard lock(mutex);
  if (auto existing = contexts[device_id].lock()) return existing;
  NEAT_ASSIGN_OR_RETURN(std::shared_ptr<GlContext> ctx, create(device_id));
  contexts[device_id] = ctx;
  return ctx;
}

Status GlContext::run(const std::function<Status()>& fn) {
  std::lock_guard lock(state_->mutex);
  CurrentGuard guard(state_->display);
  if (!eglMakeCurrent(state_->display, EGL_NO_SURFACE, EGL_NO_SURFACE, state_->context)) {
    return internal_error("GL: eglMakeCurrent failed (EGL error " +
                          hex(static_cast<unsigned>(eglGetError())) + ")");
  }
  while (glGetError() != GL_NO_ERROR) {
  }
  Status status = fn();
  const GLenum err = glGetError();
  if (status.ok() && err != GL_NO_ERROR) {
    return internal_error("GL error " + hex(err) +
                          " during a GL operation on gl:" + std::to_string(state_->id));
  }
  return status;
}

// ---- texture storage ----------------------------------------------------------

namespace {

class GlTextureStorage final : public Storage {
 public:
  GlTextureStorage(std::shared_ptr<GlContext> ctx, GLuint texture, std::int64_t width,
                   std::int64_t height, TexFormat format, EGLImage image,
                   PFNEGLDESTROYIMAGEKHRPROC destroy_image, EGLDisplay display) noexcept
      : Storage(StorageKind::Gl, ctx->device(), width * height * format.pixel_bytes(), false,
                nullptr),
        ctx_(std::move(ctx)),
        texture_(texture),
        width_(width),
        height_(height),
        format_(format),
        image_(image),
        destroy_image_(destroy_image),
        display_(display) {
    g_live_textures.fetch_add(1, std::memory_order_relaxed);
  }
  ~GlTextureStorage() override {
    (void)ctx_->run([this]() -> Status {
      glDeleteTextures(1, &texture_);
      if (image_ != EGL_NO_IMAGE_KHR && destroy_image_ != nullptr) destroy_image_(display_, image_);
      return {};
    });
    g_live_textures.fetch_sub(1, std::memory_order_relaxed);
  }
  bool mappable() const noexcept override { return false; }
  bool donatable() const noexcept override { return false; }
  GLuint texture() const noexcept { return texture_; }
  std::string describe() const override {
    return "gl texture " + std::to_string(texture_) + " " + std::to_string(width_) + "x" +
           std::to_string(height_) + "x" + std::to_string(format_.channels) + " (" +
           std::to_string(size_bytes()) + " B on " + to_string(device()) + ")";
  }

  Status download(std::span<std::byte> dst) override {
    if (static_cast<std::int64_t>(dst.size()) != size_bytes()) {
      return internal_error("download of " + describe() + " into " + std::to_string(dst.size()) +
                            " B");
    }
    return ctx_->run([&]() -> Status {
      NEAT_RETURN_IF_ERROR(wait_fence());
      GLuint fbo = 0;
      glGenFramebuffers(1, &fbo);
      glBindFramebuffer(GL_FRAMEBUFFER, fbo);
      glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, texture_, 0);
      struct Cleanup {
        GLuint fbo;
        ~Cleanup() {
          glBindFramebuffer(GL_FRAMEBUFFER, 0);
          glDeleteFramebuffers(1, &fbo);
        }
      } cleanup{fbo};
      const GLenum status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
      if (status != GL_FRAMEBUFFER_COMPLETE) {
        return unimplemented("download of " + describe() +
                             ": the driver cannot read this texture format back (framebuffer "
                             "status " +
                             hex(status) + ")");
      }
      glPixelStorei(GL_PACK_ALIGNMENT, 1);
      GLint read_format = 0, read_type = 0;
      glGetIntegerv(GL_IMPLEMENTATION_COLOR_READ_FORMAT, &read_format);
      glGetIntegerv(GL_IMPLEMENTATION_COLOR_READ_TYPE, &read_type);
      const auto w = static_cast<GLsizei>(width_), h = static_cast<GLsizei>(height_);
      if ((static_cast<GLenum>(read_format) == format_.format &&
           static_cast<GLenum>(read_type) == format_.type) ||
          format_.channels == 4) {
        glReadPixels(0, 0, w, h, format_.format, format_.type, dst.data());
      } else {
        // GLES guarantees RGBA reads only: read RGBA and keep our channels.
        std::vector<std::byte> rgba(
            static_cast<std::size_t>(width_ * height_ * 4 * format_.channel_bytes));
        glReadPixels(0, 0, w, h, GL_RGBA, format_.type, rgba.data());
        const std::size_t px = static_cast<std::size_t>(format_.pixel_bytes());
        const std::size_t src_px = static_cast<std::size_t>(4 * format_.channel_bytes);
        const std::size_t n = static_cast<std::size_t>(width_ * height_);
        for (std::size_t i = 0; i < n; ++i)
          std::memcpy(&dst[i * px], &rgba[i * src_px], px);
      }
      g_downloads.fetch_add(1, std::memory_order_relaxed);
      return {};
    });
  }

 private:
  std::shared_ptr<GlContext> ctx_;
  GLuint texture_;
  std::int64_t width_;
  std::int64_t height_;
  TexFormat format_;
  EGLImage image_;
  PFNEGLDESTROYIMAGEKHRPROC destroy_image_;
  EGLDisplay display_;
};

// One texture to create: its size, format and (for uploads) source rows.
struct PlaneUpload {
  std::int64_t width = 0;
  std::int64_t height = 0;
  TexFormat format;
  const std::byte* src = nullptr;
  std::int64_t row_stride = 0;
  PlaneRole role = PlaneRole::Y;
};

}  // namespace

unsigned gl_texture(const NeatTensor& tensor, int storage) noexcept {
  if (!tensor.defined() || storage < 0 || storage >= tensor.storage_count()) return 0;
  const auto* s = dynamic_cast<const GlTextureStorage*>(tensor.storage(storage).get());
  return s != nullptr ? s->texture() : 0;
}

GlStats gl_stats() noexcept {
  return GlStats{g_live_textures.load(), g_uploads.load(), g_downloads.load(), g_fence_waits.load(),
                 g_dmabuf_imports.load()};
}

namespace {

// The planes an upload reads: one per plane of a frame, or the one [H, W(, C)] image.
struct UploadPlan {
  std::array<PlaneUpload, kMaxPlanes> planes{};
  int count = 0;
  std::int64_t bytes = 0;
};

Status plan_frame_planes(const NeatTensor& tensor, const Mapping& mapping, UploadPlan& plan) {
  plan.count = tensor.plane_count();
  for (int i = 0; i < plan.count; ++i) {
    const PlaneLayout& p = tensor.plane_layout(i);
    auto& u = plan.planes[static_cast<std::size_t>(i)];
    NEAT_ASSIGN_OR_RETURN(u.format, tex_format(DType::U8, p.samples));
    NEAT_ASSIGN_OR_RETURN(u.src, mapping.plane_data(p.role));
    u.width = p.cols;
    u.height = p.rows;
    u.row_stride = p.row_stride;
    u.role = p.role;
  }
  return {};
}

Status plan_image(const NeatTensor& tensor, const Mapping& mapping, const std::string& what,
                  UploadPlan& plan) {
  const bool hwc =
      !tensor.is_image() || tensor.layout() == Layout::HWC || tensor.layout() == Layout::HW;
  if (!hwc || tensor.rank() < 2 || tensor.rank() > 3) {
    return failed_precondition(what +
                               ": textures hold [H, W] or [H, W, C] pixels; convert "
                               "with to_hwc() or reshape first");
  }
  const std::int64_t c = tensor.rank() == 3 ? tensor.shape()[2] : 1;
  auto& u = plan.planes[0];
  NEAT_ASSIGN_OR_RETURN(u.format, tex_format(tensor.dtype(), c));
  const std::int64_t item = item_size(tensor.dtype());
  const bool packed =
      (tensor.rank() == 2 || tensor.strides()[2] == item) && tensor.strides()[1] == c * item;
  if (!packed || tensor.strides()[0] <= 0) {
    return failed_precondition(what + ": pixels are not packed in rows (strides " +
                               tensor.strides().to_string() + "); pack it with contiguous()");
  }
  plan.count = 1;
  u.width = tensor.shape()[1];
  u.height = tensor.shape()[0];
  u.src = mapping.data();
  u.row_stride = tensor.strides()[0];
  return {};
}

Result<UploadPlan> plan_upload(const NeatTensor& tensor, const Mapping& mapping,
                               const std::string& what) {
  UploadPlan plan;
  NEAT_RETURN_IF_ERROR(tensor.is_composite() ? plan_frame_planes(tensor, mapping, plan)
                                             : plan_image(tensor, mapping, what, plan));
  for (int i = 0; i < plan.count; ++i) {
    const auto& u = plan.planes[static_cast<std::size_t>(i)];
    if (u.row_stride % u.format.pixel_bytes() != 0) {
      return failed_precondition(what + ": a row stride of " + std::to_string(u.row_stride) +
                                 " B is not a whole number of " +
                                 std::to_string(u.format.pixel_bytes()) +
                                 "-byte pixels; pack it with contiguous()");
    }
    if (u.width <= 0 || u.height <= 0) return invalid_argument(what + ": empty image");
    plan.bytes += u.width * u.height * u.format.pixel_bytes();
  }
  return plan;
}

CopyRequest upload_request(const NeatTensor& tensor, const GlContext& ctx,
                           const ConversionOptions& options, std::int64_t bytes,
                           std::source_location where) {
  CopyRequest request;
  request.kind = ConversionKind::Transfer;
  request.reason = options.reason.value_or(ConversionReason::Device);
  request.explicit_call = !options.implicit;
  request.operation = options.requested_by.empty() ? "upload" : options.requested_by;
  request.fix = options.fix.empty() ? std::string_view("call upload() explicitly") : options.fix;
  request.where = where;
  request.policy = options.policy;
  request.bytes = bytes;
  request.source = tensor.description();
  request.destination = request.source;
  request.destination.device = ctx.device();
  request.destination.storage = StorageKind::Gl;
  return request;
}

// On the context's thread: one texture per plane, filled from the plan's rows.
Status fill_textures(const UploadPlan& plan, const std::string& what,
                     std::array<GLuint, kMaxPlanes>& textures) {
  const int n = plan.count;
  GLint max_size = 0;
  glGetIntegerv(GL_MAX_TEXTURE_SIZE, &max_size);
  glGenTextures(n, textures.data());
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  for (int i = 0; i < n; ++i) {
    const auto& u = plan.planes[static_cast<std::size_t>(i)];
    if (u.width > max_size || u.height > max_size) {
      glDeleteTextures(n, textures.data());
      return out_of_range(what + ": " + std::to_string(u.width) + "x" + std::to_string(u.height) +
                          " exceeds GL_MAX_TEXTURE_SIZE " + std::to_string(max_size));
    }
    glBindTexture(GL_TEXTURE_2D, textures[static_cast<std::size_t>(i)]);
    glTexStorage2D(GL_TEXTURE_2D, 1, u.format.internal, static_cast<GLsizei>(u.width),
                   static_cast<GLsizei>(u.height));
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, static_cast<GLint>(u.row_stride / u.format.pixel_bytes()));
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, static_cast<GLsizei>(u.width),
                    static_cast<GLsizei>(u.height), u.format.format, u.format.type, u.src);
  }
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  glBindTexture(GL_TEXTURE_2D, 0);
  return wait_fence();
}

using PlaneStorages = std::array<std::shared_ptr<Storage>, kMaxPlanes>;

// Creates and fills the textures, then gives each to a storage that deletes it.
Status create_textures(const std::shared_ptr<GlContext>& ctx, const UploadPlan& plan,
                       const std::string& what, PlaneStorages& storages) {
  std::array<GLuint, kMaxPlanes> textures{};
  NEAT_RETURN_IF_ERROR(ctx->run([&]() { return fill_textures(plan, what, textures); }));
  for (int i = 0; i < plan.count; ++i) {
    const auto& u = plan.planes[static_cast<std::size_t>(i)];
    try {
      storages[static_cast<std::size_t>(i)] = std::make_shared<GlTextureStorage>(
          ctx, textures[static_cast<std::size_t>(i)], u.width, u.height, u.format, EGL_NO_IMAGE_KHR,
          nullptr, EGL_NO_DISPLAY);
    } catch (const std::bad_alloc&) {
      for (int j = i; j < plan.count; ++j) {
        (void)ctx->run([&]() -> Status {
          glDeleteTextures(1, &textures[static_cast<std::size_t>(j)]);
          return {};
        });
      }
      return resource_exhausted(what + ": out of memory");
    }
  }
  g_uploads.fetch_add(1, std::memory_order_relaxed);
  return {};
}

// The uploaded tensor: the source's shape and frame over the new textures.
Result<NeatTensor> over_textures(const NeatTensor& tensor, const UploadPlan& plan,
                                 const PlaneStorages& storages) {
  const auto& planes = plan.planes;
  if (tensor.is_composite()) {
    std::array<PlaneSpec, kMaxPlanes> specs{};
    for (int i = 0; i < plan.count; ++i) {
      const auto k = static_cast<std::size_t>(i);
      specs[k] = PlaneSpec{planes[k].role, storages[k],
                           planes[k].width * planes[k].format.pixel_bytes(), 0};
    }
    return NeatTensor::compose_planes(
        tensor.pixel_format(), tensor.image().width, tensor.image().height,
        std::span(specs.data(), static_cast<std::size_t>(plan.count)));
  }
  const std::int64_t item = item_size(tensor.dtype());
  const std::int64_t c = planes[0].format.channels;
  Dims strides = tensor.rank() == 3 ? Dims{planes[0].width * c * item, c * item, item}
                                    : Dims{planes[0].width * item, item};
  NEAT_ASSIGN_OR_RETURN(NeatTensor out, NeatTensor::from_storage(storages[0], tensor.dtype(),
                                                                 tensor.shape(), strides));
  if (tensor.is_image()) return out.as_image(tensor.image());
  return out;
}

Result<NeatTensor> upload(const NeatTensor& tensor, const std::shared_ptr<GlContext>& ctx,
                          const ConversionOptions& options, std::source_location where) {
  const std::string what = "upload(" + to_string(ctx->device()) + ") of " + tensor.to_string();
  NEAT_ASSIGN_OR_RETURN(Mapping mapping, tensor.map(MapMode::Read));
  NEAT_ASSIGN_OR_RETURN(UploadPlan plan, plan_upload(tensor, mapping, what));
  PlaneStorages storages;
  NEAT_RETURN_IF_ERROR(
      run_through_gate(upload_request(tensor, *ctx, options, plan.bytes, where),
                       [&]() { return create_textures(ctx, plan, what, storages); }));
  return over_textures(tensor, plan, storages);
}

}  // namespace

Result<NeatTensor> upload(const NeatTensor& tensor, Device device, ConversionOptions options,
                          std::source_location where) {
  if (!tensor.defined()) return failed_precondition("upload: the tensor is undefined");
  if (tensor.device() == device) return tensor;
  if (device.type == DeviceType::Cpu) return tensor.cpu(options, where);
  NEAT_ASSIGN_OR_RETURN(std::shared_ptr<GlContext> ctx, GlContext::for_device(device.id));
  if (tensor.device().type != DeviceType::Cpu) {
    NEAT_ASSIGN_OR_RETURN(NeatTensor host, tensor.cpu(options, where));
    return upload(host, ctx, options, where);
  }
  return upload(tensor, ctx, options, where);
}

namespace {

// eglCreateImageKHR's attributes for one plane of a DMA-BUF frame.
std::vector<EGLint> dmabuf_image_attributes(std::int64_t width, std::int64_t height, EGLint fourcc,
                                            const DmaBufPlane& p, std::uint64_t modifier) {
  std::vector<EGLint> attrs = {EGL_WIDTH,
                               static_cast<EGLint>(width),
                               EGL_HEIGHT,
                               static_cast<EGLint>(height),
                               EGL_LINUX_DRM_FOURCC_EXT,
                               fourcc,
                               EGL_DMA_BUF_PLANE0_FD_EXT,
                               p.fd,
                               EGL_DMA_BUF_PLANE0_OFFSET_EXT,
                               static_cast<EGLint>(p.offset),
                               EGL_DMA_BUF_PLANE0_PITCH_EXT,
                               static_cast<EGLint>(p.stride)};
  if (modifier != kDrmFormatModLinear) {
    attrs.insert(attrs.end(),
                 {EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT, static_cast<EGLint>(modifier & 0xffffffffu),
                  EGL_DMA_BUF_PLANE0_MODIFIER_HI_EXT, static_cast<EGLint>(modifier >> 32)});
  }
  attrs.push_back(EGL_NONE);
  return attrs;
}

}  // namespace

Result<NeatTensor> wrap_dmabuf_gl(const DmaBufImage& image, GlContext& context) {
  if (!context.supports_dmabuf_import()) {
    return unavailable("wrap_dmabuf_gl: " + context.renderer() +
                       " has no EGL_EXT_image_dma_buf_import; import the frame with "
                       "wrap_dmabuf_image() and upload it with upload()");
  }
  NEAT_ASSIGN_OR_RETURN(PixelFormat format, pixel_format_from_drm_fourcc(image.fourcc));
  auto fourcc = [](char a, char b, char c, char d) {
    return static_cast<EGLint>(
        static_cast<std::uint32_t>(a) | (static_cast<std::uint32_t>(b) << 8) |
        (static_cast<std::uint32_t>(c) << 16) | (static_cast<std::uint32_t>(d) << 24));
  };
  const EGLint r8 = fourcc('R', '8', ' ', ' ');
  const EGLint gr88 = fourcc('G', 'R', '8', '8');
  std::array<PlaneUpload, kMaxPlanes> planes{};
  std::array<EGLint, kMaxPlanes> plane_fourcc{};
  int n = 0;
  if (is_planar(format)) {
    const PlaneOrder order = plane_order(format);
    n = order.count;
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const PlaneGeometry g = plane_geometry(format, order.roles[k], image.width, image.height);
      NEAT_ASSIGN_OR_RETURN(planes[k].format, tex_format(DType::U8, g.samples));
      planes[k].width = g.cols;
      planes[k].height = g.rows;
      planes[k].role = order.roles[k];
      plane_fourcc[k] = g.samples == 2 ? gr88 : r8;
    }
  } else if (format == PixelFormat::RGBA || format == PixelFormat::BGRA ||
             format == PixelFormat::GRAY8) {
    n = 1;
    NEAT_ASSIGN_OR_RETURN(planes[0].format, tex_format(DType::U8, channels(format)));
    planes[0].width = image.width;
    planes[0].height = image.height;
    plane_fourcc[0] = static_cast<EGLint>(image.fourcc);
  } else {
    return unimplemented("wrap_dmabuf_gl: " + std::string(to_string(format)) +
                         " (24-bit) is not importable as a GL texture; use RGBA/BGRA");
  }
  if (image.plane_count != n) {
    return invalid_argument("wrap_dmabuf_gl: " + std::to_string(image.plane_count) +
                            " planes given, " + std::to_string(n) + " expected");
  }
  if (image.modifier != kDrmFormatModLinear &&
      !context.has_egl_extension("EGL_EXT_image_dma_buf_import_modifiers")) {
    return unimplemented(
        "wrap_dmabuf_gl: modifier given but the driver has no "
        "EGL_EXT_image_dma_buf_import_modifiers");
  }
  GlContext::State& st = *context.state_;
  std::shared_ptr<GlContext> shared = context.shared_from_this();
  std::array<GLuint, kMaxPlanes> textures{};
  std::array<EGLImage, kMaxPlanes> images{};
  images.fill(EGL_NO_IMAGE_KHR);
  NEAT_RETURN_IF_ERROR(context.run([&]() -> Status {
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const DmaBufPlane& p = image.planes[k];
      const std::vector<EGLint> attrs = dmabuf_image_attributes(planes[k].width, planes[k].height,
                                                                plane_fourcc[k], p, image.modifier);
      images[k] =
          st.create_image(st.display, EGL_NO_CONTEXT, EGL_LINUX_DMA_BUF_EXT, nullptr, attrs.data());
      if (images[k] == EGL_NO_IMAGE_KHR) {
        const EGLint err = eglGetError();
        for (int j = 0; j < i; ++j) {
          glDeleteTextures(1, &textures[static_cast<std::size_t>(j)]);
          st.destroy_image(st.display, images[static_cast<std::size_t>(j)]);
        }
        return invalid_argument("wrap_dmabuf_gl: plane " + std::to_string(i) +
                                " was refused by eglCreateImageKHR (EGL error " +
                                hex(static_cast<unsigned>(err)) + ")");
      }
      glGenTextures(1, &textures[k]);
      glBindTexture(GL_TEXTURE_2D, textures[k]);
      st.image_target_texture(GL_TEXTURE_2D, images[k]);
    }
    glBindTexture(GL_TEXTURE_2D, 0);
    return {};
  }));
  std::array<std::shared_ptr<Storage>, kMaxPlanes> storages;
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    storages[k] = std::make_shared<GlTextureStorage>(shared, textures[k], planes[k].width,
                                                     planes[k].height, planes[k].format, images[k],
                                                     st.destroy_image, st.display);
  }
  g_dmabuf_imports.fetch_add(1, std::memory_order_relaxed);
  if (is_planar(format)) {
    std::array<PlaneSpec, kMaxPlanes> specs{};
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      specs[k] = PlaneSpec{planes[k].role, storages[k],
                           planes[k].width * planes[k].format.pixel_bytes(), 0};
    }
    return NeatTensor::compose_planes(format, image.width, image.height,
                                      std::span(specs.data(), static_cast<std::size_t>(n)));
  }
  const std::int64_t c = planes[0].format.channels;
  Dims shape = c == 1 ? Dims{image.height, image.width} : Dims{image.height, image.width, c};
  Dims strides = c == 1 ? Dims{image.width, 1} : Dims{image.width * c, c, 1};
  NEAT_ASSIGN_OR_RETURN(NeatTensor out,
                        NeatTensor::from_storage(storages[0], DType::U8, shape, strides));
  return out.as_image(
      ImageSpec{format, image.width, image.height, c == 1 ? Layout::HW : Layout::HWC});
}

}  // namespace neat

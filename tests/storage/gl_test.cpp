// GL backend on llvmpipe (surfaceless Mesa): uploads and downloads as gated
// transfers, a real GL operation (a shader inverting a texture) between them,
// fences, leak checks; DMA-BUF import skipped where EGL lacks it.
#include "neat/storage/gl.hpp"

#include <EGL/egl.h>
#include <GLES3/gl3.h>
#include <gtest/gtest.h>

#include "neat/contract/mapping.hpp"
#include "neat/policy/policy.hpp"
#include "neat/telemetry/event_sink.hpp"
#include "support/fakes.hpp"
#include "support/fds.hpp"

namespace neat {
namespace {

using testing::element_bytes;
using testing::fill_pattern;
using testing::TelemetryTest;

class GlTest : public TelemetryTest {
 protected:
  void SetUp() override {
    TelemetryTest::SetUp();
    auto ctx = GlContext::for_device(0);
    if (!ctx.ok()) GTEST_SKIP() << "no EGL/GLES here: " << ctx.error().to_string();
    ctx_ = *ctx;
  }
  static NeatTensor pattern(DType dtype, Dims shape, std::int64_t row_pad = 0) {
    Dims strides = shape;
    const std::int64_t item = item_size(dtype);
    const std::int64_t c = shape.size() == 3 ? shape[2] : 1;
    strides = shape.size() == 3 ? Dims{shape[1] * c * item + row_pad, c * item, item}
                                : Dims{shape[1] * item + row_pad, item};
    auto base = NeatTensor::allocate(DType::U8, Dims{shape[0] * strides[0]});
    auto w = std::move(*base).make_writable();
    fill_pattern(*w, 7, 3);
    if (dtype == DType::F32) {  // keep floats finite and exact
      auto m = w->map(MapMode::Write);
      for (std::int64_t r = 0; r < shape[0]; ++r) {
        auto* row = reinterpret_cast<float*>(m->mutable_data() + r * strides[0]);
        for (std::int64_t i = 0; i < shape[1] * c; ++i)
          row[i] = static_cast<float>(r * 1000 + i) * 0.25f;
      }
    }
    auto t = NeatTensor::from_storage(w->storage(), dtype, shape, strides);
    EXPECT_TRUE(t.ok()) << t.error().to_string();
    return *t;
  }
  std::shared_ptr<GlContext> ctx_;
};

TEST_F(GlTest, UploadDownloadRoundTripsEveryFormatThroughTheGate) {
  const Device gl{DeviceType::Gl, 0};
  struct Case {
    DType dtype;
    Dims shape;
    std::int64_t pad;
  };
  const Case cases[] = {{DType::U8, Dims{23, 37, 4}, 12}, {DType::U8, Dims{23, 37, 3}, 9},
                        {DType::U8, Dims{17, 31}, 5},     {DType::U8, Dims{8, 9, 2}, 0},
                        {DType::F32, Dims{5, 7, 4}, 16},  {DType::F32, Dims{5, 7}, 0}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.shape.to_string());
    NeatTensor host = pattern(c.dtype, c.shape, c.pad);
    sink_->clear();
    auto dev = upload(host, gl);
    NEAT_ASSERT_OK(dev);
    EXPECT_EQ(dev->device(), gl);
    EXPECT_EQ(dev->storage_kind(), StorageKind::Gl);
    EXPECT_NE(gl_texture(*dev), 0u);
    NEAT_EXPECT_ERROR(dev->map(), ErrorCode::FailedPrecondition, "cpu()");
    auto back = dev->cpu();
    NEAT_ASSERT_OK(back);
    EXPECT_EQ(back->device(), kCpu);
    EXPECT_EQ(element_bytes(*back), element_bytes(host));
    auto ev = events();
    ASSERT_EQ(ev.size(), 2u);
    for (const auto& e : ev) {
      EXPECT_EQ(e.event.kind, ConversionKind::Transfer);
      EXPECT_EQ(e.event.reason, ConversionReason::Device);
      EXPECT_TRUE(e.event.explicit_call);
    }
    EXPECT_EQ(ev[0].operation, "upload");
    EXPECT_EQ(ev[1].operation, "cpu");
  }
}

TEST_F(GlTest, PlanarFramesBecomeOneTexturePerPlane) {
  auto f = NeatTensor::allocate_image(PixelFormat::NV12, 33, 19, {.row_alignment = 64});
  auto w = std::move(*f).make_writable();
  {
    auto m = w->map(MapMode::Write);
    NEAT_ASSERT_OK(m);
    for (int i = 0; i < 2; ++i) {
      const PlaneLayout& p = w->plane_layout(i);
      std::byte* base = *m->mutable_plane_data(p.role);
      for (std::int64_t k = 0; k < p.rows * p.row_stride; ++k)
        base[k] = std::byte((k * 3 + i) & 0xff);
    }
  }
  auto dev = upload(*w, Device{DeviceType::Gl, 0});
  NEAT_ASSERT_OK(dev);
  EXPECT_EQ(dev->storage_count(), 2);
  EXPECT_EQ(dev->plane_layout(1).role, PlaneRole::UV);
  auto back = dev->cpu();
  NEAT_ASSERT_OK(back);
  auto a = back->map();
  auto b = w->map();
  for (int i = 0; i < 2; ++i) {
    const PlaneLayout& pa = back->plane_layout(i);
    const PlaneLayout& pb = w->plane_layout(i);
    for (std::int64_t r = 0; r < pa.rows; ++r) {
      ASSERT_EQ(std::memcmp(*a->plane_data(pa.role) + r * pa.row_stride,
                            *b->plane_data(pb.role) + r * pb.row_stride,
                            static_cast<std::size_t>(pa.cols * pa.samples)),
                0)
          << "plane " << i << " row " << r;
    }
  }
}

// A trivial GL operation between upload and download: a fragment shader
// writes 1 - x of the input texture into an output texture.
TEST_F(GlTest, ShaderInvertBetweenUploadAndDownload) {
  NeatTensor host = pattern(DType::U8, Dims{16, 24, 4});
  auto in = upload(host, Device{DeviceType::Gl, 0});
  auto zeros = NeatTensor::allocate(DType::U8, Dims{16, 24, 4});
  auto out = upload(*zeros, Device{DeviceType::Gl, 0});
  NEAT_ASSERT_OK(in);
  NEAT_ASSERT_OK(out);
  const GLuint in_tex = gl_texture(*in), out_tex = gl_texture(*out);
  NEAT_ASSERT_OK(ctx_->run([&]() -> Status {
    const char* vs =
        "#version 300 es\nvoid main(){vec2 p=vec2((gl_VertexID<<1)&2,gl_VertexID&2);"
        "gl_Position=vec4(p*2.0-1.0,0,1);}";
    const char* fs =
        "#version 300 es\nprecision mediump float;uniform sampler2D t;out vec4 o;"
        "void main(){o=vec4(1.0)-texelFetch(t,ivec2(gl_FragCoord.xy),0);}";
    auto compile = [](GLenum type, const char* src) {
      GLuint s = glCreateShader(type);
      glShaderSource(s, 1, &src, nullptr);
      glCompileShader(s);
      return s;
    };
    GLuint prog = glCreateProgram();
    GLuint v = compile(GL_VERTEX_SHADER, vs), f = compile(GL_FRAGMENT_SHADER, fs);
    glAttachShader(prog, v);
    glAttachShader(prog, f);
    glLinkProgram(prog);
    GLint linked = 0;
    glGetProgramiv(prog, GL_LINK_STATUS, &linked);
    if (!linked) return internal_error("shader did not link");
    GLuint fbo = 0, vao = 0;
    glGenFramebuffers(1, &fbo);
    glBindFramebuffer(GL_FRAMEBUFFER, fbo);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, out_tex, 0);
    glGenVertexArrays(1, &vao);
    glBindVertexArray(vao);
    glViewport(0, 0, 24, 16);
    glUseProgram(prog);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, in_tex);
    glDrawArrays(GL_TRIANGLES, 0, 3);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    glDeleteFramebuffers(1, &fbo);
    glDeleteVertexArrays(1, &vao);
    glDeleteProgram(prog);
    glDeleteShader(v);
    glDeleteShader(f);
    return {};
  }));
  const auto fences = gl_stats().fence_waits;
  auto result = out->cpu();
  NEAT_ASSERT_OK(result);
  EXPECT_GT(gl_stats().fence_waits, fences) << "downloads wait on a fence";
  const auto want = element_bytes(host);
  const auto got = element_bytes(*result);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], 255 - want[i]) << "byte " << i;
}

TEST_F(GlTest, ImplicitDownloadsAreRuledByThePolicy) {
  auto dev = upload(pattern(DType::U8, Dims{4, 4}), Device{DeviceType::Gl, 0});
  NEAT_ASSERT_OK(dev);
  NEAT_EXPECT_ERROR(dev->to_cpu_if_needed({.policy = ConversionPolicy::Strict}),
                    ErrorCode::FailedPrecondition, "cpu()");
  sink_->clear();
  auto ok = dev->to_cpu_if_needed({.policy = ConversionPolicy::AllowWithTrace});
  NEAT_ASSERT_OK(ok);
  ASSERT_EQ(events().size(), 1u);
  EXPECT_FALSE(events()[0].event.explicit_call);
  auto host = pattern(DType::U8, Dims{4, 4});
  auto same = host.to_cpu_if_needed({.policy = ConversionPolicy::Strict});
  NEAT_ASSERT_OK(same);  // already on the CPU: no transfer, no event
  EXPECT_EQ(same->storage(), host.storage());
}

TEST_F(GlTest, BadInputsAreTypedErrors) {
  const Device gl{DeviceType::Gl, 0};
  auto i16 = NeatTensor::allocate(DType::I16, Dims{4, 4});
  NEAT_EXPECT_ERROR(upload(*i16, gl), ErrorCode::Unimplemented, "convert_dtype()");
  auto five = NeatTensor::allocate(DType::U8, Dims{4, 4, 5});
  NEAT_EXPECT_ERROR(upload(*five, gl), ErrorCode::Unimplemented, "1 to 4 channels");
  auto t = NeatTensor::allocate(DType::U8, Dims{4, 6, 3});
  NEAT_EXPECT_ERROR(upload(*t->transpose(0, 1), gl), ErrorCode::FailedPrecondition, "contiguous()");
  auto odd = NeatTensor::from_storage(t->storage(), DType::U8, Dims{3, 2, 3}, Dims{7, 3, 1});
  NEAT_EXPECT_ERROR(upload(*odd, gl), ErrorCode::FailedPrecondition, "whole number");
  auto one_d = NeatTensor::allocate(DType::U8, Dims{16});
  NEAT_EXPECT_ERROR(upload(*one_d, gl), ErrorCode::FailedPrecondition, "[H, W]");
  NEAT_EXPECT_ERROR(upload(NeatTensor(), gl), ErrorCode::FailedPrecondition, "undefined");
  NEAT_EXPECT_ERROR(GlContext::create(-1), ErrorCode::InvalidArgument, "negative");
}

TEST_F(GlTest, DmaBufImportWhereEglSupportsIt) {
  const int fd = testing::make_memfd(64 * 64 * 4);
  const DmaBufImage image{*drm_fourcc(PixelFormat::RGBA), kDrmFormatModLinear, 64, 64, 1,
                          {DmaBufPlane{fd, 0, 256}}};
  if (!ctx_->supports_dmabuf_import()) {
    NEAT_EXPECT_ERROR(wrap_dmabuf_gl(image, *ctx_), ErrorCode::Unavailable,
                      "EGL_EXT_image_dma_buf_import");
    ::close(fd);
    GTEST_SKIP() << ctx_->renderer() << " has no EGL_EXT_image_dma_buf_import (llvmpipe does "
                 << "not); the zero-copy import needs a GPU driver";
  }
  // With a GPU driver a memfd is not a dma-buf: the import must fail cleanly.
  auto t = wrap_dmabuf_gl(image, *ctx_);
  EXPECT_FALSE(t.ok());
  ::close(fd);
}

TEST_F(GlTest, ThousandTransfersLeaveNoTexturesBehind) {
  const auto before = gl_stats();
  NeatTensor host = pattern(DType::U8, Dims{32, 32, 4});
  for (int i = 0; i < 1000; ++i) {
    auto dev = upload(host, Device{DeviceType::Gl, 0});
    ASSERT_TRUE(dev.ok());
    auto back = dev->cpu();
    ASSERT_TRUE(back.ok());
  }
  const auto after = gl_stats();
  EXPECT_EQ(after.live_textures, before.live_textures);
  EXPECT_EQ(after.uploads - before.uploads, 1000u);
  EXPECT_EQ(after.downloads - before.downloads, 1000u);
}

}  // namespace
}  // namespace neat

#include "neat/kernels/preprocess.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "neat/kernels/cast.hpp"
#include "neat/kernels/yuv_matrix.hpp"

namespace neat {

namespace {

struct Planes {
  const std::uint8_t* y;
  std::int64_t y_stride;
  const std::uint8_t* u;  // first U sample; chroma sample i of a row is at i * step
  const std::uint8_t* v;
  std::int64_t u_stride, v_stride, step;
  std::int64_t width, height;
};

// Horizontally resampled source rows, two slots: consecutive output rows
// share source rows, so each is resampled about once.
struct RowCache {
  std::int64_t index[2] = {-1, -1};
  std::vector<float> rows[2][2];  // [slot][component]: Y uses component 0; chroma U, V

  void reset(std::size_t width, int components) {
    index[0] = index[1] = -1;
    for (auto& slot : rows) {
      for (int c = 0; c < components; ++c)
        slot[c].resize(width);
    }
  }
  // The slot holding `row`, filling it with `fill(row, slot)` when absent,
  // never evicting the slot that holds `keep`.
  template <class F>
  int get(std::int64_t row, std::int64_t keep, F&& fill) {
    for (int s = 0; s < 2; ++s) {
      if (index[s] == row) return s;
    }
    const int s = index[0] == keep ? 1 : 0;
    fill(row, rows[s]);
    index[s] = row;
    return s;
  }
};

struct Tables {  // per output column, thread-local scratch reused across calls
  std::vector<std::int32_t> x0, x1, c0, c1;
  std::vector<float> fx;
  RowCache luma, chroma;
};

Tables& scratch() {
  thread_local Tables t;
  return t;
}

// OpenCV INTER_LINEAR source coordinate of output index d.
inline void linear_coord(std::int64_t d, double scale, std::int64_t size, std::int32_t* i0,
                         std::int32_t* i1, float* f) {
  double s = (static_cast<double>(d) + 0.5) * scale - 0.5;
  auto i = static_cast<std::int64_t>(std::floor(s));
  double fr = s - static_cast<double>(i);
  if (i < 0) {
    i = 0;
    fr = 0;
  }
  if (i >= size - 1) {
    i = size - 1;
    fr = 0;
  }
  *i0 = static_cast<std::int32_t>(i);
  *i1 = static_cast<std::int32_t>(std::min<std::int64_t>(i + 1, size - 1));
  *f = static_cast<float>(fr);
}

// OpenCV INTER_NEAREST source index of output index d.
inline std::int32_t nearest_coord(std::int64_t d, double scale, std::int64_t size) {
  return static_cast<std::int32_t>(
      std::min<std::int64_t>(static_cast<std::int64_t>(std::floor(d * scale)), size - 1));
}

template <class O>
inline void put(std::byte* plane, std::int64_t i, float v) noexcept {
  if constexpr (std::is_same_v<O, float>) {
    std::memcpy(plane + i * 4, &v, 4);
  } else if constexpr (std::is_same_v<O, Half>) {
    const Half h = to_half(v);
    std::memcpy(plane + i * 2, &h, 2);
  } else {
    const BFloat16 b = to_bfloat16(v);
    std::memcpy(plane + i * 2, &b, 2);
  }
}

struct Affine {  // out_c = rgb[map[c]] * a[c] + b[c]
  int map[3];
  float a[3], b[3];
  const YuvToRgb* yuv;  // the colour standard's coefficients
};

// Blends two resampled rows vertically, converts YUV to RGB, clamps,
// normalizes and writes one output row of each plane. All arrays are
// contiguous floats: the compiler vectorises the F32 loop.
// Branch-free clamp to [0, hi] on values (std::min / std::max return
// references, which keeps the loop from being vectorised).
inline float clamp_to(float v, float hi) noexcept {
  v = v > 0.0f ? v : 0.0f;
  return v < hi ? v : hi;
}

struct Rgb {
  float r, g, b;
};

// One pixel of blend_and_finish, scalar: blend two resampled rows at fy,
// convert YUV to RGB and clamp to [0, 255].
inline Rgb blended_rgb(const float* ya, const float* yb, const float* ua, const float* ub,
                       const float* va, const float* vb, float fy, std::int64_t x,
                       const YuvToRgb& k) noexcept {
  const float y = ya[x] + (yb[x] - ya[x]) * fy;
  const float u = ua[x] + (ub[x] - ua[x]) * fy - 128.0f;
  const float v = va[x] + (vb[x] - va[x]) * fy - 128.0f;
  const float ym = y - static_cast<float>(k.y_offset);
  const float yy = (ym > 0.0f ? ym : 0.0f) * k.fy;
  return {clamp_to(yy + k.frv * v, 255.0f), clamp_to(yy + k.fgv * v + k.fgu * u, 255.0f),
          clamp_to(yy + k.fbu * u, 255.0f)};
}

template <class O>
void blend_and_finish(const float* __restrict ya, const float* __restrict yb,
                      const float* __restrict ua, const float* __restrict ub,
                      const float* __restrict va, const float* __restrict vb, float fy,
                      std::int64_t w, const Affine& k, std::byte* const* planes,
                      std::int64_t row_start) {
  // Output plane c holds rgb[k.map[c]]: R is plane 0 (RGB order) or 2 (BGR); G is plane 1.
  const int ri = k.map[0] == 0 ? 0 : 2, bi = 2 - ri;
  const float ra = k.a[ri], rb = k.b[ri], ga = k.a[1], gb = k.b[1], ba = k.a[bi], bb = k.b[bi];
  const YuvToRgb& m = *k.yuv;
  const float kCY = m.fy, kCVR = m.frv, kCVG = m.fgv, kCUG = m.fgu, kCUB = m.fbu;
  const float y_off = static_cast<float>(m.y_offset);
  if constexpr (std::is_same_v<O, float>) {
    float* __restrict rp = reinterpret_cast<float*>(planes[ri]) + row_start;
    float* __restrict gp = reinterpret_cast<float*>(planes[1]) + row_start;
    float* __restrict bp = reinterpret_cast<float*>(planes[bi]) + row_start;
    // Four pixels at a time with GCC/Clang vector extensions (SSE2 here,
    // NEON on ARM); the selects below are branch-free vector blends.
    using v4 = float __attribute__((vector_size(16)));
    auto load = [](const float* p) {
      v4 v;
      std::memcpy(&v, p, sizeof v);
      return v;
    };
    auto store = [](float* p, v4 v) { std::memcpy(p, &v, sizeof v); };
    const v4 zero = {0.f, 0.f, 0.f, 0.f};
    const v4 top = zero + 255.0f, vfy = zero + fy;
    auto clamp4 = [&](v4 v) {
      v = v > zero ? v : zero;
      return v < top ? v : top;
    };
    std::int64_t x = 0;
    for (; x + 4 <= w; x += 4) {
      const v4 ya4 = load(ya + x), ua4 = load(ua + x), va4 = load(va + x);
      const v4 y = ya4 + (load(yb + x) - ya4) * vfy;
      const v4 u = ua4 + (load(ub + x) - ua4) * vfy - 128.0f;
      const v4 v = va4 + (load(vb + x) - va4) * vfy - 128.0f;
      const v4 ym = y - y_off;
      const v4 yy = (ym > zero ? ym : zero) * kCY;
      store(rp + x, clamp4(yy + kCVR * v) * ra + rb);
      store(gp + x, clamp4(yy + kCVG * v + kCUG * u) * ga + gb);
      store(bp + x, clamp4(yy + kCUB * u) * ba + bb);
    }
    for (; x < w; ++x) {
      const Rgb c = blended_rgb(ya, yb, ua, ub, va, vb, fy, x, m);
      rp[x] = c.r * ra + rb;
      gp[x] = c.g * ga + gb;
      bp[x] = c.b * ba + bb;
    }
  } else {
    for (std::int64_t x = 0; x < w; ++x) {
      const Rgb c = blended_rgb(ya, yb, ua, ub, va, vb, fy, x, m);
      put<O>(planes[ri], row_start + x, c.r * ra + rb);
      put<O>(planes[1], row_start + x, c.g * ga + gb);
      put<O>(planes[bi], row_start + x, c.b * ba + bb);
    }
  }
}

// Nearest: the integer formula of convert_color, so values equal the chain's.
inline void yuv_to_rgb8(int y, int u, int v, const YuvToRgb& k, float* rgb) {
  const int yy = std::max(0, y - k.y_offset) * k.y;
  const int uu = u - 128, vv = v - 128;
  constexpr int half = 1 << (kYuvShift - 1);
  auto sat = [](int x) { return static_cast<float>(std::clamp(x >> kYuvShift, 0, 255)); };
  rgb[0] = sat(yy + half + k.r_v * vv);
  rgb[1] = sat(yy + half + k.g_v * vv + k.g_u * uu);
  rgb[2] = sat(yy + half + k.b_u * uu);
}

}  // namespace

LetterboxBox letterbox_box(std::int64_t sw, std::int64_t sh, std::int64_t ow,
                           std::int64_t oh) noexcept {
  LetterboxBox b;
  if (sw <= 0 || sh <= 0 || ow <= 0 || oh <= 0) return b;
  const double scale = std::min(static_cast<double>(ow) / static_cast<double>(sw),
                                static_cast<double>(oh) / static_cast<double>(sh));
  b.width = std::clamp<std::int64_t>(std::llround(static_cast<double>(sw) * scale), 1, ow);
  b.height = std::clamp<std::int64_t>(std::llround(static_cast<double>(sh) * scale), 1, oh);
  b.x = (ow - b.width) / 2;
  b.y = (oh - b.height) / 2;
  return b;
}

Result<NeatTensor> preprocess(const NeatTensor& frame, const PreprocessParams& p,
                              ConversionOptions options, std::source_location where) {
  if (!frame.defined()) return failed_precondition("preprocess: the tensor is undefined");
  if (!frame.is_composite()) {
    return invalid_argument(
        "preprocess of " + frame.to_string() +
        ": needs a planar frame (NV12, NV21, I420, YV12); for interleaved images "
        "chain resize(), to_chw() and normalize()");
  }
  if (frame.device().type != DeviceType::Cpu) {
    return failed_precondition("preprocess of " + frame.to_string() + ": not in CPU memory");
  }
  if (p.width <= 0 || p.height <= 0 || p.width > (1 << 24) || p.height > (1 << 24)) {
    return invalid_argument("preprocess: output size " + std::to_string(p.width) + "x" +
                            std::to_string(p.height) + " must be positive and at most 2^24");
  }
  if (p.channel_order != PixelFormat::RGB && p.channel_order != PixelFormat::BGR) {
    return invalid_argument("preprocess: channel_order must be RGB or BGR");
  }
  if (p.resize_mode != ResizeMode::Stretch && p.resize_mode != ResizeMode::Letterbox) {
    return invalid_argument("preprocess: resize_mode must be Stretch or Letterbox");
  }
  if (!(std::isfinite(p.pad_value) && p.pad_value >= 0.f && p.pad_value <= 255.f)) {
    return invalid_argument("preprocess: pad_value " + std::to_string(p.pad_value) +
                            " must be a pixel level from 0 to 255");
  }
  if (p.out_dtype != DType::F32 && p.out_dtype != DType::F16 && p.out_dtype != DType::BF16) {
    return invalid_argument("preprocess: out_dtype must be f32, f16 or bf16, not " +
                            std::string(to_string(p.out_dtype)));
  }
  const std::int64_t sw = frame.image().width, sh = frame.image().height;
  if (sw == 0 || sh == 0)
    return invalid_argument("preprocess: the frame " + frame.to_string() + " is empty");
  Affine k{};
  for (int c = 0; c < 3; ++c) {
    const auto u = static_cast<std::size_t>(c);
    if (!(std::isfinite(p.std[u]) && p.std[u] != 0.f && std::isfinite(p.mean[u]) &&
          std::isfinite(p.scale))) {
      return invalid_argument("preprocess: channel " + std::to_string(c) +
                              " std must be finite and non-zero, mean and scale finite");
    }
    k.map[c] = p.channel_order == PixelFormat::RGB ? c : 2 - c;
    k.a[c] = p.scale / p.std[u];
    k.b[c] = -p.mean[u] / p.std[u];
  }
  const Dims shape = p.batch_dim ? Dims{1, 3, p.height, p.width} : Dims{3, p.height, p.width};
  NEAT_ASSIGN_OR_RETURN(NeatTensor dst,
                        NeatTensor::allocate(p.out_dtype, shape, destination_alloc(options)));
  // The content rectangle: the whole output, or the letterbox inside it.
  const LetterboxBox box = p.resize_mode == ResizeMode::Letterbox
                               ? letterbox_box(sw, sh, p.width, p.height)
                               : LetterboxBox{p.width, p.height, 0, 0};
  {  // the same frame; output pixel (px + u) lies at source u * sw / box.width
    FrameMeta m = frame.meta();
    const double gx = static_cast<double>(sw) / static_cast<double>(box.width);
    const double gy = static_cast<double>(sh) / static_cast<double>(box.height);
    m.geometry = frame.source_geometry().then(gx, gy, -static_cast<double>(box.x) * gx,
                                              -static_cast<double>(box.y) * gy);
    dst.set_meta(m);
  }
  ConversionSpec spec{ConversionKind::Convert,
                      ConversionReason::Normalize,
                      "preprocess",
                      "preprocess the frame explicitly with preprocess() before this consumer",
                      {}};
  bool assumed = false;
  const Colorimetry standard =
      choose_colorimetry(p.colorimetry, frame.image().colorimetry, sw, sh, &assumed);
  k.yuv = &yuv_to_rgb(standard);
  spec.detail = colorimetry_detail(standard, assumed);

  return run_conversion(
      frame, std::move(dst), spec, options, where,
      [&](const Mapping& in, const Mapping& out) -> Status {
        Planes s{};
        const PixelFormat f = frame.pixel_format();
        NEAT_ASSIGN_OR_RETURN(const std::byte* yp, in.plane_data(PlaneRole::Y));
        s.y = reinterpret_cast<const std::uint8_t*>(yp);
        s.y_stride = frame.plane_layout(0).row_stride;
        s.width = sw;
        s.height = sh;
        if (f == PixelFormat::NV12 || f == PixelFormat::NV21) {
          const PlaneLayout& c = frame.plane_layout(1);
          NEAT_ASSIGN_OR_RETURN(const std::byte* cp, in.plane_data(c.role));
          const auto* b = reinterpret_cast<const std::uint8_t*>(cp);
          s.u = f == PixelFormat::NV12 ? b : b + 1;
          s.v = f == PixelFormat::NV12 ? b + 1 : b;
          s.u_stride = s.v_stride = c.row_stride;
          s.step = 2;
        } else {
          NEAT_ASSIGN_OR_RETURN(const std::byte* up, in.plane_data(PlaneRole::U));
          NEAT_ASSIGN_OR_RETURN(const std::byte* vp, in.plane_data(PlaneRole::V));
          s.u = reinterpret_cast<const std::uint8_t*>(up);
          s.v = reinterpret_cast<const std::uint8_t*>(vp);
          s.u_stride = frame.plane_layout(f == PixelFormat::I420 ? 1 : 2).row_stride;
          s.v_stride = frame.plane_layout(f == PixelFormat::I420 ? 2 : 1).row_stride;
          s.step = 1;
        }
        // Output planes are out_w x oh; the content is ow x ch at (px, py).
        const std::int64_t out_w = p.width, oh = p.height;
        const std::int64_t ow = box.width, ch = box.height, px = box.x, py = box.y;
        const double sx = static_cast<double>(sw) / static_cast<double>(ow);
        const double sy = static_cast<double>(sh) / static_cast<double>(ch);
        const std::int64_t item = item_size(p.out_dtype);
        std::byte* base = out.mutable_data();
        std::byte* planes[3] = {base, base + oh * out_w * item, base + 2 * oh * out_w * item};
        const bool nearest = p.interpolation == Interpolation::Nearest;
        // Letterbox padding, normalized like the pixels, per output plane.
        float pad[3];
        for (int c = 0; c < 3; ++c)
          pad[c] = p.pad_value * k.a[c] + k.b[c];
        auto fill_pad = [&](std::int64_t start, std::int64_t count) {
          if (count <= 0) return;
          for (int c = 0; c < 3; ++c) {
            if (p.out_dtype == DType::F32) {
              std::fill_n(reinterpret_cast<float*>(planes[c]) + start, count, pad[c]);
              continue;
            }
            for (std::int64_t i = start; i < start + count; ++i) {
              if (p.out_dtype == DType::F16) {
                put<Half>(planes[c], i, pad[c]);
              } else {
                put<BFloat16>(planes[c], i, pad[c]);
              }
            }
          }
        };

        parallel_rows(oh, options.threads, [&](std::int64_t r0, std::int64_t r1) {
          Tables& t = scratch();
          t.x0.resize(static_cast<std::size_t>(ow));
          t.x1.resize(static_cast<std::size_t>(ow));
          t.c0.resize(static_cast<std::size_t>(ow));
          t.c1.resize(static_cast<std::size_t>(ow));
          t.fx.resize(static_cast<std::size_t>(ow));
          t.luma.reset(static_cast<std::size_t>(ow), 1);
          t.chroma.reset(static_cast<std::size_t>(ow), 2);
          for (std::int64_t x = 0; x < ow; ++x) {
            const auto u = static_cast<std::size_t>(x);
            if (nearest) {
              t.x0[u] = t.x1[u] = nearest_coord(x, sx, sw);
              t.fx[u] = 0.f;
            } else {
              linear_coord(x, sx, sw, &t.x0[u], &t.x1[u], &t.fx[u]);
            }
            t.c0[u] = static_cast<std::int32_t>((t.x0[u] / 2) * s.step);
            t.c1[u] = static_cast<std::int32_t>((t.x1[u] / 2) * s.step);
          }
          for (std::int64_t out_r = r0; out_r < r1; ++out_r) {
            if (out_r < py || out_r >= py + ch) {  // a padding row
              fill_pad(out_r * out_w, out_w);
              continue;
            }
            fill_pad(out_r * out_w, px);
            fill_pad(out_r * out_w + px + ow, out_w - px - ow);
            const std::int64_t r = out_r - py;                  // content row
            const std::int64_t row_start = out_r * out_w + px;  // its first output element
            std::int32_t y0, y1;
            float fy;
            if (nearest) {
              y0 = y1 = nearest_coord(r, sy, sh);
              fy = 0.f;
            } else {
              linear_coord(r, sy, sh, &y0, &y1, &fy);
            }
            if (nearest) {
              const std::uint8_t* ya = s.y + y0 * s.y_stride;
              const std::uint8_t* ua = s.u + (y0 / 2) * s.u_stride;
              const std::uint8_t* va = s.v + (y0 / 2) * s.v_stride;
              for (std::int64_t x = 0; x < ow; ++x) {
                const auto u = static_cast<std::size_t>(x);
                float rgb[3];
                yuv_to_rgb8(ya[t.x0[u]], ua[t.c0[u]], va[t.c0[u]], *k.yuv, rgb);
                for (int c = 0; c < 3; ++c) {
                  const float val = rgb[k.map[c]] * k.a[c] + k.b[c];
                  if (p.out_dtype == DType::F32) {
                    put<float>(planes[c], row_start + x, val);
                  } else if (p.out_dtype == DType::F16) {
                    put<Half>(planes[c], row_start + x, val);
                  } else {
                    put<BFloat16>(planes[c], row_start + x, val);
                  }
                }
              }
              continue;
            }
            auto fill_luma = [&](std::int64_t row, std::vector<float>* rows_out) {
              const std::uint8_t* src = s.y + row * s.y_stride;
              float* __restrict h = rows_out[0].data();
              for (std::int64_t x = 0; x < ow; ++x) {
                const auto u = static_cast<std::size_t>(x);
                const float a = src[t.x0[u]], b = src[t.x1[u]];
                h[x] = a + (b - a) * t.fx[u];
              }
            };
            auto fill_chroma = [&](std::int64_t crow, std::vector<float>* rows_out) {
              const std::uint8_t* us = s.u + crow * s.u_stride;
              const std::uint8_t* vs = s.v + crow * s.v_stride;
              float* __restrict hu = rows_out[0].data();
              float* __restrict hv = rows_out[1].data();
              for (std::int64_t x = 0; x < ow; ++x) {
                const auto u = static_cast<std::size_t>(x);
                const float wx = t.fx[u];
                const float ua0 = us[t.c0[u]], ua1 = us[t.c1[u]];
                const float va0 = vs[t.c0[u]], va1 = vs[t.c1[u]];
                hu[x] = ua0 + (ua1 - ua0) * wx;
                hv[x] = va0 + (va1 - va0) * wx;
              }
            };
            const int l0 = t.luma.get(y0, y1, fill_luma);
            const int l1 = t.luma.get(y1, y0, fill_luma);
            const int k0 = t.chroma.get(y0 / 2, y1 / 2, fill_chroma);
            const int k1 = t.chroma.get(y1 / 2, y0 / 2, fill_chroma);
            const float* ya_h = t.luma.rows[l0][0].data();
            const float* yb_h = t.luma.rows[l1][0].data();
            const float* ua_h = t.chroma.rows[k0][0].data();
            const float* ub_h = t.chroma.rows[k1][0].data();
            const float* va_h = t.chroma.rows[k0][1].data();
            const float* vb_h = t.chroma.rows[k1][1].data();
            if (p.out_dtype == DType::F32) {
              blend_and_finish<float>(ya_h, yb_h, ua_h, ub_h, va_h, vb_h, fy, ow, k, planes,
                                      row_start);
            } else if (p.out_dtype == DType::F16) {
              blend_and_finish<Half>(ya_h, yb_h, ua_h, ub_h, va_h, vb_h, fy, ow, k, planes,
                                     row_start);
            } else {
              blend_and_finish<BFloat16>(ya_h, yb_h, ua_h, ub_h, va_h, vb_h, fy, ow, k, planes,
                                         row_start);
            }
          }
        });
        return {};
      });
}

}  // namespace neat

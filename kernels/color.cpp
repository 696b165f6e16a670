#include "neat/kernels/color.hpp"

#include <cstring>
#include <opencv2/imgproc.hpp>
#include <string>

#include "neat/kernels/internal/color_kernel.hpp"
#include "neat/kernels/yuv_matrix.hpp"
#include "neat/storage/cv_mat.hpp"

namespace neat {

namespace {

int interleaved_code(PixelFormat from, PixelFormat to) {
  using P = PixelFormat;
  struct Entry {
    P from, to;
    int code;
  };
  static constexpr Entry kCodes[] = {
      {P::RGB, P::BGR, cv::COLOR_RGB2BGR},      {P::BGR, P::RGB, cv::COLOR_BGR2RGB},
      {P::RGBA, P::RGB, cv::COLOR_RGBA2RGB},    {P::RGBA, P::BGR, cv::COLOR_RGBA2BGR},
      {P::BGRA, P::BGR, cv::COLOR_BGRA2BGR},    {P::BGRA, P::RGB, cv::COLOR_BGRA2RGB},
      {P::RGB, P::RGBA, cv::COLOR_RGB2RGBA},    {P::RGB, P::BGRA, cv::COLOR_RGB2BGRA},
      {P::BGR, P::BGRA, cv::COLOR_BGR2BGRA},    {P::BGR, P::RGBA, cv::COLOR_BGR2RGBA},
      {P::RGBA, P::BGRA, cv::COLOR_RGBA2BGRA},  {P::BGRA, P::RGBA, cv::COLOR_BGRA2RGBA},
      {P::RGB, P::GRAY8, cv::COLOR_RGB2GRAY},   {P::BGR, P::GRAY8, cv::COLOR_BGR2GRAY},
      {P::RGBA, P::GRAY8, cv::COLOR_RGBA2GRAY}, {P::BGRA, P::GRAY8, cv::COLOR_BGRA2GRAY},
      {P::GRAY8, P::RGB, cv::COLOR_GRAY2RGB},   {P::GRAY8, P::BGR, cv::COLOR_GRAY2BGR},
      {P::GRAY8, P::RGBA, cv::COLOR_GRAY2RGBA}, {P::GRAY8, P::BGRA, cv::COLOR_GRAY2BGRA},
  };
  for (const Entry& e : kCodes) {
    if (e.from == from && e.to == to) return e.code;
  }
  return -1;
}

// Channel positions of R, G, B, A in an interleaved format (-1: absent).
struct Channels {
  int r, g, b, a, n;
};
Channels channel_map(PixelFormat f) {
  switch (f) {
    case PixelFormat::RGB:
      return {0, 1, 2, -1, 3};
    case PixelFormat::BGR:
      return {2, 1, 0, -1, 3};
    case PixelFormat::RGBA:
      return {0, 1, 2, 3, 4};
    case PixelFormat::BGRA:
      return {2, 1, 0, 3, 4};
    default:
      return {0, 0, 0, -1, 1};  // GRAY8
  }
}

// Interleaved -> interleaved for layouts OpenCV cannot view (pixels not
// packed): per pixel, with the 8-bit gray weights OpenCV 4.6 uses
// (Y = (9798 R + 19235 G + 3735 B + 2^14) >> 15, measured against it), so
// both paths give identical bytes.
void interleaved_generic(const NeatTensor& src, const std::byte* in, PixelFormat to, std::byte* out,
                         const NeatTensor& dst) {
  const Channels ci = channel_map(src.pixel_format());
  const Channels co = channel_map(to);
  const std::int64_t h = src.image().height, w = src.image().width;
  const std::int64_t sr = src.strides()[0], sp = src.strides()[1];
  const std::int64_t sc = src.rank() == 3 ? src.strides()[2] : 1;
  const std::int64_t dr = dst.strides()[0];
  for (std::int64_t y = 0; y < h; ++y) {
    for (std::int64_t x = 0; x < w; ++x) {
      const auto* p = reinterpret_cast<const std::uint8_t*>(in + y * sr + x * sp);
      const int r = p[ci.r * sc], g = p[ci.g * sc], b = p[ci.b * sc];
      const int a = ci.a >= 0 ? p[ci.a * sc] : 255;
      auto* q = reinterpret_cast<std::uint8_t*>(out + y * dr + x * co.n);
      if (to == PixelFormat::GRAY8) {
        q[0] = static_cast<std::uint8_t>((r * 9798 + g * 19235 + b * 3735 + (1 << 14)) >> 15);
        continue;
      }
      q[co.r] = static_cast<std::uint8_t>(r);
      q[co.g] = static_cast<std::uint8_t>(g);
      q[co.b] = static_cast<std::uint8_t>(b);
      if (co.a >= 0) q[co.a] = static_cast<std::uint8_t>(a);
    }
  }
}

// OpenCV reports errors by throwing; turn them into typed errors here.
template <class F>
Status opencv_guard(const char* what, F&& f) {
  try {
    f();
  } catch (const cv::Exception& e) {
    return internal_error(std::string(what) + ": OpenCV failed: " + e.what());
  }
  return {};
}

std::string pair_name(PixelFormat from, PixelFormat to) {
  return std::string(to_string(from)) + " -> " + std::string(to_string(to));
}

}  // namespace

bool color_conversion_supported(PixelFormat from, PixelFormat to) noexcept {
  if (from == to) return from != PixelFormat::None;
  if (is_planar(from)) {
    return to == PixelFormat::RGB || to == PixelFormat::BGR || to == PixelFormat::GRAY8;
  }
  return interleaved_code(from, to) >= 0;
}

Result<NeatTensor> convert_color(const NeatTensor& src, PixelFormat to, ConversionOptions options,
                                 std::source_location where) {
  return convert_color(src, to, Colorimetry{}, options, where);
}

Result<NeatTensor> convert_color(const NeatTensor& src, PixelFormat to, Colorimetry assume,
                                 ConversionOptions options, std::source_location where) {
  if (!src.defined()) return failed_precondition("convert_color: the tensor is undefined");
  const PixelFormat from = src.pixel_format();
  if (!src.is_image()) {
    return invalid_argument("convert_color to " + std::string(to_string(to)) + ": " +
                            src.to_string() + " is not an image; attach a spec with as_image()");
  }
  if (from == to) return src;
  if (!color_conversion_supported(from, to)) {
    return unimplemented("convert_color: " + pair_name(from, to) + " is not supported (from " +
                         "NV12/NV21/I420/YV12 to RGB/BGR/GRAY8; between RGB, BGR, RGBA, BGRA; to "
                         "and from GRAY8)");
  }
  if (src.device().type != DeviceType::Cpu) {
    return failed_precondition("convert_color: " + src.to_string() +
                               " is not in CPU memory; transfer it first");
  }
  if (src.layout() == Layout::CHW) {
    return failed_precondition("convert_color: " + src.to_string() +
                               " is CHW; convert_layout() it to HWC first");
  }
  const std::int64_t w = src.image().width, h = src.image().height;
  NEAT_ASSIGN_OR_RETURN(NeatTensor dst,
                        NeatTensor::allocate_image(to, w, h, destination_image_alloc(options)));
  ConversionSpec spec{ConversionKind::Convert,
                      ConversionReason::PixelFormat,
                      "convert_color",
                      "convert the frame explicitly with convert_color() before this consumer",
                      {}};
  bool assumed = false;
  const Colorimetry standard = choose_colorimetry(assume, src.image().colorimetry, w, h, &assumed);
  const YuvToRgb& coefficients = yuv_to_rgb(standard);
  if (is_planar(from) && to != PixelFormat::GRAY8) {
    spec.detail = colorimetry_detail(standard, assumed);
  }

  return run_conversion(
      src, std::move(dst), spec, options, where,
      [&](const Mapping& in, const Mapping& out) -> Status {
        NEAT_ASSIGN_OR_RETURN(cv::Mat out_mat, mat_header(out));
        const uchar* const expected = out_mat.data;
        auto check_in_place = [&]() -> Status {
          if (out_mat.data != expected) {
            return internal_error(
                "convert_color: OpenCV reallocated the destination (a hidden copy)");
          }
          return {};
        };

        if (is_planar(from)) {
          if (to == PixelFormat::GRAY8) {  // the Y plane, row by row
            NEAT_ASSIGN_OR_RETURN(const std::byte* y, in.plane_data(PlaneRole::Y));
            const std::int64_t ys = src.plane_layout(0).row_stride;
            for (std::int64_t r = 0; r < h; ++r) {
              std::memcpy(out_mat.ptr(static_cast<int>(r)), y + r * ys,
                          static_cast<std::size_t>(w));
            }
            return {};
          }
          // The SIMD kernel on the planes as they are (any strides, separate
          // storages, odd sizes), in bands of two rows on the thread pool.
          detail::YuvRowsJob job;
          NEAT_ASSIGN_OR_RETURN(static_cast<detail::YuvPlanes&>(job), detail::yuv_planes(src, in));
          job.coefficients = &coefficients;
          job.bgr = to == PixelFormat::BGR;
          job.dst = out_mat.data;
          job.dst_stride = static_cast<std::int64_t>(out_mat.step[0]);
          parallel_rows((h + 1) / 2, options.threads, [&](std::int64_t b, std::int64_t e) {
            detail::yuv420_to_rgb_rows(job, 2 * b, std::min(h, 2 * e));
          });
          return {};
        }

        // Interleaved source.
        Result<cv::Mat> in_mat = mat_header(in);
        if (in_mat.ok()) {
          const int code = interleaved_code(from, to);
          NEAT_RETURN_IF_ERROR(
              opencv_guard("convert_color", [&] { cv::cvtColor(*in_mat, out_mat, code); }));
          return check_in_place();
        }
        interleaved_generic(src, in.data(), to, out.mutable_data(), out.tensor());
        return {};
      });
}

}  // namespace neat

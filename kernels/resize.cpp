#include "neat/kernels/resize.hpp"

#include <opencv2/imgproc.hpp>
#include <string>

#include "neat/storage/cv_mat.hpp"

namespace neat {

namespace {

// A non-owning Mat over plane [rows, cols] x channels of a mapped dense tensor.
cv::Mat mat_over(const std::byte* p, std::int64_t rows, std::int64_t cols, int type,
                 std::int64_t step) {
  return cv::Mat(static_cast<int>(rows), static_cast<int>(cols), type,
                 const_cast<std::byte*>(p),  // NOLINT
                 static_cast<size_t>(step));
}

Status resize_mat(const cv::Mat& in, cv::Mat& out, Interpolation interp) {
  const uchar* expected = out.data;
  try {
    const int mode = interp == Interpolation::Nearest ? cv::INTER_NEAREST
                     : interp == Interpolation::Area  ? cv::INTER_AREA
                                                      : cv::INTER_LINEAR;
    cv::resize(in, out, out.size(), 0, 0, mode);
  } catch (const cv::Exception& e) {
    return internal_error(std::string("resize: OpenCV failed: ") + e.what());
  }
  if (out.data != expected)
    return internal_error("resize: OpenCV reallocated the destination (a hidden copy)");
  return {};
}

}  // namespace

const char* to_string(Interpolation interpolation) noexcept {
  switch (interpolation) {
    case Interpolation::Nearest:
      return "nearest";
    case Interpolation::Bilinear:
      return "bilinear";
    case Interpolation::Area:
      return "area";
  }
  return "unknown";
}

Result<NeatTensor> resize(const NeatTensor& src, std::int64_t width, std::int64_t height,
                          Interpolation interpolation, ConversionOptions options,
                          std::source_location where) {
  if (!src.defined()) return failed_precondition("resize: the tensor is undefined");
  auto what = [&] { return "resize to " + std::to_string(width) + "x" + std::to_string(height); };
  if (width <= 0 || height <= 0 || width > INT32_MAX || height > INT32_MAX) {
    return invalid_argument(what() + ": the size must be positive and below 2^31");
  }
  if (interpolation != Interpolation::Nearest && interpolation != Interpolation::Bilinear &&
      interpolation != Interpolation::Area) {
    return invalid_argument(what() + ": interpolation must be Nearest, Bilinear or Area");
  }
  if (src.device().type != DeviceType::Cpu) {
    return failed_precondition(what() + " of " + src.to_string() + ": not in CPU memory");
  }
  // Geometry of the source as an image.
  std::int64_t sw = 0, sh = 0, channels = 1;
  const bool chw = src.is_image() && src.layout() == Layout::CHW;
  if (src.is_image()) {
    sw = src.image().width;
    sh = src.image().height;
  } else if (src.rank() == 2 || src.rank() == 3) {
    sh = src.shape()[0];
    sw = src.shape()[1];
  } else {
    return invalid_argument(what() + " of " + src.to_string() +
                            ": not an image and not a dense [H, W] or [H, W, C] tensor");
  }
  if (!src.is_composite()) channels = chw ? src.shape()[0] : (src.rank() == 3 ? src.shape()[2] : 1);
  if (sw == 0 || sh == 0)
    return invalid_argument(what() + " of " + src.to_string() + ": the source is empty");
  if (sw == width && sh == height) return src;
  int depth = CV_8U;
  if (!src.is_composite()) {
    NEAT_ASSIGN_OR_RETURN(depth, cv_depth_from_dtype(src.dtype()));
    if (channels > CV_CN_MAX) return invalid_argument(what() + ": too many channels for OpenCV");
  }

  NeatTensor dst;
  if (src.is_image()) {
    ImageAllocOptions o = destination_image_alloc(options, src.layout());
    NEAT_ASSIGN_OR_RETURN(dst, NeatTensor::allocate_image(src.pixel_format(), width, height, o));
    NEAT_ASSIGN_OR_RETURN(dst, dst.with_colorimetry(src.image().colorimetry));
  } else {
    Dims shape = src.rank() == 2 ? Dims{height, width} : Dims{height, width, channels};
    NEAT_ASSIGN_OR_RETURN(dst,
                          NeatTensor::allocate(src.dtype(), shape, destination_alloc(options)));
  }
  {  // the same frame, its pixels scaled
    FrameMeta m = src.meta();
    m.geometry =
        src.source_geometry().then(static_cast<double>(sw) / static_cast<double>(width),
                                   static_cast<double>(sh) / static_cast<double>(height), 0.0, 0.0);
    dst.set_meta(m);
  }
  const ConversionSpec spec{ConversionKind::Convert,
                            ConversionReason::Resize,
                            "resize",
                            "resize the image explicitly with resize() before this consumer",
                            {}};
  return run_conversion(
      src, std::move(dst), spec, options, where,
      [&](const Mapping& in, const Mapping& out) -> Status {
        const NeatTensor& d = out.tensor();
        if (src.is_composite()) {
          for (int i = 0; i < src.plane_count(); ++i) {
            const PlaneLayout& sp = src.plane_layout(i);
            const PlaneLayout& dp = d.plane_layout(i);
            NEAT_ASSIGN_OR_RETURN(const std::byte* s, in.plane_data(sp.role));
            NEAT_ASSIGN_OR_RETURN(std::byte * t, out.mutable_plane_data(dp.role));
            const int type = CV_8UC(sp.samples);
            const cv::Mat a = mat_over(s, sp.rows, sp.cols, type,
                                       sp.rows > 1 ? sp.row_stride : sp.cols * sp.samples);
            cv::Mat b = mat_over(t, dp.rows, dp.cols, type,
                                 dp.rows > 1 ? dp.row_stride : dp.cols * dp.samples);
            NEAT_RETURN_IF_ERROR(resize_mat(a, b, interpolation));
          }
          return {};
        }
        const std::int64_t item = item_size(src.dtype());
        if (chw) {  // one plane per channel
          for (std::int64_t c = 0; c < channels; ++c) {
            if (src.strides()[2] != item) {
              return failed_precondition(
                  what() + " of " + src.to_string() +
                  ": CHW planes with strided columns cannot be read in place");
            }
            const cv::Mat a =
                mat_over(in.data() + c * src.strides()[0], sh, sw, CV_MAKETYPE(depth, 1),
                         sh > 1 ? src.strides()[1] : sw * item);
            cv::Mat b = mat_over(out.mutable_data() + c * d.strides()[0], height, width,
                                 CV_MAKETYPE(depth, 1), d.strides()[1]);
            NEAT_RETURN_IF_ERROR(resize_mat(a, b, interpolation));
          }
          return {};
        }
        NEAT_ASSIGN_OR_RETURN(cv::Mat a, mat_header(in));
        NEAT_ASSIGN_OR_RETURN(cv::Mat b, mat_header(out));
        return resize_mat(a, b, interpolation);
      });
}

Result<NeatTensor> crop_resize(const NeatTensor& src, std::int64_t x, std::int64_t y,
                               std::int64_t w, std::int64_t h, std::int64_t out_width,
                               std::int64_t out_height, Interpolation interpolation,
                               ConversionOptions options, std::source_location where) {
  if (!src.defined()) return failed_precondition("crop_resize: the tensor is undefined");
  NeatTensor region;
  if (src.is_image()) {
    NEAT_ASSIGN_OR_RETURN(region, src.crop(x, y, w, h));
  } else {
    NEAT_ASSIGN_OR_RETURN(region, src.narrow(0, y, h));
    NEAT_ASSIGN_OR_RETURN(region, region.narrow(1, x, w));
  }
  NEAT_ASSIGN_OR_RETURN(NeatTensor out,
                        resize(region, out_width, out_height, interpolation, options, where));
  if (out.identity() == src.identity()) {
    // Same size as the crop: resize returned the view; the caller asked for a new image.
    ConversionOptions copy;
    copy.policy = options.policy;
    copy.allocator = options.allocator;
    return region.clone(copy, where);
  }
  return out;
}

}  // namespace neat

#include "neat/stages/builtin.hpp"

#include <algorithm>
#include <string>
#include <thread>

#include "neat/kernels/cast.hpp"
#include "neat/kernels/color.hpp"
#include "neat/kernels/layout.hpp"

namespace neat {
namespace {

constexpr PixelFormat kImageFormats[] = {PixelFormat::GRAY8, PixelFormat::RGB,  PixelFormat::BGR,
                                         PixelFormat::RGBA,  PixelFormat::BGRA, PixelFormat::NV12,
                                         PixelFormat::NV21,  PixelFormat::I420, PixelFormat::YV12};

// Kernels split rows across the machine's cores: a stage uses whatever the
// other stages leave idle (parallel_rows runs small images on one thread).
int kernel_threads() {
  static const int n = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return n;
}

// Dense tensors and interleaved images: what the per-element kernels take.
std::vector<PixelFormat> dense_or_interleaved() {
  return {PixelFormat::None, PixelFormat::GRAY8, PixelFormat::RGB,
          PixelFormat::BGR,  PixelFormat::RGBA,  PixelFormat::BGRA};
}

ConversionOptions options_for(const StageContext& ctx) {
  return ctx.conversion_options(ctx.kernel_threads > 0 ? ctx.kernel_threads : kernel_threads());
}

std::string size_text(std::int64_t w, std::int64_t h) {
  return std::to_string(w) + "x" + std::to_string(h);
}

// The spec of an image resized / cropped to w x h (same format, dtype, layout).
FrameSpec resized(const FrameSpec& in, std::int64_t w, std::int64_t h, bool contiguous) {
  FrameSpec out = in;
  out.width = w;
  out.height = h;
  if (is_planar(in.format)) {
    out.shape = Dims{h, w};
  } else if (in.layout == Layout::CHW) {
    out.shape = Dims{in.shape[0], h, w};
  } else if (in.shape.size() == 3) {
    out.shape = Dims{h, w, in.shape[2]};
  } else {
    out.shape = Dims{h, w};
  }
  out.contiguous = contiguous;
  return out;
}

// "yuv bt709 limited" or "yuv bt709 limited, assumed: GStreamer's default for
// the size": the standard a YUV input of `in` is decoded with.
std::string standard_text(const FrameSpec& in, Colorimetry override_with) {
  bool assumed = false;
  const Colorimetry c =
      choose_colorimetry(override_with, in.colorimetry, in.width, in.height, &assumed);
  return "yuv " + to_string(c) + (assumed ? ", assumed: GStreamer's default for the size" : "");
}

class ConvertStage final : public Stage {
 public:
  ConvertStage(PixelFormat to, Colorimetry assume) : to_(to), assume_(assume) {}
  std::string_view kind() const noexcept override { return "convert"; }
  Accepts accepts() const override {
    Accepts a;
    a.dtypes = {DType::U8};
    for (PixelFormat f : kImageFormats) {
      if (f == to_ || color_conversion_supported(f, to_)) a.formats.push_back(f);
    }
    return a;
  }
  Result<FrameSpec> output_spec(const FrameSpec& in) const override {
    if (!is_interleaved(to_)) {
      return unimplemented("convert: converting into " + std::string(to_string(to_)) +
                           " is not supported (targets: GRAY8, RGB, BGR, RGBA, BGRA)");
    }
    return FrameSpec::image(to_, in.width, in.height);
  }
  Status prepare(const FrameSpec& in, const FrameSpec&) override {
    standard_ = is_planar(in.format) && to_ != PixelFormat::GRAY8 ? standard_text(in, assume_) : "";
    return {};
  }
  Result<NeatTensor> process(NeatTensor frame, StageContext& ctx) override {
    if (frame.pixel_format() == to_) return frame;
    return convert_color(frame, to_, assume_, options_for(ctx));
  }
  std::string describe() const override {
    return "convert format=" + std::string(to_string(to_)) +
           (standard_.empty() ? "" : " (" + standard_ + ")");
  }
  bool may_forward_input(const FrameSpec& in) const override { return in.format == to_; }

 private:
  PixelFormat to_;
  Colorimetry assume_;
  std::string standard_;  // set by prepare(), for explain
};

class ResizeStage final : public Stage {
 public:
  ResizeStage(std::int64_t w, std::int64_t h, Interpolation i) : w_(w), h_(h), interp_(i) {}
  std::string_view kind() const noexcept override { return "resize"; }
  Accepts accepts() const override {
    Accepts a;
    a.formats.assign(std::begin(kImageFormats), std::end(kImageFormats));
    return a;
  }
  Result<FrameSpec> output_spec(const FrameSpec& in) const override {
    if (w_ <= 0 || h_ <= 0)
      return invalid_argument("resize: size " + size_text(w_, h_) + " is empty");
    return resized(in, w_, h_, true);
  }
  Result<NeatTensor> process(NeatTensor frame, StageContext& ctx) override {
    return resize(frame, w_, h_, interp_, options_for(ctx));
  }
  bool may_forward_input(const FrameSpec& in) const override {
    return in.width == w_ && in.height == h_;
  }
  std::string describe() const override {
    return "resize size=" + size_text(w_, h_) + " " + to_string(interp_);
  }

 private:
  std::int64_t w_, h_;
  Interpolation interp_;
};

class CropStage final : public Stage {
 public:
  CropStage(std::int64_t x, std::int64_t y, std::int64_t w, std::int64_t h)
      : x_(x), y_(y), w_(w), h_(h) {}
  std::string_view kind() const noexcept override { return "crop"; }
  Accepts accepts() const override {
    Accepts a;
    a.formats.assign(std::begin(kImageFormats), std::end(kImageFormats));
    return a;
  }
  Result<FrameSpec> output_spec(const FrameSpec& in) const override {
    if (x_ < 0 || y_ < 0 || w_ <= 0 || h_ <= 0 || x_ + w_ > in.width || y_ + h_ > in.height) {
      return out_of_range("crop: " + size_text(w_, h_) + " at (" + std::to_string(x_) + ", " +
                          std::to_string(y_) + ") does not fit a " +
                          size_text(in.width, in.height) + " frame");
    }
    if (is_planar(in.format) && (x_ % 2 != 0 || y_ % 2 != 0)) {
      return invalid_argument("crop: " + std::string(to_string(in.format)) +
                              " crops must start on even coordinates (chroma is 2x2 subsampled)");
    }
    return resized(in, w_, h_, in.contiguous && w_ == in.width);
  }
  Result<NeatTensor> process(NeatTensor frame, StageContext&) override {
    return frame.crop(x_, y_, w_, h_);
  }
  std::string describe() const override {
    return "crop " + std::to_string(x_) + "," + std::to_string(y_) + " " + size_text(w_, h_) +
           " (a view)";
  }

 private:
  std::int64_t x_, y_, w_, h_;
};

class NormalizeStage final : public Stage {
 public:
  explicit NormalizeStage(NormalizeParams p) : p_(p), run_(p) {}
  std::string_view kind() const noexcept override { return "normalize"; }
  Accepts accepts() const override {
    Accepts a;
    a.dtypes = {DType::U8, DType::U16, DType::F16, DType::BF16, DType::F32};
    a.formats = dense_or_interleaved();
    return a;
  }
  Result<FrameSpec> output_spec(const FrameSpec& in) const override {
    const bool chw_in = chw_input(in);
    std::int64_t c = 1, h = 0, w = 0;
    if (in.shape.size() == 3) {
      c = chw_in ? in.shape[0] : in.shape[2];
      h = chw_in ? in.shape[1] : in.shape[0];
      w = chw_in ? in.shape[2] : in.shape[1];
    } else if (in.shape.size() == 2) {
      h = in.shape[0];
      w = in.shape[1];
    } else {
      return invalid_argument("normalize: takes [H, W], [H, W, C] or [C, H, W], not " +
                              in.shape.to_string());
    }
    if (c > 4) return invalid_argument("normalize: at most 4 channels, not " + std::to_string(c));
    FrameSpec out;
    out.dtype = p_.out_dtype;
    out.layout = p_.out_layout;
    out.shape = p_.out_layout == Layout::CHW ? Dims{c, h, w} : Dims{h, w, c};
    out.device = in.device;
    return out;
  }
  // Dense tensors carry no layout at run time: process() reads them the way
  // the plan says they are (e.g. CHW out of preprocess).
  Status prepare(const FrameSpec& in, const FrameSpec&) override {
    run_ = p_;
    if (!in.is_image() && in.shape.size() == 3)
      run_.in_layout = chw_input(in) ? Layout::CHW : Layout::HWC;
    return {};
  }
  Result<NeatTensor> process(NeatTensor frame, StageContext& ctx) override {
    return normalize(std::move(frame), run_, options_for(ctx));
  }
  // In place when it holds an input of the output's dtype alone.
  bool may_forward_input(const FrameSpec& in) const override { return in.dtype == p_.out_dtype; }
  std::string describe() const override {
    return "normalize -> " + std::string(to_string(p_.out_dtype)) + " " +
           std::string(to_string(p_.out_layout));
  }

 private:
  bool chw_input(const FrameSpec& in) const {
    return in.layout == Layout::CHW ||
           (!in.is_image() && p_.in_layout == Layout::CHW && in.shape.size() == 3);
  }

  NormalizeParams p_;
  NormalizeParams run_;  // p_ with the input layout the plan found: set by prepare()
};

class CastStage final : public Stage {
 public:
  explicit CastStage(DType to) : to_(to) {}
  std::string_view kind() const noexcept override { return "cast"; }
  Accepts accepts() const override {
    Accepts a;
    a.formats = dense_or_interleaved();
    return a;
  }
  Result<FrameSpec> output_spec(const FrameSpec& in) const override {
    FrameSpec out;
    out.dtype = to_;
    out.shape = in.shape;
    out.layout = in.is_image() ? Layout::None : in.layout;
    out.device = in.device;
    return out;
  }
  Result<NeatTensor> process(NeatTensor frame, StageContext& ctx) override {
    if (frame.dtype() == to_) return frame;
    return convert_dtype(frame, to_, options_for(ctx));
  }
  std::string describe() const override { return "cast dtype=" + std::string(to_string(to_)); }
  bool may_forward_input(const FrameSpec& in) const override { return in.dtype == to_; }

 private:
  DType to_;
};

class LayoutStage final : public Stage {
 public:
  explicit LayoutStage(Layout to) : to_(to) {}
  std::string_view kind() const noexcept override { return "layout"; }
  Accepts accepts() const override {
    Accepts a;
    a.formats = dense_or_interleaved();
    return a;
  }
  Result<FrameSpec> output_spec(const FrameSpec& in) const override {
    if (to_ != Layout::CHW && to_ != Layout::HWC) {
      return invalid_argument("layout: the target must be CHW or HWC, not " +
                              std::string(to_string(to_)));
    }
    if (in.shape.size() < 3) {
      return invalid_argument("layout: needs [H, W, C] or [C, H, W], not " + in.shape.to_string());
    }
    FrameSpec out = in;
    const bool is_chw = in.layout == Layout::CHW;
    if (is_chw == (to_ == Layout::CHW)) return out;
    const auto n = in.shape.size();
    out.shape = in.shape;
    if (to_ == Layout::CHW) {
      out.shape[n - 3] = in.shape[n - 1];
      out.shape[n - 2] = in.shape[n - 3];
      out.shape[n - 1] = in.shape[n - 2];
    } else {
      out.shape[n - 3] = in.shape[n - 2];
      out.shape[n - 2] = in.shape[n - 1];
      out.shape[n - 1] = in.shape[n - 3];
    }
    out.layout = to_;
    out.contiguous = true;
    return out;
  }
  Result<NeatTensor> process(NeatTensor frame, StageContext& ctx) override {
    return to_ == Layout::CHW ? to_chw(frame, options_for(ctx)) : to_hwc(frame, options_for(ctx));
  }
  std::string describe() const override { return "layout to=" + std::string(to_string(to_)); }
  bool may_forward_input(const FrameSpec& in) const override {
    return (in.layout == Layout::CHW) == (to_ == Layout::CHW);  // already in that layout
  }

 private:
  Layout to_;
};

class PreprocessStage final : public Stage {
 public:
  explicit PreprocessStage(PreprocessParams p) : p_(p) {}
  std::string_view kind() const noexcept override { return "preprocess"; }
  Accepts accepts() const override {
    Accepts a;
    a.dtypes = {DType::U8};
    a.formats = {PixelFormat::NV12, PixelFormat::NV21, PixelFormat::I420, PixelFormat::YV12};
    return a;
  }
  Result<FrameSpec> output_spec(const FrameSpec& in) const override {
    if (p_.width <= 0 || p_.height <= 0) {
      return invalid_argument("preprocess: size " + size_text(p_.width, p_.height) + " is empty");
    }
    FrameSpec out;
    out.dtype = p_.out_dtype;
    out.layout = Layout::CHW;
    out.shape = p_.batch_dim ? Dims{1, 3, p_.height, p_.width} : Dims{3, p_.height, p_.width};
    out.device = in.device;
    return out;
  }
  Status prepare(const FrameSpec& in, const FrameSpec&) override {
    standard_ = standard_text(in, p_.colorimetry);
    return {};
  }
  Result<NeatTensor> process(NeatTensor frame, StageContext& ctx) override {
    return preprocess(frame, p_, options_for(ctx));
  }
  bool may_forward_input(const FrameSpec&) const override { return false; }  // always a new buffer
  std::string describe() const override {
    return "preprocess size=" + size_text(p_.width, p_.height) + " -> " +
           std::string(to_string(p_.out_dtype)) + (p_.batch_dim ? " NCHW" : " CHW") +
           (p_.interpolation == Interpolation::Bilinear
                ? std::string()
                : std::string(" ") + to_string(p_.interpolation)) +
           (p_.resize_mode == ResizeMode::Letterbox
                ? " letterboxed (pad " + std::to_string(static_cast<int>(p_.pad_value)) + ")"
                : "") +
           " (fused" + (standard_.empty() ? "" : ", " + standard_) + ")";
  }

 private:
  PreprocessParams p_;
  std::string standard_;  // set by prepare(), for explain
};

class PackStage final : public Stage {
 public:
  std::string_view kind() const noexcept override { return "pack"; }
  Accepts accepts() const override { return Accepts::anything(); }
  Result<FrameSpec> output_spec(const FrameSpec& in) const override {
    FrameSpec out = in;
    out.contiguous = true;
    return out;
  }
  Result<NeatTensor> process(NeatTensor frame, StageContext& ctx) override {
    if (frame.is_contiguous()) return frame;
    return frame.contiguous(options_for(ctx));
  }
  bool may_forward_input(const FrameSpec& in) const override { return in.contiguous; }
};

class TransferStage final : public Stage {
 public:
  explicit TransferStage(Device to) : to_(to) {}
  std::string_view kind() const noexcept override { return "transfer"; }
  Accepts accepts() const override {
    Accepts a = Accepts::anything();
    a.devices = {DeviceType::Cpu, DeviceType::Gl};
    return a;
  }
  Result<FrameSpec> output_spec(const FrameSpec& in) const override {
    if (to_.type != DeviceType::Cpu) {
      return unimplemented("transfer: only to the CPU (device=cpu); upload to " + to_string(to_) +
                           " with upload()");
    }
    FrameSpec out = in;
    out.device = to_;
    return out;
  }
  Result<NeatTensor> process(NeatTensor frame, StageContext& ctx) override {
    return frame.to_cpu_if_needed(options_for(ctx));
  }
  std::string describe() const override { return "transfer device=" + to_string(to_); }
  bool may_forward_input(const FrameSpec& in) const override { return in.device == to_; }

 private:
  Device to_;
};

class InspectStage final : public Stage {
 public:
  explicit InspectStage(std::function<void(const NeatTensorRef&)> look) : look_(std::move(look)) {}
  std::string_view kind() const noexcept override { return "inspect"; }
  Accepts accepts() const override { return Accepts::anything(); }
  Result<FrameSpec> output_spec(const FrameSpec& in) const override { return in; }
  Result<NeatTensor> process(NeatTensor frame, StageContext&) override {
    if (look_) look_(NeatTensorRef(frame));
    return frame;
  }

 private:
  std::function<void(const NeatTensorRef&)> look_;
};

}  // namespace

std::unique_ptr<Stage> convert_stage(PixelFormat to, Colorimetry assume) {
  return std::make_unique<ConvertStage>(to, assume);
}
std::unique_ptr<Stage> resize_stage(std::int64_t w, std::int64_t h, Interpolation i) {
  return std::make_unique<ResizeStage>(w, h, i);
}
std::unique_ptr<Stage> crop_stage(std::int64_t x, std::int64_t y, std::int64_t w, std::int64_t h) {
  return std::make_unique<CropStage>(x, y, w, h);
}
std::unique_ptr<Stage> normalize_stage(NormalizeParams params) {
  return std::make_unique<NormalizeStage>(params);
}
std::unique_ptr<Stage> cast_stage(DType to) {
  return std::make_unique<CastStage>(to);
}
std::unique_ptr<Stage> layout_stage(Layout to) {
  return std::make_unique<LayoutStage>(to);
}
std::unique_ptr<Stage> preprocess_stage(PreprocessParams params) {
  return std::make_unique<PreprocessStage>(params);
}
std::unique_ptr<Stage> pack_stage() {
  return std::make_unique<PackStage>();
}
std::unique_ptr<Stage> transfer_stage(Device to) {
  return std::make_unique<TransferStage>(to);
}
std::unique_ptr<Stage> inspect_stage(std::function<void(const NeatTensorRef&)> look) {
  return std::make_unique<InspectStage>(std::move(look));
}

}  // namespace neat

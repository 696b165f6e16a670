#include "neat/kernels/normalize.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "neat/kernels/cast.hpp"

namespace neat {

namespace {

struct Geometry {
  std::int64_t h, w, c;
  std::int64_t sh, sw, sc;  // input byte strides
};

template <class T>
inline float load(const std::byte* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof(T));
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return to_float(v);
  } else {
    return static_cast<float>(v);
  }
}

template <class O>
inline void store(std::byte* p, float v) noexcept {
  if constexpr (std::is_same_v<O, float>) {
    std::memcpy(p, &v, 4);
  } else if constexpr (std::is_same_v<O, Half>) {
    const Half h = to_half(v);
    std::memcpy(p, &h, 2);
  } else {
    const BFloat16 b = to_bfloat16(v);
    std::memcpy(p, &b, 2);
  }
}

// Rows [r0, r1): reads element (y, x, c) at y*sh + x*sw + c*sc; writes packed
// CHW or HWC. In place is safe: each element is read before it is written,
// at the same position (same dtype and layout).
template <class I, class O>
void normalize_rows(const Geometry& g, const std::byte* in, std::byte* out, bool chw,
                    const float* a, const float* b, std::int64_t r0, std::int64_t r1) {
  constexpr auto osz = static_cast<std::int64_t>(sizeof(O));
  for (std::int64_t y = r0; y < r1; ++y) {
    for (std::int64_t x = 0; x < g.w; ++x) {
      const std::byte* p = in + y * g.sh + x * g.sw;
      for (std::int64_t c = 0; c < g.c; ++c) {
        const float v = load<I>(p + c * g.sc) * a[c] + b[c];
        const std::int64_t idx = chw ? (c * g.h + y) * g.w + x : (y * g.w + x) * g.c + c;
        store<O>(out + idx * osz, v);
      }
    }
  }
}

template <class F>
Status with_input(DType t, F&& f) {
  switch (t) {
    case DType::U8:
      f(std::uint8_t{});
      return {};
    case DType::U16:
      f(std::uint16_t{});
      return {};
    case DType::F16:
      f(Half{});
      return {};
    case DType::BF16:
      f(BFloat16{});
      return {};
    case DType::F32:
      f(float{});
      return {};
    default:
      return invalid_argument("normalize: input dtype " + std::string(to_string(t)) +
                              " is not supported (u8, u16, f16, bf16, f32)");
  }
}

template <class F>
void with_output(DType t, F&& f) {
  if (t == DType::F16) {
    f(Half{});
  } else if (t == DType::BF16) {
    f(BFloat16{});
  } else {
    f(float{});
  }
}

}  // namespace

Result<NeatTensor> normalize(NeatTensor src, const NormalizeParams& p, ConversionOptions options,
                             std::source_location where) {
  if (!src.defined()) return failed_precondition("normalize: the tensor is undefined");
  if (src.is_composite()) {
    return failed_precondition("normalize of " + src.to_string() +
                               ": convert_color() the planar frame first, or use preprocess()");
  }
  if (p.out_dtype != DType::F32 && p.out_dtype != DType::F16 && p.out_dtype != DType::BF16) {
    return invalid_argument("normalize: out_dtype " + std::string(to_string(p.out_dtype)) +
                            " must be f32, f16 or bf16");
  }
  if (p.out_layout != Layout::CHW && p.out_layout != Layout::HWC) {
    return invalid_argument("normalize: out_layout must be CHW or HWC, not " +
                            std::string(to_string(p.out_layout)));
  }
  if (src.device().type != DeviceType::Cpu) {
    return failed_precondition("normalize of " + src.to_string() + ": not in CPU memory");
  }
  const Layout in_layout = src.is_image() ? src.layout() : p.in_layout;
  const int in_rank = src.rank();
  Geometry g{};
  const Dims& s = src.shape();
  const Dims& st = src.strides();
  if (src.rank() == 2) {
    g = {s[0], s[1], 1, st[0], st[1], 0};
  } else if (src.rank() == 3 && in_layout == Layout::CHW) {
    g = {s[1], s[2], s[0], st[1], st[2], st[0]};
  } else if (src.rank() == 3 && (in_layout == Layout::HWC || in_layout == Layout::None)) {
    g = {s[0], s[1], s[2], st[0], st[1], st[2]};
  } else {
    return invalid_argument("normalize of " + src.to_string() +
                            ": expected [H, W], [H, W, C] (HWC) or [C, H, W] (CHW)");
  }
  if (g.c > 4) {
    return invalid_argument("normalize of " + src.to_string() + ": " + std::to_string(g.c) +
                            " channels; at most 4 have a mean and std");
  }
  std::array<float, 4> a{}, b{};
  for (std::int64_t c = 0; c < g.c; ++c) {
    const auto u = static_cast<std::size_t>(c);
    if (!(std::isfinite(p.std[u]) && p.std[u] != 0.f && std::isfinite(p.mean[u]) &&
          std::isfinite(p.scale))) {
      return invalid_argument("normalize: channel " + std::to_string(c) + " has std " +
                              std::to_string(p.std[u]) + ", mean " + std::to_string(p.mean[u]) +
                              ", scale " + std::to_string(p.scale) +
                              "; std must be finite and non-zero");
    }
    a[u] = p.scale / p.std[u];
    b[u] = -p.mean[u] / p.std[u];
  }
  const bool chw = p.out_layout == Layout::CHW;
  const bool same_bytes = src.dtype() == p.out_dtype && src.is_contiguous() &&
                          (g.c == 1 || (chw == (in_layout == Layout::CHW)));
  auto run = [&](const std::byte* in, std::byte* out) -> Status {
    return with_input(src.dtype(), [&](auto i) {
      with_output(p.out_dtype, [&](auto o) {
        parallel_rows(g.h, options.threads, [&](std::int64_t r0, std::int64_t r1) {
          normalize_rows<decltype(i), decltype(o)>(g, in, out, chw, a.data(), b.data(), r0, r1);
        });
      });
    });
  };

  // In place: the caller gave the buffer away and the bytes keep their meaning.
  if (same_bytes && p.donation != Donation::AlwaysCopy && src.can_donate()) {
    NEAT_ASSIGN_OR_RETURN(NeatTensor w, std::move(src).make_writable());
    {
      NEAT_ASSIGN_OR_RETURN(Mapping m, w.map(MapMode::ReadWrite));
      NEAT_RETURN_IF_ERROR(run(m.data(), m.mutable_data()));
    }
    NEAT_ASSIGN_OR_RETURN(w, w.as_dense());
    if (in_rank == 2) return w;
    return chw ? w.reshape({g.c, g.h, g.w}) : w.reshape({g.h, g.w, g.c});
  }

  const Dims out_shape = chw ? Dims{g.c, g.h, g.w} : Dims{g.h, g.w, g.c};
  NEAT_ASSIGN_OR_RETURN(NeatTensor dst,
                        NeatTensor::allocate(p.out_dtype, out_shape, destination_alloc(options)));
  ConversionSpec spec{ConversionKind::Convert,
                      ConversionReason::Normalize,
                      "normalize",
                      "normalize explicitly with normalize() before this consumer",
                      {}};
  ConversionOptions opts = options;
  if (p.donation == Donation::MustDonate) {
    // The caller required in-place; this is a refused donation (Strict: an error).
    spec.reason = ConversionReason::DonationRefused;
    spec.fix = same_bytes ? "drop the other references to the input before normalize()"
                          : "in-place normalize needs the output dtype and layout of the input";
    opts.implicit = true;
  }
  return run_conversion(src, std::move(dst), spec, opts, where,
                        [&](const Mapping& in, const Mapping& out) -> Status {
                          return run(in.data(), out.mutable_data());
                        });
}

}  // namespace neat

#include "neat/kernels/cast.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "support/fakes.hpp"

namespace neat {
namespace {

float f_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(CastScalar, FastHalfAndBFloat16MatchTheExactReference) {
  std::mt19937 rng(1);
  std::vector<std::uint32_t> samples = {0x00000000u,           0x80000000u, 0x7f800000u,
                                        0xff800000u,           0x7fc00000u, 0x477fe000u /*65504*/,
                                        0x477ff000u /*65520*/, 0x477fefffu, 0x33800000u /*2^-24*/,
                                        0x33000000u /*2^-25*/, 0x33000001u, 0x38800000u /*2^-14*/,
                                        0x387fffffu,           0x7f7fffffu, 0x00000001u};
  for (int i = 0; i < 2000000; ++i)
    samples.push_back(rng());
  for (std::uint32_t u : samples) {
    const float f = f_of(u);
    const std::uint16_t h_ref = round_to_small_float(f, 10, 5);
    const std::uint16_t b_ref = round_to_small_float(f, 7, 8);
    if (std::isnan(f)) {
      EXPECT_EQ(to_half(f).bits & 0x7c00u, 0x7c00u);
      EXPECT_NE(to_half(f).bits & 0x03ffu, 0u);
      EXPECT_TRUE(std::isnan(to_float(to_bfloat16(f))));
      continue;
    }
    ASSERT_EQ(to_half(f).bits, h_ref) << std::hex << u;
    ASSERT_EQ(to_bfloat16(f).bits, b_ref) << std::hex << u;
  }
}

TEST(CastScalar, EveryHalfRoundTripsThroughFloat) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const Half h{static_cast<std::uint16_t>(b)};
    const float f = to_float(h);
    if (std::isnan(f)) continue;
    EXPECT_EQ(to_half(f).bits, h.bits) << b;
    EXPECT_EQ(to_half(static_cast<double>(f)).bits, h.bits) << b;
  }
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const BFloat16 v{static_cast<std::uint16_t>(b)};
    const float f = to_float(v);
    if (!std::isnan(f)) EXPECT_EQ(to_bfloat16(f).bits, v.bits) << b;
  }
}

TEST(CastScalar, TiesGoToEven) {
  EXPECT_EQ(to_float(to_half(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  EXPECT_EQ(to_float(to_half(1.0f + 3 * std::ldexp(1.0f, -11))), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(to_float(to_bfloat16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(to_float(to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isinf(to_float(to_half(65520.0f))));
  EXPECT_EQ(to_float(to_half(65519.0f)), 65504.0f);
  EXPECT_EQ(to_half(std::ldexp(1.0, -25)).bits, 0u) << "half the smallest subnormal ties to 0";
  EXPECT_EQ(to_half(std::ldexp(1.0, -25) * 1.0000001).bits, 1u);
  // A double that F32 would round up first, then F16 again: exact rounding avoids it.
  const double tricky = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(to_float(to_half(tricky)), 1.0f + std::ldexp(1.0f, -10));
}

template <class T>
std::vector<T> values_of(const NeatTensor& t) {
  std::vector<T> out;
  auto m = t.map();
  EXPECT_TRUE(m.ok());
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    T v;
    std::memcpy(&v, m->data() + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
    out.push_back(v);
  }
  return out;
}

template <class T>
NeatTensor tensor_of(const std::vector<T>& v) {
  auto t = NeatTensor::allocate(dtype_of<T>, {static_cast<std::int64_t>(v.size())});
  auto w = std::move(*t).make_writable();
  {
    auto m = w->map(MapMode::Write);
    for (std::size_t i = 0; i < v.size(); ++i) {
      const T x = v[i];
      std::memcpy(m->mutable_data() + i * sizeof(T), &x, sizeof(T));
    }
  }
  return *std::move(w);
}

TEST(ConvertDtype, SaturationAndRoundingAsDocumented) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto u8 =
      convert_dtype(tensor_of<float>({-1.f, 300.f, 2.5f, 3.5f, nan, 254.6f, -0.4f}), DType::U8);
  ASSERT_TRUE(u8.ok());
  EXPECT_EQ(values_of<std::uint8_t>(*u8), (std::vector<std::uint8_t>{0, 255, 2, 4, 0, 255, 0}));
  auto i8 = convert_dtype(tensor_of<std::int32_t>({200, -200, 5, -128}), DType::I8);
  EXPECT_EQ(values_of<std::int8_t>(*i8), (std::vector<std::int8_t>{127, -128, 5, -128}));
  auto i16 = convert_dtype(tensor_of<std::uint16_t>({40000, 7}), DType::I16);
  EXPECT_EQ(values_of<std::int16_t>(*i16), (std::vector<std::int16_t>{32767, 7}));
  auto i32 = convert_dtype(tensor_of<double>({1e30, -1e30, -2.5}), DType::I32);
  EXPECT_EQ(values_of<std::int32_t>(*i32),
            (std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::max(),
                                       std::numeric_limits<std::int32_t>::min(), -2}));
  auto f16 = convert_dtype(tensor_of<std::int64_t>({70000, -3, 2049}), DType::F16);
  const auto h = values_of<Half>(*f16);
  EXPECT_TRUE(std::isinf(to_float(h[0])));
  EXPECT_EQ(to_float(h[1]), -3.0f);
  EXPECT_EQ(to_float(h[2]), 2048.0f) << "2049 ties to even 2048";
  auto b = convert_dtype(tensor_of<float>({0.f, -0.f, 2.f, nan}), DType::Bool);
  EXPECT_EQ(values_of<bool>(*b), (std::vector<bool>{false, false, true, true}));
  auto back = convert_dtype(*b, DType::F64);
  EXPECT_EQ(values_of<double>(*back), (std::vector<double>{0, 0, 1, 1}));
  auto bf = convert_dtype(tensor_of<float>({1.0f, 3.14159f}), DType::BF16);
  EXPECT_EQ(to_float(values_of<BFloat16>(*bf)[1]), 3.140625f);
}

TEST(ConvertDtype, StridedInputIsReadInPlaceAndRecorded) {
  auto sink = std::make_shared<MemorySink>();
  auto reg = add_event_sink(sink);
  std::vector<std::int16_t> v(6 * 5);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<std::int16_t>(i * 37 - 400);
  auto t = tensor_of(v).reshape({6, 5});
  auto view = t->transpose(0, 1)->slice(1, 1, 6, 2);  // [5, 3], strided both ways
  ASSERT_TRUE(view.ok());
  auto f = convert_dtype(*view, DType::F32);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->is_contiguous());
  EXPECT_EQ(f->shape(), (Dims{5, 3}));
  const auto out = values_of<float>(*f);
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(out[static_cast<std::size_t>(r * 3 + c)],
                v[static_cast<std::size_t>((1 + 2 * c) * 5 + r)]);
  }
  ASSERT_EQ(sink->size(), 1u);
  const auto e = sink->events()[0].event;
  EXPECT_EQ(e.kind, ConversionKind::Convert);
  EXPECT_EQ(e.reason, ConversionReason::DType);
  EXPECT_EQ(e.bytes_written, 5 * 3 * 4);
  EXPECT_EQ(e.source.dtype, DType::I16);
  EXPECT_EQ(e.destination.dtype, DType::F32);
  auto same = convert_dtype(*f, DType::F32);
  EXPECT_EQ(same->identity(), f->identity());
  EXPECT_EQ(sink->size(), 1u) << "no-op: no event";
}

TEST(ConvertDtype, EveryPairConverts) {
  const DType all[] = {DType::U8,  DType::I8,  DType::U16,  DType::I16, DType::U32, DType::I32,
                       DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64, DType::Bool};
  auto src = tensor_of<float>({0.f, 1.f, 7.f, 100.f});
  for (DType a : all) {
    auto x = convert_dtype(src, a);
    ASSERT_TRUE(x.ok()) << to_string(a);
    for (DType b : all) {
      auto y = convert_dtype(*x, b);
      ASSERT_TRUE(y.ok()) << to_string(a) << "->" << to_string(b);
      auto z = convert_dtype(*y, DType::F32);
      const auto got = values_of<float>(*z);
      EXPECT_EQ(got[0], 0.f) << to_string(a) << "->" << to_string(b);
      EXPECT_EQ(got[1], 1.f) << to_string(a) << "->" << to_string(b);
    }
  }
}

TEST(ConvertDtype, BadInput) {
  NEAT_EXPECT_ERROR(convert_dtype(NeatTensor(), DType::F32), ErrorCode::FailedPrecondition,
                    "undefined");
  auto nv12 = NeatTensor::allocate_image(PixelFormat::NV12, 4, 4);
  NEAT_EXPECT_ERROR(convert_dtype(*nv12, DType::F32), ErrorCode::FailedPrecondition,
                    "convert_color() it to an interleaved image first");
  auto empty = NeatTensor::allocate(DType::U8, {0, 3});
  auto e = convert_dtype(*empty, DType::F32);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->numel(), 0);
}

}  // namespace
}  // namespace neat

// Model test helpers: the path of a model made at build time, F32 tensors
// with known values to feed a model, and a model output's values to compare.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "neat/neat.hpp"

#ifndef NEAT_TEST_MODEL_DIR
#error "models.hpp needs NEAT_TEST_MODEL_DIR (tests/CMakeLists.txt sets it for neat_tests)"
#endif

namespace neat::testing {

/// A model file of the build's models/ directory.
inline std::string model_path(const char* name) {
  return std::string(NEAT_TEST_MODEL_DIR) + "/" + name;
}

/// A writable F32 tensor holding `v` (row-major).
inline NeatTensor floats_tensor(const std::vector<float>& v, Dims shape) {
  auto t = NeatTensor::allocate(DType::F32, shape);
  EXPECT_TRUE(t.ok());
  auto w = std::move(*t).make_writable();
  EXPECT_EQ(static_cast<std::int64_t>(v.size()), w->numel());
  {
    auto m = w->map(MapMode::Write);
    std::memcpy(m->mutable_data(), v.data(), v.size() * sizeof(float));
  }
  return *w;
}

/// An F32 tensor whose element i holds i * step.
inline NeatTensor ramp(Dims shape, float step) {
  std::int64_t n = 1;
  for (std::int64_t d : shape)
    n *= d;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(i) * step;
  return floats_tensor(v, shape);
}

/// An F32 tensor's values in row-major order (packed first when strided).
inline std::vector<float> values(const NeatTensor& t) {
  auto c = t.contiguous();
  EXPECT_TRUE(c.ok());
  auto m = c->map();
  const auto* p = reinterpret_cast<const float*>(m->data());
  return std::vector<float>(p, p + t.numel());
}

}  // namespace neat::testing

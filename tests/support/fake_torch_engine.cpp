// A stand-in for libneat_torch.so built by another NeatTensor: the loader
// must refuse it before calling anything (tests/kernels/torch_engine_test.cpp).
#include "neat/kernels/internal/model_engine.hpp"

extern "C" __attribute__((visibility("default"))) const neat::TorchEngine* neat_torch_engine() {
  static const neat::TorchEngine engine{neat::kTorchEngineAbi, "0.0.0-other", nullptr, nullptr,
                                        nullptr};
  return &engine;
}

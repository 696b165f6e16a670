#include "neat/telemetry/context.hpp"

namespace neat {

namespace {
thread_local ConversionContext t_context;
}

const ConversionContext& current_context() noexcept {
  return t_context;
}

ScopedContext::ScopedContext(const ConversionContext& context) noexcept : previous_(t_context) {
  t_context = context;
}

ScopedContext::~ScopedContext() {
  t_context = previous_;
}

void ScopedContext::set_frame(std::int64_t frame) noexcept {
  t_context.frame = frame;
}

void ScopedContext::set_stream(std::string_view stream) noexcept {
  t_context.stream = stream;
}

void ScopedContext::set_edge(std::string_view edge,
                             std::optional<ConversionPolicy> policy) noexcept {
  t_context.edge = edge;
  t_context.policy = policy;
}

}  // namespace neat

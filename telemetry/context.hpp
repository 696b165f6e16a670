// The thread-local conversion context: which graph, stage, edge, stream and frame the
// current thread is working on, and the policy that graph/stage/edge set.
// Stages set it (ScopedContext) around their work; the copy gate stamps it on
// every event and error.
//
// Ownership: the context borrows the names (string_view); the setter keeps
// them alive while its ScopedContext lives.
// Threading: per thread; no sharing.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "neat/contract/conversion.hpp"

namespace neat {

struct ConversionContext {
  std::string_view graph;
  std::string_view stage;
  std::string_view edge;
  std::string_view stream;                 ///< the frame's stream (FrameMeta::stream); may be empty
  std::int64_t frame = -1;                 ///< -1: unknown
  std::optional<ConversionPolicy> policy;  ///< graph / stage / edge policy, if set
};

/// The calling thread's current context (empty when none is set).
const ConversionContext& current_context() noexcept;

/// Sets the calling thread's context until destroyed, then restores the previous one.
class ScopedContext {
 public:
  explicit ScopedContext(const ConversionContext& context) noexcept;
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  /// Advances the frame number of the context this guard set.
  void set_frame(std::int64_t frame) noexcept;
  /// Sets the stream of the frame being worked on (an interned name).
  void set_stream(std::string_view stream) noexcept;
  /// Moves to another input edge (a node fed by several streams).
  void set_edge(std::string_view edge, std::optional<ConversionPolicy> policy) noexcept;

 private:
  ConversionContext previous_;
};

}  // namespace neat

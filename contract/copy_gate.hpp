// The copy gate: the one choke point every pack, convert and transfer passes.
// The contract declares it so that the tensor's own copying operations
// (clone, contiguous, copy-on-write make_writable) reach it without depending
// on the policy layer; the policy layer implements it (neat/policy/gate.hpp)
// and provides default_copy_gate().
//
// Explicit conversions (called by name) are admitted under every policy
// (only a copy budget or rule with a Fail action refuses them) and always
// recorded; implicit ones are admitted or refused by the policy in force.
//
// Threading: copy_gate() and set_copy_gate() are thread-safe; gate
// implementations must be thread-safe.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>

#include "neat/contract/conversion.hpp"
#include "neat/contract/device.hpp"
#include "neat/contract/dtype.hpp"
#include "neat/contract/error.hpp"
#include "neat/contract/image.hpp"

namespace neat {

/// A compact, allocation-free description of one side of a conversion:
/// "f32 [1080, 1920, 3] HWC cpu:0 heap (strided)".
struct TensorDescription {
  DType dtype = DType::U8;
  PixelFormat format = PixelFormat::None;
  Layout layout = Layout::None;
  Device device{};
  StorageKind storage = StorageKind::Heap;
  std::int8_t rank = 0;
  bool contiguous = true;
  std::array<std::int64_t, 4> shape{};  ///< the first min(rank, 4) extents

  std::string to_string() const;
};

/// A conversion that is about to run.
struct CopyRequest {
  ConversionKind kind = ConversionKind::Pack;
  ConversionReason reason = ConversionReason::UserRequest;
  bool explicit_call = true;     ///< called by name (clone(), contiguous(), ...)
  std::int64_t bytes = 0;        ///< bytes the conversion will write
  std::int64_t bytes_read = -1;  ///< bytes it reads; -1: as many as it writes (a pack)
  TensorDescription source;
  TensorDescription destination;
  std::source_location where;              ///< the user's call site
  std::optional<ConversionPolicy> policy;  ///< per-call override
  std::string_view operation;              ///< the API that converts, e.g. "make_writable"
  std::string_view fix;                    ///< for refusals: the explicit call that makes it legal
  std::string_view fix_python;  ///< the same fix in the Python API's words, when they differ
  /// What else the trace should say (a colour standard, a GStreamer element);
  /// must outlive the conversion's record() call.
  std::string_view detail;
};

/// What a conversion that ran cost.
struct CopyOutcome {
  std::int64_t bytes_read = 0;
  std::int64_t bytes_written = 0;
  std::int64_t duration_ns = 0;
};

class CopyGate {
 public:
  virtual ~CopyGate() = default;
  /// Returns the policy in force when the conversion may run, or the refusal
  /// (FailedPrecondition, naming kind, reason, bytes, place and fix).
  virtual Result<ConversionPolicy> admit(const CopyRequest& request) = 0;
  /// Records a conversion that ran under `policy`. Never fails, never throws.
  virtual void record(const CopyRequest& request, ConversionPolicy policy,
                      const CopyOutcome& outcome) noexcept = 0;
};

/// The gate in force: the one installed by set_copy_gate(), else the policy
/// layer's default_copy_gate().
CopyGate& copy_gate() noexcept;
/// Installs `gate` for the whole process (tests install fakes); nullptr
/// restores the default. Returns the previous override (or nullptr).
CopyGate* set_copy_gate(CopyGate* gate) noexcept;
/// Defined by the policy layer (neat/policy/gate.hpp).
CopyGate& default_copy_gate() noexcept;

/// Runs `copy` (returning Status) through the gate: admit, time, record.
/// Returns the refusal or the copy's own error; records only what ran.
template <class F>
Status run_through_gate(const CopyRequest& request, F&& copy) {
  CopyGate& gate = copy_gate();
  NEAT_ASSIGN_OR_RETURN(ConversionPolicy policy, gate.admit(request));
  const auto start = std::chrono::steady_clock::now();
  Status status = copy();
  if (!status.ok()) return status;
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  const std::int64_t read = request.bytes_read >= 0 ? request.bytes_read : request.bytes;
  gate.record(request, policy, CopyOutcome{read, request.bytes, ns});
  return {};
}

}  // namespace neat

// DLPack interop (the DLPack 0.6 ABI that Debian's libdlpack-dev and numpy's
// from_dlpack speak): NeatTensor out as DLManagedTensor without a copy (a
// composite image exports one DLPack tensor per plane), and DLManagedTensor in
// as NeatTensor without a copy.
//
// Strides: DLPack counts strides in elements. A byte stride that is not a
// multiple of the item size cannot be expressed: export packs the tensor
// through the copy gate (refused under Strict, recorded otherwise) unless
// told to fail. Read-only: DLPack 0.6 has no read-only flag, so a tensor over
// read-only storage (a GstBuffer from an appsink, read-only external memory)
// is refused by export unless the caller accepts that the consumer must not
// write (numpy's from_dlpack arrays are read-only anyway); imports are
// read-only unless the caller says the producer gave the bytes away.
//
// Ownership: export_dlpack() returns a DLManagedTensor the consumer owns (call its
// deleter exactly once); it keeps the tensor's storage mapped and alive.
// wrap_dlpack() takes ownership of the DLManagedTensor on every path, success
// or error: its deleter runs exactly once, when the last tensor, view or
// mapping of it goes (or before wrap_dlpack returns an error).
// Threading: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <source_location>
#include <vector>

#include "neat/contract/conversion.hpp"
#include "neat/contract/neat_tensor.hpp"
#include "neat/storage/external.hpp"

extern "C" {
struct DLManagedTensor;
}

namespace neat {

struct DlpackExportOptions {
  /// The consumer promises not to write (numpy's from_dlpack arrays are
  /// read-only): a tensor shared with other holders, or over read-only
  /// storage, is handed out as it is. Otherwise (the default: DLPack 0.6
  /// cannot mark memory read-only, and a torch tensor is writable) only a
  /// tensor this handle holds alone, over writable storage, is handed out
  /// zero-copy; any other is handed out as a copy the consumer may write: an
  /// implicit conversion (not_writable) the policy rules, refused under
  /// Strict with the fix (make_writable() first).
  bool read_only_consumer = false;
  /// Per-call policy for the pack that strides not divisible by the item size
  /// need (default: the effective policy; Strict refuses).
  std::optional<ConversionPolicy> policy;
};

/// A dense tensor as a DLManagedTensor (device kDLCPU). Images export their
/// pixels ([H, W, C] / [C, H, W] / [H, W]); composites are refused here with
/// the fix (export_dlpack_planes). Bool has no DLPack 0.6 type: reinterpret as U8.
Result<DLManagedTensor*> export_dlpack(
    const NeatTensor& tensor, DlpackExportOptions options = {},
    std::source_location where = std::source_location::current());
/// A composite image as one DLPack tensor per plane, in the format's plane
/// order (NV12: Y [H, W], UV [H/2, W/2, 2]; I420: Y, U, V).
Result<std::vector<DLManagedTensor*>> export_dlpack_planes(
    const NeatTensor& image, DlpackExportOptions options = {},
    std::source_location where = std::source_location::current());

/// A tensor over the DLPack tensor's memory: NULL strides (compact row-major),
/// negative strides, byte_offset and zero-size dimensions are all accepted.
/// Refused (with the deleter run once): null, a non-CPU device, lanes != 1, an
/// unsupported dtype, rank > 8, negative extents, null data with elements.
/// `options` as for any memory the tensor does not own: read_only (the
/// default: the producer may still read the bytes, never write them) and
/// exclusive (the producer gave the bytes away: make_writable() may reuse them).
Result<NeatTensor> wrap_dlpack(DLManagedTensor* managed, ExternalOptions options = {});

/// Live DLManagedTensors exported by export_dlpack() whose deleter has not run.
std::int64_t dlpack_live_exports() noexcept;

}  // namespace neat

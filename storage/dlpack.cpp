#include "neat/storage/dlpack.hpp"

#include <dlpack/dlpack.h>

#include <atomic>
#include <memory>
#include <new>
#include <string>

#include "neat/contract/layout_check.hpp"
#include "neat/contract/mapping.hpp"
#include "neat/storage/external.hpp"

namespace neat {
namespace {

std::atomic<std::int64_t> g_live_exports{0};

// kDLBool arrived in DLPack 0.8; accept it on import when a newer producer sends it.
constexpr std::uint8_t kDLBoolCode = 6;

Result<DLDataType> dl_dtype(DType t) {
  const auto bits = static_cast<std::uint8_t>(item_size(t) * 8);
  switch (t) {
    case DType::U8:
    case DType::U16:
    case DType::U32:
      return DLDataType{kDLUInt, bits, 1};
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64:
      return DLDataType{kDLInt, bits, 1};
    case DType::F16:
    case DType::F32:
    case DType::F64:
      return DLDataType{kDLFloat, bits, 1};
    case DType::BF16:
      return DLDataType{kDLBfloat, bits, 1};
    case DType::Bool:
      break;
  }
  return unimplemented(
      "export_dlpack: bool has no DLPack 0.6 type (numpy refuses it too); export "
      "tensor.reinterpret(DType::U8) instead");
}

Result<DType> from_dl_dtype(const DLDataType& t) {
  const std::string what = "wrap_dlpack: dtype (code " + std::to_string(t.code) + ", " +
                           std::to_string(t.bits) + " bits, " + std::to_string(t.lanes) + " lanes)";
  if (t.lanes != 1) return unimplemented(what + ": vector lanes are not supported");
  switch (t.code) {
    case kDLUInt:
      if (t.bits == 8) return DType::U8;
      if (t.bits == 16) return DType::U16;
      if (t.bits == 32) return DType::U32;
      break;
    case kDLInt:
      if (t.bits == 8) return DType::I8;
      if (t.bits == 16) return DType::I16;
      if (t.bits == 32) return DType::I32;
      if (t.bits == 64) return DType::I64;
      break;
    case kDLFloat:
      if (t.bits == 16) return DType::F16;
      if (t.bits == 32) return DType::F32;
      if (t.bits == 64) return DType::F64;
      break;
    case kDLBfloat:
      if (t.bits == 16) return DType::BF16;
      break;
    case kDLBoolCode:
      if (t.bits == 8) return DType::Bool;
      break;
    default:
      break;
  }
  return unimplemented(what +
                       " has no NeatTensor dtype (u8/16/32, i8/16/32/64, f16/32/64, "
                       "bf16, bool)");
}

struct ExportContext {
  explicit ExportContext(Mapping m) : mapping(std::move(m)) {}
  DLManagedTensor managed{};
  std::int64_t shape[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};
  Mapping mapping;
};

void delete_export(DLManagedTensor* self) {
  delete static_cast<ExportContext*>(self->manager_ctx);
  g_live_exports.fetch_sub(1, std::memory_order_relaxed);
}

// The copy a consumer that may write gets of a tensor others can see: its
// own buffer, through the copy gate.
Result<NeatTensor> private_copy(const NeatTensor& t, const DlpackExportOptions& options,
                                std::string_view what, std::source_location where) {
  ConversionOptions copy;
  copy.policy = options.policy;
  copy.implicit = true;
  copy.requested_by = what;
  copy.reason = ConversionReason::NotWritable;
  copy.fix =
      "call make_writable() first (a copy only when the tensor is shared), or pass "
      "read_only_consumer = true when the consumer will not write";
  copy.fix_python =
      "call frame.make_writable() first (a copy only when the frame is shared: torch then gets a "
      "frame of its own), or read it zero-copy with np.asarray(frame) (read-only)";
  auto c = t.clone(copy, where);
  if (!c.ok()) {
    return std::move(c).error().with_context(
        std::string(what) + ": " + t.to_string() +
        " is shared with other holders or read-only, and a DLPack consumer may write (DLPack "
        "0.6 has no read-only flag)");
  }
  return c;
}

Result<DLManagedTensor*> export_dense(const NeatTensor& input, const DlpackExportOptions& options,
                                      std::string_view what, std::source_location where) {
  NEAT_ASSIGN_OR_RETURN(DLDataType dtype, dl_dtype(input.dtype()));
  if (input.device().type != DeviceType::Cpu) {
    return failed_precondition(std::string(what) + ": " + input.to_string() +
                               " is not in CPU memory; transfer it with cpu() first");
  }
  const std::int64_t item = item_size(input.dtype());
  bool divisible = true;
  for (int d = 0; d < input.rank(); ++d) {
    if (input.strides()[d] % item != 0) divisible = false;
  }
  // Checked before this function takes a handle of its own.
  const bool needs_copy = !options.read_only_consumer && input.writes_reach_others();
  NeatTensor tensor = input;
  if (needs_copy) {
    NEAT_ASSIGN_OR_RETURN(tensor, private_copy(input, options, what, where));
    divisible = true;  // the copy is packed
  }
  if (!divisible) {
    ConversionOptions copy;
    copy.policy = options.policy;
    copy.implicit = true;
    copy.requested_by = "export_dlpack";
    copy.fix = "call contiguous() before export_dlpack(): DLPack strides count elements";
    copy.reason = ConversionReason::NonContiguousExport;
    auto packed = input.contiguous(copy, where);
    if (!packed.ok()) {
      return std::move(packed).error().with_context(
          std::string(what) + ": byte strides " + input.strides().to_string() +
          " are not multiples of the " + std::to_string(item) + "-byte item size");
    }
    tensor = std::move(*packed);
  }
  NEAT_ASSIGN_OR_RETURN(Mapping mapping, tensor.map(MapMode::Read));
  ExportContext* ctx = nullptr;
  try {
    ctx = new ExportContext(std::move(mapping));
  } catch (const std::bad_alloc&) {
    return resource_exhausted(std::string(what) + ": out of memory");
  }
  const NeatTensor& t = ctx->mapping.tensor();
  for (int d = 0; d < t.rank(); ++d) {
    ctx->shape[d] = t.shape()[d];
    ctx->strides[d] = t.strides()[d] / item;
  }
  DLTensor& dl = ctx->managed.dl_tensor;
  dl.data = const_cast<std::byte*>(ctx->mapping.data());
  dl.device = DLDevice{kDLCPU, 0};
  dl.ndim = t.rank();
  dl.dtype = dtype;
  dl.shape = ctx->shape;
  dl.strides = ctx->strides;
  dl.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = delete_export;
  g_live_exports.fetch_add(1, std::memory_order_relaxed);
  return &ctx->managed;
}

}  // namespace

Result<DLManagedTensor*> export_dlpack(const NeatTensor& tensor, DlpackExportOptions options,
                                       std::source_location where) {
  if (!tensor.defined()) return failed_precondition("export_dlpack: the tensor is undefined");
  if (tensor.is_composite()) {
    return Error(ErrorCode::FailedPrecondition, "export_dlpack",
                 tensor.to_string() + " is a planar frame (DLPack holds one dense tensor)",
                 {Fix{"export it plane by plane with export_dlpack_planes()",
                      "export it plane by plane: frame.plane(\"Y\"), frame.plane(\"UV\")"}});
  }
  return export_dense(tensor, options, "export_dlpack", where);
}

Result<std::vector<DLManagedTensor*>> export_dlpack_planes(const NeatTensor& image,
                                                           DlpackExportOptions options,
                                                           std::source_location where) {
  if (!image.defined()) return failed_precondition("export_dlpack_planes: the tensor is undefined");
  if (!image.is_composite()) {
    return Error(ErrorCode::InvalidArgument, "export_dlpack_planes",
                 image.to_string() + " is not a planar frame",
                 {Fix{"export it whole with export_dlpack()", "pass it whole to the consumer"}});
  }
  // One check (and at most one copy) for the frame, before this function
  // takes a handle of its own: a consumer that may write gets the planes
  // zero-copy only when the caller's handle is the frame's only holder (the
  // planes' views and exports are disjoint rows of it).
  const bool needs_copy = !options.read_only_consumer && image.writes_reach_others();
  NeatTensor frame = image;
  if (needs_copy) {
    NEAT_ASSIGN_OR_RETURN(frame, private_copy(image, options, "export_dlpack_planes", where));
  }
  DlpackExportOptions per_plane = options;
  per_plane.read_only_consumer = true;  // checked above for the whole frame
  std::vector<DLManagedTensor*> out;
  out.reserve(static_cast<std::size_t>(frame.plane_count()));
  auto release = [&out] {
    for (DLManagedTensor* m : out)
      m->deleter(m);
  };
  for (int i = 0; i < frame.plane_count(); ++i) {
    auto plane = frame.plane(frame.plane_layout(i).role);
    if (!plane.ok()) {
      release();
      return std::move(plane).error();
    }
    auto m = export_dense(*plane, per_plane, "export_dlpack_planes", where);
    if (!m.ok()) {
      release();
      return std::move(m).error().with_context("plane " + std::to_string(i));
    }
    out.push_back(*m);
  }
  return out;
}

Result<NeatTensor> wrap_dlpack(DLManagedTensor* managed, ExternalOptions options) {
  if (managed == nullptr) return invalid_argument("wrap_dlpack: the DLManagedTensor is null");
  // From here the deleter runs exactly once: when this keep-alive goes.
  std::shared_ptr<const void> keep_alive;
  try {
    keep_alive = std::shared_ptr<const void>(managed, [](const void* p) {
      auto* m = static_cast<DLManagedTensor*>(const_cast<void*>(p));
      if (m->deleter != nullptr) m->deleter(m);
    });
  } catch (const std::bad_alloc&) {
    if (managed->deleter != nullptr) managed->deleter(managed);
    return resource_exhausted("wrap_dlpack: out of memory");
  }
  const DLTensor& dl = managed->dl_tensor;
  if (dl.device.device_type != kDLCPU) {
    return failed_precondition("wrap_dlpack: the tensor is on DLPack device type " +
                               std::to_string(dl.device.device_type) +
                               ", not the CPU (kDLCPU); copy it to host memory first");
  }
  if (dl.ndim < 0 || dl.ndim > kMaxRank) {
    return invalid_argument("wrap_dlpack: ndim " + std::to_string(dl.ndim) + " is outside [0, " +
                            std::to_string(kMaxRank) + "]");
  }
  NEAT_ASSIGN_OR_RETURN(DType dtype, from_dl_dtype(dl.dtype));
  if (dl.ndim > 0 && dl.shape == nullptr) {
    return invalid_argument("wrap_dlpack: shape is null for ndim " + std::to_string(dl.ndim));
  }
  Dims shape;
  Dims strides;
  for (int d = 0; d < dl.ndim; ++d)
    shape.push_back(dl.shape[d]);
  NEAT_RETURN_IF_ERROR(check_shape(shape, "wrap_dlpack"));
  const std::int64_t item = item_size(dtype);
  if (dl.strides == nullptr) {
    NEAT_ASSIGN_OR_RETURN(strides, contiguous_strides(dtype, shape));
  } else {
    for (int d = 0; d < dl.ndim; ++d) {
      std::int64_t bytes = 0;
      if (__builtin_mul_overflow(dl.strides[d], item, &bytes)) {
        return out_of_range("wrap_dlpack: stride " + std::to_string(dl.strides[d]) +
                            " of dimension " + std::to_string(d) + " overflows in bytes");
      }
      strides.push_back(bytes);
    }
  }
  if (dl.byte_offset > static_cast<std::uint64_t>(INT64_MAX)) {
    return out_of_range("wrap_dlpack: byte_offset " + std::to_string(dl.byte_offset) +
                        " is too large");
  }
  NEAT_ASSIGN_OR_RETURN(ByteSpan span, addressed_bytes(dtype, shape, strides, 0, "wrap_dlpack"));
  std::byte* origin = static_cast<std::byte*>(dl.data);
  if (origin == nullptr && !span.empty) {
    return invalid_argument("wrap_dlpack: data is null but the tensor has elements (shape " +
                            shape.to_string() + ")");
  }
  std::byte* base = nullptr;
  std::int64_t size = 0;
  std::int64_t offset = 0;
  // Address arithmetic in integers: a layout that would wrap around the
  // address space is refused, not formed into a pointer.
  const auto at = reinterpret_cast<std::uintptr_t>(origin);
  if (at > UINTPTR_MAX - dl.byte_offset) {
    return out_of_range("wrap_dlpack: data + byte_offset " + std::to_string(dl.byte_offset) +
                        " wraps around the address space");
  }
  const std::uintptr_t first = at + dl.byte_offset;  // element 0
  if (!span.empty) {
    // The storage spans exactly the addressed bytes, from the lowest one
    // (below the data pointer when strides are negative).
    // span.lo <= 0: negate in unsigned arithmetic (INT64_MIN stays representable).
    const std::uintptr_t below = std::uintptr_t{0} - static_cast<std::uintptr_t>(span.lo);
    std::int64_t extent = 0;
    if (below > first || static_cast<std::uintptr_t>(span.hi) > UINTPTR_MAX - first ||
        __builtin_sub_overflow(span.hi, span.lo, &extent)) {
      return out_of_range("wrap_dlpack: shape " + shape.to_string() + " with strides " +
                          strides.to_string() + " addresses memory outside the address space");
    }
    base = reinterpret_cast<std::byte*>(first - below);
    size = extent;
    offset = static_cast<std::int64_t>(below);
  } else if (origin != nullptr) {
    base = reinterpret_cast<std::byte*>(first);
  }
  NEAT_ASSIGN_OR_RETURN(std::shared_ptr<Storage> storage,
                        wrap_memory(base, size, std::move(keep_alive),
                                    ExternalOptions{options.read_only, options.exclusive}));
  return NeatTensor::from_storage(std::move(storage), dtype, shape, strides, offset);
}

std::int64_t dlpack_live_exports() noexcept {
  return g_live_exports.load(std::memory_order_relaxed);
}

}  // namespace neat

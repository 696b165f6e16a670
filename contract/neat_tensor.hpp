// NeatTensor: the one value type that flows through every stage, source and
// sink. A cheap value: copies share the storage (like a shared_ptr), views
// never allocate a buffer, and every operation that copies bytes says so by
// name (clone, contiguous, make_writable when it must) and passes the copy gate.
//
// Dense tensors: dtype, shape, byte strides and a byte offset into one
// storage. Images: the same plus an ImageSpec (interleaved GRAY8/RGB/BGR/
// RGBA/BGRA as [H, W, C] HWC, [C, H, W] CHW or [H, W] HW). Planar frames
// (NV12, NV21, I420, YV12): a composite of role-tagged planes, each on its own
// or a shared storage; the top level is [H, W] HW with byte_offset 0.
//
// Ownership: a NeatTensor shares its storages (std::shared_ptr) with its
// copies, views and mappings. Writing needs make_writable(), which consumes
// the handle and donates the buffer when nothing else holds it.
// Threading: like std::shared_ptr. Distinct NeatTensor objects may be used
// from any threads, even when they share a storage; one object may be read
// (const members) from several threads at once; non-const members
// (map(Write), assignment) need exclusive access to that object.
// See docs/ownership.md.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <source_location>
#include <span>
#include <string>

#include "neat/contract/allocator.hpp"
#include "neat/contract/conversion.hpp"
#include "neat/contract/copy_gate.hpp"
#include "neat/contract/device.hpp"
#include "neat/contract/dims.hpp"
#include "neat/contract/dtype.hpp"
#include "neat/contract/error.hpp"
#include "neat/contract/frame_meta.hpp"
#include "neat/contract/image.hpp"
#include "neat/contract/storage.hpp"

namespace neat {

class Mapping;

/// One plane of a planar frame, as a composite stores it. Pixels in a row are
/// packed (`samples` bytes each); rows are `row_stride` bytes apart.
struct PlaneLayout {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t row_stride = 0;   ///< bytes from one row to the next
  std::int64_t byte_offset = 0;  ///< from the base of its storage
  PlaneRole role = PlaneRole::Y;
  std::int8_t samples = 1;  ///< bytes per pixel: 1 (Y, U, V) or 2 (UV, VU)
  std::int8_t storage = 0;  ///< index of its storage in the composite
};

/// A plane handed to compose_planes(): which storage, where, how far apart rows are.
struct PlaneSpec {
  PlaneRole role = PlaneRole::Y;
  std::shared_ptr<Storage> storage;
  std::int64_t row_stride = 0;
  std::int64_t byte_offset = 0;
};

struct AllocOptions {
  bool zero_fill = true;                  ///< false: unspecified contents, faster
  StorageAllocator* allocator = nullptr;  ///< nullptr: default_allocator()
};

struct ImageAllocOptions {
  bool zero_fill = true;
  std::int64_t row_alignment = 1;  ///< every row stride (and plane offset) is a multiple
  Layout layout = Layout::None;    ///< None: the format's default (HWC / HW)
  StorageAllocator* allocator = nullptr;
};

/// Who asks for a copy or conversion, under which policy, explicit or
/// implicit, into which allocator: what every operation that copies takes
/// (clone(), contiguous(), cpu(), the conversion kernels, and the stages that
/// run them on a graph's edges), beside its own parameters (PreprocessParams,
/// NormalizeParams, ...).
struct ConversionOptions {
  std::optional<ConversionPolicy> policy;  ///< per-call override
  StorageAllocator* allocator = nullptr;   ///< nullptr: default_allocator()
  /// Set by consumers (stages, sinks, exports, a graph's edges) that convert
  /// on the user's behalf: the conversion is then implicit and ruled by the
  /// policy (refused under Strict).
  bool implicit = false;
  std::string_view requested_by;  ///< the consumer, for traces and errors
  std::string_view fix;           ///< the explicit call or stage that would avoid it
  std::string_view fix_python;    ///< the same fix in the Python API's words, when they differ
  /// Why the consumer needs a pack (default: StrideMismatch for contiguous(),
  /// UserRequest for clone(), Device for cpu()).
  std::optional<ConversionReason> reason;
  /// Worker threads for kernels that split rows (1: the calling thread only),
  /// capped by OpenCV's thread setting (cv::setNumThreads, OPENCV_FOR_THREADS_NUM).
  int threads = 1;
};

struct WritableOptions {
  Donation donation = Donation::ReuseIfUnique;
  std::optional<ConversionPolicy> policy;  ///< per-call override (rules MustDonate refusals)
  StorageAllocator* allocator = nullptr;
};

class NeatTensor {
 public:
  /// An undefined tensor (no storage). Most operations on it fail with FailedPrecondition.
  NeatTensor() = default;

  // ---- factories (all validate; none copies) --------------------------------

  /// A new dense, row-major tensor on fresh host storage.
  static Result<NeatTensor> allocate(DType dtype, DimsRef shape, AllocOptions options = {});
  /// A new image: interleaved formats as [H, W, C] (or CHW / HW per options),
  /// planar formats as one storage holding the planes in order. Odd sizes are
  /// valid: chroma planes round up.
  static Result<NeatTensor> allocate_image(PixelFormat format, std::int64_t width,
                                           std::int64_t height, ImageAllocOptions options = {});
  /// A dense tensor over an existing storage. Strides are bytes.
  static Result<NeatTensor> from_storage(std::shared_ptr<Storage> storage, DType dtype,
                                         DimsRef shape, DimsRef strides,
                                         std::int64_t byte_offset = 0);
  /// As from_storage, with row-major contiguous strides.
  static Result<NeatTensor> from_storage_contiguous(std::shared_ptr<Storage> storage, DType dtype,
                                                    DimsRef shape, std::int64_t byte_offset = 0);
  /// A planar frame from its planes, in the format's role order (NV12: Y, UV;
  /// I420: Y, U, V; ...). Planes may share a storage or each have their own;
  /// they must not overlap.
  static Result<NeatTensor> compose_planes(PixelFormat format, std::int64_t width,
                                           std::int64_t height, std::span<const PlaneSpec> planes);

  // ---- description -----------------------------------------------------------

  bool defined() const noexcept { return storages_[0] != nullptr; }
  DType dtype() const noexcept { return dtype_; }
  int rank() const noexcept { return shape_.size(); }
  const Dims& shape() const noexcept { return shape_; }
  /// Byte strides. For a planar composite: those of the Y plane.
  const Dims& strides() const noexcept { return strides_; }
  std::int64_t byte_offset() const noexcept { return byte_offset_; }
  std::int64_t numel() const noexcept;
  /// Bytes the tensor's elements occupy when packed (all planes for a composite).
  std::int64_t nbytes() const noexcept;
  bool is_image() const noexcept { return image_.format != PixelFormat::None; }
  /// The image spec; format None for a dense tensor.
  const ImageSpec& image() const noexcept { return image_; }
  PixelFormat pixel_format() const noexcept { return image_.format; }
  /// The frame's metadata (frame number, timestamps, geometry in the source
  /// frame): held by this handle, kept by views, copies and kernels. See
  /// contract/frame_meta.hpp.
  const FrameMeta& meta() const noexcept { return meta_; }
  /// Replaces this handle's metadata (other handles to the buffer keep theirs).
  void set_meta(const FrameMeta& meta) noexcept { meta_ = meta; }
  /// The geometry to compose a crop or resize onto: meta().geometry, with
  /// the source size taken from this image when nothing set it (a frame that
  /// is its own source).
  FrameGeometry source_geometry() const noexcept {
    FrameGeometry g = meta_.geometry;
    if (g.source_width == 0 && g.is_identity() && is_image()) {
      g.source_width = image_.width;
      g.source_height = image_.height;
    }
    return g;
  }
  Layout layout() const noexcept { return image_.layout; }
  bool is_composite() const noexcept { return plane_count_ > 0; }
  int plane_count() const noexcept { return plane_count_; }
  /// Plane i of a composite (0 <= i < plane_count()).
  const PlaneLayout& plane_layout(int i) const noexcept {
    return planes_[static_cast<std::size_t>(i)];
  }
  /// Row-major and packed (for a composite: planes packed back to back in one storage).
  bool is_contiguous() const noexcept { return (flags_ & kContiguous) != 0; }
  /// A broadcast (stride 0) view: readable, never writable.
  bool is_broadcast() const noexcept { return (flags_ & kBroadcast) != 0; }
  /// Writable now: obtained from make_writable(), held alone, storage not read-only.
  bool is_writable() const noexcept;
  /// Whether make_writable() would donate this buffer now (held alone,
  /// donatable storage, not a broadcast). Race-free only on a handle no other
  /// thread can copy meanwhile, e.g. one the caller took by value.
  bool can_donate() const noexcept;
  /// Whether a write through an alias of these bytes (a DLPack export, a
  /// tensor handed to an engine that writes its input) could change what
  /// someone else reads: a storage held by another handle, read-only
  /// storage, or a broadcast view. Exporters that cannot say "read-only"
  /// copy through the gate when this is true.
  bool writes_reach_others() const noexcept;
  Device device() const noexcept;
  StorageKind storage_kind() const noexcept;
  /// Identity of the (first) storage; views share it.
  BufferIdentity identity() const;
  /// The storage of plane/storage slot i (0 for dense tensors).
  const std::shared_ptr<Storage>& storage(int i = 0) const noexcept {
    return storages_[static_cast<std::size_t>(i)];
  }
  int storage_count() const noexcept { return storage_count_; }
  /// For traces and errors; allocation-free.
  TensorDescription description() const noexcept;
  /// "u8 [1080, 1920, 3] RGB HWC strides [5760, 3, 1] offset 0 cpu:0 heap#7".
  std::string to_string() const;

  // ---- views: metadata only, never allocate a buffer --------------------------

  /// Elements start, start+step, ... < stop of dimension `dim` (0 <= start <= stop <= extent, step
  /// >= 1).
  Result<NeatTensor> slice(int dim, std::int64_t start, std::int64_t stop,
                           std::int64_t step = 1) const;
  /// `length` elements of `dim` from `start`.
  Result<NeatTensor> narrow(int dim, std::int64_t start, std::int64_t length) const;
  /// Pixels [x, x+width) x [y, y+height) of an image. Planar crops need an
  /// even x and y (chroma-aligned); an odd width/height is fine.
  Result<NeatTensor> crop(std::int64_t x, std::int64_t y, std::int64_t width,
                          std::int64_t height) const;
  Result<NeatTensor> transpose(int dim0, int dim1) const;
  Result<NeatTensor> permute(DimsRef order) const;
  /// A view with a new shape (one extent may be -1), or an error when the
  /// strides do not allow it. Never copies: call contiguous() first for that.
  Result<NeatTensor> reshape(DimsRef shape) const;
  Result<NeatTensor> squeeze(int dim) const;
  Result<NeatTensor> unsqueeze(int dim) const;
  /// Broadcast to `shape` (NumPy rules): stride-0 dims, read-only.
  Result<NeatTensor> expand(DimsRef shape) const;
  /// One plane of a planar composite as a dense U8 tensor ([rows, cols] or
  /// [rows, cols, 2]); the Y plane carries a GRAY8 HW image spec.
  Result<NeatTensor> plane(PlaneRole role) const;
  /// The same bytes as another dtype of the same item size.
  Result<NeatTensor> reinterpret(DType dtype) const;
  /// The same bytes with an image spec: U8 [H, W, C] (HWC), [C, H, W] (CHW) or [H, W] (HW, GRAY8).
  Result<NeatTensor> as_image(ImageSpec spec) const;
  /// The same bytes without image semantics (interleaved images only).
  Result<NeatTensor> as_dense() const;
  /// The same frame stating the colour standard its YUV samples were encoded
  /// with (metadata only). Images only; FailedPrecondition for dense tensors.
  Result<NeatTensor> with_colorimetry(Colorimetry colorimetry) const;

  // ---- mutability -------------------------------------------------------------

  /// Consumes this handle and returns a writable tensor: the same buffer when
  /// nothing else holds it (donation, 0 bytes copied), otherwise a
  /// copy-on-write copy through the copy gate. See Donation for the modes.
  Result<NeatTensor> make_writable(WritableOptions options = {},
                                   std::source_location where = std::source_location::current()) &&;

  // ---- access -----------------------------------------------------------------

  /// Maps for reading. Keeps the storages alive until the Mapping is destroyed.
  Result<Mapping> map(MapMode mode = MapMode::Read) const;
  /// Maps for reading or writing. A write mapping needs is_writable() and fails
  /// (never copies) otherwise.
  Result<Mapping> map(MapMode mode = MapMode::Read);

  // ---- explicit copies: run under every policy, always recorded ------------------

  /// A deep copy into fresh, packed storage (planes packed in one storage).
  Result<NeatTensor> clone(ConversionOptions options = {},
                           std::source_location where = std::source_location::current()) const;
  /// This tensor when already contiguous (no copy, no event); otherwise a pack.
  Result<NeatTensor> contiguous(ConversionOptions options = {},
                                std::source_location where = std::source_location::current()) const;

  // ---- device transfers (through the gate, kind Transfer, reason Device) ------

  /// This tensor in host memory: itself when it is already there (no copy, no
  /// event); otherwise a download of every device storage into fresh host
  /// storage with the same layout, an explicit transfer.
  Result<NeatTensor> cpu(ConversionOptions options = {},
                         std::source_location where = std::source_location::current()) const;
  /// As cpu(), for consumers that need host bytes: the download is implicit,
  /// so the policy rules it (refused under Strict, with cpu() as the fix).
  Result<NeatTensor> to_cpu_if_needed(
      ConversionOptions options = {},
      std::source_location where = std::source_location::current()) const;

 private:
  friend class Mapping;
  static constexpr std::uint8_t kContiguous = 1;
  static constexpr std::uint8_t kBroadcast = 2;
  static constexpr std::uint8_t kWritable = 4;

  Status validate_dense(std::string_view what) const;
  Status validate_composite() const;
  void refresh_contiguity() noexcept;
  Status finish_view(std::string_view what);
  /// Builds a view in place: copies *this into the returned Result, applies
  /// `edit` to the copy, validates it (one copy, no move; every view passes here).
  template <class Edit>
  Result<NeatTensor> make_view(std::string_view what, Edit&& edit) const;
  Status require_dense(std::string_view op) const;
  Result<Mapping> map_impl(MapMode mode, bool allow_write) const;
  bool held_alone() const noexcept;
  Result<NeatTensor> copy_packed(const CopyRequest& request, StorageAllocator* allocator) const;
  Result<NeatTensor> download(bool explicit_call, const ConversionOptions& options,
                              std::source_location where) const;

  DType dtype_ = DType::U8;
  std::uint8_t flags_ = kContiguous;
  std::int8_t plane_count_ = 0;
  std::int8_t storage_count_ = 0;
  ImageSpec image_{};
  Dims shape_;
  Dims strides_;
  std::int64_t byte_offset_ = 0;
  std::array<PlaneLayout, kMaxPlanes> planes_{};
  std::array<std::shared_ptr<Storage>, kMaxPlanes> storages_{};
  FrameMeta meta_{};
};

}  // namespace neat

#include "neat/contract/mapping.hpp"  // NOLINT: Mapping is part of this header's API

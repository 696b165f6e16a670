#include "neat/contract/neat_tensor.hpp"

#include <algorithm>
#include <atomic>
#include <string>

#include "neat/contract/layout_check.hpp"

namespace neat {

namespace {

std::int64_t round_up(std::int64_t v, std::int64_t a, bool* ok) {
  std::int64_t r = 0;
  if (!checked_add(v, a - 1, &r)) {
    *ok = false;
    return 0;
  }
  return r / a * a;
}

std::string plane_name(PixelFormat f, int i, PlaneRole role) {
  return std::string(neat::to_string(f)) + " plane " + std::to_string(i) + " (" +
         std::string(neat::to_string(role)) + ")";
}

}  // namespace

// ---- factories ---------------------------------------------------------------

Result<NeatTensor> NeatTensor::allocate(DType dtype, DimsRef shape, AllocOptions options) {
  NEAT_RETURN_IF_ERROR(check_shape(shape, "allocate"));
  NEAT_ASSIGN_OR_RETURN(Dims strides, contiguous_strides(dtype, shape));
  NEAT_ASSIGN_OR_RETURN(std::int64_t n, element_count(shape));
  std::int64_t bytes = 0;
  if (!checked_mul(n, item_size(dtype), &bytes)) {
    return out_of_range("allocate: shape " + dims_to_string(shape) + " of " +
                        std::string(neat::to_string(dtype)) + " needs more than 2^63 bytes");
  }
  StorageAllocator& alloc = options.allocator ? *options.allocator : default_allocator();
  NEAT_ASSIGN_OR_RETURN(std::shared_ptr<Storage> storage,
                        alloc.allocate(AllocRequest{bytes, options.zero_fill}));
  return from_storage(std::move(storage), dtype, shape, strides, 0);
}

Result<NeatTensor> NeatTensor::allocate_image(PixelFormat format, std::int64_t width,
                                              std::int64_t height, ImageAllocOptions options) {
  auto what = [&] {
    return "allocate_image(" + std::string(neat::to_string(format)) + " " + std::to_string(width) +
           "x" + std::to_string(height) + ")";
  };
  if (format == PixelFormat::None) {
    return invalid_argument(what() +
                            ": a pixel format is required; use allocate() for dense tensors");
  }
  if (width < 0 || height < 0) {
    return invalid_argument(what() + ": width and height must be >= 0");
  }
  if (options.row_alignment < 1 || options.row_alignment > (1 << 20)) {
    return invalid_argument(what() + ": row_alignment " + std::to_string(options.row_alignment) +
                            " must be in [1, 1048576]");
  }
  StorageAllocator& alloc = options.allocator ? *options.allocator : default_allocator();
  const std::int64_t align = options.row_alignment;
  bool ok = true;

  if (is_planar(format)) {
    if (options.layout != Layout::None && options.layout != Layout::HW &&
        options.layout != Layout::Planar) {
      return invalid_argument(what() + ": planar formats have layout HW, not " +
                              std::string(neat::to_string(options.layout)));
    }
    const PlaneOrder order = plane_order(format);
    std::array<std::int64_t, kMaxPlanes> strides{}, offsets{};
    std::int64_t total = 0;
    for (int i = 0; i < order.count; ++i) {
      const PlaneGeometry g =
          plane_geometry(format, order.roles[static_cast<std::size_t>(i)], width, height);
      std::int64_t row = 0, bytes = 0;
      if (!checked_mul(g.cols, g.samples, &row)) ok = false;
      row = round_up(row, align, &ok);
      if (!checked_mul(row, g.rows, &bytes)) ok = false;
      total = round_up(total, align, &ok);
      offsets[static_cast<std::size_t>(i)] = total;
      strides[static_cast<std::size_t>(i)] = row;
      if (!checked_add(total, bytes, &total)) ok = false;
      if (!ok) return out_of_range(what() + ": the frame needs more than 2^63 bytes");
    }
    NEAT_ASSIGN_OR_RETURN(std::shared_ptr<Storage> storage,
                          alloc.allocate(AllocRequest{total, options.zero_fill}));
    std::array<PlaneSpec, kMaxPlanes> specs;
    for (int i = 0; i < order.count; ++i) {
      const auto u = static_cast<std::size_t>(i);
      specs[u] = PlaneSpec{order.roles[u], storage, strides[u], offsets[u]};
    }
    return compose_planes(
        format, width, height,
        std::span<const PlaneSpec>(specs.data(), static_cast<std::size_t>(order.count)));
  }

  const std::int64_t c = channels(format);
  Layout layout = options.layout == Layout::None ? default_layout(format) : options.layout;
  if (layout == Layout::HW && c != 1) {
    return invalid_argument(what() + ": layout HW needs a single-channel format (GRAY8)");
  }
  if (layout == Layout::Planar) {
    return invalid_argument(what() + ": layout Planar is for planar formats (NV12, I420, ...)");
  }
  Dims shape, strides;
  std::int64_t total = 0;
  if (layout == Layout::CHW) {
    std::int64_t row = round_up(width, align, &ok), plane = 0;
    if (!checked_mul(row, height, &plane) || !checked_mul(plane, c, &total) || !ok) {
      return out_of_range(what() + ": the image needs more than 2^63 bytes");
    }
    shape = {c, height, width};
    strides = {plane, row, 1};
  } else {
    std::int64_t row = 0;
    if (!checked_mul(width, c, &row)) ok = false;
    row = round_up(row, align, &ok);
    if (!checked_mul(row, height, &total) || !ok) {
      return out_of_range(what() + ": the image needs more than 2^63 bytes");
    }
    if (layout == Layout::HW) {
      shape = {height, width};
      strides = {row, 1};
    } else {
      shape = {height, width, c};
      strides = {row, c, 1};
    }
  }
  NEAT_ASSIGN_OR_RETURN(std::shared_ptr<Storage> storage,
                        alloc.allocate(AllocRequest{total, options.zero_fill}));
  NEAT_ASSIGN_OR_RETURN(NeatTensor t,
                        from_storage(std::move(storage), DType::U8, shape, strides, 0));
  return t.as_image(ImageSpec{format, width, height, layout});
}

Result<NeatTensor> NeatTensor::from_storage(std::shared_ptr<Storage> storage, DType dtype,
                                            DimsRef shape, DimsRef strides,
                                            std::int64_t byte_offset) {
  if (!storage) return invalid_argument("from_storage: storage is null");
  NEAT_RETURN_IF_ERROR(check_shape(shape, "from_storage"));
  if (strides.size() != shape.size()) {
    return invalid_argument("from_storage: " + std::to_string(strides.size()) +
                            " strides for rank " + std::to_string(shape.size()));
  }
  NeatTensor t;
  t.dtype_ = dtype;
  t.shape_ = Dims(shape);
  t.strides_ = Dims(strides);
  t.byte_offset_ = byte_offset;
  t.storages_[0] = std::move(storage);
  t.storage_count_ = 1;
  NEAT_RETURN_IF_ERROR(t.validate_dense("from_storage"));
  t.refresh_contiguity();
  return t;
}

Result<NeatTensor> NeatTensor::from_storage_contiguous(std::shared_ptr<Storage> storage,
                                                       DType dtype, DimsRef shape,
                                                       std::int64_t byte_offset) {
  NEAT_ASSIGN_OR_RETURN(Dims strides, contiguous_strides(dtype, shape));
  return from_storage(std::move(storage), dtype, shape, strides, byte_offset);
}

Result<NeatTensor> NeatTensor::compose_planes(PixelFormat format, std::int64_t width,
                                              std::int64_t height,
                                              std::span<const PlaneSpec> planes) {
  auto what = [&] {
    return "compose_planes(" + std::string(neat::to_string(format)) + " " + std::to_string(width) +
           "x" + std::to_string(height) + ")";
  };
  if (!is_planar(format)) {
    return invalid_argument(what() + ": " + std::string(neat::to_string(format)) +
                            " is not a planar format (NV12, NV21, I420, YV12)");
  }
  if (width < 0 || height < 0) return invalid_argument(what() + ": width and height must be >= 0");
  const PlaneOrder order = plane_order(format);
  if (static_cast<int>(planes.size()) != order.count) {
    return invalid_argument(what() + ": " + std::to_string(planes.size()) + " planes given, " +
                            std::string(neat::to_string(format)) + " has " +
                            std::to_string(order.count));
  }
  NeatTensor t;
  t.dtype_ = DType::U8;
  t.image_ = ImageSpec{format, width, height, Layout::HW};
  t.plane_count_ = static_cast<std::int8_t>(order.count);
  for (int i = 0; i < order.count; ++i) {
    const PlaneSpec& p = planes[static_cast<std::size_t>(i)];
    const PlaneRole expected = order.roles[static_cast<std::size_t>(i)];
    if (p.role != expected) {
      std::string roles;
      for (int k = 0; k < order.count; ++k) {
        roles += (k ? ", " : "");
        roles += neat::to_string(order.roles[static_cast<std::size_t>(k)]);
      }
      return invalid_argument(what() + ": plane " + std::to_string(i) + " has role " +
                              std::string(neat::to_string(p.role)) + ", expected " +
                              std::string(neat::to_string(expected)) + " (order " + roles + ")");
    }
    if (!p.storage) {
      return invalid_argument(what() + ": " + plane_name(format, i, p.role) + " has no storage");
    }
    int slot = -1;
    for (int s = 0; s < t.storage_count_; ++s) {
      if (t.storages_[static_cast<std::size_t>(s)] == p.storage) slot = s;
    }
    if (slot < 0) {
      slot = t.storage_count_++;
      t.storages_[static_cast<std::size_t>(slot)] = p.storage;
    }
    const PlaneGeometry g = plane_geometry(format, p.role, width, height);
    t.planes_[static_cast<std::size_t>(i)] = PlaneLayout{g.rows,
                                                         g.cols,
                                                         p.row_stride,
                                                         p.byte_offset,
                                                         p.role,
                                                         static_cast<std::int8_t>(g.samples),
                                                         static_cast<std::int8_t>(slot)};
  }
  const PlaneLayout& y = t.planes_[0];
  t.shape_ = {height, width};
  t.strides_ = {y.row_stride, 1};
  t.byte_offset_ = 0;
  NEAT_RETURN_IF_ERROR(t.validate_composite());
  t.refresh_contiguity();
  return t;
}

// ---- validation (the single place for composites; dense goes to layout_check) ----

Status NeatTensor::validate_dense(std::string_view what) const {
  return validate_layout(dtype_, shape_, strides_, byte_offset_, storages_[0]->size_bytes(), what);
}

Status NeatTensor::validate_composite() const {
  const PixelFormat f = image_.format;
  struct Range {
    std::int64_t lo, hi;
    int slot;
  };
  std::array<Range, kMaxPlanes> ranges{};
  for (int i = 0; i < plane_count_; ++i) {
    const PlaneLayout& p = planes_[static_cast<std::size_t>(i)];
    auto name = [&] { return plane_name(f, i, p.role); };
    std::int64_t min_row = 0;
    if (!checked_mul(p.cols, p.samples, &min_row)) {
      return out_of_range(name() + ": width x bytes per pixel overflows int64");
    }
    if (p.rows > 1 && p.row_stride < min_row) {
      return invalid_argument(name() + ": row stride " + std::to_string(p.row_stride) +
                              " is below width x bytes per pixel = " + std::to_string(p.cols) +
                              " x " + std::to_string(p.samples) + " = " + std::to_string(min_row));
    }
    if (p.row_stride < 0) {
      return invalid_argument(name() + ": row stride " + std::to_string(p.row_stride) +
                              " is negative; planar frames are stored top-down");
    }
    const Storage& s = *storages_[static_cast<std::size_t>(p.storage)];
    // Fast path: the plane's bytes [offset, offset + (rows-1) * row_stride + row) fit.
    std::int64_t end = 0;
    const bool fits = p.rows == 0 || p.cols == 0
                          ? p.byte_offset >= 0 && p.byte_offset <= s.size_bytes()
                          : !__builtin_mul_overflow(p.rows - 1, p.row_stride, &end) &&
                                !__builtin_add_overflow(end, min_row, &end) &&
                                !__builtin_add_overflow(end, p.byte_offset, &end) &&
                                p.byte_offset >= 0 && end <= s.size_bytes();
    if (!fits) {
      const Dims shape = p.samples == 1 ? Dims{p.rows, p.cols} : Dims{p.rows, p.cols, p.samples};
      const Dims strides =
          p.samples == 1 ? Dims{p.row_stride, 1} : Dims{p.row_stride, p.samples, 1};
      if (Status st = validate_layout(DType::U8, shape, strides, p.byte_offset, s.size_bytes(), {});
          !st.ok()) {
        return st.error().with_context(name());
      }
    }
    // Validated above, so this cannot overflow: the plane's bytes are [lo, hi).
    const bool empty = p.rows == 0 || p.cols == 0;
    const std::int64_t hi =
        empty ? p.byte_offset : p.byte_offset + (p.rows - 1) * p.row_stride + min_row;
    ranges[static_cast<std::size_t>(i)] = Range{p.byte_offset, hi, p.storage};
    for (int k = 0; k < i; ++k) {
      const Range& a = ranges[static_cast<std::size_t>(k)];
      const Range& b = ranges[static_cast<std::size_t>(i)];
      if (a.slot == b.slot && a.lo < b.hi && b.lo < a.hi) {
        return invalid_argument(name() + " (bytes " + std::to_string(b.lo) + ".." +
                                std::to_string(b.hi) + ") overlaps " +
                                plane_name(f, k, planes_[static_cast<std::size_t>(k)].role) +
                                " (bytes " + std::to_string(a.lo) + ".." + std::to_string(a.hi) +
                                ") in the same storage");
      }
    }
  }
  return {};
}

void NeatTensor::refresh_contiguity() noexcept {
  bool contiguous = true;
  if (plane_count_ > 0) {
    std::int64_t next = planes_[0].byte_offset;
    for (int i = 0; i < plane_count_; ++i) {
      const PlaneLayout& p = planes_[static_cast<std::size_t>(i)];
      const std::int64_t row = p.cols * p.samples;
      if (p.storage != 0 || p.byte_offset != next || (p.rows > 1 && p.row_stride != row)) {
        contiguous = false;
        break;
      }
      next += row * p.rows;
    }
  } else {
    contiguous = neat::is_contiguous(dtype_, shape_, strides_);
  }
  flags_ = static_cast<std::uint8_t>(contiguous ? (flags_ | kContiguous) : (flags_ & ~kContiguous));
}

// ---- description ---------------------------------------------------------------

std::int64_t NeatTensor::numel() const noexcept {
  std::int64_t n = 1;
  for (std::int64_t e : shape_)
    n *= e;  // bounded: validated against the storage size
  return n;
}

std::int64_t NeatTensor::nbytes() const noexcept {
  if (plane_count_ == 0) return numel() * item_size(dtype_);
  std::int64_t total = 0;
  for (int i = 0; i < plane_count_; ++i) {
    const PlaneLayout& p = planes_[static_cast<std::size_t>(i)];
    total += p.rows * p.cols * p.samples;
  }
  return total;
}

bool NeatTensor::held_alone() const noexcept {
  for (int i = 0; i < storage_count_; ++i) {
    if (storages_[static_cast<std::size_t>(i)].use_count() != 1) return false;
  }
  // use_count() is a relaxed load. Pair it with the release decrement of the
  // last other holder, so that its reads of the bytes happen before our writes.
  std::atomic_thread_fence(std::memory_order_acquire);
  return storage_count_ > 0;
}

bool NeatTensor::is_writable() const noexcept {
  if ((flags_ & kWritable) == 0 || (flags_ & kBroadcast) != 0) return false;
  for (int i = 0; i < storage_count_; ++i) {
    if (storages_[static_cast<std::size_t>(i)]->read_only()) return false;
  }
  return held_alone();
}

bool NeatTensor::can_donate() const noexcept {
  if (!defined() || (flags_ & kBroadcast) != 0) return false;
  for (int i = 0; i < storage_count_; ++i) {
    if (!storages_[static_cast<std::size_t>(i)]->donatable()) return false;
  }
  return held_alone();
}

bool NeatTensor::writes_reach_others() const noexcept {
  if ((flags_ & kBroadcast) != 0) return true;
  for (int i = 0; i < storage_count_; ++i) {
    if (storages_[static_cast<std::size_t>(i)]->read_only()) return true;
  }
  return !held_alone();
}

Device NeatTensor::device() const noexcept {
  return defined() ? storages_[0]->device() : kCpu;
}

StorageKind NeatTensor::storage_kind() const noexcept {
  return defined() ? storages_[0]->kind() : StorageKind::Other;
}

BufferIdentity NeatTensor::identity() const {
  return defined() ? storages_[0]->identity() : BufferIdentity{};
}

TensorDescription NeatTensor::description() const noexcept {
  TensorDescription d;
  d.dtype = dtype_;
  d.format = image_.format;
  d.layout = image_.layout;
  d.device = device();
  d.storage = storage_kind();
  d.rank = static_cast<std::int8_t>(shape_.size());
  d.contiguous = is_contiguous();
  for (int i = 0; i < std::min(shape_.size(), 4); ++i)
    d.shape[static_cast<std::size_t>(i)] = shape_[i];
  return d;
}

std::string NeatTensor::to_string() const {
  if (!defined()) return "NeatTensor(undefined)";
  std::string out = "NeatTensor(" + std::string(neat::to_string(dtype_)) + " " + shape_.to_string();
  if (is_image()) {
    out += ' ';
    out += neat::to_string(image_.format);
    out += ' ';
    out += neat::to_string(image_.layout);
  }
  if (plane_count_ > 0) {
    for (int i = 0; i < plane_count_; ++i) {
      const PlaneLayout& p = planes_[static_cast<std::size_t>(i)];
      out += " ";
      out += neat::to_string(p.role);
      out += "{" + std::to_string(p.rows) + "x" + std::to_string(p.cols) + "x" +
             std::to_string(p.samples) + " stride " + std::to_string(p.row_stride) + " @" +
             std::to_string(p.byte_offset) + " s" + std::to_string(p.storage) + "}";
    }
  } else {
    out += " strides " + strides_.to_string() + " offset " + std::to_string(byte_offset_);
  }
  out += " " + neat::to_string(device()) + " " + std::string(neat::to_string(storage_kind())) +
         "#" + std::to_string(storages_[0]->id());
  if (is_broadcast()) out += " broadcast";
  if (!is_contiguous()) out += " strided";
  out += ")";
  return out;
}

// ---- mapping -----------------------------------------------------------------

Result<Mapping> NeatTensor::map(MapMode mode) const {
  return map_impl(mode, false);
}

Result<Mapping> NeatTensor::map(MapMode mode) {
  return map_impl(mode, true);
}

Result<Mapping> NeatTensor::map_impl(MapMode mode, bool allow_write) const {
  if (!defined())
    return failed_precondition("map: the tensor is undefined (default-constructed or moved-from)");
  if (has_write(mode)) {
    if (!allow_write) {
      return failed_precondition("map(" + std::string(neat::to_string(mode)) +
                                 "): a write mapping needs a non-const tensor; take it on the "
                                 "tensor returned by make_writable()");
    }
    if (!is_writable()) {
      std::string why;
      if ((flags_ & kBroadcast) != 0) {
        why = "it is a broadcast (stride 0) view";
      } else if ((flags_ & kWritable) == 0) {
        why = "it was not obtained from make_writable()";
      } else if (storages_[0]->read_only()) {
        why = "its storage (" + storages_[0]->describe() + ") is read-only";
      } else {
        why = "its storage is shared with another tensor, view or mapping";
      }
      return Error(
          ErrorCode::FailedPrecondition, {},
          "map(" + std::string(neat::to_string(mode)) + ") of " + to_string() + " refused: " + why,
          {Fix{"call std::move(t).make_writable() first (it copies only when it must)",
               "call t = t.make_writable() first (it copies only when it must)"}});
    }
  }
  std::array<std::byte*, kMaxPlanes> bases{};
  for (int i = 0; i < storage_count_; ++i) {
    Result<std::byte*> base = storages_[static_cast<std::size_t>(i)]->map(mode);
    if (!base.ok()) {
      for (int k = 0; k < i; ++k)
        storages_[static_cast<std::size_t>(k)]->unmap(mode);
      return std::move(base).error().with_context("map");
    }
    bases[static_cast<std::size_t>(i)] = *base;
  }
  return Mapping(*this, mode, bases);
}

// ---- make_writable -----------------------------------------------------------

Result<NeatTensor> NeatTensor::make_writable(WritableOptions options,
                                             std::source_location where) && {
  if (!defined()) return failed_precondition("make_writable: the tensor is undefined");
  const bool reuse = options.donation != Donation::AlwaysCopy && can_donate();
  if (reuse) {
    NeatTensor out = std::move(*this);
    out.flags_ |= kWritable;
    return out;
  }
  CopyRequest request;
  request.kind = ConversionKind::Pack;
  request.operation = "make_writable";
  request.where = where;
  request.policy = options.policy;
  request.bytes = nbytes();
  request.source = description();
  if (options.donation == Donation::AlwaysCopy) {
    request.reason = ConversionReason::UserRequest;
    request.explicit_call = true;
  } else if (options.donation == Donation::ReuseIfUnique) {
    request.reason = ConversionReason::NotWritable;
    request.explicit_call = true;
  } else {
    request.reason = ConversionReason::DonationRefused;
    request.explicit_call = false;
    request.fix =
        "drop the other references (views, copies, mappings) before make_writable, or ask for "
        "Donation::ReuseIfUnique";
    request.fix_python =
        "drop the other references (views, arrays, mappings) before make_writable, or ask for "
        "make_writable(donation=\"reuse_if_unique\")";
  }
  NEAT_ASSIGN_OR_RETURN(NeatTensor out, copy_packed(request, options.allocator));
  *this = NeatTensor();  // the handle is consumed either way
  out.flags_ |= kWritable;
  return out;
}

// ---- explicit copies -----------------------------------------------------------

Result<NeatTensor> NeatTensor::clone(ConversionOptions options, std::source_location where) const {
  if (!defined()) return failed_precondition("clone: the tensor is undefined");
  CopyRequest request;
  request.kind = ConversionKind::Pack;
  request.reason = options.reason.value_or(ConversionReason::UserRequest);
  request.explicit_call = !options.implicit;
  request.operation = options.requested_by.empty() ? "clone" : options.requested_by;
  request.fix = options.fix;
  request.fix_python = options.fix_python;
  request.where = where;
  request.policy = options.policy;
  request.bytes = nbytes();
  request.source = description();
  return copy_packed(request, options.allocator);
}

Result<NeatTensor> NeatTensor::contiguous(ConversionOptions options,
                                          std::source_location where) const {
  if (!defined()) return failed_precondition("contiguous: the tensor is undefined");
  if (is_contiguous() && !is_broadcast()) return *this;
  CopyRequest request;
  request.kind = ConversionKind::Pack;
  request.reason = options.reason.value_or(ConversionReason::StrideMismatch);
  request.explicit_call = !options.implicit;
  request.operation = options.requested_by.empty() ? "contiguous" : options.requested_by;
  request.fix = options.fix;
  request.where = where;
  request.policy = options.policy;
  request.bytes = nbytes();
  request.source = description();
  return copy_packed(request, options.allocator);
}

Result<NeatTensor> NeatTensor::cpu(ConversionOptions options, std::source_location where) const {
  return download(!options.implicit, options, where);
}

Result<NeatTensor> NeatTensor::to_cpu_if_needed(ConversionOptions options,
                                                std::source_location where) const {
  return download(false, options, where);
}

Result<NeatTensor> NeatTensor::download(bool explicit_call, const ConversionOptions& options,
                                        std::source_location where) const {
  if (!defined()) return failed_precondition("cpu: the tensor is undefined");
  std::int64_t bytes = 0;
  for (int i = 0; i < storage_count_; ++i) {
    const Storage& s = *storages_[static_cast<std::size_t>(i)];
    if (s.device().type != DeviceType::Cpu) bytes += s.size_bytes();
  }
  if (bytes == 0 && device().type == DeviceType::Cpu) return *this;
  CopyRequest request;
  request.kind = ConversionKind::Transfer;
  request.reason = options.reason.value_or(ConversionReason::Device);
  request.explicit_call = explicit_call;
  request.operation = !options.requested_by.empty() ? options.requested_by
                      : explicit_call               ? std::string_view("cpu")
                                                    : std::string_view("to_cpu_if_needed");
  request.fix = !options.fix.empty() ? options.fix
                                     : std::string_view(
                                           "call cpu() explicitly where the frame "
                                           "should leave the device");
  request.where = where;
  request.policy = options.policy;
  request.bytes = bytes;
  request.source = description();
  request.destination = request.source;
  request.destination.device = kCpu;
  request.destination.storage = StorageKind::Heap;
  StorageAllocator& allocator =
      options.allocator != nullptr ? *options.allocator : default_allocator();
  NeatTensor out = *this;
  out.flags_ = static_cast<std::uint8_t>(out.flags_ & ~kWritable);
  Status status = run_through_gate(request, [&]() -> Status {
    for (int i = 0; i < storage_count_; ++i) {
      const auto& src = storages_[static_cast<std::size_t>(i)];
      if (src->device().type == DeviceType::Cpu) continue;
      NEAT_ASSIGN_OR_RETURN(std::shared_ptr<Storage> host,
                            allocator.allocate(AllocRequest{src->size_bytes(), false}));
      NEAT_ASSIGN_OR_RETURN(std::byte * dst, host->map(MapMode::Write));
      Status st =
          src->download(std::span<std::byte>(dst, static_cast<std::size_t>(src->size_bytes())));
      host->unmap(MapMode::Write);
      NEAT_RETURN_IF_ERROR(st);
      out.storages_[static_cast<std::size_t>(i)] = std::move(host);
    }
    return {};
  });
  if (!status.ok()) return std::move(status).error();
  return out;
}

}  // namespace neat

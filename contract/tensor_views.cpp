// View operations: new shape / strides / offset over the same storages.
// None allocates a buffer; every result is re-validated by the one layout check.
#include <string>

#include "neat/contract/layout_check.hpp"
#include "neat/contract/neat_tensor.hpp"

namespace neat {

namespace {

std::string op_name(std::string_view op, const NeatTensor& t) {
  return std::string(op) + " of " + t.to_string();
}

Status check_dim(int dim, int rank, std::string_view op, const NeatTensor& t) {
  if (dim < 0 || dim >= rank) {
    return out_of_range(op_name(op, t) + ": dim " + std::to_string(dim) + " is outside [0, " +
                        std::to_string(rank) + ")");
  }
  return {};
}

}  // namespace

Status NeatTensor::require_dense(std::string_view op) const {
  if (!defined()) return failed_precondition(std::string(op) + ": the tensor is undefined");
  if (plane_count_ > 0) {
    return failed_precondition(op_name(op, *this) + ": a planar " +
                               std::string(neat::to_string(image_.format)) +
                               " frame has no single stride set; take plane(PlaneRole::Y) (or "
                               "another role) first, or crop() the frame");
  }
  return {};
}

Status NeatTensor::finish_view(std::string_view what) {
  NEAT_RETURN_IF_ERROR(plane_count_ > 0 ? validate_composite() : validate_dense(what));
  refresh_contiguity();
  return {};
}

template <class Edit>
Result<NeatTensor> NeatTensor::make_view(std::string_view what, Edit&& edit) const {
  Result<NeatTensor> out(*this);
  NeatTensor& t = *out;
  Status status = edit(t);
  if (status.ok()) status = t.finish_view(what);
  if (!status.ok()) out = std::move(status).error();
  return out;
}

Result<NeatTensor> NeatTensor::slice(int dim, std::int64_t start, std::int64_t stop,
                                     std::int64_t step) const {
  NEAT_RETURN_IF_ERROR(require_dense("slice"));
  return make_view("slice", [&](NeatTensor& t) -> Status {
    NEAT_RETURN_IF_ERROR(check_dim(dim, rank(), "slice", *this));
    const std::int64_t extent = shape_[dim];
    if (step < 1) {
      return invalid_argument(op_name("slice", *this) + ": step " + std::to_string(step) +
                              " must be >= 1");
    }
    if (start < 0 || stop < start || stop > extent) {
      return out_of_range(op_name("slice", *this) + ": [" + std::to_string(start) + ", " +
                          std::to_string(stop) + ") is not inside dim " + std::to_string(dim) +
                          " of extent " + std::to_string(extent));
    }
    std::int64_t offset = 0, stride = 0;
    if (!checked_mul(start, strides_[dim], &offset) ||
        !checked_add(byte_offset_, offset, &offset) || !checked_mul(strides_[dim], step, &stride)) {
      return out_of_range(op_name("slice", *this) + ": the new offset or stride overflows int64");
    }
    t.shape_[dim] = step == 1 ? stop - start : (stop - start + step - 1) / step;
    t.strides_[dim] = stride;
    t.byte_offset_ = offset;
    // Slicing rows or columns (at any step) of an interleaved image keeps it an image.
    if (is_image()) {
      const bool hwc_like = image_.layout == Layout::HWC || image_.layout == Layout::HW;
      const int h_dim = hwc_like ? 0 : 1;
      const int w_dim = h_dim + 1;
      if (dim == h_dim || dim == w_dim) {
        (dim == h_dim ? t.image_.height : t.image_.width) = t.shape_[dim];
      } else {
        t.image_ = ImageSpec{};
      }
    }
    return {};
  });
}

Result<NeatTensor> NeatTensor::narrow(int dim, std::int64_t start, std::int64_t length) const {
  if (length < 0) {
    return invalid_argument(op_name("narrow", *this) + ": length " + std::to_string(length) +
                            " is negative");
  }
  std::int64_t stop = 0;
  if (!checked_add(start, length, &stop)) {
    return out_of_range(op_name("narrow", *this) + ": start + length overflows int64");
  }
  return slice(dim, start, stop, 1);
}

Result<NeatTensor> NeatTensor::crop(std::int64_t x, std::int64_t y, std::int64_t width,
                                    std::int64_t height) const {
  if (!defined()) return failed_precondition("crop: the tensor is undefined");
  if (!is_image()) {
    return failed_precondition(op_name("crop", *this) +
                               ": crop() needs an image; use slice()/narrow() on dense tensors");
  }
  auto where = [&] {
    return "crop(x=" + std::to_string(x) + ", y=" + std::to_string(y) +
           ", w=" + std::to_string(width) + ", h=" + std::to_string(height) + ") of " + to_string();
  };
  if (x < 0 || y < 0 || width < 0 || height < 0 || x > image_.width - width ||
      y > image_.height - height) {
    return out_of_range(where() + ": the rectangle is not inside the " +
                        std::to_string(image_.width) + "x" + std::to_string(image_.height) +
                        " image");
  }
  if (plane_count_ == 0) {
    // One copy, one validation: offset by the origin, shrink H and W.
    const bool chw = image_.layout == Layout::CHW;
    const int h_dim = chw ? 1 : 0;
    const int w_dim = h_dim + 1;
    return make_view("crop", [&](NeatTensor& t) -> Status {
      t.meta_.geometry =
          source_geometry().then(1.0, 1.0, static_cast<double>(x), static_cast<double>(y));
      t.byte_offset_ += y * strides_[h_dim] + x * strides_[w_dim];  // inside the validated image
      t.shape_[h_dim] = height;
      t.shape_[w_dim] = width;
      t.image_.width = width;
      t.image_.height = height;
      return {};
    });
  }
  if (x % 2 != 0 || y % 2 != 0) {
    return invalid_argument(where() + ": crops of " + std::string(neat::to_string(image_.format)) +
                            " frames must start on even coordinates so that chroma stays "
                            "aligned; use x=" +
                            std::to_string(x - x % 2) + ", y=" + std::to_string(y - y % 2));
  }
  return make_view("crop", [&](NeatTensor& t) -> Status {
    t.meta_.geometry =
        source_geometry().then(1.0, 1.0, static_cast<double>(x), static_cast<double>(y));
    t.image_.width = width;
    t.image_.height = height;
    for (int i = 0; i < plane_count_; ++i) {
      PlaneLayout& p = t.planes_[static_cast<std::size_t>(i)];
      const bool luma = p.role == PlaneRole::Y;
      const PlaneGeometry g = plane_geometry(image_.format, p.role, width, height);
      const std::int64_t px = luma ? x : x / 2;
      const std::int64_t py = luma ? y : y / 2;
      p.byte_offset += py * p.row_stride + px * p.samples;  // in range: inside the validated plane
      p.rows = g.rows;
      p.cols = g.cols;
    }
    t.shape_ = {height, width};
    return {};
  });
}

Result<NeatTensor> NeatTensor::permute(DimsRef order) const {
  NEAT_RETURN_IF_ERROR(require_dense("permute"));
  if (static_cast<int>(order.size()) != rank()) {
    return invalid_argument(op_name("permute", *this) + ": order " + dims_to_string(order) +
                            " has " + std::to_string(order.size()) + " entries for rank " +
                            std::to_string(rank()));
  }
  return make_view("permute", [&](NeatTensor& t) -> Status {
    std::array<bool, kMaxRank> seen{};
    for (std::size_t i = 0; i < order.size(); ++i) {
      const std::int64_t d = order[i];
      if (d < 0 || d >= rank() || seen[static_cast<std::size_t>(d)]) {
        return invalid_argument(op_name("permute", *this) + ": order " + dims_to_string(order) +
                                " is not a permutation of 0.." + std::to_string(rank() - 1));
      }
      seen[static_cast<std::size_t>(d)] = true;
      t.shape_[static_cast<int>(i)] = shape_[static_cast<int>(d)];
      t.strides_[static_cast<int>(i)] = strides_[static_cast<int>(d)];
    }
    t.image_ = ImageSpec{};
    return {};
  });
}

Result<NeatTensor> NeatTensor::transpose(int dim0, int dim1) const {
  NEAT_RETURN_IF_ERROR(require_dense("transpose"));
  NEAT_RETURN_IF_ERROR(check_dim(dim0, rank(), "transpose", *this));
  NEAT_RETURN_IF_ERROR(check_dim(dim1, rank(), "transpose", *this));
  return make_view("transpose", [&](NeatTensor& t) -> Status {
    t.shape_[dim0] = shape_[dim1];
    t.shape_[dim1] = shape_[dim0];
    t.strides_[dim0] = strides_[dim1];
    t.strides_[dim1] = strides_[dim0];
    t.image_ = ImageSpec{};
    return {};
  });
}

Result<NeatTensor> NeatTensor::reshape(DimsRef new_shape_in) const {
  NEAT_RETURN_IF_ERROR(require_dense("reshape"));
  return make_view("reshape", [&](NeatTensor& t) -> Status {
    if (new_shape_in.size() > static_cast<std::size_t>(kMaxRank)) {
      return invalid_argument(op_name("reshape", *this) + ": rank " +
                              std::to_string(new_shape_in.size()) + " is above the maximum rank " +
                              std::to_string(kMaxRank));
    }
    // Build the result directly in the copy (the original's shape_/strides_ stay intact).
    Dims& want = t.shape_;
    Dims& new_strides = t.strides_;
    want.assign(new_shape_in);
    new_strides.resize(want.size());
    const std::int64_t total = numel();
    int infer = -1;
    std::int64_t known = 1;
    for (int i = 0; i < want.size(); ++i) {
      if (want[i] == -1 && infer < 0) {
        infer = i;
        continue;
      }
      if (want[i] < 0) {
        return invalid_argument(op_name("reshape", *this) + ": shape " + want.to_string() +
                                " has a negative extent (only one -1 is allowed)");
      }
      if (!checked_mul(known, want[i], &known)) {
        return out_of_range(op_name("reshape", *this) + ": shape " + want.to_string() +
                            " has more than 2^63 elements");
      }
    }
    if (infer >= 0) {
      if (known == 0 || total % known != 0) {
        return invalid_argument(op_name("reshape", *this) + ": cannot infer the -1 extent of " +
                                want.to_string() + " from " + std::to_string(total) + " elements");
      }
      want[infer] = total / known;
      known = total;
    }
    if (known != total) {
      return invalid_argument(op_name("reshape", *this) + ": shape " + want.to_string() +
                              " holds " + std::to_string(known) + " elements, the tensor has " +
                              std::to_string(total));
    }
    if (total == 0) {
      NEAT_ASSIGN_OR_RETURN(new_strides, contiguous_strides(dtype_, want));
    } else if (is_contiguous()) {
      // Packed: no overflow, every partial product is at most `total` elements.
      std::int64_t stride = item_size(dtype_);
      for (int k = want.size() - 1; k >= 0; --k) {
        new_strides[k] = stride;
        stride *= want[k];
      }
    } else {
      // Group old and new dims into runs of equal element counts; each old run
      // must be one contiguous chunk, then the new run's strides follow from it.
      Dims old_shape, old_strides;
      for (int i = 0; i < rank(); ++i) {
        if (shape_[i] != 1) {
          old_shape.push_back(shape_[i]);
          old_strides.push_back(strides_[i]);
        }
      }
      const int on = old_shape.size(), nn = want.size();
      int oi = 0, oj = 1, ni = 0, nj = 1;
      while (ni < nn && oi < on) {
        std::int64_t np = want[ni], op = old_shape[oi];
        while (np != op) {  // terminates: both sides multiply up to the same total
          if (np < op) {
            np *= want[nj++];
          } else {
            op *= old_shape[oj++];
          }
        }
        for (int k = oi; k < oj - 1; ++k) {
          if (old_strides[k] != old_shape[k + 1] * old_strides[k + 1]) {
            return failed_precondition(
                op_name("reshape", *this) + ": shape " + want.to_string() +
                " would need a copy (the strides do not allow a view); call contiguous() first, "
                "which packs the data (an explicit, recorded copy)");
          }
        }
        new_strides[nj - 1] = old_strides[oj - 1];
        for (int k = nj - 1; k > ni; --k)
          new_strides[k - 1] = new_strides[k] * want[k];
        ni = nj++;
        oi = oj++;
      }
      // Trailing extent-1 dims: any stride addresses the same byte.
      const std::int64_t last = ni >= 1 ? new_strides[ni - 1] : item_size(dtype_);
      for (int k = ni; k < nn; ++k)
        new_strides[k] = last;
    }
    t.image_ = ImageSpec{};
    return {};
  });
}

Result<NeatTensor> NeatTensor::squeeze(int dim) const {
  NEAT_RETURN_IF_ERROR(require_dense("squeeze"));
  return make_view("squeeze", [&](NeatTensor& t) -> Status {
    NEAT_RETURN_IF_ERROR(check_dim(dim, rank(), "squeeze", *this));
    if (shape_[dim] != 1) {
      return invalid_argument(op_name("squeeze", *this) + ": dim " + std::to_string(dim) +
                              " has extent " + std::to_string(shape_[dim]) + ", not 1");
    }
    t.shape_.erase(dim);
    t.strides_.erase(dim);
    t.image_ = ImageSpec{};
    return {};
  });
}

Result<NeatTensor> NeatTensor::unsqueeze(int dim) const {
  NEAT_RETURN_IF_ERROR(require_dense("unsqueeze"));
  return make_view("unsqueeze", [&](NeatTensor& t) -> Status {
    NEAT_RETURN_IF_ERROR(check_dim(dim, rank() + 1, "unsqueeze", *this));
    if (rank() >= kMaxRank) {
      return invalid_argument(op_name("unsqueeze", *this) + ": rank " + std::to_string(rank() + 1) +
                              " would be above the maximum rank " + std::to_string(kMaxRank));
    }
    const std::int64_t stride = dim < rank() ? strides_[dim] * shape_[dim] : item_size(dtype_);
    t.shape_.insert(dim, 1);
    t.strides_.insert(dim, stride);
    t.image_ = ImageSpec{};
    return {};
  });
}

Result<NeatTensor> NeatTensor::expand(DimsRef target_in) const {
  NEAT_RETURN_IF_ERROR(require_dense("expand"));
  return make_view("expand", [&](NeatTensor& t) -> Status {
    NEAT_RETURN_IF_ERROR(check_shape(target_in, "expand"));
    const Dims target(target_in);
    if (target.size() < rank()) {
      return invalid_argument(op_name("expand", *this) + ": target " + target.to_string() +
                              " has fewer dims than the tensor");
    }
    const int lead = target.size() - rank();
    Dims strides = target;
    bool broadcast = false;
    for (int i = 0; i < target.size(); ++i) {
      if (i < lead) {
        strides[i] = 0;
        broadcast = broadcast || target[i] != 1;
        continue;
      }
      const std::int64_t have = shape_[i - lead];
      if (have == target[i]) {
        strides[i] = strides_[i - lead];
      } else if (have == 1) {
        strides[i] = 0;
        broadcast = true;
      } else {
        return invalid_argument(op_name("expand", *this) + ": dim " + std::to_string(i - lead) +
                                " of extent " + std::to_string(have) + " cannot broadcast to " +
                                std::to_string(target[i]) + " (target " + target.to_string() + ")");
      }
    }
    t.shape_ = target;
    t.strides_ = strides;
    t.image_ = ImageSpec{};
    if (broadcast) t.flags_ |= kBroadcast;
    return {};
  });
}

Result<NeatTensor> NeatTensor::plane(PlaneRole role) const {
  if (!defined()) return failed_precondition("plane: the tensor is undefined");
  if (plane_count_ == 0) {
    return failed_precondition(op_name("plane", *this) +
                               ": only planar frames (NV12, NV21, I420, YV12) have planes");
  }
  for (int i = 0; i < plane_count_; ++i) {
    const PlaneLayout& p = planes_[static_cast<std::size_t>(i)];
    if (p.role != role) continue;
    return make_view("plane", [&](NeatTensor& t) -> Status {
      t.dtype_ = DType::U8;
      t.flags_ = static_cast<std::uint8_t>(flags_ & kWritable);
      if (p.storage != 0) t.storages_[0] = storages_[static_cast<std::size_t>(p.storage)];
      for (int k = 1; k < storage_count_; ++k)
        t.storages_[static_cast<std::size_t>(k)].reset();
      t.storage_count_ = 1;
      t.plane_count_ = 0;
      t.byte_offset_ = p.byte_offset;
      if (p.samples == 1) {
        t.shape_ = {p.rows, p.cols};
        t.strides_ = {p.row_stride, 1};
      } else {
        t.shape_ = {p.rows, p.cols, p.samples};
        t.strides_ = {p.row_stride, p.samples, 1};
      }
      t.image_ = role == PlaneRole::Y ? ImageSpec{PixelFormat::GRAY8, p.cols, p.rows, Layout::HW}
                                      : ImageSpec{};
      return {};
    });
  }
  std::string roles;
  for (int i = 0; i < plane_count_; ++i) {
    roles += (i ? ", " : "");
    roles += neat::to_string(planes_[static_cast<std::size_t>(i)].role);
  }
  return invalid_argument(op_name("plane", *this) + ": no plane with role " +
                          std::string(neat::to_string(role)) + " (this frame has " + roles + ")");
}

Result<NeatTensor> NeatTensor::reinterpret(DType dtype) const {
  NEAT_RETURN_IF_ERROR(require_dense("reinterpret"));
  return make_view("reinterpret", [&](NeatTensor& t) -> Status {
    if (item_size(dtype) != item_size(dtype_)) {
      return invalid_argument(
          op_name("reinterpret", *this) + ": " + std::string(neat::to_string(dtype_)) + " (" +
          std::to_string(item_size(dtype_)) + " bytes) and " + std::string(neat::to_string(dtype)) +
          " (" + std::to_string(item_size(dtype)) + " bytes) differ in item size; convert instead");
    }
    if (dtype == DType::Bool && dtype_ != DType::Bool) {
      return invalid_argument(op_name("reinterpret", *this) +
                              ": bytes of another dtype are not valid bool values (only 0 and 1 "
                              "are); convert instead");
    }
    t.dtype_ = dtype;
    if (dtype != dtype_) t.image_ = ImageSpec{};
    return {};
  });
}

Result<NeatTensor> NeatTensor::as_image(ImageSpec spec) const {
  NEAT_RETURN_IF_ERROR(require_dense("as_image"));
  NeatTensor t = *this;
  auto where = [&] { return "as_image(" + neat::to_string(spec) + ") of " + to_string(); };
  if (!is_interleaved(spec.format)) {
    return invalid_argument(
        where() +
        ": only interleaved formats (GRAY8, RGB, BGR, RGBA, BGRA) can "
        "be attached to a dense tensor; use compose_planes() for planar frames");
  }
  if (dtype_ != DType::U8) {
    return invalid_argument(where() + ": pixel formats are 8 bit, the tensor is " +
                            std::string(neat::to_string(dtype_)));
  }
  const Layout layout = spec.layout == Layout::None ? default_layout(spec.format) : spec.layout;
  const std::int64_t c = channels(spec.format);
  Dims expected;
  switch (layout) {
    case Layout::HWC:
      expected = {spec.height, spec.width, c};
      break;
    case Layout::CHW:
      expected = {c, spec.height, spec.width};
      break;
    case Layout::HW:
      if (c != 1) return invalid_argument(where() + ": layout HW is for GRAY8 only");
      expected = {spec.height, spec.width};
      break;
    default:
      return invalid_argument(where() + ": layout " + std::string(neat::to_string(layout)) +
                              " is not valid for an interleaved image");
  }
  if (!(expected == shape_)) {
    return invalid_argument(where() + ": the shape must be " + expected.to_string() + " for " +
                            neat::to_string(spec));
  }
  t.image_ = ImageSpec{spec.format, spec.width, spec.height, layout, spec.colorimetry};
  return t;
}

Result<NeatTensor> NeatTensor::with_colorimetry(Colorimetry colorimetry) const {
  if (!defined()) return failed_precondition("with_colorimetry: the tensor is undefined");
  if (!is_image()) {
    return failed_precondition("with_colorimetry(" + neat::to_string(colorimetry) + ") of " +
                               to_string() +
                               ": only images carry a colour standard; attach a spec first");
  }
  NeatTensor t = *this;
  t.image_.colorimetry = colorimetry;
  return t;
}

Result<NeatTensor> NeatTensor::as_dense() const {
  NEAT_RETURN_IF_ERROR(require_dense("as_dense"));
  NeatTensor t = *this;
  t.image_ = ImageSpec{};
  return t;
}

}  // namespace neat

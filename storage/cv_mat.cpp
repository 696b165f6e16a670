#include "neat/storage/cv_mat.hpp"

#include <opencv2/core.hpp>
#include <string>
#include <utility>

#include "neat/storage/external.hpp"

namespace neat {

namespace {

// A Mat header held by a storage keeps the Mat's buffer alive.
class CvMatStorage final : public Storage {
 public:
  CvMatStorage(cv::Mat mat, std::byte* base, std::int64_t size, bool read_only) noexcept
      : Storage(StorageKind::CvMat, kCpu, size, read_only, base), mat_(std::move(mat)) {}
  // Donate only when our header is the last one on the buffer.
  bool donatable() const noexcept override {
    return !read_only() && mat_.u != nullptr &&
           __atomic_load_n(&mat_.u->refcount, __ATOMIC_ACQUIRE) == 1;
  }

 private:
  cv::Mat mat_;
};

// Releases the NeatTensor mapping a Mat view holds when its last header goes.
class KeepAliveMatAllocator final : public cv::MatAllocator {
 public:
  cv::UMatData* allocate(int, const int*, int, void*, size_t*, cv::AccessFlag,
                         cv::UMatUsageFlags) const override {
    return nullptr;  // never used: Mat views have no allocator of their own
  }
  bool allocate(cv::UMatData*, cv::AccessFlag, cv::UMatUsageFlags) const override { return false; }
  void deallocate(cv::UMatData* u) const override { delete u; }  // drops allocatorContext
};

const KeepAliveMatAllocator& keep_alive_allocator() {
  static const KeepAliveMatAllocator a;
  return a;
}

std::string mat_desc(const cv::Mat& m) {
  std::string s = "cv::Mat(";
  for (int i = 0; i < m.dims; ++i)
    s += (i ? "x" : "") + std::to_string(m.size[i]);
  s += " type " + cv::typeToString(m.type()) + ")";
  return s;
}

}  // namespace

namespace {
// The dtypes OpenCV has, both ways.
constexpr std::pair<DType, int> kCvDepths[] = {
    {DType::U8, CV_8U},   {DType::I8, CV_8S},   {DType::U16, CV_16U}, {DType::I16, CV_16S},
    {DType::I32, CV_32S}, {DType::F16, CV_16F}, {DType::F32, CV_32F}, {DType::F64, CV_64F}};
}  // namespace

Result<DType> dtype_from_cv_depth(int depth) {
  for (auto [dtype, d] : kCvDepths) {
    if (d == depth) return dtype;
  }
  return invalid_argument("OpenCV depth " + std::to_string(depth) + " has no NeatTensor dtype");
}

Result<int> cv_depth_from_dtype(DType dtype) {
  for (auto [t, depth] : kCvDepths) {
    if (t == dtype) return depth;
  }
  return invalid_argument("dtype " + std::string(to_string(dtype)) +
                          " has no OpenCV equivalent (OpenCV has u8, i8, u16, i16, i32, f16, "
                          "f32, f64)");
}

Result<NeatTensor> wrap_mat(const cv::Mat& mat, MatWrapOptions options) {
  if (mat.empty()) return invalid_argument("wrap_mat: the cv::Mat is empty");
  if (mat.u == nullptr) {
    return invalid_argument("wrap_mat: " + mat_desc(mat) +
                            " does not own its data (it was built over an external pointer); "
                            "wrap that pointer with wrap_external() and a keep-alive instead");
  }
  NEAT_ASSIGN_OR_RETURN(DType dtype, dtype_from_cv_depth(mat.depth()));
  const int cn = mat.channels();
  Dims shape, strides;
  const std::int64_t esz1 = static_cast<std::int64_t>(mat.elemSize1());
  if (mat.dims + (cn > 1 ? 1 : 0) > kMaxRank) {
    return invalid_argument("wrap_mat: " + mat_desc(mat) + " has more dims than the maximum rank " +
                            std::to_string(kMaxRank));
  }
  for (int i = 0; i < mat.dims; ++i) {
    shape.push_back(mat.size[i]);
    strides.push_back(static_cast<std::int64_t>(mat.step[static_cast<std::size_t>(i)]));
  }
  if (cn > 1) {
    shape.push_back(cn);
    strides.push_back(esz1);
  }
  auto* base = reinterpret_cast<std::byte*>(const_cast<uchar*>(mat.datastart));
  const std::int64_t size = mat.dataend - mat.datastart;
  const std::int64_t offset = mat.data - mat.datastart;
  std::shared_ptr<Storage> storage;
  try {
    storage = std::make_shared<CvMatStorage>(mat, base, size, options.read_only);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("wrap_mat: out of memory for the storage object");
  }
  return NeatTensor::from_storage(std::move(storage), dtype, shape, strides, offset);
}

Result<NeatTensor> wrap_mat_image(const cv::Mat& mat, PixelFormat format, MatWrapOptions options) {
  if (!is_interleaved(format)) {
    return invalid_argument("wrap_mat_image: " + std::string(to_string(format)) +
                            " is not an interleaved format (GRAY8, RGB, BGR, RGBA, BGRA)");
  }
  if (mat.dims != 2 || mat.depth() != CV_8U || mat.channels() != channels(format)) {
    return invalid_argument("wrap_mat_image: " + mat_desc(mat) + " is not a 2-D 8-bit Mat with " +
                            std::to_string(channels(format)) + " channels, as " +
                            std::string(to_string(format)) + " needs");
  }
  NEAT_ASSIGN_OR_RETURN(NeatTensor t, wrap_mat(mat, options));
  const Layout layout = format == PixelFormat::GRAY8 ? Layout::HW : Layout::HWC;
  return t.as_image(ImageSpec{format, mat.cols, mat.rows, layout});
}

Result<cv::Mat> mat_view(const NeatTensor& tensor) {
  NEAT_ASSIGN_OR_RETURN(Mapping m, tensor.map(MapMode::Read));
  return mat_view(std::move(m));
}

Result<cv::Mat> mat_header(const Mapping& mapping) {
  const NeatTensor& t = mapping.tensor();
  auto what = [&] { return "mat_view of " + t.to_string(); };  // built only on failure
  if (!t.defined()) return failed_precondition("mat_view: the mapping is empty");
  if (t.device().type != DeviceType::Cpu) {
    return failed_precondition(what() + ": the tensor is not in CPU memory");
  }
  if (t.is_composite()) {
    return failed_precondition(what() + ": a planar frame is not one Mat; take plane(role) first");
  }
  if (t.is_broadcast()) {
    return failed_precondition(what() + ": a broadcast (stride 0) view cannot be a Mat");
  }
  NEAT_ASSIGN_OR_RETURN(int depth, cv_depth_from_dtype(t.dtype()));
  const std::int64_t item = item_size(t.dtype());
  std::int64_t rows = 1, cols = 1, cn = 1, row_step = 0;
  const Dims& s = t.shape();
  const Dims& st = t.strides();
  switch (t.rank()) {
    case 1:
      cols = s[0];
      if (cols > 1 && st[0] != item) {
        return failed_precondition(what() + ": elements are " + std::to_string(st[0]) +
                                   " bytes apart; a Mat row needs them packed");
      }
      row_step = cols * item;
      break;
    case 2:
      rows = s[0];
      cols = s[1];
      if (cols > 1 && st[1] != item) {
        return failed_precondition(what() + ": columns are " + std::to_string(st[1]) +
                                   " bytes apart; a Mat needs packed columns (HW layout)");
      }
      row_step = rows > 1 ? st[0] : cols * item;
      break;
    case 3:
      rows = s[0];
      cols = s[1];
      cn = s[2];
      if (t.layout() == Layout::CHW) {
        return failed_precondition(what() +
                                   ": CHW is not a Mat layout; take one channel with "
                                   "narrow(0, c, 1) or convert the layout first");
      }
      if ((cn > 1 && st[2] != item) || (cols > 1 && st[1] != cn * item)) {
        return failed_precondition(what() + ": channels must be packed and pixels " +
                                   std::to_string(cn * item) + " bytes apart (HWC) for a Mat");
      }
      if (cn > CV_CN_MAX) {
        return failed_precondition(what() + ": " + std::to_string(cn) +
                                   " channels is above OpenCV's maximum of " +
                                   std::to_string(CV_CN_MAX));
      }
      row_step = rows > 1 ? st[0] : cols * cn * item;
      break;
    default:
      return failed_precondition(what() + ": rank " + std::to_string(t.rank()) +
                                 " has no Mat form here; Mat views are HW or HWC");
  }
  if (rows > INT32_MAX || cols > INT32_MAX) {
    return failed_precondition(what() + ": extents above 2^31-1 do not fit a Mat");
  }
  if (row_step < cols * cn * item) {
    return failed_precondition(what() + ": the row stride " + std::to_string(row_step) +
                               " is negative or smaller than a row; a Mat needs top-down rows");
  }
  if (row_step % item != 0) {
    return failed_precondition(what() + ": the row stride " + std::to_string(row_step) +
                               " is not a multiple of the " + std::to_string(item) +
                               "-byte element, which OpenCV requires");
  }
  auto* data = reinterpret_cast<uchar*>(const_cast<std::byte*>(mapping.data()));  // NOLINT
  cv::Mat mat(static_cast<int>(rows), static_cast<int>(cols),
              CV_MAKETYPE(depth, static_cast<int>(cn)), data, static_cast<size_t>(row_step));
  return mat;
}

Result<cv::Mat> mat_view(Mapping mapping) {
  NEAT_ASSIGN_OR_RETURN(cv::Mat mat, mat_header(mapping));
  // Attach a UMatData whose context owns the mapping: the last Mat header
  // going releases it (and with it the storage).
  auto* u = new cv::UMatData(&keep_alive_allocator());
  u->data = u->origdata = mat.data;
  u->size = static_cast<size_t>(mat.dataend - mat.datastart);
  u->refcount = 1;
  u->flags = cv::UMatData::USER_ALLOCATED;
  u->allocatorContext = std::make_shared<Mapping>(std::move(mapping));
  mat.u = u;
  return mat;
}

Result<cv::Mat> plane_header(const Mapping& mapping, PlaneRole role) {
  const NeatTensor& t = mapping.tensor();
  if (!t.is_composite()) {
    return failed_precondition("plane_header: " + t.to_string() + " is not a planar frame");
  }
  NEAT_ASSIGN_OR_RETURN(const std::byte* p, mapping.plane_data(role));
  for (int i = 0; i < t.plane_count(); ++i) {
    const PlaneLayout& pl = t.plane_layout(i);
    if (pl.role != role) continue;
    if (pl.rows > INT32_MAX || pl.cols > INT32_MAX) {
      return failed_precondition("plane_header: the plane is too large for a Mat");
    }
    const std::int64_t step = pl.rows > 1 ? pl.row_stride : pl.cols * pl.samples;
    return cv::Mat(static_cast<int>(pl.rows), static_cast<int>(pl.cols), CV_8UC(pl.samples),
                   const_cast<std::byte*>(p), static_cast<size_t>(step));  // NOLINT
  }
  return internal_error("plane_header: plane vanished");
}

}  // namespace neat

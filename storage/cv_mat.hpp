// The cv::Mat bridge, both ways and without copying:
//  * wrap_mat: a cv::Mat (continuous or not, any step, an ROI, N-D) as a
//    NeatTensor; the storage holds a Mat header, so the Mat's buffer lives
//    as long as any tensor, view or mapping of it.
//  * mat_view: a CPU NeatTensor (HWC / HW, any dtype OpenCV has) as a
//    cv::Mat whose reference count keeps the NeatTensor's storage alive.
// A layout OpenCV cannot represent is refused with a typed error; the
// bridge never copies instead.
//
// Ownership: see above; no global state. Threading: thread-safe.
#pragma once

#include <opencv2/core/mat.hpp>

#include "neat/contract/mapping.hpp"
#include "neat/contract/neat_tensor.hpp"

namespace neat {

struct MatWrapOptions {
  /// Treat the Mat's bytes as read-only (never writable, never donated).
  bool read_only = false;
};

/// The DType of an OpenCV depth (CV_8U, ...); InvalidArgument for none.
Result<DType> dtype_from_cv_depth(int depth);
/// The OpenCV depth of a DType; InvalidArgument for U32, I64, BF16, Bool.
Result<int> cv_depth_from_dtype(DType dtype);

/// Wraps a Mat: 2-D single-channel -> [rows, cols]; multi-channel ->
/// [rows, cols, channels]; N-D -> its sizes (+ channels). Byte strides come
/// from Mat::step. The bytes are donated by make_writable() only when no
/// other Mat header shares them. InvalidArgument for an empty Mat or a Mat
/// over user memory it does not own (wrap that pointer with wrap_external).
Result<NeatTensor> wrap_mat(const cv::Mat& mat, MatWrapOptions options = {});
/// As wrap_mat, with an interleaved image spec (GRAY8 becomes HW [H, W]).
Result<NeatTensor> wrap_mat_image(const cv::Mat& mat, PixelFormat format,
                                  MatWrapOptions options = {});

/// A non-owning Mat header over the bytes of `mapping` (HW or HWC, as
/// mat_view), valid only while the mapping lives: for kernels that call
/// OpenCV inside one function. Writing through it needs a write mapping.
Result<cv::Mat> mat_header(const Mapping& mapping);
/// A non-owning Mat header over one plane of a mapped planar frame: CV_8UC1
/// for Y, U, V; CV_8UC2 for UV / VU. Valid only while the mapping lives.
Result<cv::Mat> plane_header(const Mapping& mapping, PlaneRole role);

/// A Mat over the bytes of a read mapping it takes of `tensor`. The Mat is
/// for reading: writing through it breaks the tensor's immutability.
Result<cv::Mat> mat_view(const NeatTensor& tensor);
/// A Mat over the bytes of `mapping` (read or write), which the Mat keeps
/// alive: with a write mapping the Mat may be written.
Result<cv::Mat> mat_view(Mapping mapping);

}  // namespace neat

// Under ThreadSanitizer, OpenCV's parallel_for_ (on TBB, which is not
// instrumented) runs serially: TSan cannot see TBB's joins and would report
// the caller's stack reuse as races. Kernels then run on the calling thread
// (parallel_rows honours OpenCV's thread setting); their multi-threaded paths
// run in the normal and ASan suites.
#include <opencv2/core/utility.hpp>

namespace {

#if defined(__SANITIZE_THREAD__)
const bool kSerialOpenCv = [] {
  cv::setNumThreads(1);
  return true;
}();
#endif

}  // namespace

#include "neat/kernels/kernel.hpp"

#include <exception>
#include <mutex>
#include <opencv2/core/utility.hpp>

namespace neat {

namespace {

// What a stripe threw on a pool thread (a scratch buffer that cannot grow):
// the first exception, kept for the calling thread. It belongs to one
// parallel_rows() call and lives on its stack.
struct Thrown {
  std::mutex mutex;  // only taken on the way out of a failure
  std::exception_ptr first;
};

// Stripe s of `stripes` covers rows [rows*s/stripes, rows*(s+1)/stripes).
// What a stripe throws is kept in `thrown` and rethrown on the calling
// thread, whatever OpenCV's backend does with exceptions, so run_conversion()
// can turn it into a typed error.
class Stripes final : public cv::ParallelLoopBody {
 public:
  Stripes(const RowBody& body, std::int64_t rows, int stripes, Thrown& thrown)
      : body_(body), rows_(rows), stripes_(stripes), thrown_(thrown) {}
  void operator()(const cv::Range& r) const override {
    try {
      for (int s = r.start; s < r.end; ++s) {
        body_.run(rows_ * s / stripes_, rows_ * (s + 1) / stripes_);
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(thrown_.mutex);
      if (!thrown_.first) thrown_.first = std::current_exception();
    }
  }

 private:
  const RowBody& body_;
  std::int64_t rows_;
  int stripes_;
  Thrown& thrown_;
};

}  // namespace

void parallel_rows(std::int64_t rows, int threads, const RowBody& body) {
  if (rows <= 0) return;
  // OpenCV's thread setting (cv::setNumThreads, OPENCV_FOR_THREADS_NUM) caps ours.
  threads = std::min(threads, cv::getNumThreads());
  if (threads <= 1 || rows < 2) {
    body.run(0, rows);
    return;
  }
  const int stripes = static_cast<int>(std::min<std::int64_t>(threads, rows));
  Thrown thrown;
  cv::parallel_for_(cv::Range(0, stripes), Stripes(body, rows, stripes, thrown), stripes);
  if (thrown.first) std::rethrow_exception(thrown.first);
}

}  // namespace neat

#include "neat/kernels/kernel.hpp"

#include <exception>
#include <mutex>
#include <opencv2/core/utility.hpp>

namespace neat {

namespace {

// Stripe s of `stripes` covers rows [rows*s/stripes, rows*(s+1)/stripes).
// What a stripe throws on a pool thread (a scratch buffer that cannot grow)
// is kept and rethrown on the calling thread, whatever OpenCV's backend does
// with exceptions, so run_conversion() can turn it into a typed error.
class Stripes final : public cv::ParallelLoopBody {
 public:
  Stripes(const RowBody& body, std::int64_t rows, int stripes)
      : body_(body), rows_(rows), stripes_(stripes) {}
  void operator()(const cv::Range& r) const override {
    try {
      for (int s = r.start; s < r.end; ++s) {
        body_.run(rows_ * s / stripes_, rows_ * (s + 1) / stripes_);
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mutex_);  // only on the way out of a failure
      if (!thrown_) thrown_ = std::current_exception();
    }
  }
  void rethrow() const {
    if (thrown_) std::rethrow_exception(thrown_);
  }

 private:
  const RowBody& body_;
  std::int64_t rows_;
  int stripes_;
  mutable std::mutex mutex_;
  mutable std::exception_ptr thrown_;
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
  const Stripes work(body, rows, stripes);
  cv::parallel_for_(cv::Range(0, stripes), work, stripes);
  work.rethrow();
}

}  // namespace neat

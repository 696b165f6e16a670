#include "neat/kernels/kernel.hpp"

#include <opencv2/core/utility.hpp>

namespace neat {

namespace {

// Stripe s of `stripes` covers rows [rows*s/stripes, rows*(s+1)/stripes).
class Stripes final : public cv::ParallelLoopBody {
 public:
  Stripes(const RowBody& body, std::int64_t rows, int stripes)
      : body_(body), rows_(rows), stripes_(stripes) {}
  void operator()(const cv::Range& r) const override {
    for (int s = r.start; s < r.end; ++s) {
      body_.run(rows_ * s / stripes_, rows_ * (s + 1) / stripes_);
    }
  }

 private:
  const RowBody& body_;
  std::int64_t rows_;
  int stripes_;
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
  cv::parallel_for_(cv::Range(0, stripes), Stripes(body, rows, stripes), stripes);
}

}  // namespace neat

// The README's first example: a cv::Mat frame wrapped without a copy, a crop
// view, make_writable() (the Mat still shares the pixels, so this copies, and
// the copy is recorded), and a write mapping. The region between the docs
// markers is the README's code block (tests/docs/check_snippets.py keeps them
// equal); CI builds and runs it.
#include <cstdio>
#include <opencv2/core.hpp>

// [docs:quickstart]
#include <neat/neat.hpp>

cv::Mat mat(1080, 1920, CV_8UC3, cv::Scalar(0, 0, 0));           // your frame
auto frame = neat::wrap_mat_image(mat, neat::PixelFormat::BGR);  // zero copy
auto roi = frame->crop(64, 64, 640, 640);                        // a view
auto w = std::move(*frame).make_writable();                      // donated or copied, recorded
auto m = w->map(neat::MapMode::Write);                           // RAII, never copies
// [docs:end]

int main() {
  if (!roi || !w || !m) return 1;
  const auto packs = neat::conversion_counters().snapshot().total(neat::ConversionKind::Pack);
  std::printf("crop %s; make_writable copied %llu byte(s) (the Mat still holds the pixels)\n",
              roi->to_string().c_str(), static_cast<unsigned long long>(packs.bytes));
  return packs.count == 1 ? 0 : 1;
}

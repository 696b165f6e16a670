#include "timeline.hpp"

#include <png.h>
#include <algorithm>
#include <map>
#include <opencv2/imgproc.hpp>

namespace neat::tools {

namespace {

cv::Scalar colour(ConversionKind k) {  // BGR
  switch (k) {
    case ConversionKind::Pack:
      return {60, 60, 220};
    case ConversionKind::Convert:
      return {200, 120, 40};
    case ConversionKind::Transfer:
      return {60, 170, 60};
    default:
      return {128, 128, 128};
  }
}

std::string track_of(const AuditRecord& r) {
  return r.stage.empty() ? "thread " + std::to_string(r.thread) : "stage '" + r.stage + "'";
}

}  // namespace

std::string render_timeline(const std::vector<AuditRecord>& records, const std::string& png_path,
                            int width) {
  std::vector<const AuditRecord*> timed;
  for (const AuditRecord& r : records) {
    if (r.timestamp_ns > 0) timed.push_back(&r);
  }
  if (timed.empty()) return "the trace has no timestamped conversions to draw";
  std::int64_t t0 = INT64_MAX, t1 = 0;
  std::map<std::string, int> tracks;
  for (const AuditRecord* r : timed) {
    t0 = std::min(t0, r->timestamp_ns - r->duration_ns);
    t1 = std::max(t1, r->timestamp_ns);
    tracks.emplace(track_of(*r), 0);
  }
  int row = 0;
  for (auto& [name, index] : tracks)
    index = row++;
  const int label_w = 190, top = 40, row_h = 34, axis_h = 50;
  const int plot_w = std::max(200, width - label_w - 60);
  const int height = top + row * row_h + axis_h + 30;
  cv::Mat img(height, label_w + plot_w + 60, CV_8UC3, cv::Scalar(255, 255, 255));
  const double span = static_cast<double>(std::max<std::int64_t>(t1 - t0, 1));
  auto x_of = [&](std::int64_t t) {
    return label_w + static_cast<int>(static_cast<double>(t - t0) / span * plot_w);
  };
  cv::putText(img, "NeatTensor conversions (red: pack, blue: convert, green: transfer)", {10, 24},
              cv::FONT_HERSHEY_SIMPLEX, 0.55, {0, 0, 0}, 1, cv::LINE_AA);
  for (const auto& [name, index] : tracks) {
    const int y = top + index * row_h;
    cv::rectangle(img, {label_w, y + 2}, {label_w + plot_w, y + row_h - 2}, {245, 245, 245},
                  cv::FILLED);
    cv::putText(img, name, {8, y + row_h / 2 + 5}, cv::FONT_HERSHEY_SIMPLEX, 0.45, {0, 0, 0}, 1,
                cv::LINE_AA);
  }
  for (const AuditRecord* r : timed) {
    const int y = top + tracks[track_of(*r)] * row_h;
    const int x0 = x_of(r->timestamp_ns - r->duration_ns);
    const int x1 = std::max(x0 + 2, x_of(r->timestamp_ns));
    cv::rectangle(img, {x0, y + 5}, {x1, y + row_h - 5}, colour(r->kind), cv::FILLED);
  }
  // Time axis in milliseconds.
  const int ay = top + row * row_h + 12;
  cv::line(img, {label_w, ay}, {label_w + plot_w, ay}, {0, 0, 0}, 1);
  for (int i = 0; i <= 5; ++i) {
    const int x = label_w + plot_w * i / 5;
    cv::line(img, {x, ay - 4}, {x, ay + 4}, {0, 0, 0}, 1);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f ms", span * i / 5 / 1e6);
    cv::putText(img, buf, {x - 20, ay + 20}, cv::FONT_HERSHEY_SIMPLEX, 0.4, {0, 0, 0}, 1,
                cv::LINE_AA);
  }
  // libpng's simplified API writes the file (OpenCV's imgcodecs would bring
  // GDAL, Poppler and their kin into every `neat` process: 20 MB of RSS).
  cv::Mat rgb;
  cv::cvtColor(img, rgb, cv::COLOR_BGR2RGB);
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(rgb.cols);
  png.height = static_cast<png_uint_32>(rgb.rows);
  png.format = PNG_FORMAT_RGB;
  if (png_image_write_to_file(&png, png_path.c_str(), 0, rgb.data,
                              static_cast<png_int_32>(rgb.step[0]), nullptr) == 0) {
    const std::string why = png.message;
    png_image_free(&png);
    return "cannot write '" + png_path + "': " + why;
  }
  return {};
}

}  // namespace neat::tools

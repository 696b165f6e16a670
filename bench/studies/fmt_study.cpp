// A study (docs/architecture.md, "Libraries we measured and did not
// adopt"): building a typical error message and formatting a double, the
// tree's way (concatenation, std::to_chars) against libfmt 9.1 (Debian 12's
// libfmt-dev). Built only where libfmt is installed.
#include <fmt/format.h>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <string>
using clk = std::chrono::steady_clock;
template <class F>
double ns_per(int n, F&& f) {
  auto t0 = clk::now();
  for (int i = 0; i < n; ++i)
    f(i);
  return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / n;
}
int main() {
  const int N = 1'000'000;
  std::size_t sink = 0;
  std::string stage = "pre", edge = "src->pre", what = "u8 [1080, 1920] NV12";
  double concat = ns_per(N, [&](int i) {
    std::string m = "edge '" + edge + "': it needs an implicit convert (pixel_format) " + what +
                    ", " + std::to_string(i) + " B per frame";
    sink += m.size();
  });
  double f = ns_per(N, [&](int i) {
    std::string m = fmt::format(
        "edge '{}': it needs an implicit convert (pixel_format) {}, {} B per frame", edge, what, i);
    sink += m.size();
  });
  char buf[64];
  double tc = ns_per(N, [&](int i) {
    auto r = std::to_chars(buf, buf + 64, i * 1.37e-6);
    sink += r.ptr - buf;
  });
  double fc = ns_per(N, [&](int i) {
    auto e = fmt::format_to(buf, "{}", i * 1.37e-6);
    sink += e - buf;
  });
  std::printf("message: concatenation %.1f ns, fmt::format %.1f ns (%.2fx)\n", concat, f,
              f / concat);
  std::printf("double: std::to_chars %.1f ns, fmt::format_to %.1f ns (%.2fx)\n", tc, fc, fc / tc);
  return sink == 0;
}

// Soak: the preprocess pipeline (videotestsrc 1920x1080 NV12 -> fused
// preprocess 640x640 -> appsink) for FRAMES frames (default 110,000, about six
// minutes here). Prints the resident memory, fd count, live wrapped GStreamer
// buffers and mappings at frame 10,000 and near the end; the goal is RSS
// growth <= 1 MiB between them and constant fds and mappings. `make soak`;
// the CI version (5,000 frames) is the Soak test.
#include <unistd.h>

#include <dirent.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <neat/neat.hpp>
#include <neat/stages/appsink.hpp>
#include <neat/stages/builtin.hpp>
#include <neat/stages/graph.hpp>
#include <neat/stages/gst_io.hpp>

namespace {

std::int64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

int fd_count() {
  DIR* d = ::opendir("/proc/self/fd");
  int n = 0;
  while (dirent* e = ::readdir(d))
    n += e->d_name[0] != '.';
  ::closedir(d);
  return n - 1;
}

struct Sample {
  std::int64_t frame = 0, rss = 0, live_buffers = 0, live_maps = 0;
  int fds = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t frames = argc > 1 ? std::atoll(argv[1]) : 110000;
  const std::int64_t warm = std::min<std::int64_t>(10000, frames / 10);
  const std::int64_t late = frames - 100;
  neat::GraphBuilder b("soak");
  auto out = neat::AppSink::create({.capacity = 4});
  b.add_source("cam", neat::gst_source(neat::default_gst_source_description(frames)));
  b.add_stage("pre", neat::preprocess_stage({.width = 640, .height = 640}));
  b.add_sink("out", out);
  (void)b.connect("cam", "pre");
  (void)b.connect("pre", "out");
  Sample at_warm, at_late;
  std::int64_t n = 0;
  auto sample = [&] {
    const auto s = neat::gst_storage_stats();
    return Sample{n, rss_bytes(), s.live_storages, s.live_maps, fd_count()};
  };
  out->set_callback([&](const neat::NeatTensorRef&) {
    ++n;
    if (n == warm) at_warm = sample();
    if (n == late) at_late = sample();
    if (n % 10000 == 0) {
      const Sample s = sample();
      std::printf("frame %lld: RSS %.2f MiB, fds %d, live buffers %lld, mappings %lld\n",
                  static_cast<long long>(n), s.rss / 1048576.0, s.fds,
                  static_cast<long long>(s.live_buffers), static_cast<long long>(s.live_maps));
      std::fflush(stdout);
    }
  });
  auto g = b.build();
  if (!g) {
    std::fprintf(stderr, "%s\n", g.error().message().c_str());
    return 1;
  }
  auto r = g->run();
  if (!r) {
    std::fprintf(stderr, "%s\n", r.error().message().c_str());
    return 1;
  }
  const std::int64_t growth = at_late.rss - at_warm.rss;
  std::printf(
      "soak: %lld frames in %.1f s (%.1f fps); between frame %lld and %lld: RSS %+lld B "
      "(target <= 1 MiB: %s), fds %d -> %d, live buffers %lld -> %lld, mappings %lld -> "
      "%lld; %s\n",
      static_cast<long long>(n), r->seconds, n / r->seconds, static_cast<long long>(at_warm.frame),
      static_cast<long long>(at_late.frame), static_cast<long long>(growth),
      growth <= (1 << 20) ? "met" : "NOT met", at_warm.fds, at_late.fds,
      static_cast<long long>(at_warm.live_buffers), static_cast<long long>(at_late.live_buffers),
      static_cast<long long>(at_warm.live_maps), static_cast<long long>(at_late.live_maps),
      r->frames.to_string().c_str());
  return growth <= (1 << 20) && at_warm.fds == at_late.fds ? 0 : 1;
}

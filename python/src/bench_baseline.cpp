// _neat_bench: the C++ baseline of the Python benchmark (bench/python_bench.py),
// built in the build tree only (never installed): a pipeline's first appsink
// pulled in C++ as `neat run` does, in the benchmark's own process.
#include <pybind11/pybind11.h>

#include <chrono>
#include <stdexcept>
#include <utility>

#include <neat/neat.hpp>
#include <neat/stages/pipeline.hpp>

namespace py = pybind11;
using namespace std::chrono_literals;

namespace {

// Frames pulled and seconds taken; the graph's error as a RuntimeError.
std::pair<std::uint64_t, double> run_cpp(const std::string& text, std::int64_t frames) {
  py::gil_scoped_release release;
  neat::PipelineOptions o;
  o.default_frames = frames;
  auto declared = neat::declare_pipeline(text, o);
  if (!declared.ok()) throw std::runtime_error(declared.error().message());
  auto g = declared->builder.build();
  if (!g.ok()) throw std::runtime_error(g.error().message());
  const auto t0 = std::chrono::steady_clock::now();
  if (auto s = g->start(); !s.ok()) throw std::runtime_error(s.error().message());
  std::uint64_t pulled = 0;
  for (;;) {
    if (auto f = declared->appsink->pull(200ms)) {
      ++pulled;
    } else if (declared->appsink->at_end() || g->done()) {
      break;
    }
  }
  auto r = g->wait();
  if (!r.ok()) throw std::runtime_error(r.error().message());
  return {pulled, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

}  // namespace

PYBIND11_MODULE(_neat_bench, m) {
  m.doc() = "The C++ baseline of bench/python_bench.py (build tree only).";
  m.def("run_cpp", &run_cpp, py::arg("text"), py::arg("frames") = 300);
}

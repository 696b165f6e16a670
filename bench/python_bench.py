#!/usr/bin/python3
"""The Python package's two figures (docs/benchmarks.md, "Python"):

1. Taking a 1080p NV12 frame from an appsink into numpy (pull + a numpy
   array per plane): microseconds per frame and bytes copied, with frames
   already queued (no waiting measured). Reference in the same process: two
   numpy views made from Python over an existing 1080p buffer
   (numpy.asarray(memoryview(...)) per plane), the least any binding can cost.
2. The default graph (the detection demo) driven from Python, every frame
   taken into numpy, against the same graph pulled in C++ as `neat run`
   does (_neat_bench.run_cpp, a build-tree module), interleaved rounds in one process.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py [--rounds N] [--quick]
"""
import argparse
import statistics
import time

import numpy as np

import neat
import _neat_bench  # the C++ baseline: a module of the build tree (python/)


def pull_into_numpy(frames):
    # Queue every frame first, so only the taking is timed.
    sink = neat.AppSink(capacity=frames)
    g = neat.Graph("pull")
    g.add_source("src", neat.element("synthetic", format="NV12", size=(1920, 1080), frames=frames))
    g.add_sink("out", sink).connect("src", "out")
    g.start()
    while sink.stats["queued"] < frames:
        time.sleep(0.001)
    before = neat.counters()
    t0 = time.perf_counter()
    kept = []
    for _ in range(frames):
        f = sink.try_pull()
        y = np.asarray(f.plane("Y"))
        uv = np.asarray(f.plane("UV"))
        kept.append((f, y, uv))
    seconds = time.perf_counter() - t0
    copied = neat.counters().since(before).bytes
    assert all(y.ctypes.data == f.data_ptr for f, y, _ in kept)
    del kept
    g.wait()
    return seconds / frames * 1e6, copied


def numpy_views(frames):
    buf = bytearray(1920 * 1080 * 3 // 2)
    t0 = time.perf_counter()
    for _ in range(frames):
        m = memoryview(buf)
        y = np.asarray(m[: 1920 * 1080]).reshape(1080, 1920)
        uv = np.asarray(m[1920 * 1080:]).reshape(540, 960, 2)
    return (time.perf_counter() - t0) / frames * 1e6


def python_graph(frames):
    g = neat.pipeline(frames=frames)
    t0 = time.perf_counter()
    g.start()
    n = 0
    for f in g.appsink:
        np.asarray(f)
        n += 1
    g.wait()
    return n / (time.perf_counter() - t0)


def cpp_graph(frames):
    n, seconds = _neat_bench.run_cpp(neat.default_pipeline_text(), frames)
    return n / seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--frames", type=int, default=300, help="frames of the default graph per run")
    ap.add_argument("--quick", action="store_true", help="a smoke run (CI)")
    args = ap.parse_args()
    rounds = 1 if args.quick else args.rounds
    pulls = 16 if args.quick else 120
    frames = 20 if args.quick else args.frames

    per_frame, copied, views = [], [], []
    for _ in range(rounds):
        us, b = pull_into_numpy(pulls)
        per_frame.append(us)
        copied.append(b)
        views.append(numpy_views(pulls))
    us = statistics.median(per_frame)
    ref = statistics.median(views)
    print(f"appsink -> numpy, 1080p NV12 (2 planes): {us:.2f} us per frame "
          f"(target <= 5), bytes copied {max(copied)} (target 0); "
          f"numpy views alone {ref:.2f} us: {us / ref:.2f}x")

    py, cpp = [], []
    for _ in range(rounds):
        cpp.append(cpp_graph(frames))
        py.append(python_graph(frames))
    p, c = statistics.median(py), statistics.median(cpp)
    print(f"default graph, {frames} frames: Python-driven {p:.1f} fps, C++ {c:.1f} fps: "
          f"{p / c:.3f}x (target >= 0.95)")


if __name__ == "__main__":
    main()

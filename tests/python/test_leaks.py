"""Reference and memory leaks: 10,000 iterations of every binding path that
creates, wraps, exports, imports or refuses, with no growth in Python's
tracked objects and at most 1 MiB of RSS."""
import gc

import numpy as np

import neat

ITERATIONS = 10_000


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def one_round(i, arrays):
    t = neat.zeros([16, 16], "f32")
    d = np.from_dlpack(t)  # while t is held alone: zero-copy
    a = np.asarray(t)
    m = memoryview(t)
    c = np.from_dlpack(t)  # shared now, still zero-copy: numpy's arrays are read-only
    t.__dlpack_device__()  # a consumer that asks the device first may write:
    with neat.policy("silent"):
        e = t.__dlpack__()  # so a shared tensor goes out as a copy of its own
    w = neat.from_numpy(arrays[i % 4])
    b = np.asarray(w)
    u = neat.from_dlpack(np.arange(4.0))
    v = t.transpose(0, 1).contiguous()
    f = neat.compose("NV12", 8, 4, [arrays[4], arrays[5]])
    y = np.asarray(f.plane("Y"))
    repr(f)
    try:
        neat.zeros([2], "nope")
    except neat.InvalidArgument:
        pass
    try:
        np.asarray(f)
    except BufferError:
        pass
    try:
        f.__dlpack__()
    except neat.Error:
        pass
    s = t.make_writable()
    del a, m, d, w, b, u, v, f, y, s, t


def test_no_growth_over_ten_thousand_rounds():
    arrays = [np.zeros((16, 16), np.float32) for _ in range(4)]
    arrays += [np.zeros((4, 8), np.uint8), np.zeros((2, 4, 2), np.uint8)]
    for i in range(500):  # warm up caches and allocator pools
        one_round(i, arrays)
    gc.collect()
    objects = len(gc.get_objects())
    rss = rss_bytes()
    for i in range(ITERATIONS):
        one_round(i, arrays)
    gc.collect()
    grown_objects = len(gc.get_objects()) - objects
    grown_rss = rss_bytes() - rss
    print(f"\n{ITERATIONS} rounds: tracked objects {grown_objects:+d}, RSS {grown_rss / 1024:+.0f} KiB")
    assert grown_objects <= 10
    assert grown_rss <= 1 << 20


def test_graphs_and_frames_do_not_leak():
    def run_once():
        g = neat.pipeline("synthetic format=GRAY8 size=32x16 frames=20 ! appsink")
        g.start()
        kept = [np.asarray(f) for f in g.appsink]
        g.wait()
        return len(kept)

    for _ in range(20):
        run_once()
    gc.collect()
    objects = len(gc.get_objects())
    rss = rss_bytes()
    for _ in range(200):
        assert run_once() == 20
    gc.collect()
    assert len(gc.get_objects()) - objects <= 10
    assert rss_bytes() - rss <= 1 << 20

"""Graphs from Python: pipeline text and Python objects, appsink iteration,
push sources fed with numpy (zero copy), Python stages accounted like any
stage, errors, timeouts, lifetimes, threads."""
import gc
import json
import os
import threading
import time

import numpy as np
import pytest

import neat
from conftest import address

SMALL = "default ! resize size=64x48 ! appsink"


def test_pipeline_text_runs_and_frames_become_numpy_without_a_copy():
    g = neat.pipeline("default ! preprocess size=64x64 ! appsink", frames=12)
    assert "preprocess" in g.explain()
    g.start()
    seen = []
    for frame in g.appsink:
        a = np.asarray(frame)
        assert address(a) == frame.data_ptr
        assert a.shape == (3, 64, 64) and a.dtype == np.float32
        seen.append(frame.frame)
    report = g.wait()
    assert seen == list(range(12))
    assert report["frames"]["balanced"] and report["frames"]["consumed"] == 12
    assert g.done and "appsink" in report["latency"]


def test_several_streams_share_one_stage_and_every_frame_names_its_stream():
    g = neat.pipeline("synthetic name=a size=32x24 frames=4 ! shared.  "
                      "synthetic name=b size=32x24 frames=3 ! shared.  "
                      "resize name=shared size=16x12 ! appsink")
    g.start()
    seen = {}
    for f in g.appsink:
        assert f.meta.stream == f.stream == f.meta["stream"]
        assert f.meta.stream_index == {"a": 0, "b": 1}[f.stream]
        seen.setdefault(f.stream, []).append(f.frame)
    g.wait()
    assert seen == {"a": [0, 1, 2, 3], "b": [0, 1, 2]}
    # from Python objects: connect() twice into one stage
    sink = neat.AppSink(capacity=8)
    h = neat.Graph("py")
    h.add_source("x", neat.element("synthetic", size="8x8", frames=2))
    h.add_source("y", neat.element("synthetic", size="8x8", frames=6, rate=10, stall_timeout="2s"))
    h.add_sink("out", sink).connect("x", "out").connect("y", "out")
    assert "at most 10 frames/s" in h.explain() and "stalled after 2 s" in h.explain()
    h.start()
    got = sorted((f.stream, f.frame) for f in sink)
    h.wait()
    # synthetic frames carry no timestamps: the rate goes by when each was handed over
    assert [x for x in got if x[0] == "x"] == [("x", 0), ("x", 1)]
    streams = {s["name"]: s for s in h.stats()["streams"]}
    assert streams["x"]["state"] == "ended" and streams["x"]["frames"] == 2
    y = streams["y"]
    assert y["frames"] + y["dropped"]["rate"] == 6 and y["restarts"] == 0
    with pytest.raises(AttributeError, match="has no 'nope'"):
        neat.zeros([1], "u8").meta.nope
    assert neat.zeros([1], "u8").stream is None


def test_taking_a_frame_into_numpy_copies_nothing():
    g = neat.pipeline("synthetic format=NV12 size=64x48 frames=20 ! appsink", frames=20)
    g.start()
    frames = []
    for f in g.appsink:
        before = neat.counters()
        y = np.asarray(f.plane("Y"))
        uv = np.asarray(f.plane("UV"))
        assert neat.counters().since(before).count == 0
        assert address(y) == f.data_ptr
        frames.append((f, y, uv))
    g.wait()
    assert len(frames) == 20


def test_a_graph_from_python_objects_with_a_push_source_and_a_python_stage():
    spec = neat.FrameSpec("f32", [4, 4])
    src = neat.PushSource(spec, capacity=2)
    pointers = []

    def double(t):
        pointers.append(t.data_ptr)
        return np.asarray(t) * 2  # a new array, wrapped without a copy

    sink = neat.AppSink(capacity=8)
    g = neat.Graph("py", policy="strict")
    g.add_source("src", src).add_stage("double", double).add_sink("out", sink)
    g.chain("src", "double", "out")
    g.start()
    arrays = [np.full((4, 4), i, np.float32) for i in range(5)]
    with src:
        for a in arrays:
            src.push(a)
    out = [np.asarray(f).copy() for f in sink]
    report = g.wait()
    assert [o[0, 0] for o in out] == [0, 2, 4, 6, 8]
    # the stage saw the pushed arrays' own bytes
    assert pointers == [address(a) for a in arrays]
    assert report["frames"]["balanced"]


def test_a_python_stage_s_conversions_are_accounted_to_the_stage():
    src = neat.PushSource(neat.FrameSpec("u8", [8, 8]))
    sink = neat.AppSink(capacity=4)

    def transpose_and_pack(t):
        return t.transpose(0, 1).contiguous()  # a pack, recorded for this stage

    g = neat.Graph("acct")
    g.add_source("src", src).add_stage("tp", transpose_and_pack).add_sink("out", sink)
    g.chain("src", "tp", "out")
    with neat.record() as rec:
        g.start()
        with src:
            for _ in range(3):
                src.push(np.zeros((8, 8), np.uint8))
        assert len(list(sink)) == 3
        g.wait()
    packs = [e for e in rec.events if e["operation"] == "contiguous"]
    assert len(packs) == 3
    assert {e["stage"] for e in packs} == {"tp"} and {e["graph"] for e in packs} == {"acct"}
    assert sorted(e["frame"] for e in packs) == [0, 1, 2]
    assert all(e["file"].endswith("test_graph.py") for e in packs)


def test_a_python_stage_that_accepts_rgb_gets_a_planned_conversion_or_a_refusal():
    def make(policy):
        g = neat.Graph("conv", policy=policy)
        g.add_source("src", neat.element("synthetic", format="NV12", size=(32, 16), frames=3))
        g.add_stage("mine", lambda t: t, accepts=neat.Accepts(formats=["RGB"]))
        g.add_sink("out", neat.AppSink(capacity=4))
        return g.chain("src", "mine", "out")

    with pytest.raises(neat.FailedPrecondition) as err:
        make("strict").build()
    assert "src->mine" in str(err.value) and "convert format=RGB" in err.value.fix
    # The fixes are data, best first, in Python's words (never the C++ spelling).
    assert err.value.fixes[0] == err.value.fix
    assert 'connect(..., policy="trace")' in err.value.fixes[1]
    assert "EdgeOptions" not in str(err.value)
    g = make("trace")
    plan = g.plan()
    (edge,) = [e for e in plan["edges"] if e["name"] == "src->mine"]
    assert edge["conversions"][0]["kind"] == "convert"
    report = g.run()
    assert report["frames"]["consumed"] == 3


def test_a_python_stage_that_raises_stops_the_graph_with_its_name():
    def broken(t):
        raise ValueError("no thanks")

    g = neat.Graph("boom")
    g.add_source("src", neat.element("synthetic", format="GRAY8", size=(8, 8), frames=5))
    g.add_stage("broken", broken).add_sink("out", neat.AppSink(capacity=8))
    g.chain("src", "broken", "out")
    g.start()
    # The exception keeps its class; the graph's message (stage, graph) is a note on it.
    with pytest.raises(ValueError, match="no thanks") as err:
        for _ in g.appsink:
            pass
    assert any("python stage" in n and "'broken'" in n for n in err.value.__notes__)
    with pytest.raises(ValueError, match="no thanks") as again:
        g.wait()
    assert len(again.value.__notes__) == 1
    # A neat error raised inside a stage stays a neat error, with its code.
    def refuses(t):
        raise neat.InvalidArgument("bad frame", None)

    g2 = neat.Graph("neat_error")
    g2.add_source("src", neat.element("synthetic", format="GRAY8", size=(8, 8), frames=2))
    g2.add_stage("refuses", refuses).add_sink("out", neat.AppSink(capacity=8))
    g2.chain("src", "refuses", "out")
    with pytest.raises(neat.InvalidArgument, match="bad frame"):
        g2.run()


def test_a_python_stage_returning_the_wrong_spec_is_named():
    g = neat.Graph("spec")
    g.add_source("src", neat.element("synthetic", format="GRAY8", size=(8, 8), frames=2))
    g.add_stage("shrink", lambda t: np.zeros((2, 2), np.uint8)).add_sink("out", neat.AppSink())
    g.chain("src", "shrink", "out")
    with pytest.raises(neat.FailedPrecondition, match="output spec"):
        g.run()


def test_none_from_a_python_stage_drops_the_frame():
    g = neat.Graph("filter")
    g.add_source("src", neat.element("synthetic", format="GRAY8", size=(8, 8), frames=6))
    g.add_stage("odd", lambda t: t if t.frame % 2 else None)
    g.add_sink("out", neat.AppSink(capacity=8)).chain("src", "odd", "out")
    report = g.run()
    assert report["frames"]["consumed"] == 3 and report["frames"]["dropped"]["filtered"] == 3


def test_start_stop_wait_and_timeouts():
    g = neat.pipeline("synthetic format=GRAY8 size=8x8 frames=100000 ! appsink")
    g.start()
    assert g.appsink.pull(timeout=5.0) is not None
    assert g.running
    with pytest.raises(neat.Timeout):
        g.wait(timeout=0.05)
    g.stop()
    report = g.wait()
    assert report["frames"]["balanced"] and 0 < report["frames"]["source_frames"] < 100000
    assert g.done


def test_appsink_timeouts_when_nothing_comes():
    src = neat.PushSource(neat.FrameSpec("u8", [2]))
    g = neat.Graph("idle").add_source("src", src).add_sink("out", neat.AppSink())
    g.connect("src", "out")
    g.start()
    t0 = time.monotonic()
    assert g.appsink.pull(timeout=0.2) is None and not g.appsink.at_end
    with pytest.raises(neat.Timeout, match="no frame within"):
        next(g.appsink.frames(timeout=0.2))
    assert time.monotonic() - t0 < 5
    src.end_of_stream()
    assert list(g.appsink) == []
    g.wait()


def test_the_array_outlives_the_graph_and_the_graph_outlives_its_python_object():
    g = neat.pipeline("synthetic format=GRAY8 size=16x8 frames=50 ! appsink")
    g.start()
    sink = g.appsink
    del g  # the appsink keeps the graph running
    gc.collect()
    arrays = [np.asarray(f) for f in sink]
    assert len(arrays) == 50
    del sink
    gc.collect()
    assert [int(a[0, 0]) for a in arrays[:3]] == [0, 1, 2]  # the bytes are still there


def test_dropping_a_running_graph_stops_it():
    g = neat.pipeline("synthetic format=GRAY8 size=8x8 frames=1000000 ! appsink")
    g.start()
    assert g.appsink.pull(timeout=5.0) is not None
    t0 = time.monotonic()
    del g
    gc.collect()
    assert time.monotonic() - t0 < 5


def test_an_appsink_consumed_from_a_thread_while_another_builds_tensors():
    g = neat.pipeline("synthetic format=NV12 size=64x48 frames=300 ! appsink")
    got = []
    errors = []

    def consume():
        try:
            for f in g.appsink:
                got.append(int(np.asarray(f.plane("Y"))[0, 0]))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    g.start()
    th = threading.Thread(target=consume)
    th.start()
    made = 0
    while th.is_alive():
        t = neat.zeros([64, 64], "f32")
        np.asarray(t)[:] = made
        made += 1
    th.join()
    g.wait()
    assert not errors and len(got) == 300 and made > 0
    assert got[:3] == [0, 1, 2]


def test_push_checks_the_spec_and_refuses_a_tensor_still_writable_through_numpy():
    src = neat.PushSource(neat.FrameSpec("u8", [4]))
    with pytest.raises(neat.InvalidArgument):
        src.push(np.zeros(5, np.uint8))
    t = neat.zeros([4], "u8")
    a = np.asarray(t)
    with pytest.raises(neat.FailedPrecondition, match="writable through 1 numpy"):
        src.push(t)
    del a
    src.push(t)


@pytest.mark.parametrize("call, error", [
    (lambda: neat.pipeline("default ! resise ! appsink"), neat.InvalidArgument),
    (lambda: neat.pipeline("default ! resize size=64 ! appsink"), neat.InvalidArgument),
    (lambda: neat.pipeline(SMALL, policy="lenient"), neat.InvalidArgument),
    (lambda: neat.pipeline(SMALL, first_frame_timeout=0), neat.InvalidArgument),
    (lambda: neat.element("nope"), neat.InvalidArgument),
    (lambda: neat.Graph().add_stage("r", neat.element("resize", size="wide")), neat.InvalidArgument),
    (lambda: neat.Graph().add_stage("r", neat.element("resize", colour=3)), neat.InvalidArgument),
    (lambda: neat.Graph().add_source("s", neat.element("resize", size=(4, 4))), neat.InvalidArgument),
    (lambda: neat.Graph().add_source("s", 42), neat.InvalidArgument),
    (lambda: neat.Graph().add_stage("s", 42), neat.InvalidArgument),
    (lambda: neat.Graph().add_sink("s", 42), neat.InvalidArgument),
    (lambda: neat.Graph().connect("a", "b"), neat.Error),
    (lambda: neat.Graph().add_stage("x", lambda t: t, output=3), neat.InvalidArgument),
    (lambda: neat.AppSink(capacity=0), neat.InvalidArgument),
    (lambda: neat.AppSink(overflow="spill"), neat.InvalidArgument),
    (lambda: neat.PushSource(neat.FrameSpec("u8", [2]), capacity=0), neat.InvalidArgument),
    (lambda: neat.AppSink().pull(timeout=-1), neat.InvalidArgument),
    (lambda: neat.Accepts(dtypes=["u9"]), neat.InvalidArgument),
    (lambda: neat.Accepts(layouts=["diagonal"]), neat.InvalidArgument),
    (lambda: neat.FrameSpec("u8", [-1]), neat.InvalidArgument),
    (lambda: neat.FrameSpec("u8", [1] * 9), neat.InvalidArgument),
    (lambda: neat.PushSource(neat.FrameSpec("u8", [2])).push(np.zeros(2, np.uint8), timeout=-1),
     neat.InvalidArgument),
    (lambda: neat.Graph(policy="nah"), neat.InvalidArgument),
    (lambda: neat.Graph().add_stage("t", neat.element("track", high=2)), neat.InvalidArgument),
    (lambda: neat.Graph().add_stage("t", neat.element("track", max_age=0)), neat.InvalidArgument),
    (lambda: neat.Graph().add_sink("m", neat.element("mqtt", topic="t")), neat.InvalidArgument),
    (lambda: neat.Graph().add_sink("m", neat.element("mqtt", broker="h:0", topic="t")),
     neat.InvalidArgument),
    (lambda: neat.Graph().add_sink("k", neat.element("kafka", brokers="h", topic="t",
                                                      ca_file="/nonexistent.pem")),
     neat.InvalidArgument),
    (lambda: neat.Graph().build(), neat.Error),
    (lambda: neat.Graph().wait(), neat.FailedPrecondition),
])
def test_bad_graph_input_raises_a_typed_error(call, error):
    with pytest.raises(error):
        call()


def test_a_built_graph_refuses_more_nodes_and_an_appsink_joins_one_graph():
    sink = neat.AppSink()
    g = neat.Graph("one").add_source("s", neat.element("synthetic", format="GRAY8", size=(4, 4), frames=1))
    g.add_sink("o", sink).connect("s", "o")
    with pytest.raises(neat.InvalidArgument, match="already in graph 'one'"):
        neat.Graph("two").add_sink("o", sink)
    g.build()
    with pytest.raises(neat.FailedPrecondition, match="already built"):
        g.add_sink("p", neat.AppSink())
    g.run()
    assert sink.stats["received"] == 1


def test_explain_has_no_side_effects_and_plan_lists_memory():
    g = neat.pipeline("default ! preprocess size=64x64 ! appsink", frames=3)
    text = g.explain()
    assert "frame memory" in text and "preprocess" in text
    plan = g.plan()
    assert plan["frame_memory_bytes"] > 0 and plan["policy"] == "strict"
    assert g.run()["frames"]["consumed"] <= 3


def test_graph_stats_and_prometheus_text():
    g = neat.pipeline("synthetic format=GRAY8 size=8x8 frames=10 ! appsink")
    assert g.stats() is None
    g.start()
    for _ in g.appsink:
        pass
    g.wait()
    stats = g.stats()
    assert stats["frames"]["consumed"] == 10
    assert {n["name"] for n in stats["nodes"]} >= {"appsink"}
    assert "neat_graph_consumed_total" in g.prometheus_text()


def test_inference_stages_are_reachable():
    g = neat.Graph("detect", policy="strict")
    g.add_source("cam", neat.element("default", frames=3))
    g.add_stage("pre", neat.element("preprocess", size=(640, 640), letterbox=True))
    g.add_stage("infer", neat.element("infer", model="models:detector"))
    g.add_stage("yolo", neat.element("yolo"))
    g.add_sink("out", neat.AppSink(capacity=4))
    g.chain("cam", "pre", "infer", "yolo", "out")
    g.start()
    dets = [np.asarray(f) for f in g.appsink]
    g.wait()
    assert len(dets) == 3 and all(d.ndim == 2 and d.shape[1] == 6 for d in dets)


def test_infer_on_libtorch_copies_nothing_at_the_model():
    def run(backend):
        g = neat.pipeline("synthetic format=NV12 size=32x16 frames=3 ! preprocess size=8x8 "
                          "batch=true ! tee name=t ! infer model=models:scale backend=" + backend +
                          " ! appsink name=out capacity=8  t. ! appsink name=pre capacity=8", policy="trace")
        with neat.record() as rec:
            g.start()
            pre = [np.array(f) for f in g.appsinks["pre"]]
            out = [np.array(f) for f in g.appsinks["out"]]
            g.wait()
        return pre, out, [e["reason"] for e in rec.events]

    for backend in ("torch", "opencv"):
        pre, out, reasons = run(backend)
        assert len(out) == 3
        for x, y in zip(pre, out):  # scale: y = 2 x + 1, on either engine
            np.testing.assert_allclose(y, 2 * x + 1, rtol=0, atol=1e-5)
        copies = reasons.count("model_input") + reasons.count("model_output")
        assert copies == (0 if backend == "torch" else 6), (backend, reasons)


def test_the_default_pipeline_is_the_demo():
    assert "infer" in neat.default_pipeline_text()
    assert "preprocess" in neat.elements()


def test_a_numpy_array_from_a_python_stage_stands_for_its_declared_image():
    g = neat.Graph("img")
    g.add_source("src", neat.element("synthetic", format="RGB", size=(16, 8), frames=3))
    g.add_stage("invert", lambda t: 255 - np.asarray(t))  # an array, [8, 16, 3]
    g.add_stage("small", neat.element("resize", size=(8, 4)))
    g.add_sink("out", neat.AppSink(capacity=4)).chain("src", "invert", "small", "out")
    g.start()
    frames = list(g.appsink)
    g.wait()
    assert [f.format for f in frames] == ["RGB"] * 3 and frames[0].width == 8


def test_the_interpreter_exits_cleanly_with_graphs_still_running(tmp_path):
    script = tmp_path / "leave_running.py"
    script.write_text(
        "import numpy as np, neat\n"
        "g = neat.Graph('bye')\n"
        "g.add_source('s', neat.element('synthetic', format='GRAY8', size=(64, 64), frames=10**7))\n"
        "g.add_stage('py', lambda t: np.asarray(t) + 1)\n"
        "g.add_sink('o', neat.AppSink()).chain('s', 'py', 'o')\n"
        "g.start()\n"
        "assert g.appsink.pull(timeout=5) is not None\n"
        "src = neat.PushSource(neat.FrameSpec('u8', [4]))\n"
        "h = neat.Graph('b2').add_source('s', src).add_sink('o', neat.AppSink())\n"
        "h.connect('s', 'o').start()\n"
        "src.push(np.zeros(4, np.uint8))\n"
        "print('leaving')\n")
    import os
    import subprocess
    import sys
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "leaving" and done.stderr == ""
    assert time.monotonic() - t0 < 30


def test_a_live_metrics_endpoint_serves_a_running_graph():
    import urllib.request
    g = neat.pipeline("synthetic format=GRAY8 size=8x8 frames=100000 ! appsink", name="live")
    with neat.serve_metrics("127.0.0.1:0", [g]) as server:
        assert server.port > 0 and server.url.endswith("/metrics")
        g.start()
        assert g.appsink.pull(timeout=5) is not None
        with urllib.request.urlopen(server.url, timeout=10) as r:
            body = r.read().decode()
        assert 'neat_graph_running{graph="live"} 1' in body
        assert "neat_conversions_total" in body or "neat_conversion" in body
        assert 'graph="live"' in server.scrape()
        health = server.url.replace("/metrics", "")
        with urllib.request.urlopen(health + "/readyz", timeout=10) as r:
            assert r.status == 200 and r.read() == b"ready\n"
        with urllib.request.urlopen(health + "/status", timeout=10) as r:
            status = json.loads(r.read())
        assert status["ready"] and status["graphs"][0]["streams"][0]["state"] == "up"
        g.stop()
        g.wait()
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(health + "/readyz", timeout=10)
        assert e.value.code == 503 and b"graph 'live' is not running" in e.value.read()
    with pytest.raises(neat.FailedPrecondition):
        server.scrape()
    with pytest.raises(neat.InvalidArgument):
        neat.serve_metrics("127.0.0.1:99999")


# ---- runs that must not hang (each in a child interpreter under a timeout) ----

def run_child(code, timeout=60):
    """Runs `code` in a fresh interpreter; a hang fails the test, it does not stall it."""
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=timeout, env=dict(os.environ))
    return r.returncode, r.stdout + r.stderr


def test_iterating_an_appsink_before_start_starts_the_graph():
    code, out = run_child(
        "import neat\n"
        "g = neat.pipeline('synthetic format=GRAY8 size=8x8 frames=5 ! appsink')\n"
        "print(sum(1 for _ in g.appsink), g.wait()['frames']['consumed'])\n")
    assert code == 0 and out.split()[:2] == ["5", "5"], out


def test_wait_after_breaking_out_of_an_appsink_loop_raises_with_the_fix():
    code, out = run_child(
        "import neat\n"
        "g = neat.pipeline('synthetic format=GRAY8 size=8x8 frames=100000 ! appsink')\n"
        "for f in g.appsink:\n"
        "    break\n"
        "try:\n"
        "    g.wait()\n"
        "except neat.FailedPrecondition as e:\n"
        "    print('raised:', e)\n"
        "g.stop(); r = g.wait(); print('stopped', r['frames']['balanced'])\n")
    assert code == 0, out
    assert "raised: graph 'pipeline' is held by appsink 'appsink'" in out, out
    assert "call stop() before wait()" in out and "stopped True" in out, out


def test_frames_ends_any_source_as_neat_run_does():
    code, out = run_child(
        "import neat\n"
        "g = neat.pipeline('gst:\"videotestsrc ! video/x-raw,format=NV12,width=64,height=48\""
        " ! appsink', frames=5)\n"
        "print(g.run()['frames']['consumed'])\n")
    assert code == 0 and out.strip().endswith("5"), out
    with pytest.raises(neat.InvalidArgument, match="frames=0"):
        neat.pipeline("default ! appsink", frames=0)


def test_spellings_match_the_pipeline_text_and_the_cli():
    assert neat.AppSink(overflow="drop-oldest").capacity == 1
    assert neat.AppSink(overflow="drop_oldest").capacity == 1
    with pytest.raises(neat.InvalidArgument, match="drop-oldest"):
        neat.AppSink(overflow="oldest")
    report = neat.pipeline("synthetic format=GRAY8 size=8x8 frames=3 ! appsink").run()
    assert report["frames"]["deliveries"] == 3  # `neat run` prints "3 deliveries"
    g = neat.Graph("none").add_source("s", neat.PushSource(neat.FrameSpec("u8", [2])))
    with pytest.raises(neat.FailedPrecondition, match="has no appsink"):
        g.appsink


def test_an_hxwx3_array_pushed_into_an_rgb_source_is_that_image():
    src = neat.PushSource(neat.FrameSpec.image("RGB", 8, 4))
    g = neat.Graph("rgb").add_source("s", src).add_sink("out", neat.AppSink(capacity=4))
    g.connect("s", "out")
    g.start()
    a = np.arange(4 * 8 * 3, dtype=np.uint8).reshape(4, 8, 3)
    src.push(a)
    with pytest.raises(neat.InvalidArgument, match='neat.from_numpy\\(a, format="RGB"\\)'):
        src.push(np.zeros((4, 9, 3), np.uint8))
    src.end_of_stream()
    frames = list(g.appsink)
    g.wait()
    assert len(frames) == 1 and frames[0].format == "RGB"
    assert address(np.asarray(frames[0])) == address(a)  # no copy

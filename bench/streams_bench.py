"""Many cameras, one process, against one process per camera (issue 27).

Four live 1080p NV12 cameras at 15 fps (videotestsrc is-live), each
letterboxed to 640x640, through a detector and yolo to an appsink:

  shared    one `neat run`: the four chains link into one infer stage
            (one model, one thread pool), taken round-robin
  separate  four `neat run` processes at once, one camera each (the same
            chain): what a deployment without fan-in runs

Both run for the same number of frames per camera, one after the other in
this one invocation (the machine is shared and noisy: the figures that
matter are ratios of the two). Printed: aggregate frames per second, the
processes' peak RSS (wait4; the separate figure is the sum of the four),
each stream's p99 capture-to-appsink latency (neat audit --stream on each
run's trace) and its drops.

    /usr/bin/python3 bench/streams_bench.py [--neat build/tools/neat]
        [--frames 150] [--model models:detector]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

CAMERA = ('gst:"videotestsrc is-live=true pattern=ball ! '
          'video/x-raw,format=NV12,width=1920,height=1080,framerate=15/1" name={name}')
CHAIN = "preprocess fit=letterbox batch=true"
TAIL = "yolo ! appsink"


def shared_pipeline(names, model):
    chains = " ".join(f"{CAMERA.format(name=n)} ! {CHAIN} ! det." for n in names)
    return f"{chains} infer name=det model={model} ! {TAIL}"


def single_pipeline(name, model):
    return f"{CAMERA.format(name=name)} ! {CHAIN} ! infer model={model} ! {TAIL}"


def start(neat, pipeline, frames, trace):
    # --frames ends every live camera after N frames, as if it had ended.
    args = [neat, "run", "--quiet", "--frames", str(frames), "--trace", trace, pipeline]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc):
    """(output, peak RSS MiB) of a child once it ends."""
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"neat run failed ({proc.returncode}):\n{out}")
    return out, usage.ru_maxrss / 1024.0


def frames_and_seconds(out):
    m = re.search(r"(\d+) frames in ([\d.]+) s", out)
    return int(m.group(1)), float(m.group(2))


def p99_ms(neat, trace, stream):
    out = subprocess.run([neat, "audit", "--stream", stream, trace], capture_output=True,
                         text=True).stdout
    m = re.search(r"^\S+\s+appsink\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out, re.M)
    return (int(m.group(1)), float(m.group(4))) if m else (0, float("nan"))


def drops(out, stream):
    m = re.search(rf"^\s+{stream}\s+\S+\s+\d+\s+\d+\s+(.+?)\s{{2,}}", out, re.M)
    return m.group(1).strip() if m else "none"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--neat", default="build/tools/neat")
    ap.add_argument("--frames", type=int, default=150, help="frames per camera (15 fps: 10 s)")
    ap.add_argument("--model", default="models:detector")
    a = ap.parse_args()
    names = ["cam1", "cam2", "cam3", "cam4"]
    with tempfile.TemporaryDirectory() as d:
        t0 = time.monotonic()
        shared_trace = os.path.join(d, "shared.jsonl")
        out, shared_rss = finish(start(a.neat, shared_pipeline(names, a.model), a.frames,
                                       shared_trace))
        n, s = frames_and_seconds(out)
        shared_fps = n / s
        shared_lat = {x: p99_ms(a.neat, shared_trace, x) for x in names}
        shared_drop = {x: drops(out, x) for x in names}
        procs = {x: start(a.neat, single_pipeline(x, a.model), a.frames, os.path.join(d, x))
                 for x in names}
        sep = {x: finish(p) for x, p in procs.items()}
        sep_fps = sum(frames_and_seconds(o)[0] / frames_and_seconds(o)[1] for o, _ in sep.values())
        sep_rss = sum(r for _, r in sep.values())
        sep_lat = {x: p99_ms(a.neat, os.path.join(d, x), x) for x in names}
        wall = time.monotonic() - t0
    print(f"4 live 1080p NV12 cameras at 15 fps -> letterbox 640 -> {a.model} -> yolo -> appsink, "
          f"{a.frames} frames each ({wall:.0f} s in all)")
    print(f"  {'':10} {'fps (all)':>10} {'peak RSS MiB':>13}   p99 latency ms per stream")
    print(f"  {'shared':10} {shared_fps:10.1f} {shared_rss:13.0f}   " +
          "  ".join(f"{x} {shared_lat[x][1]:.1f}" for x in names))
    print(f"  {'separate':10} {sep_fps:10.1f} {sep_rss:13.0f}   " +
          "  ".join(f"{x} {sep_lat[x][1]:.1f}" for x in names))
    print(f"  shared / separate: fps x{shared_fps / sep_fps:.2f}, "
          f"peak RSS x{shared_rss / sep_rss:.2f} (goal: fps >= x1.00, RSS <= x0.50)")
    print("  shared drops per stream: " + ", ".join(f"{x}: {shared_drop[x]}" for x in names))


if __name__ == "__main__":
    main()

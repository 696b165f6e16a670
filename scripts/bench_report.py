#!/usr/bin/python3
"""Runs the benchmarks and writes their report into docs/benchmarks.md (the
part between the report markers) with plots in docs/img/: micro figures,
kernel ratios against OpenCV, pipeline frame rates against hand-written
OpenCV and stock GStreamer, heap allocations per frame, and the memory of an
in-place chain. Every figure states the machine, the command and the date;
ratios come from pairs measured side by side in one run.

Usage: scripts/bench_report.py [BUILD_DIR]   (make bench-report)
Needs Debian's python3-matplotlib.
"""
import datetime
import json
import os
import platform
import re
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
BENCH = os.path.join(BUILD, "bench", "neat_bench")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
IMG = os.path.join(ROOT, "docs", "img")
BEGIN, END = "<!-- report:begin -->", "<!-- report:end -->"


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) // (1024 * 1024)
    except OSError:
        mem = 0
    osname = "Debian " + open("/etc/debian_version").read().strip() if os.path.exists(
        "/etc/debian_version") else platform.platform()
    return f"{os.cpu_count()} cores ({model}), {mem} GiB, {osname}"


def run():
    out = os.path.join(BUILD, "bench-report.json")
    cmd = [BENCH, "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true",
           f"--benchmark_out={out}", "--benchmark_out_format=json"]
    console = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    with open(out) as f:
        return " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd), \
            json.load(f), console


def medians(data):
    """name -> benchmark entry (the median aggregate, else the single run)."""
    by = {}
    for b in data["benchmarks"]:
        name = b.get("run_name", b["name"])
        if b.get("aggregate_name") == "median" or (b.get("run_type") == "iteration" and name not in by):
            by[name] = b
    return by


def ns(b):
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
    return b["real_time"] * scale


def bar(path, labels, values, title, xlabel, targets=None, log=False):
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(labels) + 1.4))
    ax.barh(labels, values, color="#4878a8")
    if targets:
        for i, t in enumerate(targets):
            if t:
                ax.plot([t, t], [i - 0.4, i + 0.4], color="#c03030", linewidth=2)
    if log:
        ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:.3g}", va="center", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    command, data, console = run()
    m = medians(data)
    date = datetime.date.today().isoformat()
    stamp = f"{machine()}; `{command}`; {date}"
    os.makedirs(IMG, exist_ok=True)

    micro = [n for n in ["BM_TensorCopyBaseline", "BM_ViewSlice", "BM_ViewTranspose", "BM_ViewReshape",
                         "BM_ViewCropRgb", "BM_ViewCropNv12", "BM_ViewPlane", "BM_MapUnmapRead",
                         "BM_MapUnmapWrite", "BM_MakeWritableUnique", "BM_GateNoConversion",
                         "BM_RecordEvent", "BM_JsonlRecordEvent", "BM_WrapGstSample",
                         "BM_WrapGstSampleAndMap"] if n in m]
    bar(os.path.join(IMG, "bench-micro.png"), [n[3:] for n in micro], [ns(m[n]) for n in micro],
        "Micro figures (median ns per operation, lower is better)", "ns", log=True)

    paired = {}
    for name, b in m.items():
        if "ratio" in b and name.startswith("BM_Paired"):
            paired[name] = b["ratio"]
    goals = {"Nv12ToRgb": 1.0, "Preprocess": 0.5, "PipelineVsOpenCV": 1 / 0.95,
             "PipelineVsGstStock": 1 / 3}
    plabels, pvalues, ptargets = [], [], []
    for name, r in sorted(paired.items()):
        key = next((k for k in goals if k in name), None)
        plabels.append(name.replace("BM_Paired_", "").split("/iterations")[0])
        pvalues.append(1 / r)
        ptargets.append(1 / goals[key] if key else None)
    bar(os.path.join(IMG, "bench-ratios.png"), plabels, pvalues,
        "Speed against the baseline in the same run (x, higher is better; red: target)", "x",
        targets=ptargets)

    chain = [(n.split("/")[0].replace("BM_InPlaceChain_", ""), m[n]["peak_buffers"])
             for n in m if n.startswith("BM_InPlaceChain") and "peak_buffers" in m[n]]
    if chain:
        bar(os.path.join(IMG, "bench-inplace.png"), [c[0] for c in chain], [c[1] for c in chain],
            "10 in-place operations on 1000x1000 f32: 4 MB buffers alive at the peak", "buffers")

    allocs = next((b["allocs/frame"] for n, b in m.items() if "AllocsPerFrame" in n), None)
    fps = {n: b.get("items_per_second") for n, b in m.items() if n.startswith("BM_Pipeline_")
           and b.get("items_per_second")}
    ratio_lines = [l.strip() for l in console.splitlines()
                   if re.search(r"(x|ns|buffers|met\))", l) and l.startswith("  ")]

    lines = [BEGIN, "", f"Generated by `make bench-report` (scripts/bench_report.py): {stamp}.", ""]
    lines += ["![micro](img/bench-micro.png)", "", "![ratios](img/bench-ratios.png)", ""]
    if chain:
        lines += ["![in-place chain](img/bench-inplace.png)", ""]
    lines += ["| micro figure | median |", "|---|---|"]
    lines += [f"| {n[3:]} | {ns(m[n]):.1f} ns |" for n in micro]
    lines += ["", "| paired comparison | ours vs baseline |", "|---|---|"]
    lines += [f"| {l} | {v:.2f}x |" for l, v in zip(plabels, pvalues)]
    if fps:
        lines += ["", "| pipeline | frames/s |", "|---|---|"]
        lines += [f"| {n.replace('BM_Pipeline_', '').split('/')[0]} | {v:.1f} |" for n, v in sorted(fps.items())]
    if allocs is not None:
        lines += ["", f"Heap allocations per frame, graph in steady state: **{allocs:g}** (target 0)."]
    if chain:
        lines += ["", "In-place chain, buffers alive at the peak: " +
                  ", ".join(f"{c[0]} {c[1]:g}" for c in chain) + "."]
    lines += ["", "The benchmark's own summary of this run (goals are judged on the paired lines; "
              "unpaired ratios of separate benchmarks drift with the machine's load):", "", "```"]
    lines += ratio_lines + ["```", "", END]
    text = open(DOC).read()
    block = "\n".join(lines)
    if BEGIN in text:
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip() + "\n\n## Report\n\n" + block + "\n"
    with open(DOC, "w") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(DOC, ROOT)} and docs/img/bench-*.png ({stamp})")


if __name__ == "__main__":
    main()

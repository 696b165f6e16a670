#!/usr/bin/python3
"""Generates the ONNX models NeatTensor's tests and demo run (no model can be
downloaded at build time). Run with Debian's python3-onnx:

    /usr/bin/python3 models/make_models.py OUTPUT_DIR

detector.onnx: a YOLOv8-shaped detector (input images [1, 3, 640, 640] RGB in
0..1, output [1, 84, 8400]: cx, cy, w, h and 80 class scores for the anchors
of strides 8, 16 and 32) whose weights are set, not trained: it finds bright
objects on a dark background (videotestsrc's `ball`, a white square) and
reports them as class 0. For every anchor cell it measures, in a window
centred on the cell, the mass of bright pixels (brightness above one half),
their centroid (cx, cy) and a square box of the same area (w = h =
sqrt(2 * mass), exact for a white square). The class-0 score is the share
of the object's mass inside the window to the 8th power: 1 for a window that
holds the whole object, near 0 for one that cuts it. A level of stride s
uses windows of 3s (objects up to s pixels are always whole in one) and a
context window of 9s.

scale.onnx: y = 2 * x + 1 on [1, 3, 8, 8] (a minimal model for the
stage's tests). two_outputs.onnx: [1, 4] -> ([1, 4] x + 1, [1, 2, 2] reshaped x).
two_inputs.onnx: a [1, 4], b [1, 4] -> y = a + 2 * b (the input order matters).
cannot_import.onnx and cannot_run.onnx: graphs OpenCV DNN 4.6 cannot import
(a TopK node) or cannot run (a Mul that broadcasts a constant), for the
errors that name the node.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 12
SIZE = 640
CLASSES = 80


def const(name, array, inits):
    inits.append(numpy_helper.from_array(np.asarray(array, dtype=np.float32), name))
    return name


def level(stride, g, nodes, inits, tag):
    """Nodes for one anchor level; returns the name of its [1, 84, H*W] output."""
    cells = SIZE // stride
    k = 3 * stride  # window
    pad = (k - stride) // 2
    # mass, sum(x * b), sum(y * b) over the window, x and y from its origin
    w = np.zeros((3, 1, k, k), dtype=np.float32)
    w[0, 0] = 1.0
    w[1, 0] = np.tile(np.arange(k, dtype=np.float32) + 0.5, (k, 1))
    w[2, 0] = np.tile((np.arange(k, dtype=np.float32) + 0.5)[:, None], (1, k))
    m = f"{tag}_moments"
    nodes.append(helper.make_node(
        "Conv", [g, const(f"{tag}_w", w, inits)], [m],
        kernel_shape=[k, k], strides=[stride, stride], pads=[pad, pad, pad, pad]))
    # The context mass (a 9s window, centred on the cell, stride s) in two
    # cheap steps, exactly: the mass of each s x s cell, then the sum of the
    # 9 x 9 cells around each (zero outside the image, as a padded window).
    blocks = f"{tag}_blocks"
    nodes.append(helper.make_node(
        "Conv", [g, const(f"{tag}_bw", np.ones((1, 1, stride, stride), np.float32), inits)],
        [blocks], kernel_shape=[stride, stride], strides=[stride, stride]))
    ctx = f"{tag}_context"
    nodes.append(helper.make_node(
        "Conv", [blocks, const(f"{tag}_cw", np.ones((1, 1, 9, 9), np.float32), inits)], [ctx],
        kernel_shape=[9, 9], pads=[4, 4, 4, 4]))
    # split the moments with 1x1 convolutions (one channel each)
    names = []
    for i, part in enumerate(["mass", "sx", "sy"]):
        sel = np.zeros((1, 3, 1, 1), np.float32)
        sel[0, i] = 1.0
        n = f"{tag}_{part}"
        nodes.append(helper.make_node("Conv", [m, const(f"{tag}_sel{i}", sel, inits)], [n],
                                      kernel_shape=[1, 1]))
        names.append(n)
    mass, sx, sy = names
    safe = f"{tag}_mass_eps"
    nodes.append(helper.make_node("Add", [mass, const(f"{tag}_eps", [1e-6], inits)], [safe]))
    # window origins per cell, in model pixels
    origin = (np.arange(cells, dtype=np.float32) * stride - pad)
    ox = np.tile(origin, (cells, 1)).reshape(1, 1, cells, cells)
    oy = np.tile(origin[:, None], (1, cells)).reshape(1, 1, cells, cells)
    out = []
    for axis, s, o in (("x", sx, ox), ("y", sy, oy)):
        c = f"{tag}_c{axis}_local"
        nodes.append(helper.make_node("Div", [s, safe], [c]))
        c2 = f"{tag}_c{axis}"
        nodes.append(helper.make_node("Add", [c, const(f"{tag}_o{axis}", o, inits)], [c2]))
        out.append(c2)
    twice = f"{tag}_twice"
    nodes.append(helper.make_node("Mul", [mass, const(f"{tag}_two", [2.0], inits)], [twice]))
    side = f"{tag}_side"
    nodes.append(helper.make_node("Sqrt", [twice], [side]))
    # score: (mass / context mass) ^ 8
    ctx_safe = f"{tag}_ctx_eps"
    nodes.append(helper.make_node("Add", [ctx, const(f"{tag}_eps2", [1e-6], inits)], [ctx_safe]))
    r = f"{tag}_ratio"
    nodes.append(helper.make_node("Div", [mass, ctx_safe], [r]))
    for p in (2, 4, 8):
        nodes.append(helper.make_node("Mul", [r, r], [f"{tag}_r{p}"]))
        r = f"{tag}_r{p}"
    # 80 class channels: class 0 is the score, the others zero
    cls = np.zeros((CLASSES, 1, 1, 1), np.float32)
    cls[0] = 1.0
    scores = f"{tag}_scores"
    nodes.append(helper.make_node("Conv", [r, const(f"{tag}_cls", cls, inits)], [scores],
                                  kernel_shape=[1, 1]))
    cat = f"{tag}_cat"
    nodes.append(helper.make_node("Concat", [out[0], out[1], side, side, scores], [cat], axis=1))
    flat = f"{tag}_flat"
    shape = const(f"{tag}_shape", [1, 4 + CLASSES, cells * cells], inits)
    inits[-1] = numpy_helper.from_array(np.array([1, 4 + CLASSES, cells * cells], np.int64),
                                        shape)
    nodes.append(helper.make_node("Reshape", [cat, shape], [flat]))
    return flat


def detector(path):
    nodes, inits = [], []
    # brightness above one half: relu(mean(r, g, b) - 0.5)
    nodes.append(helper.make_node(
        "Conv", ["images", const("gray_w", np.full((1, 3, 1, 1), 1.0 / 3.0), inits),
                 const("gray_b", [-0.5], inits)], ["gray"], kernel_shape=[1, 1]))
    nodes.append(helper.make_node("Relu", ["gray"], ["bright"]))
    levels = [level(s, "bright", nodes, inits, f"p{s}") for s in (8, 16, 32)]
    nodes.append(helper.make_node("Concat", levels, ["output0"], axis=2))
    anchors = sum((SIZE // s) ** 2 for s in (8, 16, 32))
    graph = helper.make_graph(
        nodes, "neat_bright_object_detector",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 4 + CLASSES, anchors])],
        inits)
    save(graph, path)


def scale(path):
    inits = []
    nodes = [helper.make_node("Mul", ["x", const("two", [2.0], inits)], ["x2"]),
             helper.make_node("Add", ["x2", const("one", [1.0], inits)], ["y"])]
    graph = helper.make_graph(
        nodes, "neat_scale",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])], inits)
    save(graph, path)


def two_outputs(path):
    inits = []
    shape = "shape"
    inits.append(numpy_helper.from_array(np.array([1, 2, 2], np.int64), shape))
    nodes = [helper.make_node("Add", ["x", const("one", [1.0], inits)], ["plus_one"]),
             helper.make_node("Reshape", ["x", shape], ["reshaped"])]
    graph = helper.make_graph(
        nodes, "neat_two_outputs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("plus_one", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("reshaped", TensorProto.FLOAT, [1, 2, 2])], inits)
    save(graph, path)


def two_inputs(path):
    inits = []
    nodes = [helper.make_node("Mul", ["b", const("two", [2.0], inits)], ["b2"]),
             helper.make_node("Add", ["a", "b2"], ["y"])]
    graph = helper.make_graph(
        nodes, "neat_two_inputs",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    save(graph, path)


def cannot_import(path):
    """OpenCV DNN 4.6 has no TopK layer: the import fails at node head/topk."""
    inits = []
    k = numpy_helper.from_array(np.array([2], dtype=np.int64), "k")
    inits.append(k)
    nodes = [helper.make_node("Relu", ["images"], ["r"], name="stem/relu"),
             helper.make_node("TopK", ["r", "k"], ["values", "indices"], name="head/topk",
                              axis=3)]
    graph = helper.make_graph(
        nodes, "neat_cannot_import",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("values", TensorProto.FLOAT, [1, 3, 8, 2])], inits)
    save(graph, path)


def cannot_run(path):
    """Imports, but OpenCV DNN 4.6 cannot run node head/scale: a Mul by a
    constant that broadcasts ([1, 3, 8, 8] x [1, 1, 1, 8])."""
    inits = []
    nodes = [helper.make_node("Relu", ["images"], ["r"], name="stem/relu"),
             helper.make_node("Sigmoid", ["r"], ["s"], name="mid/sigmoid"),
             helper.make_node("Mul", ["s", "r"], ["m"], name="mid/mul"),
             helper.make_node("Mul", ["m", const("c", np.ones((1, 1, 1, 8)), inits)], ["y"],
                              name="head/scale")]
    graph = helper.make_graph(
        nodes, "neat_cannot_run",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])], inits)
    save(graph, path)


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="neat models/make_models.py")
    model.ir_version = 7
    onnx.checker.check_model(model)
    tmp = path + ".tmp"
    onnx.save(model, tmp)
    os.replace(tmp, path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_models.py OUTPUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    detector(os.path.join(out, "detector.onnx"))
    scale(os.path.join(out, "scale.onnx"))
    two_outputs(os.path.join(out, "two_outputs.onnx"))
    two_inputs(os.path.join(out, "two_inputs.onnx"))
    cannot_import(os.path.join(out, "cannot_import.onnx"))
    cannot_run(os.path.join(out, "cannot_run.onnx"))


if __name__ == "__main__":
    main()

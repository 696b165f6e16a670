#!/usr/bin/python3
"""Generates the TorchScript models NeatTensor's tests run on the libtorch
engine, with Debian's python3-torch:

    /usr/bin/python3 models/make_torch_models.py OUTPUT_DIR

detector.pt: detector.onnx (made first by make_models.py, in OUTPUT_DIR) as
TorchScript: the same graph with the same weights, run op by op by
OnnxGraph below (Conv, Relu, Add, Mul, Div, Sqrt, Concat, Reshape: the ops
make_models.py writes) and traced. Both engines give the same detections.

Each file carries neat.json (an extra file of the archive) with its input's
name and shape, since a TorchScript module does not declare them.

scale.pt: y = 2 * x + 1 on [1, 3, 8, 8], as scale.onnx. two_outputs.pt:
x [1, 3, 2, 2] -> (x + 1, x viewed as [1, 12]: the input itself, reshaped).
identity.pt: returns its input [1, 3, 4, 4] unchanged (the output is the
frame's own memory). no_meta.pt: scale.pt without neat.json (its input's
shape must be given). in_place.pt: adds 1 to its input in place and returns it
(a model that writes the frame it is handed).
"""
import json
import os
import sys
import warnings

import onnx
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper


class Scale(torch.nn.Module):
    def forward(self, x):
        return 2 * x + 1


class TwoOutputs(torch.nn.Module):
    def forward(self, x):
        return x + 1, x.reshape(1, 12)


class Identity(torch.nn.Module):
    def forward(self, x):
        return x


class InPlace(torch.nn.Module):
    def forward(self, x):
        return x.add_(1)


class OnnxGraph(torch.nn.Module):
    """Runs an ONNX graph of make_models.py's ops with torch, weights as they are."""

    def __init__(self, model):
        super().__init__()
        g = model.graph
        self.consts = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy())
                       for i in g.initializer}
        self.inputs = [i.name for i in g.input if i.name not in self.consts]
        self.outputs = [o.name for o in g.output]
        self.nodes = [(n.op_type, list(n.input), n.output[0],
                       {a.name: helper.get_attribute_value(a) for a in n.attribute})
                      for n in g.node]

    def forward(self, *xs):
        env = dict(self.consts)
        env.update(zip(self.inputs, xs))
        for op, ins, out, attrs in self.nodes:
            a = [env[i] for i in ins]
            if op == "Conv":
                pads = attrs.get("pads", [0, 0, 0, 0])
                if pads[0] != pads[2] or pads[1] != pads[3]:
                    raise ValueError("asymmetric Conv pads")
                env[out] = F.conv2d(a[0], a[1], a[2] if len(a) > 2 else None,
                                    stride=list(attrs.get("strides", [1, 1])),
                                    padding=[pads[0], pads[1]])
            elif op == "Relu":
                env[out] = torch.relu(a[0])
            elif op == "Add":
                env[out] = a[0] + a[1]
            elif op == "Mul":
                env[out] = a[0] * a[1]
            elif op == "Div":
                env[out] = a[0] / a[1]
            elif op == "Sqrt":
                env[out] = torch.sqrt(a[0])
            elif op == "Concat":
                env[out] = torch.cat(a, dim=attrs["axis"])
            elif op == "Reshape":
                env[out] = a[0].reshape([int(v) for v in a[1].tolist()])
            else:
                raise ValueError(f"op {op} is not one make_models.py writes")
        results = [env[o] for o in self.outputs]
        return results[0] if len(results) == 1 else tuple(results)


def from_onnx(onnx_path, path):
    model = onnx.load(onnx_path)
    (first,) = [i for i in model.graph.input
                if i.name not in {w.name for w in model.graph.initializer}]
    shape = tuple(d.dim_value for d in first.type.tensor_type.shape.dim)
    save(OnnxGraph(model), shape, path, name=first.name)


def save(module, shape, path, name="x"):
    with torch.no_grad(), warnings.catch_warnings():
        # A Reshape's target is a weight: a constant of the trace, as intended.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        traced = torch.jit.trace(module.eval(), torch.zeros(shape))
    meta = json.dumps({"inputs": [{"name": name, "shape": list(shape)}]})
    torch.jit.save(traced, path, _extra_files={"neat.json": meta})


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    from_onnx(os.path.join(out, "detector.onnx"), os.path.join(out, "detector.pt"))
    save(Scale(), (1, 3, 8, 8), os.path.join(out, "scale.pt"))
    save(TwoOutputs(), (1, 3, 2, 2), os.path.join(out, "two_outputs.pt"))
    save(Identity(), (1, 3, 4, 4), os.path.join(out, "identity.pt"))
    save(InPlace(), (1, 3, 4, 4), os.path.join(out, "in_place.pt"))
    torch.jit.save(torch.jit.trace(Scale().eval(), torch.zeros(1, 3, 8, 8)),
                   os.path.join(out, "no_meta.pt"))


if __name__ == "__main__":
    main()

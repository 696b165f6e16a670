#!/usr/bin/python3
"""Generates the TorchScript models NeatTensor's tests run on the libtorch
engine, with Debian's python3-torch:

    /usr/bin/python3 models/make_torch_models.py OUTPUT_DIR

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

import torch


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


def save(module, shape, path, name="x"):
    traced = torch.jit.trace(module.eval(), torch.zeros(shape))
    meta = json.dumps({"inputs": [{"name": name, "shape": list(shape)}]})
    torch.jit.save(traced, path, _extra_files={"neat.json": meta})


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    save(Scale(), (1, 3, 8, 8), os.path.join(out, "scale.pt"))
    save(TwoOutputs(), (1, 3, 2, 2), os.path.join(out, "two_outputs.pt"))
    save(Identity(), (1, 3, 4, 4), os.path.join(out, "identity.pt"))
    save(InPlace(), (1, 3, 4, 4), os.path.join(out, "in_place.pt"))
    torch.jit.save(torch.jit.trace(Scale().eval(), torch.zeros(1, 3, 8, 8)),
                   os.path.join(out, "no_meta.pt"))


if __name__ == "__main__":
    main()

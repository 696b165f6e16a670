#!/usr/bin/python3
"""Generates yolov8n, the timing model: a network with the YOLOv8n
architecture and deterministic weights, with Debian's python3-torch:

    /usr/bin/python3 models/make_yolov8n.py OUTPUT_DIR

Its detections mean nothing (the weights are drawn from a fixed seed, not
trained); what it has is the work of a real YOLOv8n: Conv-BN-SiLU blocks,
C2f, SPPF, the FPN/PAN neck and the decoupled head with DFL, 3.16 M
parameters, images [1, 3, 640, 640] -> [1, 84, 8400] (cx, cy, w, h in input
pixels, then 80 class scores), as Ultralytics lays it out. The class
branch's last bias starts where Ultralytics starts it (a prior of 5 objects
per image), so a frame has few candidates, as with a trained model.

yolov8n.pt: TorchScript, batch norm folded into the convolutions (as an
export does), weights channels-last (oneDNN's native layout on a CPU),
traced, and frozen by the engine at load; neat.json (an extra
file of the archive) carries its input's name and shape.

yolov8n.onnx: the same weights, exported with the ops OpenCV 4.6's importer
takes (opset 12; the C2f and DFL splits with constant sizes, the anchor
grid and strides as constants): the full graph, DFL decode included, so
both engines give the same [1, 84, 8400].
"""
import json
import math
import os
import sys
import warnings

import torch
from torch import nn

SIZE = 640
CLASSES = 80
REG_MAX = 16
STRIDES = (8, 16, 32)
ANCHORS = sum((SIZE // s) ** 2 for s in STRIDES)  # 8400


class Conv(nn.Module):
    """Conv2d (no bias) -> BatchNorm2d -> SiLU; fuse() folds the norm."""

    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)) if self.bn is not None else self.conv(x))

    def fuse(self):
        w, bn = self.conv.weight, self.bn
        scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        fused = nn.Conv2d(self.conv.in_channels, self.conv.out_channels, self.conv.kernel_size,
                          self.conv.stride, self.conv.padding, bias=True)
        fused.weight.data = w * scale.reshape(-1, 1, 1, 1)
        fused.bias.data = bn.bias - bn.running_mean * scale
        self.conv, self.bn = fused, None


class Bottleneck(nn.Module):
    def __init__(self, c1, c2, shortcut):
        super().__init__()
        self.cv1 = Conv(c1, c2, 3)
        self.cv2 = Conv(c2, c2, 3)
        self.add = shortcut and c1 == c2

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    def __init__(self, c1, c2, n, shortcut):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = Conv(c1, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).split((self.c, self.c), 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c1, c2, k=5):
        super().__init__()
        c = c1 // 2
        self.cv1 = Conv(c1, c, 1)
        self.cv2 = Conv(c * 4, c2, 1)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        y = [self.cv1(x)]
        for _ in range(3):
            y.append(self.m(y[-1]))
        return self.cv2(torch.cat(y, 1))


def anchor_grid():
    """Cell centres (in cells) and the stride of every anchor, level by level."""
    points, strides = [], []
    for s in STRIDES:
        n = SIZE // s
        ys, xs = torch.meshgrid(torch.arange(n) + 0.5, torch.arange(n) + 0.5, indexing="ij")
        points.append(torch.stack((xs, ys), 0).reshape(2, -1))
        strides.append(torch.full((1, n * n), float(s)))
    return torch.cat(points, 1).unsqueeze(0), torch.cat(strides, 1).unsqueeze(0)


class Detect(nn.Module):
    def __init__(self, ch):
        super().__init__()
        c2 = max(16, ch[0] // 4, REG_MAX * 4)
        c3 = max(ch[0], min(CLASSES, 100))
        self.box = nn.ModuleList(
            nn.Sequential(Conv(c, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * REG_MAX, 1))
            for c in ch)
        self.cls = nn.ModuleList(
            nn.Sequential(Conv(c, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, CLASSES, 1))
            for c in ch)
        self.dfl = nn.Conv2d(REG_MAX, 1, 1, bias=False).requires_grad_(False)
        self.dfl.weight.data[:] = torch.arange(REG_MAX, dtype=torch.float).view(1, REG_MAX, 1, 1)
        points, strides = anchor_grid()
        self.register_buffer("points", points)    # [1, 2, 8400]
        # As [1, 4, 8400]: OpenCV 4.6 multiplies equal shapes only.
        self.register_buffer("strides", strides.expand(1, 4, -1).contiguous())
        for seq, s in zip(self.cls, STRIDES):     # Ultralytics' class prior
            seq[-1].bias.data[:] = math.log(5 / CLASSES / (SIZE / s) ** 2)

    def forward(self, xs):
        # Constant shapes throughout: the exported graph computes none.
        anchors = ANCHORS
        box = torch.cat([b(x).reshape(1, 4 * REG_MAX, -1) for b, x in zip(self.box, xs)], 2)
        cls = torch.cat([c(x).reshape(1, CLASSES, -1) for c, x in zip(self.cls, xs)], 2)
        # DFL: the expected distance of each side over 16 bins.
        d = self.dfl(box.view(1, 4, REG_MAX, anchors).transpose(2, 1).softmax(1))
        lt, rb = d.view(1, 4, anchors).split((2, 2), 1)
        x1y1 = self.points - lt
        x2y2 = self.points + rb
        xywh = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * self.strides
        return torch.cat((xywh, cls.sigmoid()), 1)


class YoloV8n(nn.Module):
    def __init__(self):
        super().__init__()
        self.b0 = Conv(3, 16, 3, 2)
        self.b1 = Conv(16, 32, 3, 2)
        self.b2 = C2f(32, 32, 1, True)
        self.b3 = Conv(32, 64, 3, 2)
        self.b4 = C2f(64, 64, 2, True)
        self.b5 = Conv(64, 128, 3, 2)
        self.b6 = C2f(128, 128, 2, True)
        self.b7 = Conv(128, 256, 3, 2)
        self.b8 = C2f(256, 256, 1, True)
        self.b9 = SPPF(256, 256)
        self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
        self.h12 = C2f(384, 128, 1, False)
        self.h15 = C2f(192, 64, 1, False)
        self.h16 = Conv(64, 64, 3, 2)
        self.h18 = C2f(192, 128, 1, False)
        self.h19 = Conv(128, 128, 3, 2)
        self.h21 = C2f(384, 256, 1, False)
        self.detect = Detect((64, 128, 256))

    def forward(self, x):
        x = self.b2(self.b1(self.b0(x)))
        p3 = self.b4(self.b3(x))
        p4 = self.b6(self.b5(p3))
        p5 = self.b9(self.b8(self.b7(p4)))
        h12 = self.h12(torch.cat((self.up(p5), p4), 1))
        h15 = self.h15(torch.cat((self.up(h12), p3), 1))
        h18 = self.h18(torch.cat((self.h16(h15), h12), 1))
        h21 = self.h21(torch.cat((self.h19(h18), p5), 1))
        return self.detect([h15, h18, h21])


def make_model():
    torch.manual_seed(0)
    model = YoloV8n()
    with torch.no_grad():
        for m in model.modules():  # batch statistics as a trained network has them
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model.eval()
    for m in model.modules():
        if isinstance(m, Conv):
            m.fuse()
    return model, params


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(2)
    model, params = make_model()
    x = torch.zeros(1, 3, SIZE, SIZE)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.onnx.export(model, x, os.path.join(out, "yolov8n.onnx"), opset_version=12,
                          input_names=["images"], output_names=["output0"],
                          do_constant_folding=True)
        # Weights channels-last, as a CPU deployment exports them: oneDNN's
        # convolutions then take and give NHWC without reordering each layer
        # (about 13% faster here); the input stays NCHW.
        traced = torch.jit.trace(model.to(memory_format=torch.channels_last), x)
        meta = json.dumps({"inputs": [{"name": "images", "shape": [1, 3, SIZE, SIZE]}],
                           "parameters": params})
        torch.jit.save(traced, os.path.join(out, "yolov8n.pt"), _extra_files={"neat.json": meta})


if __name__ == "__main__":
    main()

"""docs/python.md: a graph from Python objects: frames pushed from numpy
(zero copy), a Python stage beside the built-in ones, an appsink read on
the main thread. CI runs it (ctest -R example.python)."""
import threading

import numpy as np

import neat

# [docs:graph]
images = [np.full((480, 640, 3), 10 * i, np.uint8) for i in range(8)]  # RGB frames


def brighten(t):
    """A prototype stage: a neat.Tensor in, a numpy array out (the RGB image
    the stage declares, wrapped without a copy)."""
    return np.minimum(np.asarray(t).astype(np.uint16) + 40, 255).astype(np.uint8)


src = neat.PushSource(neat.FrameSpec.image("RGB", 640, 480), capacity=2)
g = neat.Graph("prototype", policy="strict")
g.add_source("camera", src)
g.add_stage("brighten", brighten, accepts=neat.Accepts(formats=["RGB"]))
g.add_stage("small", neat.element("resize", size=(320, 240)))
g.add_sink("out", neat.AppSink(capacity=2))
g.chain("camera", "brighten", "small", "out")
print(g.explain())


def feed():
    with src:                                  # end of stream when the block ends
        for a in images:
            src.push(neat.from_numpy(a, format="RGB"))   # the graph reads a's bytes


g.start()
threading.Thread(target=feed).start()
means = [float(np.asarray(f).mean()) for f in g.appsink]
report = g.wait()
# [docs:end]

print(means)
assert means == [min(10 * i + 40, 255) for i in range(8)]
assert report["frames"]["balanced"]

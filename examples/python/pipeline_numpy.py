"""docs/python.md's worked example: a pipeline pulled into numpy without a
copy, its conversions traced, the audit read back. CI runs it
(ctest -R example.python)."""
import os
import tempfile

import numpy as np

import neat

trace = os.path.join(tempfile.mkdtemp(), "run.jsonl")

# [docs:pipeline]
# The camera's NV12 frames, letterboxed into the model's f32 CHW input.
g = neat.pipeline("default ! preprocess size=640x640 fit=letterbox ! appsink", frames=60)
print(g.explain())

with neat.trace_jsonl(trace):
    g.start()
    for frame in g.appsink:              # a neat.Tensor, f32 [3, 640, 640]
        x = np.asarray(frame)            # a view of the frame's bytes: no copy
        assert x.ctypes.data == frame.data_ptr
        score = float(x.mean())          # ... your model, your numpy code
    report = g.wait()

print(report["frames"], report["latency"]["appsink"])
# [docs:end]

# [docs:audit]
audit = neat.audit(trace)                # what `neat audit run.jsonl` prints
print(audit)
for row in audit.rows:
    print(row["edge"], row["stage"], row["kind"], row["reason"], row["bytes_per_frame"])
# [docs:end]

assert report["frames"]["balanced"] and report["frames"]["consumed"] == 60

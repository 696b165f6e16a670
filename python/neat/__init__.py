"""NeatTensor for Python: zero-copy tensors and frames, the copy policy and
its audit, and stage graphs.

    import numpy as np, neat

    g = neat.pipeline("default ! preprocess size=640x640 ! appsink", frames=30)
    with neat.trace_jsonl("run.jsonl"):
        g.start()
        for frame in g.appsink:          # neat.Tensor, f32 [3, 640, 640]
            a = np.asarray(frame)        # a read-only view: no copy
        g.wait()
    print(neat.audit("run.jsonl"))

Nothing here copies bytes unless its name says so (clone, contiguous,
make_writable, cpu), and those pass the copy gate like in C++. See
docs/python.md.
"""

from ._errors import (Cancelled, Error, FailedPrecondition, Internal, InvalidArgument,
                      OutOfRange, ResourceExhausted, Timeout, Unavailable, Unimplemented)
from ._neat import (Accepts, AppSink, AuditReport, Counters, Element, FrameSpec, Graph,
                    MetricsServer, PolicyScope, PushSource, Rule, Tensor, TraceSink, __version__, audit,
                    compose, copy_budget, counters, default_pipeline_text, effective_policy,
                    element, elements, empty, from_dlpack, from_numpy, gst, image, metrics_text,
                    on_torch_thread, pipeline, policy, record, serve_metrics, set_process_policy,
                    steady_state, torch_block_cache, trace_chrome, trace_jsonl, zeros)


def _frames(self, timeout=None):
    """Yields the sink's frames until the end of the stream; raises
    neat.Timeout when none comes within `timeout` seconds (None: waits)."""
    while True:
        try:
            yield self._next(timeout)
        except StopIteration:
            return


AppSink.frames = _frames


class FrameMeta(dict):
    """A frame's metadata: a dict whose keys are also attributes
    (``frame.meta.stream`` is ``frame.meta["stream"]``)."""
    __slots__ = ()

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"frame metadata has no {key!r} (it has: {', '.join(self)})") from None


def _with_meta_attributes(plain):
    return property(lambda self: FrameMeta(plain.fget(self)), doc=plain.__doc__)


Tensor.meta = _with_meta_attributes(Tensor.meta)

for _cls in (Accepts, AppSink, AuditReport, Counters, Element, FrameSpec, Graph, MetricsServer,
             PolicyScope,
             PushSource, Rule, Tensor, TraceSink):
    _cls.__module__ = "neat"
del _cls

__all__ = [
    "Accepts", "AppSink", "AuditReport", "Cancelled", "Counters", "Element", "Error",
    "FailedPrecondition", "FrameMeta", "FrameSpec", "Graph", "Internal", "InvalidArgument", "MetricsServer",
    "OutOfRange",
    "PolicyScope", "PushSource", "ResourceExhausted", "Rule", "Tensor", "Timeout", "TraceSink",
    "Unavailable", "Unimplemented", "audit", "compose", "copy_budget", "counters",
    "default_pipeline_text", "effective_policy", "element", "elements", "empty", "from_dlpack",
    "from_numpy", "gst", "image", "metrics_text", "on_torch_thread", "pipeline", "policy", "record",
    "serve_metrics", "set_process_policy", "steady_state", "torch_block_cache", "trace_chrome",
    "trace_jsonl", "zeros",
]

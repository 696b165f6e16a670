"""torch (Debian's python3-torch) and NeatTensor frames: a frame held alone
goes to torch zero-copy and writable; a frame shared with other holders
never becomes a writable alias behind their backs (DLPack 0.6 has no
read-only flag): torch.from_dlpack refuses it under Strict, with the fix,
and gets a copy of its own when the policy allows it (recorded)."""
import threading

import numpy as np
import pytest

import neat

torch = pytest.importorskip("torch")

SHARED = ("default frames=1 ! preprocess size=32x32 ! tee name=t ! appsink name=a "
          "t. ! appsink name=b")


def two_branches():
    g = neat.pipeline(SHARED)
    g.start()
    fa = next(iter(g.appsinks["a"]))
    fb = next(iter(g.appsinks["b"]))
    return g, fa, fb


def test_a_shared_frame_is_refused_with_the_fix_and_branch_b_never_changes():
    g, fa, fb = two_branches()
    before = np.asarray(fb).copy()
    with pytest.raises(neat.FailedPrecondition, match="shared with other holders") as e:
        torch.from_dlpack(fa)
    assert "make_writable()" in e.value.fix and "np.asarray(frame)" in e.value.fix
    assert "f32 [3, 32, 32]" in str(e.value)  # names the frame
    # Allowed with a trace: torch gets its own copy; the in-place op cannot reach b.
    with neat.policy("trace"):
        t = torch.from_dlpack(fa)
    t.add_(100.0)
    assert np.array_equal(np.asarray(fb), before)
    assert np.array_equal(np.asarray(fa), before)  # a's own frame is untouched too
    g.wait()


def test_numpy_reads_a_shared_frame_zero_copy_where_torch_is_refused():
    g, fa, fb = two_branches()
    counts = neat.counters()
    a = np.from_dlpack(fa)  # numpy asks no device and makes read-only arrays
    assert a.ctypes.data == fa.data_ptr and not a.flags.writeable
    with pytest.raises(ValueError):
        a[0, 0, 0] = 5.0
    assert neat.counters().since(counts).count == 0
    with pytest.raises(neat.FailedPrecondition):
        torch.from_dlpack(fa)  # asks the device first: may write, so the policy rules
    assert np.from_dlpack(fa).ctypes.data == fa.data_ptr  # and numpy's next look is a view again
    g.wait()


def test_make_writable_gives_torch_a_frame_of_its_own():
    g, fa, fb = two_branches()
    before = np.asarray(fb).copy()
    counts = neat.counters()
    mine = fa.make_writable()  # shared: one recorded copy
    del fa
    t = torch.from_dlpack(mine)  # held alone now: zero-copy
    assert t.data_ptr() == mine.data_ptr
    t.add_(100.0)
    assert np.array_equal(np.asarray(mine), before + 100.0)
    assert np.array_equal(np.asarray(fb), before)
    assert neat.counters().since(counts).count == 1  # the one copy asked for
    g.wait()


def test_a_frame_held_alone_is_zero_copy_and_writable_both_ways():
    t = neat.zeros([2, 3], "f32")
    x = torch.from_dlpack(t)
    assert x.data_ptr() == t.data_ptr
    x.add_(1.0)  # the user's own frame: theirs to write
    assert np.asarray(t).sum() == 6.0
    # numpy's views stay zero-copy and read-only
    frame = neat.zeros([2, 3], "f32")
    a = np.asarray(frame)
    assert a.ctypes.data == frame.data_ptr
    back = neat.from_dlpack(torch.arange(4.0))
    assert back.dtype == "f32" and not back.writable


def test_the_fixes_the_refusal_gives():
    g, fa, fb = two_branches()
    # [docs:torch_fixes]
    mine = torch.from_dlpack(fa.make_writable())  # a copy of its own (one, recorded); fa consumed
    view = np.asarray(fb)                         # a zero-copy, read-only look, no torch
    with neat.policy("trace"):                    # or accept the copy and have it traced
        theirs = torch.from_dlpack(fb)
    # [docs:end]
    mine.add_(1.0)
    theirs.add_(1.0)
    assert np.array_equal(np.asarray(fb), view)
    g.wait()


def test_torch_work_of_your_own_runs_on_the_models_thread():
    """Every libtorch model runs on one thread (one OpenMP team for the
    process); neat.on_torch_thread puts your own torch work there too."""
    here = threading.get_ident()
    first = neat.on_torch_thread(threading.get_ident)
    assert first != here
    assert neat.on_torch_thread(threading.get_ident) == first
    assert neat.on_torch_thread(lambda: int(torch.ones(4).sum())) == 4
    with pytest.raises(ValueError, match="not a model"):
        neat.on_torch_thread(lambda: (_ for _ in ()).throw(ValueError("not a model")))
    with pytest.raises(TypeError):
        neat.on_torch_thread(42)
    # A model's pool size is set on that thread (OpenMP's count is per thread).
    g = neat.pipeline("default frames=2 ! preprocess size=8x8 batch=true ! "
                      "infer model=models:scale backend=torch threads=1 ! appsink")
    g.start()
    assert neat.on_torch_thread(torch.get_num_threads) == 1
    g.wait()


def test_the_block_cache_keeps_torchs_blocks_between_forwards():
    g = neat.pipeline("default frames=3 ! preprocess size=640x640 fit=letterbox batch=true ! "
                      "infer model=models:detector backend=torch ! appsink")
    g.run()
    cache = neat.torch_block_cache()
    assert cache["installed"]
    assert cache["limit_bytes"] == 512 << 20
    assert 0 < cache["held_bytes"] <= cache["limit_bytes"]
    assert cache["reused"] > 0
    # python3-torch in the same process allocates through it too.
    reused = cache["reused"]
    torch.empty(1 << 20)  # 4 MiB, freed at once: held
    torch.empty(1 << 20)  # served from what was held
    assert neat.torch_block_cache()["reused"] > reused

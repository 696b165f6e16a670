"""torch (Debian's python3-torch) and NeatTensor frames: a frame held alone
goes to torch zero-copy and writable; a frame shared with other holders
never becomes a writable alias behind their backs (DLPack 0.6 has no
read-only flag): torch.from_dlpack refuses it under Strict, with the fix,
and gets a copy of its own when the policy allows it (recorded)."""
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

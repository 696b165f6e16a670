"""neat.Tensor and numpy: zero copy both ways (pointer identity), byte
strides, read-only flags honoured, lifetimes, the named copies."""
import ctypes
import gc

import numpy as np
import pytest

import neat
from conftest import address


def test_numpy_view_of_a_new_tensor_is_writable_and_zero_copy():
    t = neat.zeros([4, 5], "f32")
    a = np.asarray(t)
    assert a.shape == (4, 5) and a.dtype == np.float32 and a.strides == (20, 4)
    assert address(a) == t.data_ptr
    assert a.flags.writeable
    a[1, 2] = 7.0
    assert np.asarray(t)[1, 2] == 7.0  # the same bytes
    assert memoryview(t).readonly is False


def test_every_export_shares_one_mapping_and_the_tensor_stays_writable_after():
    t = neat.empty([8], "u8", zero=True)
    a, b = np.asarray(t), np.asarray(t)
    assert address(a) == address(b) and a.flags.writeable and b.flags.writeable
    assert t.writable
    del a, b
    assert t.writable  # the exports released the mapping
    w = t.make_writable()  # donated: nothing else holds it
    assert w.data_ptr == address(np.asarray(w))


def test_make_writable_while_an_array_holds_the_buffer_copies_and_counts_it():
    t = neat.zeros([1000], "u8")
    a = np.asarray(t)
    before = neat.counters()
    with neat.record() as rec:
        w = t.make_writable()
    spent = neat.counters().since(before)
    assert spent.count == 1 and spent.bytes == 1000
    assert address(np.asarray(w)) != address(a)
    (event,) = rec.events
    assert event["operation"] == "make_writable" and event["reason"] == "not_writable"
    # the call site is this file and line, not the binding's C++ source
    assert event["file"].endswith("test_tensor.py")
    with pytest.raises(neat.FailedPrecondition, match="consumed by make_writable"):
        t.shape


def test_a_refused_donation_names_its_fixes_in_python_words():
    t = neat.zeros([64], "u8")
    a = np.asarray(t)
    with neat.policy("strict"), pytest.raises(neat.FailedPrecondition) as err:
        t.make_writable(donation="must_donate")
    assert 'make_writable(donation="reuse_if_unique")' in err.value.fix
    assert 'with neat.policy("trace")' in err.value.fixes[-1]
    assert "Donation::" not in str(err.value) and "ScopedPolicy" not in str(err.value)
    del a


def test_strided_views_keep_their_byte_strides():
    t = neat.zeros([6, 8], "i16")
    v = t.transpose(0, 1)
    a = np.asarray(v)
    assert a.shape == (8, 6) and a.strides == (2, 16)
    assert address(a) == t.data_ptr
    s = t.slice(1, 1, 8, 3)
    b = np.asarray(s)
    assert b.strides == (16, 6) and address(b) == t.data_ptr + 2


def test_frames_from_a_shared_buffer_are_read_only_and_a_write_raises():
    t = neat.zeros([3, 3], "u8")
    shared = t.transpose(0, 1)  # a view: the buffer now has two holders
    a = np.asarray(shared)
    assert not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[0, 0] = 1
    with pytest.raises(TypeError, match="read-only"):
        memoryview(shared)[0, 0] = 1


def test_a_consumer_asking_for_contiguous_bytes_is_refused_a_strided_view():
    get_buffer = ctypes.pythonapi.PyObject_GetBuffer
    get_buffer.argtypes = [ctypes.py_object, ctypes.c_void_p, ctypes.c_int]
    release = ctypes.pythonapi.PyBuffer_Release
    release.argtypes = [ctypes.c_void_p]
    view = ctypes.create_string_buffer(256)  # room for a Py_buffer
    PyBUF_C_CONTIGUOUS = 0x0020 | 0x0010 | 0x0008  # with PyBUF_STRIDES | PyBUF_ND
    strided = neat.zeros([4, 6], "u8").transpose(0, 1)
    with pytest.raises(BufferError, match="contiguous.*t.contiguous"):
        get_buffer(strided, view, PyBUF_C_CONTIGUOUS)
    packed = neat.zeros([4, 6], "u8")
    assert get_buffer(packed, view, PyBUF_C_CONTIGUOUS) == 0
    release(view)


def test_planar_frames_expose_their_planes(nv12_frame):
    f = nv12_frame
    assert f.format == "NV12" and f.plane_roles == ["Y", "UV"]
    y, uv = np.asarray(f.plane("Y")), np.asarray(f.plane("UV"))
    assert y.shape == (48, 64) and y.strides == (128, 1)
    assert uv.shape == (24, 32, 2) and uv.strides == (128, 2, 1)
    assert address(y) == f.data_ptr
    assert address(uv) == f.data_ptr + 48 * 128
    assert set(f.planes()) == {"Y", "UV"}
    with pytest.raises(BufferError, match=r'planar NV12 frame.*plane\("Y"\)'):
        memoryview(f)
    with pytest.raises(BufferError, match="planar"):
        np.asarray(f)  # never numpy's silent object array
    with pytest.raises(neat.InvalidArgument, match="no plane with role U"):
        f.plane("U")


def test_from_numpy_wraps_without_a_copy_both_ways():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    before = neat.counters()
    t = neat.from_numpy(a)
    assert neat.counters().since(before).count == 0
    assert t.data_ptr == address(a) and t.shape == (3, 4) and t.strides == (16, 4)
    assert t.writable and t.storage == "external"
    assert address(np.asarray(t)) == address(a)
    np.asarray(t)[0, 0] = 42
    assert a[0, 0] == 42  # shares the bytes both ways, like torch.from_numpy


def test_from_numpy_of_a_read_only_array_is_read_only():
    a = np.zeros((2, 2), np.uint8)
    a.flags.writeable = False
    t = neat.from_numpy(a)
    assert not t.writable
    assert not np.asarray(t).flags.writeable
    w = t.make_writable()  # a copy-on-write copy, never the caller's bytes
    assert w.data_ptr != address(a)


def test_from_numpy_keeps_negative_and_odd_strides():
    a = np.arange(20, dtype=np.int32).reshape(4, 5)[::-1, ::2]
    t = neat.from_numpy(a)
    assert t.strides == a.strides
    assert np.array_equal(np.asarray(t), a)
    assert address(np.asarray(t)) == address(a)


def test_from_numpy_as_an_image():
    a = np.zeros((48, 64, 3), np.uint8)
    img = neat.from_numpy(a, format="RGB")
    assert img.format == "RGB" and img.width == 64 and img.height == 48
    assert img.data_ptr == address(a)


def test_dlpack_both_ways_is_zero_copy():
    t = neat.zeros([4, 5], "f32")
    a = np.from_dlpack(t)
    assert address(a) == t.data_ptr and a.shape == (4, 5)
    assert not a.flags.writeable  # numpy 1.24's DLPack import is read-only
    src = np.arange(6, dtype=np.int64)
    u = neat.from_dlpack(src)
    assert u.data_ptr == address(src) and u.dtype == "i64" and not u.writable
    assert t.__dlpack_device__() == (1, 0)


def test_dlpack_of_a_planar_frame_names_the_planes(nv12_frame):
    with pytest.raises(neat.Error, match=r'plane\("Y"\)'):
        nv12_frame.__dlpack__()
    # A plane shares its frame's bytes. numpy (which asks no device and makes
    # read-only arrays) reads it zero-copy through the buffer protocol and
    # through DLPack alike.
    y = np.asarray(nv12_frame.plane("Y"))
    assert y.strides == (128, 1)
    counts = neat.counters()
    d = np.from_dlpack(nv12_frame.plane("Y"))
    assert address(d) == address(y) and not d.flags.writeable
    assert neat.counters().since(counts).count == 0


def test_a_consumer_that_asks_the_device_first_may_write_so_the_policy_rules(nv12_frame):
    # What torch, cupy and jax do: __dlpack_device__(), then __dlpack__().
    class Framework:
        def __init__(self, t):
            self.t = t

        def take(self):
            assert self.t.__dlpack_device__() == (1, 0)
            return self.t.__dlpack__()

    plane = nv12_frame.plane("Y")
    with pytest.raises(neat.FailedPrecondition, match="shared with other holders") as e:
        Framework(plane).take()
    assert "np.asarray(frame)" in e.value.fix
    counts = neat.counters()
    with neat.policy("trace"):
        Framework(plane).take()
    assert neat.counters().since(counts).count == 1
    # The device question is taken by one export only: a bare call after it
    # is numpy's again.
    Framework(plane).t.__dlpack__()


def test_the_array_outlives_the_tensor():
    t = neat.zeros([1 << 20], "u8")
    a = np.asarray(t)
    a[:] = 3
    del t
    gc.collect()
    assert a.sum() == 3 << 20  # the storage lives as long as the array


def test_views_never_copy():
    t = neat.zeros([4, 6, 3], "u8")
    before = neat.counters()
    views = [t.transpose(0, 1), t.narrow(0, 1, 2), t.reshape([24, 3]), t.unsqueeze(0),
             t.permute([2, 0, 1]), t.expand([4, 6, 3]), t.reinterpret("i8"),
             t.as_image("RGB").crop(2, 2, 2, 2)]
    assert neat.counters().since(before).count == 0
    assert all(v.buffer_id == t.buffer_id for v in views)


def test_named_copies_pass_the_gate_under_strict():
    t = neat.zeros([6, 8], "u8").transpose(0, 1)
    with neat.policy("strict"):
        before = neat.counters()
        c = t.contiguous()
        k = t.clone()
        same = c.contiguous()
    spent = neat.counters().since(before)
    assert spent.count == 2 and spent.bytes == 2 * 48
    assert same.data_ptr == c.data_ptr
    assert k.buffer_id != t.buffer_id


def test_must_donate_of_a_shared_buffer_is_refused_under_strict():
    t = neat.zeros([16], "u8")
    keep = t.reshape([4, 4])  # a second holder
    with neat.policy("strict"):
        with pytest.raises(neat.FailedPrecondition) as err:
            t.make_writable(donation="must_donate")
    assert "must_donate" in str(err.value) or "donat" in str(err.value)
    del keep


def test_repr_len_iter():
    t = neat.zeros([3, 4], "f32")
    r = repr(t)
    for part in ("f32", "[3, 4]", "strides [16, 4]", "cpu:0", "heap", "writable"):
        assert part in r
    f = neat.image("NV12", 32, 16)
    assert "NV12" in repr(f) and "UV" in repr(f)
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3 and rows[1].shape == (4,) and rows[1].data_ptr == t.data_ptr + 16


def test_compose_planes_from_numpy_without_a_copy():
    y = np.zeros((16, 32), np.uint8)
    uv = np.zeros((8, 16, 2), np.uint8)
    f = neat.compose("NV12", 32, 16, [y, uv])
    assert f.plane_roles == ["Y", "UV"]
    assert f.plane("Y").data_ptr == address(y)
    assert f.plane("UV").data_ptr == address(uv)


@pytest.mark.parametrize("call, error", [
    (lambda: neat.zeros([2], "f128"), neat.InvalidArgument),
    (lambda: neat.zeros([1] * 9), neat.InvalidArgument),
    (lambda: neat.zeros([2, 3]).reshape([1] * 9), neat.InvalidArgument),
    (lambda: neat.image("RGB", 4, 4, layout="diagonal"), neat.InvalidArgument),
    (lambda: neat.zeros([-1], "u8"), neat.Error),
    (lambda: neat.image("XYZ", 4, 4), neat.InvalidArgument),
    (lambda: neat.image("NV12", -4, 4), neat.InvalidArgument),
    (lambda: neat.from_numpy(object()), neat.InvalidArgument),
    (lambda: neat.from_numpy(np.zeros(3, np.uint64)), neat.InvalidArgument),
    (lambda: neat.from_numpy(np.zeros(3, ">f4")), neat.InvalidArgument),
    (lambda: neat.from_dlpack(42), neat.InvalidArgument),
    (lambda: neat.compose("RGB", 4, 4, []), neat.InvalidArgument),
    (lambda: neat.compose("NV12", 4, 4, [np.zeros((4, 4), np.uint8)]), neat.InvalidArgument),
    (lambda: neat.compose("NV12", 4, 4, [np.zeros((4, 4), np.float32),
                                         np.zeros((2, 2, 2), np.uint8)]), neat.InvalidArgument),
    (lambda: neat.zeros([2, 3]).reshape([4]), neat.Error),
    (lambda: neat.zeros([2, 3]).transpose(0, 5), neat.Error),
    (lambda: neat.zeros([2, 3]).slice(0, 1, 9), neat.Error),
    (lambda: neat.zeros([2, 3]).reinterpret("nope"), neat.InvalidArgument),
    (lambda: neat.zeros([2, 3]).clone(policy="lenient"), neat.InvalidArgument),
    (lambda: neat.zeros([2, 3]).make_writable(donation="maybe"), neat.InvalidArgument),
    (lambda: neat.zeros([2, 3]).as_image("RGB"), neat.InvalidArgument),
    (lambda: neat.zeros([2, 3]).with_colorimetry("bt999"), neat.InvalidArgument),
    (lambda: neat.zeros([2, 3]).__dlpack__(stream=1), neat.InvalidArgument),
    (lambda: len(neat.zeros([])), TypeError),
])
def test_bad_input_raises_a_typed_error(call, error):
    with pytest.raises(error):
        call()


def test_error_classes_carry_code_message_and_fix():
    assert issubclass(neat.InvalidArgument, ValueError)
    assert issubclass(neat.OutOfRange, IndexError)
    assert issubclass(neat.Unimplemented, NotImplementedError)
    assert issubclass(neat.Timeout, TimeoutError)
    for code, cls in [("invalid_argument", neat.InvalidArgument),
                      ("out_of_range", neat.OutOfRange),
                      ("failed_precondition", neat.FailedPrecondition),
                      ("unimplemented", neat.Unimplemented),
                      ("resource_exhausted", neat.ResourceExhausted),
                      ("internal", neat.Internal), ("unavailable", neat.Unavailable),
                      ("cancelled", neat.Cancelled)]:
        assert neat._errors._BY_CODE[code] is cls
    # Real errors from the library: the code, the message and the fix as data.
    with pytest.raises(neat.FailedPrecondition) as err:
        neat.zeros([2, 3], "u8").plane("UV")
    assert err.value.code == "failed_precondition" and "have planes" in err.value.message
    with neat.policy("strict"), pytest.raises(neat.FailedPrecondition) as err:
        neat.pipeline("default frames=1 ! yolo ! appsink").build()
    assert err.value.code == "failed_precondition" and "yolo" in err.value.message
    # (a refusal's fix as data: test_graph.py's strict edge test)


def test_helpers_of_tests_and_benchmarks_are_not_in_the_installed_module():
    assert not [n for n in dir(neat._neat) if n.startswith("_r")], dir(neat._neat)


def test_a_bf16_tensor_says_how_to_see_its_bits():
    t = neat.zeros([2], "bf16")
    with pytest.raises(BufferError, match='reinterpret\\("u16"\\)'):
        memoryview(t)
    assert np.asarray(t.reinterpret("u16")).dtype == np.uint16


def test_numpy_from_dlpack_of_a_planar_frame_names_the_planes(nv12_frame):
    with pytest.raises(neat.FailedPrecondition) as err:
        np.from_dlpack(nv12_frame)
    assert err.value.fix == 'export it plane by plane: frame.plane("Y"), frame.plane("UV")'
    assert err.value.fix in str(err.value) and err.value.where == "export_dlpack"
    assert "export_dlpack_planes" not in str(err.value)

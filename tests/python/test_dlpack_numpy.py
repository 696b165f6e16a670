"""numpy's from_dlpack against NeatTensor: exports consumed without a copy,
numpy arrays imported without a copy, and the round trip numpy -> NeatTensor
-> numpy landing on the same memory. Run with Debian's /usr/bin/python3."""
import gc
import sys
import unittest

import numpy as np

import neat_dlpack_py as neat


class Capsule:
    """The DLPack protocol object numpy.from_dlpack expects."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def address(a):
    return a.__array_interface__["data"][0]


class NumpyConsumesNeat(unittest.TestCase):
    def test_dense_export_is_zero_copy(self):
        cap, (addr,) = neat.make("f32")
        a = np.from_dlpack(Capsule(cap))
        self.assertEqual(a.shape, (4, 5))
        self.assertEqual(a.dtype, np.float32)
        self.assertEqual(address(a), addr)
        self.assertTrue(np.array_equal(a, np.arange(20, dtype=np.float32).reshape(4, 5)))
        del a, cap
        gc.collect()
        self.assertEqual(neat.live(), 0)

    def test_transposed_view_keeps_its_strides(self):
        cap, (addr,) = neat.make("f32t")
        a = np.from_dlpack(Capsule(cap))
        self.assertEqual(a.shape, (5, 4))
        self.assertEqual(a.strides, (4, 20))
        self.assertEqual(address(a), addr)
        self.assertEqual(a[3, 2], 13.0)

    def test_nv12_exports_one_array_per_plane(self):
        caps, addrs = neat.make("nv12")
        y = np.from_dlpack(Capsule(caps[0]))
        uv = np.from_dlpack(Capsule(caps[1]))
        self.assertEqual(y.shape, (6, 10))
        self.assertEqual(y.strides, (16, 1))
        self.assertEqual(uv.shape, (3, 5, 2))
        self.assertEqual([address(y), address(uv)], addrs)


class NeatConsumesNumpy(unittest.TestCase):
    def tearDown(self):
        neat.drop()
        gc.collect()

    def test_round_trip_lands_on_the_same_memory(self):
        a = np.arange(12, dtype=np.int32).reshape(3, 4)
        addr, shape, strides, again = neat.consume(a.__dlpack__())
        self.assertEqual(addr, address(a))
        self.assertEqual(shape, [3, 4])
        self.assertEqual(strides, [16, 4])
        b = np.from_dlpack(Capsule(again))
        self.assertEqual(address(b), address(a))
        a[1, 2] = 42
        self.assertEqual(b[1, 2], 42)  # one memory, no copy

    def test_negative_strides_and_offsets(self):
        base = np.arange(20, dtype=np.float64).reshape(4, 5)
        v = base[::-1, 1:]
        addr, shape, strides, again = neat.consume(v.__dlpack__())
        self.assertEqual(shape, [4, 4])
        self.assertEqual(strides, [-40, 8])
        self.assertEqual(addr, address(v))
        b = np.from_dlpack(Capsule(again))
        self.assertTrue(np.array_equal(b, v))

    def test_zero_size(self):
        z = np.zeros((0, 3), dtype=np.uint8)
        _, shape, _, again = neat.consume(z.__dlpack__())
        self.assertEqual(shape, [0, 3])
        self.assertEqual(np.from_dlpack(Capsule(again)).shape, (0, 3))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

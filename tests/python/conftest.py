"""Shared fixtures of the neat pytest suite (run by CTest: `ctest -L python`).
The package comes from the build tree (PYTHONPATH=<build>/python, set by
tests/CMakeLists.txt); NEAT_CLI points at the `neat` program."""
import gc
import os

import numpy as np
import pytest

import neat


@pytest.fixture(autouse=True)
def _collect():
    """Each test starts and ends with no garbage holding tensors."""
    gc.collect()
    yield
    gc.collect()


@pytest.fixture
def neat_cli():
    path = os.environ.get("NEAT_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("NEAT_CLI not set (run through ctest)")
    return path


def address(a):
    """Where a numpy array's element 0 lives."""
    return a.__array_interface__["data"][0]


@pytest.fixture
def nv12_frame():
    """An NV12 frame over numpy planes with padded rows: Y 48x64 and UV
    24x32x2, both 128 bytes per row, in one buffer (no copy)."""
    buf = np.zeros((72, 128), np.uint8)
    buf[:48, :64] = np.arange(64, dtype=np.uint8)[None, :]
    return neat.compose("NV12", 64, 48, [buf[:48, :64], buf[48:, :64].reshape(24, 32, 2)])

"""Run by run_consumer.cmake with PYTHONPATH set to the installed package
only: imports it from there (not the build tree) and views a tensor in numpy."""
import sys

import numpy

import neat

prefix = sys.argv[1]
assert neat.__file__.startswith(prefix), f"imported {neat.__file__}, not from {prefix}"
t = neat.zeros([2, 3], "f32")
a = numpy.asarray(t)
assert a.ctypes.data == t.data_ptr and a.flags.writeable
print("installed package ok:", neat.__file__, repr(t))

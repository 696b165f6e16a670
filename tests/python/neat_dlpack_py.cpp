// A small Python extension for the numpy DLPack tests: it exports
// NeatTensors as "dltensor" capsules for numpy.from_dlpack, and imports the
// capsules numpy's __dlpack__ produces. Built only for the plain (not
// sanitized) test build; run by tests/storage/dlpack_numpy_test.cpp with
// Debian's /usr/bin/python3.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlpack/dlpack.h>

#include <cstring>
#include <neat/neat.hpp>
#include <string>
#include <vector>

namespace {

std::vector<neat::NeatTensor>& held() {
  static std::vector<neat::NeatTensor> v;
  return v;
}

void capsule_destructor(PyObject* capsule) {
  // Unconsumed capsules still own their tensor (the DLPack protocol).
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    m->deleter(m);
  }
}

PyObject* capsule_of(DLManagedTensor* m) {
  return PyCapsule_New(m, "dltensor", capsule_destructor);
}

PyObject* error(const neat::Error& e) {
  PyErr_SetString(PyExc_RuntimeError, e.to_string().c_str());
  return nullptr;
}

// make(kind) -> (capsule or [capsules], [addresses])
PyObject* make(PyObject*, PyObject* args) {
  const char* kind = nullptr;
  if (!PyArg_ParseTuple(args, "s", &kind)) return nullptr;
  const std::string k(kind);
  if (k == "f32" || k == "f32t") {
    auto t = neat::NeatTensor::allocate(neat::DType::F32, neat::Dims{4, 5});
    if (!t.ok()) return error(t.error());
    auto w = std::move(*t).make_writable();
    if (!w.ok()) return error(w.error());
    {
      auto m = w->map(neat::MapMode::Write);
      float* p = *m->data_ptr<float>();
      for (int i = 0; i < 20; ++i)
        p[i] = static_cast<float>(i);
    }
    neat::NeatTensor out = std::move(*w);
    if (k == "f32t") out = *out.transpose(0, 1);
    const void* addr = out.map()->data();
    auto m = neat::export_dlpack(out);
    if (!m.ok()) return error(m.error());
    return Py_BuildValue("(N[K])", capsule_of(*m), reinterpret_cast<unsigned long long>(addr));
  }
  if (k == "nv12") {
    auto f =
        neat::NeatTensor::allocate_image(neat::PixelFormat::NV12, 10, 6, {.row_alignment = 16});
    if (!f.ok()) return error(f.error());
    auto planes = neat::export_dlpack_planes(*f);
    if (!planes.ok()) return error(planes.error());
    auto map = f->map();
    PyObject* caps = PyList_New(0);
    PyObject* addrs = PyList_New(0);
    for (std::size_t i = 0; i < planes->size(); ++i) {
      PyObject* c = capsule_of((*planes)[i]);
      PyList_Append(caps, c);
      Py_DECREF(c);
      const auto role = f->plane_layout(static_cast<int>(i)).role;
      PyObject* a =
          PyLong_FromUnsignedLongLong(reinterpret_cast<unsigned long long>(*map->plane_data(role)));
      PyList_Append(addrs, a);
      Py_DECREF(a);
    }
    return Py_BuildValue("(NN)", caps, addrs);
  }
  PyErr_SetString(PyExc_ValueError, "unknown kind");
  return nullptr;
}

// consume(capsule) -> (address of element 0, shape, byte strides, capsule re-export)
PyObject* consume(PyObject*, PyObject* args) {
  PyObject* capsule = nullptr;
  if (!PyArg_ParseTuple(args, "O", &capsule)) return nullptr;
  if (!PyCapsule_IsValid(capsule, "dltensor")) {
    PyErr_SetString(PyExc_ValueError, "not an unconsumed dltensor capsule");
    return nullptr;
  }
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  PyCapsule_SetName(capsule, "used_dltensor");  // we own it now
  auto t = neat::wrap_dlpack(m);
  if (!t.ok()) return error(t.error());
  const void* addr = t->map()->data();
  PyObject* shape = PyList_New(0);
  PyObject* strides = PyList_New(0);
  for (int d = 0; d < t->rank(); ++d) {
    PyObject* s = PyLong_FromLongLong(t->shape()[d]);
    PyList_Append(shape, s);
    Py_DECREF(s);
    PyObject* st = PyLong_FromLongLong(t->strides()[d]);
    PyList_Append(strides, st);
    Py_DECREF(st);
  }
  auto again = neat::export_dlpack(*t, {.read_only_consumer = true});
  if (!again.ok()) return error(again.error());
  held().push_back(std::move(*t));
  return Py_BuildValue("(KNNN)", reinterpret_cast<unsigned long long>(addr), shape, strides,
                       capsule_of(*again));
}

PyObject* drop(PyObject*, PyObject*) {
  held().clear();
  Py_RETURN_NONE;
}

PyObject* live(PyObject*, PyObject*) {
  return PyLong_FromLongLong(neat::dlpack_live_exports());
}

PyMethodDef methods[] = {
    {"make", make, METH_VARARGS, "export a NeatTensor"},
    {"consume", consume, METH_VARARGS, "import a dltensor capsule"},
    {"drop", drop, METH_NOARGS, "release imported tensors"},
    {"live", live, METH_NOARGS, "live DLPack exports"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT,
                      "neat_dlpack_py",
                      nullptr,
                      -1,
                      methods,
                      nullptr,
                      nullptr,
                      nullptr,
                      nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_neat_dlpack_py() {
  return PyModule_Create(&module);
}

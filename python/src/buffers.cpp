// The bytes between neat.Tensor and Python's other array libraries, without
// a copy: the buffer protocol (one shared mapping per tensor, read-only
// unless the tensor is writable and held alone), DLPack capsules both ways,
// and wrapping any buffer (a numpy array) as a tensor that keeps it alive.
#include <dlpack/dlpack.h>

#include <algorithm>
#include <vector>

#include "common.hpp"

namespace neatpy {

using neat::DType;
using neat::NeatTensor;

namespace {

// ---- dtype <-> buffer format -----------------------------------------------------

const char* buffer_format(DType d) {
  switch (d) {
    case DType::U8:
      return "B";
    case DType::I8:
      return "b";
    case DType::U16:
      return "H";
    case DType::I16:
      return "h";
    case DType::U32:
      return "I";
    case DType::I32:
      return "i";
    case DType::I64:
      return "q";
    case DType::F16:
      return "e";
    case DType::F32:
      return "f";
    case DType::F64:
      return "d";
    case DType::Bool:
      return "?";
    case DType::BF16:
      return nullptr;
  }
  return nullptr;
}

std::optional<DType> dtype_of_format(std::string_view f, Py_ssize_t itemsize) {
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f.remove_prefix(1);
  if (f.size() != 1) return std::nullopt;
  switch (f[0]) {
    case 'B':
      return DType::U8;
    case 'b':
      return DType::I8;
    case 'H':
      return DType::U16;
    case 'h':
      return DType::I16;
    case 'I':
      return DType::U32;
    case 'i':
      return DType::I32;
    case 'l':
    case 'q':
      return itemsize == 8 ? std::optional(DType::I64) : std::nullopt;
    case 'e':
      return DType::F16;
    case 'f':
      return DType::F32;
    case 'd':
      return DType::F64;
    case '?':
      return DType::Bool;
    default:
      return std::nullopt;
  }
}

PyTensor& self_of(PyObject* obj) {
  return py::handle(obj).cast<PyTensor&>();
}

// ---- the buffer protocol -----------------------------------------------------------

int buffer_error(const std::string& message) {
  PyErr_SetString(PyExc_BufferError, message.c_str());
  return -1;
}

std::string why_read_only(const NeatTensor& t) {
  if (t.is_broadcast()) return "it is a broadcast (stride 0) view";
  if (t.storage()->read_only()) return "its storage (" + t.storage()->describe() + ") is read-only";
  return "its buffer is shared (a graph's frame, a view, a copy of the handle) or it was not "
         "made writable";
}

}  // namespace

int tensor_getbuffer(PyObject* obj, Py_buffer* view, int flags) {
  try {
    PyTensor& self = self_of(obj);
    if (self.consumed || !self.tensor.defined())
      return buffer_error("neat.Tensor: no buffer: the tensor was consumed by make_writable()");
    NeatTensor& t = self.tensor;
    if (t.is_composite()) {
      return buffer_error(
          "neat.Tensor: " + t.to_string() + " is a planar " +
          std::string(neat::to_string(t.pixel_format())) +
          " frame with no single array; take its planes: frame.plane(\"Y\"), frame.planes()");
    }
    if (t.device().type != neat::DeviceType::Cpu) {
      return buffer_error("neat.Tensor: " + t.to_string() + " lives on " +
                          neat::to_string(t.device()) +
                          "; t.cpu() brings it to host memory (a transfer, recorded)");
    }
    const char* format = buffer_format(t.dtype());
    if (format == nullptr) {
      return buffer_error("neat.Tensor: numpy has no bf16; t.reinterpret(\"u16\") gives its bits");
    }
    if (t.rank() > 8) return buffer_error("neat.Tensor: rank > 8");
    if (self.exports == 0) {
      const bool writable = t.is_writable();
      auto m = t.map(writable ? neat::MapMode::Write : neat::MapMode::Read);
      if (!m.ok()) return buffer_error(m.error().message(neat::Spelling::Python));
      self.export_map.emplace(std::move(*m));
      for (int i = 0; i < t.rank(); ++i) {
        self.shape[i] = static_cast<Py_ssize_t>(t.shape()[i]);
        self.strides[i] = static_cast<Py_ssize_t>(t.strides()[i]);
      }
    }
    const bool writable = self.export_map->writable();
    if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && !writable) {
      if (self.exports == 0) self.export_map.reset();
      return buffer_error("neat.Tensor: " + t.to_string() + " is read-only: " + why_read_only(t) +
                          "; t.make_writable() gives a writable tensor (it copies only when the "
                          "buffer is shared)");
    }
    // Without strides, or asking for a contiguous layout, the consumer needs
    // packed row-major bytes (Fortran order only where it is the same: rank <= 1).
    const bool wants_c = (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS ||
                         (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS ||
                         (flags & PyBUF_STRIDES) != PyBUF_STRIDES;
    const bool wants_f = (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS;
    if (((wants_c || wants_f) && !t.is_contiguous()) || (wants_f && t.rank() > 1)) {
      if (self.exports == 0) self.export_map.reset();
      return buffer_error("neat.Tensor: " + t.to_string() +
                          " is strided and the consumer asked for a contiguous buffer; "
                          "t.contiguous() packs it (a recorded copy)");
    }
    view->obj = Py_NewRef(obj);
    view->buf = const_cast<std::byte*>(self.export_map->data());
    view->len = static_cast<Py_ssize_t>(t.numel() * neat::item_size(t.dtype()));
    view->readonly = writable ? 0 : 1;
    view->itemsize = static_cast<Py_ssize_t>(neat::item_size(t.dtype()));
    view->format = (flags & PyBUF_FORMAT) == PyBUF_FORMAT ? const_cast<char*>(format) : nullptr;
    view->ndim = t.rank();
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? self.shape : nullptr;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? self.strides : nullptr;
    view->suboffsets = nullptr;
    view->internal = nullptr;
    ++self.exports;
    return 0;
  } catch (const std::exception& e) {
    return buffer_error(std::string("neat.Tensor: ") + e.what());
  }
}

void tensor_releasebuffer(PyObject* obj, Py_buffer*) {
  PyTensor& self = self_of(obj);
  if (--self.exports == 0) self.export_map.reset();
}

// ---- DLPack --------------------------------------------------------------------------

namespace {

void dlpack_capsule_destructor(PyObject* capsule) {
  // A capsule nobody consumed still owns its tensor (the DLPack protocol).
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (m != nullptr && m->deleter != nullptr) m->deleter(m);
  }
}

}  // namespace

py::object dlpack_capsule(const NeatTensor& t, const py::object& stream, bool may_write) {
  if (!stream.is_none()) {
    raise(neat::invalid_argument("__dlpack__: stream must be None for CPU tensors, not " +
                                 std::string(py::str(py::repr(stream)))));
  }
  // DLPack 0.6 cannot say read-only. A consumer that asked for the device
  // first (torch, cupy, jax) may write: a frame this object does not hold
  // alone goes out as a copy the policy rules. numpy 1.x asks nothing and
  // makes read-only arrays: its view stays zero-copy (docs/python.md, "torch").
  neat::DlpackExportOptions options;
  options.read_only_consumer = !may_write;
  DLManagedTensor* m = unwrap(neat::export_dlpack(t, options, python_call_site()));
  PyObject* capsule = PyCapsule_New(m, "dltensor", dlpack_capsule_destructor);
  if (capsule == nullptr) {
    m->deleter(m);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

namespace {

// ---- wrapping other memory -------------------------------------------------------------

struct BufferHolder {
  Py_buffer view{};
  ~BufferHolder() {
    if (view.obj != nullptr) with_gil_unless_finalizing([&] { PyBuffer_Release(&view); });
  }
};

}  // namespace

NeatTensor wrap_buffer(py::handle object, std::string_view what) {
  auto holder = std::make_shared<BufferHolder>();
  if (PyObject_GetBuffer(object.ptr(), &holder->view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    raise(neat::invalid_argument(std::string(what) + ": a " +
                                 std::string(py::str(py::type::of(object).attr("__name__"))) +
                                 " is neither a neat.Tensor nor an object with the buffer "
                                 "protocol (a numpy array)"));
  }
  const Py_buffer& v = holder->view;
  const std::string_view format = v.format ? v.format : "B";
  auto dtype = dtype_of_format(format, v.itemsize);
  if (!dtype) {
    raise(neat::invalid_argument(
        std::string(what) + ": numpy dtype with buffer format '" + std::string(format) +
        "' has no neat dtype (u8 i8 u16 i16 u32 i32 i64 f16 f32 f64 bool, native byte order); "
        "convert it with a.astype(...) first"));
  }
  if (v.ndim > 8) raise(neat::invalid_argument(std::string(what) + ": rank > 8"));
  neat::Dims shape, strides;
  std::int64_t lo = 0, hi = 0;  // byte range the elements span, relative to buf
  bool empty = false;
  for (int i = 0; i < v.ndim; ++i) {
    const std::int64_t n = v.shape[i];
    const std::int64_t s = v.strides ? v.strides[i] : 0;
    shape.push_back(n);
    strides.push_back(s);
    if (n == 0) empty = true;
    if (n > 0) (s < 0 ? lo : hi) += s * (n - 1);
  }
  if (!v.strides) {  // C-contiguous without strides
    std::int64_t s = v.itemsize;
    for (int i = v.ndim - 1; i >= 0; --i) {
      strides[static_cast<std::size_t>(i)] = s;
      s *= std::max<std::int64_t>(1, v.shape[i]);
    }
    hi = empty ? 0 : s - v.itemsize;
    lo = 0;
  }
  const std::int64_t size = empty ? 0 : hi - lo + v.itemsize;
  std::byte* base = static_cast<std::byte*>(v.buf) + lo;
  const bool read_only = v.readonly != 0;
  neat::ExternalOptions options{.read_only = read_only, .exclusive = !read_only};
  auto storage = unwrap(neat::wrap_memory(base, size, std::move(holder), options));
  NeatTensor t = unwrap(NeatTensor::from_storage(std::move(storage), *dtype, shape, strides, -lo));
  if (!read_only) t = unwrap(std::move(t).make_writable());  // donated: the same bytes
  return t;
}

NeatTensor wrap_argument(py::handle object, std::string_view what) {
  if (py::isinstance<PyTensor>(object)) return object.cast<PyTensor&>().get(what);
  return wrap_buffer(object, what);
}

NeatTensor wrap_dlpack_object(py::object x) {
  py::object capsule = x;
  if (py::hasattr(x, "__dlpack__")) {
    if (py::hasattr(x, "__dlpack_device__")) {
      auto dev = x.attr("__dlpack_device__")().cast<std::pair<int, int>>();
      if (dev.first != kDLCPU) {
        raise(neat::unimplemented("from_dlpack: the producer's memory is on DLPack device " +
                                  std::to_string(dev.first) +
                                  "; neat imports host (kDLCPU) memory only"));
      }
    }
    capsule = x.attr("__dlpack__")();
  }
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor")) {
    raise(neat::invalid_argument(
        "from_dlpack: expected an object with __dlpack__ or an unused \"dltensor\" capsule, got " +
        std::string(py::str(py::type::of(x).attr("__name__")))));
  }
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  // The protocol: a consumer renames the capsule so its destructor leaves the tensor alone.
  if (PyCapsule_SetName(capsule.ptr(), "used_dltensor") != 0) throw py::error_already_set();
  return unwrap(neat::wrap_dlpack(m, {.read_only = true, .exclusive = false}));
}

}  // namespace neatpy

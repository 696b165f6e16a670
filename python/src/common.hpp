// What the parts of the Python extension (neat._neat) share: raising a
// neat::Error as the Python exception of its code (errors.cpp), the Python
// caller's call site for the copy gate, the Python-side tensor object, and
// the binders of each part: tensor.cpp and buffers.cpp (tensors, the buffer
// protocol, DLPack), telemetry.cpp (policies, traces, audits), graph.cpp and
// nodes.cpp (graphs, elements, appsinks, push sources, Python stages;
// graph_state.hpp is what those two share; reports.cpp renders a graph's
// stats, plan and run report as dicts), metrics.cpp (the live endpoint).
//
// Threading: functions that touch Python objects need the GIL; the ones
// marked "any thread" take it themselves.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <neat/neat.hpp>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace neatpy {

/// A neat::Error on its way to Python: translated into the exception class of
/// its code (neat.InvalidArgument, neat.FailedPrecondition, ...).
struct NeatException {
  neat::Error error;
};

/// Throws the error as a NeatException (the registered translator raises it).
[[noreturn]] void raise(neat::Error error);

template <class T>
T unwrap(neat::Result<T>&& r) {
  if (!r.ok()) raise(std::move(r).error());
  return std::move(r).value();
}
inline void check(neat::Status s) {
  if (!s.ok()) raise(std::move(s).error());
}

/// The Python code calling into the extension (the innermost frame outside
/// the neat package) as a source location, so traces, events and refusals
/// name the user's script and line. Needs the GIL.
std::source_location python_call_site();

/// "strict" | "trace" | "silent" (and the long names) -> the policy; raises
/// neat.InvalidArgument naming the value otherwise.
neat::ConversionPolicy parse_policy(std::string_view text);
std::optional<neat::ConversionPolicy> parse_optional_policy(const std::optional<std::string>& text);
neat::DType parse_dtype(std::string_view text);
neat::PixelFormat parse_format(std::string_view text);
/// "hwc" | "chw" | "hw" (either case), and "none" when `allow_none`.
neat::Layout parse_layout(std::string_view text, bool allow_none = false);
/// The error code whose stable name is `name` ("invalid_argument", ...).
std::optional<neat::ErrorCode> error_code_named(std::string_view name);
/// Raises neat.Timeout (a TimeoutError) with `message`.
[[noreturn]] void raise_timeout(const std::string& message);
/// "by_policy" | "fail" | "warn" | "count".
neat::RuleAction parse_action(std::string_view text);
/// Conversion kind names ("pack", "convert", ...).
std::vector<neat::ConversionKind> parse_kinds(const std::vector<std::string>& names);

/// The Python object behind neat.Tensor: the tensor, and the mapping its
/// buffer exports (numpy arrays, memoryviews) share while any is alive.
struct PyTensor {
  neat::NeatTensor tensor;
  std::optional<neat::Mapping> export_map;
  int exports = 0;
  /// Set when make_writable() consumed the handle.
  bool consumed = false;
  /// Set by __dlpack_device__, taken by the next __dlpack__: the consumer is
  /// a framework that asks where the bytes live first (torch, cupy, jax) and
  /// may write them; numpy 1.x asks nothing and makes read-only arrays.
  bool device_asked = false;
  /// Shape and strides of the buffer exports (numpy reads them during getbuffer only).
  Py_ssize_t shape[8] = {};
  Py_ssize_t strides[8] = {};

  explicit PyTensor(neat::NeatTensor t) : tensor(std::move(t)) {}
  /// The tensor, or neat.FailedPrecondition when it was consumed.
  const neat::NeatTensor& get(std::string_view op) const;
  /// Writable as Python sees it: writable in C++, or lent to its own writable exports.
  bool writable() const noexcept;
};

// The bindings' verbs follow the C++ grammar: wrap_* makes a NeatTensor over
// memory someone else owns (no copy), export_* hands a NeatTensor out.

/// A NeatTensor as a neat.Tensor (the Python object shares it: no copy).
py::object export_tensor(neat::NeatTensor t);
/// Wraps any object exposing the buffer protocol (a numpy array) as a tensor
/// without a copy; read-only when the buffer is. `what` names it in errors.
neat::NeatTensor wrap_buffer(py::handle object, std::string_view what);
/// A Tensor argument that may also be a numpy array (wrapped, zero copy).
neat::NeatTensor wrap_argument(py::handle object, std::string_view what);

/// neat.Tensor's buffer protocol slots (buffers.cpp).
int tensor_getbuffer(PyObject* obj, Py_buffer* view, int flags);
void tensor_releasebuffer(PyObject* obj, Py_buffer* view);
/// A "dltensor" capsule over the tensor's bytes; `stream` must be None. A consumer that
/// `may_write` gets a copy (through the policy) of a tensor others can see.
py::object dlpack_capsule(const neat::NeatTensor& t, const py::object& stream, bool may_write);
/// Imports a DLPack producer (or an unused capsule) as a read-only tensor.
neat::NeatTensor wrap_dlpack_object(py::object x);

/// count, p50, p95, p99, max, mean (seconds) of a duration summary (telemetry.cpp).
py::dict duration_summary_dict(const neat::DurationSummary& s);
/// A rule breach as a dict: rule, frame, bytes, count, conversion (telemetry.cpp).
py::dict breach_dict(const neat::RuleBreach& b);

/// Runs `f` with the GIL released when the calling thread holds it.
template <class F>
auto without_gil(F&& f) {
  if (PyGILState_Check()) {
    py::gil_scoped_release release;
    return f();
  }
  return f();
}

/// Runs `f` with the GIL from any thread; skips it (the caller leaks what `f`
/// would have released) once the interpreter is shutting down.
template <class F>
void with_gil_unless_finalizing(F&& f) noexcept {
  if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
  PyGILState_STATE state = PyGILState_Ensure();
  f();
  PyGILState_Release(state);
}

/// Drops a Python reference from any thread (with_gil_unless_finalizing).
void release_object(PyObject* object) noexcept;

void bind_errors(py::module_& m);
void bind_tensor(py::module_& m);
void bind_telemetry(py::module_& m);
void bind_graph(py::module_& m);

}  // namespace neatpy

// neat.Tensor: the NeatTensor in Python, its views, its named copies (clone,
// contiguous, make_writable, cpu: through the copy gate, with the Python
// caller as the call site) and the factories (empty, zeros, image,
// from_numpy, from_dlpack, compose). Its bytes reach numpy through
// buffers.cpp without a copy.
#include <dlpack/dlpack.h>  // kDLCPU
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "common.hpp"

namespace neatpy {

using neat::DType;
using neat::NeatTensor;

const NeatTensor& PyTensor::get(std::string_view op) const {
  if (consumed) {
    raise(neat::failed_precondition(
        std::string(op) +
        ": this tensor was consumed by make_writable(); use the tensor it returned"));
  }
  if (!tensor.defined())
    raise(neat::failed_precondition(std::string(op) + ": the tensor is empty"));
  return tensor;
}

bool PyTensor::writable() const noexcept {
  if (consumed || !tensor.defined()) return false;
  if (exports > 0 && export_map) return export_map->writable();
  return tensor.is_writable();
}

py::object export_tensor(NeatTensor t) {
  return py::cast(PyTensor(std::move(t)));
}

namespace {

// ---- helpers ----------------------------------------------------------------------------------

// A shape or order from Python, as the factories and views take it: they
// check the rank themselves ("rank too high"), never truncated here.
neat::DimsRef dims_of(const std::vector<std::int64_t>& v) {
  return std::span<const std::int64_t>(v);
}

py::tuple tuple_of(const neat::Dims& d) {
  py::tuple t(d.size());
  for (int i = 0; i < d.size(); ++i)
    t[static_cast<std::size_t>(i)] = d[i];
  return t;
}

neat::PlaneRole parse_role(std::string_view text) {
  for (auto r : {neat::PlaneRole::Y, neat::PlaneRole::UV, neat::PlaneRole::VU, neat::PlaneRole::U,
                 neat::PlaneRole::V}) {
    if (neat::to_string(r) == text) return r;
  }
  raise(neat::invalid_argument("plane '" + std::string(text) + "' is not one of: Y, UV, VU, U, V"));
}

neat::Donation parse_donation(std::string_view text) {
  for (auto d :
       {neat::Donation::ReuseIfUnique, neat::Donation::MustDonate, neat::Donation::AlwaysCopy}) {
    if (neat::to_string(d) == text) return d;
  }
  raise(neat::invalid_argument("donation '" + std::string(text) +
                               "' is not one of: reuse_if_unique, must_donate, always_copy"));
}

neat::ConversionOptions conversion_options(const std::optional<std::string>& policy) {
  neat::ConversionOptions o;
  o.policy = parse_optional_policy(policy);
  return o;
}

std::string repr(const PyTensor& self) {
  if (self.consumed) return "neat.Tensor(<consumed by make_writable()>)";
  if (!self.tensor.defined()) return "neat.Tensor(<empty>)";
  std::string body = self.tensor.to_string();  // "NeatTensor(u8 [...] ...)"
  if (body.starts_with("NeatTensor(") && body.ends_with(")"))
    body = body.substr(11, body.size() - 12);
  std::string s = "neat.Tensor(" + body;
  s += self.writable() ? " writable" : " read-only";
  if (self.tensor.meta().frame >= 0) s += " frame " + std::to_string(self.tensor.meta().frame);
  return s + ")";
}

py::dict meta_dict(const neat::FrameMeta& m) {
  py::dict d;
  d["frame"] = m.frame;
  d["pts_ns"] = m.pts_ns;
  d["duration_ns"] = m.duration_ns;
  d["capture_ns"] = m.capture_ns;
  d["stream"] = m.stream.known() ? py::object(py::str(m.stream.name.data(), m.stream.name.size()))
                                 : py::object(py::none());
  d["stream_index"] = m.stream.index;
  return d;
}

// An interleaved image's width and height from its shape in `layout`.
neat::ImageSpec image_spec_for(const NeatTensor& t, neat::PixelFormat format,
                               std::optional<std::string> layout_text) {
  neat::Layout layout = layout_text ? parse_layout(*layout_text)
                                    : (format == neat::PixelFormat::GRAY8 && t.rank() == 2
                                           ? neat::Layout::HW
                                           : neat::default_layout(format));
  const auto& s = t.shape();
  std::int64_t w = 0, h = 0;
  if (layout == neat::Layout::HWC && s.size() == 3) {
    h = s[0];
    w = s[1];
  } else if (layout == neat::Layout::CHW && s.size() == 3) {
    h = s[1];
    w = s[2];
  } else if (layout == neat::Layout::HW && s.size() == 2) {
    h = s[0];
    w = s[1];
  } else {
    raise(neat::invalid_argument("as_image(" + std::string(neat::to_string(format)) + ", " +
                                 std::string(neat::to_string(layout)) + ") of " + t.to_string() +
                                 ": the shape does not fit the layout ([H, W, C], [C, H, W] or "
                                 "[H, W])"));
  }
  return neat::ImageSpec{.format = format, .width = w, .height = h, .layout = layout};
}

}  // namespace

namespace {

// What a tensor is: shape, dtype, strides, planes, device, flags.
// The frame's metadata: meta (a dict; neat.FrameMeta adds attribute access),
// its frame number and its stream.
void def_frame_properties(py::class_<PyTensor>& c) {
  c.def_property_readonly(
       "meta", [](const PyTensor& s) { return meta_dict(s.get("meta").meta()); },
       "The frame's metadata: frame number, pts_ns, duration_ns, capture_ns (-1: unknown), "
       "stream (the source's name; None outside a graph) and stream_index.")
      .def_property_readonly(
          "frame", [](const PyTensor& s) { return s.get("frame").meta().frame; },
          "The frame number from the source (-1: none).")
      .def_property_readonly(
          "stream",
          [](const PyTensor& s) -> py::object {
            const neat::StreamId& id = s.get("stream").meta().stream;
            if (!id.known()) return py::none();
            return py::str(id.name.data(), id.name.size());
          },
          "The stream the frame came from: its source's name in the graph (None: not from a "
          "graph's source).");
}

void def_properties(py::class_<PyTensor>& c) {
  c.def_property_readonly(
       "dtype",
       [](const PyTensor& s) { return std::string(neat::to_string(s.get("dtype").dtype())); },
       "Element type: \"u8\", \"i8\", \"u16\", \"i16\", \"u32\", \"i32\", \"i64\", \"f16\", "
       "\"bf16\", \"f32\", \"f64\", \"bool\".")
      .def_property_readonly(
          "shape", [](const PyTensor& s) { return tuple_of(s.get("shape").shape()); },
          "Extents (for a planar frame: [H, W]).")
      .def_property_readonly(
          "strides", [](const PyTensor& s) { return tuple_of(s.get("strides").strides()); },
          "Byte strides, as numpy counts them (for a planar frame: the Y plane's).")
      .def_property_readonly(
          "byte_offset", [](const PyTensor& s) { return s.get("byte_offset").byte_offset(); },
          "Bytes from the start of the storage to element 0.")
      .def_property_readonly(
          "ndim", [](const PyTensor& s) { return s.get("ndim").rank(); }, "Number of dimensions.")
      .def_property_readonly(
          "size", [](const PyTensor& s) { return s.get("size").numel(); }, "Number of elements.")
      .def_property_readonly(
          "nbytes", [](const PyTensor& s) { return s.get("nbytes").nbytes(); },
          "Bytes of the elements when packed (every plane of a planar frame).")
      .def_property_readonly(
          "format",
          [](const PyTensor& s) -> py::object {
            const auto& t = s.get("format");
            if (!t.is_image()) return py::none();
            return py::str(std::string(neat::to_string(t.pixel_format())));
          },
          "Pixel format (\"NV12\", \"RGB\", ...), or None for a dense tensor.")
      .def_property_readonly(
          "layout",
          [](const PyTensor& s) -> py::object {
            const auto& t = s.get("layout");
            if (!t.is_image()) return py::none();
            return py::str(std::string(neat::to_string(t.layout())));
          },
          "Image layout (\"HWC\", \"CHW\", \"HW\"), or None.")
      .def_property_readonly(
          "width", [](const PyTensor& s) { return s.get("width").image().width; },
          "Image width in pixels (0 for a dense tensor).")
      .def_property_readonly(
          "height", [](const PyTensor& s) { return s.get("height").image().height; },
          "Image height in pixels (0 for a dense tensor).")
      .def_property_readonly(
          "colorimetry",
          [](const PyTensor& s) {
            return neat::to_string(s.get("colorimetry").image().colorimetry);
          },
          "The colour standard of a YUV frame (\"bt709 limited\", \"unknown\").")
      .def_property_readonly(
          "device", [](const PyTensor& s) { return neat::to_string(s.get("device").device()); },
          "\"cpu:0\", \"gl:0\".")
      .def_property_readonly(
          "storage",
          [](const PyTensor& s) {
            return std::string(neat::to_string(s.get("storage").storage_kind()));
          },
          "The backend holding the bytes: heap, external, cv_mat, gstreamer, shm, dmabuf, gl.")
      .def_property_readonly("writable", &PyTensor::writable,
                             "True when writes are allowed: made writable and held alone "
                             "(or lent to its own writable numpy arrays).")
      .def_property_readonly(
          "contiguous_layout",
          [](const PyTensor& s) { return s.get("contiguous_layout").is_contiguous(); },
          "Row-major and packed.")
      .def_property_readonly("is_image",
                             [](const PyTensor& s) { return s.get("is_image").is_image(); })
      .def_property_readonly(
          "plane_roles",
          [](const PyTensor& s) {
            const auto& t = s.get("plane_roles");
            std::vector<std::string> roles;
            for (int i = 0; i < t.plane_count(); ++i)
              roles.emplace_back(neat::to_string(t.plane_layout(i).role));
            return roles;
          },
          "The plane roles of a planar frame, in order ([\"Y\", \"UV\"] for NV12); [] otherwise.")
      .def_property_readonly(
          "data_ptr",
          [](const PyTensor& s) {
            const auto& t = s.get("data_ptr");
            auto map = unwrap(t.map());
            const std::byte* p =
                t.is_composite() ? unwrap(map.plane_data(t.plane_layout(0).role)) : map.data();
            return reinterpret_cast<std::uintptr_t>(p);
          },
          "Address of element 0 (the first plane of a planar frame): for identity checks.")
      .def_property_readonly(
          "buffer_id", [](const PyTensor& s) { return s.get("buffer_id").identity().id(); },
          "Identity of the (first) storage: views and copies of the handle share it.")
      .def(
          "plane",
          [](const PyTensor& s, const std::string& role) {
            return export_tensor(unwrap(s.get("plane").plane(parse_role(role))));
          },
          py::arg("role"),
          "One plane of a planar frame as a dense u8 tensor ([rows, cols] or [rows, cols, 2]): "
          "a view, no copy.")
      .def(
          "planes",
          [](const PyTensor& s) {
            const auto& t = s.get("planes");
            py::dict out;
            for (int i = 0; i < t.plane_count(); ++i) {
              const auto role = t.plane_layout(i).role;
              out[py::str(std::string(neat::to_string(role)))] =
                  export_tensor(unwrap(t.plane(role)));
            }
            return out;
          },
          "Every plane of a planar frame by role: {\"Y\": Tensor, \"UV\": Tensor}.");
}

// Views: metadata only, never a copy.
void def_views(py::class_<PyTensor>& c) {
  c
      // ---- views --------------------------------------------------------------------
      .def(
          "slice",
          [](const PyTensor& s, int dim, std::int64_t start, std::int64_t stop, std::int64_t step) {
            return export_tensor(unwrap(s.get("slice").slice(dim, start, stop, step)));
          },
          py::arg("dim"), py::arg("start"), py::arg("stop"), py::arg("step") = 1,
          "Elements start, start+step, ... < stop of dimension dim: a view.")
      .def(
          "narrow",
          [](const PyTensor& s, int dim, std::int64_t start, std::int64_t length) {
            return export_tensor(unwrap(s.get("narrow").narrow(dim, start, length)));
          },
          py::arg("dim"), py::arg("start"), py::arg("length"))
      .def(
          "crop",
          [](const PyTensor& s, std::int64_t x, std::int64_t y, std::int64_t w, std::int64_t h) {
            return export_tensor(unwrap(s.get("crop").crop(x, y, w, h)));
          },
          py::arg("x"), py::arg("y"), py::arg("width"), py::arg("height"),
          "Pixels [x, x+width) x [y, y+height) of an image: a view (planar: even x and y).")
      .def(
          "transpose",
          [](const PyTensor& s, int a, int b) {
            return export_tensor(unwrap(s.get("transpose").transpose(a, b)));
          },
          py::arg("dim0"), py::arg("dim1"))
      .def(
          "permute",
          [](const PyTensor& s, const std::vector<std::int64_t>& order) {
            return export_tensor(unwrap(s.get("permute").permute(dims_of(order))));
          },
          py::arg("order"))
      .def(
          "reshape",
          [](const PyTensor& s, const std::vector<std::int64_t>& shape) {
            return export_tensor(unwrap(s.get("reshape").reshape(dims_of(shape))));
          },
          py::arg("shape"), "A view with a new shape, or an error when the strides forbid it.")
      .def(
          "squeeze",
          [](const PyTensor& s, int d) {
            return export_tensor(unwrap(s.get("squeeze").squeeze(d)));
          },
          py::arg("dim"))
      .def(
          "unsqueeze",
          [](const PyTensor& s, int d) {
            return export_tensor(unwrap(s.get("unsqueeze").unsqueeze(d)));
          },
          py::arg("dim"))
      .def(
          "expand",
          [](const PyTensor& s, const std::vector<std::int64_t>& shape) {
            return export_tensor(unwrap(s.get("expand").expand(dims_of(shape))));
          },
          py::arg("shape"), "Broadcast to shape (stride-0 dimensions, read-only).")
      .def(
          "reinterpret",
          [](const PyTensor& s, const std::string& dtype) {
            return export_tensor(unwrap(s.get("reinterpret").reinterpret(parse_dtype(dtype))));
          },
          py::arg("dtype"), "The same bytes as another dtype of the same item size.")
      .def(
          "as_image",
          [](const PyTensor& s, const std::string& format, std::optional<std::string> layout) {
            const auto& t = s.get("as_image");
            return export_tensor(
                unwrap(t.as_image(image_spec_for(t, parse_format(format), layout))));
          },
          py::arg("format"), py::arg("layout") = py::none(),
          "The same bytes as an interleaved image (u8 [H, W, C] HWC, [C, H, W] CHW, [H, W] HW).")
      .def(
          "as_dense",
          [](const PyTensor& s) { return export_tensor(unwrap(s.get("as_dense").as_dense())); },
          "The same bytes without image semantics.")
      .def(
          "with_colorimetry",
          [](const PyTensor& s, const std::string& c) {
            auto parsed = neat::parse_colorimetry(c);
            if (!parsed) {
              raise(neat::invalid_argument("colorimetry '" + c +
                                           "' is not one of: bt601, bt709, bt2020 (each with "
                                           "-full or -limited), sdtv, jpeg"));
            }
            return export_tensor(unwrap(s.get("with_colorimetry").with_colorimetry(*parsed)));
          },
          py::arg("colorimetry"), "The same frame stating its colour standard (metadata only).");
}

// Copies, each named and through the copy gate.
void def_copies(py::class_<PyTensor>& c) {
  c
      // ---- copies (named, through the copy gate) --------------------------------------------
      .def(
          "clone",
          [](const PyTensor& s, std::optional<std::string> policy) {
            const auto& t = s.get("clone");
            const auto where = python_call_site();
            return export_tensor(
                unwrap(without_gil([&] { return t.clone(conversion_options(policy), where); })));
          },
          py::arg("policy") = py::none(),
          "A deep copy into fresh packed storage (explicit: runs under every policy, recorded).")
      .def(
          "contiguous",
          [](const PyTensor& s, std::optional<std::string> policy) {
            const auto& t = s.get("contiguous");
            const auto where = python_call_site();
            return export_tensor(unwrap(
                without_gil([&] { return t.contiguous(conversion_options(policy), where); })));
          },
          py::arg("policy") = py::none(),
          "This tensor when already contiguous (no copy); otherwise a recorded pack.")
      .def(
          "cpu",
          [](const PyTensor& s, std::optional<std::string> policy) {
            const auto& t = s.get("cpu");
            const auto where = python_call_site();
            return export_tensor(
                unwrap(without_gil([&] { return t.cpu(conversion_options(policy), where); })));
          },
          py::arg("policy") = py::none(),
          "This tensor in host memory: itself when it is there, else a recorded transfer.")
      .def(
          "make_writable",
          [](PyTensor& s, const std::string& donation, std::optional<std::string> policy) {
            s.get("make_writable");
            neat::WritableOptions o;
            o.donation = parse_donation(donation);
            o.policy = parse_optional_policy(policy);
            const auto where = python_call_site();
            NeatTensor t = std::move(s.tensor);
            s.consumed = true;
            auto r = without_gil([&] { return std::move(t).make_writable(o, where); });
            return export_tensor(unwrap(std::move(r)));
          },
          py::arg("donation") = "reuse_if_unique", py::arg("policy") = py::none(),
          R"doc(Consumes this tensor and returns a writable one: the same buffer when
nothing else holds it (no copy), otherwise a copy-on-write copy through the
copy gate. numpy arrays of this tensor count as holders. donation:
"reuse_if_unique" (default), "must_donate" (a copy is refused under Strict),
"always_copy".)doc");
}

// numpy, DLPack, repr, len and iteration.
void def_exports(py::class_<PyTensor>& c) {
  c
      // ---- numpy / DLPack -----------------------------------------------------------------------
      .def(
          "numpy",
          [](py::object self) { return py::module_::import("numpy").attr("asarray")(self); },
          "numpy.asarray(self): a view of the bytes, no copy.")
      .def(
          "__array__",
          [](py::object self, py::object dtype) {
            // numpy asks here only when the buffer protocol refused: say why
            // (rather than numpy's silent 0-d object array).
            py::object view =
                py::reinterpret_steal<py::object>(PyMemoryView_FromObject(self.ptr()));
            if (!view) throw py::error_already_set();
            py::object np = py::module_::import("numpy");
            return dtype.is_none() ? np.attr("asarray")(view) : np.attr("asarray")(view, dtype);
          },
          py::arg("dtype") = py::none())
      .def(
          "__dlpack__",
          [](PyTensor& s, py::object stream) {
            const bool may_write = std::exchange(s.device_asked, false);
            return dlpack_capsule(s.get("__dlpack__"), stream, may_write);
          },
          py::arg("stream") = py::none(),
          "A DLPack capsule over the tensor's bytes (no copy; planar frames: per plane).")
      .def("__dlpack_device__",
           [](PyTensor& s) {
             const auto& t = s.get("__dlpack_device__");
             s.device_asked = true;
             if (t.device().type != neat::DeviceType::Cpu) {
               raise(neat::unimplemented("__dlpack_device__: " + t.to_string() + " lives on " +
                                         neat::to_string(t.device()) +
                                         "; t.cpu() brings it to host memory first"));
             }
             return py::make_tuple(static_cast<int>(kDLCPU), 0);
           })
      .def("__repr__", &repr)
      .def("__len__",
           [](const PyTensor& s) {
             const auto& t = s.get("len");
             if (t.rank() == 0) throw py::type_error("len() of a 0-d neat.Tensor");
             return t.shape()[0];
           })
      .def(
          "__iter__",
          [](py::object self) {
            const auto& t = self.cast<PyTensor&>().get("iter");
            if (t.rank() == 0) throw py::type_error("iteration over a 0-d neat.Tensor");
            py::list rows;
            for (std::int64_t i = 0; i < t.shape()[0]; ++i)
              rows.append(export_tensor(unwrap(unwrap(t.narrow(0, i, 1)).squeeze(0))));
            return py::iter(rows);
          },
          "Views of the first dimension, in order.");
}

// The factories: empty, zeros, from numpy, images over planes.
void bind_factories(py::module_& m) {
  // ---- factories -----------------------------------------------------------------------------
  m.def(
      "empty",
      [](const std::vector<std::int64_t>& shape, const std::string& dtype, bool zero) {
        auto t =
            unwrap(NeatTensor::allocate(parse_dtype(dtype), dims_of(shape), {.zero_fill = zero}));
        return export_tensor(unwrap(std::move(t).make_writable()));
      },
      py::arg("shape"), py::arg("dtype") = "u8", py::arg("zero") = false,
      "A new writable dense tensor on heap storage (contents unspecified unless zero=True).");
  m.def(
      "zeros",
      [](const std::vector<std::int64_t>& shape, const std::string& dtype) {
        auto t = unwrap(NeatTensor::allocate(parse_dtype(dtype), dims_of(shape)));
        return export_tensor(unwrap(std::move(t).make_writable()));
      },
      py::arg("shape"), py::arg("dtype") = "u8", "A new writable dense tensor of zeros.");
  m.def(
      "image",
      [](const std::string& format, std::int64_t width, std::int64_t height,
         std::int64_t row_alignment, std::optional<std::string> layout, bool zero) {
        neat::ImageAllocOptions o;
        o.row_alignment = row_alignment;
        o.zero_fill = zero;
        if (layout) o.layout = parse_layout(*layout);
        auto t = unwrap(NeatTensor::allocate_image(parse_format(format), width, height, o));
        return export_tensor(unwrap(std::move(t).make_writable()));
      },
      py::arg("format"), py::arg("width"), py::arg("height"), py::arg("row_alignment") = 1,
      py::arg("layout") = py::none(), py::arg("zero") = true,
      "A new writable image: interleaved as [H, W, C] (or layout=\"chw\"), planar formats as "
      "planes in one buffer, rows padded to row_alignment bytes.");
  m.def(
      "from_numpy",
      [](py::object a, std::optional<std::string> format, std::optional<std::string> layout) {
        NeatTensor t = wrap_buffer(a, "from_numpy");
        if (format) t = unwrap(t.as_image(image_spec_for(t, parse_format(*format), layout)));
        return export_tensor(std::move(t));
      },
      py::arg("array"), py::arg("format") = py::none(), py::arg("layout") = py::none(),
      R"doc(Wraps a numpy array (any object with the buffer protocol) without a copy:
same bytes, same strides; the tensor keeps the array alive. Read-only when
the array is; a writable array gives a writable tensor that shares its bytes
with the array both ways (like torch.from_numpy). format="RGB" etc. makes it
an interleaved image ([H, W, C]).)doc");
  m.def(
      "from_dlpack", [](py::object x) { return export_tensor(wrap_dlpack_object(std::move(x))); },
      py::arg("x"),
      "Imports any DLPack producer (an object with __dlpack__, or a capsule) without a copy; "
      "the tensor is read-only (the producer may still use the bytes).");
  m.def(
      "compose",
      [](const std::string& format, std::int64_t width, std::int64_t height, py::list planes) {
        const auto fmt = parse_format(format);
        std::vector<neat::PlaneSpec> specs;
        const auto order = neat::plane_order(fmt);
        if (order.count == 0) {
          raise(neat::invalid_argument("compose: " + format +
                                       " is not a planar format (NV12, NV21, I420, YV12)"));
        }
        if (static_cast<int>(planes.size()) != order.count) {
          raise(neat::invalid_argument("compose(" + format + "): " + std::to_string(planes.size()) +
                                       " planes given, the format has " +
                                       std::to_string(order.count)));
        }
        for (int i = 0; i < order.count; ++i) {
          const std::string what = "compose(" + format + ") plane " + std::to_string(i);
          NeatTensor p = wrap_argument(planes[static_cast<std::size_t>(i)], what);
          if (p.dtype() != DType::U8 || p.rank() < 2 || p.is_composite()) {
            raise(neat::invalid_argument(what + ": " + p.to_string() +
                                         ": a plane is u8 [rows, cols] or [rows, cols, 2]"));
          }
          const auto& st = p.strides();
          const std::int64_t samples = p.rank() == 3 ? p.shape()[2] : 1;
          if (st[1] != samples || (p.rank() == 3 && st[2] != 1)) {
            raise(neat::invalid_argument(what + ": " + p.to_string() +
                                         ": pixels in a row must be packed (row stride free)"));
          }
          specs.push_back(
              {order.roles[static_cast<std::size_t>(i)], p.storage(), st[0], p.byte_offset()});
        }
        return export_tensor(unwrap(NeatTensor::compose_planes(fmt, width, height, specs)));
      },
      py::arg("format"), py::arg("width"), py::arg("height"), py::arg("planes"),
      "A planar frame (NV12: [Y, UV], I420: [Y, U, V]) over existing planes (numpy arrays or "
      "tensors) without a copy.");
}

}  // namespace

void bind_tensor(py::module_& m) {
  py::class_<PyTensor> cls(m, "Tensor", py::buffer_protocol(), R"doc(
A NeatTensor: a dense N-D tensor or a video frame (interleaved or planar), on
heap, cv::Mat, GStreamer, shm, DMA-BUF or GL storage.

numpy.asarray(t) and numpy.from_dlpack(t) are views of its bytes (no copy),
with its byte strides; they are read-only unless the tensor is writable and
held alone, and they keep the storage alive. Planar frames (NV12, I420, ...)
expose their planes: frame.plane("Y"), frame.plane("UV"). Only clone(),
contiguous(), make_writable() and cpu() may copy, through the copy gate.)doc");

  // The buffer protocol by hand: pybind11's def_buffer cannot tell us when an
  // export ends, and every export shares one mapping released with the last.
  auto* heap_type = reinterpret_cast<PyHeapTypeObject*>(cls.ptr());
  heap_type->as_buffer.bf_getbuffer = tensor_getbuffer;
  heap_type->as_buffer.bf_releasebuffer = tensor_releasebuffer;
  reinterpret_cast<PyTypeObject*>(cls.ptr())->tp_as_buffer = &heap_type->as_buffer;

  def_properties(cls);
  def_frame_properties(cls);
  def_views(cls);
  def_copies(cls);
  def_exports(cls);

  bind_factories(m);
}

}  // namespace neatpy

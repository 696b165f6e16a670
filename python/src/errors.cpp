// Errors into Python exceptions, the Python call site, and the small parsers
// the bindings share.

#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <tuple>

#include "common.hpp"

namespace neatpy {

void raise(neat::Error error) {
  throw NeatException{std::move(error)};
}

namespace {

// Every fix of an error and of the problems it collects, in Python's words.
void add_fixes(const neat::Error& e, py::list& out) {
  for (const neat::Fix& f : e.fixes())
    out.append(py::str(std::string(f.in(true))));
  for (const neat::Error& cause : e.causes())
    add_fixes(cause, out);
}

void set_python_error(const neat::Error& e) {
  py::module_ errors = py::module_::import("neat._errors");
  py::dict by_code = errors.attr("_BY_CODE");
  const std::string code(neat::to_string(e.code()));
  py::object cls =
      by_code.contains(code) ? py::object(by_code[code.c_str()]) : py::object(errors.attr("Error"));
  py::list fixes;
  add_fixes(e, fixes);
  py::object fix = py::none();
  if (const neat::Fix* f = e.first_fix(); f != nullptr) fix = py::str(std::string(f->in(true)));
  py::object where = e.where().empty() ? py::object(py::none()) : py::str(std::string(e.where()));
  py::object exc = cls(py::str(e.message(neat::Spelling::Python)), fix, where, fixes);
  PyErr_SetObject(cls.ptr(), exc.ptr());
}

}  // namespace

void bind_errors(py::module_& /*m*/) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const NeatException& e) {
      set_python_error(e.error);
    } catch (const neat::BadResultAccess& e) {
      set_python_error(e.error());
    }
  });
}

// ---- the Python call site -----------------------------------------------------

namespace {

struct SiteKey {
  std::string file, function;
  unsigned line;
  friend bool operator<(const SiteKey& a, const SiteKey& b) {
    return std::tie(a.file, a.line, a.function) < std::tie(b.file, b.line, b.function);
  }
};

#if defined(__GLIBCXX__)
// libstdc++'s std::source_location is one pointer to this record (what
// __builtin_source_location() returns); one is interned per Python call site.
struct SiteRecord {
  const char* file;
  const char* function;
  unsigned line;
  unsigned column;
};
static_assert(sizeof(std::source_location) == sizeof(const void*));
#endif

std::string relative_to_cwd(const std::string& file) {
  if (file.empty() || file[0] != '/') return file;
  std::error_code ec;
  const auto cwd = std::filesystem::current_path(ec);
  if (ec) return file;
  const auto rel = std::filesystem::path(file).lexically_relative(cwd);
  if (rel.empty() || *rel.begin() == "..") return file;
  return rel.string();
}

bool inside_package(const std::string& file) {
  return file.ends_with("/neat/__init__.py") || file.ends_with("/neat/_errors.py");
}

}  // namespace

std::source_location python_call_site() {
#if defined(__GLIBCXX__)
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  py::object holder;                         // keeps a frame from PyFrame_GetBack alive
  while (frame != nullptr) {
    py::object code =
        py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(PyFrame_GetCode(frame)));
    std::string file = py::str(code.attr("co_filename"));
    if (!inside_package(file)) {
      SiteKey key{relative_to_cwd(file), py::str(code.attr("co_name")),
                  static_cast<unsigned>(PyFrame_GetLineNumber(frame))};
      static std::mutex mutex;
      static std::map<SiteKey, SiteRecord> sites;  // nodes never move: stable strings
      std::lock_guard lock(mutex);
      auto [it, inserted] = sites.try_emplace(std::move(key));
      if (inserted)
        it->second = {it->first.file.c_str(), it->first.function.c_str(), it->first.line, 0};
      const SiteRecord* rec = &it->second;
      std::source_location loc;
      std::memcpy(static_cast<void*>(&loc), &rec, sizeof(rec));
      return loc;
    }
    holder = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(PyFrame_GetBack(frame)));
    frame = reinterpret_cast<PyFrameObject*>(holder.ptr());
  }
#endif
  return std::source_location::current();
}

// ---- parsers -------------------------------------------------------------------

neat::ConversionPolicy parse_policy(std::string_view text) {
  if (auto p = neat::parse_conversion_policy(text)) return *p;
  raise(neat::invalid_argument("policy '" + std::string(text) +
                               "' is not one of: strict, trace, silent"));
}

std::optional<neat::ConversionPolicy> parse_optional_policy(
    const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  return parse_policy(std::string_view(*text));
}

neat::DType parse_dtype(std::string_view text) {
  if (auto d = neat::parse_dtype(text)) return *d;
  raise(neat::invalid_argument(
      "dtype '" + std::string(text) +
      "' is not one of: u8, i8, u16, i16, u32, i32, i64, f16, bf16, f32, f64, bool"));
}

neat::PixelFormat parse_format(std::string_view text) {
  if (auto f = neat::parse_pixel_format(text); f && *f != neat::PixelFormat::None) return *f;
  raise(neat::invalid_argument("pixel format '" + std::string(text) +
                               "' is not one of: GRAY8, RGB, BGR, RGBA, BGRA, NV12, NV21, "
                               "I420, YV12"));
}

neat::RuleAction parse_action(std::string_view text) {
  if (text == "by_policy") return neat::RuleAction::ByPolicy;
  if (text == "fail") return neat::RuleAction::Fail;
  if (text == "warn") return neat::RuleAction::Warn;
  if (text == "count") return neat::RuleAction::Count;
  raise(neat::invalid_argument("action '" + std::string(text) +
                               "' is not one of: by_policy, fail, warn, count"));
}

std::vector<neat::ConversionKind> parse_kinds(const std::vector<std::string>& names) {
  std::vector<neat::ConversionKind> kinds;
  for (const auto& n : names) {
    auto k = neat::parse_conversion_kind(n);
    if (!k) {
      raise(neat::invalid_argument("conversion kind '" + n +
                                   "' is not one of: reinterpret, view, pack, convert, transfer"));
    }
    kinds.push_back(*k);
  }
  return kinds;
}

neat::Layout parse_layout(std::string_view text, bool allow_none) {
  for (auto l : {neat::Layout::HWC, neat::Layout::CHW, neat::Layout::HW, neat::Layout::None}) {
    if (l == neat::Layout::None && !allow_none) continue;
    std::string lower(neat::to_string(l));
    for (auto& c : lower)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (text == neat::to_string(l) || text == lower) return l;
  }
  raise(neat::invalid_argument("layout '" + std::string(text) + "' is not one of: hwc, chw, hw" +
                               (allow_none ? ", none" : "")));
}

std::optional<neat::ErrorCode> error_code_named(std::string_view name) {
  for (int c = 1; c <= 8; ++c) {
    const auto code = static_cast<neat::ErrorCode>(c);
    if (neat::to_string(code) == name) return code;
  }
  return std::nullopt;
}

void raise_timeout(const std::string& message) {
  py::object cls = py::module_::import("neat._errors").attr("Timeout");
  PyErr_SetObject(cls.ptr(), cls(message).ptr());
  throw py::error_already_set();
}

void release_object(PyObject* object) noexcept {
  if (object != nullptr) with_gil_unless_finalizing([&] { Py_DECREF(object); });
}

}  // namespace neatpy

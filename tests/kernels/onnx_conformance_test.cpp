// ONNX conformance of the model boundary: every model of Debian's
// libonnx-testdata (the ONNX project's backend test data: one folder per case,
// model.onnx and test_data_set_N/{input,output}_K.pb) is loaded by
// neat::Model, the engine of the infer stage, run on each data set's inputs,
// and compared with the reference outputs within the ONNX backend tests'
// tolerance (|got - want| <= 1e-7 + 1e-3 * |want|, NaN matches NaN).
//
// Each case's outcome is compared with the list the repository keeps
// (tests/kernels/onnx_conformance_opencv46.txt): a case that passed and now
// fails is a regression, and a case that starts to pass (a newer OpenCV) must
// be moved in the list, so the list stays the truth docs/inference.md quotes.
// Set NEAT_CONFORMANCE_WRITE=FILE to write the outcomes observed.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <opencv2/core/utils/logger.hpp>
#include <sstream>

#include "neat/contract/mapping.hpp"
#include "neat/kernels/model.hpp"

namespace neat {
namespace {

namespace fs = std::filesystem;

// What happened to one case; the words are the list's.
//   pass      every data set's outputs match, shapes included
//   shape     values match, but OpenCV gives an output another shape
//   mismatch  values differ (or an output is missing)
//   load      Model::load refuses it: OpenCV cannot import or run the graph
//   input     an input is not f32 (OpenCV DNN computes in f32)
//   run       Model::run fails on the reference inputs
//   data      the reference data cannot be read (string tensors, ...)
struct Outcome {
  std::string status;
  std::string detail;
};

struct Reference {
  std::vector<std::int64_t> dims;
  std::vector<double> values;
  bool is_float = false;
};

template <typename T>
void append_raw(const std::string& raw, std::vector<double>& out) {
  const std::size_t n = raw.size() / sizeof(T);
  for (std::size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out.push_back(static_cast<double>(v));
  }
}

double half_to_double(std::uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0) return s * std::ldexp(m, -24);
  if (e == 31) return m ? NAN : s * INFINITY;
  return s * std::ldexp(1024 + m, e - 25);
}

std::optional<Reference> read_reference(const fs::path& file, std::string* why) {
  onnx::TensorProto t;
  std::ifstream in(file, std::ios::binary);
  if (!in || !t.ParseFromIstream(&in)) {
    *why = file.filename().string() + " does not parse as TensorProto";
    return std::nullopt;
  }
  Reference r;
  r.dims.assign(t.dims().begin(), t.dims().end());
  const std::string& raw = t.raw_data();
  using TP = onnx::TensorProto;
  switch (t.data_type()) {
    case TP::FLOAT:
      r.is_float = true;
      if (!raw.empty()) append_raw<float>(raw, r.values);
      for (float v : t.float_data())
        r.values.push_back(v);
      break;
    case TP::DOUBLE:
      r.is_float = true;
      if (!raw.empty()) append_raw<double>(raw, r.values);
      for (double v : t.double_data())
        r.values.push_back(v);
      break;
    case TP::FLOAT16: {
      r.is_float = true;
      std::vector<double> bits;
      if (!raw.empty()) append_raw<std::uint16_t>(raw, bits);
      for (int v : t.int32_data())
        bits.push_back(v);
      for (double b : bits)
        r.values.push_back(half_to_double(static_cast<std::uint16_t>(b)));
      break;
    }
    case TP::INT64:
      if (!raw.empty()) append_raw<std::int64_t>(raw, r.values);
      for (auto v : t.int64_data())
        r.values.push_back(static_cast<double>(v));
      break;
    case TP::INT32:
      if (!raw.empty()) append_raw<std::int32_t>(raw, r.values);
      for (int v : t.int32_data())
        r.values.push_back(v);
      break;
    case TP::INT16:
      if (!raw.empty()) append_raw<std::int16_t>(raw, r.values);
      for (int v : t.int32_data())
        r.values.push_back(v);
      break;
    case TP::INT8:
      if (!raw.empty()) append_raw<std::int8_t>(raw, r.values);
      for (int v : t.int32_data())
        r.values.push_back(v);
      break;
    case TP::UINT8:
    case TP::BOOL:
      if (!raw.empty()) append_raw<std::uint8_t>(raw, r.values);
      for (int v : t.int32_data())
        r.values.push_back(v);
      break;
    case TP::UINT16:
      if (!raw.empty()) append_raw<std::uint16_t>(raw, r.values);
      for (int v : t.int32_data())
        r.values.push_back(v);
      break;
    case TP::UINT32:
    case TP::UINT64:
      if (!raw.empty()) {
        if (t.data_type() == TP::UINT32) {
          append_raw<std::uint32_t>(raw, r.values);
        } else {
          append_raw<std::uint64_t>(raw, r.values);
        }
      }
      for (auto v : t.uint64_data())
        r.values.push_back(static_cast<double>(v));
      break;
    default:
      *why = file.filename().string() + " holds ONNX element type " + std::to_string(t.data_type());
      return std::nullopt;
  }
  std::int64_t n = 1;
  for (auto d : r.dims)
    n *= d;
  if (n != static_cast<std::int64_t>(r.values.size())) {
    *why = file.filename().string() + ": " + std::to_string(r.values.size()) + " values for " +
           std::to_string(n) + " elements";
    return std::nullopt;
  }
  return r;
}

std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    files.push_back(p);
  }
  return files;
}

std::string dims_text(const std::vector<std::int64_t>& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i)
    s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

Outcome run_case(const fs::path& dir) {
  auto model = Model::load({.path = (dir / "model.onnx").string()});
  if (!model.ok()) {
    const std::string msg = model.error().message();
    if (model.error().code() == ErrorCode::Unimplemented &&
        msg.find("not f32") != std::string::npos)
      return {"input", msg};
    return {"load", msg};
  }
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {"data", "no test_data_set_N folder"};
  // The reference outputs follow the graph's declared outputs; OpenCV's come
  // in its own order, under the same names: where reference output k is.
  std::vector<std::size_t> index_of;
  {
    onnx::ModelProto proto;
    std::ifstream in(dir / "model.onnx", std::ios::binary);
    proto.ParseFromIstream(&in);  // Model::load parsed it already
    for (int k = 0; k < proto.graph().output_size(); ++k) {
      std::size_t index = static_cast<std::size_t>(k);
      for (std::size_t j = 0; j < (*model)->outputs().size(); ++j)
        if ((*model)->outputs()[j].name == proto.graph().output(k).name()) index = j;
      index_of.push_back(index);
    }
  }
  bool shape_differs = false;
  std::string shape_detail;
  for (const fs::path& set : sets) {
    std::vector<NeatTensor> inputs;
    for (const fs::path& f : numbered(set, "input_")) {
      std::string why;
      auto ref = read_reference(f, &why);
      if (!ref) return {"data", why};
      Dims shape;
      for (auto d : ref->dims)
        shape.push_back(d);
      auto t = NeatTensor::allocate(DType::F32, shape);
      if (!t.ok()) return {"data", t.error().message()};
      auto w = std::move(*t).make_writable();
      if (!w.ok()) return {"data", w.error().message()};
      {
        auto m = w->map(MapMode::Write);
        if (!m.ok()) return {"data", m.error().message()};
        auto* p = reinterpret_cast<float*>(m->mutable_data());
        for (std::size_t i = 0; i < ref->values.size(); ++i)
          p[i] = static_cast<float>(ref->values[i]);
      }
      inputs.push_back(*std::move(w));
    }
    std::vector<NeatTensor> outputs;
    if (Status s = (*model)->run(inputs, outputs); !s.ok()) return {"run", s.error().message()};
    const auto expected_files = numbered(set, "output_");
    for (std::size_t k = 0; k < expected_files.size(); ++k) {
      std::string why;
      auto ref = read_reference(expected_files[k], &why);
      if (!ref) return {"data", why};
      const std::size_t index = k < index_of.size() ? index_of[k] : k;
      if (index >= outputs.size()) {
        return {"mismatch", "output " + std::to_string(k) + " missing (OpenCV gives " +
                                std::to_string(outputs.size()) + ")"};
      }
      const NeatTensor& got = outputs[index];
      if (got.numel() != static_cast<std::int64_t>(ref->values.size())) {
        return {"mismatch", "output " + std::to_string(k) + " is " +
                                dims_text({got.shape().begin(), got.shape().end()}) +
                                ", expected " + dims_text(ref->dims)};
      }
      auto c = got.contiguous();
      if (!c.ok()) return {"run", c.error().message()};
      auto m = c->map();
      if (!m.ok()) return {"run", m.error().message()};
      for (std::size_t i = 0; i < ref->values.size(); ++i) {
        double g = 0;
        const std::byte* p = m->data();
        switch (got.dtype()) {
          case DType::F32:
            g = reinterpret_cast<const float*>(p)[i];
            break;
          case DType::I32:
            g = reinterpret_cast<const std::int32_t*>(p)[i];
            break;
          case DType::I64:
            g = static_cast<double>(reinterpret_cast<const std::int64_t*>(p)[i]);
            break;
          case DType::U8:
            g = reinterpret_cast<const std::uint8_t*>(p)[i];
            break;
          case DType::F64:
            g = reinterpret_cast<const double*>(p)[i];
            break;
          default:
            return {"mismatch",
                    "output " + std::to_string(k) + " is " + std::string(to_string(got.dtype()))};
        }
        const double want = ref->values[i];
        const bool ok = (std::isnan(want) && std::isnan(g)) || g == want ||
                        std::abs(g - want) <= 1e-7 + 1e-3 * std::abs(want);
        if (!ok) {
          std::ostringstream o;
          o << "output " << k << " element " << i << ": " << g << ", expected " << want;
          return {"mismatch", o.str()};
        }
      }
      std::vector<std::int64_t> got_dims(got.shape().begin(), got.shape().end());
      if (got_dims != ref->dims && !shape_differs) {
        shape_differs = true;
        shape_detail = "output " + std::to_string(k) + " is " + dims_text(got_dims) +
                       ", expected " + dims_text(ref->dims);
      }
    }
  }
  if (shape_differs) return {"shape", shape_detail};
  return {"pass", ""};
}

std::map<std::string, std::string> read_list() {
  std::map<std::string, std::string> list;
  std::ifstream in(NEAT_CONFORMANCE_LIST);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, status;
    fields >> name >> status;
    list[name] = status;
  }
  return list;
}

TEST(OnnxConformance, EveryCaseOfLibonnxTestdataAsListed) {
  cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
  const fs::path root = NEAT_ONNX_TESTDATA_DIR;
  ASSERT_TRUE(fs::is_directory(root)) << root << ": install libonnx-testdata";
  std::map<std::string, Outcome> seen;
  for (const char* group : {"node", "pytorch-operator", "pytorch-converted", "simple"}) {
    for (const auto& e : fs::directory_iterator(root / group)) {
      if (!fs::exists(e.path() / "model.onnx")) continue;
      seen[std::string(group) + "/" + e.path().filename().string()] = run_case(e.path());
    }
  }
  if (const char* out = std::getenv("NEAT_CONFORMANCE_WRITE")) {
    std::ofstream f(out);
    for (const auto& [name, o] : seen) {
      std::string detail = o.detail.substr(0, o.detail.find('\n'));
      if (auto p = detail.find("/model.onnx': "); p != std::string::npos) {
        detail = detail.substr(p + 14);  // the case's name says which model
      }
      f << name << ' ' << o.status << (detail.empty() ? "" : "  # " + detail) << '\n';
    }
  }
  const auto list = read_list();
  ASSERT_FALSE(list.empty()) << NEAT_CONFORMANCE_LIST;
  std::map<std::string, int> totals;
  int changed = 0;
  for (const auto& [name, o] : seen) {
    ++totals[o.status];
    auto it = list.find(name);
    if (it == list.end()) {
      ADD_FAILURE() << name << ": " << o.status << " (not in the list)";
      ++changed;
    } else if (it->second != o.status) {
      ADD_FAILURE() << name << ": " << o.status << ", listed as " << it->second << "  " << o.detail;
      ++changed;
    }
  }
  for (const auto& [name, status] : list)
    if (!seen.count(name)) ADD_FAILURE() << name << ": listed, not in " << root;
  std::string summary;
  for (const auto& [status, n] : totals)
    summary += " " + status + "=" + std::to_string(n);
  std::cout << "libonnx-testdata through neat::Model: " << seen.size() << " cases:" << summary
            << "\n";
  EXPECT_EQ(changed, 0);
  EXPECT_GT(totals["pass"], 100) << "the list's passes are the suite's point";
}

}  // namespace
}  // namespace neat

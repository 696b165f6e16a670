#include "neat/stages/pipeline.hpp"

#include <cctype>
#include <charconv>

#include "neat/stages/builtin.hpp"
#include "neat/stages/gst_io.hpp"

namespace neat {
namespace {

// "pipeline: <what>\n  <text>\n  <caret>"
Error at(std::string_view text, std::size_t offset, std::size_t length, const std::string& what) {
  std::string m = "pipeline: " + what + " (column " + std::to_string(offset + 1) + ")\n  ";
  m += text;
  m += "\n  ";
  m.append(offset, ' ');
  m.append(std::max<std::size_t>(length, 1), '^');
  return invalid_argument(std::move(m));
}

struct Token {
  std::string text;
  std::size_t offset = 0;
  std::size_t length = 0;
  bool quoted = false;
};

// Splits an element's text into whitespace-separated tokens; "..." may appear
// anywhere inside a token (gst:"...", key="...").
Result<std::vector<Token>> tokenize(std::string_view full, std::size_t begin, std::size_t end) {
  std::vector<Token> out;
  std::size_t i = begin;
  while (i < end) {
    while (i < end && std::isspace(static_cast<unsigned char>(full[i])))
      ++i;
    if (i >= end) break;
    Token t;
    t.offset = i;
    while (i < end && !std::isspace(static_cast<unsigned char>(full[i]))) {
      if (full[i] == '"') {
        t.quoted = true;
        const std::size_t open = i++;
        bool closed = false;
        while (i < end) {
          if (full[i] == '\\' && i + 1 < end) {
            t.text += full[i + 1];
            i += 2;
          } else if (full[i] == '"') {
            closed = true;
            ++i;
            break;
          } else {
            t.text += full[i++];
          }
        }
        if (!closed) return at(full, open, end - open, "unterminated quote");
      } else {
        t.text += full[i++];
      }
    }
    t.length = i - t.offset;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

Result<std::vector<PipelineElement>> parse_pipeline(std::string_view text) {
  std::vector<PipelineElement> elements;
  // Split on '!' outside quotes.
  std::vector<std::pair<std::size_t, std::size_t>> parts;
  std::size_t start = 0;
  bool quoted = false;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (quoted && i + 1 < text.size() && text[i] == '\\') {  // an escaped character
      ++i;
      continue;
    }
    if (i < text.size() && text[i] == '"') quoted = !quoted;
    if (i == text.size() || (!quoted && text[i] == '!')) {
      parts.emplace_back(start, i);
      start = i + 1;
    }
  }
  for (auto [b, e] : parts) {
    NEAT_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(text, b, e));
    if (tokens.empty()) {
      return at(text, b < text.size() ? b : text.size(), 1,
                parts.size() == 1 ? "empty pipeline" : "empty element between '!'");
    }
    PipelineElement el;
    const Token& head = tokens[0];
    el.offset = head.offset;
    el.length = head.length;
    if (head.text.rfind("gst:", 0) == 0) {
      el.name = "gst";
      el.gst = head.text.substr(4);
      if (!head.quoted || el.gst.empty()) {
        return at(text, head.offset, head.length,
                  "gst: takes a quoted GStreamer description, e.g. gst:\"videotestsrc\"");
      }
    } else {
      el.name = head.text;
      if (head.quoted || el.name.find('=') != std::string::npos) {
        return at(text, head.offset, head.length,
                  "an element starts with its name, not '" + head.text + "'");
      }
    }
    for (std::size_t k = 1; k < tokens.size(); ++k) {
      const Token& t = tokens[k];
      const auto eq = t.text.find('=');
      if (eq == std::string::npos || eq == 0) {
        return at(text, t.offset, t.length,
                  "expected key=value after '" + el.name + "', got '" + t.text + "'");
      }
      el.properties.emplace_back(t.text.substr(0, eq), t.text.substr(eq + 1));
    }
    elements.push_back(std::move(el));
  }
  return elements;
}

namespace {

// Property access with errors pointing at the element.
class Props {
 public:
  Props(std::string_view text, const PipelineElement& el) : text_(text), el_(el) {}

  Error fail(const std::string& what) const { return at(text_, el_.offset, el_.length, what); }

  std::optional<std::string> take(const std::string& key) {
    for (std::size_t i = 0; i < el_.properties.size(); ++i) {
      if (el_.properties[i].first == key && !used_[i]) {
        used_[i] = true;
        return el_.properties[i].second;
      }
    }
    return std::nullopt;
  }
  Status done() const {
    for (std::size_t i = 0; i < el_.properties.size(); ++i) {
      if (!used_[i]) {
        return fail("'" + el_.name + "' has no property '" + el_.properties[i].first + "'");
      }
    }
    return {};
  }
  Result<std::int64_t> integer(const std::string& key, std::int64_t fallback) {
    auto v = take(key);
    if (!v) return fallback;
    std::int64_t out = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
    if (ec != std::errc() || p != v->data() + v->size()) {
      return fail(key + "=" + *v + " is not an integer");
    }
    return out;
  }
  Result<float> number(const std::string& key, float fallback) {
    auto v = take(key);
    if (!v) return fallback;
    return parse_float(key, *v);
  }
  Result<float> parse_float(const std::string& key, const std::string& v) const {
    float out = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || p != v.data() + v.size())
      return fail(key + "=" + v + " is not a number");
    return out;
  }
  template <std::size_t N>
  Result<std::array<float, N>> floats(const std::string& key, std::array<float, N> fallback) {
    auto v = take(key);
    if (!v) return fallback;
    std::array<float, N> out{};
    std::size_t n = 0, start = 0;
    for (std::size_t i = 0; i <= v->size(); ++i) {
      if (i == v->size() || (*v)[i] == ',') {
        if (n == N) return fail(key + " takes " + std::to_string(N) + " comma-separated numbers");
        NEAT_ASSIGN_OR_RETURN(out[n], parse_float(key, v->substr(start, i - start)));
        ++n;
        start = i + 1;
      }
    }
    if (n != N) return fail(key + " takes " + std::to_string(N) + " comma-separated numbers");
    return out;
  }
  Result<std::pair<std::int64_t, std::int64_t>> size(const std::string& key, bool required) {
    auto v = take(key);
    if (!v) {
      if (required) return fail("'" + el_.name + "' needs " + key + "=WIDTHxHEIGHT");
      return std::pair<std::int64_t, std::int64_t>{0, 0};
    }
    const auto x = v->find('x');
    std::int64_t w = 0, h = 0;
    if (x != std::string::npos) {
      auto r1 = std::from_chars(v->data(), v->data() + x, w);
      auto r2 = std::from_chars(v->data() + x + 1, v->data() + v->size(), h);
      if (r1.ec == std::errc() && r1.ptr == v->data() + x && r2.ec == std::errc() &&
          r2.ptr == v->data() + v->size() && w > 0 && h > 0) {
        return std::pair{w, h};
      }
    }
    return fail(key + "=" + *v + " is not WIDTHxHEIGHT (e.g. 640x640)");
  }
  template <class T>
  Result<T> choice(const std::string& key, T fallback,
                   std::initializer_list<std::pair<const char*, T>> options) {
    auto v = take(key);
    if (!v) return fallback;
    std::string names;
    for (const auto& [n, value] : options) {
      if (*v == n) return value;
      names += (names.empty() ? "" : ", ") + std::string(n);
    }
    return fail(key + "=" + *v + " is not one of: " + names);
  }

 private:
  std::string_view text_;
  const PipelineElement& el_;
  std::vector<bool> used_ = std::vector<bool>(el_.properties.size(), false);
};

Result<PixelFormat> format_named(Props& p, const std::string& key, PixelFormat fallback) {
  return p.choice<PixelFormat>(key, fallback,
                               {{"GRAY8", PixelFormat::GRAY8},
                                {"RGB", PixelFormat::RGB},
                                {"BGR", PixelFormat::BGR},
                                {"RGBA", PixelFormat::RGBA},
                                {"BGRA", PixelFormat::BGRA},
                                {"NV12", PixelFormat::NV12},
                                {"NV21", PixelFormat::NV21},
                                {"I420", PixelFormat::I420},
                                {"YV12", PixelFormat::YV12}});
}

// colorimetry=bt601|bt709|bt2020[-full|-limited]: the standard to decode YUV with.
Result<Colorimetry> colorimetry_named(Props& p) {
  auto v = p.take("colorimetry");
  if (!v) return Colorimetry{};
  if (auto c = parse_colorimetry(*v)) return *c;
  return p.fail("colorimetry=" + *v +
                " is not one of: bt601, bt709, bt2020 (limited range), each with -full or "
                "-limited (e.g. bt709-full)");
}

Result<DType> dtype_named(Props& p, const std::string& key, DType fallback) {
  return p.choice<DType>(key, fallback,
                         {{"u8", DType::U8},
                          {"i8", DType::I8},
                          {"u16", DType::U16},
                          {"i16", DType::I16},
                          {"u32", DType::U32},
                          {"i32", DType::I32},
                          {"i64", DType::I64},
                          {"f16", DType::F16},
                          {"bf16", DType::BF16},
                          {"f32", DType::F32},
                          {"f64", DType::F64}});
}

Result<Interpolation> interp_named(Props& p) {
  return p.choice<Interpolation>(
      "interp", Interpolation::Bilinear,
      {{"bilinear", Interpolation::Bilinear}, {"nearest", Interpolation::Nearest}});
}

Result<std::optional<ConversionPolicy>> policy_named(Props& p) {
  auto v = p.choice<int>("policy", -1, {{"strict", 0}, {"trace", 1}, {"silent", 2}});
  if (!v.ok()) return v.error();
  if (*v < 0) return std::optional<ConversionPolicy>();
  static constexpr ConversionPolicy kPolicies[] = {
      ConversionPolicy::Strict, ConversionPolicy::AllowWithTrace, ConversionPolicy::AllowSilent};
  return std::optional<ConversionPolicy>(kPolicies[*v]);
}

constexpr const char* kStageNames =
    "convert, resize, crop, normalize, cast, layout, pack, transfer, preprocess, inspect";

}  // namespace

std::string default_pipeline_text() {
  return "default ! preprocess size=640x640 mean=0.485,0.456,0.406 std=0.229,0.224,0.225 ! "
         "appsink";
}

Result<BuiltPipeline> declare_pipeline(std::string_view text, PipelineOptions options) {
  NEAT_ASSIGN_OR_RETURN(std::vector<PipelineElement> elements, parse_pipeline(text));
  if (elements.size() < 2) {
    if (elements.empty()) return at(text, 0, text.size(), "empty pipeline");
    return at(text, elements[0].offset, elements[0].length,
              "a pipeline needs a source and a sink: SOURCE ! [STAGE ! ...] SINK");
  }
  BuiltPipeline out{GraphBuilder(options.graph_name), nullptr, {}};
  if (options.policy) out.builder.set_policy(*options.policy);
  std::vector<std::string> names;
  auto unique_name = [&](Props& p, const std::string& base) -> Result<std::string> {
    std::string name = p.take("name").value_or("");
    if (name.empty()) {
      name = base;
      for (int k = 2; std::find(names.begin(), names.end(), name) != names.end(); ++k) {
        name = base + std::to_string(k);
      }
    } else if (std::find(names.begin(), names.end(), name) != names.end()) {
      return p.fail("two elements are named '" + name + "'");
    }
    names.push_back(name);
    return name;
  };

  for (std::size_t i = 0; i < elements.size(); ++i) {
    const PipelineElement& el = elements[i];
    Props p(text, el);
    const bool first = i == 0, last = i + 1 == elements.size();
    if (first) {
      std::unique_ptr<Source> source;
      if (el.name == "gst") {
        source = gst_source(el.gst);
      } else if (el.name == "default") {
        NEAT_ASSIGN_OR_RETURN(std::int64_t frames, p.integer("frames", options.default_frames));
        if (frames <= 0) return p.fail("frames must be positive");
        source = gst_source(default_gst_source_description(frames));
      } else if (el.name == "file") {
        auto location = p.take("location");
        if (!location) return p.fail("'file' needs location=PATH");
        NEAT_ASSIGN_OR_RETURN(PixelFormat f, format_named(p, "format", PixelFormat::None));
        std::string escaped;
        for (char c : *location) {
          if (c == '"' || c == '\\') escaped += '\\';
          escaped += c;
        }
        // The decoder's own format is handed over as it is. format= asks for
        // another one: NeatTensor inserts a videoconvert, an implicit
        // conversion ruled by the policy (refused under Strict unless the
        // decoder already gives that format).
        std::string description = "filesrc location=\"" + escaped + "\" ! decodebin";
        GstSourceOptions so;
        if (f != PixelFormat::None) {
          description +=
              " ! videoconvert name=file_convert ! video/x-raw,format=" + std::string(to_string(f));
          so.implicit_elements = {"file_convert"};
          so.implicit_fix =
              "drop format= to take the decoder's own format and convert in the graph "
              "(e.g. `convert format=RGB`, traced), or write the conversion yourself in a "
              "gst:\"...\" description";
        }
        source = gst_source(std::move(description), std::move(so));
      } else if (el.name == "synthetic") {
        NEAT_ASSIGN_OR_RETURN(PixelFormat f, format_named(p, "format", PixelFormat::NV12));
        NEAT_ASSIGN_OR_RETURN(auto size, p.size("size", false));
        if (size.first == 0) size = {1920, 1080};
        NEAT_ASSIGN_OR_RETURN(std::int64_t frames, p.integer("frames", options.default_frames));
        if (frames <= 0) return p.fail("frames must be positive");
        source = synthetic_source(FrameSpec::image(f, size.first, size.second), frames);
      } else {
        return p.fail(
            "the first element must be a source (default, file, synthetic or "
            "gst:\"...\"), not '" +
            el.name + "'");
      }
      NEAT_ASSIGN_OR_RETURN(std::string name,
                            unique_name(p, el.name == "gst" ? "source" : el.name));
      NEAT_RETURN_IF_ERROR(p.done());
      out.builder.add_source(name, std::move(source));
      out.source_name = name;
      continue;
    }
    if (last) {
      std::shared_ptr<Sink> sink;
      if (el.name == "appsink") {
        NEAT_ASSIGN_OR_RETURN(std::int64_t cap, p.integer("capacity", 8));
        if (cap <= 0) return p.fail("capacity must be positive");
        NEAT_ASSIGN_OR_RETURN(Overflow overflow,
                              p.choice<Overflow>("overflow", Overflow::Block,
                                                 {{"block", Overflow::Block},
                                                  {"drop-oldest", Overflow::DropOldest}}));
        out.appsink =
            AppSink::create({.capacity = static_cast<std::size_t>(cap), .overflow = overflow});
        sink = out.appsink;
      } else if (el.name == "gst") {
        sink = gst_appsrc_sink(el.gst);
      } else {
        return p.fail("the last element must be a sink (appsink or gst:\"...\"), not '" + el.name +
                      "'");
      }
      NEAT_ASSIGN_OR_RETURN(std::string name, unique_name(p, el.name == "gst" ? "sink" : el.name));
      NEAT_RETURN_IF_ERROR(p.done());
      out.builder.add_sink(name, std::move(sink));
      NEAT_RETURN_IF_ERROR(out.builder.connect(names[names.size() - 2], name));
      continue;
    }
    // A stage.
    std::unique_ptr<Stage> stage;
    const std::string& n = el.name;
    if (n == "convert") {
      if (std::none_of(el.properties.begin(), el.properties.end(),
                       [](const auto& kv) { return kv.first == "format"; })) {
        return p.fail("'convert' needs format=FORMAT (e.g. RGB)");
      }
      NEAT_ASSIGN_OR_RETURN(PixelFormat f, format_named(p, "format", PixelFormat::RGB));
      NEAT_ASSIGN_OR_RETURN(Colorimetry c, colorimetry_named(p));
      stage = convert_stage(f, c);
    } else if (n == "resize") {
      NEAT_ASSIGN_OR_RETURN(auto size, p.size("size", true));
      NEAT_ASSIGN_OR_RETURN(Interpolation interp, interp_named(p));
      stage = resize_stage(size.first, size.second, interp);
    } else if (n == "crop") {
      NEAT_ASSIGN_OR_RETURN(std::int64_t x, p.integer("x", 0));
      NEAT_ASSIGN_OR_RETURN(std::int64_t y, p.integer("y", 0));
      NEAT_ASSIGN_OR_RETURN(auto size, p.size("size", true));
      stage = crop_stage(x, y, size.first, size.second);
    } else if (n == "normalize") {
      NormalizeParams np;
      NEAT_ASSIGN_OR_RETURN(np.scale, p.number("scale", 1.0f / 255.0f));
      NEAT_ASSIGN_OR_RETURN(auto mean, p.floats<3>("mean", {0.f, 0.f, 0.f}));
      NEAT_ASSIGN_OR_RETURN(auto stdv, p.floats<3>("std", {1.f, 1.f, 1.f}));
      for (int c = 0; c < 3; ++c) {
        np.mean[static_cast<std::size_t>(c)] = mean[static_cast<std::size_t>(c)];
        np.std[static_cast<std::size_t>(c)] = stdv[static_cast<std::size_t>(c)];
      }
      NEAT_ASSIGN_OR_RETURN(np.out_dtype, dtype_named(p, "dtype", DType::F32));
      NEAT_ASSIGN_OR_RETURN(
          np.out_layout,
          p.choice<Layout>("layout", Layout::CHW, {{"chw", Layout::CHW}, {"hwc", Layout::HWC}}));
      stage = normalize_stage(np);
    } else if (n == "cast") {
      if (std::none_of(el.properties.begin(), el.properties.end(),
                       [](const auto& kv) { return kv.first == "dtype"; })) {
        return p.fail("'cast' needs dtype=DTYPE (e.g. f32)");
      }
      NEAT_ASSIGN_OR_RETURN(DType d, dtype_named(p, "dtype", DType::F32));
      stage = cast_stage(d);
    } else if (n == "layout") {
      NEAT_ASSIGN_OR_RETURN(
          Layout l,
          p.choice<Layout>("to", Layout::None, {{"chw", Layout::CHW}, {"hwc", Layout::HWC}}));
      if (l == Layout::None) return p.fail("'layout' needs to=chw or to=hwc");
      stage = layout_stage(l);
    } else if (n == "preprocess") {
      PreprocessParams pp;
      NEAT_ASSIGN_OR_RETURN(auto size, p.size("size", false));
      if (size.first > 0) pp.width = size.first, pp.height = size.second;
      NEAT_ASSIGN_OR_RETURN(pp.scale, p.number("scale", pp.scale));
      NEAT_ASSIGN_OR_RETURN(pp.mean, p.floats<3>("mean", pp.mean));
      NEAT_ASSIGN_OR_RETURN(pp.std, p.floats<3>("std", pp.std));
      NEAT_ASSIGN_OR_RETURN(pp.out_dtype, dtype_named(p, "dtype", DType::F32));
      NEAT_ASSIGN_OR_RETURN(pp.channel_order, p.choice<PixelFormat>("order", PixelFormat::RGB,
                                                                    {{"rgb", PixelFormat::RGB},
                                                                     {"bgr", PixelFormat::BGR}}));
      NEAT_ASSIGN_OR_RETURN(pp.interpolation, interp_named(p));
      NEAT_ASSIGN_OR_RETURN(pp.colorimetry, colorimetry_named(p));
      stage = preprocess_stage(pp);
    } else if (n == "pack") {
      stage = pack_stage();
    } else if (n == "transfer") {
      NEAT_ASSIGN_OR_RETURN(int d, p.choice<int>("device", 0, {{"cpu", 0}}));
      (void)d;  // only the CPU is a target today
      stage = transfer_stage(kCpu);
    } else if (n == "inspect") {
      stage = inspect_stage();
    } else if (n == "gst" || n == "appsink") {
      return p.fail("'" + n + "' can only end a pipeline");
    } else if (n == "default" || n == "file" || n == "synthetic") {
      return p.fail("'" + n + "' is a source: it can only start a pipeline");
    } else {
      return p.fail("unknown stage '" + n + "' (stages: " + kStageNames + ")");
    }
    NEAT_ASSIGN_OR_RETURN(std::optional<ConversionPolicy> policy, policy_named(p));
    NEAT_ASSIGN_OR_RETURN(std::string name, unique_name(p, n));
    NEAT_RETURN_IF_ERROR(p.done());
    out.builder.add_stage(name, std::move(stage), {.policy = policy});
    NEAT_RETURN_IF_ERROR(out.builder.connect(names[names.size() - 2], name));
  }
  return out;
}

}  // namespace neat

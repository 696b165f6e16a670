// ElementArgs: an element's key=value properties read as typed values, each
// error pointing at the element in the pipeline text (elements.hpp).
#include <charconv>
#include <cstdio>

#include "neat/stages/elements.hpp"

namespace neat {

ElementArgs::ElementArgs(std::string_view text, const PipelineElement& element,
                         const PipelineOptions& options)
    : text_(text), el_(element), options_(options), used_(element.properties.size(), false) {}

Error ElementArgs::fail(const std::string& what) const {
  return pipeline_error(text_, el_.offset, el_.length, what);
}

Error ElementArgs::fail(const Error& cause) const {
  const Error at = pipeline_error(text_, el_.offset, el_.length, "");
  // "pipeline:  (column N)\n  text\n  ^^^" -> the column and the caret lines.
  std::string what(cause.where());
  if (!what.empty()) what += ": ";
  what += cause.what();
  what += at.message().substr(std::string_view("pipeline: ").size());
  std::vector<Fix> fixes(cause.fixes().begin(), cause.fixes().end());
  return Error(cause.code(), "pipeline", std::move(what), std::move(fixes));
}

std::optional<std::string> ElementArgs::take(const std::string& key) {
  for (std::size_t i = 0; i < el_.properties.size(); ++i) {
    if (el_.properties[i].first == key && !used_[i]) {
      used_[i] = true;
      return el_.properties[i].second;
    }
  }
  return std::nullopt;
}

bool ElementArgs::has(const std::string& key) const {
  return std::any_of(el_.properties.begin(), el_.properties.end(),
                     [&](const auto& kv) { return kv.first == key; });
}

Status ElementArgs::done() const {
  for (std::size_t i = 0; i < el_.properties.size(); ++i) {
    if (!used_[i]) {
      return fail("'" + el_.name + "' has no property '" + el_.properties[i].first + "'");
    }
  }
  return {};
}

Result<std::int64_t> ElementArgs::integer(const std::string& key, std::int64_t fallback) {
  auto v = take(key);
  if (!v) return fallback;
  std::int64_t out = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || p != v->data() + v->size()) {
    return fail(key + "=" + *v + " is not an integer");
  }
  return out;
}

Result<float> ElementArgs::number(const std::string& key, float fallback) {
  auto v = take(key);
  if (!v) return fallback;
  return parse_float(key, *v);
}

Result<float> ElementArgs::parse_float(const std::string& key, const std::string& v) const {
  float out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size())
    return fail(key + "=" + v + " is not a number");
  return out;
}

Result<std::array<float, 3>> ElementArgs::numbers3(const std::string& key,
                                                   std::array<float, 3> fallback) {
  auto v = take(key);
  if (!v) return fallback;
  std::array<float, 3> out{};
  std::size_t n = 0, start = 0;
  for (std::size_t i = 0; i <= v->size(); ++i) {
    if (i == v->size() || (*v)[i] == ',') {
      if (n == 3) return fail(key + " takes 3 comma-separated numbers");
      NEAT_ASSIGN_OR_RETURN(out[n], parse_float(key, v->substr(start, i - start)));
      ++n;
      start = i + 1;
    }
  }
  if (n != 3) return fail(key + " takes 3 comma-separated numbers");
  return out;
}

Result<std::pair<std::int64_t, std::int64_t>> ElementArgs::size(const std::string& key,
                                                                bool required) {
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

Result<std::vector<std::int64_t>> ElementArgs::shape(const std::string& key) {
  auto v = take(key);
  std::vector<std::int64_t> dims;
  if (!v) return dims;
  const char* p = v->data();
  const char* end = v->data() + v->size();
  while (p < end) {
    std::int64_t d = 0;
    auto r = std::from_chars(p, end, d);
    if (r.ec != std::errc() || d <= 0 || dims.size() >= 8) break;
    dims.push_back(d);
    p = r.ptr;
    if (p == end) return dims;
    if (*p != 'x') break;
    ++p;
  }
  return fail(key + "=" + *v + " is not a shape of positive extents (e.g. 1x3x640x640)");
}

Result<PixelFormat> ElementArgs::format(const std::string& key, PixelFormat fallback) {
  return choice<PixelFormat>(key, fallback,
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

Result<DType> ElementArgs::dtype(const std::string& key, DType fallback) {
  return choice<DType>(key, fallback,
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

Result<Colorimetry> ElementArgs::colorimetry() {
  auto v = take("colorimetry");
  if (!v) return Colorimetry{};
  if (auto c = parse_colorimetry(*v)) return *c;
  return fail("colorimetry=" + *v +
              " is not one of: bt601, bt709, bt2020 (limited range), each with -full or "
              "-limited (e.g. bt709-full)");
}

Result<Interpolation> ElementArgs::interpolation() {
  return choice<Interpolation>("interp", Interpolation::Bilinear,
                               {{"bilinear", Interpolation::Bilinear},
                                {"nearest", Interpolation::Nearest},
                                {"area", Interpolation::Area}});
}

Result<std::optional<ConversionPolicy>> ElementArgs::policy() {
  auto v = choice<int>("policy", -1, {{"strict", 0}, {"trace", 1}, {"silent", 2}});
  if (!v.ok()) return v.error();
  if (*v < 0) return std::optional<ConversionPolicy>();
  static constexpr ConversionPolicy kPolicies[] = {
      ConversionPolicy::Strict, ConversionPolicy::AllowWithTrace, ConversionPolicy::AllowSilent};
  return std::optional<ConversionPolicy>(kPolicies[*v]);
}

Result<std::chrono::milliseconds> ElementArgs::duration(const std::string& key,
                                                        std::chrono::milliseconds fallback) {
  auto v = take(key);
  if (!v) return fallback;
  std::string_view text = *v;
  double scale = 1000.0;  // seconds by default
  if (text.ends_with("ms")) {
    scale = 1.0;
    text.remove_suffix(2);
  } else if (text.ends_with("s")) {
    text.remove_suffix(1);
  }
  double value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || !(value >= 0) ||
      value * scale > 1e12) {
    return fail(key + "=" + *v + " is not a duration (e.g. 5s, 250ms, 0.5)");
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(value * scale + 0.5));
}

Result<SourceOptions> ElementArgs::source_options() {
  SourceOptions o = options_.streams;
  NEAT_ASSIGN_OR_RETURN(o.stall_timeout, duration("stall-timeout", o.stall_timeout));
  NEAT_ASSIGN_OR_RETURN(o.restart, choice<RestartPolicy>("restart", o.restart,
                                                         {{"live", RestartPolicy::Live},
                                                          {"always", RestartPolicy::Always},
                                                          {"never", RestartPolicy::Never}}));
  NEAT_ASSIGN_OR_RETURN(o.backoff_min, duration("backoff-min", o.backoff_min));
  NEAT_ASSIGN_OR_RETURN(o.backoff_max, duration("backoff-max", o.backoff_max));
  if (o.backoff_min.count() <= 0) {
    return fail(
        "backoff-min must be more than 0 (e.g. backoff-min=0.5s): the first restart "
        "attempt waits this long");
  }
  if (o.backoff_max < o.backoff_min) {
    // Each as the text gave it, or the default it fell back to.
    auto said = [&](const std::string& key, std::chrono::milliseconds value) {
      for (const auto& [k, text] : el_.properties)
        if (k == key) return key + "=" + text;
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s %gs (the default)", key.c_str(),
                    static_cast<double>(value.count()) / 1000.0);
      return std::string(buf);
    };
    return fail(said("backoff-max", o.backoff_max) + " is less than " +
                said("backoff-min", o.backoff_min) +
                ": the waits between restart attempts grow from backoff-min up to backoff-max");
  }
  NEAT_ASSIGN_OR_RETURN(float rate, number("rate", static_cast<float>(o.rate)));
  if (!(rate >= 0)) return fail("rate=" + std::to_string(rate) + " must be >= 0 frames per second");
  o.rate = rate;
  return o;
}

}  // namespace neat

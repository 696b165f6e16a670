#include "neat/stages/pipeline.hpp"

#include <cctype>
#include <charconv>

#include "neat/stages/elements.hpp"

namespace neat {
namespace {

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
        if (!closed) return pipeline_error(full, open, end - open, "unterminated quote");
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
      return pipeline_error(text, b < text.size() ? b : text.size(), 1,
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
        return pipeline_error(
            text, head.offset, head.length,
            "gst: takes a quoted GStreamer description, e.g. gst:\"videotestsrc\"");
      }
    } else {
      el.name = head.text;
      if (head.quoted || el.name.find('=') != std::string::npos) {
        return pipeline_error(text, head.offset, head.length,
                              "an element starts with its name, not '" + head.text + "'");
      }
    }
    for (std::size_t k = 1; k < tokens.size(); ++k) {
      const Token& t = tokens[k];
      const auto eq = t.text.find('=');
      if (eq == std::string::npos || eq == 0) {
        return pipeline_error(text, t.offset, t.length,
                              "expected key=value after '" + el.name + "', got '" + t.text + "'");
      }
      el.properties.emplace_back(t.text.substr(0, eq), t.text.substr(eq + 1));
    }
    elements.push_back(std::move(el));
  }
  return elements;
}

std::string default_pipeline_text() {
  return "default pattern=ball ! preprocess size=640x640 fit=letterbox batch=true ! "
         "infer model=models:detector ! yolo ! appsink";
}

Result<BuiltPipeline> declare_pipeline(std::string_view text, PipelineOptions options) {
  NEAT_ASSIGN_OR_RETURN(std::vector<PipelineElement> elements, parse_pipeline(text));
  if (elements.size() < 2) {
    if (elements.empty()) return pipeline_error(text, 0, text.size(), "empty pipeline");
    return pipeline_error(text, elements[0].offset, elements[0].length,
                          "a pipeline needs a source and a sink: SOURCE ! [STAGE ! ...] SINK");
  }
  BuiltPipeline out{GraphBuilder(options.graph_name), nullptr, {}};
  if (options.policy) out.builder.set_policy(*options.policy);
  std::vector<std::string> names;
  auto unique_name = [&](ElementArgs& a, const std::string& base) -> Result<std::string> {
    std::string name = a.take("name").value_or("");
    if (name.empty()) {
      name = base;
      for (int k = 2; std::find(names.begin(), names.end(), name) != names.end(); ++k) {
        name = base + std::to_string(k);
      }
    } else if (std::find(names.begin(), names.end(), name) != names.end()) {
      return a.fail("two elements are named '" + name + "'");
    }
    names.push_back(name);
    return name;
  };

  for (std::size_t i = 0; i < elements.size(); ++i) {
    const PipelineElement& el = elements[i];
    ElementArgs args(text, el, options);
    const ElementRole role = i == 0                     ? ElementRole::Source
                             : i + 1 == elements.size() ? ElementRole::Sink
                                                        : ElementRole::Stage;
    // The element exists and may stand here (the registry says where).
    const ElementSpec* spec = find_pipeline_element(el.name);
    if (spec == nullptr || !spec->has_role(role)) {
      if (role == ElementRole::Source) {
        return args.fail("the first element must be a source (" +
                         element_names(ElementRole::Source) + "), not '" + el.name + "'");
      }
      if (role == ElementRole::Sink) {
        return args.fail("the last element must be a sink (" + element_names(ElementRole::Sink) +
                         "), not '" + el.name + "'");
      }
      if (spec == nullptr) {
        return args.fail("unknown stage '" + el.name +
                         "' (stages: " + element_names(ElementRole::Stage) + ")");
      }
      return args.fail(spec->has_role(ElementRole::Sink)
                           ? "'" + el.name + "' can only end a pipeline"
                           : "'" + el.name + "' is a source: it can only start a pipeline");
    }
    // Every property is one the element declares; required ones are there.
    for (const auto& [key, value] : el.properties) {
      if (spec->property(key) == nullptr) {
        std::string known;
        for (const PropertySpec& p : spec->properties)
          known += (known.empty() ? "" : ", ") + p.name;
        return args.fail("'" + el.name + "' has no property '" + key + "' (properties: " + known +
                         ")");
      }
    }
    for (const PropertySpec& p : spec->properties) {
      if (p.required && !args.has(p.name)) {
        return args.fail("'" + el.name + "' needs " + p.name + "=" + p.placeholder);
      }
    }
    NEAT_ASSIGN_OR_RETURN(BuiltElement built, spec->make(args, role));
    std::optional<ConversionPolicy> policy;
    if (role == ElementRole::Stage) {
      NEAT_ASSIGN_OR_RETURN(policy, args.policy());
    }
    const std::string base = el.name != "gst"              ? el.name
                             : role == ElementRole::Source ? "source"
                                                           : "sink";
    NEAT_ASSIGN_OR_RETURN(std::string name, unique_name(args, base));
    NEAT_RETURN_IF_ERROR(args.done());
    switch (role) {
      case ElementRole::Source:
        out.builder.add_source(name, std::move(built.source));
        out.source_name = name;
        continue;
      case ElementRole::Stage:
        out.builder.add_stage(name, std::move(built.stage), {.policy = policy});
        break;
      case ElementRole::Sink:
        out.builder.add_sink(name, std::move(built.sink));
        out.appsink = std::move(built.appsink);
        break;
    }
    NEAT_RETURN_IF_ERROR(out.builder.connect(names[names.size() - 2], name));
  }
  return out;
}

}  // namespace neat

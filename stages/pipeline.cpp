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

// "t." (a name and a dot, unquoted): where a branch takes its frames from.
bool is_branch_start(const Token& t) {
  return !t.quoted && t.text.size() >= 2 && t.text.back() == '.' &&
         t.text.find_first_of("=:.") == t.text.size() - 1;
}

// The node whose frames a branch ("NAME. ! ...") takes: a tee's producer, or
// the source or stage of that name, declared before the branch.
Result<std::string> branch_producer(std::string_view text, const PipelineElement& el,
                                    const std::map<std::string, std::string, std::less<>>& tees,
                                    const std::map<std::string, ElementRole, std::less<>>& roles) {
  auto fail = [&](const std::string& what) {
    return pipeline_error(text, el.branch_offset, el.branch_length, what);
  };
  if (auto t = tees.find(el.branch_from); t != tees.end()) return t->second;
  const auto r = roles.find(el.branch_from);
  if (r == roles.end()) {
    std::string known;
    for (const auto& [name, role] : tees)
      known += (known.empty() ? "" : ", ") + name;
    for (const auto& [name, role] : roles) {
      if (role != ElementRole::Sink) known += (known.empty() ? "" : ", ") + name;
    }
    return fail("no tee or element named '" + el.branch_from + "' before this branch" +
                (known.empty() ? std::string() : " (branches can start at: " + known + ")"));
  }
  if (r->second == ElementRole::Sink) {
    return fail("'" + el.branch_from +
                "' is a sink: a branch starts at a tee, a source or a stage");
  }
  return r->first;
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
  Token pending_branch;  // a "NAME." that ended the previous part
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
    if (is_branch_start(head)) {
      return pipeline_error(text, head.offset, head.length,
                            "a branch '" + head.text +
                                "' starts after an element: "
                                "SOURCE ! tee name=t ! ... SINK  t. ! ... SINK");
    }
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
    if (!pending_branch.text.empty()) {  // "NAME. ! this": a branch starts here
      el.branch_from = pending_branch.text.substr(0, pending_branch.text.size() - 1);
      el.branch_offset = pending_branch.offset;
      el.branch_length = pending_branch.length;
      pending_branch = Token{};
    }
    for (std::size_t k = 1; k < tokens.size(); ++k) {
      const Token& t = tokens[k];
      if (is_branch_start(t)) {  // "... sink NAME. ! next": the next element's producer
        if (k + 1 != tokens.size()) {
          return pipeline_error(text, t.offset, t.length,
                                "a branch '" + t.text +
                                    "' is followed by '!' and its first "
                                    "element, e.g. " +
                                    t.text + " ! appsink");
        }
        if (e == text.size()) {  // the last part: no "!" follows
          return pipeline_error(text, t.offset, t.length,
                                "the branch '" + t.text + "' has no elements: add ! ELEMENT");
        }
        pending_branch = t;
        break;
      }
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
         "infer model=models:detector backend=torch ! yolo ! appsink";
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

  // Branches: the producer each element takes its frames from; a tee is a
  // name for its producer (no node of its own), and every node's name may
  // start a branch ("name.").
  std::map<std::string, std::string, std::less<>> tees;   // tee name -> its producer
  std::map<std::string, ElementRole, std::less<>> roles;  // node name -> its role
  std::string producer;                                   // of the next element in the chain
  for (std::size_t i = 0; i < elements.size(); ++i) {
    const PipelineElement& el = elements[i];
    ElementArgs args(text, el, options);
    if (!el.branch_from.empty()) {
      NEAT_ASSIGN_OR_RETURN(producer, branch_producer(text, el, tees, roles));
    }
    // The last element of the pipeline or of a branch is a sink.
    const bool ends_branch = i + 1 == elements.size() || !elements[i + 1].branch_from.empty();
    if (el.name == "tee") {  // a named branch point: the next elements take `producer`'s frames
      if (i == 0) return args.fail("a pipeline starts with a source, not a tee");
      if (i + 1 == elements.size()) {
        return args.fail("the tee has no branches: add ! ELEMENT ... after it, or NAME. ! ...");
      }
      NEAT_ASSIGN_OR_RETURN(std::string name, unique_name(args, "tee"));
      NEAT_RETURN_IF_ERROR(args.done());
      tees[name] = producer;
      continue;
    }
    const ElementRole role = i == 0        ? ElementRole::Source
                             : ends_branch ? ElementRole::Sink
                                           : ElementRole::Stage;
    // The element exists and may stand here (the registry says where).
    const ElementSpec* spec = find_pipeline_element(el.name);
    if (spec == nullptr || !spec->has_role(role)) {
      if (role == ElementRole::Source) {
        return args.fail("the first element must be a source (" +
                         element_names(ElementRole::Source) + "), not '" + el.name + "'");
      }
      if (role == ElementRole::Sink) {
        return args.fail("the last element of a pipeline or branch must be a sink (" +
                         element_names(ElementRole::Sink) + "), not '" + el.name + "'");
      }
      if (spec == nullptr) {
        return args.fail("unknown stage '" + el.name +
                         "' (stages: " + element_names(ElementRole::Stage) + ")");
      }
      return args.fail(spec->has_role(ElementRole::Sink)
                           ? "'" + el.name + "' can only end a pipeline or a branch"
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
    roles[name] = role;
    switch (role) {
      case ElementRole::Source:
        out.builder.add_source(name, std::move(built.source));
        out.source_name = name;
        producer = name;
        continue;
      case ElementRole::Stage:
        out.builder.add_stage(name, std::move(built.stage), {.policy = policy});
        break;
      case ElementRole::Sink:
        out.builder.add_sink(name, std::move(built.sink));
        if (built.appsink) {
          if (!out.appsink) out.appsink = built.appsink;
          out.appsinks.emplace_back(name, std::move(built.appsink));
        }
        break;
    }
    NEAT_RETURN_IF_ERROR(out.builder.connect(producer, name));
    producer = name;
  }
  return out;
}

}  // namespace neat

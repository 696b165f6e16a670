#include "neat/stages/pipeline.hpp"

#include <cctype>
#include <charconv>
#include <set>

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

// The name an element gives itself (name=...), or "" when it takes a default.
std::string element_name(const PipelineElement& el) {
  for (const auto& [key, value] : el.properties) {
    if (key == "name") return value;
  }
  return {};
}

// The node a link ("element ! NAME.") goes into: a stage or sink of that name.
Result<std::string> link_target(std::string_view text, const PipelineElement& el,
                                const std::map<std::string, std::string, std::less<>>& tees,
                                const std::map<std::string, ElementRole, std::less<>>& roles) {
  auto fail = [&](const std::string& what) {
    return pipeline_error(text, el.link_offset, el.link_length, what);
  };
  if (tees.contains(el.link_to)) {
    return fail("'" + el.link_to + "' is a tee: a link goes into a stage or a sink");
  }
  const auto r = roles.find(el.link_to);
  if (r == roles.end() || r->second == ElementRole::Source) {
    std::string known;
    for (const auto& [name, role] : roles) {
      if (role != ElementRole::Source) known += (known.empty() ? "" : ", ") + name;
    }
    return fail((r == roles.end() ? "no element is named '" + el.link_to + "'"
                                  : "'" + el.link_to + "' is a source: it takes no input") +
                " (links go into: " + (known.empty() ? std::string("none") : known) +
                "); name the element that takes the streams, e.g. infer name=" + el.link_to);
  }
  return r->first;
}

// The element from the registry, in its role: it may stand there, every
// property is one it declares, required ones are there.
Result<BuiltElement> make_element(const PipelineElement& el, ElementArgs& args, ElementRole role,
                                  bool first) {
  const ElementSpec* spec = find_pipeline_element(el.name);
  if (spec == nullptr || !spec->has_role(role)) {
    if (role == ElementRole::Source) {
      return args.fail(
          std::string(first ? "the first element" : "an element that starts a chain") +
          " must be a source (" + element_names(ElementRole::Source) + "), not '" + el.name + "'" +
          (first ? ""
                 : ", or take links from other chains: ... ! NAME.  " + el.name + " name=NAME"));
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
                         : "'" + el.name + "' is a source: it can only start a chain");
  }
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
  return spec->make(args, role);
}

// An element's name (or gst:"...") from its first token.
Status read_head(std::string_view text, const Token& head, PipelineElement& el) {
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
      return pipeline_error(text, head.offset, head.length,
                            "gst: takes a quoted GStreamer description, e.g. gst:\"videotestsrc\"");
    }
    return {};
  }
  el.name = head.text;
  if (head.quoted || el.name.find('=') != std::string::npos) {
    return pipeline_error(text, head.offset, head.length,
                          "an element starts with its name, not '" + head.text + "'");
  }
  return {};
}

// A bare token that names an element: a new chain starts there.
bool starts_element(const Token& t) {
  if (t.text.rfind("gst:", 0) == 0) return t.quoted;
  return !t.quoted && (t.text == "tee" || find_pipeline_element(t.text) != nullptr);
}

// An element's key=value properties, from token `first` on; a last token
// "NAME." starts a branch at the next part (`pending`). Returns where the
// element's tokens end: tokens.size(), or a token that starts a new chain.
Result<std::size_t> read_properties(std::string_view text, const std::vector<Token>& tokens,
                                    std::size_t first, std::size_t end, PipelineElement& el,
                                    Token& pending) {
  for (std::size_t k = first; k < tokens.size(); ++k) {
    const Token& t = tokens[k];
    if (starts_element(t)) return k;
    if (is_branch_start(t)) {  // "... sink NAME. ! next": the next element's producer
      if (k + 1 != tokens.size()) {
        return pipeline_error(text, t.offset, t.length,
                              "a branch '" + t.text +
                                  "' is followed by '!' and its first "
                                  "element, e.g. " +
                                  t.text + " ! appsink");
      }
      if (end == text.size()) {  // the last part: no "!" follows
        return pipeline_error(text, t.offset, t.length,
                              "the branch '" + t.text + "' has no elements: add ! ELEMENT");
      }
      pending = t;
      return tokens.size();
    }
    const auto eq = t.text.find('=');
    if (eq == std::string::npos || eq == 0) {
      return pipeline_error(text, t.offset, t.length,
                            "expected key=value after '" + el.name + "', got '" + t.text + "'");
    }
    el.properties.emplace_back(t.text.substr(0, eq), t.text.substr(eq + 1));
  }
  return tokens.size();
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
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const auto [b, e] = parts[p];
    NEAT_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(text, b, e));
    if (tokens.empty()) {
      return pipeline_error(text, b < text.size() ? b : text.size(), 1,
                            parts.size() == 1 ? "empty pipeline" : "empty element between '!'");
    }
    std::size_t k = 0;
    bool chain_start = p == 0;
    if (is_branch_start(tokens[0]) && pending_branch.text.empty()) {
      const Token& link = tokens[0];
      if (p == 0) {
        return pipeline_error(text, link.offset, link.length,
                              "a branch '" + link.text +
                                  "' starts after an element: "
                                  "SOURCE ! tee name=t ! ... SINK  t. ! ... SINK");
      }
      // "element ! NAME.": the previous element's frames go to NAME; the chain ends.
      PipelineElement& last = elements.back();
      last.link_to = link.text.substr(0, link.text.size() - 1);
      last.link_offset = link.offset;
      last.link_length = link.length;
      k = 1;
      chain_start = true;
      if (tokens.size() == 1) {
        if (p + 1 < parts.size()) {
          return pipeline_error(text, link.offset, link.length,
                                "'" + link.text +
                                    "' ends this chain; start the next with an element "
                                    "(SOURCE ! ...) or a branch (NAME. ! ...)");
        }
        continue;
      }
      if (is_branch_start(tokens[1])) {  // "... ! a.  t. ! next": a branch starts after the link
        if (tokens.size() != 2 || p + 1 == parts.size()) {
          return pipeline_error(
              text, tokens[1].offset, tokens[1].length,
              "a branch '" + tokens[1].text + "' is followed by '!' and its first element");
        }
        pending_branch = tokens[1];
        continue;
      }
    }
    // One element, or several when a new chain starts inside the part
    // ("appsink  SOURCE ... ! ...": whitespace, then an element's name).
    while (k < tokens.size()) {
      PipelineElement el;
      NEAT_RETURN_IF_ERROR(read_head(text, tokens[k], el));
      el.chain_start = chain_start && pending_branch.text.empty();
      if (!pending_branch.text.empty()) {  // "NAME. ! this": a branch starts here
        el.branch_from = pending_branch.text.substr(0, pending_branch.text.size() - 1);
        el.branch_offset = pending_branch.offset;
        el.branch_length = pending_branch.length;
        pending_branch = Token{};
      }
      NEAT_ASSIGN_OR_RETURN(k, read_properties(text, tokens, k + 1, e, el, pending_branch));
      elements.push_back(std::move(el));
      chain_start = true;
    }
  }
  return elements;
}

std::string default_pipeline_text() {
  return "default pattern=ball ! preprocess size=640x640 fit=letterbox batch=true ! "
         "infer model=models:detector backend=torch ! yolo ! appsink";
}

Result<BuiltPipeline> declare_pipeline(std::string_view text, PipelineOptions options) {
  if (!options.tracks) options.tracks = std::make_shared<TrackJournal>();
  NEAT_ASSIGN_OR_RETURN(std::vector<PipelineElement> elements, parse_pipeline(text));
  for (const PipelineElement& e : elements) {
    if (e.name != "infer" || !options.model_name.empty()) continue;
    for (const auto& [k, v] : e.properties)
      if (k == "model") options.model_name = v;
  }
  if (elements.size() < 2) {
    if (elements.empty()) return pipeline_error(text, 0, text.size(), "empty pipeline");
    return pipeline_error(text, elements[0].offset, elements[0].length,
                          "a pipeline needs a source and a sink: SOURCE ! [STAGE ! ...] SINK");
  }
  BuiltPipeline out{GraphBuilder(options.graph_name), nullptr, {}, {}};
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
  // start a branch ("name.") or take links from other chains ("... ! name.").
  // Connections are made once every node exists (a link may name a later one).
  std::map<std::string, std::string, std::less<>> tees;   // tee name -> its producer
  std::map<std::string, ElementRole, std::less<>> roles;  // node name -> its role
  std::vector<std::pair<std::string, std::string>> connections;
  std::vector<std::pair<std::string, const PipelineElement*>> links;  // from, element with link_to
  std::set<std::string, std::less<>> linked;                          // names that links go into
  for (const PipelineElement& el : elements) {
    if (!el.link_to.empty()) linked.insert(el.link_to);
  }
  std::string producer;  // of the next element in the chain
  for (std::size_t i = 0; i < elements.size(); ++i) {
    const PipelineElement& el = elements[i];
    ElementArgs args(text, el, options);
    if (!el.branch_from.empty()) {
      NEAT_ASSIGN_OR_RETURN(producer, branch_producer(text, el, tees, roles));
    } else if (el.chain_start) {
      producer.clear();
    }
    // The last element of the pipeline, a chain or a branch is a sink, unless it links on.
    const bool ends_chain = i + 1 == elements.size() || !elements[i + 1].branch_from.empty() ||
                            elements[i + 1].chain_start;
    const bool joined = el.chain_start && linked.contains(element_name(el));
    if (el.name == "tee") {  // a named branch point: the next elements take `producer`'s frames
      if (producer.empty()) return args.fail("a chain starts with a source, not a tee");
      if (ends_chain) {
        return args.fail("the tee has no branches: add ! ELEMENT ... after it, or NAME. ! ...");
      }
      NEAT_ASSIGN_OR_RETURN(std::string name, unique_name(args, "tee"));
      NEAT_RETURN_IF_ERROR(args.done());
      tees[name] = producer;
      continue;
    }
    const ElementRole role = el.chain_start && !joined          ? ElementRole::Source
                             : ends_chain && el.link_to.empty() ? ElementRole::Sink
                                                                : ElementRole::Stage;
    if (const ElementSpec* spec = find_pipeline_element(el.name);
        joined && spec != nullptr && !spec->has_role(ElementRole::Stage) &&
        !spec->has_role(ElementRole::Sink)) {
      return args.fail("'" + element_name(el) +
                       "' is a source: it takes no input (links ... ! NAME. go into a stage or a "
                       "sink)");
    }
    NEAT_ASSIGN_OR_RETURN(BuiltElement built, make_element(el, args, role, i == 0));
    StageOptions stage_options;
    SourceOptions source_options;
    if (role == ElementRole::Stage) {
      NEAT_ASSIGN_OR_RETURN(stage_options.policy, args.policy());
      NEAT_ASSIGN_OR_RETURN(stage_options.max_latency,
                            args.duration("max-latency", std::chrono::milliseconds(0)));
    } else if (role == ElementRole::Source) {
      NEAT_ASSIGN_OR_RETURN(source_options, args.source_options());
    }
    const std::string base = el.name != "gst"              ? el.name
                             : role == ElementRole::Source ? "source"
                                                           : "sink";
    NEAT_ASSIGN_OR_RETURN(std::string name, unique_name(args, base));
    NEAT_RETURN_IF_ERROR(args.done());
    roles[name] = role;
    switch (role) {
      case ElementRole::Source:
        out.builder.add_source(name, std::move(built.source), source_options);
        if (out.source_name.empty()) out.source_name = name;
        break;
      case ElementRole::Stage:
        out.builder.add_stage(name, std::move(built.stage), stage_options);
        break;
      case ElementRole::Sink:
        out.builder.add_sink(name, std::move(built.sink));
        if (built.appsink) {
          if (!out.appsink) out.appsink = built.appsink;
          out.appsinks.emplace_back(name, std::move(built.appsink));
        }
        break;
    }
    if (!producer.empty()) connections.emplace_back(producer, name);
    if (!el.link_to.empty()) links.emplace_back(name, &el);
    producer = name;
  }
  for (const auto& [from, el] : links) {
    NEAT_ASSIGN_OR_RETURN(std::string to, link_target(text, *el, tees, roles));
    connections.emplace_back(from, std::move(to));
  }
  for (const auto& [from, to] : connections)
    NEAT_RETURN_IF_ERROR(out.builder.connect(from, to));
  return out;
}

}  // namespace neat

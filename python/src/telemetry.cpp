// The policy and the audit from Python: policy scopes, the process policy,
// conversion counters, event sinks (memory, JSON Lines, Chrome trace), copy
// budgets and steady-state rules, Prometheus text, and neat audit's report.
#include <pybind11/stl.h>

#include <memory>
#include <vector>

#include "common.hpp"

namespace neatpy {

namespace {

// ---- policy scopes -------------------------------------------------------------------

// The calling thread's open `with neat.policy(...)` scopes, innermost last.
thread_local std::vector<std::unique_ptr<neat::ScopedPolicy>> t_scopes;

struct PolicyScope {
  neat::ConversionPolicy policy;
  std::size_t depth = 0;
  bool entered = false;
};

// ---- counters -------------------------------------------------------------------------

py::dict cell_dict(const neat::CounterCell& c) {
  py::dict d;
  d["count"] = c.count;
  d["bytes"] = c.bytes;
  d["duration_ns"] = c.duration_ns;
  d["refused"] = c.refused;
  return d;
}

py::list counter_rows(const neat::CountersSnapshot& s) {
  py::list rows;
  for (int k = 0; k < neat::kConversionKindCount; ++k) {
    for (int r = 0; r < neat::kConversionReasonCount; ++r) {
      for (bool e : {true, false}) {
        const auto kind = static_cast<neat::ConversionKind>(k);
        const auto reason = static_cast<neat::ConversionReason>(r);
        const auto& c = s.at(kind, reason, e);
        if (c.count == 0 && c.refused == 0) continue;
        py::dict d = cell_dict(c);
        d["kind"] = std::string(neat::to_string(kind));
        d["reason"] = std::string(neat::to_string(reason));
        d["explicit"] = e;
        rows.append(d);
      }
    }
  }
  return rows;
}

// ---- event sinks ------------------------------------------------------------------------

/// An event sink the Python side opens and closes (a `with` block or start()/close()).
struct PySink {
  std::shared_ptr<neat::EventSink> sink;
  neat::SinkRegistration registration;
  std::shared_ptr<neat::JsonlSink> jsonl;
  std::shared_ptr<neat::ChromeTraceSink> chrome;
  std::shared_ptr<neat::MemorySink> memory;
  std::string path;

  void start() {
    if (!sink) raise(neat::failed_precondition("trace sink: already closed"));
    registration = neat::add_event_sink(sink);
  }
  void close() {
    registration.reset();
    if (jsonl) check(jsonl->close());  // the closing record: the trace is whole
    if (chrome) check(chrome->close());
  }
};

py::list memory_events(const neat::MemorySink& sink) {
  py::module_ json = py::module_::import("json");
  py::list out;
  for (const auto& e : sink.events()) {
    std::string text;
    neat::append_event_json(text, e.event);
    out.append(json.attr("loads")(text));
  }
  return out;
}

// ---- rules ---------------------------------------------------------------------------------

}  // namespace

py::dict breach_dict(const neat::RuleBreach& b) {
  py::dict d;
  d["rule"] = b.rule;
  d["frame"] = b.frame;
  d["bytes"] = b.bytes;
  d["count"] = b.count;
  d["conversion"] = b.conversion;
  return d;
}

namespace {

struct PyRule {
  neat::RuleRegistration registration;
};

// ---- audit ------------------------------------------------------------------------------------

}  // namespace

py::dict duration_summary_dict(const neat::DurationSummary& s) {
  py::dict d;
  d["count"] = s.count;
  d["p50"] = s.p50;
  d["p95"] = s.p95;
  d["p99"] = s.p99;
  d["max"] = s.max;
  d["mean"] = s.mean;
  return d;
}

namespace {

// The policy: scopes, the process policy, the one in force.
void bind_policy(py::module_& m) {
  // ---- policy --------------------------------------------------------------------------
  py::class_<PolicyScope>(m, "PolicyScope", R"doc(
The policy for implicit conversions on this thread while the `with` block
runs (and for graphs built in it that set none). From neat.policy().)doc")
      .def("__enter__",
           [](PolicyScope& s) {
             if (s.entered) raise(neat::failed_precondition("neat.policy(...): entered twice"));
             t_scopes.push_back(std::make_unique<neat::ScopedPolicy>(s.policy));
             s.depth = t_scopes.size();
             s.entered = true;
             return std::string(neat::to_string(s.policy));
           })
      .def("__exit__",
           [](PolicyScope& s, py::args) {
             if (!s.entered || t_scopes.size() != s.depth) {
               raise(neat::failed_precondition(
                   "neat.policy(...): scopes must close in the order they opened, on the "
                   "thread that opened them"));
             }
             t_scopes.pop_back();
             s.entered = false;
             return false;
           })
      .def_property_readonly(
          "policy", [](const PolicyScope& s) { return std::string(neat::to_string(s.policy)); });
  m.def(
      "policy", [](const std::string& name) { return PolicyScope{parse_policy(name)}; },
      py::arg("name"),
      R"doc(A context manager: `with neat.policy("strict" | "trace" | "silent"):` rules the
implicit conversions of this thread (and of graphs built inside it that set no
policy of their own). Nests; per thread, like the C++ ScopedPolicy.)doc");
  m.def(
      "set_process_policy",
      [](const std::string& name) { neat::set_process_policy(parse_policy(name)); },
      py::arg("name"), "Sets the process default (NEAT_POLICY in the environment still wins).");
  m.def(
      "effective_policy", [] { return std::string(neat::to_string(neat::effective_policy())); },
      "The policy that rules an implicit conversion on this thread now: \"strict\", "
      "\"allow_with_trace\" or \"allow_silent\".");
}

// The conversion counters and the Prometheus text.
void bind_counters(py::module_& m) {
  // ---- counters ------------------------------------------------------------------------
  py::class_<neat::CountersSnapshot>(m, "Counters", R"doc(
A snapshot of the process's conversion counters (kind x reason x explicit),
from neat.counters(). `later.since(earlier)` measures one piece of work.)doc")
      .def("since", &neat::CountersSnapshot::since, py::arg("before"))
      .def_property_readonly(
          "count", [](const neat::CountersSnapshot& s) { return s.total().count; },
          "Conversions that ran.")
      .def_property_readonly(
          "bytes", [](const neat::CountersSnapshot& s) { return s.total().bytes; },
          "Bytes they wrote.")
      .def_property_readonly(
          "refused", [](const neat::CountersSnapshot& s) { return s.total().refused; },
          "Implicit conversions refused (Strict).")
      .def_property_readonly("duration_ns",
                             [](const neat::CountersSnapshot& s) { return s.total().duration_ns; })
      .def(
          "by_kind",
          [](const neat::CountersSnapshot& s, const std::string& kind) {
            return cell_dict(s.total(parse_kinds({kind}).front()));
          },
          py::arg("kind"), "Totals of one kind (\"pack\", \"convert\", \"transfer\", ...).")
      .def("rows", &counter_rows,
           "Every non-zero cell: {kind, reason, explicit, count, bytes, duration_ns, refused}.")
      .def("__repr__", [](const neat::CountersSnapshot& s) {
        const auto t = s.total();
        return "neat.Counters(" + std::to_string(t.count) + " conversions, " +
               std::to_string(t.bytes) + " bytes, " + std::to_string(t.refused) + " refused)";
      });
  m.def(
      "counters", [] { return neat::conversion_counters().snapshot(); },
      "The process's conversion counters now.");
  m.def(
      "metrics_text", [] { return neat::prometheus_text(); },
      "The conversion metrics in the Prometheus text format (what a /metrics endpoint serves).");
}

// Event sinks: recorders and trace files.
void bind_event_sinks(py::module_& m) {
  // ---- event sinks ------------------------------------------------------------------------
  py::class_<PySink>(m, "TraceSink", R"doc(
Where conversion events go while it is open: a JSON Lines file (neat audit's
format), a Chrome trace (opens in Perfetto) or memory. A context manager:
`with neat.trace_jsonl("run.jsonl"):`; or start() / close().)doc")
      .def("start", &PySink::start, "Starts receiving events.")
      .def("close", &PySink::close, "Stops receiving events and writes the file.")
      .def("__enter__",
           [](py::object self) {
             self.cast<PySink&>().start();
             return self;
           })
      .def("__exit__",
           [](PySink& s, py::args) {
             s.close();
             return false;
           })
      .def_property_readonly("path", [](const PySink& s) { return s.path; })
      .def_property_readonly(
          "events",
          [](const PySink& s) -> py::object {
            if (s.memory) return memory_events(*s.memory);
            if (s.jsonl) return py::int_(s.jsonl->events());
            if (s.chrome) return py::int_(s.chrome->size());
            return py::none();
          },
          "Memory sinks: the events as dicts (the JSON Lines fields); file sinks: how many.");
  m.def(
      "trace_jsonl",
      [](const std::string& path, bool append, std::int64_t max_bytes, int keep) {
        PySink s;
        s.jsonl = unwrap(neat::JsonlSink::open(
            path, neat::JsonlSinkOptions{.append = append, .max_bytes = max_bytes, .keep = keep}));
        s.sink = s.jsonl;
        s.path = path;
        return s;
      },
      py::arg("path"), py::arg("append") = false, py::arg("max_bytes") = 0, py::arg("keep") = 5,
      "A JSON Lines trace (what `neat audit` and neat.audit() read); rotates at max_bytes.");
  m.def(
      "trace_chrome",
      [](const std::string& path) {
        PySink s;
        s.chrome = unwrap(neat::ChromeTraceSink::open(path));
        s.sink = s.chrome;
        s.path = path;
        return s;
      },
      py::arg("path"),
      "A Chrome trace (Perfetto, chrome://tracing), streamed to the file; close() ends it.");
  m.def(
      "record",
      [] {
        PySink s;
        s.memory = std::make_shared<neat::MemorySink>();
        s.sink = s.memory;
        return s;
      },
      "Keeps events in memory: `with neat.record() as r: ...; r.events`.");
}

// Copy budgets and steady-state rules.
void bind_rules(py::module_& m) {
  // ---- rules ---------------------------------------------------------------------------------
  py::class_<PyRule>(m, "Rule", R"doc(
A copy budget or steady-state rule, enforced by the copy gate while it is
registered (until close() or the end of its `with` block).)doc")
      .def(
          "check", [](const PyRule& r) { check(r.registration.check()); },
          "Raises neat.FailedPrecondition listing the breaches, if any.")
      .def_property_readonly("breaches",
                             [](const PyRule& r) {
                               py::list out;
                               for (const auto& b : r.registration.breaches())
                                 out.append(breach_dict(b));
                               return out;
                             })
      .def_property_readonly("breach_count",
                             [](const PyRule& r) { return r.registration.breach_count(); })
      .def(
          "close", [](PyRule& r) { r.registration.reset(); }, "Unregisters the rule.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyRule& r, py::args) {
        r.registration.reset();
        return false;
      });
  m.def(
      "copy_budget",
      [](std::int64_t max_bytes_per_frame, std::int64_t max_count_per_frame,
         const std::string& graph, const std::string& edge, const std::string& action) {
        neat::CopyBudget b{graph, edge, max_bytes_per_frame, max_count_per_frame,
                           parse_action(action)};
        return PyRule{unwrap(neat::add_copy_budget(b))};
      },
      py::kw_only(), py::arg("max_bytes_per_frame") = -1, py::arg("max_count_per_frame") = -1,
      py::arg("graph") = "", py::arg("edge") = "", py::arg("action") = "by_policy",
      "A copy budget (bytes and/or conversions per frame) for the process, a graph or one edge "
      "(\"from->to\"). action: by_policy (Strict fails), fail, warn, count.");
  m.def(
      "steady_state",
      [](std::int64_t after_frames, const std::vector<std::string>& kinds, const std::string& graph,
         const std::string& edge, const std::string& action) {
        neat::SteadyStateRule r;
        r.after_frames = after_frames;
        r.kinds = parse_kinds(kinds);
        r.graph = graph;
        r.edge = edge;
        r.action = parse_action(action);
        return PyRule{unwrap(neat::add_steady_state_rule(r))};
      },
      py::arg("after_frames"), py::kw_only(),
      py::arg("kinds") = std::vector<std::string>{"pack", "convert", "transfer"},
      py::arg("graph") = "", py::arg("edge") = "", py::arg("action") = "by_policy",
      "No conversion of these kinds from frame after_frames on: the canary of a pipeline that "
      "should have stopped copying.");
}

// The audit of a trace.
void bind_audit(py::module_& m) {
  // ---- audit ----------------------------------------------------------------------------------
  py::class_<neat::AuditReport>(m, "AuditReport", R"doc(
What `neat audit` reports: per edge, stage, kind and reason, the conversions,
bytes, bytes per frame, time and call sites; capture-to-sink latency per sink.
str(report) is neat audit's table; report.json() its --json output.)doc")
      .def_readonly("conversions", &neat::AuditReport::conversions)
      .def_readonly("bytes", &neat::AuditReport::bytes)
      .def_readonly("duration_ns", &neat::AuditReport::duration_ns)
      .def_property_readonly(
          "rows",
          [](const neat::AuditReport& r) {
            py::list rows;
            for (const auto& row : r.rows) {
              py::dict d;
              d["edge"] = row.edge;
              d["stage"] = row.stage;
              d["kind"] = std::string(neat::to_string(row.kind));
              d["reason"] = std::string(neat::to_string(row.reason));
              d["count"] = row.count;
              d["implicit_count"] = row.implicit_count;
              d["bytes"] = row.bytes;
              d["frames"] = row.frames;
              d["bytes_per_frame"] = row.bytes_per_frame;
              d["duration_ns"] = row.duration_ns;
              py::list sites;
              for (const auto& s : row.top_sites) {
                py::dict sd;
                sd["where"] = s.where;
                sd["count"] = s.count;
                sd["bytes"] = s.bytes;
                sites.append(sd);
              }
              d["top_sites"] = sites;
              rows.append(d);
            }
            return rows;
          },
          "Rows, most bytes first: edge, stage, kind, reason, count, bytes, bytes_per_frame, "
          "frames, duration_ns, top_sites [{where, count, bytes}].")
      .def_property_readonly(
          "latency",
          [](const neat::AuditReport& r) {
            py::list out;
            for (const auto& l : r.latency) {
              py::dict d = duration_summary_dict(l.latency);
              d["graph"] = l.graph;
              d["sink"] = l.sink;
              out.append(d);
            }
            return out;
          },
          "Capture-to-sink latency per sink (seconds): graph, sink, count, p50, p95, p99, max.")
      .def_property_readonly(
          "cut_short",
          [](const neat::AuditReport& r) {
            py::list out;
            for (const auto& c : r.cut_short) {
              py::dict d;
              d["run"] = c.run;
              d["file"] = c.file;
              d["started_ns"] = c.started_ns;
              d["last_ns"] = c.last_ns;
              d["last_frame"] = c.last_frame;
              d["events"] = c.events;
              d["frames"] = c.frames;
              d["cut_line"] = c.cut_line;
              d["message"] = c.to_string();
              out.append(d);
            }
            return out;
          },
          "Traced runs whose trace has no closing record (a crash, kill -9): how far each got "
          "(`neat audit` exits 4 for them). Empty for a whole trace.")
      .def("table", &neat::format_audit_table, "neat audit's table.")
      .def("json", &neat::format_audit_json, "neat audit --json.")
      .def("__str__", &neat::format_audit_table)
      .def("__repr__", [](const neat::AuditReport& r) {
        return "neat.AuditReport(" + std::to_string(r.conversions) + " conversions, " +
               std::to_string(r.bytes) + " bytes, " + std::to_string(r.rows.size()) + " rows)";
      });
  m.def(
      "audit",
      [](py::object paths, std::optional<std::string> since, std::optional<std::string> until,
         const std::string& graph, const std::string& stage, const std::string& edge,
         int top_sites) {
        std::vector<std::string> files;
        if (py::isinstance<py::str>(paths) || py::hasattr(paths, "__fspath__")) {
          files.push_back(py::str(py::module_::import("os").attr("fspath")(paths)));
        } else {
          for (auto p : paths)
            files.push_back(py::str(py::module_::import("os").attr("fspath")(p)));
        }
        if (files.empty()) raise(neat::invalid_argument("audit: no trace file given"));
        neat::AuditFilter filter;
        if (since) filter.since_ns = unwrap(neat::parse_audit_time(*since));
        if (until) filter.until_ns = unwrap(neat::parse_audit_time(*until));
        filter.graph = graph;
        filter.stage = stage;
        filter.edge = edge;
        return without_gil([&] {
          neat::AuditAggregator agg(filter);
          for (const auto& f : files)
            check(agg.read_file(f));
          return agg.report(top_sites);
        });
      },
      py::arg("paths"), py::kw_only(), py::arg("since") = py::none(), py::arg("until") = py::none(),
      py::arg("graph") = "", py::arg("stage") = "", py::arg("edge") = "", py::arg("top_sites") = 3,
      R"doc(Reads conversion traces (JSON Lines or Chrome; one path or several, e.g. a
rotated set) and returns the report `neat audit` prints. since/until:
"2026-11-23T18:00:00Z" or "@<epoch seconds>"; graph/stage/edge filter.)doc");
}

}  // namespace

void bind_telemetry(py::module_& m) {
  bind_policy(m);
  bind_counters(m);
  bind_event_sinks(m);
  bind_rules(m);
  bind_audit(m);
}

}  // namespace neatpy

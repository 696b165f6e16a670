// neat.serve_metrics: the live /metrics endpoint (telemetry's MetricsServer on
// cpp-httplib) serving the conversion and process metrics and the live
// per-stage and per-edge metrics of the graphs added to it. Collectors run on
// the server's threads without the GIL and hold their graphs weakly.
#include <pybind11/stl.h>

#include <memory>
#include <vector>

#include "graph_state.hpp"

namespace neatpy {

namespace {

/// The live metrics endpoint and the graphs it serves.
struct PyMetricsServer {
  std::unique_ptr<neat::MetricsServer> server;
  std::vector<neat::MetricsServer::Registration> graphs;
  void close() {
    without_gil([&] {
      graphs.clear();  // waits for a scrape running a collector
      server.reset();  // in-flight scrapes finish first
    });
  }
  ~PyMetricsServer() { close(); }
};

}  // namespace

void bind_metrics(py::module_& m) {
  py::class_<PyMetricsServer>(m, "MetricsServer", R"doc(
A live /metrics endpoint for Prometheus while pipelines run: the conversion
metrics, the process metrics and every added graph's per-stage and per-edge
metrics (neat.serve_metrics()). A context manager; close() stops it.)doc")
      .def_property_readonly(
          "url",
          [](const PyMetricsServer& s) { return s.server ? s.server->url() : std::string(); },
          "\"http://127.0.0.1:PORT/metrics\".")
      .def_property_readonly(
          "port", [](const PyMetricsServer& s) { return s.server ? s.server->port() : 0; })
      .def(
          "add_graph",
          [](PyMetricsServer& s, PyGraph& g) {
            if (!s.server) raise(neat::failed_precondition("MetricsServer: closed"));
            std::weak_ptr<GraphState> weak = g.st;
            s.graphs.push_back(s.server->add_collector([weak](std::string& out) {
              if (auto st = weak.lock()) {
                if (auto* gr = st->running_graph.load()) out += gr->prometheus_text();
              }
            }));
            // /readyz and /status: the running graph's check (kept while it is the same graph).
            auto cached =
                std::make_shared<std::pair<const neat::Graph*, neat::MetricsServer::HealthCheck>>();
            const std::string name = g.st->options.graph_name;
            s.graphs.push_back(s.server->add_health_check([weak, cached, name] {
              auto st = weak.lock();
              const neat::Graph* gr = st ? st->running_graph.load() : nullptr;
              if (gr == nullptr) return neat::Health{{"graph '" + name + "' is not running"}, {}};
              if (cached->first != gr) *cached = {gr, gr->health_check()};
              return cached->second();
            }));
          },
          py::arg("graph"),
          "Adds the graph's live metrics (once it is built) to every scrape, and its health to "
          "/readyz and /status.")
      .def(
          "scrape",
          [](const PyMetricsServer& s) {
            if (!s.server) raise(neat::failed_precondition("MetricsServer: closed"));
            return without_gil([&] { return s.server->scrape(); });
          },
          "What GET /metrics answers now.")
      .def("close", &PyMetricsServer::close, "Stops serving.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyMetricsServer& s, py::args) {
        s.close();
        return false;
      });
  m.def(
      "serve_metrics",
      [](const std::string& listen, py::list graphs) {
        auto s = std::make_unique<PyMetricsServer>();
        s->server = unwrap(without_gil([&] { return neat::MetricsServer::start(listen); }));
        py::object obj = py::cast(std::move(s));
        for (auto g : graphs)
          obj.attr("add_graph")(g);
        return obj;
      },
      py::arg("listen") = "127.0.0.1:9464", py::arg("graphs") = py::list(),
      R"doc(Starts a /metrics endpoint ("9464", "127.0.0.1:0" for a free port,
"0.0.0.0:9464" for every interface) serving the conversion and process
metrics and the given graphs' live metrics.)doc");
}

}  // namespace neatpy

// The extension module neat._neat: the Python package's compiled half
// (python/neat/__init__.py re-exports it). See docs/python.md.
#include "graph_state.hpp"

PYBIND11_MODULE(_neat, m) {
  m.doc() = "NeatTensor's C++ core: tensors, policies, telemetry, audits and stage graphs.";
  m.attr("__version__") = NEAT_VERSION;
  neatpy::bind_errors(m);
  neatpy::bind_tensor(m);
  neatpy::bind_telemetry(m);
  neatpy::bind_nodes(m);
  neatpy::bind_graph(m);
  neatpy::bind_metrics(m);
}

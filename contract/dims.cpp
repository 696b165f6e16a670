#include "neat/contract/dims.hpp"

namespace neat {

std::string dims_to_string(DimsRef v) {
  std::string out = "[";
  bool first = true;
  for (std::int64_t x : v) {
    if (!first) out += ", ";
    out += x < 0 ? "?" : std::to_string(x);  // a model's dynamic dimension
    first = false;
  }
  out += "]";
  return out;
}

std::string Dims::to_string() const {
  return dims_to_string(*this);
}

}  // namespace neat

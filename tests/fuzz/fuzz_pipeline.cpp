// Fuzz target: the pipeline description parser of `neat run`. Any text is
// either declared (sources are not started: nothing runs) or refused with an
// error whose caret line points inside the text.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "neat/stages/pipeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto elements = neat::parse_pipeline(text);
  if (elements.ok()) {
    for (const auto& e : *elements) {
      if (e.offset > text.size() || e.offset + e.length > text.size()) std::abort();
    }
  }
  auto declared = neat::declare_pipeline(text);
  if (!declared.ok()) {
    const std::string& m = declared.error().message();
    if (m.rfind("pipeline: ", 0) != 0) std::abort();  // every refusal names the pipeline
  }
  return 0;
}

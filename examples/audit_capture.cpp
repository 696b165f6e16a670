// docs/audit.md, step 1: capture conversion events into a JSON Lines trace
// (what `neat audit` reads) and a Chrome trace (Perfetto), with the context
// that attributes each event to its graph, stage, edge and frame. The region
// between the docs markers is the page's code block
// (tests/docs/check_snippets.py keeps them equal); CI builds and runs it.
#include <cstdio>

#include <neat/neat.hpp>

int main() {
  const std::int64_t n = 7;  // the frame being processed
  {
    // [docs:capture]
    auto jsonl = *neat::JsonlSink::open("conversions.jsonl");              // JSON Lines
    auto chrome = *neat::ChromeTraceSink::open("conversions.trace.json");  // for Perfetto
    auto r1 = neat::add_event_sink(jsonl);
    auto r2 = neat::add_event_sink(chrome);
    // Stages set the context so each event knows its graph, stage, edge, frame:
    neat::ScopedContext ctx(
        {.graph = "demo", .stage = "overlay", .edge = "camera->overlay", .frame = n});
    // [docs:end]
    auto t = neat::NeatTensor::allocate(neat::DType::U8, {4, 6});
    auto packed = t->transpose(0, 1)->contiguous();  // an explicit pack: one event
    if (!packed || !jsonl->flush()) return 1;
  }
  auto records = neat::read_trace_file("conversions.jsonl");
  if (!records || records->size() != 1 || (*records)[0].edge != "camera->overlay" ||
      (*records)[0].frame != 7) {
    return 1;
  }
  std::printf("1 event captured: %s at %s:%lld\n", (*records)[0].operation.c_str(),
              (*records)[0].file.c_str(), static_cast<long long>((*records)[0].line));
  std::remove("conversions.jsonl");
  std::remove("conversions.trace.json");
  return 0;
}

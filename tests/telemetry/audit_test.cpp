// The copy audit: reading traces back, aggregating, and malformed input.
#include "neat/telemetry/audit.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "neat/neat.hpp"
#include "neat/telemetry/chrome_trace_sink.hpp"
#include "neat/telemetry/event_json.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

std::string record_jsonl(int frames) {
  std::string out;
  struct Lines final : EventSink {
    void on_event(const ConversionEvent& e) noexcept override {
      append_event_json(*text, e);
      *text += '\n';
    }
    std::string* text;
  };
  auto sink = std::make_shared<Lines>();
  sink->text = &out;
  auto reg = add_event_sink(sink);
  auto t = NeatTensor::allocate(DType::U8, {10, 10});
  for (int f = 0; f < frames; ++f) {
    ScopedContext ctx({.graph = "g", .stage = "s", .edge = "a->b", .frame = f});
    (void)t->transpose(0, 1)->contiguous();
    (void)t->clone();
    (void)t->clone();
  }
  (void)t->clone();  // no context
  return out;
}

TEST(Audit, AggregatesPerEdgeStageKindReason) {
  std::istringstream in(record_jsonl(4));
  auto records = read_trace(in, "test.jsonl");
  ASSERT_TRUE(records.ok()) << records.error().message();
  ASSERT_EQ(records->size(), 13u);
  const AuditReport r = audit(*records, 2);
  EXPECT_EQ(r.conversions, 13u);
  EXPECT_EQ(r.bytes, 1300);
  ASSERT_EQ(r.rows.size(), 3u);
  const AuditRow& clones = r.rows[0];  // most bytes first
  EXPECT_EQ(clones.edge, "a->b");
  EXPECT_EQ(clones.stage, "s");
  EXPECT_EQ(clones.reason, ConversionReason::UserRequest);
  EXPECT_EQ(clones.count, 8u);
  EXPECT_EQ(clones.frames, 4);
  EXPECT_DOUBLE_EQ(clones.bytes_per_frame, 200.0);
  ASSERT_EQ(clones.top_sites.size(), 2u);
  EXPECT_NE(clones.top_sites[0].where.find("audit_test.cpp:"), std::string::npos);
  EXPECT_NE(clones.top_sites[0].where.find("(clone)"), std::string::npos);
  EXPECT_EQ(clones.top_sites[0].count, 4u);
  const AuditRow& none = r.rows[2];
  EXPECT_EQ(none.edge, "");
  EXPECT_EQ(none.frames, 0);
  const std::string table = format_audit_table(r);
  EXPECT_NE(table.find("a->b"), std::string::npos) << table;
  EXPECT_NE(table.find("stride_mismatch"), std::string::npos);
  EXPECT_NE(table.find("total: 13 conversions"), std::string::npos);
  const auto j = nlohmann::json::parse(format_audit_json(r));
  EXPECT_EQ(j["rows"][0]["count"], 8);
  EXPECT_EQ(j["rows"][0]["bytes_per_frame"], 200.0);
}

TEST(Audit, ReadsChromeTracesToo) {
  auto sink = std::make_shared<ChromeTraceSink>();
  {
    auto reg = add_event_sink(sink);
    auto t = NeatTensor::allocate(DType::U8, {10, 10});
    ScopedContext ctx({.stage = "s", .edge = "e", .frame = 1});
    (void)t->clone();
    (void)t->clone();
  }
  std::istringstream in(*sink->to_json());
  auto records = read_trace(in, "trace.json");
  ASSERT_TRUE(records.ok()) << records.error().message();
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0].edge, "e");
  EXPECT_EQ((*records)[0].bytes, 100);
}

Status read(const std::string& text) {
  std::istringstream in(text);
  auto r = read_trace(in, "t");
  if (!r.ok()) return std::move(r).error();
  return {};
}

TEST(AuditBadInput, MalformedTracesNameTheLineOrOffset) {
  const std::string good = R"({"kind":"pack","reason":"user_request","bytes":10})";
  EXPECT_TRUE(read(good + "\n" + good + "\n").ok());
  EXPECT_TRUE(read("").ok());
  NEAT_EXPECT_ERROR(read(good + "\n" + good.substr(0, 20)), ErrorCode::InvalidArgument,
                    "t line 2, column");
  NEAT_EXPECT_ERROR(read(R"({"kind":"pack","reason":"user_request","bytes":"10"})"),
                    ErrorCode::InvalidArgument,
                    "t line 1: field \"bytes\" must be an integer, found string");
  NEAT_EXPECT_ERROR(read(R"({"kind":"pack","reason":"user_request","bytes":1e400})"),
                    ErrorCode::InvalidArgument, "line 1");
  NEAT_EXPECT_ERROR(read(R"({"kind":"pack","reason":"user_request","bytes":99999999999999999999})"),
                    ErrorCode::InvalidArgument, "must be an integer");
  NEAT_EXPECT_ERROR(read(R"({"kind":"pack","reason":"user_request","bytes":18446744073709551615})"),
                    ErrorCode::InvalidArgument, "is out of range");
  NEAT_EXPECT_ERROR(read(R"({"kind":"pack","reason":"user_request","bytes":-5})"),
                    ErrorCode::InvalidArgument, "is negative");
  NEAT_EXPECT_ERROR(read(R"({"kind":"teleport","reason":"user_request","bytes":1})"),
                    ErrorCode::InvalidArgument, "unknown kind \"teleport\"");
  NEAT_EXPECT_ERROR(read(R"({"kind":"pack","reason":"boredom","bytes":1})"),
                    ErrorCode::InvalidArgument, "unknown reason \"boredom\"");
  NEAT_EXPECT_ERROR(read(R"({"kind":"pack","bytes":1})"), ErrorCode::InvalidArgument,
                    "missing field \"reason\"");
  NEAT_EXPECT_ERROR(read(R"({"kind":"pack","reason":"dtype","bytes":1,"explicit":"yes"})"),
                    ErrorCode::InvalidArgument, "\"explicit\" must be true or false");
  NEAT_EXPECT_ERROR(read("[1, 2"), ErrorCode::InvalidArgument, "at byte offset");
  NEAT_EXPECT_ERROR(read(R"({"traceEvents": 5})"), ErrorCode::InvalidArgument, "must be an array");
  NEAT_EXPECT_ERROR(read(R"({"traceEvents":[{"ph":"X","name":"x"}]})"), ErrorCode::InvalidArgument,
                    "event #0: a conversion slice needs \"args\"");
  NEAT_EXPECT_ERROR(
      read(R"({"traceEvents":[{"ph":"X","args":{"kind":"pack","reason":"dtype","bytes":true}}]})"),
      ErrorCode::InvalidArgument,
      "event #0 args: field \"bytes\" must be an integer, found boolean");
  NEAT_EXPECT_ERROR(read("\"just a string\"\n"), ErrorCode::InvalidArgument, "expected an object");
  NEAT_EXPECT_ERROR(read_trace_file("/nonexistent/trace.jsonl"), ErrorCode::FailedPrecondition,
                    "cannot open");
}

}  // namespace
}  // namespace neat

namespace neat {
namespace {

std::string event_line(std::string_view edge, std::string_view stage, std::int64_t frame,
                       std::int64_t bytes, std::int64_t ts_ns, std::string_view graph = "g",
                       std::string_view kind = "pack") {
  return "{\"kind\":\"" + std::string(kind) +
         "\",\"reason\":\"stride_mismatch\",\"bytes\":" + std::to_string(bytes) +
         ",\"frame\":" + std::to_string(frame) + ",\"ts_ns\":" + std::to_string(ts_ns) +
         ",\"graph\":\"" + std::string(graph) + "\",\"stage\":\"" + std::string(stage) +
         "\",\"edge\":\"" + std::string(edge) +
         "\",\"file\":\"x.cpp\",\"line\":7,\"src\":{\"shape\":[1,2]},\"function\":\"f()\"}\n";
}

std::string header_line(std::string_view run, int part = 0) {
  return "{\"neat_trace\":1,\"run\":\"" + std::string(run) + "\",\"part\":" + std::to_string(part) +
         ",\"pid\":1,\"ts_ns\":5}\n";
}

Status read_into(AuditAggregator& a, const std::string& text, std::string_view name = "t") {
  std::istringstream in(text);
  return a.read(in, name);
}

TEST(AuditAggregator, StreamsSeveralTracesAndKeepsRunsFramesApart) {
  AuditAggregator a;
  std::string run1 = header_line("r1"), run2 = header_line("r2");
  for (int f = 0; f < 10; ++f) {
    run1 += event_line("a->b", "b", f, 100, 1000 + f);
    run2 += event_line("a->b", "b", f, 100, 2000 + f);  // the same frame numbers, another run
  }
  NEAT_ASSERT_OK(read_into(a, run1));
  NEAT_ASSERT_OK(read_into(a, run2));
  EXPECT_EQ(a.events_read(), 20u);
  EXPECT_EQ(a.events_kept(), 20u);
  EXPECT_EQ(a.headers_read(), 2u);
  const AuditReport r = a.report();
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].frames, 20) << "frames of two runs are 20 frames, not 10";
  EXPECT_DOUBLE_EQ(r.rows[0].bytes_per_frame, 100.0);
  EXPECT_EQ(r.rows[0].top_sites.at(0).where, "x.cpp:7");
  // A rotated set: the same run in two files counts its frames once.
  AuditAggregator rotated;
  NEAT_ASSERT_OK(read_into(rotated, header_line("r1", 0) + event_line("a->b", "b", 0, 8, 1)));
  NEAT_ASSERT_OK(read_into(rotated, header_line("r1", 1) + event_line("a->b", "b", 0, 8, 2)));
  EXPECT_EQ(rotated.report().rows.at(0).frames, 1);
}

TEST(AuditAggregator, FiltersByTimeGraphStageAndEdge) {
  std::string text = header_line("r");
  for (int f = 0; f < 10; ++f) {
    text += event_line("a->b", "b", f, 10, 1000 + f);
    text += event_line("b->c", "c", f, 20, 1000 + f, "other");
  }
  text += R"({"kind":"pack","reason":"dtype","bytes":1})"
          "\n";  // no timestamp
  auto kept = [&](AuditFilter f) {
    AuditAggregator a(std::move(f));
    EXPECT_TRUE(read_into(a, text).ok());
    EXPECT_EQ(a.events_read(), 21u);
    return a.events_kept();
  };
  EXPECT_EQ(kept({}), 21u);
  EXPECT_EQ(kept({.since_ns = 1005}), 10u) << "no timestamp: out when a time bound is set";
  EXPECT_EQ(kept({.since_ns = 1002, .until_ns = 1004}), 4u);
  EXPECT_EQ(kept({.until_ns = 1000}), 0u);
  EXPECT_EQ(kept({.graph = "other"}), 10u);
  EXPECT_EQ(kept({.stage = "b"}), 10u);
  EXPECT_EQ(kept({.edge = "b->c"}), 10u);
  EXPECT_EQ(kept({.graph = "g", .edge = "b->c"}), 0u);
  AuditRecord r;
  r.timestamp_ns = 7;
  r.stage = "s";
  EXPECT_TRUE((AuditFilter{.since_ns = 7, .stage = "s"}).keeps(r));
  EXPECT_FALSE((AuditFilter{.until_ns = 7}).keeps(r));
}

TEST(AuditAggregator, LinesAcrossReadChunksAndALastLineWithoutNewline) {
  // Many read chunks (64 KiB first, then 4 MiB), lines of every length around the boundaries.
  std::string text = header_line("big");
  std::int64_t n = 0;
  while (text.size() < (std::size_t{9} << 20)) {
    std::string line = event_line("a->b", "b", n, n % 97, 1 + n);
    line.insert(line.size() - 2,
                ",\"pad\":\"" + std::string(static_cast<std::size_t>(n % 301), 'x') + "\"");
    text += line;
    ++n;
  }
  text += event_line("a->b", "b", n, 1, 1 + n);
  text.pop_back();  // no final newline
  ++n;
  AuditAggregator a;
  NEAT_ASSERT_OK(read_into(a, text));
  EXPECT_EQ(a.events_read(), static_cast<std::uint64_t>(n));
  EXPECT_EQ(a.report().rows.at(0).frames, n);
  // A corrupt line deep in the stream is named by its line number.
  text.replace(text.size() / 2, 1, "\n{\"kind\":\n");
  AuditAggregator b;
  const Status st = read_into(b, text, "big.jsonl");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(st.error().message().find("big.jsonl line "), std::string::npos)
      << st.error().message();
}

TEST(AuditTime, ParsesUtcAndEpochSecondsAndSaysWhichFormsItReads) {
  EXPECT_EQ(*parse_audit_time("1970-01-01T00:00:01Z"), 1000000000);
  EXPECT_EQ(*parse_audit_time("2026-11-23T18:00:00Z"), std::int64_t{1795456800} * 1000000000);
  EXPECT_EQ(*parse_audit_time("2026-11-23T18:00:00.25+00:00"),
            std::int64_t{1795456800} * 1000000000 + 250000000);
  EXPECT_EQ(*parse_audit_time("@1.5"), 1500000000);
  for (const char* bad : {"", "yesterday", "2026-11-23", "2026-11-23T18:00:00", "@", "@-1", "@x",
                          "2026-13-01T00:00:00Z", "2026-11-23T18:00:00.Z"}) {
    NEAT_EXPECT_ERROR(parse_audit_time(bad), ErrorCode::InvalidArgument, "time '");
  }
  NEAT_EXPECT_ERROR(parse_audit_time("2026-11-23T18:00:00+01:00"), ErrorCode::InvalidArgument,
                    "only UTC");
}

TEST(AuditCompare, StartedMoreLessStoppedAndSame) {
  auto report = [](const std::string& text) {
    AuditAggregator a;
    EXPECT_TRUE(read_into(a, text).ok());
    return a.report();
  };
  std::string before = header_line("1"), after = header_line("2");
  for (int f = 0; f < 4; ++f) {
    before += event_line("same", "s", f, 100, 1) + event_line("grows", "g", f, 100, 1) +
              event_line("shrinks", "k", f, 100, 1) + event_line("gone", "x", f, 5, 1);
    after += event_line("same", "s", f, 100, 1) + event_line("grows", "g", f, 150, 1) +
             event_line("shrinks", "k", f, 50, 1) + event_line("new", "n", f, 7, 1);
  }
  const AuditComparison c = compare_audits(report(before), report(after));
  ASSERT_EQ(c.changes.size(), 5u);
  EXPECT_EQ(c.changes[0].change, AuditChangeKind::Started);
  EXPECT_EQ(c.changes[0].edge, "new");
  EXPECT_DOUBLE_EQ(c.changes[0].after, 7.0);
  EXPECT_EQ(c.changes[1].change, AuditChangeKind::More);
  EXPECT_EQ(c.changes[1].edge, "grows");
  EXPECT_DOUBLE_EQ(c.changes[1].before, 100.0);
  EXPECT_DOUBLE_EQ(c.changes[1].after, 150.0);
  EXPECT_EQ(c.changes[2].change, AuditChangeKind::Less);
  EXPECT_EQ(c.changes[3].change, AuditChangeKind::Stopped);
  EXPECT_EQ(c.changes[4].change, AuditChangeKind::Same);
  EXPECT_TRUE(c.regressed());
  EXPECT_FALSE(compare_audits(report(after), report(after)).regressed());
  // Within the tolerance: the same.
  EXPECT_FALSE(compare_audits(report(before), report(before), 0.0).regressed());
  const std::string table = format_audit_comparison(c);
  EXPECT_NE(table.find("started  new"), std::string::npos) << table;
  EXPECT_NE(table.find("1 row(s) started copying, 1 copy more (regression)"), std::string::npos)
      << table;
  const auto j = nlohmann::json::parse(format_audit_comparison_json(c));
  EXPECT_EQ(j["regressed"], true);
  EXPECT_EQ(j["changes"][1]["change"], "more");
}

}  // namespace
}  // namespace neat

namespace neat {
namespace {

const char* kEvent =
    R"({"kind":"pack","reason":"stride_mismatch","bytes":100,"ts_ns":1795459846000000000,"edge":"a->b","stage":"s","frame":7,"file":"x.cpp","line":3})";

AuditReport audit_text(const std::string& text, const char* name = "t.jsonl") {
  AuditAggregator a;
  std::istringstream in(text);
  EXPECT_TRUE(a.read(in, name).ok()) << text;
  return a.report();
}

// A version-2 trace promises a closing record: without it, it was cut short,
// and the audit says how far it got; with it, or in a version-1 trace, all is well.
TEST(AuditCutShort, ATraceWithoutItsClosingRecordIsCutShortAndSaysHowFarItGot) {
  const std::string header =
      R"({"neat_trace":2,"run":"42-1","part":0,"pid":42,"ts_ns":1795459840000000000})"
      "\n";
  const std::string end = R"({"type":"end","run":"42-1","events":1,"frames":0,"lost":0})"
                          "\n";
  EXPECT_TRUE(audit_text(header + kEvent + "\n" + end).cut_short.empty());
  const AuditReport cut = audit_text(header + kEvent + "\n");
  ASSERT_EQ(cut.cut_short.size(), 1u);
  const AuditCutShort& c = cut.cut_short[0];
  EXPECT_EQ(c.run, "42-1");
  EXPECT_EQ(c.events, 1u);
  EXPECT_EQ(c.last_frame, 7);
  EXPECT_FALSE(c.cut_line);
  EXPECT_EQ(cut.conversions, 1u) << "what was read is audited";
  const std::string text = c.to_string();
  EXPECT_NE(text.find("is cut short"), std::string::npos) << text;
  EXPECT_NE(text.find("6.0 s after its start"), std::string::npos) << text;
  EXPECT_NE(text.find("frame 7"), std::string::npos) << text;
  EXPECT_NE(format_audit_table(cut).find("is cut short"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(format_audit_json(cut))["cut_short"][0]["last_frame"], 7);
  // kill -9 in the middle of a write: the last line is cut too; that is the cut.
  const AuditReport mid = audit_text(header + kEvent + "\n" + std::string(kEvent).substr(0, 40));
  ASSERT_EQ(mid.cut_short.size(), 1u);
  EXPECT_TRUE(mid.cut_short[0].cut_line);
  EXPECT_EQ(mid.conversions, 1u);
  // Only a header: nothing after it, still cut short.
  EXPECT_EQ(audit_text(header).cut_short.size(), 1u);
  // Version 1 traces had no closing record: not cut short, and a broken last
  // line there stays a malformed trace.
  const std::string v1 = R"({"neat_trace":1,"run":"r","part":0})"
                         "\n";
  EXPECT_TRUE(audit_text(v1 + kEvent + "\n").cut_short.empty());
  AuditAggregator a;
  std::istringstream broken(v1 + kEvent + "\n" + std::string(kEvent).substr(0, 40));
  NEAT_EXPECT_ERROR(a.read(broken, "v1.jsonl"), ErrorCode::InvalidArgument, "v1.jsonl line 3");
  // An unknown record type is still an error.
  AuditAggregator b;
  std::istringstream odd(header + R"({"type":"ending"})" + "\n");
  NEAT_EXPECT_ERROR(b.read(odd, "odd.jsonl"), ErrorCode::InvalidArgument,
                    "unknown record type \"ending\"");
}

// The Chrome trace cut short (no closing "]", maybe half a line) is read up
// to its last whole event.
TEST(AuditCutShort, AChromeTraceCutShortIsReadUpToItsLastWholeEvent) {
  auto sink = std::make_shared<ChromeTraceSink>();
  {
    auto reg = add_event_sink(sink);
    auto t = NeatTensor::allocate(DType::U8, {10, 10});
    ScopedContext ctx({.stage = "s", .edge = "e", .frame = 3});
    (void)t->clone();
    (void)t->clone();
  }
  const std::string whole = *sink->to_json();
  EXPECT_TRUE(audit_text(whole, "t.json").cut_short.empty());
  const std::string open = whole.substr(0, whole.find("{\"name\":\"neat_trace_end\""));
  for (const std::string& text : {open, open + R"({"name":"clone user_req)"}) {
    const AuditReport r = audit_text(text, "cut.json");
    EXPECT_EQ(r.conversions, 2u);
    ASSERT_EQ(r.cut_short.size(), 1u);
    EXPECT_EQ(r.cut_short[0].last_frame, 3);
    EXPECT_EQ(r.cut_short[0].cut_line, text != open);
  }
}

}  // namespace
}  // namespace neat

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
  std::istringstream in(sink->to_json());
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

// `neat audit` as a user runs it: exit status and output.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct CliRun {
  int status;
  std::string out;
};

CliRun run(const std::string& args) {
  const std::string cmd = std::string(NEAT_CLI_PATH) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  CliRun r{-1, {}};
  if (!p) return r;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), p))
    r.out += buf.data();
  const int rc = ::pclose(p);
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return r;
}

std::string write(const std::string& name, const std::string& text) {
  const auto path =
      std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid()));
  std::ofstream(path) << text;
  return path.string();
}

const char* kTrace =
    R"({"kind":"pack","reason":"stride_mismatch","explicit":false,"bytes":100,"duration_ns":5,"edge":"a->b","stage":"s","frame":1,"file":"x.cpp","line":3,"operation":"stage 's' input"})"
    "\n"
    R"({"kind":"convert","reason":"pixel_format","bytes":50,"edge":"a->b","stage":"s","frame":1,"file":"y.cpp","line":9,"operation":"convert_color"})"
    "\n";

TEST(NeatCli, AuditPrintsATableAndJson) {
  const std::string path = write("audit.jsonl", kTrace);
  const CliRun table = run("audit " + path);
  EXPECT_EQ(table.status, 0) << table.out;
  EXPECT_NE(table.out.find("a->b"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("x.cpp:3 (stage 's' input)"), std::string::npos) << table.out;
  const CliRun json = run("audit --format json " + path);
  EXPECT_EQ(json.status, 0);
  EXPECT_NE(json.out.find("\"conversions\": 2"), std::string::npos) << json.out;
  std::filesystem::remove(path);
}

TEST(NeatCli, FailOnGivesExitStatus3) {
  const std::string path = write("fail.jsonl", kTrace);
  const CliRun r = run("audit --fail-on pack,transfer " + path);
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("--fail-on pack: 1 pack conversion(s) (stride_mismatch) on edge 'a->b'"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(run("audit --fail-on transfer " + path).status, 0);
  EXPECT_EQ(run("audit --fail-on warp " + path).status, 2);
  std::filesystem::remove(path);
}

TEST(NeatCli, MalformedTraceGivesExitStatus2WithTheLine) {
  const std::string path = write("bad.jsonl", std::string(kTrace) + "{\"kind\":\"pack\",\"reas");
  const CliRun r = run("audit " + path);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("line 3"), std::string::npos) << r.out;
  EXPECT_EQ(run("audit /nonexistent/trace").status, 2);
  EXPECT_NE(run("").status, 0) << "a subcommand is required";
  std::filesystem::remove(path);
}

}  // namespace

namespace {

TEST(NeatCli, TimelineWritesAPng) {
  const std::string trace = write(
      "timeline.jsonl",
      R"({"kind":"pack","reason":"dtype","bytes":1,"ts_ns":2000,"duration_ns":1000,"stage":"s"})"
      "\n");
  const std::string png = trace + ".png";
  const CliRun r = run("timeline " + trace + " --out " + png);
  EXPECT_EQ(r.status, 0) << r.out;
  std::ifstream in(png, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  const std::string untimed = write("untimed.jsonl", R"({"kind":"pack","reason":"dtype","bytes":1})"
                                                     "\n");
  EXPECT_EQ(run("timeline " + untimed + " --out " + png).status, 2);
  EXPECT_EQ(run("timeline " + trace + " --out /nonexistent/x.png").status, 2);
  std::filesystem::remove(trace);
  std::filesystem::remove(untimed);
  std::filesystem::remove(png);
}

}  // namespace

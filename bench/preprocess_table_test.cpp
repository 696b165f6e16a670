// neat_preprocess_table's arguments: every list item is checked before the
// first row is measured (a bad one exits 2 with what was wrong), and a row
// prints every column, the bound's "reachable" among them; the header names
// the host's CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli.hpp"  // run() starts NEAT_CLI_PATH: here, neat_preprocess_table

namespace {

using neat::cli_test::CliRun;
using neat::cli_test::run;

// The line of the table's output that starts with `start`, whole (no line
// break); empty when there is none.
std::string line_of(const std::string& out, const std::string& start) {
  const auto at = out.find(start);
  if (at == std::string::npos) return {};
  return out.substr(at, out.find('\n', at) - at);
}

// A table row's cells, without the bars and the space either side.
std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream row(line.substr(1));
  for (std::string cell; std::getline(row, cell, '|');)
    cells.push_back(cell.substr(1, cell.size() - 2));
  return cells;
}

TEST(PreprocessTable, BadArgumentsAreRefusedBeforeTheFirstRow) {
  const struct {
    const char* args;
    const char* says;
  } bad[] = {
      {"--sizes 320,abc", "--sizes: 'abc' is not a whole number from 16 to 8192"},
      {"--sizes 8", "--sizes: '8' is not a whole number from 16 to 8192"},
      {"--threads 0", "--threads: '0' is not a whole number from 1 to 256"},
      {"--modes square,diagonal", "--modes: unknown 'diagonal' (square, letterbox)"},
      {"--interp cubic", "--interp: unknown 'cubic' (bilinear, area, nearest)"},
      {"--sources 8k --sizes 16", "unknown source '8k' (720p, 1080p, 4k)"},
      {"--formats p010 --sizes 16", "unknown format 'p010' (nv12, i420)"},
      // A bad item after good ones: refused before the good ones' rows run.
      {"--sources 720p,8k --sizes 32", "unknown source '8k' (720p, 1080p, 4k)"},
      {"--sources 720p --formats nv12,p010 --sizes 32", "unknown format 'p010' (nv12, i420)"},
      {"--seconds 0", "--seconds"},
      {"--runs 0", "--runs: Value 0 not in range 1 to 99"},
      {"--runs 100", "--runs: Value 100 not in range 1 to 99"},
      {"--runs two", "--runs"},
      {"--simd avx512", "--simd: avx512 not in {native,avx2}"},
      {"--sources 720p --sizes 16 --modes letterbox",
       "720p letterbox into 16: the content is 16x9; the recipes' 4:2:0 steps need an even"},
  };
  for (const auto& b : bad) {
    const CliRun r = run(b.args);
    EXPECT_NE(r.status, 0) << b.args;
    EXPECT_NE(r.out.find(b.says), std::string::npos) << b.args << "\n" << r.out;
    EXPECT_EQ(r.out.find("| 720p |"), std::string::npos) << b.args << ": measured a row";
  }
}

TEST(PreprocessTable, ARowPrintsEveryColumn) {
  const CliRun r =
      run("--sources 720p --formats i420 --sizes 32 --modes letterbox --interp area --threads 1 "
          "--seconds 0.001");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("| reachable |"), std::string::npos) << r.out;
  // Which machine: the same code ranks differently on different cores.
  EXPECT_NE(r.out.find("host: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(family "), std::string::npos) << r.out;
  const std::string row = line_of(r.out, "| 720p | i420 | 32 | letterbox | area | 1 |");
  ASSERT_FALSE(row.empty()) << r.out;
  int bars = 0;
  for (char c : row)
    bars += c == '|';
  EXPECT_EQ(bars, 14) << row;  // 13 columns
  EXPECT_EQ(row.substr(row.size() - 5), "| 0 |") << "allocations per call once warm: " << row;
}

// --fresh: every call reads the next of many copies of the frame (from
// memory, as a camera's); the header says which, and the row is whole.
TEST(PreprocessTable, FreshFramesAreSaidAndMeasured) {
  const CliRun cached =
      run("--sources 720p --formats nv12 --sizes 32 --modes square --interp nearest --threads 1 "
          "--seconds 0.001");
  ASSERT_EQ(cached.status, 0) << cached.out;
  EXPECT_NE(cached.out.find("frames: one, read by every call"), std::string::npos) << cached.out;
  const CliRun r =
      run("--sources 720p --formats nv12 --sizes 32 --modes square --interp nearest --threads 1 "
          "--seconds 0.001 --fresh");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("frames: fresh (--fresh)"), std::string::npos) << r.out;
  const std::string row = line_of(r.out, "| 720p | nv12 | 32 | square | nearest | 1 |");
  ASSERT_FALSE(row.empty()) << r.out;
  EXPECT_EQ(row.substr(row.size() - 5), "| 0 |") << "allocations per call once warm: " << row;
}

// --runs 3: each row measured three times; it prints the run of median
// speed-up and, in brackets, the lowest and highest of the three, and the
// header says so. One run prints no brackets.
TEST(PreprocessTable, RunsPrintTheMedianAndTheRange) {
  const char* args =
      "--sources 720p --formats nv12 --sizes 32 --modes square --interp bilinear --threads 1 "
      "--seconds 0.001";
  const CliRun one = run(args);
  ASSERT_EQ(one.status, 0) << one.out;
  const std::string single = line_of(one.out, "| 720p | nv12 | 32 | square | bilinear | 1 |");
  ASSERT_FALSE(single.empty()) << one.out;
  EXPECT_EQ(single.find('('), std::string::npos) << single;
  EXPECT_EQ(one.out.find("runs: "), std::string::npos) << one.out;

  const CliRun r = run(std::string(args) + " --runs 3");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("runs: 3 per row"), std::string::npos) << r.out;
  const std::string line = line_of(r.out, "| 720p | nv12 | 32 | square | bilinear | 1 |");
  ASSERT_FALSE(line.empty()) << r.out;
  const std::vector<std::string> cells = cells_of(line);
  ASSERT_EQ(cells.size(), 13u) << line;
  // "2.31x (2.20-2.45)": the median within its runs' range.
  double median = 0, lo = 0, hi = 0;
  ASSERT_EQ(std::sscanf(cells[9].c_str(), "%lfx (%lf-%lf)", &median, &lo, &hi), 3) << line;
  EXPECT_LE(lo, median) << line;
  EXPECT_LE(median, hi) << line;
  EXPECT_EQ(cells[12], "0") << "allocations per call, the most of any run: " << line;
}

// --runs over two sources and formats: the passes go over the whole table,
// and every row of every block prints its median and range, each once, in
// the order of the options.
TEST(PreprocessTable, RunsCoverEveryBlock) {
  const CliRun r =
      run("--sources 720p,1080p --formats i420,nv12 --sizes 32 --modes square --interp nearest "
          "--threads 1 --seconds 0.001 --runs 2");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("runs: 2 per row, in passes over the whole table"), std::string::npos)
      << r.out;
  std::size_t last = 0;
  for (const char* block :
       {"| 720p | i420 |", "| 720p | nv12 |", "| 1080p | i420 |", "| 1080p | nv12 |"}) {
    const std::string start = std::string(block) + " 32 | square | nearest | 1 |";
    const auto at = r.out.find(start);
    ASSERT_NE(at, std::string::npos) << start << "\n" << r.out;
    EXPECT_EQ(r.out.find(start, at + 1), std::string::npos) << "printed twice: " << start;
    EXPECT_GT(at, last) << "out of order: " << start;
    last = at;
    const std::vector<std::string> cells = cells_of(line_of(r.out, start));
    ASSERT_EQ(cells.size(), 13u) << r.out;
    EXPECT_NE(cells[9].find('('), std::string::npos) << "no range of two runs: " << start;
  }
  // Where the passes are, while the rows wait for the last one.
  EXPECT_NE(r.out.find("measuring 720p i420: 1 row (pass 1 of 2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("measuring 1080p nv12: 1 row (pass 2 of 2)"), std::string::npos) << r.out;
}

// The host's probe beside every run (HostProbe): after the rows, its range
// as a ratio to its fastest and how many runs it marks slowed, out of every
// run of every row; then the floor's range against its row's fastest floor
// and the runs it marks (the memory slowed), and the runs slowed either
// way. The fastest probe is one of the runs, so at least one run is not
// slowed by it. With --runs the slowed runs leave the rows' medians, and
// the line says so; one run a row leaves nothing out.
TEST(PreprocessTable, TheHostProbeCountsEveryRun) {
  const char* args =
      "--sources 720p --formats nv12 --sizes 32,48 --modes square --interp nearest --threads 1 "
      "--seconds 0.001";
  const CliRun r = run(std::string(args) + " --runs 3");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string line = line_of(r.out, "host: its probe");
  ASSERT_FALSE(line.empty()) << r.out;
  const auto took = line.find("took 1.00-");
  ASSERT_NE(took, std::string::npos) << line;
  double hi = 0, limit = 0, floor_hi = 0, floor_limit = 0;
  int probed = -1, total = 0, memory = -1, slowed = -1;
  ASSERT_EQ(std::sscanf(line.c_str() + took,
                        "took 1.00-%lfx its fastest time, over %lfx in %d of %d runs; the floor of "
                        "a run took 1.00-%lfx the fastest of its row's runs, over %lfx in %d (the "
                        "memory slowed). %d runs",
                        &hi, &limit, &probed, &total, &floor_hi, &floor_limit, &memory, &slowed),
            8)
      << line;
  EXPECT_GE(hi, 1.0) << line;
  EXPECT_GE(floor_hi, 1.0) << line;
  EXPECT_EQ(total, 6) << "two rows, three runs each: " << line;
  EXPECT_GE(probed, 0) << line;
  EXPECT_LT(probed, total) << "the fastest run is not slowed: " << line;
  // The fastest floor of each row is one of its runs: at most two of each
  // row's three are marked, and a run marked either way counts once.
  EXPECT_GE(memory, 0) << line;
  EXPECT_LE(memory, 4) << line;
  EXPECT_GE(slowed, std::max(probed, memory)) << line;
  EXPECT_LE(slowed, probed + memory) << line;
  EXPECT_NE(line.find("left out of their rows' medians"), std::string::npos) << line;

  const CliRun one = run(args);
  ASSERT_EQ(one.status, 0) << one.out;
  const std::string single = line_of(one.out, "host: its probe");
  ASSERT_FALSE(single.empty()) << one.out;
  EXPECT_NE(single.find("of 2 runs"), std::string::npos) << single;
  EXPECT_EQ(single.find("left out"), std::string::npos) << single;
}

// The summary after the rows counts the rows against the goals: here one
// row, so its own speed-up and reachable decide every count.
TEST(PreprocessTable, TheSummaryCountsTheRowsAgainstTheGoals) {
  const CliRun r =
      run("--sources 720p --formats i420 --sizes 32 --modes letterbox --interp area --threads 1 "
          "--seconds 0.001");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string line = line_of(r.out, "| 720p | i420 | 32 | letterbox | area | 1 |");
  ASSERT_FALSE(line.empty()) << r.out;
  const std::vector<std::string> cells = cells_of(line);
  ASSERT_EQ(cells.size(), 13u) << r.out;
  const double speedup = std::stod(cells[9]), reachable = std::stod(cells[11]);
  const double vs_floor = std::stod(cells[10]);
  if (speedup == 2.0 || reachable == 2.0 || vs_floor == 2.0) GTEST_SKIP() << "on a goal, rounded";
  const bool met = speedup > 2.0, can = reachable > 2.0, missed = can && !met;
  const std::string summary = "| area | 1 | " + std::string(met ? "1" : "0") + "/1 at 2.0x | " +
                              (can ? "1" : "0") + " | " + (missed ? "1" : "0") + " | ";
  EXPECT_NE(r.out.find("Against the goals"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(summary), std::string::npos) << summary << "\n" << r.out;
  const auto floor_at = r.out.find(" | " + std::string(vs_floor < 2.0 ? "1" : "0") + " | 0 |\n");
  EXPECT_NE(floor_at, std::string::npos) << "within 2x of the floor, no allocations\n" << r.out;
  EXPECT_EQ(r.out.find("* 720p i420 -> 32 letterbox, area, 1 thread: ") != std::string::npos,
            missed)
      << r.out;
  // Not the headline row (1080p NV12 -> 640 square): no line for it.
  EXPECT_EQ(r.out.find("1080p nv12 -> 640 square"), std::string::npos) << r.out;
}

// --simd avx2: ours, OpenCV and libyuv all on their AVX2 code (OpenCV's
// switch is read when it loads: the program starts itself again with it).
TEST(PreprocessTable, Avx2RunsEveryWayWithoutAvx512) {
  const CliRun r =
      run("--simd avx2 --sources 720p --formats nv12 --sizes 32 --modes square --interp bilinear "
          "--threads 1 --seconds 0.001");
  if (r.status != 0) {  // a CPU without AVX2 says so
    EXPECT_NE(r.out.find("not AVX2"), std::string::npos) << r.out;
    return;
  }
  EXPECT_NE(r.out.find("engine: AVX2;"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("OpenCV and libyuv without AVX-512 too"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| 720p | nv12 | 32 | square | bilinear | 1 |"), std::string::npos) << r.out;
}

}  // namespace

// Runs tests/python/test_dlpack_numpy.py with Debian's /usr/bin/python3 and
// numpy against the neat_dlpack_py extension, as a user's Python would.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

TEST(DlpackNumpy, NumpyFromDlpackAndRoundTrip) {
  const std::string command = std::string("PYTHONPATH=") + NEAT_PY_MODULE_DIR +
                              " PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 " + NEAT_PY_TEST +
                              " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe) != nullptr)
    output += buf.data();
  const int status = ::pclose(pipe);
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("Ran 6 tests"), std::string::npos) << output;
  EXPECT_NE(output.find("\nOK"), std::string::npos) << output;
}

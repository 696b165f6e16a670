// Running the `neat` command line from tests: exit status and output, with
// or without a signal sent while it runs. NEAT_CLI_PATH names the binary.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace neat::cli_test {

struct CliRun {
  int status;
  std::string out;
  double seconds_after_signal = 0;  ///< run_and_signal: from the signal to the exit
};

inline CliRun run(const std::string& args) {
  const std::string cmd = std::string(NEAT_CLI_PATH) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  CliRun r{-1, {}, 0};
  if (!p) return r;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), p))
    r.out += buf.data();
  const int rc = ::pclose(p);
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return r;
}

// Whether process `pid` is the CLI (not the shell that execs it) and has a
// SIGINT handler installed (its SigCgt mask in /proc), or has already ended.
inline bool catches_sigint(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream comm(proc + "/comm");
  std::string name;
  std::getline(comm, name);
  if (name != std::filesystem::path(NEAT_CLI_PATH).filename().string().substr(0, 15)) return false;
  std::ifstream status(proc + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("State:", 0) == 0 && line.find('Z') != std::string::npos) return true;
    if (line.rfind("SigCgt:", 0) == 0) {
      const unsigned long long mask = std::strtoull(line.c_str() + 7, nullptr, 16);
      return (mask >> (SIGINT - 1)) & 1u;
    }
  }
  return false;
}

// Starts `neat ARGS` (output to a file), waits until the output shows
// `ready` (up to 60 s: CI machines are slow), then `after`, sends `sig`, waits.
inline CliRun run_and_signal(const std::string& args, const std::string& ready, int sig,
                             std::chrono::milliseconds after, pid_t* pid_out = nullptr) {
  const std::string out =
      std::filesystem::temp_directory_path() / ("signal." + std::to_string(::getpid()) + ".out");
  const std::string cmd = "exec " + std::string(NEAT_CLI_PATH) + " " + args + " > " + out + " 2>&1";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (pid_out) *pid_out = pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  // First until the program catches SIGINT (`run` and `explain` install their
  // handlers first thing): a signal before that kills it outright, which a
  // slow start (the sanitizer build on a busy machine) made a flaky failure.
  while (std::chrono::steady_clock::now() < deadline && !catches_sigint(pid))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(out);
    std::stringstream sofar;
    sofar << in.rdbuf();
    if (sofar.str().find(ready) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(after);
  ::kill(pid, sig);
  const auto signalled = std::chrono::steady_clock::now();
  int rc = 0;
  ::waitpid(pid, &rc, 0);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - signalled;
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(out);
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -WTERMSIG(rc), text.str(), took.count()};
}

// A fresh directory as TMPDIR for the programs this test starts (where
// `neat run` makes its temporary trace), removed with what is left in it.
struct ScopedTmpdir {
  std::string path;
  std::string old;
  bool had_old = false;
  ScopedTmpdir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "neat-tmpdir-XXXXXX").string();
    path = ::mkdtemp(tmpl.data()) != nullptr ? tmpl : std::string();
    if (const char* o = std::getenv("TMPDIR")) {
      old = o;
      had_old = true;
    }
    ::setenv("TMPDIR", path.c_str(), 1);
  }
  ~ScopedTmpdir() {
    if (had_old) {
      ::setenv("TMPDIR", old.c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScopedTmpdir(const ScopedTmpdir&) = delete;
  ScopedTmpdir& operator=(const ScopedTmpdir&) = delete;
};

inline std::string write(const std::string& name, const std::string& text) {
  const auto path =
      std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid()));
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace neat::cli_test

// `neat run --metrics-listen` scraped by a real Prometheus server (Debian's
// prometheus, installed by `make test`) on loopback: two processes, bounded
// in time; the series are read back from Prometheus's own query API. The
// endpoint's text also passes `promtool check metrics`.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A child process whose output goes to a file; SIGTERM and reaped at the end.
class Child {
 public:
  Child(const std::string& command, fs::path out) : out_(std::move(out)) {
    const std::string cmd = "exec " + command + " > " + out_.string() + " 2>&1";
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && status_ < 0) (void)stop(SIGKILL);
  }
  std::string output() const {
    std::ifstream in(out_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Waits until the output matches `re` (or `within` passes); the first group.
  std::string wait_for(const std::regex& re, std::chrono::seconds within) const {
    const auto deadline = std::chrono::steady_clock::now() + within;
    std::smatch m;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string text = output();
      if (std::regex_search(text, m, re)) return m.size() > 1 ? m[1].str() : m[0].str();
      std::this_thread::sleep_for(50ms);
    }
    return {};
  }
  // Sends `sig`, waits; the exit status, or -signal.
  int stop(int sig) {
    if (status_ >= 0) return status_;
    ::kill(pid_, sig);
    int rc = 0;
    ::waitpid(pid_, &rc, 0);
    status_ = WIFEXITED(rc) ? WEXITSTATUS(rc) : 1000 + WTERMSIG(rc);
    return status_;
  }

 private:
  fs::path out_;
  pid_t pid_ = -1;
  int status_ = -1;
};

int free_loopback_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = -1;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(s);
  return port;
}

// One instant query; the value of each series (by its `stage`/`edge` label or
// "" when it has neither). Empty when Prometheus has nothing yet.
std::map<std::string, double> query(httplib::Client& prom, const std::string& q) {
  std::map<std::string, double> out;
  auto res = prom.Get("/api/v1/query", httplib::Params{{"query", q}}, httplib::Headers{});
  if (!res || res->status != 200) return out;
  const auto j = nlohmann::json::parse(res->body, nullptr, false);
  if (j.is_discarded() || j.value("status", "") != "success") return out;
  for (const auto& r : j["data"]["result"]) {
    const auto& m = r["metric"];
    std::string key = m.value("stage", m.value("edge", m.value("sink", "")));
    out[key] = std::stod(r["value"][1].get<std::string>());
  }
  return out;
}

TEST(MetricsEndpoint, PrometheusScrapesARunningPipelineAndReadsEverySeriesBack) {
  const fs::path prometheus = "/usr/bin/prometheus";
  ASSERT_TRUE(fs::exists(prometheus)) << "make test installs Debian's prometheus package";
  const fs::path dir = fs::temp_directory_path() / ("neat-prom." + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);

  Child neat(std::string(NEAT_CLI_PATH) +
                 " run --quiet --metrics-listen 127.0.0.1:0 "
                 "'default frames=1000000 ! preprocess size=64x64 ! appsink'",
             dir / "neat.out");
  const std::string port =
      neat.wait_for(std::regex(R"(serving metrics at http://127\.0\.0\.1:(\d+)/metrics)"), 60s);
  ASSERT_FALSE(port.empty()) << neat.output();

  // The endpoint's text is valid for Prometheus's own linter.
  {
    httplib::Client direct("127.0.0.1", std::stoi(port));
    auto res = direct.Get("/metrics");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    std::ofstream(dir / "scrape.txt") << res->body;
    const std::string check = "promtool check metrics < " + (dir / "scrape.txt").string() + " > " +
                              (dir / "promtool.out").string() + " 2>&1";
    EXPECT_EQ(std::system(check.c_str()), 0) << std::ifstream(dir / "promtool.out").rdbuf();
  }

  const int prom_port = free_loopback_port();
  ASSERT_GT(prom_port, 0);
  std::ofstream(dir / "prometheus.yml") << "global:\n  scrape_interval: 1s\n"
                                           "scrape_configs:\n  - job_name: neat\n"
                                           "    static_configs:\n      - targets: ['127.0.0.1:"
                                        << port << "']\n";
  Child prom(prometheus.string() + " --config.file=" + (dir / "prometheus.yml").string() +
                 " --storage.tsdb.path=" + (dir / "data").string() +
                 " --web.listen-address=127.0.0.1:" + std::to_string(prom_port) +
                 " --log.level=warn",
             dir / "prometheus.out");

  httplib::Client api("127.0.0.1", prom_port);
  api.set_connection_timeout(1s);
  api.set_read_timeout(2s);
  // Two scrapes at least: the frame counters must have grown between them.
  const auto deadline = std::chrono::steady_clock::now() + 45s;
  std::map<std::string, double> up, frames_in, first_frames;
  while (std::chrono::steady_clock::now() < deadline) {
    up = query(api, "up{job=\"neat\"}");
    frames_in = query(api, "neat_stage_frames_in_total{job=\"neat\"}");
    if (first_frames.empty()) first_frames = frames_in;
    if (!up.empty() && up[""] == 1 && frames_in.count("preprocess") &&
        first_frames.count("preprocess") && frames_in["preprocess"] > first_frames["preprocess"]) {
      break;
    }
    std::this_thread::sleep_for(250ms);
  }
  ASSERT_EQ(up[""], 1) << "Prometheus did not scrape the endpoint\n" << prom.output();
  ASSERT_TRUE(frames_in.count("preprocess") && frames_in.count("appsink")) << prom.output();
  EXPECT_GT(frames_in["preprocess"], first_frames["preprocess"]) << "the counters did not grow";

  EXPECT_GT(query(api, "neat_stage_frames_out_total{stage=\"default\",kind=\"source\"}")["default"],
            0);
  EXPECT_EQ(query(api, "neat_edge_queue_capacity")["default->preprocess"], 1)
      << "the default queue capacity (kDefaultQueueCapacity)";
  // Capture-to-appsink latency as a histogram Prometheus computes quantiles of.
  EXPECT_GT(query(api, "neat_sink_latency_seconds_count{sink=\"appsink\"}")["appsink"], 0);
  const double p99 = query(
      api,
      "histogram_quantile(0.99, neat_sink_latency_seconds_bucket{sink=\"appsink\"})")["appsink"];
  EXPECT_GT(p99, 0) << "a quantile of the latency histogram";
  EXPECT_LT(p99, 10) << "seconds";
  EXPECT_GT(query(api, "neat_graph_frame_memory_bytes")[""], 1e6);
  EXPECT_EQ(query(api, "neat_edge_queue_depth").size(), 2u);
  EXPECT_GT(query(api, "neat_stage_busy_seconds_count{stage=\"preprocess\"}")["preprocess"], 0);
  EXPECT_EQ(query(api, "neat_stage_dropped_frames_total{reason=\"stage_error\"}").size(), 2u);
  EXPECT_GT(query(api, "sum(neat_conversion_bytes_total{edge=\"default->preprocess\"})")[""], 0);
  EXPECT_GT(query(api, "process_resident_memory_bytes{job=\"neat\"}")[""], 1e6);
  EXPECT_GT(query(api, "process_open_fds{job=\"neat\"}")[""], 2);
  EXPECT_EQ(query(api, "neat_graph_running{job=\"neat\"}")[""], 1);

  EXPECT_EQ(neat.stop(SIGTERM), 128 + SIGTERM) << neat.output();
  EXPECT_NE(neat.output().find("(balanced)"), std::string::npos) << neat.output();
  prom.stop(SIGTERM);
  fs::remove_all(dir);
}

TEST(MetricsEndpoint, ABadOrTakenAddressIsAClearErrorBeforeAnythingRuns) {
  const auto run = [](const std::string& args) {
    const std::string cmd = std::string(NEAT_CLI_PATH) + " " + args + " 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    while (p && std::fgets(buf, sizeof buf, p))
      out += buf;
    const int rc = p ? ::pclose(p) : -1;
    return std::make_pair(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out);
  };
  auto [status, out] = run("run --quiet --metrics-listen 127.0.0.1:99999 'default ! appsink'");
  EXPECT_EQ(status, 2) << out;
  EXPECT_NE(out.find("--metrics-listen: listen address '127.0.0.1:99999': the port must be"),
            std::string::npos)
      << out;
  // A port another process holds: exit 1 and the fix, before the pipeline starts.
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(s, 1), 0);
  ASSERT_EQ(::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string taken = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  std::tie(status, out) = run("run --quiet --metrics-listen " + taken + " 'default ! appsink'");
  ::close(s);
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("cannot listen on " + taken), std::string::npos) << out;
  EXPECT_EQ(out.find("frames"), std::string::npos) << "the pipeline ran: " << out;
}

}  // namespace

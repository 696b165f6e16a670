// The live metrics endpoint: listen addresses, GET /metrics over real HTTP
// (cpp-httplib's client), collectors added and removed while scrapes run,
// the process_* metrics, a port already taken. Threaded: also run under TSan.
#include "neat/telemetry/metrics_server.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

#include "neat/telemetry/prometheus.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

TEST(ListenAddress, ParsesWhatOperatorsWriteAndNamesWhatIsWrong) {
  struct Good {
    const char* text;
    const char* host;
    int port;
  };
  for (const Good& g : {Good{"9464", "127.0.0.1", 9464}, Good{":9464", "127.0.0.1", 9464},
                        Good{"0.0.0.0:80", "0.0.0.0", 80}, Good{"localhost:0", "localhost", 0},
                        Good{"[::1]:9464", "::1", 9464}, Good{"[::]:1", "::", 1}}) {
    auto a = parse_listen_address(g.text);
    NEAT_ASSERT_OK(a);
    EXPECT_EQ(a->host, g.host) << g.text;
    EXPECT_EQ(a->port, g.port) << g.text;
  }
  EXPECT_EQ(parse_listen_address("[::1]:9464")->to_string(), "[::1]:9464");
  EXPECT_EQ(parse_listen_address(":7")->to_string(), "127.0.0.1:7");
  struct Bad {
    const char* text;
    const char* says;
  };
  for (const Bad& b : {Bad{"", "the port must be a number"}, Bad{"host:", "the port must be"},
                       Bad{"host:65536", "0 to 65535"}, Bad{"host:-1", "0 to 65535"},
                       Bad{"host:12ab", "the port must be"}, Bad{"::1:80", "in brackets"},
                       Bad{"[::1]80", "[ADDRESS]:PORT"}, Bad{"[::1", "[ADDRESS]:PORT"},
                       Bad{"[]:80", "empty host"}}) {
    NEAT_EXPECT_ERROR(parse_listen_address(b.text), ErrorCode::InvalidArgument, b.says);
  }
}

TEST(MetricsServer, ServesMetricsOverHttpWithCollectorsAndProcessMetrics) {
  auto server = MetricsServer::start("127.0.0.1:0");
  NEAT_ASSERT_OK(server);
  MetricsServer& s = **server;
  ASSERT_GT(s.port(), 0);
  EXPECT_EQ(s.url(), "http://127.0.0.1:" + std::to_string(s.port()) + "/metrics");
  auto reg = s.add_collector([](std::string& out) {
    prometheus::family(out, "app_things_total", "counter", "Things.");
    prometheus::sample(out, "app_things_total", {{"where", "here"}}, std::uint64_t{7});
  });

  httplib::Client client("127.0.0.1", s.port());
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  for (const char* want :
       {"app_things_total{where=\"here\"} 7\n", "# TYPE process_resident_memory_bytes gauge\n",
        "process_open_fds ", "process_cpu_seconds_total ", "process_start_time_seconds ",
        "# TYPE neat_conversions_total counter\n"}) {
    EXPECT_NE(res->body.find(want), std::string::npos) << want << "\n" << res->body;
  }
  EXPECT_EQ(s.scrapes(), 1u);

  reg.reset();
  res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body.find("app_things_total"), std::string::npos);
  EXPECT_EQ(s.scrapes(), 2u);

  res = client.Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_NE(res->body.find("metrics are at /metrics"), std::string::npos) << res->body;
  EXPECT_EQ(s.scrapes(), 2u);
}

TEST(MetricsServer, OptionsLeaveOutFamiliesAndScrapeWorksWithoutHttp) {
  auto server = MetricsServer::start(":0", {.conversion_metrics = false, .process_metrics = false});
  NEAT_ASSERT_OK(server);
  EXPECT_EQ((*server)->scrape(), "");
  auto reg = (*server)->add_collector([](std::string& out) { out += "x 1\n"; });
  EXPECT_EQ((*server)->scrape(), "x 1\n");
  NEAT_EXPECT_ERROR(MetricsServer::start(":0", {.threads = 0}), ErrorCode::InvalidArgument,
                    "threads = 0");
}

TEST(MetricsServer, APortAlreadyTakenIsUnavailableWithTheAddressAndTheFix) {
  auto first = MetricsServer::start("127.0.0.1:0");
  NEAT_ASSERT_OK(first);
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = MetricsServer::start(taken);
  NEAT_EXPECT_ERROR(second, ErrorCode::Unavailable, "cannot listen on " + taken);
  NEAT_EXPECT_ERROR(MetricsServer::start(taken), ErrorCode::Unavailable, "--metrics-listen");
  NEAT_EXPECT_ERROR(MetricsServer::start("192.0.2.1:0"), ErrorCode::Unavailable,
                    "not an address of this machine");
  NEAT_EXPECT_ERROR(MetricsServer::start("nope:1:2"), ErrorCode::InvalidArgument, "in brackets");
}

TEST(MetricsServer, CollectorsComeAndGoWhileScrapesRun) {
  auto server = MetricsServer::start("127.0.0.1:0", {.threads = 2});
  NEAT_ASSERT_OK(server);
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0};
  std::thread scraper([&] {
    httplib::Client client("127.0.0.1", (*server)->port());
    while (!stop.load()) {
      if (auto r = client.Get("/metrics"); r && r->status == 200) ++ok;
    }
  });
  for (int i = 0; i < 200; ++i) {
    auto value = std::make_shared<int>(i);
    auto reg = (*server)->add_collector(
        [value](std::string& out) { out += "v " + std::to_string(*value) + "\n"; });
    std::this_thread::yield();
  }  // each registration removed at once, maybe mid-scrape
  while (ok.load() < 20)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop.store(true);
  scraper.join();
  EXPECT_EQ((*server)->scrape().find("\nv "), std::string::npos);
}

TEST(MetricsServer, DestroyingTheServerRightAfterStartDoesNotHang) {
  for (int i = 0; i < 20; ++i) {
    auto server = MetricsServer::start("127.0.0.1:0");
    NEAT_ASSERT_OK(server);
  }
}

}  // namespace
}  // namespace neat

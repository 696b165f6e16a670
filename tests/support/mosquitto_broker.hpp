// A real mosquitto broker for tests, on loopback with its own config, port
// and persistence directory, started and stopped by the test (never a
// system service); and a subscriber (libmosquitto, QoS 1, a persistent
// session so messages published while it reconnects are kept for it).
#pragma once

#include <arpa/inet.h>
#include <mosquitto.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace neat::testing {

inline int free_tcp_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

inline bool port_open(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

// Whether the loopback interface has ::1 (containers may run without IPv6).
inline bool has_ipv6_loopback() {
  std::ifstream in("/proc/net/if_inet6");
  std::string address, rest;
  while (in >> address && std::getline(in, rest))
    if (address == "00000000000000000000000000000001") return true;
  return false;
}

class MosquittoBroker {
 public:
  static constexpr const char* kBinary = "/usr/sbin/mosquitto";
  static bool available() { return std::filesystem::exists(kBinary); }

  MosquittoBroker() : port_(free_tcp_port()) {
    dir_ = std::filesystem::temp_directory_path() /
           ("neat-mosquitto-" + std::to_string(getpid()) + "-" + std::to_string(port_));
    std::filesystem::create_directories(dir_);
    // Started as root, mosquitto drops to its own user: let it write here.
    std::filesystem::permissions(dir_, std::filesystem::perms::all);
    std::ofstream(dir_ / "mosquitto.conf")
        << "listener " << port_ << " 127.0.0.1\n"
        << (ipv6_ ? "listener " + std::to_string(port_) + " ::1\n" : "") << "allow_anonymous true\n"
        << "persistence true\n"
        << "persistence_location " << dir_.string() << "/\n"
        << "max_queued_messages 100000\n"
        << "log_dest file " << (dir_ / "mosquitto.log").string() << "\n";
  }
  ~MosquittoBroker() {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  int port() const { return port_; }
  /// Also listening on [::1]:port (when the machine has it).
  bool ipv6() const { return ipv6_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  /// Starts it and waits (up to 10 s) until it takes connections.
  bool start() {
    pid_ = fork();
    if (pid_ == 0) {
      const std::string conf = (dir_ / "mosquitto.conf").string();
      execl(kBinary, kBinary, "-c", conf.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 200; ++i) {
      if (port_open(port_)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  /// SIGTERM (it saves its persistence) and waits for it.
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  int port_;
  bool ipv6_ = has_ipv6_loopback();
  std::filesystem::path dir_;
  pid_t pid_ = -1;
};

class Subscriber {
 public:
  Subscriber(int port, std::string filter) : filter_(std::move(filter)) {
    mosquitto_lib_init();
    m_ = mosquitto_new(("neat-test-sub-" + std::to_string(port)).c_str(), false, this);
    mosquitto_connect_callback_set(m_, [](mosquitto* m, void* self, int rc) {
      if (rc == 0) {
        mosquitto_subscribe(m, nullptr, static_cast<Subscriber*>(self)->filter_.c_str(), 1);
      }
    });
    mosquitto_subscribe_callback_set(m_, [](mosquitto*, void* self, int, int, const int*) {
      auto* s = static_cast<Subscriber*>(self);
      std::lock_guard lock(s->mutex_);
      s->subscribed_ = true;
    });
    mosquitto_message_callback_set(m_, [](mosquitto*, void* self, const mosquitto_message* msg) {
      auto* s = static_cast<Subscriber*>(self);
      std::lock_guard lock(s->mutex_);
      s->messages_.emplace_back(msg->topic, std::string(static_cast<const char*>(msg->payload),
                                                        static_cast<std::size_t>(msg->payloadlen)));
    });
    mosquitto_reconnect_delay_set(m_, 1, 1, false);
    mosquitto_connect_async(m_, "127.0.0.1", port, 30);
    mosquitto_loop_start(m_);
  }
  ~Subscriber() {
    mosquitto_disconnect(m_);
    mosquitto_loop_stop(m_, false);
    mosquitto_destroy(m_);
  }
  bool wait_subscribed(std::chrono::seconds limit = std::chrono::seconds(10)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      {
        std::lock_guard lock(mutex_);
        if (subscribed_) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  std::vector<std::pair<std::string, std::string>> messages() const {
    std::lock_guard lock(mutex_);
    return messages_;
  }
  /// Waits until `pred(messages)` holds or `limit` passes.
  template <class Pred>
  bool wait_for(Pred pred, std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      if (pred(messages())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return pred(messages());
  }

 private:
  std::string filter_;
  mosquitto* m_;
  mutable std::mutex mutex_;
  bool subscribed_ = false;
  std::vector<std::pair<std::string, std::string>> messages_;
};

}  // namespace neat::testing

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

// A test CA and a server certificate it signed for 127.0.0.1 (EC P-256, a
// day), made with the openssl command in `dir`: ca.crt, server.crt,
// server.key. False when openssl failed.
inline bool make_test_certificates(const std::filesystem::path& dir, const std::string& ca_name) {
  const std::string d = dir.string();
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const std::string steps[] = {
      "openssl req -x509" + ec + " -keyout " + d + "/ca.key -out " + d +
          "/ca.crt -days 1 -subj /CN=" + ca_name,
      "openssl req" + ec + " -keyout " + d + "/server.key -out " + d +
          "/server.csr -subj /CN=127.0.0.1",
      "printf 'subjectAltName=IP:127.0.0.1\n' > " + d + "/san.ext",
      "openssl x509 -req -in " + d + "/server.csr -CA " + d + "/ca.crt -CAkey " + d +
          "/ca.key -CAcreateserial -out " + d + "/server.crt -days 1 -extfile " + d + "/san.ext",
      "chmod 0644 " + d + "/server.key",  // mosquitto reads it as its own user
  };
  for (const std::string& step : steps)
    if (std::system((step + " > /dev/null 2>&1").c_str()) != 0) return false;
  return true;
}

// A second listener for MosquittoBroker: TLS with `dir`'s server.crt and
// server.key, and only `user` with `password` (mosquitto_passwd).
struct BrokerTls {
  std::filesystem::path dir;
  std::string user, password;
};

class MosquittoBroker {
 public:
  static constexpr const char* kBinary = "/usr/sbin/mosquitto";
  static bool available() { return std::filesystem::exists(kBinary); }

  /// Anonymous on port(); with `tls`, also TLS and a password on tls_port().
  explicit MosquittoBroker(const BrokerTls* tls = nullptr) : port_(free_tcp_port()) {
    dir_ = std::filesystem::temp_directory_path() /
           ("neat-mosquitto-" + std::to_string(getpid()) + "-" + std::to_string(port_));
    std::filesystem::create_directories(dir_);
    // Started as root, mosquitto drops to its own user: let it write here.
    std::filesystem::permissions(dir_, std::filesystem::perms::all);
    std::ofstream conf(dir_ / "mosquitto.conf");
    if (tls != nullptr) {
      tls_port_ = free_tcp_port();
      const std::string passwd = (dir_ / "passwd").string();
      std::ofstream(passwd).close();
      tls_ready_ = std::system(("mosquitto_passwd -b " + passwd + " " + tls->user + " " +
                                tls->password + " > /dev/null 2>&1 && chmod 0644 " + passwd)
                                   .c_str()) == 0;
      conf << "per_listener_settings true\n"
           << "listener " << tls_port_ << " 127.0.0.1\n"
           << "certfile " << (tls->dir / "server.crt").string() << "\n"
           << "keyfile " << (tls->dir / "server.key").string() << "\n"
           << "allow_anonymous false\n"
           << "password_file " << passwd << "\n";
    }
    // (allow_anonymous after each listener: with per_listener_settings it is
    // the listener's own.)
    conf << "listener " << port_ << " 127.0.0.1\nallow_anonymous true\n"
         << (ipv6_ ? "listener " + std::to_string(port_) + " ::1\nallow_anonymous true\n" : "")
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
  /// The TLS listener's port (0: none) and whether its password file was made.
  int tls_port() const { return tls_port_; }
  bool tls_ready() const { return tls_ready_; }
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
      if (port_open(port_) && (tls_port_ == 0 || port_open(tls_port_))) return true;
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
  int tls_port_ = 0;
  bool tls_ready_ = false;
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

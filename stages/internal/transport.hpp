// What the message sinks (stages/messages.cpp) need of a broker client:
// connect, run its I/O, send with acknowledgement, disconnect. One
// implementation per client library (broker_mqtt.cpp, broker_kafka.cpp).
// Threading: every call comes from the sink's one delivery thread; on_ack is
// called on that thread, inside poll().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "neat/contract/error.hpp"
#include "neat/stages/messages.hpp"

namespace neat {

class Transport {
 public:
  virtual ~Transport() = default;
  /// "mqtt 127.0.0.1:1883".
  virtual std::string endpoint() const = 0;
  /// Starts a connection attempt (poll() completes it); an error when it
  /// failed at once (connection refused).
  virtual Status connect() = 0;
  /// Runs the client's I/O for up to `wait`; an error when the connection
  /// was lost (or could not be made).
  virtual Status poll(std::chrono::milliseconds wait) = 0;
  virtual bool connected() const = 0;
  /// Sends one message; on_ack(token) once the broker acknowledged it.
  virtual Status send(std::string_view topic, std::string_view key, std::string_view payload,
                      std::uint64_t token) = 0;
  /// Drops the connection and whatever was in flight (the sink sends it again).
  virtual void disconnect() = 0;

  std::function<void(std::uint64_t token)> on_ack;
};

/// A message sink over `transport` (kind "mqtt" or "kafka").
std::shared_ptr<Sink> message_sink(std::string_view kind, std::unique_ptr<Transport> transport,
                                   MessageOptions options);

/// Checks what every message sink needs (a topic, a spool of at least one message).
Status check_message_options(std::string_view kind, const MessageOptions& o);

/// "host:port", "host", "[v6]:port" or "[v6]" -> host (without brackets) and
/// port (default_port when absent); errors name `what` and the fix.
Result<std::pair<std::string, int>> parse_host_port(std::string_view text, int default_port,
                                                    std::string_view what);

/// host and port as an address is written: "127.0.0.1:1883", "[::1]:1883".
std::string host_port_text(const std::string& host, int port);

}  // namespace neat

// Detections leave the process: the `mqtt` and `kafka` sinks publish one
// JSON message per frame (and one per track start and end) to a broker, on
// Debian's libmosquitto (QoS 1) and librdkafka (acks from every in-sync
// replica), through a bounded spool.
//
// The spool: consume() turns a frame into messages and queues them; the
// sink's own thread sends them in order, at most `window` unacknowledged at
// once, and drops a message from the spool only when the broker acknowledged
// it. While the broker is away the spool holds up to `spool` messages (past
// it the oldest never sent are dropped, counted; a message sent and not yet
// acknowledged is kept, the broker may have it) and the thread reconnects with
// backoff (0.5 s doubling to 30 s, jittered); what was sent but not
// acknowledged is sent again, in order, after the reconnect (delivery is at
// least once). consume() never waits for the broker: the video keeps its
// rate through an outage. At the end of the stream the sink waits up to
// `drain_timeout` for the spool to empty; messages still undelivered then
// fail the run, with their count, unless a `spool_dir` keeps them for the
// next run (which delivers them first). With `spool_dir`, messages past the
// memory spool wait on disk (up to `spool_bytes`) instead of being dropped.
//
// The message schema (docs/messages.md) is versioned: "neat.detections/1"
// and "neat.track/1".
//
// Threading: consume()/finish()/abort() on the graph's sink thread;
// delivery() from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "neat/stages/sink.hpp"
#include "neat/stages/track.hpp"

namespace neat {

/// What every message sink shares: where messages go and how they are kept.
struct MessageOptions {
  /// The topic; "{stream}" is replaced by the frame's stream name
  /// ("cameras/{stream}/detections").
  std::string topic;
  /// Track starts and ends go here ("{stream}" too); empty: to `topic`.
  std::string track_topic;
  /// The message key (Kafka) per stream; "{stream}" replaced. Empty: the stream name.
  std::string key;
  /// Named in every message ("model"): the model file the detections came from.
  std::string model;
  /// Named in every message ("graph").
  std::string graph = "pipeline";
  /// Publish frames without detections too (every frame has its message).
  bool empty_frames = true;
  /// Messages the spool holds in memory while the broker is away (then the
  /// oldest never sent are dropped, or with spool_dir go to disk).
  std::size_t spool = 10000;
  /// A directory for messages past the memory spool, and for those a run
  /// could not deliver: the next run with it delivers them first. Empty: none.
  std::string spool_dir;
  /// The disk spool's cap; past it the oldest messages on disk are dropped.
  std::uint64_t spool_bytes = std::uint64_t{1} << 30;
  /// Messages sent and not yet acknowledged at once.
  int window = 64;
  /// How long a connection attempt may take before it counts as failed.
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(5);
  /// At the end of the stream: how long to wait for the spool to empty.
  std::chrono::milliseconds drain_timeout = std::chrono::seconds(10);
  /// Track starts and ends posted by the graph's track stages.
  std::shared_ptr<TrackJournal> tracks;
};

struct MqttOptions {
  std::string broker;     ///< HOST:PORT (port default 1883), IPv6 as [ADDRESS]:PORT
  std::string client_id;  ///< empty: "neat-<pid>-<n>"
  std::string username, password;
  std::string ca_file;  ///< TLS with this CA certificate file (PEM)
  int keepalive_seconds = 30;
  MessageOptions messages;
};

struct KafkaOptions {
  std::string brokers;             ///< HOST:PORT[,HOST:PORT...], IPv6 as [ADDRESS]:PORT
  std::string username, password;  ///< SASL PLAIN
  std::string ca_file;             ///< TLS (SASL_SSL with a username)
  MessageOptions messages;
};

/// The message of one frame: `detections` F32 [N, 6] (x1, y1, x2, y2,
/// score, class) or [N, 7] (+ track id), the frame's metadata, `graph`,
/// `model`, the latency from capture to now. Appended to `out`.
Status append_detection_message(std::string& out, const NeatTensor& detections,
                                std::string_view graph, std::string_view model);
/// The message of a track start or end.
void append_track_message(std::string& out, const TrackRecord& record, std::string_view graph);

/// Connects at build (prepare()) without waiting for the broker: a broker
/// that is down at start is retried like one that went away. Bad options
/// (no topic, a bad HOST:PORT, a CA file that does not exist) fail here.
Result<std::shared_ptr<Sink>> mqtt_sink(MqttOptions options);
Result<std::shared_ptr<Sink>> kafka_sink(KafkaOptions options);

}  // namespace neat

#include "neat/stages/messages.hpp"

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "neat/stages/internal/disk_spool.hpp"
#include "neat/stages/internal/transport.hpp"
#include "neat/telemetry/event_sink.hpp"

namespace neat {

namespace {

using Clock = std::chrono::steady_clock;

std::int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

void append_json_string(std::string& out, std::string_view s) {
  out += nlohmann::json(std::string(s)).dump();
}

void appendf(std::string& out, const char* fmt, double v) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, fmt, v);
  out.append(buf, static_cast<std::size_t>(std::max(n, 0)));
}

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

// A steady-clock capture time as UTC: "2026-11-26T01:02:03.123456Z" and Unix ns.
void append_capture_time(std::string& out, std::int64_t capture_ns) {
  const std::int64_t now_system = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count();
  const std::int64_t unix_ns = now_system - (steady_now_ns() - capture_ns);
  const std::time_t secs = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[48];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  out += ",\"capture_time\":\"";
  out.append(buf, n);
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%06dZ\"", static_cast<int>((unix_ns / 1000) % 1'000'000));
  out += frac;
  out += ",\"capture_time_ns\":";
  append_int(out, unix_ns);
}

void append_frame_fields(std::string& out, std::string_view schema, std::string_view graph,
                         const StreamId& stream, std::int64_t frame, std::int64_t pts_ns,
                         std::int64_t capture_ns) {
  out += "{\"schema\":\"";
  out += schema;
  out += "\",\"graph\":";
  append_json_string(out, graph);
  out += ",\"stream\":";
  append_json_string(out, stream.name);
  out += ",\"stream_index\":";
  append_int(out, stream.index);
  out += ",\"frame\":";
  append_int(out, frame);
  out += ",\"pts_ns\":";
  append_int(out, pts_ns);
  if (capture_ns >= 0) {
    append_capture_time(out, capture_ns);
    out += ",\"latency_ms\":";
    appendf(out, "%.3f", static_cast<double>(steady_now_ns() - capture_ns) * 1e-6);
  }
}

}  // namespace

Status append_detection_message(std::string& out, const NeatTensor& d, std::string_view graph,
                                std::string_view model) {
  if (d.dtype() != DType::F32 || d.rank() != 2 || (d.shape()[1] != 6 && d.shape()[1] != 7)) {
    return invalid_argument("messages: got " + d.to_string() +
                            ", not detections f32 [N, 6] or [N, 7] (put `yolo` (and `track`) "
                            "before the message sink)");
  }
  const FrameMeta& m = d.meta();
  append_frame_fields(out, "neat.detections/1", graph, m.stream, m.frame, m.pts_ns, m.capture_ns);
  out += ",\"model\":";
  append_json_string(out, model);
  if (m.geometry.source_width > 0) {
    out += ",\"width\":";
    append_int(out, m.geometry.source_width);
    out += ",\"height\":";
    append_int(out, m.geometry.source_height);
  }
  out += ",\"detections\":[";
  const std::int64_t n = d.shape()[0], cols = d.shape()[1];
  if (n > 0) {
    NEAT_ASSIGN_OR_RETURN(Mapping r, d.map(MapMode::Read));
    const auto* base = static_cast<const std::byte*>(r.data());
    auto at = [&](std::int64_t i, std::int64_t k) {
      float v;
      std::memcpy(&v, base + i * d.strides()[0] + k * d.strides()[1], 4);
      return v;
    };
    for (std::int64_t i = 0; i < n; ++i) {
      out += i == 0 ? "{\"box\":[" : ",{\"box\":[";
      for (int k = 0; k < 4; ++k) {
        if (k) out += ',';
        appendf(out, "%.1f", at(i, k));
      }
      out += "],\"class\":";
      append_int(out, static_cast<std::int64_t>(at(i, 5)));
      out += ",\"score\":";
      appendf(out, "%.4f", at(i, 4));
      if (cols == 7) {
        out += ",\"track\":";
        append_int(out, static_cast<std::int64_t>(at(i, 6)));
      }
      out += '}';
    }
  }
  out += "]}";
  return {};
}

void append_track_message(std::string& out, const TrackRecord& r, std::string_view graph) {
  append_frame_fields(out, "neat.track/1", graph, r.stream, r.frame, r.pts_ns, r.capture_ns);
  out += r.change.kind == TrackChange::Kind::Start ? ",\"event\":\"start\"" : ",\"event\":\"end\"";
  out += ",\"track\":";
  append_int(out, r.change.id);
  out += ",\"class\":";
  append_int(out, r.change.class_id);
  out += ",\"first_frame\":";
  append_int(out, r.change.first_frame);
  out += ",\"last_frame\":";
  append_int(out, r.change.last_frame);
  out += ",\"hits\":";
  append_int(out, r.change.hits);
  out += ",\"box\":[";
  for (int k = 0; k < 4; ++k) {
    if (k) out += ',';
    appendf(out, "%.1f", r.change.box[k]);
  }
  out += "]}";
}

Result<std::pair<std::string, int>> parse_host_port(std::string_view text, int default_port,
                                                    std::string_view what) {
  auto bad = [&](const std::string& why) {
    return invalid_argument(std::string(what) + "=" + std::string(text) + ": " + why +
                            " (write HOST:PORT, e.g. 127.0.0.1:" + std::to_string(default_port) +
                            ")");
  };
  if (text.empty()) return bad("no host");
  std::string host;
  std::string_view port_text;  // empty: the default port
  bool has_port = false;
  if (text.front() == '[') {  // [v6] or [v6]:port
    const auto close = text.find(']');
    if (close == std::string_view::npos || (close + 1 < text.size() && text[close + 1] != ':')) {
      return bad("an IPv6 address is written [ADDRESS]:PORT, e.g. [::1]:" +
                 std::to_string(default_port));
    }
    host = std::string(text.substr(1, close - 1));
    has_port = close + 1 < text.size();
    if (has_port) port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon != std::string_view::npos && text.find(':') != colon) {
      return bad("write an IPv6 address in brackets, e.g. [::1]:" + std::to_string(default_port));
    }
    host = std::string(text.substr(0, colon));
    has_port = colon != std::string_view::npos;
    if (has_port) port_text = text.substr(colon + 1);
  }
  int port = default_port;
  if (has_port) {
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port < 1 ||
        port > 65535) {
      return bad("'" + std::string(port_text) + "' is not a port (1 to 65535)");
    }
  }
  if (host.empty()) return bad("no host");
  return std::pair{host, port};
}

std::string host_port_text(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Status check_message_options(std::string_view kind, const MessageOptions& o) {
  if (o.topic.empty()) {
    return invalid_argument(std::string(kind) +
                            ": needs a topic (topic=cameras/{stream}/detections)");
  }
  if (o.spool < 1)
    return invalid_argument(std::string(kind) + ": spool must be at least 1 message");
  if (o.window < 1 || o.window > 65535) {
    return invalid_argument(std::string(kind) + ": window must be from 1 to 65535 messages");
  }
  return {};
}

// ---- the spool and the delivery thread ----------------------------------------------------

namespace {

std::string expand(std::string_view pattern, std::string_view stream) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size();) {
    if (pattern.compare(i, 8, "{stream}") == 0) {
      out += stream;
      i += 8;
    } else {
      out += pattern[i++];
    }
  }
  return out;
}

std::int64_t system_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A delivery change to the traces: the broker up or down, messages dropped.
void emit_delivery(std::string_view graph, std::string_view kind, std::string_view event,
                   const std::string& detail, std::int64_t count) {
  if (event_sink_count() == 0) return;
  OutputEvent e;
  e.type = "delivery";
  e.event = event;
  e.graph = graph;
  e.node = kind;
  e.detail = detail;
  e.id = count;
  e.timestamp_ns = system_now_ns();
  e.thread_id = current_thread_number();
  emit_output_event(e);
}

class MessageSink final : public Sink {
 public:
  MessageSink(std::string_view kind, std::unique_ptr<Transport> t, MessageOptions o)
      : kind_(kind), transport_(std::move(t)), options_(std::move(o)) {
    transport_->on_ack = [this](std::uint64_t token) { acked(token); };
    if (options_.tracks) options_.tracks->attach_reader();
  }
  ~MessageSink() override { stop_thread(); }

  std::string_view kind() const noexcept override { return kind_; }
  Accepts accepts() const override {
    Accepts a;
    a.dtypes = {DType::F32};
    a.formats = {PixelFormat::None};
    return a;
  }
  Status check(const FrameSpec& in) const override {
    if (in.shape.size() != 2 || (in.shape[1] != 6 && in.shape[1] != 7)) {
      return invalid_argument(std::string(kind_) + ": takes detections f32 [N, 6] or [N, 7], got " +
                              in.to_string() + " (put `yolo` (and `track`) before it)");
    }
    return {};
  }
  Status prepare(const FrameSpec& in) override {
    NEAT_RETURN_IF_ERROR(check(in));
    if (!options_.spool_dir.empty() && !disk_) {  // what an earlier run left goes first
      NEAT_ASSIGN_OR_RETURN(disk_, DiskSpool::open(options_.spool_dir, options_.spool_bytes));
      stats_.recovered = disk_->recovered();
    }
    if (!thread_.joinable()) thread_ = std::thread([this] { deliver(); });
    return {};
  }

  Result<SinkOutcome> consume(NeatTensor frame, std::int64_t) override {
    const FrameMeta& m = frame.meta();
    const auto index = static_cast<std::size_t>(std::max(m.stream.index, 0));
    if (names_.size() <= index) names_.resize(index + 1);
    Names& n = names_[index];
    if (!n.set) {  // once per stream: its topics and key
      const std::string_view stream = m.stream.name.empty() ? "default" : m.stream.name;
      n.topic = expand(options_.topic, stream);
      n.track_topic = options_.track_topic.empty() ? n.topic : expand(options_.track_topic, stream);
      n.key = options_.key.empty() ? std::string(stream) : expand(options_.key, stream);
      n.set = true;
    }
    if (options_.tracks) {
      records_.clear();
      options_.tracks->take(m.stream.index, m.frame, records_);
      for (const TrackRecord& r : records_) {
        std::string payload;
        append_track_message(payload, r, options_.graph);
        push(n.track_topic, n.key, std::move(payload));
      }
    }
    if (options_.empty_frames || frame.shape()[0] > 0) {
      std::string payload;
      payload.reserve(256 + static_cast<std::size_t>(frame.shape()[0]) * 80);
      NEAT_RETURN_IF_ERROR(
          append_detection_message(payload, frame, options_.graph, options_.model));
      push(n.topic, n.key, std::move(payload));
    }
    return SinkOutcome::Consumed;
  }

  Status finish() override {
    {
      std::lock_guard lock(mutex_);
      finishing_ = true;
      drain_until_ = Clock::now() + options_.drain_timeout;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mutex_);
    report_drops_locked();
    if (disk_) return keep_on_disk_locked();
    if (!spool_.empty()) {
      return unavailable(std::string(kind_) + ": " + std::to_string(spool_.size()) +
                         " messages not delivered to " + endpoint_ +
                         " within drain-timeout=" + std::to_string(options_.drain_timeout.count()) +
                         "ms at the end of the "
                         "stream" +
                         (last_error_.empty() ? "" : " (last error: " + last_error_ + ")"));
    }
    return {};
  }
  void abort() override { stop_thread(); }

  std::optional<DeliveryStats> delivery() const override {
    std::lock_guard lock(mutex_);
    DeliveryStats s = stats_;
    s.endpoint = endpoint_;
    s.connected = connected_;
    s.spooled = spool_.size() + (disk_ ? disk_->unread() : 0);
    s.last_error = last_error_;
    return s;
  }
  std::string describe() const override {
    return std::string(kind_) + " " + endpoint_ + " topic=" + options_.topic +
           " spool=" + std::to_string(options_.spool) + " (QoS 1 / acknowledged, in order)";
  }

 private:
  struct Entry {
    std::uint64_t token;
    std::string topic, key, payload;
    bool sent = false, acked = false;
    bool tried = false;  // sent at least once (the broker may have it)
    bool from_disk = false;
    std::uint64_t segment = 0;  // from_disk: the disk spool's segment
  };
  struct Names {
    bool set = false;
    std::string topic, track_topic, key;
  };

  void push(const std::string& topic, const std::string& key, std::string payload) {
    std::lock_guard lock(mutex_);
    if (disk_ && (!disk_->empty() || spool_.size() >= options_.spool)) {  // past memory: to disk
      ++stats_.queued;
      auto dropped = disk_->append(SpoolRecord{topic, key, std::move(payload)});
      if (!dropped.ok()) {
        last_error_ = dropped.error().message();
        ++stats_.dropped;
      } else {
        stats_.dropped += *dropped;
      }
      if (Clock::now() - dropped_reported_at_ >= std::chrono::seconds(1)) report_drops_locked();
      return;
    }
    ++stats_.queued;
    if (spool_.size() >= options_.spool) {
      // Full: the oldest message never sent goes, counted. One that was sent
      // and not acknowledged stays (the broker may have it, and it is sent
      // again after a reconnect), so `dropped` counts exactly what never
      // reached the broker. Sent messages are a prefix of the spool (sends
      // go in order), at most `window` of them unacknowledged; when the
      // whole spool was sent, the new message is the oldest never sent.
      auto it = std::find_if(spool_.begin(), spool_.end(), [](const Entry& e) { return !e.tried; });
      ++stats_.dropped;
      // To the traces at most once a second (and when the broker is back,
      // and at the end), with the count since the last report.
      if (Clock::now() - dropped_reported_at_ >= std::chrono::seconds(1)) report_drops_locked();
      if (it == spool_.end()) return;
      spool_.erase(it);
    }
    spool_.push_back(Entry{next_token_++, topic, key, std::move(payload)});
  }

  // Messages from the disk spool into memory, in order, while memory has room.
  void refill() {
    std::lock_guard lock(mutex_);
    while (disk_ && !disk_->empty() && spool_.size() < options_.spool) {
      auto next = disk_->next();
      if (!next.ok()) {
        last_error_ = next.error().message();
        return;
      }
      if (!next->has_value()) return;
      auto& [record, segment] = **next;
      Entry e{next_token_++, std::move(record.topic), std::move(record.key),
              std::move(record.payload)};
      e.from_disk = true;
      e.segment = segment;
      spool_.push_back(std::move(e));
    }
  }

  // The end with a disk spool: what memory holds and the disk does not
  // goes to disk, before the rest, for the next run; nothing is lost.
  Status keep_on_disk_locked() {
    std::vector<SpoolRecord> memory_only;
    std::uint64_t read_from_disk = 0;
    for (Entry& e : spool_) {
      if (e.acked) continue;
      if (e.from_disk) {
        ++read_from_disk;  // still in its segment
      } else {
        memory_only.push_back({std::move(e.topic), std::move(e.key), std::move(e.payload)});
      }
    }
    NEAT_RETURN_IF_ERROR(disk_->prepend(memory_only));
    stats_.kept = read_from_disk + disk_->unread();  // unread() has the prepended ones
    spool_.clear();
    return {};
  }

  void report_drops_locked() {
    if (stats_.dropped == dropped_reported_) return;
    emit_delivery(options_.graph, kind_, "dropped",
                  endpoint_ + ": the spool of " + std::to_string(options_.spool) +
                      " messages was full, the oldest were dropped",
                  static_cast<std::int64_t>(stats_.dropped - dropped_reported_));
    dropped_reported_ = stats_.dropped;
    dropped_reported_at_ = Clock::now();
  }

  void acked(std::uint64_t token) {  // on the delivery thread, inside poll()
    std::lock_guard lock(mutex_);
    auto it = std::lower_bound(spool_.begin(), spool_.end(), token,
                               [](const Entry& e, std::uint64_t t) { return e.token < t; });
    if (it == spool_.end() || it->token != token || it->acked) return;  // dropped meanwhile
    it->acked = true;
    --in_flight_;
    ++stats_.delivered;
    if (it->from_disk) disk_->done(it->segment);
    while (!spool_.empty() && spool_.front().acked)
      spool_.pop_front();
  }

  // What was sent and not acknowledged goes again, in order.
  void lost(const std::string& why) {
    std::lock_guard lock(mutex_);
    if (connected_ || last_error_.empty()) {  // went down, or never came up: once each
      emit_delivery(options_.graph, kind_, "down", endpoint_ + ": " + why,
                    static_cast<std::int64_t>(spool_.size()));
    }
    if (connected_) ++stats_.reconnects;
    connected_ = false;
    last_error_ = why;
    for (Entry& e : spool_)
      if (e.sent && !e.acked) {
        e.sent = false;
        ++stats_.resent;
      }
    in_flight_ = 0;
  }

  void send_window() {
    for (;;) {
      std::string topic, key, payload;
      std::uint64_t token = 0;
      {
        std::lock_guard lock(mutex_);
        if (in_flight_ >= options_.window) return;
        auto it =
            std::find_if(spool_.begin(), spool_.end(), [](const Entry& e) { return !e.sent; });
        if (it == spool_.end()) return;
        it->sent = it->tried = true;
        ++in_flight_;
        token = it->token;
        topic = it->topic;
        key = it->key;
        payload = it->payload;
      }
      if (Status st = transport_->send(topic, key, payload, token); !st.ok()) {
        transport_->disconnect();
        lost(st.error().message());
        return;
      }
    }
  }

  // The delivery thread: connects, sends, takes acknowledgements,
  // reconnects with backoff, until stopped or drained.
  void deliver() {
    std::mt19937 rng(static_cast<std::uint32_t>(steady_now_ns()));
    auto backoff = std::chrono::milliseconds(500);
    Clock::time_point retry_at{}, connect_started{};
    bool connecting = false;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        if (stop_) break;
        const bool drained = spool_.empty() && (!disk_ || disk_->empty());
        if (finishing_ && (drained || Clock::now() >= drain_until_)) break;
      }
      refill();
      if (!transport_->connected() && !connecting) {
        if (Clock::now() < retry_at) {
          std::unique_lock lock(mutex_);
          wake_.wait_until(lock, std::min(retry_at, Clock::now() + std::chrono::milliseconds(100)),
                           [&] { return stop_; });
          continue;
        }
        if (Status st = transport_->connect(); !st.ok()) {
          lost(st.error().message());
          retry_at = next_retry(backoff, rng);
          continue;
        }
        connecting = true;
        connect_started = Clock::now();
      }
      if (Status st = transport_->poll(std::chrono::milliseconds(20)); !st.ok()) {
        transport_->disconnect();
        lost(st.error().message());
        connecting = false;
        retry_at = next_retry(backoff, rng);
        continue;
      }
      if (transport_->connected()) {
        if (connecting) {
          connecting = false;
          backoff = std::chrono::milliseconds(500);
          std::lock_guard lock(mutex_);
          connected_ = true;
          report_drops_locked();
          emit_delivery(options_.graph, kind_, "up", endpoint_,
                        static_cast<std::int64_t>(spool_.size()));
        }
        send_window();
      } else if (connecting && Clock::now() - connect_started > options_.connect_timeout) {
        transport_->disconnect();
        lost("no answer within connect-timeout");
        connecting = false;
        retry_at = next_retry(backoff, rng);
      }
    }
    transport_->disconnect();
    std::lock_guard lock(mutex_);
    connected_ = false;
  }

  static Clock::time_point next_retry(std::chrono::milliseconds& backoff, std::mt19937& rng) {
    const auto jitter = std::uniform_real_distribution<double>(0, 0.25)(rng);
    const auto wait = std::chrono::milliseconds(
        static_cast<std::int64_t>(static_cast<double>(backoff.count()) * (1 + jitter)));
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(30));
    return Clock::now() + wait;
  }

  void stop_thread() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 public:
  void set_endpoint(std::string e) { endpoint_ = std::move(e); }

 private:
  std::string kind_;
  std::unique_ptr<Transport> transport_;
  MessageOptions options_;
  std::string endpoint_;
  std::vector<Names> names_;          // per stream index (sink thread)
  std::vector<TrackRecord> records_;  // scratch (sink thread)
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Entry> spool_;
  std::unique_ptr<DiskSpool> disk_;  // spool-dir=
  std::uint64_t next_token_ = 1;
  int in_flight_ = 0;
  bool connected_ = false, finishing_ = false, stop_ = false;
  Clock::time_point drain_until_{};
  DeliveryStats stats_;
  std::uint64_t dropped_reported_ = 0;
  Clock::time_point dropped_reported_at_{};
  std::string last_error_;
  std::thread thread_;
};

}  // namespace

std::shared_ptr<Sink> message_sink(std::string_view kind, std::unique_ptr<Transport> transport,
                                   MessageOptions options) {
  std::string endpoint = transport->endpoint();
  auto s = std::make_shared<MessageSink>(kind, std::move(transport), std::move(options));
  s->set_endpoint(std::move(endpoint));
  return s;
}

}  // namespace neat

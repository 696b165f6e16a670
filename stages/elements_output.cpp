// The elements whose results leave the frame: `track` (ids for detections)
// and the message sinks (mqtt, kafka).
#include "neat/stages/elements.hpp"
#include "neat/stages/internal/element_helpers.hpp"
#include "neat/stages/messages.hpp"
#include "neat/stages/track.hpp"

namespace neat {

namespace {

using R = ElementRole;
using T = PropertyType;

void add_track(std::vector<ElementSpec>& r) {
  const TrackerParams d;
  auto text = [](float v) {
    std::string s = std::to_string(v);
    return s.substr(0, s.find_last_not_of('0') + 1);
  };
  r.push_back(
      {"track",
       {R::Stage},
       "tracks the yolo stage's detections, one ByteTrack-style tracker per stream: f32 [N, 6] "
       "in, f32 [M, 7] out (the detections of confirmed tracks plus their track id)",
       {prop("high", T::Number, text(d.high),
             "detections at least this score are matched first and may start tracks"),
        prop("low", T::Number, text(d.low),
             "weaker detections down to this score keep a track alive (an occluded object)"),
        prop("new", T::Number, text(d.new_track),
             "a detection left over at least this score "
             "starts a track"),
        prop("iou", T::Number, text(d.match_iou), "the overlap a detection needs with a track"),
        prop("max-age", T::Integer, std::to_string(d.max_age),
             "frames a lost track waits for its object before it ends"),
        prop("min-hits", T::Integer, std::to_string(d.min_hits),
             "frames in a row that confirm a new track (at once on a stream's first frame)"),
        prop("match", T::Choice, "class",
             "a track takes detections of its own class, or of any class", {"class", "any"})},
       [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
         TrackOptions o;
         TrackerParams& p = o.tracker;
         NEAT_ASSIGN_OR_RETURN(p.high, a.number("high", p.high));
         NEAT_ASSIGN_OR_RETURN(p.low, a.number("low", p.low));
         NEAT_ASSIGN_OR_RETURN(p.new_track, a.number("new", p.new_track));
         NEAT_ASSIGN_OR_RETURN(p.match_iou, a.number("iou", p.match_iou));
         NEAT_ASSIGN_OR_RETURN(std::int64_t age, a.integer("max-age", p.max_age));
         NEAT_ASSIGN_OR_RETURN(std::int64_t hits, a.integer("min-hits", p.min_hits));
         if (age < 1 || age > 100000) return a.fail("max-age must be from 1 to 100000 frames");
         if (hits < 1 || hits > 1000) return a.fail("min-hits must be from 1 to 1000 frames");
         p.max_age = static_cast<int>(age);
         p.min_hits = static_cast<int>(hits);
         NEAT_ASSIGN_OR_RETURN(p.per_class,
                               a.choice<bool>("match", true, {{"class", true}, {"any", false}}));
         o.journal = a.options().tracks;
         auto st = track_stage(std::move(o));
         if (!st.ok()) return a.fail(st.error());
         BuiltElement e;
         e.stage = std::move(*st);
         return e;
       }});
}

// The properties every message sink takes.
std::vector<PropertySpec> message_properties() {
  const MessageOptions d;
  return {
      required("topic", T::Text, "TOPIC",
               "where each frame's message goes; {stream} is the frame's stream name "
               "(cameras/{stream}/detections)"),
      prop("track-topic", T::Text, "", "where track starts and ends go (default: topic)"),
      prop("spool", T::Integer, std::to_string(d.spool),
           "messages held while the broker is away (past it the oldest are dropped, counted)"),
      prop("spool-dir", T::Text, "",
           "a directory for messages past the memory spool and for those the run could not "
           "deliver (the next run delivers them first)"),
      prop("spool-bytes", T::Integer, std::to_string(d.spool_bytes),
           "the disk spool's cap (past it the oldest on disk are dropped, counted)"),
      prop("window", T::Integer, std::to_string(d.window),
           "messages sent and not yet acknowledged at once"),
      prop("connect-timeout", T::Duration, "5s", "how long a connection attempt may take"),
      prop("drain-timeout", T::Duration, "10s",
           "at the end of the stream, how long to wait for every message to be acknowledged "
           "(what is left then fails the run)"),
      prop("empty", T::Choice, "true", "publish frames without detections too", {"true", "false"}),
      prop("model", T::Text, "", "the model named in the messages (default: infer's model=)"),
      prop("username", T::Text, "", "the broker's user name"),
      prop("password", T::Text, "", "the broker's password"),
      prop("ca-file", T::Text, "",
           "TLS: the CA certificate (PEM) the broker's certificate "
           "is checked against"),
  };
}

Result<MessageOptions> message_options(ElementArgs& a, std::string& user, std::string& password,
                                       std::string& ca_file) {
  MessageOptions m;
  m.topic = a.take("topic").value_or("");
  m.track_topic = a.take("track-topic").value_or("");
  NEAT_ASSIGN_OR_RETURN(std::int64_t spool, a.integer("spool", static_cast<std::int64_t>(m.spool)));
  if (spool < 1 || spool > 100'000'000) return a.fail("spool must be from 1 to 100000000 messages");
  m.spool = static_cast<std::size_t>(spool);
  m.spool_dir = a.take("spool-dir").value_or("");
  NEAT_ASSIGN_OR_RETURN(std::int64_t bytes,
                        a.integer("spool-bytes", static_cast<std::int64_t>(m.spool_bytes)));
  if (bytes < 4096) return a.fail("spool-bytes must be at least 4096");
  m.spool_bytes = static_cast<std::uint64_t>(bytes);
  NEAT_ASSIGN_OR_RETURN(std::int64_t window, a.integer("window", m.window));
  if (window < 1 || window > 65535) return a.fail("window must be from 1 to 65535 messages");
  m.window = static_cast<int>(window);
  NEAT_ASSIGN_OR_RETURN(m.connect_timeout, a.duration("connect-timeout", m.connect_timeout));
  NEAT_ASSIGN_OR_RETURN(m.drain_timeout, a.duration("drain-timeout", m.drain_timeout));
  NEAT_ASSIGN_OR_RETURN(m.empty_frames,
                        a.choice<bool>("empty", true, {{"true", true}, {"false", false}}));
  m.model = a.take("model").value_or(a.options().model_name);
  m.graph = a.options().graph_name;
  m.tracks = a.options().tracks;
  user = a.take("username").value_or("");
  password = a.take("password").value_or("");
  ca_file = a.take("ca-file").value_or("");
  return m;
}

BuiltElement sink_element(std::shared_ptr<Sink> sink) {
  BuiltElement e;
  e.sink = std::move(sink);
  return e;
}

void add_message_sinks(std::vector<ElementSpec>& r) {
  std::vector<PropertySpec> mqtt = {
      required("broker", T::Text, "HOST:PORT", "the MQTT broker (port default 1883)"),
      prop("client-id", T::Text, "", "the MQTT client id (default neat-PID-N)")};
  for (PropertySpec& p : message_properties())
    mqtt.push_back(std::move(p));
  r.push_back({"mqtt",
               {R::Sink},
               "publishes each frame's detections (and track starts and ends) as JSON to an "
               "MQTT broker, QoS 1, in order, through a bounded spool that rides out outages",
               std::move(mqtt),
               [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
                 MqttOptions o;
                 o.broker = a.take("broker").value_or("");
                 o.client_id = a.take("client-id").value_or("");
                 NEAT_ASSIGN_OR_RETURN(o.messages,
                                       message_options(a, o.username, o.password, o.ca_file));
                 auto s = mqtt_sink(std::move(o));
                 if (!s.ok()) return a.fail(s.error());
                 return sink_element(std::move(*s));
               }});
  std::vector<PropertySpec> kafka = {required(
      "brokers", T::Text, "HOST:PORT", "the Kafka bootstrap brokers (HOST:PORT[,HOST:PORT...])")};
  for (PropertySpec& p : message_properties())
    kafka.push_back(std::move(p));
  r.push_back({"kafka",
               {R::Sink},
               "produces each frame's detections (and track starts and ends) as JSON to Kafka, "
               "keyed by stream, acknowledged by every in-sync replica, through a bounded spool",
               std::move(kafka),
               [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
                 KafkaOptions o;
                 o.brokers = a.take("brokers").value_or("");
                 NEAT_ASSIGN_OR_RETURN(o.messages,
                                       message_options(a, o.username, o.password, o.ca_file));
                 auto s = kafka_sink(std::move(o));
                 if (!s.ok()) return a.fail(s.error());
                 return sink_element(std::move(*s));
               }});
}

}  // namespace

void add_output_stages(std::vector<ElementSpec>& r) {
  add_track(r);
}

void add_output_sinks(std::vector<ElementSpec>& r) {
  add_message_sinks(r);
}

}  // namespace neat

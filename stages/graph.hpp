// Stage graphs: declare, build, run.
//
//   neat::GraphBuilder b("camera");
//   b.add_source("cam", neat::gst_source("videotestsrc num-buffers=300 ! "
//                                        "video/x-raw,format=NV12,width=1920,height=1080"));
//   b.add_stage("pre", neat::preprocess_stage({.width = 640, .height = 640}));
//   auto out = neat::AppSink::create();
//   b.add_sink("out", out);
//   b.connect("cam", "pre");
//   b.connect("pre", "out");
//   auto graph = b.build();          // checks every edge; Strict refuses implicit conversions
//   std::puts(graph->explain().c_str());
//   graph->start();  while (auto f = out->pull(1s)) {...}  auto report = graph->wait();
//
// build() prepares the sources (a GStreamer source prerolls to learn its
// caps), follows the frames' specs through every stage, and computes each
// edge's conversion: none when the producer gives what the consumer accepts,
// otherwise the chain of conversions (transfer, pixel format, dtype, layout,
// pack) the edge would need. Under Strict every such edge fails the build,
// all of them listed at once with the conversion kind, reason, bytes per
// frame and the stage that would make the graph legal; under the other
// policies the conversions enter the plan and run implicitly, traced or
// counted. Policies resolve per edge > per consumer stage > per graph >
// process.
//
// run() gives every node its own thread and every edge a bounded queue
// (backpressure, no unbounded growth). End of stream flows from the sources
// to the sinks; a stage error (or a conversion's) stops the graph within a
// bounded time (waits are sliced to 100 ms) and wait() returns it prefixed
// with the stage's name. Frame accounting is exact: every delivery (a frame
// on its way to one consumer; fan-out makes one per consumer) ends consumed by
// a sink or dropped with a reason, so produced == consumed + dropped.
// Conversions carry the graph, stage, edge and frame number in their events.
//
// Ownership: a Graph owns its stages and sources, and shares its sinks.
// Threading: start()/stop()/wait() from one controlling thread; frames() from any.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "neat/contract/conversion.hpp"
#include "neat/policy/rules.hpp"
#include "neat/stages/sink.hpp"
#include "neat/stages/source.hpp"
#include "neat/stages/stage.hpp"
#include "neat/stages/streams.hpp"
#include "neat/telemetry/duration_histogram.hpp"
#include "neat/telemetry/metrics_server.hpp"

namespace neat {

struct StageOptions {
  std::optional<ConversionPolicy> policy;  ///< for conversions on this stage's input edge
  /// A frame that reaches the stage later than this after its capture
  /// (FrameMeta::capture_ns) is dropped before process(), oldest first
  /// (reason "late", counted per stream). 0: no bound.
  std::chrono::milliseconds max_latency{0};
};

/// Frames an edge's queue holds unless EdgeOptions::capacity says otherwise:
/// with every node waiting for room downstream before it takes its next
/// frame, one queued frame keeps producer and consumer both busy (measured in
/// docs/benchmarks.md: deeper queues add a frame of memory each and no throughput).
inline constexpr std::size_t kDefaultQueueCapacity = 1;

struct EdgeOptions {
  std::optional<ConversionPolicy> policy;
  /// Frames the edge queue holds (at least 1). Unset: kDefaultQueueCapacity.
  std::optional<std::size_t> capacity;
};

/// One conversion an edge performs on every frame: the built-in stage that
/// does it (the one the user would insert by hand: convert, cast, layout,
/// pack, transfer), which the graph runs on the edge as an implicit
/// conversion ruled by the edge's policy.
struct PlannedConversion {
  ConversionKind kind = ConversionKind::Pack;
  ConversionReason reason = ConversionReason::StrideMismatch;
  std::int64_t bytes_per_frame = 0;  ///< bytes it writes per frame
  std::string what;                  ///< "NV12 -> RGB", "u8 -> f32", "pack"
  std::string fix;                   ///< the stage or call that makes it unnecessary
  std::shared_ptr<Stage> stage;      ///< the stage that performs it
};

enum class NodeKind : std::uint8_t { Source, Stage, Sink };

struct NodePlan {
  std::string name;
  NodeKind kind = NodeKind::Stage;
  std::string description;  ///< the stage's describe()
  FrameSpec output;         ///< what it produces (sources, stages)
  std::optional<ConversionPolicy> policy;
  /// Stages: the most of its output frames that can be alive together (in
  /// its hands, in the queues downstream, passed along by stages that may
  /// forward their input, and held by sinks): its pool's buffers.
  int pool_buffers = 0;
  /// Stages whose frames are allocated by someone else than their pool (a
  /// model engine): who ("libtorch"). Empty: the pool.
  std::string allocated_by;
  /// Sources and sinks: conversions inside the node on every frame (GStreamer elements).
  std::vector<InnerConversion> inside;
  /// Sources: how their stream is supervised (and rate-limited).
  SourceOptions source;
  /// Sources: live (a camera, a network stream), as prepare() found it.
  bool live = false;
  /// Stages: StageOptions::max_latency.
  std::chrono::milliseconds max_latency{0};
  /// False for sinks in a plan from GraphBuilder::plan(): checked, not opened
  /// (what a GStreamer sink converts inside is known once its pipeline starts).
  bool opened = true;
};

struct EdgePlan {
  std::string name;  ///< "from->to"
  std::string from, to;
  FrameSpec produced;  ///< what the producer gives
  FrameSpec consumed;  ///< what the consumer receives (after the conversions)
  std::vector<PlannedConversion> conversions;
  ConversionPolicy policy = ConversionPolicy::Strict;
  int consumers_sharing = 1;   ///< fan-out: consumers of the producer's frames
  bool copy_on_write = false;  ///< the consumer writes a buffer it shares: COW per frame
  std::size_t capacity = kDefaultQueueCapacity;
  /// The capacity asked for (EdgeOptions or the default): more than
  /// `capacity` when a frame-memory budget lowered it.
  std::size_t requested_capacity = kDefaultQueueCapacity;
  /// The buffers of the edge's conversion pool (when it has conversions):
  /// the converted frames that can be alive together.
  int pool_buffers = 0;
  std::int64_t bytes_per_frame() const noexcept;
};

/// One place in the memory plan that holds frames of one size: a stage's
/// output pool, an edge's conversion pool, or a source's frames (a GStreamer
/// source's live in GStreamer's pool; the graph holds them until released).
struct FramePool {
  std::string name;  ///< "stage 'pre'", "source 'cam'", "edge 'a->b' conversions"
  FrameSpec frames;  ///< what one buffer holds
  std::int64_t frame_bytes = 0;
  int buffers = 0;  ///< the most alive at once
  /// Who holds them ("queue cam->pre", 1), ("appsink 'out': queue 2 + 1 pulled", 3):
  /// the counts add up to `buffers`.
  std::vector<std::pair<std::string, int>> held_by;
  /// Set when the frames are not the pool's own (NodePlan::allocated_by).
  std::string allocated_by;
  std::int64_t bytes() const noexcept { return frame_bytes * buffers; }
  /// "queue a->b: 1, stage 'b': 1": who holds them, as explain() prints it.
  std::string holders() const;
};

/// The threads a graph computes on: each model engine's process-wide pool,
/// and the row workers the kernel stages (preprocess, convert, resize) split
/// a frame over on OpenCV's pool. Together they never ask for more than the
/// machine's hardware threads plus one: a model engine's pool takes the
/// cores (a model is most of a frame's work), the kernel stages what is left
/// (at least one); a model asking for more than the machine has fails build().
struct ThreadBudget {
  int hardware = 1;  ///< std::thread::hardware_concurrency()
  int kernels = 1;   ///< row workers per kernel stage
  struct Engine {
    std::string stage;  ///< the stage computing on it
    EnginePool pool;
  };
  std::vector<Engine> engines;
  /// What the graph asks for: the kernels' pool (shared with OpenCV's model
  /// engine) plus every other engine pool, each counted once.
  int total() const noexcept;
  int limit() const noexcept { return hardware + 1; }
  /// The budget as explain() prints it (one line).
  std::string explain() const;
};

struct GraphPlan {
  std::string graph;
  ConversionPolicy policy = ConversionPolicy::Strict;
  std::vector<NodePlan> nodes;  ///< in topological order
  std::vector<EdgePlan> edges;
  /// The memory plan: every place frames are held, in plan order.
  std::vector<FramePool> memory;
  /// The graph's frame-memory budget (GraphBuilder::set_max_frame_memory); 0: none.
  std::int64_t max_frame_memory = 0;
  /// Every source ends its stream after this many frames
  /// (GraphBuilder::set_max_source_frames); 0: when the source ends.
  std::int64_t max_source_frames = 0;
  /// The threads the graph's stages compute on.
  ThreadBudget threads;
  /// The most bytes of frames the graph holds at once: the sum of `memory`.
  std::int64_t frame_memory_bytes() const noexcept;
  /// Bytes the edges copy per frame (conversions + copy-on-write).
  std::int64_t edge_bytes_per_frame() const noexcept;
  /// Bytes the nodes' inner conversions (GStreamer elements) write per frame.
  std::int64_t inner_bytes_per_frame() const noexcept;
  /// The plan as text: nodes, edges, conversions, policies, bytes per frame.
  std::string explain() const;
};

/// Where frames went. produced == consumed + sum(dropped).
struct FrameAccounting {
  std::uint64_t source_frames = 0;               ///< frames the sources emitted
  std::uint64_t produced = 0;                    ///< deliveries created (fan-out: one per consumer)
  std::uint64_t consumed = 0;                    ///< deliveries sinks took and kept
  std::map<std::string, std::uint64_t> dropped;  ///< by reason
  std::uint64_t dropped_total() const noexcept;
  bool balanced() const noexcept { return produced == consumed + dropped_total(); }
  std::string to_string() const;
};

/// A histogram of durations, as Prometheus keeps one: `cumulative[i]` counts
/// the observations <= `bounds[i]`; `count` all of them.
struct DurationHistogram {
  std::vector<double> bounds;  ///< seconds
  std::vector<std::uint64_t> cumulative;
  std::uint64_t count = 0;
  double sum_seconds = 0;
};

/// One node's live counts. Stages: frames in (popped from the input edge),
/// out (handed on; a filtered frame is a drop), busy time per frame (the
/// input edge's implicit conversions + process()). Sinks: frames in, out
/// (kept), busy (conversions + consume()). Sources: frames out only.
/// in == out + dropped for stages and sinks once they are idle.
struct NodeStats {
  std::string name;
  NodeKind kind = NodeKind::Stage;
  std::uint64_t frames_in = 0;
  std::uint64_t frames_out = 0;
  std::map<std::string, std::uint64_t>
      dropped;  ///< by reason; an edge's drops count for its consumer
  DurationHistogram busy;
  /// Stages and sinks: `busy` as percentiles (input edge conversions +
  /// process() / consume(), per frame).
  DurationSummary busy_summary;
  /// Stages and sinks: how long frames waited in the input edge's queue.
  DurationSummary queue_wait;
  /// Sinks: latency from each frame's capture (FrameMeta::capture_ns) to the
  /// sink taking it (consume() returned: an AppSink queued it or ran its callback).
  DurationSummary latency;
  DurationHistogram latency_histogram;  ///< the same, with Prometheus' bounds
};

struct EdgeStats {
  std::string name, from, to;
  std::uint64_t frames = 0;     ///< frames it carried
  std::size_t queue_depth = 0;  ///< frames waiting now
  std::size_t capacity = 0;
};

/// A buffer pool of a running graph: what the memory plan gave it, and the
/// most of its buffers that were in use at once so far.
struct PoolStats {
  std::string name;  ///< as in GraphPlan::memory: "stage 'pre'", "edge 'a->b' conversions"
  std::int64_t frame_bytes = 0;
  int planned_buffers = 0;
  std::int64_t peak_buffers = 0;
  /// Who allocates these frames when not the pool (then peak_buffers stays
  /// 0: the pool hands out none), e.g. "libtorch".
  std::string allocated_by;
};

/// A graph's live state, read while it runs (stats()) from any thread.
struct GraphStats {
  std::string graph;
  bool running = false;
  double seconds = 0;                   ///< since start()
  std::int64_t frame_memory_bytes = 0;  ///< the memory plan's total
  FrameAccounting frames;
  std::vector<NodeStats> nodes;  ///< in plan order
  std::vector<EdgeStats> edges;
  std::vector<PoolStats> pools;      ///< the stages' and converting edges' pools
  std::vector<StreamStats> streams;  ///< one per source, in stream index order
  /// The message sinks' delivery (mqtt, kafka), by sink name.
  std::vector<std::pair<std::string, DeliveryStats>> deliveries;
};

/// The live graph metrics in the Prometheus text format, every family once
/// whatever the number of graphs (labels graph, stage / edge, kind, reason):
///   neat_graph_running, neat_graph_uptime_seconds, neat_graph_source_frames_total,
///   neat_graph_deliveries_total, neat_graph_consumed_total,
///   neat_stage_frames_in_total, neat_stage_frames_out_total,
///   neat_stage_dropped_frames_total, neat_stage_busy_seconds (histogram),
///   neat_sink_latency_seconds (histogram: capture to sink),
///   neat_graph_frame_memory_bytes (the memory plan's total),
///   neat_edge_frames_total, neat_edge_queue_depth, neat_edge_queue_capacity,
///   neat_stream_up, neat_stream_state (one series per state, 1 for the current),
///   neat_stream_frames_total, neat_stream_dropped_frames_total (reason),
///   neat_stream_restarts_total, neat_stream_last_frame_age_seconds (label stream).
std::string graph_prometheus_text(const std::vector<GraphStats>& graphs);

struct RunReport {
  FrameAccounting frames;
  double seconds = 0;
  /// Frames each edge carried.
  std::map<std::string, std::uint64_t> edge_frames;
  /// Capture-to-sink latency per sink, by sink name (frames with a capture time).
  std::map<std::string, DurationSummary> latency;
  /// The message sinks' delivery at the end (mqtt, kafka), by sink name.
  std::vector<std::pair<std::string, DeliveryStats>> deliveries;
};

class Graph {
 public:
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  ~Graph();  ///< stops and joins a running graph

  const GraphPlan& plan() const noexcept;
  std::string explain() const { return plan().explain(); }

  /// Starts every node's thread. FailedPrecondition when already started.
  Status start();
  /// Asks the graph to stop now, cleanly: sources stop, queues are flushed
  /// (frames in them are dropped, reason "stopped"), and every sink that has
  /// not failed gets its end of stream (Sink::finish(): a GStreamer sink
  /// sends EOS and waits for it, bounded, so a recording is finalized; an
  /// AppSink's application sees the end after the frames it was given).
  /// An error in a node stops the graph the same way. Returns at once;
  /// wait() joins.
  void stop();
  /// Stops at once without end of stream: as stop(), but sinks are aborted
  /// (Sink::abort(): a GStreamer sink's pipeline goes to NULL and a file it
  /// writes is left unfinished). For a second Ctrl-C, or a sink whose
  /// downstream no longer moves. Returns at once; wait() joins.
  void abort();
  /// Joins the threads. The first error (named by its stage) if a node failed.
  Result<RunReport> wait();
  /// start() + wait(): runs to the end of the stream.
  Result<RunReport> run();
  /// Live counts (from any thread).
  FrameAccounting frames() const;
  bool running() const noexcept;
  /// True once every node's thread has finished (end of stream, stop or error);
  /// wait() then returns at once.
  bool done() const noexcept;
  /// Live per-node and per-edge counts, queue depths and busy times, and
  /// every stream's state (from any thread; reads atomics and each queue's
  /// size, allocates the result).
  GraphStats stats() const;
  /// graph_prometheus_text({stats()}): what a metrics endpoint serves for
  /// this graph (MetricsServer::add_collector).
  std::string prometheus_text() const;
  /// This graph's part of a metrics server's /readyz and /status
  /// (MetricsServer::add_health_check): ready while it runs with every
  /// stream up and every message sink connected; the streams' states and
  /// frame rates (since the previous look, at least 1 s) and the sinks'
  /// delivery. The check refers to the graph: reset its registration first.
  MetricsServer::HealthCheck health_check() const;
  /// Breaches of the graph's budgets and steady-state rules so far.
  std::vector<RuleBreach> rule_breaches() const;

  struct Impl;
  explicit Graph(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "graph");
  GraphBuilder(GraphBuilder&&) noexcept;
  GraphBuilder& operator=(GraphBuilder&&) noexcept;
  ~GraphBuilder();

  /// The graph's policy (default: the process policy).
  GraphBuilder& set_policy(ConversionPolicy policy);
  /// A copy budget for the graph (budget.graph is set to this graph) or one
  /// edge (budget.edge = "from->to"), enforced by the copy gate while the graph lives.
  GraphBuilder& add_budget(CopyBudget budget);
  /// A steady-state canary for the graph (rule.graph is set to this graph).
  GraphBuilder& add_steady_state_rule(SteadyStateRule rule);
  /// A budget for the graph's frame memory (the memory plan's total; 0: none).
  /// build() lowers edge queues deeper than 1 (the one saving the most bytes
  /// first; explain() shows what it asked for) until the plan fits, or fails
  /// naming what holds the bytes and how far it is over. At
  /// run time every pool keeps at most its planned buffers: one allocated
  /// beyond them (an application keeping pulled frames longer than the plan
  /// counts) is freed when released, and counted (GraphStats::pools).
  GraphBuilder& set_max_frame_memory(std::int64_t bytes);
  /// Every source ends its stream after at most `frames` frames (0: no
  /// limit), as if it had ended by itself: the end of stream flows to the
  /// sinks, which finish normally (a recording is finalized). `neat run
  /// --frames N`. A source that ends sooner ends sooner.
  GraphBuilder& set_max_source_frames(std::int64_t frames);

  /// Node names must be unique and non-empty; errors come back from build()
  /// (all of them), and also at once from connect().
  /// A source is a stream named after it: `options` say how it is watched,
  /// restarted and rate-limited (streams.hpp).
  GraphBuilder& add_source(std::string name, std::unique_ptr<Source> source,
                           SourceOptions options = {});
  GraphBuilder& add_stage(std::string name, std::unique_ptr<Stage> stage,
                          StageOptions options = {});
  GraphBuilder& add_sink(std::string name, std::shared_ptr<Sink> sink);
  /// An edge. Fan-out (one producer, several consumers) and fan-in (a stage
  /// or sink fed by several producers: it takes their frames round-robin,
  /// and they must hand it the same kind of frame) are allowed.
  Status connect(std::string_view from, std::string_view to, EdgeOptions options = {});

  /// Checks the whole graph and plans every edge (see the file comment).
  /// Consumes the builder's nodes.
  Result<Graph> build();
  /// The plan build() would make, without side effects on the outside: the
  /// sources prepare and are closed again (a GStreamer source prerolls: it
  /// reads, it writes nothing), every sink only checks what it would receive
  /// (Sink::check): no file is opened or truncated, no pipeline downstream
  /// starts. The builder keeps its nodes; build() may follow. `neat explain`.
  Result<GraphPlan> plan();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace neat

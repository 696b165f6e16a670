// `neat run` and its streams: each stream's state changes printed as they
// happen (stalled, restarting with the reason, up again), and the table of
// streams at the end (state, frames, restarts, drops by reason, last error),
// with the message sinks' delivery.
#pragma once

#include <memory>

#include <neat/stages/graph.hpp>
#include <neat/telemetry/event_sink.hpp>

namespace neat::tools {

/// Prints every stream's state change to stderr (the first frame of each
/// stream too, "up"), one line each: "neat run: stream 'door' stalled: no frame
/// for 5.0 s (stall timeout 5.0 s)".
std::shared_ptr<EventSink> stream_state_printer();

/// The "== streams" table of the run's result: printed when the graph has
/// more than one stream or a stream went down.
void print_streams(const GraphStats& stats);

/// The "== messages" table: each message sink's delivery (queued,
/// delivered, dropped from the spool, resent, reconnects, last error).
void print_deliveries(const GraphStats& stats);

/// Whether a stream ended in failure (the run's exit status is then non-zero).
bool any_stream_failed(const GraphStats& stats);

}  // namespace neat::tools

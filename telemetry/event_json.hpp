// The JSON encoding of a ConversionEvent, shared by the JSON Lines and Chrome
// trace exporters and read back by `neat audit`: append_event_json() writes
// one object with std::to_chars and no allocation beyond `out` growing.
//
// Fields: ts_ns, duration_ns, kind, reason, explicit, loud, policy, bytes
// (written), bytes_read, thread, operation, file, line, function, graph,
// stage, edge, frame, src and dst ({dtype, shape, format, layout, device,
// storage, contiguous}).
//
// Threading: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "neat/contract/copy_gate.hpp"
#include "neat/telemetry/event.hpp"

namespace neat {

/// Appends `s` as a JSON string literal (quotes and escapes included).
void append_json_string(std::string& out, std::string_view s);
/// Appends {"dtype":..,"shape":[..],...}.
void append_description_json(std::string& out, const TensorDescription& d);
/// Appends the event as one JSON object (no trailing newline).
void append_event_json(std::string& out, const ConversionEvent& e);

}  // namespace neat

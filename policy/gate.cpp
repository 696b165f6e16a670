#include "neat/policy/gate.hpp"

#include <chrono>
#include <string>
#include <vector>

#include "neat/policy/policy.hpp"
#include "neat/policy/rules.hpp"
#include "neat/telemetry/context.hpp"
#include "neat/telemetry/counters.hpp"
#include "neat/telemetry/event_sink.hpp"
#include "neat/telemetry/metrics.hpp"

namespace neat {

namespace {

std::string place(const CopyRequest& r, const ConversionContext& c) {
  std::string s;
  if (!r.operation.empty()) s += std::string(r.operation) + " ";
  s += "at ";
  s += r.where.file_name();
  s += ':';
  s += std::to_string(r.where.line());
  if (!c.graph.empty()) s += ", graph '" + std::string(c.graph) + "'";
  if (!c.stage.empty()) s += ", stage '" + std::string(c.stage) + "'";
  if (!c.edge.empty()) s += ", edge '" + std::string(c.edge) + "'";
  if (!c.stream.empty()) s += ", stream '" + std::string(c.stream) + "'";
  if (c.frame >= 0) s += ", frame " + std::to_string(c.frame);
  return s;
}

}  // namespace

Result<ConversionPolicy> PolicyGate::admit(const CopyRequest& request) {
  const ConversionPolicy policy = effective_policy(request.policy);
  if (request.explicit_call || policy != ConversionPolicy::Strict) {
    if (Status rules = detail::rules_admit(request, policy); !rules.ok()) {
      conversion_counters().add_refused(request.kind, request.reason);
      const ConversionContext& c = current_context();
      labeled_metrics().record_refused(request.kind, request.reason, c.stage, c.edge, c.stream);
      return std::move(rules).error();
    }
    return policy;
  }
  conversion_counters().add_refused(request.kind, request.reason);
  const ConversionContext& c = current_context();
  labeled_metrics().record_refused(request.kind, request.reason, c.stage, c.edge, c.stream);
  std::string what = "Strict policy refused an implicit " + std::string(to_string(request.kind)) +
                     " (" + std::string(to_string(request.reason)) + ") in " + place(request, c) +
                     ": it would copy " + std::to_string(request.bytes) + " bytes from " +
                     request.source.to_string() + " to " + request.destination.to_string() + ".";
  std::vector<Fix> fixes;
  if (!request.fix.empty())
    fixes.push_back(Fix{std::string(request.fix), std::string(request.fix_python)});
  fixes.push_back(
      Fix{"allow it and have it traced: NEAT_POLICY=trace, neat::ScopedPolicy, or a per-call "
          "policy",
          "allow it and have it traced: NEAT_POLICY=trace, with neat.policy(\"trace\"), or "
          "policy=\"trace\" on the call"});
  return Error(ErrorCode::FailedPrecondition, {}, std::move(what), std::move(fixes));
}

void PolicyGate::record(const CopyRequest& request, ConversionPolicy policy,
                        const CopyOutcome& outcome) noexcept {
  conversion_counters().add(request.kind, request.reason, request.explicit_call,
                            outcome.bytes_written, outcome.duration_ns);
  const ConversionContext& c = current_context();
  try {
    labeled_metrics().record(request.kind, request.reason, policy, request.explicit_call, c.stage,
                             c.edge, c.stream, outcome.bytes_written, outcome.duration_ns);
  } catch (...) {
    // Out of memory for a new label set: the unlabeled counters above still count it.
  }
  bool breached = false;
  try {
    breached = detail::rules_record(request, outcome.bytes_written, policy);
  } catch (...) {
    // Out of memory while keeping a breach: the conversion itself is counted above.
  }
  const bool loud = breached || request.reason == ConversionReason::DonationRefused;
  const bool traced = request.explicit_call || loud || policy == ConversionPolicy::AllowWithTrace;
  if (!traced || event_sink_count() == 0) return;
  ConversionEvent e;
  e.kind = request.kind;
  e.reason = request.reason;
  e.explicit_call = request.explicit_call;
  e.loud = loud;
  e.policy = policy;
  e.bytes_read = outcome.bytes_read;
  e.bytes_written = outcome.bytes_written;
  e.duration_ns = outcome.duration_ns;
  e.timestamp_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  e.thread_id = current_thread_number();
  e.source = request.source;
  e.destination = request.destination;
  e.operation = request.operation;
  e.detail = request.detail;
  e.where = request.where;
  e.graph = c.graph;
  e.stage = c.stage;
  e.edge = c.edge;
  e.stream = c.stream;
  e.frame = c.frame;
  emit_event(e);
}

PolicyGate& policy_gate() noexcept {
  static PolicyGate gate;
  return gate;
}

CopyGate& default_copy_gate() noexcept {
  return policy_gate();
}

}  // namespace neat

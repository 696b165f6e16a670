// Internal to stages (not installed): what the elements of a GStreamer
// pipeline negotiated, for the gst: sources and sinks (gst_io.cpp). Caps as
// the user reads them, the wait for an appsrc-fed pipeline's negotiation
// (following CAPS events), and the elements that convert inside a pipeline
// with the copy-gate requests that account for them.
//
// Threading: NegotiationWatch's probes run on GStreamer's streaming threads;
// everything else on the thread that prepares the node (and record() on the
// node's own thread).
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "neat/contract/copy_gate.hpp"
#include "neat/stages/frame_spec.hpp"
#include "neat/storage/internal/gst_ref.hpp"

namespace neat::detail {

/// "NV12 1920x1080" for raw video caps, the media type otherwise
/// ("image/jpeg"); *raw says which, *info is filled for raw caps.
std::string caps_text(GstCaps* caps, GstVideoInfo* info, bool* raw);
/// The current caps of `e`'s static pad `pad_name` (empty when none yet).
GstRef<GstCaps> pad_caps(GstElement* e, const char* pad_name);
/// What a pad without caps yet can carry: "video/x-vp8 (not negotiated yet)".
std::string possible_caps_text(GstElement* e, const char* pad_name);

// Negotiation of a pipeline fed by an appsrc: when it starts playing, the
// appsrc's caps travel downstream as a CAPS event and each transform answers
// with its output caps. The wait follows those events (a probe on each
// transform's output pad wakes it) instead of guessing with a sleep.
class NegotiationWatch {
 public:
  explicit NegotiationWatch(GstElement* pipeline) {
    for_each_element(GST_BIN(pipeline), [&](GstElement* e) {
      // A transform takes the CAPS event on its input and answers with its
      // output caps (its input's are stored once it returns: both are
      // watched); an encoder takes its input caps then (its output's come
      // with its first frame).
      if (GST_IS_BASE_TRANSFORM(e)) {
        watch(e, "sink");
        watch(e, "src");
      } else if (GST_IS_VIDEO_ENCODER(e)) {
        watch(e, "sink");
      }
      return false;  // every element
    });
  }
  void watch(GstElement* e, const char* pad_name) {
    GstPad* pad = gst_element_get_static_pad(e, pad_name);
    if (pad == nullptr) return;
    auto* keep = new Probe;
    keep->keep = state_;
    keep->state.store(state_.get(),
                      std::memory_order_release);  // published to the streaming thread
    const gulong id =
        gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, &NegotiationWatch::on_event,
                          keep, [](gpointer p) { delete static_cast<Probe*>(p); });
    probes_.emplace_back(pad, id);
  }
  ~NegotiationWatch() {
    for (auto& [pad, id] : probes_) {
      gst_pad_remove_probe(pad, id);
      gst_object_unref(pad);
    }
  }
  NegotiationWatch(const NegotiationWatch&) = delete;
  NegotiationWatch& operator=(const NegotiationWatch&) = delete;

  // The first element still without the caps it waits for, or nullptr once all have them.
  GstElement* waiting() const {
    for (const auto& [pad, id] : probes_) {
      GstRef<GstCaps> caps(gst_pad_get_current_caps(pad));
      if (!caps) return GST_PAD_PARENT(pad);
    }
    return nullptr;
  }

  // Until every transform has its caps (true), `failed()` says stop, or `limit`.
  template <class Failed>
  bool wait(std::chrono::milliseconds limit, Failed failed) {
    const auto until = std::chrono::steady_clock::now() + limit;
    std::unique_lock lock(state_->mutex);
    for (;;) {
      if (waiting() == nullptr) return true;
      if (failed() || std::chrono::steady_clock::now() >= until) return false;
      // Woken by a CAPS event; the slice bounds how late an error on the bus is seen.
      state_->changed.wait_for(lock, std::chrono::milliseconds(50));
    }
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
  };
  // A probe's data. The state is handed to GStreamer's streaming thread
  // through an atomic: GStreamer's own pad lock orders the hand-over too,
  // but ThreadSanitizer cannot see GLib's futex-based locks.
  struct Probe {
    std::atomic<State*> state{nullptr};
    std::shared_ptr<State> keep;
  };
  static GstPadProbeReturn on_event(GstPad*, GstPadProbeInfo* info, gpointer data) {
    GstEvent* event = GST_PAD_PROBE_INFO_EVENT(info);
    if (event != nullptr && GST_EVENT_TYPE(event) == GST_EVENT_CAPS) {
      State& s = *static_cast<Probe*>(data)->state.load(std::memory_order_acquire);
      const std::lock_guard lock(s.mutex);
      s.changed.notify_all();
    }
    return GST_PAD_PROBE_OK;
  }

  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::vector<std::pair<GstPad*, gulong>> probes_;  // each pad referenced
};

/// How long a sink's pipeline may take to settle its caps once playing.
inline constexpr auto kNegotiationLimit = std::chrono::seconds(5);

/// The elements of a negotiated pipeline that transform frames (`skip`, the
/// node's own appsink or appsrc, excluded); `implicit` names the ones
/// NeatTensor inserted.
std::vector<InnerConversion> converting_elements(GstElement* pipeline, GstElement* skip,
                                                 const std::vector<std::string>& implicit);

// The converting elements of one negotiated pipeline and the gate requests
// that account for them: planned once (an implicit element must pass the
// policy then), recorded once per frame. The requests' strings live here.
class ElementAccounting {
 public:
  /// Finds the converting elements (after negotiation) and admits each
  /// implicit one through the policy now (refused under Strict: the error
  /// names the node, the element and what it converts, with `fix`).
  Status plan(GstElement* pipeline, GstElement* skip, std::string_view node,
              const std::vector<std::string>& implicit, const std::string& fix);
  /// One event per converting element, for the frame being handed over.
  Status record() const;
  const std::vector<InnerConversion>& conversions() const noexcept { return conversions_; }

 private:
  std::vector<InnerConversion> conversions_;
  std::string fix_;
  std::vector<std::string> details_;  // reserved up front: requests_ point into it
  std::vector<CopyRequest> requests_;
};

}  // namespace neat::detail

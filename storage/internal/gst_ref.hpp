#pragma once
// Ownership of GLib and GStreamer references, the way UniqueFd owns an fd:
// GstRef<T> holds one reference (or one allocation) and drops it exactly once,
// on every path out of a scope. Internal to the library (not installed); used
// by storage/gstreamer.cpp and stages/gst_io.cpp.
//
//   GstRef<GstCaps> caps(gst_pad_get_current_caps(pad));  // adopts the reference
//   GstRef<GError> err;
//   gst_parse_launch(text, err.out());                     // filled by an out-parameter
//   GstRef<gchar> text(gst_caps_to_string(caps.get()));
//
// GValue and GstIterator walks have their own helper, for_each_element().

#include <gst/gst.h>

#include <utility>

namespace neat::detail {

/// How each type gives its reference back. GstObject subclasses (elements,
/// bins, pads, buses) share gst_object_unref.
template <class T>
struct GstRelease;
template <>
struct GstRelease<GstBuffer> {
  static void release(GstBuffer* p) noexcept { gst_buffer_unref(p); }
};
template <>
struct GstRelease<GstCaps> {
  static void release(GstCaps* p) noexcept { gst_caps_unref(p); }
};
template <>
struct GstRelease<GstSample> {
  static void release(GstSample* p) noexcept { gst_sample_unref(p); }
};
template <>
struct GstRelease<GstMessage> {
  static void release(GstMessage* p) noexcept { gst_message_unref(p); }
};
template <>
struct GstRelease<GError> {
  static void release(GError* p) noexcept { g_error_free(p); }
};
template <>
struct GstRelease<gchar> {
  static void release(gchar* p) noexcept { g_free(p); }
};
template <>
struct GstRelease<GstIterator> {
  static void release(GstIterator* p) noexcept { gst_iterator_free(p); }
};
template <class T>
struct GstObjectRelease {
  static void release(T* p) noexcept { gst_object_unref(p); }
};
template <>
struct GstRelease<GstElement> : GstObjectRelease<GstElement> {};
template <>
struct GstRelease<GstBus> : GstObjectRelease<GstBus> {};
template <>
struct GstRelease<GstPad> : GstObjectRelease<GstPad> {};
template <>
struct GstRelease<GstElementFactory> : GstObjectRelease<GstElementFactory> {};
template <>
struct GstRelease<GstClock> : GstObjectRelease<GstClock> {};
template <>
struct GstRelease<GstPluginFeature> : GstObjectRelease<GstPluginFeature> {};

/// One owned reference; move-only; null when empty.
template <class T>
class GstRef {
 public:
  GstRef() noexcept = default;
  /// Adopts `p` (a reference the caller owns, e.g. a (transfer full) return).
  explicit GstRef(T* p) noexcept : p_(p) {}
  GstRef(GstRef&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  GstRef& operator=(GstRef&& o) noexcept {
    if (this != &o) reset(std::exchange(o.p_, nullptr));
    return *this;
  }
  GstRef(const GstRef&) = delete;
  GstRef& operator=(const GstRef&) = delete;
  ~GstRef() { reset(); }

  T* get() const noexcept { return p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  T* operator->() const noexcept { return p_; }
  /// Hands the reference to the caller (e.g. to a (transfer full) parameter).
  [[nodiscard]] T* release() noexcept { return std::exchange(p_, nullptr); }
  /// Drops the held reference and adopts `p`.
  void reset(T* p = nullptr) noexcept {
    if (T* old = std::exchange(p_, p); old != nullptr) GstRelease<T>::release(old);
  }
  /// For a `T**` out-parameter: drops what is held and lets the callee fill it.
  T** out() noexcept {
    reset();
    return &p_;
  }

 private:
  T* p_ = nullptr;
};

/// Calls `fn(GstElement*)` for every element of `bin`, recursively, until it
/// returns true; returns the element it stopped at (borrowed: the bin keeps
/// it) or null. When the bin changes during the walk, the walk starts over
/// after calling `restart()` (so a caller collecting results can drop them).
template <class Fn, class Restart = void (*)()>
GstElement* for_each_element(
    GstBin* bin, Fn&& fn, Restart restart = [] {}) {
  GstRef<GstIterator> it(gst_bin_iterate_recurse(bin));
  GValue v = G_VALUE_INIT;
  GstElement* found = nullptr;
  for (bool done = false; !done && found == nullptr;) {
    switch (gst_iterator_next(it.get(), &v)) {
      case GST_ITERATOR_OK: {
        auto* e = GST_ELEMENT(g_value_get_object(&v));
        if (fn(e)) found = e;
        g_value_reset(&v);
        break;
      }
      case GST_ITERATOR_RESYNC:
        gst_iterator_resync(it.get());
        restart();
        break;
      default:  // DONE or ERROR
        done = true;
        break;
    }
  }
  g_value_unset(&v);
  return found;
}

}  // namespace neat::detail

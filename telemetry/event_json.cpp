#include "neat/telemetry/event_json.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace neat {

namespace {

// Writes JSON into a buffer the caller sized (see bound()): no checks per
// byte, no allocation.
struct Writer {
  char* p;

  template <std::size_t N>
  void lit(const char (&s)[N]) noexcept {
    std::memcpy(p, s, N - 1);
    p += N - 1;
  }
  void raw(std::string_view s) noexcept {
    if (s.empty()) return;  // an empty view may have a null data(): memcpy must not see it
    std::memcpy(p, s.data(), s.size());
    p += s.size();
  }
  void num(std::int64_t v) noexcept { p = std::to_chars(p, p + 24, v).ptr; }
  // A quoted name that never needs escaping (enum names).
  void name(std::string_view s) noexcept {
    *p++ = '"';
    raw(s);
    *p++ = '"';
  }
  void boolean(bool b) noexcept {
    if (b) {
      lit("true");
    } else {
      lit("false");
    }
  }
  // True when any of the 8 bytes needs escaping: < 0x20, '"' or '\\'.
  // (Exact boolean tests from the "bit twiddling hacks" has-less / has-zero.)
  static bool needs_escape(std::uint64_t x) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    auto has_zero = [](std::uint64_t v) { return (v - ones) & ~v & highs; };
    const std::uint64_t below_space = (x - 0x2020202020202020ULL) & ~x & highs;
    return (below_space | has_zero(x ^ 0x2222222222222222ULL) |
            has_zero(x ^ 0x5c5c5c5c5c5c5c5cULL)) != 0;
  }

  void str(std::string_view s) noexcept {
    static constexpr char kHex[] = "0123456789abcdef";
    *p++ = '"';
    const std::size_t n = s.size();
    std::size_t i = 0, run = 0;  // bytes [run, i) are clean and not yet copied
    while (i < n) {
      if (i + 8 <= n) {
        std::uint64_t word;
        std::memcpy(&word, s.data() + i, 8);
        if (!needs_escape(word)) {
          i += 8;
          continue;
        }
      }
      const std::size_t end = std::min(i + 8, n);
      for (; i < end; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        raw(s.substr(run, i - run));
        run = i + 1;
        *p++ = '\\';
        switch (c) {
          case '"':
            *p++ = '"';
            break;
          case '\\':
            *p++ = '\\';
            break;
          case '\n':
            *p++ = 'n';
            break;
          case '\r':
            *p++ = 'r';
            break;
          case '\t':
            *p++ = 't';
            break;
          default:
            lit("u00");
            *p++ = kHex[c >> 4];
            *p++ = kHex[c & 15];
        }
      }
    }
    raw(s.substr(run));
    *p++ = '"';
  }
  void description(const TensorDescription& d) noexcept {
    lit("{\"dtype\":");
    name(to_string(d.dtype));
    lit(",\"shape\":[");
    for (int i = 0; i < d.rank && i < 4; ++i) {
      if (i) *p++ = ',';
      num(d.shape[static_cast<std::size_t>(i)]);
    }
    lit("],\"format\":");
    name(to_string(d.format));
    lit(",\"layout\":");
    name(to_string(d.layout));
    lit(",\"device\":\"");
    raw(to_string(d.device.type));
    *p++ = ':';
    num(d.device.id);
    *p++ = '"';
    lit(",\"storage\":");
    name(to_string(d.storage));
    lit(",\"contiguous\":");
    boolean(d.contiguous);
    *p++ = '}';
  }
};

// Upper bound of the encoded size of a description and of an event.
constexpr std::size_t kDescriptionBound = 400;
std::size_t bound(const ConversionEvent& e, const CallSiteCache::Entry* cached) noexcept {
  std::size_t strings =
      e.graph.size() + e.stage.size() + e.edge.size() + e.stream.size() + e.detail.size();
  std::size_t site = 0;
  if (cached != nullptr) {  // the call site's encoding is known: no strlen
    site = cached->encoded.size();
  } else {
    strings += std::strlen(e.where.file_name()) + std::strlen(e.where.function_name()) +
               e.operation.size();
  }
  return 600 + 2 * kDescriptionBound + 6 * strings + site;
}

void encode_call_site(Writer& w, const ConversionEvent& e) noexcept {
  w.lit(",\"operation\":");
  w.str(e.operation);
  w.lit(",\"file\":");
  w.str(e.where.file_name());
  w.lit(",\"line\":");
  w.num(e.where.line());
  w.lit(",\"function\":");
  w.str(e.where.function_name());
}

void encode_description(Writer& w, const TensorDescription& d, CallSiteCache* cache) {
  if (cache == nullptr) {
    w.description(d);
    return;
  }
  if (const std::string* hit = cache->find(d)) {
    w.raw(*hit);
    return;
  }
  char* start = w.p;
  w.description(d);
  cache->insert(d, std::string(start, static_cast<std::size_t>(w.p - start)));
}

void encode(Writer& w, const ConversionEvent& e, CallSiteCache* cache) {
  w.lit("{\"ts_ns\":");
  w.num(e.timestamp_ns);
  w.lit(",\"duration_ns\":");
  w.num(e.duration_ns);
  w.lit(",\"kind\":");
  w.name(to_string(e.kind));
  w.lit(",\"reason\":");
  w.name(to_string(e.reason));
  w.lit(",\"explicit\":");
  w.boolean(e.explicit_call);
  w.lit(",\"loud\":");
  w.boolean(e.loud);
  w.lit(",\"policy\":");
  w.name(to_string(e.policy));
  w.lit(",\"bytes\":");
  w.num(e.bytes_written);
  w.lit(",\"bytes_read\":");
  w.num(e.bytes_read);
  w.lit(",\"thread\":");
  w.num(static_cast<std::int64_t>(e.thread_id));
  w.lit(",\"graph\":");
  w.str(e.graph);
  w.lit(",\"stage\":");
  w.str(e.stage);
  w.lit(",\"edge\":");
  w.str(e.edge);
  if (!e.stream.empty()) {
    w.lit(",\"stream\":");
    w.str(e.stream);
  }
  w.lit(",\"frame\":");
  w.num(e.frame);
  w.lit(",\"src\":");
  encode_description(w, e.source, cache);
  w.lit(",\"dst\":");
  encode_description(w, e.destination, cache);
  if (!e.detail.empty()) {
    w.lit(",\"detail\":");
    w.str(e.detail);
  }
  if (cache == nullptr) {
    encode_call_site(w, e);
  } else {
    CallSiteCache::Entry* hit = cache->find(e);
    if (hit == nullptr) {
      CallSiteCache::Entry& fresh = cache->insert(e);
      char* start = w.p;
      encode_call_site(w, e);
      fresh.encoded.assign(start, static_cast<std::size_t>(w.p - start));
    } else {
      w.raw(hit->encoded);
    }
  }
  *w.p++ = '}';
}

bool same(const TensorDescription& a, const TensorDescription& b) noexcept {
  return a.dtype == b.dtype && a.format == b.format && a.layout == b.layout &&
         a.device == b.device && a.storage == b.storage && a.rank == b.rank &&
         a.contiguous == b.contiguous && a.shape == b.shape;
}

}  // namespace

const std::string* CallSiteCache::find(const TensorDescription& d) const noexcept {
  for (const Description& c : descriptions_) {
    if (c.used && same(c.key, d)) return &c.encoded;
  }
  return nullptr;
}

void CallSiteCache::insert(const TensorDescription& d, std::string encoded) {
  Description& c = descriptions_[next_description_];
  next_description_ = (next_description_ + 1) % kDescriptions;
  c.key = d;
  c.encoded = std::move(encoded);
  c.used = true;
}

void append_json_string(std::string& out, std::string_view s) {
  const std::size_t old = out.size();
  out.resize(old + 6 * s.size() + 2);
  Writer w{out.data() + old};
  w.str(s);
  out.resize(static_cast<std::size_t>(w.p - out.data()));
}

void append_description_json(std::string& out, const TensorDescription& d) {
  const std::size_t old = out.size();
  out.resize(old + kDescriptionBound);
  Writer w{out.data() + old};
  w.description(d);
  out.resize(static_cast<std::size_t>(w.p - out.data()));
}

std::size_t event_json_bound(const ConversionEvent& e, CallSiteCache* cache) noexcept {
  return bound(e, cache != nullptr ? cache->find(e) : nullptr);
}

char* encode_event_json(char* dst, const ConversionEvent& e, CallSiteCache* cache) {
  Writer w{dst};
  encode(w, e, cache);
  return w.p;
}

CallSiteCache::Entry* CallSiteCache::find(const ConversionEvent& e) noexcept {
  for (Entry& en : entries_) {
    if (en.file == e.where.file_name() && en.function == e.where.function_name() &&
        en.line == e.where.line() && en.operation == e.operation) {
      return &en;
    }
  }
  return nullptr;
}

CallSiteCache::Entry& CallSiteCache::insert(const ConversionEvent& e) {
  Entry& en = entries_[next_];
  next_ = (next_ + 1) % kSize;
  en.file = e.where.file_name();
  en.function = e.where.function_name();
  en.line = e.where.line();
  en.operation.assign(e.operation);
  return en;
}

void append_event_json(std::string& out, const ConversionEvent& e, CallSiteCache* cache) {
  const std::size_t n = bound(e, cache != nullptr ? cache->find(e) : nullptr);
  if (n <= 4096) {  // the common case: encode on the stack, append once
    char buf[4096];
    Writer w{buf};
    encode(w, e, cache);
    out.append(buf, static_cast<std::size_t>(w.p - buf));
    return;
  }
  const std::size_t old = out.size();
  out.resize(old + n);
  Writer w{out.data() + old};
  encode(w, e, cache);
  out.resize(static_cast<std::size_t>(w.p - out.data()));
}

namespace {

void append_json_number(std::string& out, std::int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

}  // namespace

void append_frame_json(std::string& out, const FrameEvent& e) {
  auto number = [&out](std::int64_t v) { append_json_number(out, v); };
  out += "{\"type\":\"frame\",\"ts_ns\":";
  number(e.timestamp_ns);
  out += ",\"graph\":";
  append_json_string(out, e.graph);
  out += ",\"sink\":";
  append_json_string(out, e.sink);
  if (!e.stream.empty()) {
    out += ",\"stream\":";
    append_json_string(out, e.stream);
  }
  out += ",\"frame\":";
  number(e.frame);
  out += ",\"latency_ns\":";
  number(e.latency_ns);
  out += ",\"thread\":";
  number(static_cast<std::int64_t>(e.thread_id));
  out += '}';
}

void append_stream_json(std::string& out, const StreamEvent& e) {
  auto number = [&out](std::int64_t v) { append_json_number(out, v); };
  out += "{\"type\":\"stream\",\"ts_ns\":";
  number(e.timestamp_ns);
  out += ",\"graph\":";
  append_json_string(out, e.graph);
  out += ",\"stream\":";
  append_json_string(out, e.stream);
  out += ",\"state\":";
  append_json_string(out, e.state);
  out += ",\"reason\":";
  append_json_string(out, e.reason);
  out += ",\"restarts\":";
  number(static_cast<std::int64_t>(e.restarts));
  out += ",\"thread\":";
  number(static_cast<std::int64_t>(e.thread_id));
  out += '}';
}

void append_output_json(std::string& out, const OutputEvent& e) {
  auto number = [&out](std::int64_t v) { append_json_number(out, v); };
  out += "{\"type\":";
  append_json_string(out, e.type);
  out += ",\"event\":";
  append_json_string(out, e.event);
  out += ",\"ts_ns\":";
  number(e.timestamp_ns);
  out += ",\"graph\":";
  append_json_string(out, e.graph);
  out += ",\"node\":";
  append_json_string(out, e.node);
  out += ",\"stream\":";
  append_json_string(out, e.stream);
  out += ",\"detail\":";
  append_json_string(out, e.detail);
  out += ",\"frame\":";
  number(e.frame);
  out += ",\"id\":";
  number(e.id);
  out += ",\"thread\":";
  number(static_cast<std::int64_t>(e.thread_id));
  out += '}';
}

}  // namespace neat

// Test helpers: a FakeStorage whose capabilities can be switched (mappable,
// read-only, donatable, map failures, resident or mapped on demand) so tests
// reach every copy / view / map path without hardware; a fixture that
// captures conversion events and counter deltas; and small byte helpers.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "neat/neat.hpp"

namespace neat::testing {

struct FakeCaps {
  bool read_only = false;
  bool donatable = true;
  bool resident = true;  ///< false: map() goes through map_slow (like GStreamer)
  bool mappable = true;  ///< false: like a GL texture
  StorageKind kind = StorageKind::Other;
  Device device = kCpu;
};

class FakeStorage final : public Storage {
 public:
  FakeStorage(std::int64_t bytes, FakeCaps caps)
      : Storage(caps.kind, caps.device, bytes, caps.read_only, nullptr),
        caps_(caps),
        bytes_(static_cast<std::size_t>(bytes)) {}

  static std::shared_ptr<FakeStorage> make(std::int64_t bytes, FakeCaps caps = {}) {
    return std::make_shared<FakeStorage>(bytes, caps);
  }

  bool mappable() const noexcept override { return caps_.mappable; }
  bool donatable() const noexcept override { return !read_only() && caps_.donatable; }
  std::byte* bytes() { return bytes_.data(); }
  int live_maps() const { return live_maps_.load(); }
  int total_maps() const { return total_maps_.load(); }
  std::atomic<bool> fail_next_map{false};

 protected:
  Result<std::byte*> map_slow(MapMode mode) override {
    if (!caps_.mappable) return Storage::map_slow(mode);
    if (fail_next_map.exchange(false)) return internal_error("fake map failure");
    live_maps_.fetch_add(1);
    total_maps_.fetch_add(1);
    return bytes_.data();
  }
  void unmap_slow(MapMode) noexcept override { live_maps_.fetch_sub(1); }

 private:
  FakeCaps caps_;
  std::vector<std::byte> bytes_;
  std::atomic<int> live_maps_{0};
  std::atomic<int> total_maps_{0};
};

/// Captures events (a MemorySink) and counter deltas for the duration of a test.
class TelemetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sink_ = std::make_shared<MemorySink>();
    registration_ = add_event_sink(sink_);
    before_ = conversion_counters().snapshot();
  }
  void TearDown() override { registration_.reset(); }
  CountersSnapshot delta() const { return conversion_counters().snapshot().since(before_); }
  std::vector<OwnedEvent> events() const { return sink_->events(); }

  std::shared_ptr<MemorySink> sink_;
  SinkRegistration registration_;
  CountersSnapshot before_;
};

/// Fills a writable tensor's bytes with i * mul + add (dense, any strides).
inline void fill_pattern(NeatTensor& t, int mul = 1, int add = 0) {
  auto m = t.map(MapMode::Write);
  ASSERT_TRUE(m.ok()) << m.error().message();
  const std::int64_t n = t.storage()->size_bytes();
  auto base = m->mutable_data() - t.byte_offset();
  for (std::int64_t i = 0; i < n; ++i)
    base[i] = static_cast<std::byte>((i * mul + add) & 0xff);
}

/// Element bytes of a dense tensor in row-major order (follows strides).
inline std::vector<std::uint8_t> element_bytes(const NeatTensor& t) {
  std::vector<std::uint8_t> out;
  auto m = t.map();
  if (!m.ok()) return out;
  const std::int64_t item = item_size(t.dtype());
  const std::int64_t n = t.numel();
  std::vector<std::int64_t> idx(static_cast<std::size_t>(t.rank()), 0);
  for (std::int64_t e = 0; e < n; ++e) {
    std::int64_t off = 0;
    for (int d = 0; d < t.rank(); ++d)
      off += idx[static_cast<std::size_t>(d)] * t.strides()[d];
    const auto* p = reinterpret_cast<const std::uint8_t*>(m->data() + off);
    out.insert(out.end(), p, p + item);
    for (int d = t.rank() - 1; d >= 0; --d) {
      if (++idx[static_cast<std::size_t>(d)] < t.shape()[d]) break;
      idx[static_cast<std::size_t>(d)] = 0;
    }
  }
  return out;
}

#define NEAT_ASSERT_OK(expr)                                  \
  do {                                                        \
    const auto& neat_r_ = (expr);                             \
    ASSERT_TRUE(neat_r_.ok()) << neat_r_.error().to_string(); \
  } while (false)

#define NEAT_EXPECT_ERROR(expr, code_, substr)                                                \
  do {                                                                                        \
    const auto& neat_r_ = (expr);                                                             \
    ASSERT_FALSE(neat_r_.ok()) << "expected an error";                                        \
    EXPECT_EQ(neat_r_.error().code(), (code_)) << neat_r_.error().to_string();                \
    EXPECT_NE(neat_r_.error().message().find(substr), std::string::npos)                      \
        << "message: " << neat_r_.error().message() << "\nexpected to contain: " << (substr); \
  } while (false)

}  // namespace neat::testing

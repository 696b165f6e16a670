// Stress: 8 threads x NEAT_STRESS_OPS (default 1,000,000) mixed operations
// (views, handle copies, copy-on-write make_writable with writes, read and
// write mappings) on shared tensors, with content checks; then last-reference
// races: many threads drop the final handles of one buffer at once and it is
// destroyed exactly once. Exact reference counts at the end. Threaded: runs
// under TSan too.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "neat/contract/mapping.hpp"
#include "neat/contract/neat_tensor.hpp"
#include "neat/storage/external.hpp"

namespace neat {
namespace {

constexpr int kThreads = 8;
constexpr int kShared = 16;
constexpr std::int64_t kBytes = 1024;

std::int64_t ops_per_thread() {
  const char* v = std::getenv("NEAT_STRESS_OPS");
  return v != nullptr ? std::max<std::int64_t>(1, std::atoll(v)) : 1'000'000;
}

// A tensor over external memory whose keep-alive counts its destruction.
NeatTensor counted(std::uint8_t fill, std::atomic<int>* destroyed) {
  auto* bytes = new std::uint8_t[kBytes];
  std::memset(bytes, fill, kBytes);
  std::shared_ptr<void> keep(bytes, [destroyed](void* p) {
    delete[] static_cast<std::uint8_t*>(p);
    destroyed->fetch_add(1);
  });
  auto t =
      wrap_external(bytes, kBytes, keep, DType::U8, Dims{kBytes}, Dims{1}, 0, {.read_only = false});
  return *std::move(t);
}

TEST(Stress, MixedOperationsOnSharedTensorsKeepContentsAndCounts) {
  std::array<std::atomic<int>, kShared> destroyed{};
  std::vector<NeatTensor> shared;
  for (int k = 0; k < kShared; ++k)
    shared.push_back(counted(static_cast<std::uint8_t>(k), &destroyed[k]));
  const std::int64_t ops = ops_per_thread();
  std::atomic<std::int64_t> bad{0}, cow{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      std::mt19937 rng(static_cast<unsigned>(i) * 7919u + 1u);
      std::vector<NeatTensor> held;  // handle copies kept for a while
      for (std::int64_t n = 0; n < ops; ++n) {
        const int k = static_cast<int>(rng() % kShared);
        const NeatTensor& t = shared[static_cast<std::size_t>(k)];
        switch (rng() % 6) {
          case 0: {  // a view, and a view of it
            auto v = t.narrow(0, static_cast<std::int64_t>(rng() % 512), 256);
            if (!v.ok()) {
              ++bad;
              break;
            }
            auto s = v->slice(0, 0, 256, 4);
            if (!s.ok() || s->numel() != 64) ++bad;
            break;
          }
          case 1:  // a handle copy, kept or released
            held.push_back(t);
            if (held.size() > 8) held.erase(held.begin());
            break;
          case 2: {  // read mapping: the shared bytes never change
            auto m = t.map();
            if (!m.ok() ||
                m->data()[static_cast<std::size_t>(rng() % kBytes)] != static_cast<std::byte>(k)) {
              ++bad;
            }
            break;
          }
          case 3: {  // copy-on-write: private bytes, the original intact
            NeatTensor mine = t;
            auto w = std::move(mine).make_writable();
            if (!w.ok()) {
              ++bad;
              break;
            }
            if (w->identity().id() == t.identity().id()) {
              ++bad;
              break;
            }  // shared: must copy
            ++cow;
            auto m = w->map(MapMode::Write);
            if (!m.ok()) {
              ++bad;
              break;
            }
            std::memset(m->mutable_data(), 0xA0 + i, kBytes);
            if (m->data()[kBytes - 1] != static_cast<std::byte>(0xA0 + i)) ++bad;
            break;
          }
          case 4: {  // a private tensor: donated, written, read back
            auto own = NeatTensor::allocate(DType::U8, Dims{64});
            if (!own.ok()) {
              ++bad;
              break;
            }
            auto w = std::move(*own).make_writable();
            if (!w.ok()) {
              ++bad;
              break;
            }
            {
              auto m = w->map(MapMode::Write);
              m->mutable_data()[63] = std::byte{7};
            }
            if (w->map()->data()[63] != std::byte{7}) ++bad;
            break;
          }
          default: {  // identity of a view equals its base
            auto v = t.reshape(Dims{32, 32});
            if (!v.ok() || v->identity().id() != t.identity().id()) ++bad;
            break;
          }
        }
      }
    });
  }
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(cow.load(), 0);
  // Exact reference counts: every thread's copies are gone.
  for (int k = 0; k < kShared; ++k) {
    EXPECT_EQ(shared[static_cast<std::size_t>(k)].storage().use_count(), 1) << "tensor " << k;
    EXPECT_EQ(destroyed[static_cast<std::size_t>(k)].load(), 0);
  }
  shared.clear();
  for (int k = 0; k < kShared; ++k)
    EXPECT_EQ(destroyed[static_cast<std::size_t>(k)].load(), 1);
}

TEST(Stress, LastReferenceRacesDestroyExactlyOnce) {
  constexpr int kRounds = 2000;
  std::vector<std::atomic<int>> destroyed(kRounds);
  std::barrier sync(kThreads);
  std::vector<std::vector<NeatTensor>> handles(kThreads, std::vector<NeatTensor>(kRounds));
  for (int r = 0; r < kRounds; ++r) {
    NeatTensor t = counted(1, &destroyed[static_cast<std::size_t>(r)]);
    auto view = t.narrow(0, 0, 10);
    for (int i = 0; i < kThreads; ++i) {
      handles[static_cast<std::size_t>(i)][static_cast<std::size_t>(r)] = i % 2 == 0 ? t : *view;
    }
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int r = 0; r < kRounds; ++r) {
        sync.arrive_and_wait();  // everyone drops round r's handle at once
        handles[static_cast<std::size_t>(i)][static_cast<std::size_t>(r)] = NeatTensor();
      }
    });
  }
  for (auto& th : threads)
    th.join();
  for (int r = 0; r < kRounds; ++r) {
    ASSERT_EQ(destroyed[static_cast<std::size_t>(r)].load(), 1) << "round " << r;
  }
}

}  // namespace
}  // namespace neat

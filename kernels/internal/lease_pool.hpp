// A fixed pool of working state lent to one holder at a time: the
// preprocess engine's axis tables and scratch rows stay warm across calls
// whichever thread makes them (a thread pool's worker new to a stripe, a
// caller's short-lived thread), where state per thread was built again on
// every thread new to a geometry. Taking a slot is an atomic flag: no lock,
// no wait. When every slot is lent, the holder gets its thread's own.
#pragma once

#include <atomic>
#include <cstddef>
#include <utility>

namespace neat::detail {

template <class T, std::size_t N>
class LeasePool {
  struct alignas(64) Slot {  // a slot's flag on no other slot's line
    std::atomic<bool> busy{false};
    T value;
  };

 public:
  // One slot's value (or the thread's own), given back when destroyed.
  class Lease {
   public:
    Lease(Lease&& other) noexcept
        : slot_(std::exchange(other.slot_, nullptr)), value_(other.value_) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (slot_ != nullptr) slot_->busy.store(false, std::memory_order_release);
    }
    T& operator*() const { return *value_; }
    T* operator->() const { return value_; }
    // Whether the value is the pool's (false: the thread's own).
    bool pooled() const { return slot_ != nullptr; }

   private:
    friend class LeasePool;
    Lease(Slot* slot, T* value) : slot_(slot), value_(value) {}
    Slot* slot_;
    T* value_;
  };

  // The first free slot whose value `fits` (its last holder left it as this
  // one needs it: the same geometry), else the first free slot, else the
  // calling thread's own value.
  template <class Fits>
  Lease take(Fits&& fits) {
    for (int pass = 0; pass < 2; ++pass) {
      for (Slot& slot : slots_) {
        if (slot.busy.load(std::memory_order_relaxed) ||
            slot.busy.exchange(true, std::memory_order_acquire)) {
          continue;
        }
        if (pass == 1 || fits(static_cast<const T&>(slot.value))) return Lease(&slot, &slot.value);
        slot.busy.store(false, std::memory_order_release);
      }
    }
    thread_local T own;
    return Lease(nullptr, &own);
  }
  Lease take() {
    return take([](const T&) { return true; });
  }

 private:
  Slot slots_[N];
};

}  // namespace neat::detail

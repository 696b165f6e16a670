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
    T value{};  // value-initialized: a slot no holder has used is T{}
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
  // one needs it: the same geometry), else the first free slot no holder has
  // used (`unused`), else the first free slot, else the calling thread's own
  // value. Unused slots before used ones: a process that alternates
  // geometries keeps each in a slot of its own, up to N of them, rather than
  // making the first slot's again on every change.
  template <class Fits, class Unused>
  Lease take(Fits&& fits, Unused&& unused) {
    for (int pass = 0; pass < 3; ++pass) {
      for (Slot& slot : slots_) {
        if (slot.busy.load(std::memory_order_relaxed) ||
            slot.busy.exchange(true, std::memory_order_acquire)) {
          continue;
        }
        const T& value = slot.value;
        if (pass == 2 || (pass == 0 ? fits(value) : unused(value))) {
          return Lease(&slot, &slot.value);
        }
        slot.busy.store(false, std::memory_order_release);
      }
    }
    thread_local T own;
    return Lease(nullptr, &own);
  }
  template <class Fits>
  Lease take(Fits&& fits) {
    return take(std::forward<Fits>(fits), [](const T&) { return false; });
  }
  Lease take() {
    return take([](const T&) { return true; });
  }

 private:
  Slot slots_[N];
};

}  // namespace neat::detail

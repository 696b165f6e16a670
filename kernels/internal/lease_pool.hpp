// A fixed pool of working state lent to one holder at a time: the
// preprocess engine's axis tables and scratch rows stay warm across calls
// whichever thread makes them (a thread pool's worker new to a stripe, a
// caller's short-lived thread), where state per thread was built again on
// every thread new to a geometry. Taking a slot is an atomic flag: no lock,
// no wait. When every slot is lent, the holder gets its thread's own.
#pragma once

#include <atomic>
#include <cstddef>
#include <limits>
#include <new>
#include <utility>
#include <vector>

namespace neat::detail {

// What two threads' working state keeps apart: a pair of cache lines (the
// pair the L2's adjacent-line prefetcher fetches together).
inline constexpr std::size_t kLineBytes = 128;

// An allocator whose blocks own the lines they lie on: aligned to
// kLineBytes and rounded up to whole lines. Two stripes' scratch rows,
// allocated one after the other, would otherwise share the line where one
// ends and the next begins, and each write to it would take the line from
// the other core. Zen 5, two threads, 720p NV12 -> 416 area: 99 -> 72 us a
// call in one run of each build, 0.89-0.93 of the time in processes of the
// two builds alternated (the heap's layout, and so which lines are shared,
// moves from process to process); one thread 0.97.
template <class T>
struct LineAllocator {
  using value_type = T;
  LineAllocator() = default;
  template <class U>
  LineAllocator(const LineAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > (std::numeric_limits<std::size_t>::max() - kLineBytes) / sizeof(T)) {
      throw std::bad_array_new_length();
    }
    const std::size_t bytes = (n * sizeof(T) + kLineBytes - 1) / kLineBytes * kLineBytes;
    return static_cast<T*>(::operator new (bytes, std::align_val_t{kLineBytes}));
  }
  void deallocate(T* p, std::size_t) noexcept {
    ::operator delete (p, std::align_val_t{kLineBytes});
  }
  template <class U>
  bool operator==(const LineAllocator<U>&) const noexcept {
    return true;
  }
};
template <class T>
using LineVector = std::vector<T, LineAllocator<T>>;

template <class T, std::size_t N>
class LeasePool {
  struct alignas(kLineBytes) Slot {  // a slot's flag and value on no other slot's lines
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

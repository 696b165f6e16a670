// The one thread that runs every libtorch call of the process's models.
//
// libtorch parallelises on OpenMP, and libgomp gives each thread that starts
// parallel work a team of its own. Once the teams together hold more
// threads than the machine has cores, libgomp stops spinning between
// parallel regions (its "throttled" wait): every one of a forward's
// hundreds of regions then waits for its workers to be woken. A model
// loaded on one thread and run on another (an infer stage's), or two infer
// stages, made two teams: yolov8n's forward took 40 ms instead of 29 on 2
// cores. So every libtorch call of a model (load, freeze, the first run,
// each forward, the pool's size) runs here, on one team.
//
// The hand-over allocates nothing and takes no lock: callers take a ticket
// and wait for their turn, post their call, and wait for it to finish, on
// 32-bit atomics and Linux futexes.
// The thread is created at first use and lives as long as the process.

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <thread>

#include "neat/kernels/model.hpp"

namespace neat {
namespace {

using Word = std::atomic<std::uint32_t>;
static_assert(sizeof(Word) == sizeof(std::uint32_t) && Word::is_always_lock_free);

// Sleeps while `word` holds `old` (returns at once if it does not).
void wait_while(Word& word, std::uint32_t old) noexcept {
  while (word.load(std::memory_order_acquire) == old)
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, old, nullptr,
            nullptr, 0);
}
void wake_all(Word& word) noexcept {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

class TorchThread {
 public:
  using Call = void (*)(void*) noexcept;

  static TorchThread& instance() {
    static auto* thread = new TorchThread();  // never destroyed: idle at exit
    return *thread;
  }

  bool here() const noexcept { return std::this_thread::get_id() == id_; }

  void run(Call call, void* context) noexcept {
    if (here()) {  // a call from a call: at once
      call(context);
      return;
    }
    const std::uint32_t ticket = next_.fetch_add(1, std::memory_order_relaxed);
    wait_until(ticket);  // the calls before ours are done
    call_ = call;
    context_ = context;
    posted_.store(ticket + 1, std::memory_order_release);
    wake_all(posted_);
    wait_until(ticket + 1);  // ours is done (the next may be done too by the time we look)
  }

 private:
  TorchThread() {
    std::thread t([this] { loop(); });
    pthread_setname_np(t.native_handle(), "neat-torch");
    id_ = t.get_id();
    t.detach();
  }

  // Until `served` calls are finished. The counters wrap at 2^32: compared
  // by their difference, which stays far below 2^31 (one in-flight call per
  // waiting thread).
  void wait_until(std::uint32_t served) noexcept {
    for (std::uint32_t s = served_.load(std::memory_order_acquire);
         static_cast<std::int32_t>(s - served) < 0; s = served_.load(std::memory_order_acquire))
      wait_while(served_, s);
  }

  [[noreturn]] void loop() noexcept {
    std::uint32_t done = 0;
    for (;;) {
      wait_while(posted_, done);
      call_(context_);
      served_.store(++done, std::memory_order_release);
      wake_all(served_);
    }
  }

  std::thread::id id_;
  Word next_{0};         // the next caller's ticket
  Word served_{0};       // calls finished (the ticket whose turn it is)
  Word posted_{0};       // calls posted
  Call call_ = nullptr;  // the posted call (written in its turn only)
  void* context_ = nullptr;
};

}  // namespace

namespace detail {
void run_on_torch_thread(void (*call)(void*) noexcept, void* context) noexcept {
  TorchThread::instance().run(call, context);
}
}  // namespace detail

bool on_torch_thread_now() noexcept {
  return TorchThread::instance().here();
}

}  // namespace neat

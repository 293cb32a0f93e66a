// SPDX-License-Identifier: BSL-1.0
#pragma once
// The timer: one thread per process that fires timer entries at their deadlines. It serves
// what must wait for a time without holding a thread: a coroutine's sleep_for/sleep_until,
// the deadline of a coroutine's timed channel operation or select, and the timer channels
// spindle::after and spindle::tick.
//
// Design: a binary min-heap of intrusive entries under a mutex (the heap of Go's runtime timers
// before 1.14, and of tokio's early timer), with each entry's heap index kept in the entry so
// that cancelling is O(log n) and allocates nothing. The thread sleeps on its parker until the
// earliest deadline; `add` wakes it only when the new entry becomes the earliest.
//
// Firing runs the entry's callback on the timer thread, outside the lock. Callbacks are short
// and never block: they select a waiter and hand its coroutine to its executor, or try_send
// into a timer channel.
//
// Lifetime: an entry lives in its owner (an awaiter in a coroutine frame, or a heap record of a
// timer channel). `cancel()` returns only once the entry is out of the heap and its callback is
// not running, so the owner may then destroy it. The service itself is never destroyed (a
// leaked singleton, started on first use): its thread may still sleep when static destructors
// run, and entries may still be queued at exit.
//
// Synchronization: `mu_` guards the heap, every entry's `index` and `firing_`. `firing_` is
// also an atomic so that cancel() can wait for a running callback without taking the lock
// (which the timer thread needs to clear the mark); that read is a hint, the lock decides. The
// thread's parker publishes nothing: the thread re-reads the heap under the lock.
//
// Under the model checker (SPINDLE_MODEL_CHECK) the timer is one service per model execution
// (model::execution_local), its thread a model thread that waits on the parker in virtual
// time: the scheduler may end its timed park at any scheduling point, which lets the earliest
// deadline pass (model::let_time_pass) and fires the entry, so every step of add, cancel and
// fire interleaves with the code under test. The service is stopped and its thread joined when
// the execution's body returns, and it checks then that no entry is still queued. An entry
// checks when it is destroyed that it is not queued: an owner that frees its entry while the
// heap still holds it fails the execution at once, before the memory is reused. An entry may
// be destroyed while its callback still runs, once the callback is past its last access (a
// sleep's callback resumes the coroutine that owns it), so a cancel() that returns during a
// callback is caught by what the callback touches afterwards (tests/model/timer_test.cpp), not
// here. Deadlines are compared with model::now(): the real clock, or the virtual time let pass
// if later (tests/model/README.md).

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/parker.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// One deadline and what to do at it.
struct timer_entry {
  using fire_fn = void (*)(timer_entry*) noexcept;
  static constexpr std::size_t not_queued = static_cast<std::size_t>(-1);

  steady_time when{};
  fire_fn fire = nullptr;
  // The owner of the entry, for its fire function.
  void* context = nullptr;
  // Guarded by the service's mutex: the entry's position in the heap, or not_queued.
  std::size_t index = not_queued;

#if defined(SPINDLE_MODEL_CHECK)
  timer_entry() = default;
  timer_entry(timer_entry const&) = default;
  auto operator=(timer_entry const&) -> timer_entry& = default;
  // Checks that the service no longer holds the entry (defined below timer_service).
  ~timer_entry();
#endif
};

class timer_service {
 public:
  /// The process's timer; starts its thread on first use.
  /// Throws: std::system_error if the thread cannot start; std::bad_alloc.
  static auto instance() -> timer_service& {
#if defined(SPINDLE_MODEL_CHECK)
    // One per model execution, deleted when its body returns (see the file comment).
    return ::spindle::model::execution_local<timer_service>([] { return new timer_service; });
#else
    // Leaked on purpose: see "Lifetime" above.
    static timer_service* const service = new timer_service;
    return *service;
#endif
  }

#if defined(SPINDLE_MODEL_CHECK)
  timer_service(timer_service const&) = delete;
  auto operator=(timer_service const&) -> timer_service& = delete;

  /// The end of a model execution: checks that no entry is left, stops the thread and joins it.
  ~timer_service() {
    {
      std::lock_guard lock(mu_);
      ::spindle::model::check(heap_.empty(),
                              "a timer entry is still queued when the execution's body returns");
      stopping_ = true;
    }
    wake_.unpark();
    thread_->join();
  }

  /// Fails the model execution if `e` is still queued (its owner frees it under the heap).
  static void check_released(timer_entry const& e) noexcept {
    auto* const self = ::spindle::model::find_execution_local<timer_service>();
    if (self == nullptr) {
      return;
    }
    std::lock_guard lock(self->mu_);
    ::spindle::model::check(e.index == timer_entry::not_queued,
                            "a timer entry is destroyed while still queued");
  }
#endif

  /// Queues `e` to fire at e.when (at once if that has passed).
  /// Throws: std::bad_alloc when the heap cannot grow (`e` is not queued).
  void add(timer_entry& e) {
    bool earliest = false;
    {
      std::lock_guard lock(mu_);
      heap_.push_back(&e);
      e.index = heap_.size() - 1;
      sift_up(e.index);
      earliest = heap_.front() == &e;
    }
    if (earliest) {
      wake_.unpark();
    }
  }

  /// Removes `e` if it is queued and returns true if it was (it will not fire again), false
  /// if it was not queued. Either way, waits until a callback of `e` running on the timer
  /// thread has returned (a callback that queued `e` again is removed as well). Afterwards
  /// the service does not touch `e`, and the owner may destroy it; called from `e`'s own
  /// callback (on the timer thread), it returns at once, and the callback still runs.
  auto cancel(timer_entry& e) noexcept -> bool {
    bool removed = false;
    for (;;) {
#if defined(SPINDLE_MODEL_CHECK)
      std::uint32_t seen = 0;
#endif
      {
        std::lock_guard lock(mu_);
        if (e.index != timer_entry::not_queued) {
          remove_at(e.index);
          removed = true;
        }
        // relaxed: written under mu_, which we hold.
        if (firing_.load(std::memory_order_relaxed) != &e ||
            std::this_thread::get_id() == thread_id_) {
          // Not firing, or firing on this very thread (a callback that resumed a coroutine
          // inline, which then cancels): the service will not touch `e` again.
          return removed;
        }
#if defined(SPINDLE_MODEL_CHECK)
        // relaxed: written under mu_, which we hold.
        seen = fired_.load(std::memory_order_relaxed);
#endif
      }
      // Its callback runs now on the timer thread, and is short. Wait without the lock, which
      // the thread needs to clear the mark.
#if defined(SPINDLE_MODEL_CHECK)
      // The model sleeps until the thread counts the callback done instead: the checker treats
      // two spinning threads as a livelock even when one of them (a callback's try_send that
      // lost a race with the close this cancel follows) would leave its loop next step.
      futex_wait(fired_, seen);
#else
      do {
        thread_yield();
        // relaxed: a hint; the check under mu_ above decides, and its lock orders the callback
        // before our return (the thread clears the mark under mu_ after the callback).
      } while (firing_.load(std::memory_order_relaxed) == &e);
#endif
    }
  }

  /// The number of queued entries (a snapshot), for tests that check that dropped timers do
  /// not pile up.
  [[nodiscard]] auto queued() noexcept -> std::size_t {
    std::lock_guard lock(mu_);
    return heap_.size();
  }

 private:
#if defined(SPINDLE_MODEL_CHECK)
  timer_service() : thread_(std::make_unique<os_thread>([this] { run(); })) {}
#else
  timer_service() {
    std::thread([this] { run(); }).detach();
  }
#endif

  /// The time deadlines are compared with: the model's virtual time under the checker.
  static auto now() noexcept -> steady_time {
#if defined(SPINDLE_MODEL_CHECK)
    return ::spindle::model::now();
#else
    return std::chrono::steady_clock::now();
#endif
  }

  void run() noexcept {
    std::unique_lock lock(mu_);
    // Under the lock: cancel() compares it under the lock; until now no callback can run.
    thread_id_ = std::this_thread::get_id();
    while (!stopping_) {
      if (heap_.empty()) {
        lock.unlock();
        wake_.park();
        lock.lock();
        continue;
      }
      timer_entry* const first = heap_.front();
      if (first->when > now()) {
        auto const when = first->when;
        lock.unlock();
        bool const woken = wake_.park_until(when);
#if defined(SPINDLE_MODEL_CHECK)
        if (!woken) {
          // The scheduler ended the timed park: virtual time reaches the deadline.
          ::spindle::model::let_time_pass(when);
        }
#else
        static_cast<void>(woken);
#endif
        lock.lock();
        continue;
      }
      remove_at(0);
      // relaxed: under mu_; the atomic only serves cancel()'s wait without the lock.
      firing_.store(first, std::memory_order_relaxed);
      lock.unlock();
      first->fire(first);
      lock.lock();
      // relaxed: under mu_, as above.
      firing_.store(nullptr, std::memory_order_relaxed);
#if defined(SPINDLE_MODEL_CHECK)
      // relaxed: under mu_; the cancel() that sleeps on it re-checks under mu_.
      fired_.fetch_add(1, std::memory_order_relaxed);
      futex_wake_all(fired_);
#endif
    }
  }

  void place(std::size_t i, timer_entry* e) noexcept {
    heap_[i] = e;
    e->index = i;
  }

  void sift_up(std::size_t i) noexcept {
    timer_entry* const e = heap_[i];
    while (i > 0) {
      std::size_t const parent = (i - 1) / 2;
      if (!(e->when < heap_[parent]->when)) {
        break;
      }
      place(i, heap_[parent]);
      i = parent;
    }
    place(i, e);
  }

  void sift_down(std::size_t i) noexcept {
    timer_entry* const e = heap_[i];
    std::size_t const n = heap_.size();
    for (;;) {
      std::size_t child = 2 * i + 1;
      if (child >= n) {
        break;
      }
      if (child + 1 < n && heap_[child + 1]->when < heap_[child]->when) {
        ++child;
      }
      if (!(heap_[child]->when < e->when)) {
        break;
      }
      place(i, heap_[child]);
      i = child;
    }
    place(i, e);
  }

  void remove_at(std::size_t i) noexcept {
    timer_entry* const gone = heap_[i];
    timer_entry* const last = heap_.back();
    heap_.pop_back();
    gone->index = timer_entry::not_queued;
    if (last != gone) {
      place(i, last);
      sift_down(i);
      sift_up(last->index);
    }
  }

  mutex mu_;
  std::vector<timer_entry*> heap_;
  // Written under mu_ by the thread; read under mu_, or as a hint by cancel()'s wait.
  atomic<timer_entry*> firing_{nullptr};
  // Set by the thread when it starts, under the lock.
  std::thread::id thread_id_;
  // Owned by the timer thread: it parks, add() unparks.
  parker wake_;
#if defined(SPINDLE_MODEL_CHECK)
  // Guarded by mu_: the execution's body has returned, the thread leaves.
  bool stopping_ = false;
  // Callbacks returned, counted under mu_: what cancel() sleeps on while one runs.
  atomic<std::uint32_t> fired_{0};
  std::unique_ptr<os_thread> thread_;
#else
  // The process's timer never stops.
  static constexpr bool stopping_ = false;
#endif
};

#if defined(SPINDLE_MODEL_CHECK)
inline timer_entry::~timer_entry() {
  timer_service::check_released(*this);
}
#endif

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

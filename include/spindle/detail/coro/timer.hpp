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
// Synchronization: `mu_` guards the heap, every entry's `index` and `firing_`. The thread's
// parker publishes nothing: the thread re-reads the heap under the lock.
//
// Not for the model checker: the thread is a real std::thread with real time. The model tests
// of select and coroutines use no timer.

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/parker.hpp>

#include <chrono>
#include <cstddef>
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
};

class timer_service {
 public:
  /// The process's timer; starts its thread on first use.
  /// Throws: std::system_error if the thread cannot start; std::bad_alloc.
  static auto instance() -> timer_service& {
    // Leaked on purpose: see "Lifetime" above.
    static timer_service* const service = new timer_service;
    return *service;
  }

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

  /// Removes `e` if it has not fired; returns true if so. Otherwise waits until its callback
  /// has returned, and returns false. Afterwards the service does not touch `e`.
  auto cancel(timer_entry& e) noexcept -> bool {
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (e.index != timer_entry::not_queued) {
          remove_at(e.index);
          return true;
        }
        if (firing_ != &e || std::this_thread::get_id() == thread_id_) {
          // Not queued, and not firing, or firing on this very thread (a callback that
          // resumed a coroutine inline, which then cancels): it will not touch `e` again.
          return false;
        }
      }
      // Its callback runs now on the timer thread, and is short.
      thread_yield();
    }
  }

 private:
  timer_service() {
    std::thread t([this] { run(); });
    thread_id_ = t.get_id();
    t.detach();
  }

  [[noreturn]] void run() noexcept {
    std::unique_lock lock(mu_);
    for (;;) {
      if (heap_.empty()) {
        lock.unlock();
        wake_.park();
        lock.lock();
        continue;
      }
      timer_entry* const first = heap_.front();
      auto const now = std::chrono::steady_clock::now();
      if (first->when > now) {
        auto const when = first->when;
        lock.unlock();
        static_cast<void>(wake_.park_until(when));
        lock.lock();
        continue;
      }
      remove_at(0);
      firing_ = first;
      lock.unlock();
      first->fire(first);
      lock.lock();
      firing_ = nullptr;
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
  timer_entry* firing_ = nullptr;
  std::thread::id thread_id_;
  // Owned by the timer thread: it parks, add() unparks.
  parker wake_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

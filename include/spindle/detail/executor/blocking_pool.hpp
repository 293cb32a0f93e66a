// SPDX-License-Identifier: BSL-1.0
#pragma once
// The blocking pool behind executor::spawn_blocking: a bounded, growable set of threads for
// calls that block (file I/O, a legacy blocking API), so that they never hold the executor's
// workers.
//
// Policy, after tokio's blocking pool (tokio/src/runtime/blocking/pool.rs, `Spawner::spawn_task`
// and `Inner::run`): a submitted task goes to an idle thread if there is one; otherwise a new
// thread starts, as long as fewer than `max_threads` exist; otherwise the task waits in a FIFO
// queue, which is unbounded (the bound is on threads, not on tasks). Threads start lazily (none
// at construction). A thread with nothing to do waits up to `keep_alive`, asleep, then exits.
// As in tokio, a thread is started while the pool's lock is held, so shutdown always finds
// every thread that will ever exist.
//
// Threads are never detached. A thread that exits puts its record on the exited list; the
// next submit joins it (the thread has only its return left to run) and frees the record, and
// shutdown joins every thread.
//
// Protocol. All state (the queue, the idle list, the counts, the shutdown flag) is guarded by
// one detail::mutex, `lock_`; each thread has a parker, its only wake-up channel.
//   (S) submit: under lock_, refuses after shutdown began, then pushes the task, and
//       - if a thread is idle: unlinks the most recently idle one (LIFO, so the least recently
//         used ones time out), sets its `woken` flag and unparks it, still under lock_;
//       - else, if fewer than max_threads threads exist: starts one (it counts at once);
//       - else: leaves the task queued for a busy thread.
//   (W) a thread, under lock_: runs queued tasks (popping one, running it unlocked) until the
//       queue is empty; exits if shutdown began; else links itself into the idle list and
//       sleeps on its parker until `keep_alive` passes. When it wakes it takes lock_ again:
//       `woken` set means a submitter or shutdown chose it, and it goes back to the queue;
//       otherwise, if the wait timed out, it unlinks itself and exits, uncounting itself in
//       the same critical section; otherwise the token was a stale one (below) and it sleeps
//       again until the same deadline.
// No lost wake-up: a thread becomes idle only under lock_ and with the queue empty, and a
// submitter sees it idle under the same lock, so "queued while a thread is idle" never holds
// outside lock_. A submitter that wakes a thread sets `woken` before it unparks; the parker
// keeps a token that arrives before the park; and a thread whose keep-alive ran out decides to
// exit only under lock_ and only if nobody set `woken`, so a task is never handed to a thread
// that has decided to leave: either the submitter saw the thread idle and the thread sees
// `woken`, or the thread had uncounted itself and the submitter starts another. A timeout that
// races the unpark may leave the token unconsumed; the next park then returns at once with
// `woken` clear, which the loop of (W) treats as spurious. Invariants at every release of
// lock_: a thread in the idle list implies an empty queue; a non-empty queue implies a counted
// thread (submit refuses a task, and throws, when it cannot start the first thread).
// No task lost at shutdown: shutdown sets the flag under lock_, so every submit is either in
// the queue before it or refused (std::logic_error, the task not taken); it wakes every idle
// thread; each thread empties the queue before it looks at the flag, and the queue only
// shrinks once the flag is set; so when the last thread exits every accepted task has run.
// Shutdown then joins them all.
//
// Synchronization: lock_ publishes the task (pushed by the submitter, popped by the thread)
// and every field below it; the unpark under lock_ needs no ordering of its own. `done_` is
// the one atomic the pool adds: the release store of the shutdown that joined the threads,
// read (acquire) by concurrent shutdown callers, which return only after the joins.
//
// Hooks: on_thread_start and on_thread_stop run on the pool thread, with its index (0, 1, ...
// in the order the pool started them; an index is never reused). An exception that escapes
// one goes to `on_error` if set (on the same thread; an exception escaping on_error
// terminates); without on_error the pool prints "spindle: an exception escaped a blocking
// thread's start/stop hook" and calls std::terminate.
//
// Threads: detail::native_thread, as the executor's workers: on Linux pthread_create with
// `stack_size` when not 0 (rounded up to whole pages), and each thread names itself
// "<name_prefix>-<name_tag><index>" (the prefix shortened so that the whole fits Linux's 15
// bytes and the tag and number are never cut; an empty prefix leaves the name alone). Elsewhere,
// and under the model checker, an os_thread with the name and stack size ignored.
//
// Preconditions: shutdown() and the destructor are not called from a thread of the same pool
// (shutdown() throws std::logic_error there; the destructor would terminate). An owner that
// must refuse such a call before changing state of its own asks on_own_thread() first.

#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/native_thread.hpp>
#include <spindle/detail/sync/parker.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Throws std::invalid_argument, naming `option` (the setting as the user spelled it), for a
/// thread stack size that is not 0 and is below the system's minimum, or so large that
/// rounding it up to whole pages (detail/sync/native_thread.hpp) would wrap around.
inline void check_stack_size(std::size_t bytes, char const* option) {
#if defined(SPINDLE_PTHREAD_THREADS)
  if (bytes == 0) {
    return;
  }
  long const min = ::sysconf(_SC_THREAD_STACK_MIN);
  if (min > 0 && bytes < static_cast<std::size_t>(min)) {
    throw std::invalid_argument(std::string(option) +
                                " is below the system's minimum (sysconf(_SC_THREAD_STACK_MIN) = " +
                                std::to_string(min) + " bytes)");
  }
  long const page = ::sysconf(_SC_PAGESIZE);
  std::size_t const p = page > 0 ? static_cast<std::size_t>(page) : 4096;
  if (bytes > std::numeric_limits<std::size_t>::max() - (p - 1)) {
    throw std::invalid_argument(std::string(option) + " is too large to round up to whole pages (" +
                                std::to_string(p) + " bytes)");
  }
#else
  static_cast<void>(bytes);
  static_cast<void>(option);
#endif
}

struct blocking_pool_options {
  /// Bound on the threads alive at once (tokio's default is 512). At least 1.
  std::size_t max_threads = 512;
  /// An idle thread exits after waiting this long for work; zero or less: at once.
  std::chrono::milliseconds keep_alive{10'000};
  /// Called on each new thread, with its index, before it runs a task.
  std::function<void(std::size_t)> on_thread_start;
  /// Called on each thread, with its index, after its last task, before it exits.
  std::function<void(std::size_t)> on_thread_stop;
  /// Receives an exception that escaped on_thread_start or on_thread_stop (see the file
  /// comment); unset: print and terminate.
  std::function<void(std::exception_ptr)> on_error;
  /// Thread names are "<name_prefix>-<name_tag><index>", the prefix shortened so that the
  /// whole fits 15 bytes (Linux) and the tag and index are kept whole.
  std::string name_prefix = "spindle-blk";
  std::string name_tag;
  /// Stack size of each thread in bytes; 0: the system's default.
  std::size_t stack_size = 0;
};

class blocking_pool {
 public:
  /// Starts no thread.
  /// Throws: std::invalid_argument if max_threads is 0 or stack_size is not 0 and below the
  /// system's minimum (sysconf(_SC_THREAD_STACK_MIN)) or too large to round up to whole pages.
  explicit blocking_pool(blocking_pool_options opts) : opts_(std::move(opts)) {
    if (opts_.max_threads == 0) {
      throw std::invalid_argument("spindle: blocking_pool_options::max_threads is 0");
    }
    check_stack_size(opts_.stack_size, "spindle: blocking_pool_options::stack_size");
  }

  blocking_pool(blocking_pool const&) = delete;
  auto operator=(blocking_pool const&) -> blocking_pool& = delete;

  /// shutdown(): every accepted task runs, every thread is joined.
  ~blocking_pool() { shutdown(); }

  /// Hands `t` to a pool thread, which runs `t->run(t)` (the task releases itself). (S) above.
  /// Throws: std::logic_error once shutdown began; std::system_error (or std::bad_alloc) when
  /// no thread exists and none can start; std::bad_alloc from the queue. Whenever it throws,
  /// `t` was not accepted: it is not run and not freed, the caller still owns it. (A thread
  /// that cannot start while others exist leaves the task queued for them: accepted.)
  void submit(task* t) {
    std::lock_guard<mutex> guard(lock_);
    if (shutdown_) {
      throw std::logic_error("spindle: blocking_pool::submit after shutdown began");
    }
    reap_exited();
    queue_.push_back(t);
    if (idle_head_ != nullptr) {
      wake(pop_idle());
      return;
    }
    if (threads_ < opts_.max_threads) {
      try {
        start_thread();
      } catch (...) {
        if (threads_ == 0) {
          // Nobody would ever run it: not accepted. Still under lock_, so it is the last.
          queue_.pop_back();
          throw;
        }
      }
    }
  }

  /// Refuses new tasks, lets every accepted task run to completion, then joins every thread.
  /// Idempotent; a concurrent caller returns once the first one has joined the threads.
  /// Throws: std::logic_error when called from a thread of this pool (it would join itself).
  void shutdown() {
    if (current_pool() == this) {
      throw std::logic_error("spindle: blocking_pool::shutdown from one of its own threads");
    }
    std::list<worker> all;
    bool first = false;
    {
      std::lock_guard<mutex> guard(lock_);
      if (!shutdown_) {
        first = true;
        shutdown_ = true;
        while (idle_head_ != nullptr) {
          wake(pop_idle());
        }
        // No thread starts after the flag (submit refuses first), so these are all of them.
        all.splice(all.end(), workers_);
      }
    }
    if (!first) {
      // acquire: pairs with the release store below, made by the first caller once it has
      // joined every thread.
      while (done_.load(std::memory_order_acquire) == 0) {
        futex_wait(done_, 0);
      }
      return;
    }
    for (worker& w : all) {
      join(w);
    }
    {
      std::lock_guard<mutex> guard(lock_);
      // The records are in `all`; nothing may reach them through the list any more.
      exited_ = nullptr;
    }
    all.clear();
    // release: pairs with the acquire load of a later or concurrent shutdown() above: the
    // joins happen-before it returns.
    done_.store(1, std::memory_order_release);
    futex_wake_all(done_);
  }

  /// Whether the calling thread is one of this pool's threads (shutdown() would throw there).
  [[nodiscard]] auto on_own_thread() const noexcept -> bool { return current_pool() == this; }

  /// Threads alive now (started and not yet decided to exit).
  [[nodiscard]] auto threads() const noexcept -> std::size_t {
    std::lock_guard<mutex> guard(lock_);
    return threads_;
  }

  /// Threads waiting for work now.
  [[nodiscard]] auto idle_threads() const noexcept -> std::size_t {
    std::lock_guard<mutex> guard(lock_);
    return idle_;
  }

  /// Tasks accepted and not yet started.
  [[nodiscard]] auto queued() const noexcept -> std::size_t {
    std::lock_guard<mutex> guard(lock_);
    return queue_.size();
  }

 private:
  struct worker {
    worker(blocking_pool* p, std::size_t i) noexcept : pool(p), index(i) {}
    worker(worker const&) = delete;
    auto operator=(worker const&) -> worker& = delete;

    blocking_pool* pool;
    std::size_t index;
    std::list<worker>::iterator self;       // this record's node in workers_
    parker park;                            // owned by the thread; unparked by wake()
    std::unique_ptr<native_thread> thread;  // set by launch(); joined before the record dies
    // Guarded by lock_:
    bool woken = false;  // set by wake(): go back to the queue
    worker* idle_prev = nullptr;
    worker* idle_next = nullptr;
    worker* next_exited = nullptr;
  };

  static auto current_pool() noexcept -> blocking_pool const*& {
    thread_local blocking_pool const* pool = nullptr;
    return pool;
  }

  // Called with lock_ held; may throw (then no thread started and nothing changed).
  void start_thread() {
    auto it = workers_.emplace(workers_.end(), this, next_index_);
    worker& w = *it;
    w.self = it;
    try {
      launch(w);
    } catch (...) {
      workers_.erase(it);
      throw;
    }
    ++next_index_;
    ++threads_;
  }

  // Starts w's thread, named "<name_prefix>-<name_tag><index>" (detail/sync/native_thread.hpp
  // shortens the prefix to fit). Throws std::system_error when it cannot start (the body is
  // not run).
  void launch(worker& w) {
    thread_settings settings;
    settings.name = thread_name_for(opts_.name_prefix, opts_.name_tag.c_str(), w.index);
    settings.stack_size = opts_.stack_size;
    w.thread = std::make_unique<native_thread>(std::move(settings), [&w] { w.pool->run(w); });
  }

  static void join(worker& w) noexcept {
    try {
      w.thread->join();
    } catch (...) {
      // pthread_join fails only for a thread that is not joinable or is the caller; neither
      // happens to a thread on the exited list, joined once by a thread of another pool.
    }
  }

  // Called with lock_ held. A thread on the exited list has left run() and only returns.
  void reap_exited() noexcept {
    while (exited_ != nullptr) {
      worker* w = exited_;
      exited_ = w->next_exited;
      join(*w);
      workers_.erase(w->self);
    }
  }

  // Called with lock_ held.
  void wake(worker* w) noexcept {
    w->woken = true;
    // Under lock_: once the lock is released the thread may run, exit, and be reaped.
    w->park.unpark();
  }

  void push_idle(worker& w) noexcept {
    w.idle_prev = nullptr;
    w.idle_next = idle_head_;
    if (idle_head_ != nullptr) {
      idle_head_->idle_prev = &w;
    }
    idle_head_ = &w;
    ++idle_;
  }

  void unlink_idle(worker& w) noexcept {
    if (w.idle_prev != nullptr) {
      w.idle_prev->idle_next = w.idle_next;
    } else {
      idle_head_ = w.idle_next;
    }
    if (w.idle_next != nullptr) {
      w.idle_next->idle_prev = w.idle_prev;
    }
    w.idle_prev = nullptr;
    w.idle_next = nullptr;
    --idle_;
  }

  auto pop_idle() noexcept -> worker* {
    worker* w = idle_head_;
    unlink_idle(*w);
    return w;
  }

  // A pool thread's body: (W) in the file comment.
  void run(worker& w) noexcept {
    current_pool() = this;
    run_hook(opts_.on_thread_start, w.index);
    {
      std::unique_lock<mutex> lk(lock_);
      for (;;) {
        while (!queue_.empty()) {
          task* t = queue_.front();
          queue_.pop_front();
          lk.unlock();
          t->run(t);
          lk.lock();
        }
        if (shutdown_ || !wait_for_work(w, lk)) {
          break;
        }
      }
      --threads_;
    }
    run_hook(opts_.on_thread_stop, w.index);
    current_pool() = nullptr;
    std::lock_guard<mutex> guard(lock_);
    w.next_exited = exited_;
    exited_ = &w;
  }

  // Called with lock_ held (through lk), the queue empty. Returns true when woken (work or
  // shutdown), false when keep_alive ran out first; the thread is then out of the idle list.
  auto wait_for_work(worker& w, std::unique_lock<mutex>& lk) noexcept -> bool {
    push_idle(w);
    steady_time const deadline = deadline_after(opts_.keep_alive);
    for (;;) {
      lk.unlock();
      bool const token = w.park.park_until(deadline);
      lk.lock();
      if (w.woken) {
        w.woken = false;
        return true;
      }
      if (!token) {
        unlink_idle(w);
        return false;
      }
      // A stale token: a wake whose timeout race left it unconsumed. Sleep on.
    }
  }

  void run_hook(std::function<void(std::size_t)> const& hook, std::size_t index) noexcept {
    if (!hook) {
      return;
    }
    try {
      hook(index);
    } catch (...) {
      if (opts_.on_error) {
        opts_.on_error(std::current_exception());
        return;
      }
      std::fputs("spindle: an exception escaped a blocking thread's start/stop hook\n", stderr);
      std::terminate();
    }
  }

  blocking_pool_options const opts_;
  mutable mutex lock_;
  // Guarded by lock_:
  std::deque<task*> queue_;
  std::list<worker> workers_;    // every thread not yet joined
  worker* idle_head_ = nullptr;  // most recently idle first
  worker* exited_ = nullptr;     // left run(), not yet joined
  std::size_t threads_ = 0;      // counted from start to the decision to exit
  std::size_t idle_ = 0;         // length of the idle list
  std::size_t next_index_ = 0;
  bool shutdown_ = false;
  // 1 once the shutdown that joined the threads is done with them.
  atomic<std::uint32_t> done_{0};
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

// SPDX-License-Identifier: BSL-1.0
#pragma once
// The model checker's threads: the record of each model thread (its run state, the futex word
// or thread it is blocked on, its spin state, its vector clocks and its x86-TSO store buffer)
// and the pool of OS threads that run model threads.
//
// Blocking. A model thread never blocks in the OS on the code's behalf: futex_wait, a timed
// wait and join only set its run_state (futex_wait / join_wait) and the execution schedules
// another thread; futex_wake and a thread's exit make the waiters runnable again. A timed wait
// may end by the scheduler's choice (virtual time). See execution.hpp.
//
// Thread safety: a thread_record is read and written only by the thread holding the
// execution's token; its `wake` condition variable is used with the execution's mutex. The
// thread_pool is shared by every execution of the process and guards its idle list with its
// own mutex. Progress: blocking (condition variables; this is test machinery, not library
// code, so it uses the standard primitives rather than spindle's own).
// Memory: one record per model thread (at most max_threads per execution); the pool keeps its
// idle OS threads until the process exits.
// Part of the model checker; include <spindle/model/scheduler.hpp>.

#include <spindle/model/options.hpp>
#include <spindle/model/race_detector.hpp>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace spindle::model::impl {

/// A store waiting in a thread's store buffer (store_buffering mode).
struct buffered_store {
  void* target = nullptr;        // the atomic's value
  void const* object = nullptr;  // the atomic
  std::size_t size = 0;
  std::uint64_t bits = 0;
  location* loc = nullptr;
  vector_clock release;  // what loc.release becomes when the store reaches memory
};

/// Candidate ids at or above this flush the store buffer of thread (id - flush_base).
inline constexpr int flush_base = static_cast<int>(max_threads);
/// Candidate ids at or above this let spinning thread (id - spin_out_base) spin out.
inline constexpr int spin_out_base = 2 * static_cast<int>(max_threads);
/// Scheduling points a spinning-out thread may skip (a spin loop's length before it parks).
inline constexpr std::uint32_t spin_out_budget = 1024;

enum class run_state : std::uint8_t { runnable, futex_wait, join_wait, finished };

struct thread_record {
  run_state state = run_state::runnable;
  void const* wait_word = nullptr;
  std::uint32_t wait_expected = 0;
  bool timed = false;
  bool timed_out = false;
  std::uint32_t timeouts = 0;  // timed waits ended by the scheduler in this execution
  int join_target = -1;
  std::uint64_t spin_epoch = ~std::uint64_t{0};
  std::uint64_t spin_out_epoch = 0;
  std::uint32_t spin_out_left = 0;  // > 0 while spinning out
  std::uint64_t spun_out_epoch = ~std::uint64_t{0};
  bool spin_out_forced = false;
  vector_clock clock;
  vector_clock release_fence;          // clock at this thread's last release (seq_cst) fence
  vector_clock acquire_pending;        // release clocks seen by relaxed loads, for a later fence
  std::vector<buffered_store> buffer;  // oldest first (store_buffering mode)
  std::uint64_t visible_seq = 0;       // weak_memory mode: every store up to this one is visible
  std::condition_variable wake;        // signalled when the token is handed to this thread
};

/// OS threads reused across executions (creating a thread per model thread per execution
/// dominates the cost, most of all under sanitizers). A thread of an abandoned (failed)
/// execution never comes back; the pool makes a new one when none is idle. The pool itself is
/// never destroyed: idle threads wait in it until the process exits.
class thread_pool {
 public:
  static auto instance() -> thread_pool& {
    static auto* const pool = new thread_pool();
    return *pool;
  }

  void run(std::function<void()> job) {
    std::unique_lock lk(mutex_);
    worker* w = nullptr;
    if (idle_.empty()) {
      w = new worker();
      std::thread([this, w] { loop(w); }).detach();
    } else {
      w = idle_.back();
      idle_.pop_back();
    }
    w->job = std::move(job);
    w->has_job = true;
    w->cv.notify_one();
  }

 private:
  struct worker {
    std::condition_variable cv;
    std::function<void()> job;
    bool has_job = false;
  };

  void loop(worker* w) {
    std::unique_lock lk(mutex_);
    for (;;) {
      w->cv.wait(lk, [w] { return w->has_job; });
      auto job = std::move(w->job);
      w->job = nullptr;
      w->has_job = false;
      lk.unlock();
      job();
      job = nullptr;
      lk.lock();
      idle_.push_back(w);
    }
  }

  std::mutex mutex_;
  std::vector<worker*> idle_;
};

}  // namespace spindle::model::impl

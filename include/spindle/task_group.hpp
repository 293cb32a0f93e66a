#pragma once
// spindle::task_group: structured fork-join over a spindle::executor.
//
// `g.spawn(f)` runs f on the executor; `g.wait()` returns once every task spawned into the
// group so far (and every task those tasks spawned into it) has finished, then rethrows the
// first exception any of them threw. The group can be reused after wait().
//
// Destroying a group whose tasks have not been waited for waits for them (the tasks may refer
// to the group's scope); an exception nobody observed is then handed to the executor's
// unhandled-exception handler instead of being dropped.
//
// Waiting from a worker of the same executor runs other tasks meanwhile (help-first); other
// threads sleep. Tasks of the group may spawn more tasks into the group.
//
// Algorithm: `pending_` counts unfinished tasks in its low bits; a waiter adds `waiter_bit`
// after publishing its completion. The task that brings the count to zero sees the bit and
// sets the waiter's completion. If the waiter's own fetch_add finds the count already zero, it
// does not wait.
//
// Synchronization:
//   pending_  RMW by spawn (+1), by finishing tasks (-1) and by the waiter (+/- waiter_bit).
//   waiter_   written by the waiter before its fetch_add (release), read by the finisher
//             that saw waiter_bit (acquire through the same RMW chain).
//   failed_, error_  first exception: failed_ CAS false->true wins the right to write error_,
//             which the waiter reads after the count reached zero (acq_rel RMW chain).
// Happens-before: whatever a task did is visible to the caller once wait() returns.
//
// Thread safety: spawn() from any thread; wait() from one thread at a time.
// Example: tests/task_group_test.cpp (Example).

#include <spindle/detail/atomic.hpp>
#include <spindle/detail/executor_latch.hpp>
#include <spindle/detail/task.hpp>
#include <spindle/executor.hpp>

#include <cstdint>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

namespace spindle {

class task_group {
 public:
  explicit task_group(executor& ex) noexcept : ex_(ex) {}

  task_group(task_group const&) = delete;
  auto operator=(task_group const&) -> task_group& = delete;

  /// Waits for unfinished tasks; see the file comment.
  ~task_group() {
    wait_all();
    if (auto e = take_error()) {
      ex_.core().report(std::move(e));
    }
  }

  /// Runs `fn` on the executor as part of this group. Its result, if any, is discarded.
  ///
  /// Throws: std::logic_error after the executor's shutdown (from a non-worker thread; fn is
  /// not run and not counted); std::bad_alloc.
  template <task_callable Fn>
  void spawn(Fn&& fn) {
    auto body = [this, f = std::decay_t<Fn>(std::forward<Fn>(fn))]() mutable noexcept {
      try {
        static_cast<void>(std::invoke(f));
      } catch (...) {
        record(std::current_exception());
      }
      finish();
    };
    using node = detail::posted_task<decltype(body)>;
    detail::node_ptr<node> owned(
        detail::new_node<node>(std::move(body), &detail::executor_core::report_thunk, &ex_.core()));
    // relaxed: the task is published by the queue push below; the count only has to be
    // raised before the task can finish, which program order guarantees.
    pending_.fetch_add(1, std::memory_order_relaxed);
    try {
      ex_.core().submit(owned.get());
    } catch (...) {
      finish();
      throw;
    }
    static_cast<void>(owned.release());
  }

  /// Waits for every task of the group, then rethrows the first exception one of them threw
  /// (the others are dropped).
  ///
  /// Throws: the first exception of the group's tasks.
  void wait() {
    wait_all();
    if (auto e = take_error()) {
      std::rethrow_exception(std::move(e));
    }
  }

 private:
  static constexpr std::uint64_t waiter_bit = std::uint64_t{1} << 63;

  void record(std::exception_ptr e) noexcept {
    bool expected = false;
    // relaxed: the CAS only elects the writer; error_ is published by finish()'s acq_rel RMW.
    if (failed_.compare_exchange_strong(expected, true, std::memory_order_relaxed,
                                        std::memory_order_relaxed)) {
      error_ = std::move(e);
    }
  }

  auto take_error() noexcept -> std::exception_ptr {
    // relaxed: read after wait_all(), which synchronised with every finish().
    if (!failed_.load(std::memory_order_relaxed)) {
      return nullptr;
    }
    // relaxed: as above; only the waiting thread resets it.
    failed_.store(false, std::memory_order_relaxed);
    return std::exchange(error_, nullptr);
  }

  void finish() noexcept {
    // acq_rel: release publishes this task's work (and error_) to the waiter; acquire orders
    // the read of waiter_ after the waiter's release of it (its fetch_add of waiter_bit).
    auto const old = pending_.fetch_sub(1, std::memory_order_acq_rel);
    if (old == (waiter_bit | 1)) {
      // SAFETY: the waiter saw a nonzero count, so it waits for this completion and neither
      // the group nor the completion dies before set(); set() touches nothing afterwards.
      // acquire: pairs with the release store in wait_all().
      waiter_.load(std::memory_order_acquire)->set();
    }
  }

  void wait_all() noexcept {
    // acquire: pairs with finish()'s release; nothing to wait for.
    if (pending_.load(std::memory_order_acquire) == 0) {
      return;
    }
    auto& core = ex_.core();
    detail::worker_ctx* const w = core.local();
    detail::completion done(w != nullptr ? &core.parker_of(*w) : &core.outside_parker());
    // release: publishes &done to the finisher's acquire load.
    waiter_.store(&done, std::memory_order_release);
    // acq_rel: release publishes waiter_ to the finisher whose fetch_sub sees the bit;
    // acquire makes every finished task's work visible when the count is already zero.
    auto const old = pending_.fetch_add(waiter_bit, std::memory_order_acq_rel);
    if (old == 0) {
      std::uint64_t expected = waiter_bit;
      // acq_rel: as the fetch_add above. If a concurrent spawn raised the count meanwhile,
      // the task that brings it back to zero has seen the bit and will set `done`: wait.
      if (pending_.compare_exchange_strong(expected, 0, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
        return;
      }
    }
    core.wait(done);
    // acq_rel: only this waiter sets or clears the bit; acquire keeps the tasks' effects
    // ordered before our return.
    pending_.fetch_sub(waiter_bit, std::memory_order_acq_rel);
  }

  executor& ex_;
  // INVARIANT: low 63 bits = unfinished tasks; waiter_bit set only inside wait_all().
  detail::atomic<std::uint64_t> pending_{0};
  detail::atomic<detail::completion*> waiter_{nullptr};
  detail::atomic<bool> failed_{false};
  std::exception_ptr error_;
};

}  // namespace spindle

#pragma once
// spindle::task_group: structured fork-join over a spindle::executor.
//
// `g.spawn(f)` runs f on the executor; `g.wait()` returns once every task spawned into the
// group before it was called (and every task those tasks spawned into it) has finished, then
// rethrows the first exception any of them threw. The group can be reused after wait(). A
// task spawned while wait() runs, from another thread, may or may not be waited for.
//
// Destroying a group whose tasks have not been waited for waits for them (the tasks may refer
// to the group's scope). A task's exception that nobody observed then goes:
// - when the group is destroyed by unwinding (an exception is in flight that was not in
//   flight when the group was made): nowhere, it is dropped. The exception that unwinds is
//   the one the caller sees, as with oneTBB's task_group, whose destructor does not throw
//   while unwinding; reporting the second one would terminate a program that is handling the
//   first.
// - otherwise (the group went out of scope without wait()): to the executor's
//   unhandled-exception handler, whose default prints "an exception escaped a task of a
//   spindle::task_group destroyed without wait()" and terminates.
//
// Waiting from a worker of the same executor runs other tasks meanwhile (help-first); other
// threads sleep. Tasks of the group may spawn more tasks into the group. wait() from two
// threads at once is a misuse reported in every build (message, then abort), never a hang;
// wait() from a task of the same group waits for itself and never returns.
//
// Algorithm: `pending_` counts unfinished tasks in its low bits; a waiter sets `waiter_bit`
// after publishing its completion. The task that brings the count to zero while the bit is
// set clears the bit in the same compare-exchange ((W1): count 1 plus the bit becomes 0), and
// only then sets the waiter's completion. So exactly one party owns the wake-up, and once the
// bit is gone no later task can see it: a task spawned after the waiter was released finds
// neither the bit nor the old completion, and never touches the returned waiter's frame nor
// wakes the next wait() early. If the waiter finds the count already zero, it clears its own
// bit with a compare-exchange ((W2): the bit alone becomes 0) and does not wait; (W1) and
// (W2) both expect the bit with their own view of the count, so at most one of them succeeds.
// A finisher touches the group after its decrement only when its (W1) succeeded, and then
// the waiter waits for its completion: the group outlives every access.
//
// Synchronization:
//   pending_  RMW by spawn (+1), by finishing tasks ((W1) compare-exchange loop) and by the
//             waiter (fetch_or of waiter_bit, (W2)).
//   waiter_   written by the waiter before its fetch_or (release), read by the finisher
//             whose (W1) removed the bit (acquire through the same RMW chain).
//   failed_, error_  first exception: failed_ CAS false->true wins the right to write error_,
//             which the waiter reads after the count reached zero (acq_rel RMW chain).
// Happens-before: whatever a task did is visible to the caller once wait() returns.
//
// Thread safety: spawn() from any thread; wait() from one thread at a time.
// Example: tests/task_group_test.cpp (Example).

#include <spindle/detail/executor/completion.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/executor.hpp>

#include <cstdint>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

class task_group {
 public:
  explicit task_group(executor& ex) noexcept : ex_(ex), uncaught_(std::uncaught_exceptions()) {}

  task_group(task_group const&) = delete;
  auto operator=(task_group const&) -> task_group& = delete;

  /// Waits for unfinished tasks; an exception nobody observed is dropped during unwinding and
  /// reported to the executor's handler otherwise (see the file comment).
  ~task_group() {
    wait_all();
    if (auto e = take_error()) {
      if (std::uncaught_exceptions() <= uncaught_) {
        detail::core_of(ex_).report(std::move(e), detail::report_origin::unwaited_task_group);
      }
    }
  }

  /// Runs `fn` on the executor as part of this group. Its result, if any, is discarded.
  ///
  /// Throws: std::logic_error after the executor's shutdown (from a non-worker thread; fn is
  /// not run and not counted); std::invalid_argument if fn is a null pointer to function or
  /// member; std::bad_alloc.
  template <task_callable Fn>
  void spawn(Fn&& fn) {
    detail::check_not_null(fn, "spindle::task_group::spawn: fn is a null pointer");
    auto body = [this, f = std::decay_t<Fn>(std::forward<Fn>(fn))]() mutable noexcept {
      try {
        static_cast<void>(std::invoke(f));
      } catch (...) {
        record(std::current_exception());
      }
      finish();
    };
    using node = detail::posted_task<decltype(body)>;
    detail::node_ptr<node> owned(detail::new_node<node>(
        std::move(body), &detail::executor_core::report_thunk, &detail::core_of(ex_)));
    // relaxed: the task is published by the queue push below; the count only has to be
    // raised before the task can finish, which program order guarantees.
    pending_.fetch_add(1, std::memory_order_relaxed);
    try {
      detail::core_of(ex_).submit(owned.get());
    } catch (...) {
      finish();
      throw;
    }
    static_cast<void>(owned.release());
  }

  /// Waits for every task spawned into the group before the call (and what they spawned
  /// into it), then rethrows the first exception one of them threw (the others are dropped).
  ///
  /// Preconditions: no other thread is in wait() of this group (checked in every build:
  /// message, then abort); not called from a task of this group.
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
    // relaxed: only a first guess for the compare-exchange below, which re-reads on failure.
    auto old = pending_.load(std::memory_order_relaxed);
    // (W1): the last task clears the waiter's bit in the same step as its decrement.
    // acq_rel: release publishes this task's work (and error_) to the waiter's acquire RMW or
    // load; acquire orders the read of waiter_ after the waiter's release fetch_or. relaxed on
    // failure: the loop retries with the value read.
    while (!pending_.compare_exchange_weak(old, old == (waiter_bit | 1) ? 0 : old - 1,
                                           std::memory_order_acq_rel, std::memory_order_relaxed)) {
    }
    if (old == (waiter_bit | 1)) {
      // SAFETY: this (W1) removed the bit, so the waiter's (W2) fails and it waits for this
      // completion: neither the group nor the completion dies before set(), and set() touches
      // nothing afterwards. acquire: pairs with the release store in wait_all().
      waiter_.load(std::memory_order_acquire)->set();
    }
  }

  void wait_all() noexcept {
    // acquire: pairs with finish()'s release; nothing to wait for.
    if (pending_.load(std::memory_order_acquire) == 0) {
      return;
    }
    auto& core = detail::core_of(ex_);
    detail::worker_ctx* const w = core.local();
    detail::completion done(w != nullptr ? &core.parker_of(*w) : &core.outside_parker());
    // release: publishes &done to the finisher's acquire load.
    waiter_.store(&done, std::memory_order_release);
    // acq_rel: release publishes waiter_ to the finisher whose (W1) removes the bit; acquire
    // makes every finished task's work visible when the count is already zero.
    auto const old = pending_.fetch_or(waiter_bit, std::memory_order_acq_rel);
    SPINDLE_CHECK((old & waiter_bit) == 0, "spindle::task_group::wait() from two threads at once");
    if (old == 0) {
      std::uint64_t expected = waiter_bit;
      // (W2) acq_rel: as the fetch_or above. If a spawn raised the count meanwhile, the task
      // that brings it back to zero removes the bit by (W1) and sets `done`: wait for it.
      if (pending_.compare_exchange_strong(expected, 0, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
        return;
      }
    }
    // The finisher's (W1) removed the bit before it set `done`.
    core.wait(done);
  }

  executor& ex_;
  int const uncaught_;  // std::uncaught_exceptions() when the group was made
  // INVARIANT: low 63 bits = unfinished tasks; waiter_bit set only while a wait_all() waits,
  // from its fetch_or to the (W1) or (W2) that removes it.
  detail::atomic<std::uint64_t> pending_{0};
  detail::atomic<detail::completion*> waiter_{nullptr};
  detail::atomic<bool> failed_{false};
  std::exception_ptr error_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
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
// Cancellation: cancel() marks the current round cancelled and requests stop on the group's
// std::stop_source (made on first use, so that a group per fork pays nothing for it). A task
// checks the mark when it starts: a marked task is skipped (its callable destroyed unrun,
// counted by skipped_tasks()) but still finishes in `pending_`, so the wait protocol above is
// unchanged. A task that takes a std::stop_token runs with the round's token and can end
// early. wait() reports the round as task_group_status::cancelled and clears the mark; a
// cancelled round's source is retired, not freed, until the group dies, since a task spawned
// concurrently with wait() may still hold it. oneTBB's task_group::cancel and
// task_group_status are the model of this interface.
//
// Thread safety: spawn() and cancel() from any thread; wait() from one thread at a time.
// Example: tests/task_group_test.cpp (Example).

#include <spindle/detail/executor/completion.hpp>
#include <spindle/detail/executor/diag.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/diagnostics.hpp>
#include <spindle/executor.hpp>

#include <cstdint>
#include <exception>
#include <memory>
#include <stop_token>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

namespace detail {
/// The heap node of task_group::spawn: the callable and its group. Running it runs (or, in a
/// cancelled round, skips) the callable, frees the node, which destroys the callable, and only
/// then reports the task finished: the callable's captures die before wait() can return (they
/// may refer to the waiter's scope), as a spawned task's do. A node that is never run (its
/// push failed) is freed with its callable by its owner.
template <class Group, class Fn>
class group_task final : public task {
 public:
  group_task(Fn&& fn, Group* group) : task(&run_and_free), fn_(std::move(fn)), group_(group) {}

 private:
  static void run_and_free(task* t) noexcept {
    auto* self = static_cast<group_task*>(t);
    Group* const group = self->group_;
    group->run_member(self->fn_);
    delete_node(self);
    group->finish();
  }

  Fn fn_;
  Group* group_;
};

/// A task group's stop source for one round, and the link of the group's list of retired ones
/// (a plain pointer, so that a group that is never cancelled destroys nothing but two nulls).
struct group_stop_source {
  std::stop_source source;
  group_stop_source* retired_next = nullptr;
};
}  // namespace detail

/// What task_group::wait() reports about the round it waited for.
///
/// A bare enum, unlike the results of the channel and executor operations (a struct with
/// `explicit operator bool` and `is_*()`, [[nodiscard]], channel_result.hpp): those calls can
/// fail, and a result dropped unread hides a value that was not sent or a task that was not
/// accepted. wait() cannot fail (an exception of a task is rethrown, not returned); its status
/// only says whether cancel() was called in the round, which the caller that did not cancel
/// has no use for, so `tg.wait();` must compile without a cast, as oneTBB's does.
enum class task_group_status : std::uint8_t {
  complete,  ///< every task ran (or threw: wait() rethrew the first exception)
  cancelled  ///< cancel() was called: tasks that had not started were skipped
};

class task_group {
 public:
  explicit task_group(executor& ex) noexcept : ex_(ex), uncaught_(std::uncaught_exceptions()) {}

  task_group(task_group const&) = delete;
  auto operator=(task_group const&) -> task_group& = delete;

  /// Waits for unfinished tasks; an exception nobody observed is dropped during unwinding and
  /// reported to the executor's handler otherwise (see the file comment).
  ~task_group() {
    wait_all();
    // relaxed: every task has finished (wait_all); nobody else reads it any more.
    delete stop_.load(std::memory_order_relaxed);
    while (retired_ != nullptr) {
      delete std::exchange(retired_, retired_->retired_next);
    }
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
  template <class Fn>
  requires(task_callable<Fn> || stoppable_task_callable<Fn>)
  void spawn(Fn&& fn) {
    detail::check_not_null(fn, "spindle::task_group::spawn: fn is a null pointer");
    using node = detail::group_task<task_group, std::decay_t<Fn>>;
    detail::node_ptr<node> owned(
        detail::new_node<node>(std::decay_t<Fn>(std::forward<Fn>(fn)), this));
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

  /// As spawn(fn), with a name that spindle::dump() shows while the task runs (see
  /// executor::spawn(fn, name)).
  template <class Fn>
  requires(task_callable<Fn> || stoppable_task_callable<Fn>)
  void spawn(Fn&& fn, spindle::name n) {
    detail::check_not_null(fn, "spindle::task_group::spawn: fn is a null pointer");
    spawn(detail::named_callable<std::decay_t<Fn>>(std::decay_t<Fn>(std::forward<Fn>(fn)), n));
  }

  /// Waits for every task spawned into the group before the call (and what they spawned
  /// into it), then rethrows the first exception one of them threw (the others are dropped).
  ///
  /// Preconditions: no other thread is in wait() of this group (checked in every build:
  /// message, then abort); not called from a task of this group.
  /// Throws: the first exception of the group's tasks.
  /// Returns: task_group_status::cancelled if cancel() was called in this round, else
  /// task_group_status::complete.
  auto wait() -> task_group_status {
    wait_all();
    // relaxed: only the waiter resets it; a cancel() racing with this return may count for
    // the next round (see cancel()). A load first, not an exchange: the common round was not
    // cancelled and then costs no read-modify-write.
    bool const was_cancelled = cancelled_.load(std::memory_order_relaxed);
    if (was_cancelled) {
      // relaxed: as above.
      cancelled_.store(false, std::memory_order_relaxed);
      renew_source();
    }
    if (auto e = take_error()) {
      std::rethrow_exception(std::move(e));
    }
    return was_cancelled ? task_group_status::cancelled : task_group_status::complete;
  }

  /// Cancels the group's current round: tasks of the group that have not started are skipped
  /// (never run; their callables are destroyed, once, and counted by skipped_tasks()), tasks
  /// spawned into the group from now until wait() returns are skipped as well, and running
  /// tasks that took a std::stop_token see stop requested. wait() then returns
  /// task_group_status::cancelled, and the next round starts uncancelled with a fresh token.
  /// A cancel() that races with the return of wait() may cancel the next round instead.
  ///
  /// Thread safety: any thread, the group's own tasks included. Throws: std::bad_alloc (the
  /// group's stop source is made on first use).
  void cancel() {
    source().source.request_stop();
    // relaxed: see the load in spawn(); the flag carries no data.
    cancelled_.store(true, std::memory_order_relaxed);
  }

  /// Whether cancel() was called in the current round.
  [[nodiscard]] auto is_cancelled() const noexcept -> bool {
    // relaxed: a snapshot.
    return cancelled_.load(std::memory_order_relaxed);
  }

  /// The token a std::stop_token-taking task of this round receives (stop requested by
  /// cancel()). Throws: std::bad_alloc.
  [[nodiscard]] auto stop_token() -> std::stop_token { return source().source.get_token(); }

  /// Tasks skipped because the group was cancelled, over the group's life.
  [[nodiscard]] auto skipped_tasks() const noexcept -> std::uint64_t {
    // relaxed: a statistic; exact after wait().
    return skipped_.load(std::memory_order_relaxed);
  }

 private:
  template <class, class>
  friend class detail::group_task;

  /// Runs one task's callable, or skips it in a cancelled round; records its exception.
  template <class Fn>
  void run_member(Fn& f) noexcept {
    // relaxed: cancel() publishes nothing but the flag; a task that starts just before a
    // cancel() runs, as a task already running would.
    if (cancelled_.load(std::memory_order_relaxed)) {
      // Skipped: the caller destroys f unrun. relaxed: a statistic, read after wait()
      // (ordered by finish()'s RMW chain).
      skipped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    try {
      if constexpr (task_callable<Fn>) {
        static_cast<void>(std::invoke(f));
      } else {
        static_cast<void>(std::invoke(f, source().source.get_token()));
      }
    } catch (...) {
      record(std::current_exception());
    }
  }

  /// The current round's stop source, made on first use: most groups never need one, and a
  /// group per fork (a recursive fork-join) must not pay an allocation for it.
  auto source() -> detail::group_stop_source& {
    // acquire: pairs with the release CAS below (or in another thread's call), so the source
    // is seen fully constructed.
    detail::group_stop_source* s = stop_.load(std::memory_order_acquire);
    if (s == nullptr) {
      auto fresh = std::make_unique<detail::group_stop_source>();
      // acq_rel: release publishes *fresh; acquire on failure pairs with the winner's release.
      if (stop_.compare_exchange_strong(s, fresh.get(), std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
        s = fresh.release();
      }
    }
    return *s;
  }

  /// After a cancelled round: the next round gets a source whose stop is not requested. The
  /// old one stays alive until the group dies, for a task spawned concurrently with wait()
  /// that may still be reading it.
  void renew_source() {
    // acq_rel: takes the current source (acquire) and publishes nothing new (the next
    // source() makes one).
    detail::group_stop_source* old = stop_.exchange(nullptr, std::memory_order_acq_rel);
    if (old != nullptr) {
      old->retired_next = retired_;
      retired_ = old;
    }
  }

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
  detail::atomic<bool> cancelled_{false};
  detail::atomic<std::uint64_t> skipped_{0};
  // The current round's stop source (nullptr until first use), and those of earlier cancelled
  // rounds (touched by the waiting thread only).
  detail::atomic<detail::group_stop_source*> stop_{nullptr};
  detail::group_stop_source* retired_ = nullptr;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

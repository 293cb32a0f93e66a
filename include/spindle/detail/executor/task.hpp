// SPDX-License-Identifier: BSL-1.0
#pragma once
// Task records: what the executor's queues carry, and where a task's result waits for its join.
//
// Every queue (worker deques, the injector) carries `task*`. A `task` is two words: the
// function that runs it, and the isolation region it was queued in (spindle/isolate.hpp) (the
// injector stores pointers in blocks of its own, see detail/executor/injector.hpp). Three kinds
// exist:
//
//   spawned_task<Fn, R>  one node per `spawn`: the callable, the result (or exception)
//                        and the completion, shared with the join_handle by a count of two
//                        references (the executor's and the handle's); the last one frees it.
//   posted_task<Fn>      one node per `post`: the callable only; an exception goes to
//                        the executor's unhandled-exception handler.
//   stack_job<Fn, R>     lives in the frame of `join` or of an outside caller that waits for
//                        it; no allocation. The frame outlives the job because its owner waits
//                        for the completion before returning (executor_core.hpp).
//
// Allocation: one node per spawn/post (the node holds the callable, so there is no second
// allocation for a std::function), made by `new_node` and freed by `delete_node`
// (detail/executor/task_pool.hpp): records of up to pool_payload bytes come from a per-thread pool,
// larger ones from operator new. See the note on allocation in detail/executor/executor_core.hpp.
// `join`, `parallel_for` and `parallel_reduce` allocate nothing.
//
// Synchronization: a task's fields are written before it is pushed to a queue and read by the
// worker that pops or steals it; the queue's release/acquire pair publishes them. Result
// fields are written by the running worker before `completion::set()` (release) and read by
// the joiner after `completion::is_set()` (acquire).

#include <spindle/detail/executor/completion.hpp>
#include <spindle/detail/executor/task_pool.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/task_traits.hpp>

#include <concepts>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Throws std::invalid_argument if `f` is a null pointer to function or to member: calling
/// one would crash a worker, far from the call that passed it (spawn, post, join,
/// task_group::spawn and the parallel loops check).
template <class F>
void check_not_null(F const& f, char const* what) {
  if constexpr (std::is_pointer_v<F> || std::is_member_pointer_v<F>) {
    if (f == nullptr) {
      throw std::invalid_argument(what);
    }
  }
}

/// The isolation region of the code running on this thread (spindle::isolate, isolate.hpp):
/// 0 outside any region. A task pushed by this thread carries it, and a thread that runs the
/// task runs it inside the same region.
inline thread_local std::uint64_t current_isolation = 0;

struct task {
  using run_fn = void (*)(task*) noexcept;

  explicit task(run_fn fn) noexcept : run(fn) {}

  // Runs the task and releases whatever the executor held of it (frees heap nodes).
  run_fn run;
  // The isolation region the task belongs to: set by the scheduler when it queues the task
  // (the pusher's current_isolation), before the queue's release publishes it.
  std::uint64_t isolation = 0;
};

/// Where a result waits: a value (void_result for void) or an exception.
template <class R>
class result_slot {
 public:
  using stored = std::conditional_t<std::is_void_v<R>, void_result, R>;

  template <class Fn>
  void run(Fn& fn) noexcept {
    try {
      if constexpr (std::is_void_v<R>) {
        std::invoke(fn);
        value_.emplace();
      } else {
        value_.emplace(std::invoke(fn));
      }
    } catch (...) {
      error_ = std::current_exception();
    }
  }

  /// Stores `e` as the outcome without running anything (a cancelled task).
  void set_error(std::exception_ptr e) noexcept { error_ = std::move(e); }

  /// The stored value, or rethrows the stored exception.
  auto take() -> stored {
    if (error_) {
      std::rethrow_exception(std::exchange(error_, nullptr));
    }
    return std::move(*value_);
  }

  [[nodiscard]] auto has_error() const noexcept -> bool { return error_ != nullptr; }

 private:
  std::optional<stored> value_;
  std::exception_ptr error_;
};

/// The part of a spawned task the join_handle sees.
///
/// Cancellation (join_handle::cancel): `start_` elects who owns the callable's fate. The worker
/// that runs the task moves it from `unstarted` to `running` before calling it; cancel() moves
/// it from `unstarted` to `cancelled`, and then destroys the callable, stores task_cancelled
/// as the outcome and sets `done` itself, on the canceller's thread. Exactly one of the two
/// exchanges succeeds, so the callable is either run (and destroyed by the worker) or
/// destroyed unrun by the canceller, once either way. The node stays queued after a cancel:
/// the worker that pops it finds `cancelled` and only drops its reference. The node's
/// `cancel` function is called with `unstarted` after a won election; a node that can be cancelled
/// after it started (a spawned coroutine, detail/coro/coro_root.hpp) is also called with
/// `started` when the election finds the task started, and says whether the request reached
/// it, and with `no_more` when its handle blocks in join() (nobody can cancel it from then on,
/// so its waits stop arming their cancellation hooks). One function for the three, and one
/// table (`ops`) for it and the destroy function, keep every task node two words smaller: a
/// spawned coroutine's node, with its cancellation slot and its listing pointer
/// (detail/coro/coro_root.hpp), then still fits the task pool's payload (task_pool.hpp).
template <class R>
class shared_result {
 public:
  using destroy_fn = void (*)(shared_result*) noexcept;
  enum class cancel_op : unsigned char { unstarted, started, no_more };
  using cancel_fn = bool (*)(shared_result*, cancel_op op) noexcept;
  /// What a kind of node does on its last release and on a cancel: one table per node type
  /// (a static constant), so that a node carries one pointer for both.
  struct ops {
    destroy_fn destroy;
    cancel_fn cancel;
  };

  explicit shared_result(ops const& node_ops) noexcept : ops_(&node_ops) {}
  shared_result(shared_result const&) = delete;
  auto operator=(shared_result const&) -> shared_result& = delete;

  /// Drops one of the two references (the executor's after running, or the handle's).
  void release() noexcept {
    // acq_rel: release orders this owner's last use before the free; acquire makes the other
    // owner's last use visible to whichever of the two frees the node.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      ops_->destroy(this);
    }
  }

  /// The worker's side of the election: true if the task may run (it was not cancelled).
  [[nodiscard]] auto try_start() noexcept -> bool {
    // relaxed: elects the callable's owner only. The callable and the node were published to
    // the worker by the queue, and to the canceller by the handle; the canceller's outcome
    // reaches the joiner through done.set() (release) and is.set() (acquire).
    return start_.exchange(running, std::memory_order_relaxed) == unstarted;
  }

  /// The handle's side: true if the task had not started and never will, or (a node that can
  /// be cancelled after it started) if it had started and the request reached it before it
  /// ended.
  [[nodiscard]] auto cancel() noexcept -> bool {
    if (ops_->cancel == nullptr) {
      return false;
    }
    std::uint8_t expected = unstarted;
    // relaxed: as in try_start().
    if (!start_.compare_exchange_strong(expected, cancelled, std::memory_order_relaxed,
                                        std::memory_order_relaxed)) {
      return expected == running && ops_->cancel(this, cancel_op::started);
    }
    return ops_->cancel(this, cancel_op::unstarted);
  }

  /// The handle blocks in join(): nothing can cancel the task any more.
  void no_more_cancels() noexcept {
    if (ops_->cancel != nullptr) {
      static_cast<void>(ops_->cancel(this, cancel_op::no_more));
    }
  }

  completion done;
  result_slot<R> result;

 private:
  static constexpr std::uint8_t unstarted = 0;
  static constexpr std::uint8_t running = 1;
  static constexpr std::uint8_t cancelled = 2;

  // INVARIANT: 2 while both the executor and the handle hold the node; frees at 0.
  atomic<std::uint32_t> refs_{2};
  // INVARIANT: leaves `unstarted` once, to `running` (try_start) or `cancelled` (cancel).
  atomic<std::uint8_t> start_{unstarted};
  ops const* ops_;
};

/// The heap node of `spawn`: the task, its callable and the shared result.
template <class Fn, class R>
class spawned_task final : public task, public shared_result<R> {
 public:
  explicit spawned_task(Fn&& fn)
      : task(&run_and_release), shared_result<R>(node_ops), fn_(std::move(fn)) {
    // A named task (detail/executor/diag.hpp) learns what a join of it waits on, so that a
    // dump can name the task a join waits for.
    if constexpr (requires(Fn& f) { f.set_diag_key(nullptr); }) {
      fn_->set_diag_key(&this->done);
    }
  }

 private:
  static void run_and_release(task* t) noexcept {
    auto* self = static_cast<spawned_task*>(t);
    if (!self->try_start()) {
      // Cancelled: the canceller destroyed the callable and set the outcome.
      self->release();
      return;
    }
    self->result.run(*self->fn_);
    // The callable's captures die on the worker, before the joiner may return.
    self->fn_.reset();
    self->done.set();
    self->release();
  }

  static void destroy(shared_result<R>* s) noexcept { delete_node(static_cast<spawned_task*>(s)); }

  /// A callable is cancelled only before it starts.
  static auto cancel_unstarted(shared_result<R>* s,
                               typename shared_result<R>::cancel_op op) noexcept -> bool {
    if (op != shared_result<R>::cancel_op::unstarted) {
      return false;
    }
    auto* self = static_cast<spawned_task*>(s);
    self->fn_.reset();
    self->result.set_error(std::make_exception_ptr(task_cancelled()));
    self->done.set();
    return true;
  }

  static constexpr typename shared_result<R>::ops node_ops{&destroy, &cancel_unstarted};

  std::optional<Fn> fn_;
};

/// The heap node of `post`. `report` receives an exception that escapes the callable.
template <class Fn>
class posted_task final : public task {
 public:
  using report_fn = void (*)(void* ctx, std::exception_ptr) noexcept;

  posted_task(Fn&& fn, report_fn report, void* ctx)
      : task(&run_and_free), fn_(std::move(fn)), report_(report), ctx_(ctx) {}

 private:
  static void run_and_free(task* t) noexcept {
    auto* self = static_cast<posted_task*>(t);
    try {
      std::invoke(self->fn_);
    } catch (...) {
      self->report_(self->ctx_, std::current_exception());
    }
    delete_node(self);
  }

  Fn fn_;
  report_fn report_;
  void* ctx_;
};

/// A job in its owner's stack frame (rayon's StackJob). The owner either runs it inline or,
/// if a thief took it, waits for `done` before the frame may die.
template <class Fn, class R>
class stack_job final : public task {
 public:
  stack_job(Fn& fn, parker* owner) noexcept : task(&run_stolen), done(owner), fn_(&fn) {}

  /// Runs the job in its owner, after popping it back: no completion traffic.
  void run_inline() noexcept { result.run(*fn_); }

  completion done;
  result_slot<R> result;

 private:
  static void run_stolen(task* t) noexcept {
    auto* self = static_cast<stack_job*>(t);
    self->result.run(*self->fn_);
    // SAFETY: after set() the owner may destroy *self; set() reads nothing of it afterwards
    // (see completion::set), and neither do we.
    self->done.set();
  }

  Fn* fn_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

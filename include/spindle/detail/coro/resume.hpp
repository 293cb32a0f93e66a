#pragma once
// Where a suspended coroutine is resumed, and how a waker gets it there.
//
// A coroutine that waits (on a channel, a select, a timer or a join handle) is resumed by
// whoever completes its wait: a sender, a receiver, close, the timer thread, a finishing task.
// That party must not run the coroutine on its own stack (it may be a sender in the middle of
// its own work, or the timer thread), so it hands a `resume_node` to the coroutine's
// `resume_target`:
//   - an executor (executor_core): the node becomes a task on that executor's queues, so the
//     coroutine continues on one of its workers (tokio's waker does the same with a task
//     handle);
//   - a sync_wait loop (task.hpp): the node is queued for the thread inside sync_wait.
// A node is a `task` (detail/executor/task.hpp), so resuming allocates nothing: the node lives
// in the awaiter, inside the suspended coroutine's frame.
//
// Accounting: a target must not vanish while a coroutine suspended on it can still be woken.
// The suspending coroutine calls `suspending()` before its wait becomes visible to wakers, and
// each such call is ended by exactly one `resume(node)` (the waker) or `not_suspended()` (the
// coroutine found it need not wait after all). An executor's shutdown waits until none is
// outstanding (scheduler.hpp, Termination).
//
// `promise_base` is the part of spindle's coroutine promises that awaiters look at: the target
// the coroutine runs on. A coroutine of another library has none; its awaiters then resume it
// on the waker's thread (documented in task.hpp).

#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/config.hpp>

#include <coroutine>
#include <type_traits>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// A task that continues a suspended coroutine: by default it resumes `handle`; awaiters that
/// have more to do first (a select that must withdraw its registrations) pass their own `run`.
struct resume_node : task {
  explicit resume_node(run_fn fn = &resume_handle) noexcept : task(fn) {}

  static void resume_handle(task* t) noexcept { static_cast<resume_node*>(t)->handle.resume(); }

  std::coroutine_handle<> handle;
  // The awaiter that owns the node, for a `run` of its own.
  void* context = nullptr;
  // Link of the sync_wait loop's queue.
  resume_node* next = nullptr;
};

/// Something that runs resume nodes: an executor or a sync_wait loop.
class resume_target {
 public:
  resume_target() = default;
  resume_target(resume_target const&) = delete;
  auto operator=(resume_target const&) -> resume_target& = delete;

  /// A coroutine on this target is about to wait; one resume() or not_suspended() follows.
  virtual void suspending() noexcept = 0;
  /// Ends a suspending() whose wait completed before the coroutine suspended.
  virtual void not_suspended() noexcept = 0;
  /// Queues `node` to run on this target; ends one suspending().
  virtual void resume(resume_node& node) noexcept = 0;
  /// Queues `node` as a fresh submission (co_await ex.schedule()): no suspending() precedes it.
  /// Throws: std::logic_error when the target no longer accepts work (an executor that shut
  /// down, called from outside it).
  virtual void submit(resume_node& node) = 0;

 protected:
  ~resume_target() = default;
};

/// Hands `node` to `where`, or runs it here when the coroutine has no target.
inline void resume_on(resume_target* where, resume_node& node) noexcept {
  if (where != nullptr) {
    where->resume(node);
  } else {
    node.run(&node);
  }
}

/// The part of spindle's promise types that awaiters read: the target the coroutine runs on.
struct promise_base {
  resume_target* where = nullptr;
};

/// The target of the coroutine `h`, or null for a coroutine that is not spindle's.
template <class Promise>
auto target_of(std::coroutine_handle<Promise> h) noexcept -> resume_target* {
  if constexpr (std::is_base_of_v<promise_base, Promise>) {
    return h.promise().where;
  } else {
    static_cast<void>(h);
    return nullptr;
  }
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

// SPDX-License-Identifier: BSL-1.0
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
// Accounting: a target must not vanish while a coroutine that it may have to resume is alive.
// A coroutine is *bound* to the target that resumes it (`promise_base::counted`): ex.spawn
// binds its root, `co_await ex.schedule()` binds the coroutine to ex (and unbinds it from its
// previous target), and the coroutine's end unbinds it. An executor's shutdown waits until no
// coroutine is bound to it (scheduler.hpp, Termination), so a wake that comes while a bound
// coroutine is suspended always finds the executor running. Binding costs one RMW per
// coroutine, not one per suspension. A task awaited by a bound coroutine inherits its target
// without a count of its own: it ends before the coroutine that awaits it.
//
// `promise_base` is the part of spindle's coroutine promises that awaiters look at: the target
// the coroutine runs on. A coroutine of another library has none; its awaiters then resume it
// on the waker's thread (documented in task.hpp).

#include <spindle/detail/coro/cancel.hpp>
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

  /// A coroutine now counts on this target (see "Accounting").
  virtual void bind() noexcept = 0;
  /// Ends one bind().
  virtual void unbind() noexcept = 0;
  /// Queues `node` to run on this target (a waker resuming a suspended coroutine).
  virtual void resume(resume_node& node) noexcept = 0;
  /// Queues `node` as a fresh submission (co_await ex.schedule()).
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
  /// Where the coroutine is resumed after a wait.
  resume_target* where = nullptr;
  /// The target this coroutine is bound to (counted by), if any; unbound when it ends.
  resume_target* counted = nullptr;
  /// The cancellation slot of the coroutine's chain (cancel.hpp), inherited like `where`; null
  /// when nothing can cancel it.
  cancel_slot* cancel = nullptr;
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

/// The promise of the coroutine `h` as spindle's awaiters see it, or null for a coroutine that
/// is not spindle's.
template <class Promise>
auto promise_of(std::coroutine_handle<Promise> h) noexcept -> promise_base* {
  if constexpr (std::is_base_of_v<promise_base, Promise>) {
    return &h.promise();
  } else {
    static_cast<void>(h);
    return nullptr;
  }
}

/// The cancellation slot of the coroutine `h`, or null (a coroutine that is not spindle's, or
/// one nothing can cancel).
template <class Promise>
auto cancel_slot_of(std::coroutine_handle<Promise> h) noexcept -> cancel_slot* {
  if constexpr (std::is_base_of_v<promise_base, Promise>) {
    return h.promise().cancel;
  } else {
    static_cast<void>(h);
    return nullptr;
  }
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

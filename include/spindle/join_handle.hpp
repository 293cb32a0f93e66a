// SPDX-License-Identifier: BSL-1.0
#pragma once
// join_handle<R>: the result of one task spawned on a spindle::executor.
//
// `executor::spawn(f)` returns a handle that owns one of the two references to the task's heap
// node (detail/executor/task.hpp); the executor owns the other until the task has run. `join()`
// waits for the task and returns its result or rethrows its exception. Destroying a handle without
// joining detaches the task: it still runs, and its result is destroyed by whichever of the
// two owners lets go last.
//
// Waiting: a worker of the same executor that joins keeps running other tasks while it waits
// (help-first), so joining from inside a task neither deadlocks nor idles a core. Any other
// thread sleeps until the task finishes.
//
// Happens-before: everything the task did is visible to the caller once join() returns (or
// once is_ready() returns true).
//
// A handle may outlive its executor: the executor's destructor finishes every task, so join()
// then returns the result at once.
//
// A coroutine awaits a handle with `co_await h` (suspending, holding no thread).
//
// Thread safety: a handle is a move-only value; use one handle from one thread at a time.
// Example: tests/executor_test.cpp (Example).

#include <spindle/detail/coro/cancel.hpp>
#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/executor/completion.hpp>
#include <spindle/detail/executor/executor_core.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/config.hpp>

#include <coroutine>
#include <stdexcept>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

class executor;

template <class R>
class [[nodiscard]] join_handle {
 public:
  /// An empty handle (valid() == false).
  join_handle() noexcept = default;

  join_handle(join_handle&& other) noexcept
      : core_(std::exchange(other.core_, nullptr)), state_(std::exchange(other.state_, nullptr)) {}

  auto operator=(join_handle&& other) noexcept -> join_handle& {
    if (this != &other) {
      detach();
      core_ = std::exchange(other.core_, nullptr);
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }

  join_handle(join_handle const&) = delete;
  auto operator=(join_handle const&) -> join_handle& = delete;

  /// Detaches the task if it was not joined; the task still runs.
  ~join_handle() { detach(); }

  /// Whether this handle refers to a task that has not been joined yet.
  [[nodiscard]] auto valid() const noexcept -> bool { return state_ != nullptr; }

  /// Whether the task has finished (join() would not wait). False for an empty handle.
  [[nodiscard]] auto is_ready() const noexcept -> bool {
    return state_ != nullptr && state_->done.is_set();
  }

  /// Cancels the task if it has not started yet. Returns true when it never will: its
  /// callable (or a coroutine's frame) has been destroyed, on this thread, before cancel()
  /// returns, and join() throws spindle::task_cancelled at once. For a callable, returns false
  /// when the task has started or finished (it runs to its end and join() gives its outcome),
  /// and for an empty handle. A cancelled task still leaves its small record in the queue until
  /// a worker passes it (nothing is run).
  ///
  /// A coroutine (ex.spawn(task)) can also be cancelled after it started: cancel() then returns
  /// true when the request reached it before it ended. The spindle awaitable it is suspended in
  /// (a channel operation, a select, a sleep, a sync primitive, a join handle, when_all ...), or
  /// the next one that would suspend, ends by throwing spindle::task_cancelled into it
  /// (detail/coro/cancel.hpp); a ready operation still completes. Unless the coroutine catches
  /// it, join() then throws task_cancelled.
  ///
  /// Thread safety: as the other members, one thread at a time per handle; it races safely
  /// with the worker that is about to start the task.
  auto cancel() noexcept -> bool { return state_ != nullptr && state_->cancel(); }

  /// Waits for the task and returns its result (nothing for void), or rethrows its exception.
  /// Afterwards the handle is empty.
  ///
  /// Throws: std::logic_error if the handle is empty (joined already, moved from, or
  /// default-constructed); spindle::task_cancelled after a successful cancel(); whatever the
  /// task threw.
  auto join() -> R {
    if (state_ == nullptr) {
      throw std::logic_error("spindle::join_handle::join on an empty handle");
    }
    auto* const state = std::exchange(state_, nullptr);
    auto* const core = std::exchange(core_, nullptr);
    // A finished task needs no wait, and must not touch the executor: it may already be
    // destroyed (its destructor finished every task, so a handle may outlive it).
    if (!state->done.is_set()) {
      // Blocked here, this handle (the only party that can cancel the task) cannot cancel it:
      // a coroutine's waits stop arming their cancellation hooks (detail/coro/cancel.hpp).
      state->no_more_cancels();
      core->wait(state->done);
    }
    struct release_guard {
      detail::shared_result<R>* s;
      ~release_guard() { s->release(); }
    } guard{state};
    if constexpr (std::is_void_v<R>) {
      static_cast<void>(state->result.take());
    } else {
      return state->result.take();
    }
  }

  /// The awaiter of `co_await handle`: suspends the coroutine until the task finishes (holding
  /// no thread), then returns its result or rethrows its exception, as join() does. The
  /// coroutine is resumed on its own target (task.hpp); afterwards the handle is empty.
  class awaiter {
   public:
    explicit awaiter(join_handle& h) noexcept : h_(&h) {}

    /// Throws: std::logic_error if the handle is empty.
    [[nodiscard]] auto await_ready() const -> bool {
      if (h_->state_ == nullptr) {
        throw std::logic_error("spindle::join_handle: co_await on an empty handle");
      }
      return h_->state_->done.is_set();
    }

    /// The awaiting coroutine's cancellation (detail/coro/cancel.hpp) is passed on to the
    /// awaited task (its cancel()), and the coroutine still waits for it to end: join then
    /// gives the task's outcome, task_cancelled unless it finished first.
    template <class Promise>
    auto await_suspend(std::coroutine_handle<Promise> c) noexcept -> bool {
      where_ = detail::target_of(c);
      node_.handle = c;
      hook_.fire = &fire;
      hook_.context = this;
      cancel_.bind(detail::cancel_slot_of(c), &forward_cancel, this);
      cancel_.note(detail::pack_note(wait_kind::join, &h_->state_->done));
      if (!cancel_.arm()) {
        static_cast<void>(h_->state_->cancel());
      }
      // Once armed, set() may resume the coroutine on another thread at once; the cancellation
      // hook is disarmed in await_resume, which waits for a hook that is running.
      return h_->state_->done.arm_hook(&hook_);
    }

    auto await_resume() -> R {
      cancel_.disarm();
      cancel_.note(0);
      return h_->join();
    }

   private:
    static void fire(detail::completion_hook* hook) noexcept {
      auto* self = static_cast<awaiter*>(hook->context);
      detail::resume_on(self->where_, self->node_);
    }

    static void forward_cancel(void* self) noexcept {
      static_cast<void>(static_cast<awaiter*>(self)->h_->state_->cancel());
    }

    join_handle* h_;
    detail::cancel_link cancel_;
    detail::resume_target* where_ = nullptr;
    detail::completion_hook hook_;
    detail::resume_node node_;
  };

  auto operator co_await() & noexcept -> awaiter { return awaiter(*this); }
  auto operator co_await() && noexcept -> awaiter { return awaiter(*this); }

  /// Gives up the right to join; the task still runs. Afterwards the handle is empty.
  void detach() noexcept {
    if (state_ != nullptr) {
      std::exchange(state_, nullptr)->release();
      core_ = nullptr;
    }
  }

 private:
  friend class executor;

  join_handle(detail::executor_core* core, detail::shared_result<R>* state) noexcept
      : core_(core), state_(state) {}

  detail::executor_core* core_ = nullptr;
  detail::shared_result<R>* state_ = nullptr;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

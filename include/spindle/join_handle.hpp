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
// Thread safety: a handle is a move-only value; use one handle from one thread at a time.
// Example: tests/executor_test.cpp (Example).

#include <spindle/detail/executor/executor_core.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/config.hpp>

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

  /// Waits for the task and returns its result (nothing for void), or rethrows its exception.
  /// Afterwards the handle is empty.
  ///
  /// Throws: std::logic_error if the handle is empty (joined already, moved from, or
  /// default-constructed); whatever the task threw.
  auto join() -> R {
    if (state_ == nullptr) {
      throw std::logic_error("spindle::join_handle::join on an empty handle");
    }
    auto* const state = std::exchange(state_, nullptr);
    auto* const core = std::exchange(core_, nullptr);
    // A finished task needs no wait, and must not touch the executor: it may already be
    // destroyed (its destructor finished every task, so a handle may outlive it).
    if (!state->done.is_set()) {
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

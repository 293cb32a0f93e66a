// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle::task<T>: a lazy coroutine, and spindle::sync_wait, which runs one from a plain thread.
//
//   spindle::task<int> answer() { co_return 42; }
//   spindle::task<int> twice() { int a = co_await answer(); co_return 2 * a; }
//   int v = spindle::sync_wait(twice());                 // 84, on this thread
//   auto h = ex.spawn(twice());  h.join();               // on executor ex (executor.hpp)
//
// A task does nothing until it is awaited (co_await), spawned on an executor (ex.spawn) or
// passed to sync_wait. `co_await t` runs t to completion and returns its value or rethrows its
// exception; control passes by symmetric transfer (the awaiter's await_suspend returns the
// task's handle, the task's final_suspend returns the awaiter's), so a chain of a million
// nested co_awaits does not grow the stack (Lewis Baker, "C++ Coroutines: Understanding
// Symmetric Transfer", 2020; cppcoro's task<T>).
//
// Where a task runs: on the thread that starts it, until it awaits something that suspends.
// After that it is resumed on its *target*: the executor it was spawned on or moved to with
// `co_await ex.schedule()`, or the thread inside sync_wait. A task awaited by another inherits
// the awaiter's target. A coroutine type of another library awaiting spindle's awaitables has
// no target: it is resumed on the thread that completed its wait (a sender, a receiver, the
// timer thread), which is correct but runs its code on that thread.
//
// Lifetime: the task object owns the coroutine frame; destroying a task that never started
// destroys its frame and every argument in it. A started task cannot be destroyed by its user:
// it is owned by whoever awaits it (the awaiting coroutine's frame, ex.spawn's node, or
// sync_wait), and it finishes before that owner lets go.
//
// Misuse, reported in every build: awaiting, spawning or sync_waiting a task that is empty
// (moved from, default-constructed) or already awaited.
//
// Thread safety: a task is a move-only value; its coroutine runs on one thread at a time.
// Examples: examples/coro_pipeline.cpp, tests/task_test.cpp.

#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/sync/blocking_hook.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/parker.hpp>

#include <coroutine>
#include <exception>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

template <class T = void>
class task;

namespace detail {

/// What every task promise has: where the task runs, who continues when it ends, its error.
struct task_promise_common : promise_base {
  /// The awaiting coroutine, resumed by symmetric transfer when this task ends.
  std::coroutine_handle<> continuation;
  /// For a root task (spawned, or in sync_wait): called when it ends instead. May destroy the
  /// frame: final_suspend touches nothing of it afterwards.
  void (*on_done)(void* arg) noexcept = nullptr;
  void* on_done_arg = nullptr;
  std::exception_ptr error;

  struct final_awaiter {
    [[nodiscard]] auto await_ready() const noexcept -> bool { return false; }
    template <class Promise>
    auto await_suspend(std::coroutine_handle<Promise> h) noexcept -> std::coroutine_handle<> {
      task_promise_common& p = h.promise();
      if (p.counted != nullptr) {
        // The coroutine is running on (or for) its target, which therefore cannot terminate
        // before this returns.
        std::exchange(p.counted, nullptr)->unbind();
      }
      if (p.continuation) {
        return p.continuation;
      }
      auto* const done = p.on_done;
      void* const arg = p.on_done_arg;
      if (done != nullptr) {
        done(arg);
      }
      return std::noop_coroutine();
    }
    void await_resume() const noexcept {}
  };

  auto initial_suspend() const noexcept -> std::suspend_always { return {}; }
  auto final_suspend() const noexcept -> final_awaiter { return {}; }
  void unhandled_exception() noexcept { error = std::current_exception(); }

  void rethrow_if_error() {
    if (error) {
      std::rethrow_exception(std::exchange(error, nullptr));
    }
  }
};

template <class T>
class task_promise : public task_promise_common {
 public:
  auto get_return_object() noexcept -> spindle::task<T>;

  template <class U = T>
  requires std::is_convertible_v<U&&, T>
  void return_value(U&& v) noexcept(std::is_nothrow_constructible_v<T, U&&>) {
    value_.emplace(std::forward<U>(v));
  }

  /// The result, or rethrows the task's exception.
  auto take() -> T {
    rethrow_if_error();
    return std::move(*value_);
  }

 private:
  std::optional<T> value_;
};

template <>
class task_promise<void> : public task_promise_common {
 public:
  auto get_return_object() noexcept -> spindle::task<void>;
  void return_void() const noexcept {}
  void take() { rethrow_if_error(); }
};

/// Access to a task's coroutine for the executor and sync_wait.
struct task_access {
  template <class T>
  static auto handle(spindle::task<T>& t) noexcept {
    return t.h_;
  }
  template <class T>
  static auto release(spindle::task<T>& t) noexcept {
    return std::exchange(t.h_, nullptr);
  }
};

/// Checks that `h` is a task that can start (not empty, not started), in every build.
template <class Promise>
void check_startable(std::coroutine_handle<Promise> h, char const* what) noexcept {
  SPINDLE_CHECK(
      h != nullptr && !h.done() && !h.promise().continuation && h.promise().on_done == nullptr,
      what);
}

}  // namespace detail

/// A lazy coroutine that produces a T (or nothing, for void). See the file comment.
template <class T>
class [[nodiscard]] task {
  static_assert(std::is_void_v<T> || (std::is_object_v<T> && std::is_move_constructible_v<T>),
                "spindle::task<T>: T must be void or a movable object type");

 public:
  using promise_type = detail::task_promise<T>;
  using value_type = T;

  /// An empty task (valid() == false).
  task() noexcept = default;
  task(task&& other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
  auto operator=(task&& other) noexcept -> task& {
    if (this != &other) {
      reset();
      h_ = std::exchange(other.h_, nullptr);
    }
    return *this;
  }
  task(task const&) = delete;
  auto operator=(task const&) -> task& = delete;
  ~task() { reset(); }

  /// Whether this task owns a coroutine.
  [[nodiscard]] auto valid() const noexcept -> bool { return h_ != nullptr; }
  /// Whether the coroutine has run to its end.
  [[nodiscard]] auto is_ready() const noexcept -> bool { return h_ != nullptr && h_.done(); }

  class awaiter {
   public:
    explicit awaiter(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
    [[nodiscard]] auto await_ready() const noexcept -> bool { return false; }
    template <class Promise>
    auto await_suspend(std::coroutine_handle<Promise> parent) noexcept -> std::coroutine_handle<> {
      auto& p = h_.promise();
      p.continuation = parent;
      p.where = detail::target_of(parent);
      p.cancel = detail::cancel_slot_of(parent);
      return h_;
    }
    auto await_resume() -> T { return h_.promise().take(); }

   private:
    std::coroutine_handle<promise_type> h_;
  };

  /// Runs the task to its end and returns its value, or rethrows its exception. The task stays
  /// owned by this object (its frame is freed when the object is destroyed).
  auto operator co_await() & noexcept -> awaiter {
    detail::check_startable(h_, "co_await on an empty or already awaited spindle::task");
    return awaiter(h_);
  }
  auto operator co_await() && noexcept -> awaiter {
    detail::check_startable(h_, "co_await on an empty or already awaited spindle::task");
    return awaiter(h_);
  }

 private:
  friend class detail::task_promise<T>;
  friend struct detail::task_access;

  explicit task(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}

  void reset() noexcept {
    if (h_) {
      std::exchange(h_, nullptr).destroy();
    }
  }

  std::coroutine_handle<promise_type> h_;
};

template <class T>
auto detail::task_promise<T>::get_return_object() noexcept -> spindle::task<T> {
  return spindle::task<T>(std::coroutine_handle<task_promise>::from_promise(*this));
}

inline auto detail::task_promise<void>::get_return_object() noexcept -> spindle::task<void> {
  return spindle::task<void>(std::coroutine_handle<task_promise>::from_promise(*this));
}

namespace detail {

/// The target of sync_wait: resume nodes queue here and the waiting thread runs them.
///
/// Synchronization: `mu_` guards the queue and `done_`. Every hand-over (a queued node, the
/// root's end) unparks the owner while still holding the lock, so that the owner, which reads
/// `done_` under the lock before it returns, cannot destroy the loop while a waker still
/// touches it (the waker's unlock is its last access, and a futex wake on a freed word is
/// harmless).
class run_loop final : public resume_target {
 public:
  void bind() noexcept override {}
  void unbind() noexcept override {}
  void resume(resume_node& node) noexcept override { push(node); }
  void submit(resume_node& node) override { push(node); }

  /// The root's on_done.
  static void finish(void* arg) noexcept {
    auto* self = static_cast<run_loop*>(arg);
    std::lock_guard lock(self->mu_);
    self->done_ = true;
    self->owner_.unpark();
  }

  /// Runs queued nodes until the root has finished. Called by the thread that owns the loop.
  void run() noexcept {
    for (;;) {
      resume_node* n = nullptr;
      {
        std::lock_guard lock(mu_);
        if (done_) {
          return;
        }
        n = head_;
        if (n != nullptr) {
          head_ = n->next;
          if (head_ == nullptr) {
            tail_ = nullptr;
          }
        }
      }
      if (n != nullptr) {
        n->run(n);
      } else {
        before_blocking();
        owner_.park();
      }
    }
  }

 private:
  void push(resume_node& node) noexcept {
    node.next = nullptr;
    std::lock_guard lock(mu_);
    (tail_ != nullptr ? tail_->next : head_) = &node;
    tail_ = &node;
    owner_.unpark();
  }

  mutex mu_;
  resume_node* head_ = nullptr;
  resume_node* tail_ = nullptr;
  bool done_ = false;
  parker owner_;
};

}  // namespace detail

/// Runs `t` to its end on the calling thread and returns its value, or rethrows its exception.
/// The calling thread runs the task until it suspends, then every resumption of it (and of the
/// tasks it awaits) that is not on an executor; it sleeps while nothing is queued. A task that
/// moved to an executor (co_await ex.schedule()) runs there, and sync_wait sleeps until it ends.
///
/// Preconditions: `t` is valid and was not started (reported in every build otherwise).
/// Not to be called from inside a coroutine or a worker that others wait for: it blocks the
/// calling thread.
template <class T>
auto sync_wait(task<T> t) -> T {
  auto h = detail::task_access::handle(t);
  detail::check_startable(h, "spindle::sync_wait on an empty or already started task");
  detail::run_loop loop;
  auto& p = h.promise();
  p.where = &loop;
  p.on_done = &detail::run_loop::finish;
  p.on_done_arg = &loop;
  h.resume();
  loop.run();
  return p.take();
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

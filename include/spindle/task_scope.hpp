// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle::task_scope: structured concurrency. Coroutines and callables spawned into a scope
// run on an executor; the scope waits for all of them, and no child outlives it.
//
//   spindle::task_scope scope(ex);                        // first error cancels the rest
//   for (auto& url : urls) scope.spawn(fetch(url));       // task<T>: results are discarded
//   scope.spawn([](std::stop_token st) { crunch(st); });  // a callable, with the scope's token
//   co_await scope.join();                                // or scope.wait() on a thread
//
// - Policies (Go's errgroup, trio's nursery): scope_policy::cancel_on_error (the default)
//   cancels every child at the first error; scope_policy::wait_all lets the others run on.
//   Either way join() / wait() return once every child has ended and rethrow the first error.
// - cancel() cancels every child: a coroutine child's current or next spindle wait ends with
//   task_cancelled (detail/coro/cancel.hpp), a child that has not started yet never runs, and a
//   callable that takes a std::stop_token sees stop requested. A child's task_cancelled caused
//   by the scope's own cancellation is not an error of the scope.
// - Children may spawn into the scope while it is joined (a recursive crawl): join() returns
//   once the count of running children reaches zero.
// - Cancellation flows: a coroutine cancelled while it awaits join() cancels the scope, goes on
//   waiting until every child has ended, and then throws task_cancelled.
// - No child outlives its scope: the destructor cancels what is left and waits (it blocks its
//   thread, so a coroutine should co_await join() before the scope goes out of its frame; a
//   worker blocked there with every other worker busy would wait for itself).
//
// Protocol: a plain count of running children under a mutex, and a spindle::notify that the
// last child to end signals under the same mutex; a joiner reads the count under the mutex, so
// once it sees zero no child touches the scope again. Each coroutine child registers its
// cancellation slot (detail/coro/cancel.hpp) in an intrusive list while it runs, which cancel()
// walks under the mutex. Model tests: tests/model/cancel_test.cpp.
//
// Thread safety: every member may be called from any thread or coroutine at once, except the
// destructor. The scope must outlive the co_await of join().
// Examples: tests/task_scope_test.cpp.

#include <spindle/detail/coro/cancel.hpp>
#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/executor.hpp>
#include <spindle/notify.hpp>
#include <spindle/task.hpp>
#include <spindle/task_traits.hpp>

#include <coroutine>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// What a task_scope does at a child's first error.
enum class scope_policy : unsigned char {
  cancel_on_error,  ///< cancel every other child (errgroup.WithContext)
  wait_all          ///< let the others run to their end
};

namespace detail {
/// `co_await own_cancel_slot{}`: the coroutine's own cancellation slot; never suspends.
struct own_cancel_slot {
  cancel_slot* slot = nullptr;
  [[nodiscard]] auto await_ready() const noexcept -> bool { return false; }
  template <class Promise>
  auto await_suspend(std::coroutine_handle<Promise> h) noexcept -> bool {
    slot = cancel_slot_of(h);
    return false;
  }
  [[nodiscard]] auto await_resume() const noexcept -> cancel_slot* { return slot; }
};

/// `co_await shielded(t)`: runs `t` where no cancellation reaches it (the scope's join waits
/// for its children through it, after passing its own cancellation on to them).
template <class T>
class shield_awaiter {
 public:
  explicit shield_awaiter(spindle::task<T>& t) noexcept : t_(&t) {}
  [[nodiscard]] auto await_ready() const noexcept -> bool { return false; }
  template <class Promise>
  auto await_suspend(std::coroutine_handle<Promise> parent) noexcept -> std::coroutine_handle<> {
    auto h = task_access::handle(*t_);
    check_startable(h, "a shielded task is empty or already started");
    auto& p = h.promise();
    p.continuation = parent;
    p.where = target_of(parent);
    p.cancel = nullptr;
    return h;
  }
  auto await_resume() -> T { return task_access::handle(*t_).promise().take(); }

 private:
  spindle::task<T>* t_;
};
}  // namespace detail

class task_scope {
 public:
  explicit task_scope(executor& ex, scope_policy policy = scope_policy::cancel_on_error) noexcept
      : ex_(&ex), policy_(policy) {}
  task_scope(task_scope const&) = delete;
  auto operator=(task_scope const&) -> task_scope& = delete;

  /// Cancels the children that are left and waits for them (see the file comment). The first
  /// error, if nobody joined after it, is dropped.
  ~task_scope() {
    if (running() != 0) {
      cancel();
      wait_all_ended();
    }
  }

  /// Runs the coroutine `t` as a child; its result is discarded, its exception is the scope's
  /// error. Throws: std::logic_error when the executor no longer accepts work from this thread
  /// (as executor::spawn); misuse (an empty or started task) is reported in every build.
  template <class T>
  void spawn(task<T> t) {
    detail::check_startable(detail::task_access::handle(t),
                            "spindle::task_scope::spawn of an empty or already started task");
    enter();
    try {
      ex_->spawn(run_child(std::move(t), this)).detach();
    } catch (...) {
      leave(nullptr, nullptr);
      throw;
    }
  }

  /// Runs `fn()` or `fn(stop_token)` (the scope's token, requested by cancel()) as a child.
  /// Throws: as spawn(task).
  template <class Fn>
  requires(std::invocable<std::decay_t<Fn>&> || std::invocable<std::decay_t<Fn>&, std::stop_token>)
  void spawn(Fn&& fn) {
    spawn(run_callable(std::decay_t<Fn>(std::forward<Fn>(fn)), this));
  }

  /// Cancels every child (see the file comment). Idempotent.
  void cancel() noexcept {
    std::lock_guard lock(mu_);
    cancel_locked();
  }

  /// Whether cancel() ran (or the first error cancelled the scope).
  [[nodiscard]] auto cancelled() const noexcept -> bool {
    std::lock_guard lock(mu_);
    return cancelled_;
  }

  /// How many children have not ended (a snapshot).
  [[nodiscard]] auto running() const noexcept -> std::size_t {
    std::lock_guard lock(mu_);
    return running_;
  }

  /// `co_await scope.join()`: waits until every child has ended, then rethrows the first error
  /// (and clears it). A coroutine cancelled meanwhile cancels the scope, still waits for every
  /// child, and then throws task_cancelled.
  [[nodiscard]] auto join() -> task<void> { return join_impl(this); }

  /// The thread form of join(): blocks the calling thread.
  void wait() {
    wait_all_ended();
    rethrow_first_error();
  }

 private:
  /// A running coroutine child's entry in the scope, for cancel().
  struct member {
    detail::cancel_slot* slot = nullptr;
    member* prev = nullptr;
    member* next = nullptr;
  };

  template <class T>
  static auto run_child(task<T> t, task_scope* self) -> task<void> {
    member m;
    m.slot = co_await detail::own_cancel_slot{};
    if (!self->attach(m)) {
      // The scope was cancelled before this child started: it does not run, and its frame
      // (the arguments it was given) is destroyed before leave(), as below.
      static_cast<void>(task<T>(std::move(t)));
      self->leave(nullptr, nullptr);
      co_return;
    }
    std::exception_ptr error;
    {
      // The child's frame lives in `child` and ends with this block, before leave(): once a
      // joiner sees the count at zero, every child's locals and arguments are destroyed too
      // (no child outlives its scope, its destructors included). A frame destroyed after
      // leave() ran its destructors while the scope's owner went on, and after the scope.
      task<T> child(std::move(t));
      try {
        co_await std::move(child);
      } catch (...) {
        error = std::current_exception();
      }
    }
    // The last touch of the scope: it may be destroyed as soon as the lock is released.
    self->leave(&m, std::move(error));
  }

  template <class Fn>
  static auto run_callable(Fn fn, task_scope* self) -> task<void> {
    if constexpr (std::is_invocable_v<Fn&, std::stop_token>) {
      std::invoke(fn, self->stop_.get_token());
    } else {
      std::invoke(fn);
    }
    co_return;
  }

  static auto join_impl(task_scope* self) -> task<void> { co_await join_awaiter(self); }

  /// Passes the joining coroutine's cancellation on to the scope, then waits, shielded, for
  /// every child.
  class join_awaiter {
   public:
    explicit join_awaiter(task_scope* s) noexcept : s_(s), waiting_(wait_task(s)) {}
    [[nodiscard]] auto await_ready() const noexcept -> bool { return false; }
    template <class Promise>
    auto await_suspend(std::coroutine_handle<Promise> h) noexcept -> std::coroutine_handle<> {
      cancel_.bind(detail::cancel_slot_of(h), &forward_cancel, s_);
      if (!cancel_.arm()) {
        s_->cancel();
      }
      return detail::shield_awaiter<void>(waiting_).await_suspend(h);
    }
    void await_resume() {
      cancel_.disarm();
      detail::task_access::handle(waiting_).promise().take();
      if (cancel_.requested()) {
        s_->clear_first_error();
        throw task_cancelled();
      }
      s_->rethrow_first_error();
    }

   private:
    static auto wait_task(task_scope* s) -> task<void> {
      for (;;) {
        if (s->running() == 0) {
          s->done_.notify_one();  // the next joiner, if any, looks as well
          co_return;
        }
        co_await s->done_.async_wait();
      }
    }
    static void forward_cancel(void* scope) noexcept { static_cast<task_scope*>(scope)->cancel(); }

    task_scope* s_;
    task<void> waiting_;
    detail::cancel_link cancel_;
  };

  void enter() {
    std::lock_guard lock(mu_);
    ++running_;
  }

  /// Links `m` while it runs; false when the scope is cancelled (the child should not run).
  auto attach(member& m) noexcept -> bool {
    std::lock_guard lock(mu_);
    if (cancelled_) {
      return false;
    }
    m.next = members_;
    if (members_ != nullptr) {
      members_->prev = &m;
    }
    members_ = &m;
    return true;
  }

  /// A child ended (`m` null: it never ran); records `error` and signals the joiners when it
  /// was the last.
  void leave(member* m, std::exception_ptr error) noexcept {
    std::lock_guard lock(mu_);
    if (m != nullptr) {
      (m->prev != nullptr ? m->prev->next : members_) = m->next;
      if (m->next != nullptr) {
        m->next->prev = m->prev;
      }
    }
    if (error && !(cancelled_ && is_cancellation(error))) {
      if (!first_error_) {
        first_error_ = std::move(error);
      }
      if (policy_ == scope_policy::cancel_on_error) {
        cancel_locked();
      }
    }
    if (--running_ == 0) {
      done_.notify_one();
    }
  }

  void cancel_locked() noexcept {
    if (!cancelled_) {
      cancelled_ = true;
      stop_.request_stop();
    }
    for (member* m = members_; m != nullptr; m = m->next) {
      static_cast<void>(m->slot != nullptr && m->slot->request());
    }
  }

  static auto is_cancellation(std::exception_ptr const& e) noexcept -> bool {
    try {
      std::rethrow_exception(e);
    } catch (task_cancelled const&) {
      return true;
    } catch (...) {
      return false;
    }
  }

  void wait_all_ended() {
    for (;;) {
      if (running() == 0) {
        done_.notify_one();
        return;
      }
      done_.wait();
    }
  }

  void rethrow_first_error() {
    std::exception_ptr e;
    {
      std::lock_guard lock(mu_);
      e = std::exchange(first_error_, nullptr);
    }
    if (e) {
      std::rethrow_exception(e);
    }
  }

  void clear_first_error() noexcept {
    std::lock_guard lock(mu_);
    first_error_ = nullptr;
  }

  executor* ex_;
  scope_policy policy_;
  mutable detail::mutex mu_;
  std::size_t running_ = 0;         // guarded by mu_
  member* members_ = nullptr;       // guarded by mu_
  bool cancelled_ = false;          // guarded by mu_
  std::exception_ptr first_error_;  // guarded by mu_
  std::stop_source stop_;
  notify done_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
#pragma once
// What a coroutine awaits besides tasks and join handles: a select over channel operations,
// and sleeping.
//
//   std::size_t i = co_await spindle::async_select(
//       spindle::on_recv(jobs, [&](std::optional<job> j) { ... }),
//       spindle::on_recv(shutdown, [&](std::optional<int>) { ... }),
//       spindle::on_timeout(1s, [&] { ... }));
//   co_await spindle::sleep_for(10ms);
//
// async_select takes the same cases as spindle::select (select.hpp) with the same rules
// (exactly one case completes, fair or biased, on_default never suspends), and runs the chosen
// handler in the coroutine. While nothing is ready the coroutine is suspended in the channels'
// wait lists, holding no thread, and resumed on its executor (task.hpp). The channel operations
// themselves are awaitable too: sender::async_send, receiver::async_recv (channel.hpp).
//
// sleep_for / sleep_until suspend the coroutine until a deadline, kept by the process's timer
// thread (detail/coro/timer.hpp); a sleeping coroutine holds no worker. Deadlines saturate as
// everywhere in the library. Timed awaitables (async_recv_for, on_timeout in async_select) use
// the same timer.
//
// Lifetime: the cases (and the value of an on_send case) must live until the co_await ends;
// made in the co_await expression, as above, they do.
// Examples: examples/coro_pipeline.cpp, tests/async_test.cpp.

#include <spindle/channel.hpp>
#include <spindle/detail/coro/cancel.hpp>
#include <spindle/detail/coro/channel_awaiters.hpp>
#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/coro/timer.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>
#include <spindle/task_traits.hpp>

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// `co_await async_select(cases...)`: the coroutine form of spindle::select; returns the index
/// of the chosen case after running its handler in the coroutine.
template <select_case... Cases>
requires(sizeof...(Cases) > 0)
auto async_select(Cases&&... cases) -> detail::select_awaiter<std::remove_cvref_t<Cases>...> {
  return detail::select_awaiter<std::remove_cvref_t<Cases>...>(
      /*biased=*/false, std::remove_cvref_t<Cases>(std::forward<Cases>(cases))...);
}

/// As async_select, preferring the earliest ready case.
template <select_case... Cases>
requires(sizeof...(Cases) > 0)
auto async_select_biased(Cases&&... cases)
    -> detail::select_awaiter<std::remove_cvref_t<Cases>...> {
  return detail::select_awaiter<std::remove_cvref_t<Cases>...>(
      /*biased=*/true, std::remove_cvref_t<Cases>(std::forward<Cases>(cases))...);
}

namespace detail {
/// `co_await sleep_for(d[, stop])`: a sleep that a stop request or the coroutine's cancellation
/// (detail/coro/cancel.hpp) ends early. With a stop token the result says which ended it (true:
/// the deadline passed; false: stop was requested first); cancellation throws task_cancelled.
///
/// Up to three parties may end the sleep: the timer entry's fire (timer thread), the stop
/// callback (the thread that requests stop) and the cancellation hook (the thread that cancels).
/// `state_` is moved once away from `sleeping`, by CAS, to `slept`, `stopped` or `cancelled`:
/// the winner alone resumes the coroutine, so it is resumed exactly once. A stop or cancel
/// winner first cancels the timer entry (cancel() waits for a fire that lost the CAS to
/// return), so no party touches the awaiter after the coroutine resumes; the stop callback
/// itself is destroyed with the awaiter, whose destructor waits for a callback running on
/// another thread (std::stop_callback's contract), and the cancellation hook is disarmed in
/// await_resume, which waits for a hook that is running.
///
/// The winner may come while await_suspend is still setting up (the timer fires at once, or
/// stop is requested while the callback is registered, possibly inline in its constructor):
/// `arrivals_` counts await_suspend's end and the winner's hand-over; the second of the two
/// continues the coroutine (the winner by resuming it, await_suspend by not suspending), as
/// the select awaiter's `arrivals_` does (detail/coro/select_awaiter.hpp).
///
/// Synchronization: `state_` (CAS, acq_rel) picks the winner; `arrivals_` (acq_rel) orders
/// await_suspend's set-up and the winner's work before whoever continues the coroutine.
class stoppable_sleep_awaiter {
 public:
  stoppable_sleep_awaiter(steady_time when, std::stop_token stop) noexcept
      : when_(when), stop_(std::move(stop)) {}
  stoppable_sleep_awaiter(stoppable_sleep_awaiter const&) = delete;
  auto operator=(stoppable_sleep_awaiter const&) -> stoppable_sleep_awaiter& = delete;
  // Awaiters are returned by value (guaranteed elision); a move before the first use is safe.
  stoppable_sleep_awaiter(stoppable_sleep_awaiter&& other) noexcept
      : when_(other.when_), stop_(std::move(other.stop_)) {}
  ~stoppable_sleep_awaiter() = default;

  /// Ready when the deadline has passed (true) or stop was requested (false) already.
  [[nodiscard]] auto await_ready() noexcept -> bool {
    if (std::chrono::steady_clock::now() >= when_) {
      return true;
    }
    if (stop_.stop_requested()) {
      // relaxed: nobody else has seen this awaiter yet.
      state_.store(stopped, std::memory_order_relaxed);
      return true;
    }
    return false;
  }

  /// Throws: std::bad_alloc when the timer's heap cannot grow (the coroutine continues with
  /// it); std::system_error if the timer thread cannot start.
  template <class Promise>
  auto await_suspend(std::coroutine_handle<Promise> h) -> bool {
    where_ = target_of(h);
    node_.handle = h;
    entry_.when = when_;
    entry_.fire = &fire;
    entry_.context = this;
    timer_service::instance().add(entry_);
    // Armed after the timer entry is queued: a cancellation that wins must find it to cancel.
    cancel_.bind(cancel_slot_of(h), &on_cancel, this);
    cancel_.note(pack_note(wait_kind::sleep, nullptr));
    if (!cancel_.arm()) {
      end_early(cancelled);
    }
    if (stop_.stop_possible()) {
      // May run on_stop at once (stop requested meanwhile); a stop requested later runs it on
      // the requesting thread.
      callback_.emplace(stop_, on_stop{this});
    }
    // Second arrival: the winner came during the set-up and left the coroutine to us.
    return !arrive();
  }

  /// True if the sleep lasted until its deadline, false if stop ended it first.
  /// Throws: task_cancelled when the coroutine's cancellation ended it.
  auto await_resume() -> bool {
    cancel_.disarm();
    cancel_.note(0);
    // relaxed: the winner's CAS came before its arrival, which the continuing party acquired
    // (or this thread wrote it).
    std::uint8_t const outcome = state_.load(std::memory_order_relaxed);
    if (outcome == cancelled) {
      throw task_cancelled();
    }
    return outcome != stopped;
  }

 private:
  static constexpr std::uint8_t sleeping = 0;
  static constexpr std::uint8_t slept = 1;
  static constexpr std::uint8_t stopped = 2;
  static constexpr std::uint8_t cancelled = 3;

  struct on_stop {
    stoppable_sleep_awaiter* self;
    void operator()() const noexcept { self->end_early(stopped); }
  };

  static void on_cancel(void* self) noexcept {
    static_cast<stoppable_sleep_awaiter*>(self)->end_early(cancelled);
  }

  /// Stop or cancellation: ends the sleep unless another party did.
  void end_early(std::uint8_t outcome) noexcept {
    if (!win(outcome)) {
      return;
    }
    // The entry fires no more once this returns (a fire running now lost the CAS above and
    // touches nothing after it).
    static_cast<void>(timer_service::instance().cancel(entry_));
    finish();
  }

  static void fire(timer_entry* e) noexcept {
    auto* self = static_cast<stoppable_sleep_awaiter*>(e->context);
    if (self->win(slept)) {
      self->finish();
    }
  }

  /// Whether this party ends the sleep (exactly one does).
  auto win(std::uint8_t outcome) noexcept -> bool {
    std::uint8_t expected = sleeping;
    // acq_rel: the loser must see that the sleep is over and do nothing more; the winner's
    // release is read by await_resume after its arrival. relaxed on failure: the loser touches
    // nothing afterwards.
    return state_.compare_exchange_strong(expected, outcome, std::memory_order_acq_rel,
                                          std::memory_order_relaxed);
  }

  /// Whether this arrival is the second of the two (see the class comment).
  auto arrive() noexcept -> bool {
    // acq_rel: the second arrival acquires the first's release: await_suspend's set-up, or
    // the winner's cancel, happen before the coroutine continues.
    return arrivals_.fetch_add(1, std::memory_order_acq_rel) == 1;
  }

  /// The winner's hand-over: resumes the coroutine unless await_suspend is still running (it
  /// then declines to suspend).
  void finish() noexcept {
    if (arrive()) {
      // SAFETY: await_suspend has returned true (the coroutine is suspended), and this party
      // alone won the sleep, so it alone resumes the coroutine, once.
      resume_on(where_, node_);
    }
  }

  steady_time when_;
  std::stop_token stop_;
  resume_target* where_ = nullptr;
  timer_entry entry_;
  resume_node node_;
  atomic<std::uint8_t> state_{sleeping};
  atomic<std::uint8_t> arrivals_{0};
  cancel_link cancel_;
  std::optional<std::stop_callback<on_stop>> callback_;
};

/// `co_await sleep_until(t)`: the sleep above without a stop token; void.
class sleep_awaiter : public stoppable_sleep_awaiter {
 public:
  explicit sleep_awaiter(steady_time when) noexcept : stoppable_sleep_awaiter(when, {}) {}
  /// Throws: task_cancelled when the coroutine's cancellation ended the sleep.
  void await_resume() { static_cast<void>(stoppable_sleep_awaiter::await_resume()); }
};
}  // namespace detail

/// Suspends the coroutine for `d` (at least), holding no thread.
template <class Rep, class Period>
auto sleep_for(std::chrono::duration<Rep, Period> d) -> detail::sleep_awaiter {
  return detail::sleep_awaiter(detail::deadline_after(d));
}

/// Suspends the coroutine until `t`, on any clock (measured as the time left on steady_clock).
template <class Clock, class Duration>
auto sleep_until(std::chrono::time_point<Clock, Duration> t) -> detail::sleep_awaiter {
  return detail::sleep_awaiter(detail::to_steady(t));
}

/// As sleep_for(d), but `stop.request_stop()` (from any thread) ends the sleep early and
/// resumes the coroutine at once: `co_await` yields true when the sleep lasted `d` (or `d`
/// had already passed), false when stop was requested first (or already). A coroutine that
/// sleeps for an hour this way does not hold its executor's shutdown for the hour. The timer
/// entry is cancelled by the request, so nothing of the sleep outlives it.
template <class Rep, class Period>
auto sleep_for(std::chrono::duration<Rep, Period> d, std::stop_token stop)
    -> detail::stoppable_sleep_awaiter {
  return detail::stoppable_sleep_awaiter(detail::deadline_after(d), std::move(stop));
}

/// As sleep_until(t), with a stop token as in sleep_for(d, stop).
template <class Clock, class Duration>
auto sleep_until(std::chrono::time_point<Clock, Duration> t, std::stop_token stop)
    -> detail::stoppable_sleep_awaiter {
  return detail::stoppable_sleep_awaiter(detail::to_steady(t), std::move(stop));
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

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
#include <spindle/detail/coro/channel_awaiters.hpp>
#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/coro/timer.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <chrono>
#include <coroutine>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// `co_await async_select(cases...)`: the coroutine form of spindle::select; returns the index
/// of the chosen case after running its handler in the coroutine.
template <select_case... Cases>
requires(sizeof...(Cases) > 0) auto async_select(Cases&&... cases)
    -> detail::select_awaiter<std::remove_cvref_t<Cases>...> {
  return detail::select_awaiter<std::remove_cvref_t<Cases>...>(
      /*biased=*/false, std::remove_cvref_t<Cases>(std::forward<Cases>(cases))...);
}

/// As async_select, preferring the earliest ready case.
template <select_case... Cases>
requires(sizeof...(Cases) > 0) auto async_select_biased(Cases&&... cases)
    -> detail::select_awaiter<std::remove_cvref_t<Cases>...> {
  return detail::select_awaiter<std::remove_cvref_t<Cases>...>(
      /*biased=*/true, std::remove_cvref_t<Cases>(std::forward<Cases>(cases))...);
}

namespace detail {
/// `co_await sleep_until(t)`: a timer entry that resumes the coroutine on its target.
class sleep_awaiter {
 public:
  explicit sleep_awaiter(steady_time when) noexcept : when_(when) {}
  sleep_awaiter(sleep_awaiter const&) = delete;
  auto operator=(sleep_awaiter const&) -> sleep_awaiter& = delete;
  sleep_awaiter(sleep_awaiter&& other) noexcept : when_(other.when_) {}

  [[nodiscard]] auto await_ready() const noexcept -> bool {
    return std::chrono::steady_clock::now() >= when_;
  }

  /// Throws: std::bad_alloc when the timer's heap cannot grow (the coroutine continues with
  /// it); std::system_error if the timer thread cannot start.
  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> h) {
    where_ = target_of(h);
    node_.handle = h;
    entry_.when = when_;
    entry_.fire = &fire;
    entry_.context = this;
    timer_service::instance().add(entry_);
  }

  void await_resume() const noexcept {}

 private:
  static void fire(timer_entry* e) noexcept {
    auto* self = static_cast<sleep_awaiter*>(e->context);
    resume_on(self->where_, self->node_);
  }

  steady_time when_;
  resume_target* where_ = nullptr;
  timer_entry entry_;
  resume_node node_;
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

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

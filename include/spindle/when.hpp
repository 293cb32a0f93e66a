// SPDX-License-Identifier: BSL-1.0
#pragma once
// Running coroutines side by side and racing them: when_all, when_any, timeout, and the
// cancellation checks a coroutine can make itself.
//
//   auto [user, feed] = co_await spindle::when_all(load_user(id), load_feed(id));
//   auto first = co_await spindle::when_any(ask(replica_a), ask(replica_b));   // a variant
//   std::optional<reply> r = co_await spindle::timeout(ask(server), 200ms);
//
// Each child runs as its own coroutine on the awaiting coroutine's target: on an executor the
// children are queued as fresh tasks, so idle workers take them and they run in parallel; inside
// sync_wait they take turns on its thread. Nothing outlives the co_await: it returns only once
// every child has ended.
//
// - when_all(tasks...) -> std::tuple of the results (std::monostate for a void task). The first
//   child that throws cancels the others (detail/coro/cancel.hpp: the spindle awaitable each is
//   suspended in ends with task_cancelled) and, once all have ended, its exception is rethrown.
// - when_any(tasks...) -> std::variant of the results, whose index() is the child that ended
//   first. The others are cancelled and awaited before it returns (their results are
//   destroyed, their exceptions ignored). If the first child to end threw, that is rethrown.
// - timeout(task, d) -> std::optional<T> (bool for a void task): the task's result when it
//   ends within `d`, else std::nullopt (false) once the task, cancelled at the deadline, has
//   ended. A task that ignores cancellation (it never waits in a spindle awaitable) is awaited
//   to its end; its result is then discarded.
// - Range forms: when_all(std::vector<task<T>>) -> std::vector<T> (void for void tasks), and
//   when_any(std::vector<task<T>>) -> std::pair<std::size_t, T> (the index alone for void).
//
// Cancellation flows: if the awaiting coroutine is itself cancelled (join_handle::cancel, an
// enclosing when_any, timeout or task_scope), every child is cancelled and the co_await ends
// with the children's outcome, task_cancelled unless they finished first.
//
// A coroutine that computes for long between waits can look itself:
//   if (co_await spindle::cancellation_requested()) { ... }   // bool
//   co_await spindle::throw_if_cancelled();                     // throws task_cancelled
//
// Thread safety: the children run concurrently with each other; what they share is the user's
// to synchronise. Everything a child did happens before the co_await returns.
// Examples: tests/when_test.cpp.

#include <spindle/async.hpp>
#include <spindle/detail/coro/cancel.hpp>
#include <spindle/detail/coro/group.hpp>
#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>
#include <spindle/task.hpp>
#include <spindle/task_traits.hpp>

#include <array>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <span>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

namespace detail {

/// The value a child of type T contributes: T, or std::monostate for void.
template <class T>
using child_value_t = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

/// Awaits `t` and stores its value in `*out`, or tells the group it threw.
template <class T>
auto child_runner(spindle::task<T> t, std::optional<child_value_t<T>>* out, child_group* g,
                  std::size_t i) -> spindle::task<void> {
  std::exception_ptr error;
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(t);
      out->emplace();
    } else {
      T value = co_await std::move(t);
      out->emplace(std::move(value));
    }
  } catch (...) {
    error = std::current_exception();
  }
  g->ended(i, std::move(error));
}

/// `co_await cancellation_requested()`: reads the coroutine's own slot; never suspends.
class cancellation_query {
 public:
  explicit cancellation_query(bool throw_if) noexcept : throw_(throw_if) {}
  [[nodiscard]] auto await_ready() const noexcept -> bool { return false; }
  template <class Promise>
  auto await_suspend(std::coroutine_handle<Promise> h) noexcept -> bool {
    cancel_slot const* slot = cancel_slot_of(h);
    requested_ = slot != nullptr && slot->requested();
    return false;
  }
  auto await_resume() const -> bool {
    if (throw_ && requested_) {
      throw task_cancelled();
    }
    return requested_;
  }

 private:
  bool throw_;
  bool requested_ = false;
};

template <class... T, std::size_t... I>
auto when_all_impl(std::index_sequence<I...> /*indices*/, spindle::task<T>... ts)
    -> spindle::task<std::tuple<child_value_t<T>...>> {
  child_group g(sizeof...(T));
  std::tuple<std::optional<child_value_t<T>>...> outs;
  std::array<spindle::task<void>, sizeof...(T)> runners{
      child_runner<T>(std::move(ts), &std::get<I>(outs), &g, I)...};
  co_await g.run(std::span<spindle::task<void>>(runners));
  std::tuple<child_value_t<T>...> result(std::move(*std::get<I>(outs))...);
  co_return result;
}

template <class... T, std::size_t... I>
auto when_any_impl(std::index_sequence<I...> /*indices*/, spindle::task<T>... ts)
    -> spindle::task<std::variant<child_value_t<T>...>> {
  child_group g(sizeof...(T));
  g.stop_at_first();
  std::tuple<std::optional<child_value_t<T>>...> outs;
  std::array<spindle::task<void>, sizeof...(T)> runners{
      child_runner<T>(std::move(ts), &std::get<I>(outs), &g, I)...};
  co_await g.run(std::span<spindle::task<void>>(runners));
  std::size_t const w = g.winner();
  std::optional<std::variant<child_value_t<T>...>> result;
  static_cast<void>(
      ((w == I ? (result.emplace(std::in_place_index<I>, std::move(*std::get<I>(outs))), true)
               : false) ||
       ...));
  co_return std::move(*result);
}

inline auto sleep_child(steady_time when) -> spindle::task<void> {
  co_await sleep_until(when);
}

template <class T>
auto timeout_impl(spindle::task<T> t, steady_time when)
    -> spindle::task<std::conditional_t<std::is_void_v<T>, bool, std::optional<T>>> {
  auto raced = when_any_impl(std::index_sequence<0, 1>{}, std::move(t), sleep_child(when));
  auto r = co_await std::move(raced);
  if constexpr (std::is_void_v<T>) {
    co_return r.index() == 0;
  } else {
    std::optional<T> out;
    if (r.index() == 0) {
      out.emplace(std::move(std::get<0>(r)));
    }
    co_return out;
  }
}

}  // namespace detail

/// Runs every task side by side; returns their results in order. See the file comment.
template <class... T>
requires(sizeof...(T) > 0)
auto when_all(task<T>... tasks) -> task<std::tuple<detail::child_value_t<T>...>> {
  return detail::when_all_impl(std::index_sequence_for<T...>{}, std::move(tasks)...);
}

/// Runs every task side by side; returns the result of the first to end, at its index in the
/// variant, after the others were cancelled and have ended. See the file comment.
template <class... T>
requires(sizeof...(T) > 0)
auto when_any(task<T>... tasks) -> task<std::variant<detail::child_value_t<T>...>> {
  return detail::when_any_impl(std::index_sequence_for<T...>{}, std::move(tasks)...);
}

/// The range form of when_all: the results in the order of `tasks` (nothing for void tasks).
template <class T>
auto when_all(std::vector<task<T>> tasks)
    -> task<std::conditional_t<std::is_void_v<T>, void, std::vector<T>>> {
  detail::child_group g(tasks.size());
  std::vector<std::optional<detail::child_value_t<T>>> outs(tasks.size());
  std::vector<task<void>> runners;
  runners.reserve(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    runners.push_back(detail::child_runner<T>(std::move(tasks[i]), &outs[i], &g, i));
  }
  co_await g.run(std::span<task<void>>(runners));
  if constexpr (!std::is_void_v<T>) {
    std::vector<T> result;
    result.reserve(outs.size());
    for (auto& o : outs) {
      result.push_back(std::move(*o));
    }
    co_return result;
  }
}

/// The range form of when_any: the index of the first task to end and its result (the index
/// alone for void tasks). Throws std::invalid_argument for an empty vector.
template <class T>
auto when_any(std::vector<task<T>> tasks)
    -> task<std::conditional_t<std::is_void_v<T>, std::size_t, std::pair<std::size_t, T>>> {
  if (tasks.empty()) {
    throw std::invalid_argument("spindle::when_any of no tasks would never end");
  }
  detail::child_group g(tasks.size());
  g.stop_at_first();
  std::vector<std::optional<detail::child_value_t<T>>> outs(tasks.size());
  std::vector<task<void>> runners;
  runners.reserve(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    runners.push_back(detail::child_runner<T>(std::move(tasks[i]), &outs[i], &g, i));
  }
  co_await g.run(std::span<task<void>>(runners));
  std::size_t const w = g.winner();
  if constexpr (std::is_void_v<T>) {
    co_return w;
  } else {
    std::pair<std::size_t, T> result(w, std::move(*outs[w]));
    co_return result;
  }
}

/// `t`'s result if it ends within `d`, else std::nullopt (false for a void task) once `t`,
/// cancelled at the deadline, has ended. See the file comment.
template <class T, class Rep, class Period>
auto timeout(task<T> t, std::chrono::duration<Rep, Period> d)
    -> task<std::conditional_t<std::is_void_v<T>, bool, std::optional<T>>> {
  return detail::timeout_impl(std::move(t), detail::deadline_after(d));
}

/// As timeout(t, d), with a deadline on any clock.
template <class T, class Clock, class Duration>
auto timeout_at(task<T> t, std::chrono::time_point<Clock, Duration> deadline)
    -> task<std::conditional_t<std::is_void_v<T>, bool, std::optional<T>>> {
  return detail::timeout_impl(std::move(t), detail::to_steady(deadline));
}

/// `co_await cancellation_requested()`: whether this coroutine's cancellation was requested
/// (join_handle::cancel, or an enclosing when_all, when_any, timeout or task_scope). Never
/// suspends.
[[nodiscard]] inline auto cancellation_requested() noexcept -> detail::cancellation_query {
  return detail::cancellation_query(false);
}

/// `co_await throw_if_cancelled()`: throws task_cancelled when this coroutine's cancellation
/// was requested; a point where a coroutine that computes between waits can stop.
[[nodiscard]] inline auto throw_if_cancelled() noexcept -> detail::cancellation_query {
  return detail::cancellation_query(true);
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

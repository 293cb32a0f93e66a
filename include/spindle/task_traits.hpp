// SPDX-License-Identifier: BSL-1.0
#pragma once
// The vocabulary of spindle's executor that a user names: which callables it runs
// (`task_callable`), what they return (`task_result_t`), and what a void callable's side of a
// `join` returns (`void_result`). Included by <spindle/executor.hpp>.

#include <spindle/detail/sync/config.hpp>

#include <concepts>
#include <functional>
#include <stdexcept>
#include <stop_token>
#include <type_traits>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// The value a `join` side or a task group returns for a callable whose result is void.
struct void_result {
  friend auto operator==(void_result, void_result) noexcept -> bool = default;
};

/// A callable the executor can run: invocable with no arguments, movable into a task record,
/// and returning void or a movable object (the result is stored until the join reads it, so
/// references are not allowed: they could dangle).
template <class Fn>
concept task_callable =
    std::invocable<std::decay_t<Fn>&> && std::move_constructible<std::decay_t<Fn>> &&
    (std::is_void_v<std::invoke_result_t<std::decay_t<Fn>&>> ||
     (std::is_object_v<std::invoke_result_t<std::decay_t<Fn>&>> &&
      std::move_constructible<std::invoke_result_t<std::decay_t<Fn>&>>));

/// The result type of a task callable.
template <task_callable Fn>
using task_result_t = std::invoke_result_t<std::decay_t<Fn>&>;

/// A callable that takes a std::stop_token and is otherwise a task callable: executor::spawn
/// and post pass it the executor's shutdown token, task_group::spawn the group's cancellation
/// token, so that a long task can end early when nobody needs its work any more.
template <class Fn>
concept stoppable_task_callable =
    !task_callable<Fn> && std::invocable<std::decay_t<Fn>&, std::stop_token> &&
    std::move_constructible<std::decay_t<Fn>> &&
    (std::is_void_v<std::invoke_result_t<std::decay_t<Fn>&, std::stop_token>> ||
     (std::is_object_v<std::invoke_result_t<std::decay_t<Fn>&, std::stop_token>> &&
      std::move_constructible<std::invoke_result_t<std::decay_t<Fn>&, std::stop_token>>));

/// What join_handle::join() throws for a task that join_handle::cancel() cancelled before it
/// started, and what a spindle awaitable throws into a coroutine whose cancellation was
/// requested while it waited there (detail/coro/cancel.hpp; join_handle::cancel, when_all,
/// when_any, timeout, task_scope).
class task_cancelled : public std::runtime_error {
 public:
  task_cancelled() : std::runtime_error("spindle: the task was cancelled") {}
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

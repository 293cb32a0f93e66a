// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle::notify: wake one waiter, or all current waiters, for threads and coroutines alike
// (tokio's Notify: tokio-rs/tokio tokio/src/sync/notify.rs).
//
//   spindle::notify config_changed;
//   // a coroutine:                           // another thread or coroutine:
//   co_await config_changed.async_wait();     config_changed.notify_one();
//
// - notify_one() wakes the oldest waiter; with nobody waiting it stores one permit, which the
//   next wait consumes at once. Permits do not add up: several notify_one() calls with nobody
//   waiting store one. So a notify_one() that comes just before the wait is not lost.
// - notify_all() wakes every waiter waiting at that moment and stores nothing: a wait that
//   starts later waits for the next notification.
// - Waiters are served in the order they started waiting. Every wait has `_for`, `_until` and
//   `std::stop_token` forms for threads and coroutines (false: the deadline passed or stop
//   came), and on_notified(n, f) is a select case.
//
// Protocol: the fair semaphore of detail/sync/fair_semaphore.hpp, saturating at one permit; a
// wait acquires one permit and keeps it, notify_one releases one, notify_all completes every
// queued waiter without permits (model tests: tests/model/semaphore_test.cpp).
// Thread safety: every member may be called from any number of threads and coroutines at once.
// A notify must outlive its waiters.

#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/sync/acquire_case.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>
#include <spindle/detail/sync/fair_semaphore.hpp>

#include <chrono>
#include <optional>
#include <stop_token>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

namespace detail {
/// The permit a completed wait on a notify consumes: kept, never returned.
struct consumed_permit {
  explicit consumed_permit(held_permits held) noexcept { static_cast<void>(held.forget()); }
};

/// `co_await n.async_wait...()`: void without an extra case, else bool (false: timed out or
/// stopped).
template <class... Extra>
class notify_awaiter : public acquire_awaiter<consumed_permit, Extra...> {
  using base = acquire_awaiter<consumed_permit, Extra...>;

 public:
  using base::base;

  auto await_resume() {
    if constexpr (sizeof...(Extra) == 0) {
      static_cast<void>(base::await_resume());
    } else {
      return base::await_resume().has_value();
    }
  }
};
}  // namespace detail

class notify {
 public:
  notify() noexcept : sem_(0, 1) {}
  notify(notify const&) = delete;
  auto operator=(notify const&) -> notify& = delete;

  /// Wakes the oldest waiter, or stores one permit for the next wait when nobody waits.
  void notify_one() noexcept { static_cast<void>(sem_.release(1)); }
  /// Wakes every waiter waiting now; stores nothing.
  void notify_all() noexcept { sem_.grant_all(); }

  /// How many parties wait now (a snapshot).
  [[nodiscard]] auto waiting() const noexcept -> std::size_t { return sem_.waiting(); }

  /// Blocks the calling thread until notified (or consumes the stored permit).
  void wait() { static_cast<void>(detail::acquire_blocking<detail::consumed_permit>(sem_, 1)); }
  /// As wait(); false once stop is requested on `stop` first.
  [[nodiscard]] auto wait(std::stop_token stop) -> bool {
    return detail::acquire_blocking_until<detail::consumed_permit>(sem_, 1, std::nullopt, &stop)
        .has_value();
  }
  /// As wait(); false when `timeout` passed first.
  template <class Rep, class Period>
  [[nodiscard]] auto wait_for(std::chrono::duration<Rep, Period> timeout) -> bool {
    return wait_at(detail::deadline_after(timeout));
  }
  /// As wait(); false when `deadline` (on any clock) passed first.
  template <class Clock, class Duration>
  [[nodiscard]] auto wait_until(std::chrono::time_point<Clock, Duration> deadline) -> bool {
    return wait_at(detail::to_steady(deadline));
  }

  /// `co_await n.async_wait()`: the coroutine form of wait().
  [[nodiscard]] auto async_wait() -> detail::notify_awaiter<> {
    return detail::notify_awaiter<>(sem_, 1);
  }
  /// -> bool: false once stop is requested on `stop` first.
  [[nodiscard]] auto async_wait(std::stop_token stop)
      -> detail::notify_awaiter<detail::stop_case<detail::no_handler>> {
    return {sem_, 1, detail::stop_case<detail::no_handler>(std::move(stop), {})};
  }
  /// -> bool: false when `timeout` passed first.
  template <class Rep, class Period>
  [[nodiscard]] auto async_wait_for(std::chrono::duration<Rep, Period> timeout)
      -> detail::notify_awaiter<detail::timeout_case<detail::no_handler>> {
    return {sem_, 1, detail::timeout_case<detail::no_handler>(detail::deadline_after(timeout), {})};
  }
  /// -> bool: false when `deadline` (on any clock) passed first.
  template <class Clock, class Duration>
  [[nodiscard]] auto async_wait_until(std::chrono::time_point<Clock, Duration> deadline)
      -> detail::notify_awaiter<detail::timeout_case<detail::no_handler>> {
    return {sem_, 1, detail::timeout_case<detail::no_handler>(detail::to_steady(deadline), {})};
  }

 private:
  template <class F>
  friend auto on_notified(notify& n, F f) -> detail::acquire_case<detail::consumed_permit, F>;

  auto wait_at(detail::steady_time deadline) -> bool {
    return detail::acquire_blocking_until<detail::consumed_permit>(sem_, 1, deadline, nullptr)
        .has_value();
  }

  detail::fair_semaphore sem_;
};

/// A select case chosen when `n` is notified (it consumes the notification); `f()` runs then.
template <class F>
auto on_notified(notify& n, F f) -> detail::acquire_case<detail::consumed_permit, F> {
  return detail::acquire_case<detail::consumed_permit, F>(n.sem_, 1, std::move(f));
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

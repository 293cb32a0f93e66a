// SPDX-License-Identifier: BSL-1.0
#pragma once
// A fair counting semaphore for threads and coroutines alike: limits how many parties use a
// resource at once (connections, memory, requests in flight).
//
//   spindle::semaphore slots(8);
//   {
//     auto permit = slots.acquire();        // a thread blocks until one of the 8 is free
//     ...                                   // the permit returns when `permit` is destroyed
//   }
//   auto p = co_await slots.async_acquire(2);     // a coroutine suspends, holding no thread
//   std::size_t i = spindle::select(              // or wait for a permit and a message at once
//       spindle::on_acquire(slots, [&](spindle::semaphore_permit p) { ... }),
//       spindle::on_recv(shutdown, [&](std::optional<int>) { ... }));
//
// - Permits come back through a guard, semaphore_permit: returned when it is destroyed or
//   release()d, kept for good by forget(). semaphore::release(n) adds permits without a guard
//   (a semaphore used as a signal).
// - Fair: waiters are served in the order they started waiting, a waiter for n permits
//   included (it collects permits as they are released while those behind it wait). A permit
//   released while anyone waits goes to the waiters, so no newcomer overtakes them; with nobody
//   waiting, acquiring is one compare-and-swap.
// - Every wait has a timed form (acquire_for, acquire_until: nullopt when the deadline passed,
//   saturating as every timeout in the library) and a std::stop_token form (nullopt when stop
//   was requested), for threads and coroutines; a permit that is there wins over an expired
//   deadline or a requested stop.
// - Acquiring 0 permits succeeds at once.
//
// Misuse, in every build: acquiring more than max_permits at once throws
// std::invalid_argument (it could never succeed); release() beyond max_permits throws
// std::overflow_error; a guard returning permits to a semaphore that release() has filled
// beyond max_permits aborts with a message.
//
// Thread safety: every member may be called from any number of threads and coroutines at once.
// The semaphore must outlive its waiters and its permits.
// Protocol and proof: detail/sync/fair_semaphore.hpp, tests/model/semaphore_test.cpp.
// Examples: tests/semaphore_test.cpp.

#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/sync/acquire_case.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>
#include <spindle/detail/sync/fair_semaphore.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// Permits taken from a semaphore, returned when the permit is destroyed. Move-only; a
/// moved-from or default-made permit holds nothing.
class semaphore_permit {
 public:
  semaphore_permit() noexcept = default;
  explicit semaphore_permit(detail::held_permits held) noexcept : held_(std::move(held)) {}

  /// How many permits this holds (0 once released, forgotten or moved from).
  [[nodiscard]] auto count() const noexcept -> std::size_t { return held_.count(); }
  /// Returns the permits now.
  void release() noexcept { held_.give_back(); }
  /// Never returns the permits (the semaphore has that many fewer for good); returns how many.
  auto forget() noexcept -> std::size_t { return held_.forget(); }

 private:
  detail::held_permits held_;
};

class semaphore {
 public:
  /// The most permits a semaphore holds.
  static constexpr std::size_t max_permits = detail::fair_semaphore::max_permits;

  /// Throws: std::invalid_argument when `permits` exceeds max_permits.
  explicit semaphore(std::size_t permits) : sem_(checked(permits, "spindle::semaphore")) {}
  semaphore(semaphore const&) = delete;
  auto operator=(semaphore const&) -> semaphore& = delete;

  /// Blocks the calling thread until `n` permits are its own.
  /// Throws: std::invalid_argument when n exceeds max_permits.
  [[nodiscard]] auto acquire(std::size_t n = 1) -> semaphore_permit {
    return detail::acquire_blocking<semaphore_permit>(sem_, checked(n, "acquire"));
  }
  /// As acquire(n), but gives up (nullopt) once stop is requested on `stop`.
  [[nodiscard]] auto acquire(std::stop_token stop, std::size_t n = 1)
      -> std::optional<semaphore_permit> {
    return detail::acquire_blocking_until<semaphore_permit>(sem_, checked(n, "acquire"),
                                                            std::nullopt, &stop);
  }
  /// As acquire(n), but gives up (nullopt) after `timeout`.
  template <class Rep, class Period>
  [[nodiscard]] auto acquire_for(std::chrono::duration<Rep, Period> timeout, std::size_t n = 1)
      -> std::optional<semaphore_permit> {
    return acquire_at(detail::deadline_after(timeout), n);
  }
  /// As acquire(n), but gives up (nullopt) at `deadline`, on any clock.
  template <class Clock, class Duration>
  [[nodiscard]] auto acquire_until(std::chrono::time_point<Clock, Duration> deadline,
                                   std::size_t n = 1) -> std::optional<semaphore_permit> {
    return acquire_at(detail::to_steady(deadline), n);
  }
  /// Takes `n` permits if they are there and nobody waits for them; never blocks.
  [[nodiscard]] auto try_acquire(std::size_t n = 1) -> std::optional<semaphore_permit> {
    if (checked(n, "try_acquire") == 0 || sem_.try_acquire(n)) {
      return semaphore_permit(detail::held_permits(sem_, n));
    }
    return std::nullopt;
  }

  /// `co_await sem.async_acquire(n)` -> semaphore_permit: the coroutine form of acquire(n).
  [[nodiscard]] auto async_acquire(std::size_t n = 1) -> detail::acquire_awaiter<semaphore_permit> {
    return detail::acquire_awaiter<semaphore_permit>(sem_, checked(n, "async_acquire"));
  }
  /// -> std::optional<semaphore_permit>: nullopt once stop is requested on `stop`.
  [[nodiscard]] auto async_acquire(std::stop_token stop, std::size_t n = 1)
      -> detail::acquire_awaiter<semaphore_permit, detail::stop_case<detail::no_handler>> {
    return {sem_, checked(n, "async_acquire"),
            detail::stop_case<detail::no_handler>(std::move(stop), {})};
  }
  /// -> std::optional<semaphore_permit>: nullopt after `timeout`.
  template <class Rep, class Period>
  [[nodiscard]] auto async_acquire_for(std::chrono::duration<Rep, Period> timeout,
                                       std::size_t n = 1)
      -> detail::acquire_awaiter<semaphore_permit, detail::timeout_case<detail::no_handler>> {
    return {sem_, checked(n, "async_acquire_for"),
            detail::timeout_case<detail::no_handler>(detail::deadline_after(timeout), {})};
  }
  /// -> std::optional<semaphore_permit>: nullopt at `deadline`, on any clock.
  template <class Clock, class Duration>
  [[nodiscard]] auto async_acquire_until(std::chrono::time_point<Clock, Duration> deadline,
                                         std::size_t n = 1)
      -> detail::acquire_awaiter<semaphore_permit, detail::timeout_case<detail::no_handler>> {
    return {sem_, checked(n, "async_acquire_until"),
            detail::timeout_case<detail::no_handler>(detail::to_steady(deadline), {})};
  }

  /// Adds `n` permits (to the waiters first, in order).
  /// Throws: std::overflow_error, adding nothing, when the semaphore would hold more than
  /// max_permits.
  void release(std::size_t n = 1) {
    if (n > max_permits || !sem_.release(n)) {
      throw std::overflow_error("spindle::semaphore::release: more than max_permits permits");
    }
  }

  /// The permits free now: 0 while anyone waits (a snapshot).
  [[nodiscard]] auto available() const noexcept -> std::size_t { return sem_.available(); }
  /// How many parties wait for permits now (a snapshot).
  [[nodiscard]] auto waiting() const noexcept -> std::size_t { return sem_.waiting(); }

 private:
  template <class F>
  friend auto on_acquire(semaphore& sem, std::size_t n, F f)
      -> detail::acquire_case<semaphore_permit, F>;

  static auto checked(std::size_t n, char const* what) -> std::size_t {
    if (n > max_permits) {
      throw std::invalid_argument(std::string(what) + ": more than max_permits permits");
    }
    return n;
  }

  auto acquire_at(detail::steady_time deadline, std::size_t n) -> std::optional<semaphore_permit> {
    return detail::acquire_blocking_until<semaphore_permit>(sem_, checked(n, "acquire_until"),
                                                            deadline, nullptr);
  }

  detail::fair_semaphore sem_;
};

/// A select case that acquires `n` permits of `sem`; `f(semaphore_permit)` runs when it is
/// chosen. Usable in spindle::select, async_select and dynamic_select.
/// Throws: std::invalid_argument when n exceeds max_permits.
template <class F>
auto on_acquire(semaphore& sem, std::size_t n, F f) -> detail::acquire_case<semaphore_permit, F> {
  return detail::acquire_case<semaphore_permit, F>(sem.sem_, semaphore::checked(n, "on_acquire"),
                                                   std::move(f));
}

/// A select case that acquires one permit of `sem`.
template <class F>
auto on_acquire(semaphore& sem, F f) -> detail::acquire_case<semaphore_permit, F> {
  return on_acquire(sem, 1, std::move(f));
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

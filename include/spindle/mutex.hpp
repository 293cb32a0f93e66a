// SPDX-License-Identifier: BSL-1.0
#pragma once
// Mutual exclusion for threads and coroutines alike: spindle::mutex and the reader-writer
// spindle::shared_mutex. Unlike std::mutex, a coroutine can wait for them without blocking its
// worker, and may hold one across a co_await (the guard is not tied to a thread).
//
//   spindle::mutex m;
//   {
//     auto guard = m.lock();                 // a thread blocks
//     ...                                    // unlocked when `guard` is destroyed
//   }
//   auto guard = co_await m.async_lock();    // a coroutine suspends, holding no thread
//   auto maybe = m.lock_for(5ms);            // std::optional<mutex_guard>: nullopt, timed out
//   spindle::select(spindle::on_lock(m, [&](spindle::mutex_guard g) { ... }),
//                   spindle::on_recv(shutdown, [&](std::optional<int>) { ... }));
//
//   spindle::shared_mutex rw;
//   auto r = rw.lock_shared();               // any number of readers at once
//   auto w = co_await rw.async_lock();       // one writer, no reader
//
// - Fair (FIFO hand-off): an unlock while anyone waits hands the lock to the oldest waiter;
//   a newcomer never overtakes a waiter, so no waiter starves. A writer of a shared_mutex
//   waits only for the readers before it; readers that come after a waiting writer wait for it.
//   Uncontended, lock and unlock are one compare-and-swap each.
// - lock() returns a guard (mutex_guard); the guard is the only way to unlock, so an unlock
//   by a party that does not hold the lock, or a second unlock, cannot be written. A guard may
//   be moved to another thread or coroutine, and unlock() early.
// - Every wait has a timed form and a std::stop_token form (nullopt when the deadline passed
//   or stop was requested), for threads and coroutines; a free lock wins over an expired
//   deadline or a requested stop.
// - Not recursive: a thread or coroutine that locks a mutex it holds waits for itself
//   forever (as with std::mutex); use try_lock or a timed form where that can happen.
//
// Protocol: a fair semaphore (detail/sync/fair_semaphore.hpp) of one permit for mutex, and of
// shared_mutex::max_readers permits for shared_mutex, where a reader takes one and a writer
// all (tokio's RwLock is built the same way: tokio-rs/tokio tokio/src/sync/rwlock.rs).
// Thread safety: every member may be called from any number of threads and coroutines at once.
// A mutex must outlive its guards and waiters.
// Examples: tests/mutex_test.cpp.

#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/sync/acquire_case.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>
#include <spindle/detail/sync/fair_semaphore.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <stop_token>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// Holds a mutex (or a shared_mutex, exclusively or shared) until destroyed or unlock()ed.
/// Move-only; a moved-from or default-made guard holds nothing.
class mutex_guard {
 public:
  mutex_guard() noexcept = default;
  explicit mutex_guard(detail::held_permits held) noexcept : held_(std::move(held)) {}

  /// Unlocks now (hands the lock to the oldest waiter, if any). Nothing happens when the guard
  /// holds nothing.
  void unlock() noexcept { held_.give_back(); }
  /// Whether the guard holds a lock.
  [[nodiscard]] auto owns_lock() const noexcept -> bool { return held_.holds(); }
  explicit operator bool() const noexcept { return owns_lock(); }

 private:
  detail::held_permits held_;
};

namespace detail {
/// The lock and wait forms that mutex and shared_mutex share, on `Derived::sem_`-like storage:
/// each form acquires `n` permits of `sem`.
class lock_forms {
 protected:
  explicit lock_forms(std::size_t permits) noexcept : sem_(permits) {}

  auto lock_n(std::size_t n) -> mutex_guard { return acquire_blocking<mutex_guard>(sem_, n); }
  auto lock_n(std::size_t n, std::stop_token stop) -> std::optional<mutex_guard> {
    return acquire_blocking_until<mutex_guard>(sem_, n, std::nullopt, &stop);
  }
  auto lock_n(std::size_t n, steady_time deadline) -> std::optional<mutex_guard> {
    return acquire_blocking_until<mutex_guard>(sem_, n, deadline, nullptr);
  }
  auto try_lock_n(std::size_t n) noexcept -> std::optional<mutex_guard> {
    if (sem_.try_acquire(n)) {
      return mutex_guard(held_permits(sem_, n));
    }
    return std::nullopt;
  }
  auto async_lock_n(std::size_t n) -> acquire_awaiter<mutex_guard> {
    return acquire_awaiter<mutex_guard>(sem_, n);
  }
  auto async_lock_n(std::size_t n, std::stop_token stop)
      -> acquire_awaiter<mutex_guard, stop_case<no_handler>> {
    return {sem_, n, stop_case<no_handler>(std::move(stop), {})};
  }
  auto async_lock_n(std::size_t n, steady_time deadline)
      -> acquire_awaiter<mutex_guard, timeout_case<no_handler>> {
    return {sem_, n, timeout_case<no_handler>(deadline, {})};
  }

  fair_semaphore sem_;
};
}  // namespace detail

class mutex : private detail::lock_forms {
 public:
  mutex() noexcept : lock_forms(1) {}
  mutex(mutex const&) = delete;
  auto operator=(mutex const&) -> mutex& = delete;

  /// Blocks the calling thread until it holds the lock.
  [[nodiscard]] auto lock() -> mutex_guard { return lock_n(1); }
  /// As lock(), but gives up (nullopt) once stop is requested on `stop`.
  [[nodiscard]] auto lock(std::stop_token stop) -> std::optional<mutex_guard> {
    return lock_n(1, std::move(stop));
  }
  /// As lock(), but gives up (nullopt) after `timeout`.
  template <class Rep, class Period>
  [[nodiscard]] auto lock_for(std::chrono::duration<Rep, Period> timeout)
      -> std::optional<mutex_guard> {
    return lock_n(1, detail::deadline_after(timeout));
  }
  /// As lock(), but gives up (nullopt) at `deadline`, on any clock.
  template <class Clock, class Duration>
  [[nodiscard]] auto lock_until(std::chrono::time_point<Clock, Duration> deadline)
      -> std::optional<mutex_guard> {
    return lock_n(1, detail::to_steady(deadline));
  }
  /// Locks if the lock is free and nobody waits for it; never blocks.
  [[nodiscard]] auto try_lock() noexcept -> std::optional<mutex_guard> { return try_lock_n(1); }

  /// `co_await m.async_lock()` -> mutex_guard: the coroutine form of lock().
  [[nodiscard]] auto async_lock() -> detail::acquire_awaiter<mutex_guard> {
    return async_lock_n(1);
  }
  /// -> std::optional<mutex_guard>: nullopt once stop is requested on `stop`.
  [[nodiscard]] auto async_lock(std::stop_token stop)
      -> detail::acquire_awaiter<mutex_guard, detail::stop_case<detail::no_handler>> {
    return async_lock_n(1, std::move(stop));
  }
  /// -> std::optional<mutex_guard>: nullopt after `timeout`.
  template <class Rep, class Period>
  [[nodiscard]] auto async_lock_for(std::chrono::duration<Rep, Period> timeout)
      -> detail::acquire_awaiter<mutex_guard, detail::timeout_case<detail::no_handler>> {
    return async_lock_n(1, detail::deadline_after(timeout));
  }
  /// -> std::optional<mutex_guard>: nullopt at `deadline`, on any clock.
  template <class Clock, class Duration>
  [[nodiscard]] auto async_lock_until(std::chrono::time_point<Clock, Duration> deadline)
      -> detail::acquire_awaiter<mutex_guard, detail::timeout_case<detail::no_handler>> {
    return async_lock_n(1, detail::to_steady(deadline));
  }

  /// Whether the lock is held or waited for (a snapshot).
  [[nodiscard]] auto is_locked() const noexcept -> bool { return sem_.available() == 0; }
  /// How many parties wait for the lock now (a snapshot).
  [[nodiscard]] auto waiting() const noexcept -> std::size_t { return sem_.waiting(); }

 private:
  template <class F>
  friend auto on_lock(mutex& m, F f) -> detail::acquire_case<mutex_guard, F>;
};

/// A select case that locks `m`; `f(mutex_guard)` runs when it is chosen.
template <class F>
auto on_lock(mutex& m, F f) -> detail::acquire_case<mutex_guard, F> {
  return detail::acquire_case<mutex_guard, F>(m.sem_, 1, std::move(f));
}

class shared_mutex : private detail::lock_forms {
 public:
  /// The most readers that hold the lock at once; one more waits.
  static constexpr std::size_t max_readers = std::size_t{1} << 30U;

  shared_mutex() noexcept : lock_forms(max_readers) {}
  shared_mutex(shared_mutex const&) = delete;
  auto operator=(shared_mutex const&) -> shared_mutex& = delete;

  /// Exclusive (writer) forms: as mutex's.
  [[nodiscard]] auto lock() -> mutex_guard { return lock_n(max_readers); }
  [[nodiscard]] auto lock(std::stop_token stop) -> std::optional<mutex_guard> {
    return lock_n(max_readers, std::move(stop));
  }
  template <class Rep, class Period>
  [[nodiscard]] auto lock_for(std::chrono::duration<Rep, Period> timeout)
      -> std::optional<mutex_guard> {
    return lock_n(max_readers, detail::deadline_after(timeout));
  }
  template <class Clock, class Duration>
  [[nodiscard]] auto lock_until(std::chrono::time_point<Clock, Duration> deadline)
      -> std::optional<mutex_guard> {
    return lock_n(max_readers, detail::to_steady(deadline));
  }
  [[nodiscard]] auto try_lock() noexcept -> std::optional<mutex_guard> {
    return try_lock_n(max_readers);
  }
  [[nodiscard]] auto async_lock() -> detail::acquire_awaiter<mutex_guard> {
    return async_lock_n(max_readers);
  }
  [[nodiscard]] auto async_lock(std::stop_token stop)
      -> detail::acquire_awaiter<mutex_guard, detail::stop_case<detail::no_handler>> {
    return async_lock_n(max_readers, std::move(stop));
  }
  template <class Rep, class Period>
  [[nodiscard]] auto async_lock_for(std::chrono::duration<Rep, Period> timeout)
      -> detail::acquire_awaiter<mutex_guard, detail::timeout_case<detail::no_handler>> {
    return async_lock_n(max_readers, detail::deadline_after(timeout));
  }
  template <class Clock, class Duration>
  [[nodiscard]] auto async_lock_until(std::chrono::time_point<Clock, Duration> deadline)
      -> detail::acquire_awaiter<mutex_guard, detail::timeout_case<detail::no_handler>> {
    return async_lock_n(max_readers, detail::to_steady(deadline));
  }

  /// Shared (reader) forms: any number of readers hold the lock at once, no writer.
  [[nodiscard]] auto lock_shared() -> mutex_guard { return lock_n(1); }
  [[nodiscard]] auto lock_shared(std::stop_token stop) -> std::optional<mutex_guard> {
    return lock_n(1, std::move(stop));
  }
  template <class Rep, class Period>
  [[nodiscard]] auto lock_shared_for(std::chrono::duration<Rep, Period> timeout)
      -> std::optional<mutex_guard> {
    return lock_n(1, detail::deadline_after(timeout));
  }
  template <class Clock, class Duration>
  [[nodiscard]] auto lock_shared_until(std::chrono::time_point<Clock, Duration> deadline)
      -> std::optional<mutex_guard> {
    return lock_n(1, detail::to_steady(deadline));
  }
  [[nodiscard]] auto try_lock_shared() noexcept -> std::optional<mutex_guard> {
    return try_lock_n(1);
  }
  [[nodiscard]] auto async_lock_shared() -> detail::acquire_awaiter<mutex_guard> {
    return async_lock_n(1);
  }
  [[nodiscard]] auto async_lock_shared(std::stop_token stop)
      -> detail::acquire_awaiter<mutex_guard, detail::stop_case<detail::no_handler>> {
    return async_lock_n(1, std::move(stop));
  }
  template <class Rep, class Period>
  [[nodiscard]] auto async_lock_shared_for(std::chrono::duration<Rep, Period> timeout)
      -> detail::acquire_awaiter<mutex_guard, detail::timeout_case<detail::no_handler>> {
    return async_lock_n(1, detail::deadline_after(timeout));
  }
  template <class Clock, class Duration>
  [[nodiscard]] auto async_lock_shared_until(std::chrono::time_point<Clock, Duration> deadline)
      -> detail::acquire_awaiter<mutex_guard, detail::timeout_case<detail::no_handler>> {
    return async_lock_n(1, detail::to_steady(deadline));
  }

  /// How many parties, readers and writers, wait for the lock now (a snapshot).
  [[nodiscard]] auto waiting() const noexcept -> std::size_t { return sem_.waiting(); }

 private:
  template <class F>
  friend auto on_lock(shared_mutex& m, F f) -> detail::acquire_case<mutex_guard, F>;
  template <class F>
  friend auto on_lock_shared(shared_mutex& m, F f) -> detail::acquire_case<mutex_guard, F>;
};

/// A select case that locks `m` exclusively; `f(mutex_guard)` runs when it is chosen.
template <class F>
auto on_lock(shared_mutex& m, F f) -> detail::acquire_case<mutex_guard, F> {
  return detail::acquire_case<mutex_guard, F>(m.sem_, shared_mutex::max_readers, std::move(f));
}

/// A select case that locks `m` shared; `f(mutex_guard)` runs when it is chosen.
template <class F>
auto on_lock_shared(shared_mutex& m, F f) -> detail::acquire_case<mutex_guard, F> {
  return detail::acquire_case<mutex_guard, F>(m.sem_, 1, std::move(f));
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

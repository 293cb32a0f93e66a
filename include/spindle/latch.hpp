// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle::latch: a single-use countdown (C++20 std::latch) whose waiters are threads,
// coroutines and select cases alike.
//
//   spindle::latch ready(3);
//   // each of three workers:                 // a coroutine waiting for them:
//   load_part(i); ready.count_down();         co_await ready.async_wait();
//
// - count_down(n) lowers the count; when it reaches zero every current wait completes at once,
//   and so does every later one: the latch stays open for good (it cannot be reset: a reusable
//   one is spindle::barrier).
// - try_wait() never blocks; wait() blocks a thread, async_wait() suspends a coroutine, and
//   on_counted_down(l, f) is a select case. Every wait has `_for`, `_until` and
//   `std::stop_token` forms (false: the deadline passed or stop came first); a latch already at
//   zero wins over an expired deadline or a requested stop. arrive_and_wait(n) is
//   count_down(n) then wait().
// - The select case is named for the event it waits for, as on_notified(n, f) is for a notify
//   (on_recv, on_acquire and on_lock name the operation they perform; waiting on a latch
//   performs nothing).
//
// Misuse, in every build: a negative count given to the constructor, and a count_down that is
// negative or takes the count below zero, throw (std::invalid_argument, std::logic_error)
// and change nothing. std::latch leaves these undefined.
//
// Happens-before: what a thread did before its count_down() is visible to every wait that
// completes (std::latch's "strongly happens before"): every count_down is an acq_rel CAS on
// the count, so the last one carries every earlier one's writes, and it opens the gate, whose
// release CAS and acq_rel selections a completing wait reads.
//
// Destruction: once the waits on a latch returned, the latch may be destroyed even if the
// count_down that opened it has not returned yet: its last access to the latch comes before any
// wait can complete (phase_gate.hpp, "Destruction"). So the usual pattern is safe: a latch on
// its owner's stack, counted down by workers, waited for by the owner, then gone. Every other
// call on it (another wait, a count_down that did not open it) must have returned first.
// try_wait() becomes true at that same point, a moment after the last count_down's CAS (as
// std::latch allows, it may return false a moment after the count reached zero).
//
// Protocol: the phase gate of detail/sync/phase_gate.hpp (which says why not the fair
// semaphore), opened to phase 1 by the count_down that reaches zero; a wait waits for phase 0
// to pass. The count itself is one word changed by CAS: a count_down takes no lock, except the
// last one (the gate's, briefly). Model tests: tests/model/latch_barrier_test.cpp and the
// LatchPairs rows of tests/model/pairs_latch_test.cpp.
// Progress: count_down and try_wait are lock-free, except the count_down that opens the latch
// (a short lock); a wait spins briefly, then sleeps.
// Thread safety: every member may be called from any number of threads and coroutines at once.
// Examples: tests/latch_test.cpp.

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>
#include <spindle/detail/sync/gate_case.hpp>
#include <spindle/detail/sync/phase_gate.hpp>

#include <chrono>
#include <cstddef>
#include <limits>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

class latch {
 public:
  /// The largest count a latch accepts.
  static constexpr auto max() noexcept -> std::ptrdiff_t {
    return std::numeric_limits<std::ptrdiff_t>::max();
  }

  /// Throws: std::invalid_argument when `expected` is negative.
  explicit latch(std::ptrdiff_t expected) : count_(checked(expected)) {
    if (expected == 0) {
      gate_.open(1);
    }
  }
  latch(latch const&) = delete;
  auto operator=(latch const&) -> latch& = delete;

  /// Lowers the count by `n`; the one that reaches zero completes every wait.
  /// Throws: std::invalid_argument when n is negative; std::logic_error when n exceeds the
  /// count left (the latch is unchanged then).
  void count_down(std::ptrdiff_t n = 1) {
    if (n < 0) {
      throw std::invalid_argument("spindle::latch::count_down: negative n");
    }
    // relaxed: the CAS below re-reads the count and carries the ordering.
    std::ptrdiff_t c = count_.load(std::memory_order_relaxed);
    do {
      if (n > c) {
        throw std::logic_error("spindle::latch::count_down: the count would go below zero");
      }
      // acq_rel: release publishes this party's writes to the later count_downs; acquire, on
      // the CAS that reaches zero, takes every earlier count_down's (each CAS is an acq_rel
      // RMW on the count, so each one carries the writes of those before it). The gate's
      // release CAS (phase_gate::settle) then hands them to the waiters. relaxed on failure:
      // the loop re-checks.
    } while (!count_.compare_exchange_weak(c, c - n, std::memory_order_acq_rel,
                                           std::memory_order_relaxed));
    if (c == n && n != 0) {
      gate_.open(1);
    }
  }

  /// Whether the count reached zero and the latch opened; never blocks.
  [[nodiscard]] auto try_wait() const noexcept -> bool {
    // The gate's acquire load pairs with the release CAS of the count_down that opened it,
    // which carries every count_down's writes.
    return gate_.passed(0);
  }

  /// count_down(n), then wait().
  /// Throws: as count_down().
  void arrive_and_wait(std::ptrdiff_t n = 1) {
    count_down(n);
    wait();
  }

  /// Blocks the calling thread until the count reaches zero.
  void wait() const {
    if (!try_wait()) {
      static_cast<void>(detail::gate_wait_until(gate_, 0, std::nullopt, nullptr));
    }
  }
  /// As wait(); false once stop is requested on `stop` first.
  [[nodiscard]] auto wait(std::stop_token stop) const -> bool {
    return try_wait() || detail::gate_wait_until(gate_, 0, std::nullopt, &stop);
  }
  /// As wait(); false when `timeout` passed first.
  template <class Rep, class Period>
  [[nodiscard]] auto wait_for(std::chrono::duration<Rep, Period> timeout) const -> bool {
    return wait_at(detail::deadline_after(timeout));
  }
  /// As wait(); false when `deadline` (on any clock) passed first.
  template <class Clock, class Duration>
  [[nodiscard]] auto wait_until(std::chrono::time_point<Clock, Duration> deadline) const -> bool {
    return wait_at(detail::to_steady(deadline));
  }

  /// `co_await l.async_wait()`: the coroutine form of wait().
  [[nodiscard]] auto async_wait() const -> detail::gate_awaiter<> {
    return detail::gate_awaiter<>(gate_, 0);
  }
  /// -> bool: false once stop is requested on `stop` first.
  [[nodiscard]] auto async_wait(std::stop_token stop) const
      -> detail::gate_awaiter<detail::stop_case<detail::no_handler>> {
    return {gate_, 0, detail::stop_case<detail::no_handler>(std::move(stop), {})};
  }
  /// -> bool: false when `timeout` passed first.
  template <class Rep, class Period>
  [[nodiscard]] auto async_wait_for(std::chrono::duration<Rep, Period> timeout) const
      -> detail::gate_awaiter<detail::timeout_case<detail::no_handler>> {
    return {gate_, 0,
            detail::timeout_case<detail::no_handler>(detail::deadline_after(timeout), {})};
  }
  /// -> bool: false when `deadline` (on any clock) passed first.
  template <class Clock, class Duration>
  [[nodiscard]] auto async_wait_until(std::chrono::time_point<Clock, Duration> deadline) const
      -> detail::gate_awaiter<detail::timeout_case<detail::no_handler>> {
    return {gate_, 0, detail::timeout_case<detail::no_handler>(detail::to_steady(deadline), {})};
  }

  /// How many parties wait now (a snapshot).
  [[nodiscard]] auto waiting() const noexcept -> std::size_t { return gate_.waiting(); }

  /// Whether a queued waiter still waits for a wake: a snapshot valid only when every thread is
  /// quiescent (the model tests' liveness checks).
  [[nodiscard]] auto waiting_at_quiescence() const noexcept -> bool {
    return gate_.waiting_at_quiescence();
  }

 private:
  template <class F>
  friend auto on_counted_down(latch const& l, F f) -> detail::gate_case<F>;

  static auto checked(std::ptrdiff_t expected) -> std::ptrdiff_t {
    if (expected < 0) {
      throw std::invalid_argument("spindle::latch: negative count");
    }
    return expected;
  }

  auto wait_at(detail::steady_time deadline) const -> bool {
    return try_wait() || detail::gate_wait_until(gate_, 0, deadline, nullptr);
  }

  // INVARIANT: 0 <= count_; count_ reaches 0 once and stays there; gate_ is opened to phase 1
  // exactly by the count_down that reached 0 (or the constructor, for a count of 0).
  detail::atomic<std::ptrdiff_t> count_;
  // Waiting does not change what the latch is: the gate's queue is the waiters' business.
  mutable detail::phase_gate gate_;
};

/// A select case chosen once the count of `l` reaches zero; `f()` runs then. Usable in
/// spindle::select, async_select and dynamic_select.
template <class F>
auto on_counted_down(latch const& l, F f) -> detail::gate_case<F> {
  return detail::gate_case<F>(l.gate_, 0, std::move(f));
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

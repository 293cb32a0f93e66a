// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle::barrier: a reusable barrier with a completion step (C++20 std::barrier) whose
// waiters are threads, coroutines and select cases alike.
//
//   spindle::barrier sync(4, [&]() noexcept { swap(front, back); });   // once per phase
//   // each of the four parties, threads or coroutines:
//   for (;;) {
//     step(front, back);
//     sync.arrive_and_wait();        // or: co_await sync.async_arrive_and_wait();
//   }
//
// - A phase expects `count` arrivals. The arrival that completes it runs the completion
//   function once, on its own thread, before any waiter of that phase is released; then the
//   next phase starts, expecting `count` arrivals again (less those dropped).
// - arrive(n) counts n arrivals and returns an arrival_token naming the phase; wait(token)
//   waits until that phase completed (at once if it already did). arrive_and_wait() is both;
//   arrive_and_drop() arrives and lowers the count of every later phase by one.
// - Every wait has `_for`, `_until` and `std::stop_token` forms, for threads (wait...) and
//   coroutines (async_wait..., async_arrive_and_wait), and on_phase_completed(b, token, f) is a
//   select case (named for the event it waits for, as on_notified and on_counted_down are).
//   async_arrive_and_wait() arrives when it is called, not when it is awaited.
// - A wait that ends early (false: its deadline passed or stop came) leaves the arrival
//   counted: the phase still needs no more from this party. The token stays valid, so the
//   party may wait again with it, or abandon it and let the phase complete without it.
//   Waiting on a token of a phase long completed returns at once.
//
// A waiter of phase k is released once the completion of phase k has run: never before it,
// never kept for a later phase, never lost, however slow it is to wake. Waits are keyed by
// phase on the phase gate of
// detail/sync/phase_gate.hpp (which says why a semaphore per phase is not enough), and the
// phase advances in one step with the reset of the count under the barrier's lock, so a
// released party that arrives again at once counts for phase k + 1 and cannot disturb a slower
// waiter of phase k.
//
// The completion function must be nothrow invocable (the concept barrier_completion, as
// std::barrier requires): if it could throw, the phase would be neither completed nor
// abandonable, and every waiter of it would hang.
//
// Misuse, in every build: a negative count throws std::invalid_argument; arrive(n) with n < 1
// throws std::invalid_argument; more arrivals than the phase still expects (which includes an
// arrival while the completion function runs, and any arrival once every party dropped) throws
// std::logic_error and changes nothing; waiting on another barrier's token throws
// std::invalid_argument. std::barrier leaves all of these undefined.
//
// Happens-before: what every party did before its arrival in phase k is visible to the
// completion function of phase k, and what the completion function did is visible to every
// wait for phase k once it completes (arrivals take the barrier's lock; the phase gate opens
// with a release CAS and acq_rel selections).
//
// Progress: an arrival takes a short lock; a wait spins briefly, then sleeps. The completion
// function runs outside the lock.
// Thread safety: every member may be called from any number of threads and coroutines at once.
// A barrier may be destroyed once no call on it is in flight, with one allowance: the arrival
// that completed the last phase need not have returned (its last access to the barrier comes
// before any wait of that phase can complete). Model tests: tests/model/latch_barrier_test.cpp and
// the BarrierPairs rows of tests/model/pairs_latch_test.cpp. Examples: tests/barrier_test.cpp.

#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>
#include <spindle/detail/sync/gate_case.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/phase_gate.hpp>

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// A completion function of a barrier: run once per phase, by the arrival that completes it,
/// while every other party of the phase waits. It must not throw (a phase whose completion
/// failed could neither complete nor be abandoned: its waiters would hang), as std::barrier
/// requires; it is moved into the barrier and destroyed with it.
template <class F>
concept barrier_completion = std::move_constructible<F> && std::is_nothrow_invocable_v<F&> &&
                             std::is_nothrow_destructible_v<F>;

/// The completion function of a barrier built without one.
struct no_completion {
  void operator()() const noexcept {}
};

template <barrier_completion CompletionFunction = no_completion>
class barrier {
 public:
  /// Names the phase an arrival counted for; wait on it with wait(token) and its forms. A token
  /// stays valid after a wait that ended early, so a party may wait with it again.
  class [[nodiscard]] arrival_token {
   public:
    /// The phase the arrival counted for (phases are numbered from 0).
    [[nodiscard]] auto phase() const noexcept -> std::uint64_t { return phase_; }

   private:
    friend class barrier;
    arrival_token(barrier const* owner, std::uint64_t phase) noexcept
        : owner_(owner), phase_(phase) {}
    barrier const* owner_;
    std::uint64_t phase_;
  };

  /// The largest count a barrier accepts.
  static constexpr auto max() noexcept -> std::ptrdiff_t {
    return std::numeric_limits<std::ptrdiff_t>::max();
  }

  /// A barrier of `expected` parties, running `completion` once per phase.
  /// Throws: std::invalid_argument when `expected` is negative; what moving `completion` throws.
  explicit barrier(std::ptrdiff_t expected, CompletionFunction completion = CompletionFunction())
      : expected_(checked(expected)), remaining_(expected), completion_(std::move(completion)) {}
  barrier(barrier const&) = delete;
  auto operator=(barrier const&) -> barrier& = delete;

  /// Counts `n` arrivals in the current phase; the one that completes it runs the completion
  /// function (on this thread) and releases the phase's waiters before returning.
  /// Throws: std::invalid_argument when n < 1; std::logic_error, counting nothing, when the
  /// phase expects fewer than n more arrivals.
  auto arrive(std::ptrdiff_t n = 1) -> arrival_token {
    if (n < 1) {
      throw std::invalid_argument("spindle::barrier::arrive: n must be at least 1");
    }
    return arrive_as(n, false);
  }

  /// Counts one arrival in the current phase and one party fewer in every later phase.
  /// Throws: std::logic_error, changing nothing, when the phase expects no more arrivals.
  void arrive_and_drop() { static_cast<void>(arrive_as(1, true)); }

  /// arrive(), then wait until the phase completes.
  /// Throws: as arrive().
  void arrive_and_wait() { wait(arrive()); }

  /// Blocks the calling thread until the phase of `token` completed.
  /// Throws: std::invalid_argument when `token` comes from another barrier.
  void wait(arrival_token const& token) const {
    static_cast<void>(detail::gate_wait_until(gate_, phase_of(token), std::nullopt, nullptr));
  }
  /// As wait(token); false once stop is requested on `stop` first (the arrival stays counted).
  [[nodiscard]] auto wait(arrival_token const& token, std::stop_token stop) const -> bool {
    return detail::gate_wait_until(gate_, phase_of(token), std::nullopt, &stop);
  }
  /// As wait(token); false when `timeout` passed first (the arrival stays counted).
  template <class Rep, class Period>
  [[nodiscard]] auto wait_for(arrival_token const& token,
                              std::chrono::duration<Rep, Period> timeout) const -> bool {
    return detail::gate_wait_until(gate_, phase_of(token), detail::deadline_after(timeout),
                                   nullptr);
  }
  /// As wait(token); false when `deadline` (on any clock) passed first.
  template <class Clock, class Duration>
  [[nodiscard]] auto wait_until(arrival_token const& token,
                                std::chrono::time_point<Clock, Duration> deadline) const -> bool {
    return detail::gate_wait_until(gate_, phase_of(token), detail::to_steady(deadline), nullptr);
  }

  /// `co_await b.async_wait(token)`: the coroutine form of wait(token).
  [[nodiscard]] auto async_wait(arrival_token const& token) const -> detail::gate_awaiter<> {
    return detail::gate_awaiter<>(gate_, phase_of(token));
  }
  /// -> bool: false once stop is requested on `stop` first.
  [[nodiscard]] auto async_wait(arrival_token const& token, std::stop_token stop) const
      -> detail::gate_awaiter<detail::stop_case<detail::no_handler>> {
    return {gate_, phase_of(token), detail::stop_case<detail::no_handler>(std::move(stop), {})};
  }
  /// -> bool: false when `timeout` passed first.
  template <class Rep, class Period>
  [[nodiscard]] auto async_wait_for(arrival_token const& token,
                                    std::chrono::duration<Rep, Period> timeout) const
      -> detail::gate_awaiter<detail::timeout_case<detail::no_handler>> {
    return {gate_, phase_of(token),
            detail::timeout_case<detail::no_handler>(detail::deadline_after(timeout), {})};
  }
  /// -> bool: false when `deadline` (on any clock) passed first.
  template <class Clock, class Duration>
  [[nodiscard]] auto async_wait_until(arrival_token const& token,
                                      std::chrono::time_point<Clock, Duration> deadline) const
      -> detail::gate_awaiter<detail::timeout_case<detail::no_handler>> {
    return {gate_, phase_of(token),
            detail::timeout_case<detail::no_handler>(detail::to_steady(deadline), {})};
  }
  /// `co_await b.async_arrive_and_wait()`: arrives now (as arrive()), then the awaiter waits
  /// for the phase to complete.
  /// Throws: as arrive().
  [[nodiscard]] auto async_arrive_and_wait() -> detail::gate_awaiter<> {
    arrival_token const token = arrive();
    return async_wait(token);
  }

  /// How many parties wait now (a snapshot).
  [[nodiscard]] auto waiting() const noexcept -> std::size_t { return gate_.waiting(); }

  /// Whether a queued waiter still waits for a wake: a snapshot valid only when every thread is
  /// quiescent (the model tests' liveness checks).
  [[nodiscard]] auto waiting_at_quiescence() const noexcept -> bool {
    return gate_.waiting_at_quiescence();
  }

 private:
  template <class C, class F>
  friend auto on_phase_completed(barrier<C> const& b, typename barrier<C>::arrival_token const& t,
                                 F f) -> detail::gate_case<F>;

  static auto checked(std::ptrdiff_t expected) -> std::ptrdiff_t {
    if (expected < 0) {
      throw std::invalid_argument("spindle::barrier: negative count");
    }
    return expected;
  }

  auto phase_of(arrival_token const& token) const -> std::uint64_t {
    if (token.owner_ != this) {
      throw std::invalid_argument("spindle::barrier::wait: a token of another barrier");
    }
    return token.phase_;
  }

  auto arrive_as(std::ptrdiff_t n, bool drop) -> arrival_token {
    std::uint64_t phase = 0;
    bool last = false;
    {
      std::lock_guard lock(mutex_);
      if (n > remaining_) {
        throw std::logic_error(
            "spindle::barrier: more arrivals than the phase expects (or an arrival while its "
            "completion function runs)");
      }
      expected_ -= drop ? 1 : 0;
      remaining_ -= n;
      phase = phase_;
      last = remaining_ == 0;
    }
    if (last) {
      complete(phase);
    }
    return arrival_token(this, phase);
  }

  /// Runs the completion of `phase`, then starts the next phase and releases the waiters of
  /// this one. Preconditions: the caller's arrival completed `phase` (remaining_ is 0, so no
  /// other arrival can change the state until the next phase starts below).
  void complete(std::uint64_t phase) noexcept {
    // The lock that every arrival of the phase took and released orders their writes before
    // this call.
    completion_();
    detail::wait_entry* chain = nullptr;
    {
      std::lock_guard lock(mutex_);
      remaining_ = expected_;
      phase_ = phase + 1;
      // Under the barrier's lock: the phase the gate shows and the count of the next phase
      // change together, so an arrival sees the next phase only once the gate has released
      // every waiter of this one.
      chain = gate_.open_collect(phase + 1);
    }
    // The last access to the barrier: from here a released waiter may return, and a barrier
    // whose parties all returned may be destroyed (phase_gate.hpp, "Destruction").
    gate_.settle(phase + 1);
    detail::phase_gate::wake(chain);
  }

  detail::mutex mutex_;
  // Guarded by mutex_. INVARIANT: 0 <= remaining_ <= expected_; whenever mutex_ is free the
  // gate is opened to phase_ (open_collect), and settled to it once complete() returns.
  std::ptrdiff_t expected_;
  std::ptrdiff_t remaining_;
  std::uint64_t phase_ = 0;
  CompletionFunction completion_;
  mutable detail::phase_gate gate_;
};

/// A select case chosen once the phase of `token` completed; `f()` runs then. Usable in
/// spindle::select, async_select and dynamic_select.
/// Throws: std::invalid_argument when `token` comes from another barrier.
template <class C, class F>
auto on_phase_completed(barrier<C> const& b, typename barrier<C>::arrival_token const& token, F f)
    -> detail::gate_case<F> {
  return detail::gate_case<F>(b.gate_, b.phase_of(token), std::move(f));
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

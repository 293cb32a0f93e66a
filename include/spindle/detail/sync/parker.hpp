// SPDX-License-Identifier: BSL-1.0
#pragma once
// Sleep and wake one thread, with no lost wake-up and no system call when nobody sleeps.
//
// A parker is a binary token owned by one thread. `park()` consumes the token, sleeping until
// it is there; `unpark()` makes it available and wakes the owner if it sleeps. An `unpark()`
// that comes before the `park()` is not lost: the park returns at once. Several unparks before
// one park leave one token. This is the contract of Rust's std::thread::park and of
// java.util.concurrent.locks.LockSupport.
//
// Algorithm: one 32-bit futex word with three states, as in Rust std's futex parker
// (library/std/src/sys/sync/thread_parking/futex.rs):
//   empty (0) --park--> parked (~0) --unpark--> notified (1) --park returns--> empty
//   empty --unpark--> notified --park--> empty, without sleeping.
// `unpark` issues the wake system call only when it finds the state `parked`.
//
// Synchronization: `state_` is the only shared field; any thread writes it in `unpark`, the
// owner in `park`. Happens-before: whatever a thread did before `unpark()` is visible to the
// owner once the `park()` that consumes that token returns.
//
// Progress: park blocks; unpark is wait-free (one exchange and at most one syscall).

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>

#include <chrono>
#include <cstdint>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

class parker {
 public:
  parker() = default;
  parker(parker const&) = delete;
  auto operator=(parker const&) -> parker& = delete;

  /// Blocks until the token is available, then consumes it. May not return spuriously.
  ///
  /// Preconditions: called only by the thread that owns this parker.
  void park() noexcept {
    // acquire: pairs with the release exchange in unpark(); if the token was already there,
    // the unparker's prior writes are now visible.
    if (state_.fetch_sub(1, std::memory_order_acquire) == notified) {
      return;  // notified -> empty
    }
    // We moved empty -> parked. Sleep until an unpark moves parked -> notified.
    for (;;) {
      futex_wait(state_, parked);
      // acquire: pairs with the release exchange in unpark(), as above.
      std::uint32_t expected = notified;
      if (state_.compare_exchange_strong(expected, empty, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
        return;
      }
    }
  }

  /// As park(), but gives up at `deadline`. Returns true when it consumed the token, false when
  /// the deadline passed first (the state is then empty again; a later unpark is kept).
  ///
  /// Preconditions: called only by the thread that owns this parker.
  auto park_until(steady_time deadline) noexcept -> bool {
    // acquire: pairs with the release exchange in unpark(), as in park().
    if (state_.fetch_sub(1, std::memory_order_acquire) == notified) {
      return true;
    }
    for (;;) {
      bool const in_time = futex_wait_until(state_, parked, deadline);
      // acquire: pairs with the release exchange in unpark(), as in park().
      std::uint32_t expected = notified;
      if (state_.compare_exchange_strong(expected, empty, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
        return true;
      }
      if (!in_time) {
        // acquire: an unpark may have raced the timeout; if it did, take its token and its
        // happens-before edge (pairs with the release exchange in unpark()).
        return state_.exchange(empty, std::memory_order_acquire) == notified;
      }
    }
  }

  template <class Rep, class Period>
  auto park_for(std::chrono::duration<Rep, Period> timeout) noexcept -> bool {
    // Saturating, as every timeout in the library: a huge timeout never expires, a negative or
    // NaN one is already over (detail/sync/deadline.hpp).
    return park_until(deadline_after(timeout));
  }

  /// Makes the token available and wakes the owner if it sleeps. Callable from any thread.
  void unpark() noexcept {
    // release: publishes everything this thread did before unpark() to the owner's acquire in
    // park()/park_until().
    if (state_.exchange(notified, std::memory_order_release) == parked) {
      futex_wake_one(state_);
    }
  }

 private:
  static constexpr std::uint32_t empty = 0;
  static constexpr std::uint32_t notified = 1;
  static constexpr std::uint32_t parked = ~std::uint32_t{0};

  // INVARIANT: one of empty, notified, parked; parked only while the owner is inside park.
  atomic<std::uint32_t> state_{empty};
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

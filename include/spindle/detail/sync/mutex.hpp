// SPDX-License-Identifier: BSL-1.0
#pragma once
// A small futex mutex for short critical sections off the fast paths (wait-list registration,
// the rendezvous channel). It exists instead of std::mutex so that every blocking step goes
// through detail/sync/atomic.hpp, where the model checker can see and schedule it.
//
// Algorithm: Drepper, "Futexes Are Tricky" (2011), mutex #3 ("mutex2" in the paper's second
// revision): state 0 = unlocked, 1 = locked, 2 = locked with possible sleepers. Unlock issues
// the wake system call only when the state was 2. Before sleeping, lock spins briefly
// (bounded) because critical sections here are a few dozen instructions; it spins on loads and
// tries the compare-exchange only when the lock looks free (test and test-and-set: Rudolph and
// Segall, ISCA 1984; Anderson, IEEE TPDS 1990, measures why).
//
// Synchronization: `state_` is the only field. Happens-before: everything a thread did before
// unlock() is visible to the next thread whose lock() returns.
//
// Not recursive, not fair. Meets the standard Lockable requirements, so std::lock_guard and
// std::unique_lock work with it.

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>

#include <cstdint>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

class mutex {
 public:
  mutex() = default;
  mutex(mutex const&) = delete;
  auto operator=(mutex const&) -> mutex& = delete;

  [[nodiscard]] auto try_lock() noexcept -> bool {
    std::uint32_t expected = unlocked;
    // acquire: pairs with the release exchange in unlock(); the previous holder's writes in
    // the critical section become visible. relaxed on failure: we did not take the lock.
    return state_.compare_exchange_strong(expected, locked, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }

  void lock() noexcept {
    if (try_lock()) {
      return;
    }
    // Test, then test-and-set: a waiter spins on loads, which share the line with the holder
    // and the other waiters, and attempts the CAS only once the lock looks free. Spinning on
    // the CAS instead took the line away from the holder at every failed attempt, in the
    // middle of its critical section, once per waiter and pause.
    for (int spin = 0; spin < spin_limit; ++spin) {
      spin_pause();
      // relaxed: a look only; the CAS in try_lock() takes the lock and acquires.
      if (state_.load(std::memory_order_relaxed) == unlocked && try_lock()) {
        return;
      }
    }
    // Mark the lock contended before sleeping, so the holder's unlock() wakes us.
    // acquire: pairs with the release exchange in unlock(), as in try_lock().
    while (state_.exchange(contended, std::memory_order_acquire) != unlocked) {
      futex_wait(state_, contended);
    }
  }

  void unlock() noexcept {
    // release: publishes the critical section to the next lock()'s acquire.
    if (state_.exchange(unlocked, std::memory_order_release) == contended) {
      futex_wake_one(state_);
    }
  }

 private:
  static constexpr std::uint32_t unlocked = 0;
  static constexpr std::uint32_t locked = 1;
  static constexpr std::uint32_t contended = 2;
  static constexpr int spin_limit = 64;

  // INVARIANT: contended whenever a thread may be asleep in lock().
  atomic<std::uint32_t> state_{unlocked};
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

// SPDX-License-Identifier: BSL-1.0
#pragma once
// A phase gate: a monotonic phase number and a wait list keyed by phase, the protocol under
// spindle::latch and spindle::barrier. A wait "for phase k" completes once the gate's phase
// is past k; open(p) moves the phase to p and completes, at once, every queued wait for a phase
// before p. Waiters are threads, coroutines and select cases alike (wait_list.hpp).
//
// Why not the fair semaphore (fair_semaphore.hpp) under a latch and a barrier: a latch could be
// a semaphore of 0 permits that the last count_down fills to its maximum, each waiter taking a
// permit and giving it straight back. It works for a latch, which opens once. A barrier opens
// once per phase and must close again for the next one, while a waiter of the phase just
// completed may not have woken yet (it was granted but not resumed, or has not even looked).
// Taking the permits back then either strands that waiter (it waits for the next phase, which
// needs its own arrival: a deadlock) or lets it pass for the wrong phase. The wait has to name
// its phase, and the check of the phase has to be atomic with joining the queue. That is this
// gate; the latch uses it too (phase 0 until the count reaches zero, then 1 for good), so the
// two are one protocol with one set of model tests.
//
// Synchronization:
//   - `opened_` is the phase the gate was opened to; it is read and written only under
//     `mutex_`. `phase_` is the phase waits may see passed without the lock: open_collect()
//     moves `opened_` (and drains the queue) under the lock, and settle() then publishes the same
//     phase in `phase_`, after the lock is released. INVARIANT: neither decreases, and
//     phase_ <= opened_; phase_ lags only while an opener is between the two steps.
//   - `queue_` and the entries' links are guarded by `mutex_`. Each entry's packet is the phase
//     it waits for (a `phase_wait`, owned by the waiter). INVARIANT: whenever `mutex_` is free,
//     every linked entry whose waiter still waits waits for a phase k with k >= opened_
//     (open_collect() completes every other one before it lets the lock go).
//   - watch() reads `opened_` and joins the queue under the same lock as open_collect() moves
//     `opened_` and drains the queue: a waiter either sees the new phase or is in the queue
//     open_collect() drains. No Dekker pair is needed, so no wake-up is lost.
//
// Destruction: the opener's last access to the gate is settle()'s store to `phase_`; the
// waiters it completed are woken after it, and wakes touch only the waiters' own entries. A wait
// completes only through `phase_` (passed()) or such a wake; watch() that finds the gate opened
// but not yet settled waits for the store (a few instructions of the opener). So once a wait
// returns, the opener that completed it no longer touches the gate, and the object holding the
// gate (a latch on its owner's stack, say) may be destroyed by the waiter as soon as every other
// call on it has returned, even if the opener's own call has not.
//
// Happens-before: settle() stores `phase_` with release and open_collect() selects each queued
// waiter with the waiter's acq_rel CAS (wait_list.hpp); passed() loads `phase_` with acquire. So
// whatever the opener did before open_collect(p) is visible to every wait for a phase before p
// once it completes.
//
// Progress: passed() is wait-free; watch, unwatch and open_collect take a short lock; settle is
// one CAS loop; every wake runs outside the lock (open_collect() hands the caller the chain to
// wake, after settle()).

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/backoff.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// The packet of a queued wait: the phase it waits to see passed.
struct phase_wait {
  std::uint64_t phase = 0;
};

class phase_gate {
 public:
  phase_gate() noexcept = default;
  phase_gate(phase_gate const&) = delete;
  auto operator=(phase_gate const&) -> phase_gate& = delete;

  /// Whether the gate's phase is past `k`: a wait for phase k would complete at once.
  [[nodiscard]] auto passed(std::uint64_t k) const noexcept -> bool {
    // acquire: pairs with the release CAS of settle(): the opener's writes before it are
    // visible once the new phase is.
    return phase_.load(std::memory_order_acquire) > k;
  }

  /// Queues `e` (whose packet is a phase_wait) unless its phase has passed: then returns true
  /// and queues nothing (the caller completes without waiting). Returns true only once the
  /// phase is settled (passed(k) holds), so that the caller may return at once.
  [[nodiscard]] auto watch(wait_entry& e) noexcept -> bool {
    auto const k = static_cast<phase_wait*>(e.packet)->phase;
    {
      std::lock_guard lock(mutex_);
      if (opened_ <= k) {
        queue_.push(e);
        count_changed(+1);
        return false;
      }
    }
    // Opened past k: the opener is at most between its unlock and settle(). Its store is the
    // last access it makes; wait for it rather than return while it may still come.
    backoff spin;
    while (!passed(k)) {
      spin.snooze();
    }
    return true;
  }

  /// Withdraws `e` after its wait ended. An entry found unlinked was completed by open().
  void unwatch(wait_entry& e) noexcept {
    if (!e.is_linked()) {
      return;
    }
    std::lock_guard lock(mutex_);
    if (queue_.remove(e)) {
      count_changed(-1);
    }
  }

  /// Opens the gate to phase `to` (never backwards) and completes every queued wait for a phase
  /// before `to`; returns their chain. The caller then calls settle(to), and only then wakes the
  /// chain (wake()): see "Destruction" above.
  [[nodiscard]] auto open_collect(std::uint64_t to) noexcept -> wait_entry* {
    wait_entry* chain = nullptr;
    std::lock_guard lock(mutex_);
    opened_ = opened_ < to ? to : opened_;
    wait_entry* e = queue_.front();
    while (e != nullptr) {
      wait_entry* next = e->next;
      if (static_cast<phase_wait*>(e->packet)->phase < opened_) {
        // A waiter no longer waiting (its deadline, a stop, another case of its select) is
        // unlinked too: its owner's unwatch() finds it so and has nothing to give back.
        bool const granted = e->owner->try_select(e->operation());
        static_cast<void>(queue_.remove(*e));
        count_changed(-1);
        if (granted) {
          e->next = chain;
          chain = e;
        }
      }
      e = next;
    }
    return chain;
  }

  /// Publishes phase `to` (opened by open_collect) to the waits that look without the lock;
  /// never moves `phase_` backwards (two openers of a barrier may settle out of order). The
  /// last access of an opener to the gate.
  void settle(std::uint64_t to) noexcept {
    // relaxed: the CAS below re-reads the phase and carries the ordering.
    std::uint64_t p = phase_.load(std::memory_order_relaxed);
    // release: pairs with the acquire load of passed(): a wait that sees the new phase sees
    // what the opener did before. relaxed on failure: the loop re-checks.
    while (p < to && !phase_.compare_exchange_weak(p, to, std::memory_order_release,
                                                   std::memory_order_relaxed)) {
    }
  }

  /// open_collect(to), settle(to), then the wakes.
  void open(std::uint64_t to) noexcept {
    wait_entry* const chain = open_collect(to);
    settle(to);
    wake(chain);
  }

  /// Wakes a chain returned by open_collect(). Touches only the chain's entries, never the gate.
  static void wake(wait_entry* chain) noexcept { wait_queue::wake_chain(chain); }

  /// How many waits are queued (a snapshot: for metrics, and for tests that must know a waiter
  /// is in line before they go on).
  [[nodiscard]] auto waiting() const noexcept -> std::size_t {
    // relaxed: a statistic; nothing is read through it.
    return queued_count_.load(std::memory_order_relaxed);
  }

  /// Whether some queued waiter still waits for a wake: a snapshot without the lock, valid only
  /// when every thread is quiescent (the model tests' liveness checks).
  [[nodiscard]] auto waiting_at_quiescence() const noexcept -> bool {
    return queue_.has_waiting(nullptr);
  }

 private:
  /// Preconditions: mutex_ is held.
  void count_changed(int delta) noexcept {
    // relaxed: written under mutex_, read as a statistic (waiting()).
    queued_count_.store(
        queued_count_.load(std::memory_order_relaxed) + static_cast<std::size_t>(delta),
        std::memory_order_relaxed);
  }

  // INVARIANT: never decreases; phase_ <= opened_. Written by settle() only.
  atomic<std::uint64_t> phase_{0};
  mutex mutex_;
  // Guarded by mutex_. INVARIANT: never decreases.
  std::uint64_t opened_ = 0;
  wait_queue queue_;
  // The length of queue_; written under mutex_.
  atomic<std::size_t> queued_count_{0};
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

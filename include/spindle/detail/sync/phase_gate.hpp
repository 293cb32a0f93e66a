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
//   - `phase_` is written only by open(), under `mutex_`, and read without the lock by the fast
//     paths (passed()). INVARIANT: it never decreases.
//   - `queue_` and the entries' links are guarded by `mutex_`. Each entry's packet is the phase
//     it waits for (a `phase_wait`, owned by the waiter). INVARIANT: whenever `mutex_` is free,
//     every linked entry whose waiter still waits waits for a phase k with k >= phase_ (open()
//     completes every other one before it lets the lock go).
//   - watch() reads `phase_` and joins the queue under the same lock as open() writes `phase_`
//     and drains the queue: a waiter either sees the new phase or is in the queue open() drains.
//     No Dekker pair is needed, so no wake-up is lost.
//
// Happens-before: open() stores `phase_` with release and selects each queued waiter with the
// waiter's acq_rel CAS (wait_list.hpp); passed() loads `phase_` with acquire. So whatever the
// opener did before open(p) is visible to every wait for a phase before p once it completes.
//
// Progress: passed() is wait-free; watch, unwatch and open take a short lock; every wake runs
// outside it (open_collect() hands the caller the chain to wake).

#include <spindle/detail/sync/atomic.hpp>
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
    // acquire: pairs with the release store of open_collect(): the opener's writes before it
    // are visible once the new phase is.
    return phase_.load(std::memory_order_acquire) > k;
  }

  /// The current phase (a snapshot).
  [[nodiscard]] auto phase() const noexcept -> std::uint64_t {
    // acquire: as in passed().
    return phase_.load(std::memory_order_acquire);
  }

  /// Queues `e` (whose packet is a phase_wait) unless its phase has passed: then returns true
  /// and queues nothing (the caller completes without waiting).
  [[nodiscard]] auto watch(wait_entry& e) noexcept -> bool {
    auto const k = static_cast<phase_wait*>(e.packet)->phase;
    std::lock_guard lock(mutex_);
    // relaxed: phase_ is written only under mutex_, which we hold; the lock orders this load
    // after every earlier open_collect().
    if (phase_.load(std::memory_order_relaxed) > k) {
      return true;
    }
    queue_.push(e);
    count_changed(+1);
    return false;
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

  /// Moves the phase to `to` (never backwards) and completes every queued wait for a phase
  /// before `to`; returns their chain, to be woken with wake() once the caller's locks are
  /// released.
  [[nodiscard]] auto open_collect(std::uint64_t to) noexcept -> wait_entry* {
    wait_entry* chain = nullptr;
    std::lock_guard lock(mutex_);
    // relaxed: written only under mutex_, which we hold.
    if (phase_.load(std::memory_order_relaxed) < to) {
      // release: pairs with the acquire load of passed(): a waiter that sees the new phase
      // without queueing sees what the opener did before.
      phase_.store(to, std::memory_order_release);
    }
    wait_entry* e = queue_.front();
    while (e != nullptr) {
      wait_entry* next = e->next;
      if (static_cast<phase_wait*>(e->packet)->phase < to) {
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

  /// open_collect(to), then the wakes.
  void open(std::uint64_t to) noexcept { wake(open_collect(to)); }

  /// Wakes a chain returned by open_collect().
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

  // INVARIANT: never decreases; written under mutex_.
  atomic<std::uint64_t> phase_{0};
  mutex mutex_;
  wait_queue queue_;
  // The length of queue_; written under mutex_.
  atomic<std::size_t> queued_count_{0};
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

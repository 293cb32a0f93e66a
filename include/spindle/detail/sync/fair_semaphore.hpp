// SPDX-License-Identifier: BSL-1.0
#pragma once
// A fair counting semaphore whose waiters are threads, coroutines and select cases alike: the
// protocol under spindle::semaphore, spindle::mutex and spindle::shared_mutex.
//
// Fairness: waiters are served strictly in the order they queued, and a permit released while
// anyone waits is handed to the waiters, never put back where a newcomer could take it first. A
// waiter for n permits at the head of the queue collects permits as they are released until it
// has n, while the waiters behind it wait (tokio's batch semaphore, tokio-rs/tokio:
// tokio/src/sync/batch_semaphore.rs, makes the same choice, which keeps a writer of a
// reader-writer lock from being starved by a stream of readers).
//
// State: one word, `state_` = permits << 1 | queued. `queued` is set exactly while the queue is
// non-empty, and it changes only under `mutex_`.
//   - Fast paths (no lock): an acquire CASes permits down, a release CASes permits up, both only
//     while `queued` is clear. A CAS compares the whole word, so once `queued` is set every fast
//     path fails and goes to the lock.
//   - INVARIANT: while `queued` is set the word's permit count is 0: every permit then belongs to
//     a queued waiter (its `assigned`), so nothing is left for a newcomer to barge in on.
//   - Queueing (watch, under the lock): if `queued` is clear and the permits suffice, the waiter
//     is not queued at all, and reports itself ready (the caller retries the fast path). Else it
//     sweeps the permits there into its own `assigned`, sets `queued` (one CAS against the fast
//     paths) and joins the queue.
//   - Releasing with `queued` set (under the lock): the permits go to the head waiter until it
//     has all it asked for; it is then selected (one CAS on its waiter) and unlinked, and the
//     rest goes to the next. A head whose waiter no longer waits (its deadline passed, a stop,
//     another case of its select won) is unlinked and its permits are taken back into the
//     release. When the queue empties, `queued` is cleared and what is left goes into the word.
//   - Withdrawing (unwatch, after the wait ended): an entry still linked is unlinked under the
//     lock and its `assigned` permits are released as above. An entry found unlinked was either
//     granted (its selection is the entry) or taken back by a releaser (its permits went on).
// So no permit is lost or counted twice: each is in the word, in one queued entry's `assigned`,
// or held by one owner; the checks in tests/model/semaphore_test.cpp and the rows of
// tests/model/pairs_sync_test.cpp count them after every schedule.
//
// Lost wake-ups: a waiter sleeps only while it is queued, and a queued waiter is woken by the
// releaser that completes it, under the lock; the fast release cannot run while `queued` is set.
// No Dekker pair is needed.
//
// Happens-before: a fast release is a release CAS and a fast acquire an acquire CAS on the word;
// a hand-off goes through the mutex and the waiter's acq_rel selection (wait_list.hpp), so what
// the releaser did before release() is visible to the waiter it completed.
//
// Progress: the fast paths are lock-free; queueing, a release while someone waits and a
// withdrawal take a short lock. Every wake runs outside the lock.

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// What one queued waiter asked for and has collected so far: the packet of its wait entry.
/// Guarded by the semaphore's mutex while the entry is linked.
struct semaphore_grant {
  std::size_t need = 0;
  std::size_t assigned = 0;
};

class fair_semaphore {
 public:
  /// The most permits a semaphore holds (the word keeps one bit for `queued`).
  static constexpr std::size_t max_permits = static_cast<std::size_t>(-1) >> 1U;

  explicit fair_semaphore(std::size_t permits) noexcept : state_(permits << 1U) {}
  /// A saturating semaphore: the word never holds more than `cap` permits, and permits released
  /// beyond it are dropped (the one stored permit of spindle::notify).
  fair_semaphore(std::size_t permits, std::size_t cap) noexcept
      : cap_(cap), saturate_(true), state_((permits < cap ? permits : cap) << 1U) {}
  fair_semaphore(fair_semaphore const&) = delete;
  auto operator=(fair_semaphore const&) -> fair_semaphore& = delete;

  /// Takes `n` permits if they are there and nobody is queued for them.
  [[nodiscard]] auto try_acquire(std::size_t n) noexcept -> bool {
    // relaxed: the CAS below re-reads the word and carries the ordering.
    std::uintptr_t s = state_.load(std::memory_order_relaxed);
    while ((s & queued) == 0 && (s >> 1U) >= n) {
      // acquire: pairs with the release CAS of release() (and the release store when a queue
      // empties in give_locked()): what the permits' last holder did is visible to the new one.
      // relaxed on failure: the loop re-checks.
      if (state_.compare_exchange_weak(s, s - (n << 1U), std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  /// Returns `n` permits: to the queued waiters in order, else to the word. Returns false,
  /// changing nothing, when the word would exceed max_permits (only possible with nobody
  /// queued); a saturating semaphore drops what exceeds its cap instead.
  [[nodiscard]] auto release(std::size_t n) noexcept -> bool {
    // relaxed: the CAS below re-reads the word and carries the ordering.
    std::uintptr_t s = state_.load(std::memory_order_relaxed);
    while ((s & queued) == 0) {
      std::size_t next = 0;
      if (!add_within_cap(s >> 1U, n, next)) {
        return false;
      }
      // release: pairs with the acquire CAS of try_acquire() and watch(). relaxed on failure:
      // the loop re-checks.
      if (state_.compare_exchange_weak(s, next << 1U, std::memory_order_release,
                                       std::memory_order_relaxed)) {
        return true;
      }
    }
    wait_entry* chain = nullptr;
    bool fits = true;
    {
      std::lock_guard lock(mutex_);
      chain = give_locked(n, fits);
    }
    wait_queue::wake_chain(chain);
    return fits;
  }

  /// Queues `e` (whose packet is a semaphore_grant) behind the waiters already there, unless
  /// the permits are there now: then returns true and queues nothing (the caller tries
  /// try_acquire again).
  [[nodiscard]] auto watch(wait_entry& e) noexcept -> bool {
    auto& grant = *static_cast<semaphore_grant*>(e.packet);
    std::lock_guard lock(mutex_);
    // relaxed: fast paths may still change the word while `queued` is clear; the CAS decides.
    std::uintptr_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
      if ((s & queued) != 0) {
        // Permits are 0 while `queued` is set (INVARIANT): wait in line.
        grant.assigned = 0;
        push_locked(e);
        return false;
      }
      if ((s >> 1U) >= grant.need) {
        return true;
      }
      // acquire: takes the permits there, as try_acquire() does. relaxed on failure: re-check.
      if (state_.compare_exchange_weak(s, queued, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        grant.assigned = s >> 1U;
        push_locked(e);
        return false;
      }
    }
  }

  /// Withdraws `e` after its wait ended. An entry still queued gives back what it collected;
  /// an entry already unlinked was granted or taken back by a releaser, and nothing is left.
  void unwatch(wait_entry& e) noexcept {
    if (!e.is_linked()) {
      return;
    }
    wait_entry* chain = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (!remove_locked(e)) {
        return;
      }
      auto& grant = *static_cast<semaphore_grant*>(e.packet);
      std::size_t const back = grant.assigned;
      grant.assigned = 0;
      bool fits = true;
      chain = give_locked(back, fits);
      // The permits came out of this semaphore: they fit back in.
      SPINDLE_ASSERT(fits, "permits given back exceed the semaphore's maximum");
    }
    wait_queue::wake_chain(chain);
  }

  /// Completes every queued waiter that still waits, as if each had been given what it asked
  /// for, without taking permits from anyone (spindle::notify::notify_all); the word is left as
  /// it is.
  void grant_all() noexcept {
    wait_entry* chain = nullptr;
    {
      std::lock_guard lock(mutex_);
      std::size_t back = 0;
      while (wait_entry* e = queue_.front()) {
        auto& grant = *static_cast<semaphore_grant*>(e->packet);
        back += grant.assigned;
        grant.assigned = grant.need;
        bool const granted = e->owner->try_select(e->operation());
        static_cast<void>(remove_locked(*e));
        if (granted) {
          e->next = chain;
          chain = e;
        }
      }
      bool fits = true;
      // The queue is empty now: this only clears `queued` and keeps what had been collected.
      static_cast<void>(give_locked(back, fits));
    }
    wait_queue::wake_chain(chain);
  }

  /// The permits in the word: 0 while anyone is queued (a snapshot).
  [[nodiscard]] auto available() const noexcept -> std::size_t {
    // acquire: a caller that sees permits may rely on what their last holder did.
    return state_.load(std::memory_order_acquire) >> 1U;
  }

  /// How many waiters are queued (a snapshot: for metrics, and for tests that must know a
  /// waiter is in line before they go on).
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
  static constexpr std::uintptr_t queued = 1;

  /// queue_.push and queue_.remove, counted. Preconditions: mutex_ is held.
  void push_locked(wait_entry& e) noexcept {
    queue_.push(e);
    // relaxed: written under mutex_, read as a statistic (waiting()).
    queued_count_.store(queued_count_.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
  }
  auto remove_locked(wait_entry& e) noexcept -> bool {
    if (!queue_.remove(e)) {
      return false;
    }
    // relaxed: as in push_locked().
    queued_count_.store(queued_count_.load(std::memory_order_relaxed) - 1,
                        std::memory_order_relaxed);
    return true;
  }

  /// Gives `n` permits to the queued waiters in order and the rest to the word; returns the
  /// chain of waiters completed, to be woken once the lock is released. `fits` becomes false
  /// when the rest would overflow the word (then the rest is dropped: the caller reports it).
  ///
  /// Preconditions: mutex_ is held.
  auto give_locked(std::size_t n, bool& fits) noexcept -> wait_entry* {
    wait_entry* chain = nullptr;
    while (wait_entry* e = queue_.front()) {
      auto& grant = *static_cast<semaphore_grant*>(e->packet);
      if (e->owner->selected() != waiter::waiting) {
        // Its wait is over (a deadline, a stop, another case of its select): take its permits
        // back and unlink it; its owner's unwatch() finds it unlinked.
        n += grant.assigned;
        grant.assigned = 0;
        static_cast<void>(remove_locked(*e));
        continue;
      }
      std::size_t const give = grant.need - grant.assigned < n ? grant.need - grant.assigned : n;
      grant.assigned += give;
      n -= give;
      if (grant.assigned < grant.need) {
        // n is 0: the head keeps what it collected and everyone waits for the next release.
        return chain;
      }
      if (e->owner->try_select(e->operation())) {
        static_cast<void>(remove_locked(*e));
        e->next = chain;
        chain = e;
      } else {
        // It stopped waiting after the check above: as before, take its permits back.
        n += grant.assigned;
        grant.assigned = 0;
        static_cast<void>(remove_locked(*e));
      }
    }
    // The queue is empty: clear `queued`, then put the rest into the word.
    // relaxed: the word is 0 | queued here and only this thread may change it (under the lock);
    // fast paths see the cleared word and go on from there.
    std::uintptr_t s = state_.load(std::memory_order_relaxed);
    if ((s & queued) != 0) {
      if (n > cap_) {
        fits = saturate_;
        n = cap_;
      }
      // release: pairs with the acquire CAS of try_acquire(): a newcomer that takes these
      // permits sees what their last holder did.
      state_.store(n << 1U, std::memory_order_release);
      return chain;
    }
    for (;;) {
      std::size_t next = 0;
      if (!add_within_cap(s >> 1U, n, next)) {
        fits = false;
        return chain;
      }
      // release: as in release(). relaxed on failure: re-check.
      if (state_.compare_exchange_weak(s, next << 1U, std::memory_order_release,
                                       std::memory_order_relaxed)) {
        return chain;
      }
    }
  }

  /// `next` = `have` + `n` within the cap; false when that overflows a semaphore that does not
  /// saturate.
  [[nodiscard]] auto add_within_cap(std::size_t have, std::size_t n,
                                    std::size_t& next) const noexcept -> bool {
    if (n <= cap_ - have) {
      next = have + n;
      return true;
    }
    next = cap_;
    return saturate_;
  }

  std::size_t cap_ = max_permits;
  bool saturate_ = false;
  // INVARIANT: (state_ & queued) != 0 exactly when !queue_.empty(), whenever mutex_ is free;
  // then state_ >> 1 == 0. state_ >> 1 <= cap_.
  atomic<std::uintptr_t> state_;
  mutex mutex_;
  wait_queue queue_;
  // The length of queue_; written under mutex_.
  atomic<std::size_t> queued_count_{0};
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

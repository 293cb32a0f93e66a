// SPDX-License-Identifier: BSL-1.0
#pragma once
// Waiters and wait lists: how a blocked operation sleeps on a structure and how the structure
// wakes exactly the waiters it should, with no lost wake-up and no cost when nobody waits.
//
// Design: crossbeam-channel's `Context`, `Waker` and `SyncWaker` (crossbeam-rs/crossbeam:
// crossbeam-channel/src/context.rs, waker.rs), rewritten for C++:
//   - A `waiter` is the record of one blocked party (a thread today; a coroutine or a select
//     over several structures later). Its `selected` word moves exactly once away from
//     `waiting`, by one CAS, to the id of the operation that completed it, to `aborted`
//     (deadline or cancellation) or to `closed`. Whoever wins that CAS owns the obligation to
//     call `wake()` exactly once; nobody else may.
//   - A `wait_entry` is the node by which a waiter sits in one `wait_queue`. It is separate from
//     the waiter, so one waiter can sit in several queues at once (select): the first queue to
//     select it wins, the others find it already selected and skip it.
//   - A `wait_queue` is an intrusive doubly linked list of entries with no locking of its own;
//     a structure that already has a mutex (the rendezvous channel) uses it directly.
//   - A `wait_list` is a `detail::mutex` + a `wait_queue` + an atomic `is_empty` flag, so that
//     `notify_one()` on a list nobody waits on costs one load: no lock, no system call.
//
// Differences from crossbeam: the waiter lives on the blocked party's stack instead of being a
// reference-counted thread-local, so its lifetime is pinned another way: a waiter selected by
// another party does not return until it has consumed that party's `wake()` (the parker token),
// and `wake()`'s last access to the waiter is the token hand-over. The selector removes the
// entry it selects from the queue itself, and wakes it outside the lock.
//
// The blocking protocol a structure follows (the channels' `park_on` in
// `detail/channel/park.hpp`):
//   1. try the operation, then keep trying for a bounded budget (the channels' `wait_budget`:
//      polls, then yields);
//   2. `push` an entry (publishes "someone waits" with a seq_cst store of `is_empty`);
//   3. re-check readiness with seq_cst loads: the Dekker pair with the waker's state change
//      followed by its seq_cst load of `is_empty` guarantees that either the waker sees the
//      entry or the waiter sees the new state (the lost-wakeup guard); if ready, abort itself;
//   4. `wait` (park), then `remove` the entry unless the selector already removed it.
//
// Synchronization: `waiter::selected_` is written once by CAS (any thread) and read by the
// owner; a hand-off through an entry's `packet` is written by the selector before `wake()`
// and read by the owner after it. A queue's links and every `wait_entry::linked` flag are guarded
// by the mutex of whoever owns the queue. `wait_list::is_empty_` is written under the mutex, read
// without it.
//
// Happens-before: whatever the selector did before `wake()` (a hand-off into the entry's
// packet, for instance) is visible to the waiter once `wait()` returns.
//
// Progress: push/remove/notify take a short lock; `notify_one` on an empty list is wait-free.

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/blocking_hook.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/parker.hpp>

#include <cstdint>
#include <mutex>
#include <optional>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// One blocked party: a thread parked on its own parker, or (for coroutines) a callback that
/// resumes it.
///
/// Synchronization: `selected_` leaves `waiting` exactly once, by a CAS that any thread may
/// attempt (try_select). The winner then calls `wake()` exactly once, unless the winner is the
/// owner itself (its own abort), which needs no wake.
class waiter {
 public:
  /// The value of `selected` before any party has completed or aborted the wait.
  static constexpr std::uintptr_t waiting = 0;
  /// The wait was abandoned: deadline, cancellation, or the owner found the structure ready.
  static constexpr std::uintptr_t aborted = 1;
  /// The structure was closed while the waiter waited.
  static constexpr std::uintptr_t closed = 2;
  /// Operation ids are at least this; in practice the address of the waiter's `wait_entry`.
  static constexpr std::uintptr_t first_operation = 3;

  /// A callback that resumes a suspended party (a coroutine) instead of unparking a thread.
  using wake_fn = void (*)(void* arg) noexcept;

  /// A waiter for the calling thread: `wait()` parks it.
  waiter() noexcept = default;
  /// A waiter resumed by calling `fn(arg)`; `wait()` must not be called on it.
  waiter(wake_fn fn, void* arg) noexcept : wake_fn_(fn), wake_arg_(arg) {}
  waiter(waiter const&) = delete;
  auto operator=(waiter const&) -> waiter& = delete;

  /// Tries to complete the wait with `selection` (an operation id, `aborted` or `closed`).
  /// Exactly one call per waiter succeeds; its caller must then call `wake()` (unless it is
  /// the owner aborting its own wait).
  [[nodiscard]] auto try_select(std::uintptr_t selection) noexcept -> bool {
    std::uintptr_t expected = waiting;
    // acq_rel: release publishes what the winner did before selecting (the owner reads it
    // after its acquire in wait()/selected()); acquire orders the winner after the owner's
    // registration. relaxed on failure: the loser does nothing with the waiter.
    return selected_.compare_exchange_strong(expected, selection, std::memory_order_acq_rel,
                                             std::memory_order_relaxed);
  }

  /// The current selection (`waiting` until some party selected this waiter).
  [[nodiscard]] auto selected() const noexcept -> std::uintptr_t {
    // acquire: pairs with the acq_rel CAS in try_select(); the winner's prior writes are
    // visible once the selection is.
    return selected_.load(std::memory_order_acquire);
  }

  /// Wakes the owner. Called exactly once, by the party whose try_select() won.
  /// After the parker's token hand-over this function does not touch the waiter again: the
  /// owner may return (and destroy the waiter) as soon as it consumed the token.
  void wake() noexcept {
    if (wake_fn_ != nullptr) {
      wake_fn_(wake_arg_);
    } else {
      parker_.unpark();
    }
  }

  /// Blocks the owning thread until a party selected this waiter and woke it, or until
  /// `deadline`. On timeout the owner tries to select `aborted` itself; if another party won
  /// first, it waits for that party's wake (so the party never touches a dead waiter).
  /// Returns the selection, never `waiting`.
  ///
  /// Preconditions: called by the thread that owns this waiter, which was built without a
  /// callback.
  auto wait(std::optional<steady_time> deadline) noexcept -> std::uintptr_t {
    before_blocking();
    if (deadline) {
      if (parker_.park_until(*deadline)) {
        return selected();
      }
      if (try_select(aborted)) {
        return aborted;
      }
    }
    // Another party won the selection (or there is no deadline): its wake() is coming, and the
    // token it leaves is the only way out, so that it never wakes a waiter that is gone.
    parker_.park();
    return selected();
  }

 private:
  // INVARIANT: moves away from `waiting` at most once.
  atomic<std::uintptr_t> selected_{waiting};
  parker parker_;
  wake_fn wake_fn_ = nullptr;
  void* wake_arg_ = nullptr;
};

/// The node by which one waiter sits in one wait queue.
struct wait_entry {
  explicit wait_entry(waiter& w, void* packet_ptr = nullptr) noexcept
      : owner(&w), packet(packet_ptr) {}
  wait_entry(wait_entry const&) = delete;
  auto operator=(wait_entry const&) -> wait_entry& = delete;

  /// The id this entry's operation is selected with: unique while the entry is alive.
  [[nodiscard]] auto operation() const noexcept -> std::uintptr_t {
    return reinterpret_cast<std::uintptr_t>(this);
  }

  /// Whether the entry is in a queue (see is_linked()).
  [[nodiscard]] auto is_linked() const noexcept -> bool {
    // acquire: pairs with the release store in wait_queue::remove(). A selector unlinks the
    // entry it selected before it wakes the owner, so an owner woken through this entry reads
    // false here and may skip the queue's lock; an entry nobody selected reads true.
    return linked.load(std::memory_order_acquire);
  }

  waiter* owner;
  /// Hand-off storage of the waiting operation (a rendezvous passes the value through it; a
  /// select's send case points it at the value it sends, which a bounded channel's receiver
  /// may send for it).
  void* packet;
  // Guarded by the queue owner's mutex.
  wait_entry* prev = nullptr;
  wait_entry* next = nullptr;
  // Written under the queue owner's mutex; read without it only by the entry's owner
  // (is_linked), after its wait was selected.
  atomic<bool> linked{false};
  /// Set by the selector that completed the waiting operation itself through `packet` (a
  /// bounded channel's receiver that gave the slot it freed to a waiting sender,
  /// array_channel::hand_off), before it wakes the owner; read by the owner once its wait
  /// returned this entry's operation. Plain: the wake's token hand-over orders the two. It
  /// sits in `linked`'s padding, so an entry is no larger for it.
  bool completed = false;
};

static_assert(waiter::first_operation <= alignof(wait_entry),
              "entry addresses must not collide with the reserved selections");

/// An intrusive FIFO of wait entries. Not synchronised: its owner holds a mutex around every
/// call.
class wait_queue {
 public:
  [[nodiscard]] auto empty() const noexcept -> bool { return head_ == nullptr; }
  /// The oldest entry, or nullptr.
  [[nodiscard]] auto front() const noexcept -> wait_entry* { return head_; }

  void push(wait_entry& e) noexcept {
    // relaxed: under the queue owner's mutex.
    SPINDLE_ASSERT(!e.linked.load(std::memory_order_relaxed),
                   "a wait entry is in one queue at a time");
    e.prev = tail_;
    e.next = nullptr;
    if (tail_ != nullptr) {
      tail_->next = &e;
    } else {
      head_ = &e;
    }
    tail_ = &e;
    // relaxed: under the queue owner's mutex; the owner reads it only after its own push.
    e.linked.store(true, std::memory_order_relaxed);
  }

  /// Unlinks `e` if it is still in the queue; returns whether it was.
  auto remove(wait_entry& e) noexcept -> bool {
    // relaxed: under the queue owner's mutex.
    if (!e.linked.load(std::memory_order_relaxed)) {
      return false;
    }
    (e.prev != nullptr ? e.prev->next : head_) = e.next;
    (e.next != nullptr ? e.next->prev : tail_) = e.prev;
    e.prev = e.next = nullptr;
    // release: pairs with the acquire load in wait_entry::is_linked(); the unlinking is the
    // last write to the entry by anyone but its owner.
    e.linked.store(false, std::memory_order_release);
    return true;
  }

  /// Selects the oldest entry whose waiter is not `exclude` and is still waiting, completing
  /// its wait with the entry's operation id, and unlinks it. Entries whose waiter another queue
  /// already selected are left for their owner to remove. The caller finishes the operation
  /// (e.g. a hand-off through `packet`) and then calls `owner->wake()`; the entry may be gone
  /// as soon as it does.
  [[nodiscard]] auto try_select(waiter const* exclude = nullptr) noexcept -> wait_entry* {
    for (wait_entry* e = head_; e != nullptr; e = e->next) {
      if (e->owner != exclude && e->owner->try_select(e->operation())) {
        remove(*e);
        return e;
      }
    }
    return nullptr;
  }

  /// Whether an entry of a waiter other than `exclude` is still waiting (a snapshot, for a
  /// readiness check under the owner's mutex).
  [[nodiscard]] auto has_waiting(waiter const* exclude) const noexcept -> bool {
    for (wait_entry const* e = head_; e != nullptr; e = e->next) {
      if (e->owner != exclude && e->owner->selected() == waiter::waiting) {
        return true;
      }
    }
    return false;
  }

  /// Completes every still-waiting entry's wait with `selection` and unlinks it; returns them
  /// as a chain through `next`, to be woken by `wake_chain` once the caller's lock is released.
  [[nodiscard]] auto select_all(std::uintptr_t selection) noexcept -> wait_entry* {
    wait_entry* chain = nullptr;
    wait_entry* e = head_;
    while (e != nullptr) {
      wait_entry* next = e->next;
      if (e->owner->try_select(selection)) {
        remove(*e);
        e->next = chain;
        chain = e;
      }
      e = next;
    }
    return chain;
  }

  /// Wakes every entry of a chain returned by select_all.
  static void wake_chain(wait_entry* chain) noexcept {
    while (chain != nullptr) {
      // Read the link first: once woken, the owner may destroy its entry.
      wait_entry* next = chain->next;
      waiter* owner = chain->owner;
      owner->wake();
      chain = next;
    }
  }

 private:
  wait_entry* head_ = nullptr;
  wait_entry* tail_ = nullptr;
};

/// A wait queue with its own lock and an `is_empty` fast path: the wait list of one side of
/// a channel.
///
/// Synchronization: `mutex_` guards `queue_`. `is_empty_` mirrors `queue_.empty()`; it is
/// written under the mutex and read without it by notify_one()/close_all().
class wait_list {
 public:
  wait_list() = default;
  wait_list(wait_list const&) = delete;
  auto operator=(wait_list const&) -> wait_list& = delete;

  /// Registers `e`. The caller then re-checks readiness with seq_cst loads (see the file
  /// comment) before it waits.
  void push(wait_entry& e) noexcept {
    std::lock_guard lock(mutex_);
    queue_.push(e);
    // seq_cst (A): "someone waits" must be visible before the owner's seq_cst re-check of the
    // structure's state; pairs with the waker's seq_cst state change followed by its seq_cst
    // load (B) in notify_one(): either the waker sees this store or the owner sees the change.
    is_empty_.store(false, std::memory_order_seq_cst);
  }

  /// Unregisters `e` if it is still linked (a selector may have unlinked it already).
  ///
  /// Preconditions: the owner's wait has ended (woken, or aborted by the owner itself): then an
  /// entry found unlinked without the lock stays unlinked, and the lock is skipped.
  void remove(wait_entry& e) noexcept {
    if (!e.is_linked()) {
      return;
    }
    std::lock_guard lock(mutex_);
    if (queue_.remove(e)) {
      // relaxed: guarded by mutex_; a stale `false` seen by notify_one() only costs it the lock.
      is_empty_.store(queue_.empty(), std::memory_order_relaxed);
    }
  }

  /// Whether some entry still waits for a wake: a snapshot taken without the lock, valid only
  /// where every thread is quiescent (the liveness invariants of the model tests,
  /// tests/model/liveness_test.cpp, which read it when no thread can run).
  [[nodiscard]] auto waiting_at_quiescence() const noexcept -> bool {
    return queue_.has_waiting(nullptr);
  }

  /// Wakes one waiter, if any waits: the oldest still waiting (not `exclude`). Costs one load
  /// when nobody waits: that load is inlined into the caller (every send and receive of a
  /// channel makes it), the wake is a call. Returns whether it woke one.
  SPINDLE_ALWAYS_INLINE auto notify_one(waiter const* exclude = nullptr) noexcept -> bool {
    // seq_cst (B): pairs with (A) in push(); the caller's state change (a seq_cst RMW on the
    // structure's position, or a detail::fence_seq_cst()) is ordered before this load. The
    // SPSC channel's state change is a release store followed by light_fence(), which orders
    // it before this load against the heavy_fence() its waiters run after push()
    // (detail/sync/atomic.hpp, "Asymmetric fences").
    if (is_empty_.load(std::memory_order_seq_cst)) {
      return false;
    }
    return notify_one_waiting(exclude);
  }

  /// notify_one() once its look found a waiter registered: selects and wakes one.
  [[gnu::noinline]] auto notify_one_waiting(waiter const* exclude) noexcept -> bool {
    wait_entry* e = select_one(exclude);
    if (e == nullptr) {
      return false;
    }
    e->owner->wake();
    return true;
  }

  /// Selects and unlinks the oldest entry still waiting (not `exclude`), under the lock; the
  /// caller must wake it. nullptr when none waits.
  auto select_one(waiter const* exclude) noexcept -> wait_entry* {
    std::lock_guard lock(mutex_);
    wait_entry* e = queue_.try_select(exclude);
    // relaxed: guarded by mutex_, as in remove().
    is_empty_.store(queue_.empty(), std::memory_order_relaxed);
    return e;
  }

  /// notify_one() that lets the waker finish the selected party's operation before the wake:
  /// `complete(entry)` runs outside the lock, after the selection and before `wake()`, while
  /// the owner cannot leave its wait (a bounded channel's hand-off to a waiting sender). The
  /// look costs what notify_one()'s does.
  template <class Complete>
  SPINDLE_ALWAYS_INLINE auto notify_one_then(Complete&& complete) noexcept -> bool {
    // seq_cst (B): as in notify_one().
    if (is_empty_.load(std::memory_order_seq_cst)) {
      return false;
    }
    return notify_one_waiting_then(complete);
  }

  /// notify_one_then() once its look found a waiter registered. Out of line, as
  /// notify_one_waiting(), so that the caller inlines only the look.
  template <class Complete>
  [[gnu::noinline]] auto notify_one_waiting_then(Complete& complete) noexcept -> bool {
    wait_entry* e = select_one(nullptr);
    if (e == nullptr) {
      return false;
    }
    complete(*e);
    e->owner->wake();
    return true;
  }

  /// Completes every waiter's wait with `waiter::closed` and wakes them all.
  void close_all() noexcept {
    wait_entry* chain = nullptr;
    {
      std::lock_guard lock(mutex_);
      chain = queue_.select_all(waiter::closed);
      // relaxed: guarded by mutex_, as in remove().
      is_empty_.store(queue_.empty(), std::memory_order_relaxed);
    }
    wait_queue::wake_chain(chain);
  }

  /// True when nobody waits (a snapshot).
  [[nodiscard]] auto is_empty() const noexcept -> bool {
    // seq_cst: the same load as (B), for callers that pair with (A) themselves.
    return is_empty_.load(std::memory_order_seq_cst);
  }

 private:
  mutex mutex_;
  wait_queue queue_;
  // INVARIANT: equals queue_.empty() whenever mutex_ is free.
  atomic<bool> is_empty_{true};
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

// SPDX-License-Identifier: BSL-1.0
#pragma once
// What one worker thread of an executor owns: its deque, its victim rotation, its searching
// state and its statistics. A guest slot (see executor_core.hpp) has the same record, lent to
// a thread that is not a worker while it takes part in the work it waits for.
//
// Synchronization:
//   deque          the owner side is used by the worker (or the guest holding the slot) only;
//                  the stealer side by every other worker (detail/deque/deque_state.hpp).
//   next           put and taken by the owning thread; peeked and claimed by the executor's
//                  next-slot watch (detail/executor/next_slot.hpp, protocol (S1)).
//   next_streak, tick, rng, searching, previous, outer_hook, outer_note, help_floor,
//   private_jobs, private_count  the owning thread only (lost_wake_up() reads private_count at a
//   quiescent
//                  point of the model checker, when no thread runs).
//   counters       written by the owner (relaxed), read by executor_core::stats() and
//                  metrics() (relaxed); shown_parked_ns by metrics() under its lock.
//   claimed        a guest slot's owner flag: acquire CAS to take it, release store to give it
//                  back (hands the slot's deque and parker from one guest to the next).
//   diag           written by the owner, read by dumps (relaxed): detail/executor/diag_state.hpp.

#include <spindle/deque.hpp>
#include <spindle/detail/executor/diag_state.hpp>
#include <spindle/detail/executor/next_slot.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/blocking_hook.hpp>
#include <spindle/detail/sync/cache_padded.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/parker.hpp>
#include <spindle/detail/sync/wait_note.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

class scheduler;

/// Per-worker statistics behind executor::stats() and executor::metrics().
///
/// Sleep time: the worker's parked time is a function of the clock, which grows at the
/// clock's rate during a sleep and stays flat between sleeps. `sleep_word` describes that
/// function in one word, so that a reader never combines a total from one sleep with the
/// start of another (two words, read one after the other, would count a sleep that ends
/// between the reads twice, or not at all):
///   awake:   the total of the finished sleeps, in ns;
///   asleep:  asleep_bit | (start of this sleep - that total), the start in ns since `origin`.
/// Parked time at `now` is then the word when awake and (now - origin) - (word - asleep_bit)
/// when asleep (parked_at()). During a sleep the worker's busy time, uptime - parked, is
/// constant, as it should be.
struct worker_counters {
  atomic<std::uint64_t> tasks_run{0};
  atomic<std::uint64_t> tasks_stolen{0};
  atomic<std::uint64_t> steal_attempts{0};
  atomic<std::uint64_t> times_parked{0};
  atomic<std::uint64_t> times_woken{0};
  // Written by the executor's next-slot watch only (its one writer; scheduler.hpp,
  // look_at_next_slots), read by metrics().
  atomic<std::uint64_t> stuck_resumptions{0};
  // Written by the owner only (begin_sleep, end_sleep), read by metrics() (parked_at).
  atomic<std::uint64_t> sleep_word{0};
  // The zero of the times in sleep_word: the making of the worker's context, before the
  // executor's own start time and before any sleep, so no time stored is negative.
  std::chrono::steady_clock::time_point const origin = std::chrono::steady_clock::now();
  // The owner's copies of what sleep_word holds, so that it need not load its own word.
  std::uint64_t parked_total_ns = 0;
  std::uint64_t sleep_base_ns = 0;
  // The parked time metrics() last reported for this worker; guarded by the executor's
  // metrics lock (see executor_core::metrics()).
  std::uint64_t shown_parked_ns = 0;

  static constexpr std::uint64_t asleep_bit = std::uint64_t{1} << 63U;

  // relaxed: a statistic written only by the owning worker.
  static void bump(atomic<std::uint64_t>& c, std::uint64_t by = 1) noexcept {
    c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

  /// The owner is about to sleep; `now` is read just before.
  void begin_sleep(std::chrono::steady_clock::time_point now) noexcept {
    sleep_base_ns = since_origin(now) - parked_total_ns;
    // relaxed: a statistic with a single writer; the reader needs only this word's own
    // coherence (a later load sees this store or a later one), no other data.
    sleep_word.store(asleep_bit | sleep_base_ns, std::memory_order_relaxed);
  }

  /// The owner woke; `now` is read just after.
  void end_sleep(std::chrono::steady_clock::time_point now) noexcept {
    std::uint64_t const end = since_origin(now);
    parked_total_ns = end > sleep_base_ns ? end - sleep_base_ns : parked_total_ns;
    // relaxed: as in begin_sleep().
    sleep_word.store(parked_total_ns, std::memory_order_relaxed);
  }

  /// The parked time at `now` as the word read now describes it, in ns: negative, or ahead of
  /// the truth by a little, when `now` and the owner's clock reads race (the caller clamps).
  [[nodiscard]] auto parked_at(std::chrono::steady_clock::time_point now) const noexcept
      -> std::int64_t {
    // relaxed: see begin_sleep().
    std::uint64_t const word = sleep_word.load(std::memory_order_relaxed);
    if ((word & asleep_bit) == 0) {
      return static_cast<std::int64_t>(word);
    }
    return static_cast<std::int64_t>(since_origin(now)) -
           static_cast<std::int64_t>(word & ~asleep_bit);
  }

 private:
  [[nodiscard]] auto since_origin(std::chrono::steady_clock::time_point t) const noexcept
      -> std::uint64_t {
    auto const ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin).count();
    return ns > 0 ? static_cast<std::uint64_t>(ns) : 0;
  }
};

/// What a worker thread owns, or what a guest borrows while it takes part in its own root task.
struct worker_ctx {
  worker_ctx(scheduler* c, std::size_t i, bool is_guest)
      : core(c),
        index(i),
        // Truncated on purpose: the low 32 bits seed the victim rotation.
        rng(static_cast<std::uint32_t>(0x9e3779b9U * (i + 1))),
        guest(is_guest) {}

  scheduler* core;  // the executor_core (a scheduler) this context belongs to
  std::size_t index;
  spindle::deque_owner<task*> deque{deque_order::lifo};
  // The algorithm behind `deque`, for the owner's push and pop on the hot paths (join, the
  // scheduler loop): always LIFO and never moved-from, so they skip the handle's checks.
  deque_state<task*>& tasks = deque_access::state(deque);
  // The resumption of a coroutine that this worker woke (tokio's LIFO slot): run next, before
  // the deque, and not offered to thieves, so a coroutine that wakes another and then suspends
  // hands the worker over without a queue round trip or a wake-up of another worker. See
  // scheduler::push_resumed for the limits that keep it live, and next_slot.hpp for the watch
  // that takes a task out of a slot its worker does not come back to.
  next_slot next;
  // join's jobs that no thief can see yet (the private end of a split deque; see
  // scheduler::push_local): [0, private_count) in push order, each newer than everything the
  // thread's joins pushed to `deque` before it. The owner pushes and pops them with plain
  // memory accesses, and publishes them to `deque` (oldest first) when another worker may
  // want work or before its thread waits (scheduler::publish_private).
  static constexpr std::uint32_t private_capacity = 64;
  std::uint32_t private_count = 0;
  std::array<task*, private_capacity> private_jobs{};
  std::uint32_t next_streak = 0;
  std::uint32_t tick = 0;
  std::uint32_t rng;
  bool searching = false;
  bool guest;
  // Workers only: below this stack address a waiting worker stops helping with other tasks
  // (executor_core.hpp, "Helping depth"); 0: no bound.
  std::uintptr_t help_floor = 0;
  // Guests only: the calling thread's current_worker and blocking hook before it entered the
  // slot (the hook of the executor the thread is a worker of, if any).
  worker_ctx* previous = nullptr;
  blocking_hook outer_hook{};
  // A guest: the thread's note sink before it entered (detail/sync/wait_note.hpp).
  thread_note_sink outer_note{};
  // The parker this context's thread sleeps on: the idle set's for a worker, guest_parker for
  // a guest slot (set by the scheduler when it builds the context).
  parker* sleeper = nullptr;
  cache_padded<worker_counters> counters;
  // What spindle::dump() shows of this thread: its state, nested tasks and isolated wait.
  cache_padded<worker_diag> diag;
  // Guests only. INVARIANT: true while an outside thread owns the slot; the owner alone uses
  // the deque's owner side and guest_parker (workers sleep on the idle set's parkers).
  atomic<bool> claimed{false};
  parker guest_parker;
};

/// The worker the calling thread is, or nullptr outside any executor's workers.
inline thread_local worker_ctx* current_worker = nullptr;

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

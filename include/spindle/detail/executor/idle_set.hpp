// SPDX-License-Identifier: BSL-1.0
#pragma once
// Which workers are searching for work and which sleep: the executor's parking protocol.
//
// Design after tokio's idle.rs (tokio/src/runtime/scheduler/multi_thread/idle.rs) with the
// Dekker argument of Eigen's EventCount (Eigen/src/ThreadPool/EventCount.h):
// - `state_` packs the number of searching workers (low 32 bits) and of sleeping workers
//   (high 32 bits), so one load tells a notifier whether to wake anyone.
// - A new task wakes at most one sleeper, and only when nobody is searching: a searcher will
//   find it (`should_wake`). The woken worker starts as a searcher; when a searcher finds work
//   and it was the last one, it wakes the next sleeper ("smooth ramp-up", tokio blog).
// - At most about half the workers search at once (`try_begin_search`); the limit is sloppy on
//   purpose, it is only an optimisation.
// - Sleepers are a stack (last in, first woken: its cache is warmest) of worker indices under
//   `mu_`; each worker sleeps on its own parker.
//
// The no-lost-wake-up argument (tags cited by scheduler.hpp and executor_core.hpp):
//   (N1) a notifier publishes its task (queue push), then runs a seq_cst fence, then loads
//        state_ in `should_wake`.
//   (P1) a worker about to sleep increments the sleeping count (and drops its searching
//        count) with a seq_cst RMW in `prepare_park`, runs a seq_cst fence, then re-checks
//        every queue.
// By the fences, either the notifier's load sees the parking worker's increment (and, with no
// searcher counted, wakes a sleeper), or the parking worker's re-check sees the task. If the
// notifier saw a searcher and skipped the wake, that searcher has not yet done its (P1)
// decrement, so its own re-check after (P1) sees the task. A searcher that stops searching
// without parking (it found work, or the join it helped with completed) and was the last one
// wakes a sleeper (`end_search` then `should_wake`); that sleeper's own (P1) re-check follows
// the notifier's fence in the seq_cst order, so it sees the task.
//
// Work in transit. A batch move (a worker taking several tasks from the injector, a thief
// taking several from a victim's deque) makes its tasks invisible to a (P1) re-check between
// leaving one queue and reaching the other, and the notifier that queued them may have skipped
// its wake because of that very re-check (it saw the parking worker searching, or not yet
// sleeping). Model-checking found the consequence (tests/model/executor_test.cpp,
// BatchInTransitIsAnnounced): a worker moved T1 and T2 out of the injector, the other worker
// re-checked, saw neither and parked, and the first ran T1, which waited for T2 in its deque.
//   (M1) whoever moves a batch that leaves tasks in its own deque announces them again once
//        they are there: a worker that is not searching runs (N1) on its deque (seq_cst fence,
//        should_wake(), wake_one()); a searcher drops its searching count (end_search(), a
//        seq_cst RMW after the batch was published) and, if it was the last one, wakes a
//        sleeper. In the first case the (N1)/(P1) argument above applies to the deque. In the
//        second, a worker whose (P1) RMW on state_ follows the end_search in state_'s order
//        synchronizes with it and re-checks after the batch landed; one whose (P1) precedes it
//        is counted asleep when end_search() runs, and has dropped its own searching count, so
//        end_search() finds the mover the last searcher unless another searcher remains, whose
//        own (P1) then comes later still.
// Searchers that find work while parking. The searcher whose presence made a notifier skip
// its wake may find, in its (P1) re-check, a different task from the notifier's (another one
// in the injector, say) and run that one: the notifier's task is then nobody's. So a worker
// whose re-check finds work comes back as a searcher (cancel_park(), then
// force_begin_search(), regardless of the throttle), and whichever task it takes, the
// found-work step ends its search and, if it was the last searcher, wakes a sleeper, which
// finds the rest. The liveness invariant of the model tests found the earlier code, which came
// back as a plain worker and took a task from the injector without searching
// (tests/model/liveness_test.cpp, WorkSpreadsToEveryWorker: three workers, three tasks that
// finish only together; one stayed in a deque while a worker slept).
// So a task never sits in a queue, or between two, while every worker sleeps and nobody
// searches: scheduler::lost_wake_up() states it as an invariant, checked at every quiescent
// point of the model tests.
//
// Synchronization:
//   state_             RMW by any worker (seq_cst), loaded by notifiers.
//   sleepers_, asleep_ guarded by mu_. INVARIANT: asleep_[i] exactly when i is in sleepers_;
//                      the sleeping count in state_ equals sleepers_.size() whenever mu_ is
//                      free.

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/cache_padded.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/parker.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

class idle_set {
 public:
  explicit idle_set(std::size_t workers)
      : workers_(workers),
        parkers_(std::make_unique<cache_padded<parker>[]>(workers)),
        asleep_(workers, false) {
    sleepers_.reserve(workers);
  }

  [[nodiscard]] auto parker_of(std::size_t worker) noexcept -> parker& {
    return parkers_[worker].value;
  }

  /// Whether a notifier should wake a sleeper for a new task: somebody sleeps and nobody
  /// searches. The caller has run its (N1) fence when the lost-wake-up argument needs it.
  [[nodiscard]] auto should_wake() const noexcept -> bool {
    // relaxed: ordered by the caller's seq_cst fence (N1), which pairs with the fence after
    // the seq_cst RMW (P1) in prepare_park(); a worker's own local spawns skip the fence (it
    // stays awake to run them), so for them this is a hint.
    auto const s = state_.value.load(std::memory_order_relaxed);
    return searching(s) == 0 && sleeping(s) != 0;
  }

  /// Whether any worker searches or sleeps: one that may take a task pushed now. A hint for
  /// join's choice between its private and public end (scheduler::push_local).
  [[nodiscard]] auto anyone_idle() const noexcept -> bool {
    // relaxed: a hint; a stale answer costs parallelism, never progress (push_local).
    return state_.value.load(std::memory_order_relaxed) != 0;
  }

  /// Wakes one sleeper and counts it as searching. Returns false when nobody sleeps.
  auto wake_one() noexcept -> bool {
    std::size_t id = 0;
    {
      std::lock_guard guard(mu_);
      if (sleepers_.empty()) {
        return false;
      }
      id = sleepers_.back();
      sleepers_.pop_back();
      asleep_[id] = false;
      // seq_cst: one sleeper fewer, one searcher more; ordered with the loads in
      // should_wake() like (P1).
      state_.value.fetch_add(one_searching - one_sleeping, std::memory_order_seq_cst);
    }
    parkers_[id].value.unpark();
    return true;
  }

  /// Wakes every worker asleep at the time of the call, each counted as searching (shutdown,
  /// termination). A worker that registers afterwards is not woken: it registered under mu_
  /// after this call, so it sees whatever the caller published before it (stopping_,
  /// terminated_ in scheduler.hpp) in its own re-check after (P1).
  ///
  /// One pass over a snapshot, not "wake_one() until nobody sleeps": that loop need not end.
  /// The model checker found it (tests/model/executor_test.cpp, PostWhileTwoWorkersPark): with
  /// two workers, shutdown() woke worker 1, which found no work and, worker 0 not being idle
  /// yet, re-registered and slept; wake_one() took it again, and so on for as long as worker 0
  /// did not run. The loop's end depended on the OS scheduling worker 0, and it burnt CPU
  /// meanwhile.
  void wake_all() noexcept {
    std::lock_guard guard(mu_);
    std::size_t const n = sleepers_.size();
    if (n == 0) {
      return;
    }
    for (std::size_t const id : sleepers_) {
      asleep_[id] = false;
    }
    // seq_cst: n sleepers fewer, n searchers more (modulo 2^64, sleeping(s) >= n); ordered
    // with the loads in should_wake() like (P1), as in wake_one().
    state_.value.fetch_add(n * (one_searching - one_sleeping), std::memory_order_seq_cst);
    // Under the lock: the parkers outlive it, unpark() does not block, and this path is cold.
    for (std::size_t const id : sleepers_) {
      parkers_[id].value.unpark();
    }
    sleepers_.clear();
  }

  /// Starts searching, unless half the workers already do. Returns whether it did.
  auto try_begin_search() noexcept -> bool {
    // relaxed: the throttle is an optimisation; the count itself is changed by the RMW below.
    auto const s = state_.value.load(std::memory_order_relaxed);
    if (2 * searching(s) >= workers_) {
      return false;
    }
    // seq_cst: a searcher's presence is what lets should_wake() skip a wake; see (P1).
    state_.value.fetch_add(one_searching, std::memory_order_seq_cst);
    return true;
  }

  /// Starts searching regardless of the limit: the caller saw work in a queue during its
  /// (P1) re-check and must not go back to sleep without trying to take it.
  auto force_begin_search() noexcept -> bool {
    // seq_cst: as in try_begin_search().
    state_.value.fetch_add(one_searching, std::memory_order_seq_cst);
    return true;
  }

  /// Stops searching because work was found. Returns true when this was the last searcher:
  /// the caller then wakes one more worker if there may be more work.
  auto end_search() noexcept -> bool {
    // seq_cst: pairs with should_wake()'s load, as in (P1).
    return searching(state_.value.fetch_sub(one_searching, std::memory_order_seq_cst)) == 1;
  }

  /// (P1) Registers `worker` as sleeping (and no longer searching). The caller then runs a
  /// seq_cst fence and re-checks every queue; if it finds work it calls cancel_park(), else
  /// park().
  void prepare_park(std::size_t worker, bool was_searching) noexcept {
    std::lock_guard guard(mu_);
    sleepers_.push_back(worker);
    asleep_[worker] = true;
    std::uint64_t const delta = was_searching ? one_sleeping - one_searching : one_sleeping;
    // seq_cst: (P1), pairs with the notifier's fence (N1) before should_wake().
    state_.value.fetch_add(delta, std::memory_order_seq_cst);
  }

  /// Undoes prepare_park() after the re-check found work, or after a wake that did not come
  /// from wake_one() (a completion). Returns true when this worker is now a searcher (a
  /// wake_one() took it off the stack and counted it as one).
  auto cancel_park(std::size_t worker) noexcept -> bool {
    std::lock_guard guard(mu_);
    if (!asleep_[worker]) {
      return true;
    }
    asleep_[worker] = false;
    for (std::size_t i = 0; i < sleepers_.size(); ++i) {
      if (sleepers_[i] == worker) {
        sleepers_[i] = sleepers_.back();
        sleepers_.pop_back();
        break;
      }
    }
    // seq_cst: as in prepare_park().
    state_.value.fetch_sub(one_sleeping, std::memory_order_seq_cst);
    return false;
  }

  /// Sleeps until a wake_one() or another unpark of this worker's parker.
  void park(std::size_t worker) noexcept { parkers_[worker].value.park(); }

  /// Number of workers registered as sleeping (for shutdown's quiescence check).
  [[nodiscard]] auto sleeping_count() const noexcept -> std::size_t {
    // seq_cst: read on the shutdown path only; ordered with the RMWs in prepare_park().
    return static_cast<std::size_t>(sleeping(state_.value.load(std::memory_order_seq_cst)));
  }

  /// Number of workers counted as searching (for the model tests' liveness invariant).
  [[nodiscard]] auto searching_count() const noexcept -> std::size_t {
    // seq_cst: read only where every thread is quiescent (tests/model/liveness_test.cpp).
    return static_cast<std::size_t>(searching(state_.value.load(std::memory_order_seq_cst)));
  }

  [[nodiscard]] auto size() const noexcept -> std::size_t { return workers_; }

 private:
  static constexpr std::uint64_t one_searching = 1;
  static constexpr std::uint64_t one_sleeping = std::uint64_t{1} << 32;

  static constexpr auto searching(std::uint64_t s) noexcept -> std::uint64_t {
    return s & 0xffff'ffffU;
  }
  static constexpr auto sleeping(std::uint64_t s) noexcept -> std::uint64_t { return s >> 32; }

  std::size_t workers_;
  std::unique_ptr<cache_padded<parker>[]> parkers_;
  cache_padded<atomic<std::uint64_t>> state_{};
  mutex mu_;
  std::vector<std::size_t> sleepers_;
  std::vector<bool> asleep_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

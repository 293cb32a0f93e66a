// SPDX-License-Identifier: BSL-1.0
#pragma once
// A worker's `next` slot, and the watch that takes a task out of a slot whose worker does not
// come back for it.
//
// The slot holds the resumption of a coroutine that its worker woke (tokio's LIFO slot, Go's
// runnext): the worker runs it as soon as its current task returns or suspends, on a warm
// cache and without waking anyone (scheduler::push_resumed). Until then no other worker sees
// it. That is what makes a coroutine ping-pong fast, and what left a coroutine waiting for as
// long as the task that woke it kept the thread: a task that sends to a coroutine and then
// computes for a second held the coroutine for that second while the other workers slept, and
// a task that sends to a coroutine and then blocks its thread until the coroutine answers (a
// std::future, a lock, a system call) waited for ever (tests/executor_next_slot_test.cpp).
// tokio has the same hole (tokio issue #4941, "make the LIFO slot stealable"); Go's scheduler
// steals runnext from a P that has kept it for a few microseconds (runtime/proc.go, runqgrab),
// and its sysmon thread takes the P of a thread blocked in a system call.
//
// The watch (next_slot_watch, one thread per executor, started by the executor when the first
// coroutine binds to it) looks at every worker's slot every `next_slot_watch_period`. A slot
// that held the same task at two looks in a row, while its worker started no task in between,
// is stuck: the watch claims the task and queues it where every worker can take it (the
// injector, with the usual wake-up). So a woken coroutine waits at most about two periods for
// a worker, whatever the task that woke it does, and a ping-pong, whose slot changes hands
// within a microsecond, is never touched.
//
// The owner pays for this in its fast paths a load of the claim word per take and a compiler
// barrier per put and take; the cost of the store->load ordering lies on the watch's side, in
// heavy fences (membarrier(2), detail/sync/atomic.hpp), taken only when it claims a task or
// stops watching.
//
// Protocol of one slot: `task_` is written only by the owner; `claim_` by the watch (CAS from
// empty, then its decision) and by the owner (back to empty after a claim it lost).
//   owner put(t):   task_ = t (release).
//   owner take():   t = task_; task_ = null; light fence (S1); c = claim_;
//                   c empty, or about another task: t is the owner's;
//                   c == t, undecided: wait for the watch's decision;
//                   c == t|taken: the watch has t; the owner resets claim_ and skips it.
//   watch claim(t): CAS claim_ empty -> t; heavy fence (S1); t still in task_: claim_ =
//                   t|taken, the watch has t; else claim_ = empty, the owner has it.
// (S1) is the Dekker pair of the owner's store of null with the watch's claim: either the watch
// sees the null (or a later task) and withdraws, or the owner's load of claim_ comes after the
// watch's heavy fence and sees the claim, and waits for the decision. A claim the watch wins
// stays in claim_ until the owner's next take, which sees it and skips the task; the owner does
// not touch task_ in between (every put takes first), so the task in task_ is the claimed one
// until then. A task that comes back to the slot under the same address (a coroutine's
// resumption node is reused) is a new resumption; a claim that sees it there takes that one,
// which is pending, so nothing runs twice.
//
// Watching and resting: the watch stops looking (parks with no timeout) after
// `next_slot_idle_looks` looks in a row found every slot empty. (S2) is the Dekker pair between
// the owner, which after a put loads `armed_` (light fence before) and wakes the watch when it
// is off, and the watch, which clears `armed_` and then (heavy fence) looks at every slot once
// more: either the owner sees the watch off and wakes it, or the watch sees the task.
//
// Under the model checker no watch runs with an executor (its periodic looks would be a thread
// in every executor model test); the protocols (S1) and (S2) are model-tested on their own
// (tests/model/next_slot_test.cpp) with x86-TSO store buffers, where a missing heavy fence
// shows as a task run twice or a slot nobody watches.

#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/helper_thread.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// How often the watch looks at the slots while it watches: a woken coroutine whose worker
/// keeps its thread runs elsewhere after one to two periods. One look costs a load of two
/// words per worker.
inline constexpr std::chrono::microseconds next_slot_watch_period{1000};
/// Looks in a row that found every slot empty before the watch rests.
inline constexpr unsigned next_slot_idle_looks = 4;

class next_slot {
 public:
  next_slot() noexcept : asymmetric_(asymmetric_fences()) {}
  next_slot(next_slot const&) = delete;
  auto operator=(next_slot const&) -> next_slot& = delete;

  /// Owner: whether the slot holds a task (it may be claimed meanwhile; take() decides).
  [[nodiscard]] auto occupied() const noexcept -> bool { return mine_ != nullptr; }

  /// Owner: puts `t`. Preconditions: the slot is empty (take() first).
  void put(task* t) noexcept {
    mine_ = t;
    // release: publishes the task's fields to the watch's acquire loads (peek, claim), which
    // may hand it to another worker.
    task_.store(t, std::memory_order_release);
  }

  /// Owner: takes the task in the slot; nullptr when empty or when the watch claimed it. An
  /// empty slot costs one plain load (no atomic operation: under the model checker, no
  /// scheduling point in every look of the worker loop).
  [[nodiscard]] auto take() noexcept -> task* {
    task* const t = mine_;
    if (t == nullptr) {
      return nullptr;
    }
    mine_ = nullptr;
    // relaxed: ordered before the load of claim_ by the light fence (S1).
    task_.store(nullptr, std::memory_order_relaxed);
    // (S1): pairs with the heavy fence in claim().
    light_fence(asymmetric_);
    // acquire: pairs with the release store of the watch's decision.
    std::uintptr_t const c = claim_.load(std::memory_order_acquire);
    if ((c & ~taken) != address(t)) [[likely]] {
      return t;
    }
    return contested(t);
  }

  /// Watch: the task in the slot, or nullptr.
  [[nodiscard]] auto peek() const noexcept -> task* {
    // acquire: pairs with put(); the task's fields are visible before the watch hands it on.
    return task_.load(std::memory_order_acquire);
  }

  /// Watch: claims `t` if the slot still holds it. True: the caller owns `t` now, and the
  /// owner will skip it.
  [[nodiscard]] auto claim(task* t) noexcept -> bool {
    std::uintptr_t expected = 0;
    // relaxed: the claim is ordered before the load of task_ by the heavy fence (S1); relaxed
    // on failure: a claim in progress, or one the owner has not seen yet: try at a later look.
    if (!claim_.compare_exchange_strong(expected, address(t), std::memory_order_relaxed,
                                        std::memory_order_relaxed)) {
      return false;
    }
    // (S1): pairs with the light fence in take().
    heavy_fence(asymmetric_);
    // acquire: pairs with put(), for the task's fields.
    bool const won = task_.load(std::memory_order_acquire) == t;
    // release: the decision, to the owner's acquire load in take() or contested().
    claim_.store(won ? (address(t) | taken) : 0, std::memory_order_release);
    return won;
  }

 private:
  static constexpr std::uintptr_t taken = 1;
  static_assert(alignof(task) >= 2, "the low bit of a task's address marks a claim taken");

  static auto address(task* t) noexcept -> std::uintptr_t {
    return reinterpret_cast<std::uintptr_t>(t);
  }

  /// take() found a claim on `t`: waits for the watch's decision (a heavy fence and two
  /// stores away), then returns `t` if the watch withdrew, or nullptr if it took `t`.
  auto contested(task* t) noexcept -> task* {
    for (;;) {
      // acquire: pairs with the release store of the decision in claim().
      std::uintptr_t const c = claim_.load(std::memory_order_acquire);
      if (c == (address(t) | taken)) {
        // relaxed: the watch writes claim_ again only by a CAS from empty, after this.
        claim_.store(0, std::memory_order_relaxed);
        return nullptr;
      }
      if (c != address(t)) {
        return t;
      }
      thread_yield();
    }
  }

  // The owner's own copy of task_, which only the owner writes: read without an atomic load.
  task* mine_ = nullptr;
  // Written by the owner only; read by the watch.
  atomic<task*> task_{nullptr};
  // 0, the address of a task the watch is claiming, or that address | taken.
  atomic<std::uintptr_t> claim_{0};
  bool const asymmetric_;
};

/// What the watch asks of its executor, on the watch's thread.
class next_slot_probe {
 public:
  next_slot_probe() = default;
  next_slot_probe(next_slot_probe const&) = delete;
  auto operator=(next_slot_probe const&) -> next_slot_probe& = delete;

  /// One look: claims and requeues every task stuck since the last look. Returns whether any
  /// slot held a task.
  virtual auto look_at_slots() noexcept -> bool = 0;

 protected:
  ~next_slot_probe() = default;
};

/// The arming of the watch, (S2) of the header: what the owner runs after a put and what the
/// watch runs before it rests. Separate from the thread so that the model tests check it alone.
class next_slot_arming {
 public:
  next_slot_arming() noexcept : asymmetric_(asymmetric_fences()) {}
  next_slot_arming(next_slot_arming const&) = delete;
  auto operator=(next_slot_arming const&) -> next_slot_arming& = delete;

  /// Owner, after a put: true when the watch rests and this call armed it, so the caller must
  /// wake it.
  [[nodiscard]] auto after_put() noexcept -> bool {
    // (S2): pairs with the heavy fence in try_rest().
    light_fence(asymmetric_);
    // relaxed: (S2) orders it after the put.
    if (armed_.load(std::memory_order_relaxed)) [[likely]] {
      return false;
    }
    bool expected = false;
    // relaxed: the wake-up that follows publishes what the watch needs (parker).
    return armed_.compare_exchange_strong(expected, true, std::memory_order_relaxed,
                                          std::memory_order_relaxed);
  }

  /// Watch: stops watching unless a slot holds a task (`occupied()` is asked after the heavy
  /// fence). True: the watch may rest until an owner wakes it.
  template <class Occupied>
  [[nodiscard]] auto try_rest(Occupied occupied) noexcept -> bool {
    // relaxed: (S2) orders it before the looks below.
    armed_.store(false, std::memory_order_relaxed);
    // (S2): pairs with the light fence in after_put().
    heavy_fence(asymmetric_);
    if (!occupied()) {
      return true;
    }
    // A task arrived meanwhile; its owner may have seen the watch off and woken it too, which
    // costs one extra look.
    // relaxed: as above.
    armed_.store(true, std::memory_order_relaxed);
    return false;
  }

  /// Whether the watch looks periodically (a snapshot).
  [[nodiscard]] auto armed() const noexcept -> bool {
    // relaxed: a snapshot.
    return armed_.load(std::memory_order_relaxed);
  }

 private:
  atomic<bool> armed_{true};
  bool const asymmetric_;
};

/// The watch's thread: looks every period while `arming` says so, rests while not, stops on
/// stop(). The arming lives with the slots' owners (the scheduler), on a line the watch writes
/// only when it rests or comes back, so that an owner's after_put() reads a line of its own.
class next_slot_watch {
 public:
  /// Starts the thread. Throws: std::system_error if it cannot start.
  next_slot_watch(next_slot_probe& probe, next_slot_arming& arming, std::string thread_name)
      : probe_(probe), arming_(arming) {
    thread_.start(std::move(thread_name), [this] { watch(); });
  }
  next_slot_watch(next_slot_watch const&) = delete;
  auto operator=(next_slot_watch const&) -> next_slot_watch& = delete;
  ~next_slot_watch() { stop(); }

  /// Wakes a resting watch: an owner whose after_put() armed it.
  void wake() noexcept { thread_.wake(); }

  /// Stops the thread and joins it; idempotent; one caller at a time.
  void stop() noexcept { thread_.stop(); }

 private:
  void watch() noexcept {
    unsigned empty_looks = 0;
    for (;;) {
      if (arming_.armed()) {
        thread_.sleep_for(next_slot_watch_period);
      } else {
        thread_.sleep();
      }
      if (thread_.stopping()) {
        return;
      }
      if (probe_.look_at_slots()) {
        empty_looks = 0;
        continue;
      }
      if (++empty_looks < next_slot_idle_looks) {
        continue;
      }
      empty_looks = 0;
      static_cast<void>(arming_.try_rest([this] { return probe_.look_at_slots(); }));
    }
  }

  next_slot_probe& probe_;
  next_slot_arming& arming_;
  // Last: destroyed (stopped and joined) first.
  helper_thread thread_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

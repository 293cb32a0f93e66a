// spindle::task_group under the model checker: spawn racing a repeated wait.
//
// The group's count protocol (task_group.hpp, (W1)/(W2)) must hand the waiter's wake-up to
// exactly one party, and no task spawned after a waiter was released may see that waiter. The
// protocol the group had before broke this: the waiter cleared its bit only after it woke, so a
// task spawned in between finished, still saw the bit and set the completion of a wait() that
// had returned (a write into a dead frame), or of the next wait(), which then returned before
// its own tasks ran.
//
// Two tests: the real task_group on a model executor, and a copy of the count protocol run by
// model threads in both versions, the current one and the old one as a seeded bug, which the
// checker must catch.
#include <spindle/detail/executor/completion.hpp>
#include <spindle/detail/sync/parker.hpp>
#include <spindle/executor.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/task_group.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::tso;

namespace {

// ---- the count protocol of task_group, run by model threads --------------------------------

enum class group_bug : std::uint8_t {
  none,
  /// The protocol before (W1)/(W2): the finisher only decrements, and the waiter removes its
  /// bit after it wakes, so a task spawned in that window sees a stale waiter.
  waiter_clears_bit_late,
};

/// A wait()'s completion, and whether that wait() has returned. The real group keeps its
/// completion in wait()'s frame; here it outlives the wait, so that a late set() is reported by
/// the checker (a failed check, or a data race on `returned`) instead of writing into a dead
/// frame.
struct wait_record {
  spindle::detail::completion done;
  model::plain<int> returned;

  explicit wait_record(spindle::detail::parker* own) : done(own) {}
};

template <group_bug Bug>
class group_count {
 public:
  static constexpr std::uint64_t waiter_bit = std::uint64_t{1} << 63;

  /// Counts a task, then runs `body` and the task's finish on a model thread of its own.
  template <class Body>
  void spawn(std::vector<model::thread*>& threads, Body body) {
    pending_.fetch_add(1, std::memory_order_relaxed);
    threads.push_back(new model::thread([this, body] {
      body();
      finish();
    }));
  }

  void wait(wait_record& w, spindle::detail::parker& own) {
    wait_for(w, own);
    w.returned.set(1);
  }

 private:
  void wait_for(wait_record& w, spindle::detail::parker& own) {
    if (pending_.load(std::memory_order_acquire) == 0) {
      return;
    }
    waiter_.store(&w, std::memory_order_release);
    // Both versions set the bit with one RMW (the old one added it, the current one ors it in).
    auto const old = Bug == group_bug::none
                         ? pending_.fetch_or(waiter_bit, std::memory_order_acq_rel)
                         : pending_.fetch_add(waiter_bit, std::memory_order_acq_rel);
    if (old == 0) {
      std::uint64_t expected = waiter_bit;
      if (pending_.compare_exchange_strong(expected, 0, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
        return;
      }
    }
    w.done.wait_outside(own);
    if constexpr (Bug == group_bug::waiter_clears_bit_late) {
      // The old protocol: the waiter removed its bit only after it woke.
      pending_.fetch_sub(waiter_bit, std::memory_order_acq_rel);
    }
  }

  void finish() {
    if constexpr (Bug == group_bug::none) {
      auto old = pending_.load(std::memory_order_relaxed);
      while (!pending_.compare_exchange_weak(old, old == (waiter_bit | 1) ? 0 : old - 1,
                                             std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
      }
      if (old == (waiter_bit | 1)) {
        wake(waiter_.load(std::memory_order_acquire));
      }
    } else {
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == (waiter_bit | 1)) {
        wake(waiter_.load(std::memory_order_acquire));
      }
    }
  }

  static void wake(wait_record* w) {
    model::check(w->returned.get() == 0, "a task set the completion of a wait() that returned");
    w->done.set();
  }

  model::atomic<std::uint64_t> pending_{0};
  model::atomic<wait_record*> waiter_{nullptr};
};

/// The main thread spawns A and waits, then spawns D and waits again, while a second thread
/// spawns C. Each wait() must return only after the task the main thread spawned before it
/// ran: a stale finisher that wakes the second wait() early shows up as a failed check or as a
/// data race on D's result.
template <group_bug Bug>
void spawn_races_repeated_wait() {
  group_count<Bug> g;
  spindle::detail::parker own;
  wait_record first(&own);
  wait_record second(&own);
  std::vector<model::thread*> tasks;
  model::plain<int> a;
  model::plain<int> d;
  std::vector<model::thread*> c_tasks;
  model::thread spawner([&] { g.spawn(c_tasks, [] {}); });
  g.spawn(tasks, [&a] { a.set(1); });
  g.wait(first, own);
  model::check(a.get() == 1, "wait() returned before the task spawned before it ran");
  g.spawn(tasks, [&d] { d.set(1); });
  g.wait(second, own);
  model::check(d.get() == 1, "the second wait() returned before its task ran");
  spawner.join();
  for (auto* t : c_tasks) {
    t->join();
    delete t;
  }
  for (auto* t : tasks) {
    t->join();
    delete t;
  }
}

auto quiet(model::options o) -> model::options {
  o.quiet = true;
  o.use_environment = false;
  return o;
}

}  // namespace

TEST(ModelTaskGroup, Example) {
  // The current protocol passes every schedule the checker tries; the old one is caught.
  explore_and_report("group count: spawn races repeated wait, PCT",
                     model::pct_schedules(5, budget(2000), 3),
                     spawn_races_repeated_wait<group_bug::none>);
  explore_and_report("group count: spawn races repeated wait, TSO",
                     tso(model::pct_schedules(6, budget(2000), 3)),
                     spawn_races_repeated_wait<group_bug::none>);
}

TEST(ModelTaskGroup, OldProtocolIsCaught) {
  // Seeded bug: the waiter clears its bit after it wakes. PCT finds the schedule in which a
  // task spawned after the first wait() was released sets the second wait()'s completion.
  auto const bad = model::explore(quiet(model::pct_schedules(5, 20000, 3)),
                                  spawn_races_repeated_wait<group_bug::waiter_clears_bit_late>);
  ASSERT_FALSE(bad) << "the checker missed the old task_group protocol's early wake-up";
  std::printf(
      "[model] seeded bug 'waiter clears its bit late' caught as %s after %llu "
      "executions\n",
      model::to_string(bad.failure), static_cast<unsigned long long>(bad.executions));
}

TEST(ModelTaskGroup, RealGroupSpawnRacesRepeatedWait) {
  // The same scenario on spindle::task_group over a model executor: its worker is a model
  // thread, so the scheduler interleaves the group's count with the executor's queues.
  auto body = [] {
    model::plain<int> a;
    model::plain<int> d;
    model::atomic<int> c{0};
    spindle::executor ex(1);
    spindle::task_group g(ex);
    model::thread spawner([&] { g.spawn([&c] { c.fetch_add(1, std::memory_order_relaxed); }); });
    g.spawn([&a] { a.set(1); });
    g.wait();
    model::check(a.get() == 1, "wait() returned before the task spawned before it ran");
    g.spawn([&d] { d.set(1); });
    g.wait();
    model::check(d.get() == 1, "the second wait() returned before its task ran");
    spawner.join();
    g.wait();
    model::check(c.load(std::memory_order_relaxed) == 1, "a task ran twice or never");
  };
  explore_and_report("task_group: spawn races repeated wait, random",
                     model::random_schedules(7, budget(300)), body);
  explore_and_report("task_group: spawn races repeated wait, PCT",
                     model::pct_schedules(8, budget(300), 3), body);
}

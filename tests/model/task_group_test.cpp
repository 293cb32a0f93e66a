// spindle::task_group under the model checker: spawn racing a repeated wait.
//
// The group's count protocol (task_group.hpp, (W1)/(W2)) must hand the waiter's wake-up to
// exactly one party, and no task spawned after a waiter was released may see that waiter. The
// protocol the group had before broke this: the waiter cleared its bit only after it woke, so a
// task spawned in between finished, still saw the bit and set the completion of a wait() that
// had returned (a write into a dead frame), or of the next wait(), which then returned before
// its own tasks ran.
//
// The real task_group on a model executor. The old protocol is the mutant
// `task-group-old-wait-protocol` of task_group.hpp in tools/mutate/mutants.txt, killed by the
// task_group pairs of tests/model/pairs_executor_test.cpp (`spawn_x_wait_again`,
// `wait_again_x_spawn_inside`).
#include <spindle/executor.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/task_group.hpp>

#include <gtest/gtest.h>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::explore_and_report;

TEST(ModelTaskGroup, RealGroupSpawnRacesRepeatedWait) {
  // The main thread spawns A and waits, then spawns D and waits again, while a second thread
  // spawns C. Each wait() must return only after the task the main thread spawned before it
  // ran. The group runs over a model executor: its worker is a model thread, so the scheduler
  // interleaves the group's count with the executor's queues.
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

// Isolated waits and executors nested in each other, under the model checker.
//
// - ModelIsolate.LockAcrossAnIsolatedLoop: a task holds a lock across an isolated parallel
//   loop while an unrelated task that takes the same lock is queued. A worker that stole part
//   of the loop may block on the lock with more of the loop in its deque; the isolated wait
//   must take it from there ((I1)/(I2) at scheduler::wake_isolated(), executor_core.hpp
//   wait_isolated()). A schedule that strands it is a deadlock, which the checker reports.
// - ModelNesting.ParallelForAcrossTwoExecutorsAndBack: A's only worker waits for tasks on B that
//   run loops on A, with more callers than A has guest slots; callers that find every slot
//   taken wait for one ((S1)/(S2) at executor_core::enter_guest_waiting()).
// Seeded bugs: isolated-wait-own-deque-only, guest-slot-release-no-wake (tools/mutate).

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/executor.hpp>
#include <spindle/isolate.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/parallel.hpp>
#include <spindle/task_group.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <mutex>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::explore_three;
using spindle_test::tso;

// The locker is queued on the region's worker before the region: a thief's batch may take it
// with part of the loop, run it first and block on the lock, holding that part in its deque.
TEST(ModelIsolate, LockAcrossAnIsolatedLoop) {
  explore_three("isolate: lock across a loop, locker queued", 131, 300, [] {
    spindle::detail::mutex m;
    model::atomic<int> lockers{0};
    model::atomic<int> iterations{0};
    spindle::executor ex(2);
    ex.spawn([&] {
        ex.post([&] {
          std::lock_guard guard(m);
          lockers.fetch_add(1, std::memory_order_relaxed);
        });
        std::lock_guard guard(m);
        spindle::isolate(ex, [&] {
          spindle::parallel_for(ex, 0, 4, 1,
                                [&](int) { iterations.fetch_add(1, std::memory_order_relaxed); });
        });
      }).join();
    ex.shutdown();
    model::check(iterations.load(std::memory_order_relaxed) == 4, "an iteration was lost");
    model::check(lockers.load(std::memory_order_relaxed) == 1, "the locker did not run once");
  });
}

// A's only worker waits (from outside) for a task group on B whose four tasks each run a loop
// on A, which has two guest slots. The first two callers hold their slot until all four have
// tried, so the third finds both taken: it used to queue its loop on A, whose only worker waits
// for it, and sleep for ever.
TEST(ModelNesting, ParallelForAcrossTwoExecutorsAndBack) {
  explore_three("nesting: A -> B -> A, slots taken", 141, 60, [] {
    spindle::detail::atomic<std::uint32_t> tried{0};
    model::atomic<int> inner{0};
    spindle::executor a(1);
    spindle::executor b(4);
    a.spawn([&] {
       spindle::task_group g(b);
       for (int k = 0; k < 4; ++k) {
         g.spawn([&] {
           // relaxed: a count; the futex word's own ordering is all the wait needs.
           tried.fetch_add(1, std::memory_order_relaxed);
           spindle::detail::futex_wake_all(tried);
           spindle::parallel_for(a, 0, 1, 1, [&](int) {
             inner.fetch_add(1, std::memory_order_relaxed);
             for (;;) {
               // relaxed: as above.
               std::uint32_t const seen = tried.load(std::memory_order_relaxed);
               if (seen >= 4) {
                 break;
               }
               spindle::detail::futex_wait(tried, seen);
             }
           });
         });
       }
       g.wait();
     }).join();
    model::check(inner.load(std::memory_order_relaxed) == 4, "an inner iteration was lost");
  });
}

// detail::mutex under the model checker: mutual exclusion (the race detector sees every access
// to the protected counter, so a critical section that is not ordered after the previous one is
// reported), no lost wake-up of a sleeping locker, and try_lock.
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/model/track_allocations.hpp>

#include <gtest/gtest.h>

#include <mutex>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle::detail::mutex;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::print_stats;
using spindle_test::tso;

namespace {

void increment_body(int threads, int rounds) {
  mutex m;
  model::plain<int> counter;
  auto work = [&] {
    for (int i = 0; i < rounds; ++i) {
      std::lock_guard lk(m);
      counter.set(counter.get() + 1);
    }
  };
  model::thread a(work);
  if (threads == 3) {
    model::thread b(work);
    work();
    b.join();
  } else {
    work();
  }
  a.join();
  model::check(counter.get() == threads * rounds, "an increment was lost");
}

}  // namespace

TEST(ModelMutex, Example) {
  // Two threads, two critical sections each: every schedule within two preemptions.
  auto const r = model::explore(model::exhaustive(2, budget(100000)), [] { increment_body(2, 2); });
  EXPECT_TRUE(r) << r.message;
  print_stats("mutex 2 threads x 2, dfs bound 2", r);
}

TEST(ModelMutex, ThreeThreadsSleepAndWake) {
  auto body = [] { increment_body(3, 2); };
  explore_and_report("mutex 3 threads x 2, random", model::random_schedules(3, budget(1000)), body);
  explore_and_report("mutex 3 threads x 2, pct d=3", model::pct_schedules(4, budget(1000), 3),
                     body);
  spindle_test::explore_tso_then_weak("mutex 3 threads x 2, random + store buffers",
                                      model::random_schedules(5, budget(1000)), body);
}

TEST(ModelMutex, TryLockNeverEntersAHeldLock) {
  explore_and_report("mutex try_lock, dfs bound 3", model::exhaustive(3, budget(100000)), [] {
    mutex m;
    model::plain<int> inside;
    auto work = [&] {
      if (m.try_lock()) {
        inside.set(inside.get() + 1);
        model::check(inside.get() == 1, "two threads inside");
        inside.set(inside.get() - 1);
        m.unlock();
      }
    };
    model::thread a(work);
    work();
    a.join();
  });
}

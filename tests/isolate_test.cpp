// Tests for spindle::isolate (spindle/isolate.hpp): while f waits, the calling thread runs only
// tasks queued inside f. The headline case is rayon #592: a lock held across a join, and an
// unrelated task that takes the same lock picked up by the waiting worker. Without isolation
// that task runs on the thread that holds the lock (a deadlock with a real mutex; here it is
// detected instead of hanging); with isolation it never does.

#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/isolate.hpp>
#include <spindle/parallel.hpp>
#include <spindle/task.hpp>
#include <spindle/task_group.hpp>

#include "support/receipts.hpp"
#include "support/stolen_join.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

namespace {

/// A lock that remembers its holder, so that re-entry by the same thread is detected instead
/// of deadlocking.
struct owned_lock {
  std::atomic<std::thread::id> holder{};
  std::atomic<bool> reentered{false};

  void lock() { holder.store(std::this_thread::get_id()); }
  void unlock() { holder.store(std::thread::id{}); }
  /// What an unrelated task does: take the lock. True if the caller already holds it (a real
  /// mutex would deadlock here).
  void touch() {
    if (holder.load() == std::this_thread::get_id()) {
      reentered.store(true);
    }
  }
};

/// rayon #592: task A holds the lock across join(x, y). y is stolen and keeps the other worker
/// busy; meanwhile an unrelated task C that takes the lock is submitted from outside. Returns
/// whether C ran on A's thread while A held the lock.
auto lock_across_join(bool isolated) -> bool {
  spindle::executor ex{2};
  owned_lock lock;
  std::atomic<bool> y_started{false};
  std::atomic<bool> c_ran{false};
  // The waiter waits in the join while the thief is held until C ran somewhere, or long
  // enough that C clearly did not run on A's thread.
  auto body = [&] { spindle_test::join_with_stolen_half(ex, y_started, c_ran); };
  auto a = ex.spawn([&] {
    lock.lock();
    if (isolated) {
      spindle::isolate(ex, body);
    } else {
      body();
    }
    lock.unlock();
  });
  while (!y_started.load()) {
    std::this_thread::yield();
  }
  ex.post([&] {
    lock.touch();
    c_ran.store(true);
  });
  a.join();
  ex.shutdown();
  EXPECT_TRUE(c_ran.load());
  return lock.reentered.load();
}

/// Runs `scenario` on its own thread and aborts the test binary with a message if it has not
/// returned within `limit`: a hung executor cannot be recovered, and CI must not wait for ever.
template <class Scenario>
void finishes(Scenario scenario, char const* what,
              std::chrono::seconds limit = std::chrono::seconds(30)) {
  std::atomic<bool> done{false};
  std::thread runner([&] {
    scenario();
    done.store(true);
  });
  spindle_test::wait_until([&] { return done.load(); }, limit, what);
  runner.join();
}

/// Set while a test's region runs, on the thread that runs it.
thread_local bool in_region = false;

/// Receives one value into `*got`, then records whether it runs inside the test's region.
auto recv_and_look(spindle::receiver<int> rx, std::atomic<int>* started, std::atomic<int>* got,
                   std::atomic<bool>* ran_inside) -> spindle::task<void> {
  started->fetch_add(1);
  got->store((co_await rx.async_recv()).value_or(-1));
  if (in_region) {
    ran_inside->store(true);
  }
}

/// Two coroutines of a one-worker executor, each suspended in async_recv on its own channel;
/// waking both from a worker makes the second's resumption displace the first's from the
/// worker's next slot onto its deque.
struct two_sleepers {
  spindle::executor& ex;
  // Named members, not structured bindings: clang 14 cannot capture a binding in a lambda.
  std::pair<spindle::sender<int>, spindle::receiver<int>> ends1 = spindle::bounded<int>(1);
  std::pair<spindle::sender<int>, spindle::receiver<int>> ends2 = spindle::bounded<int>(1);
  std::atomic<int> started{0};
  std::atomic<int> got1{0};
  std::atomic<int> got2{0};
  std::atomic<bool> ran_inside{false};
  spindle::join_handle<void> c1 =
      ex.spawn(recv_and_look(ends1.second, &started, &got1, &ran_inside));
  spindle::join_handle<void> c2 =
      ex.spawn(recv_and_look(ends2.second, &started, &got2, &ran_inside));

  explicit two_sleepers(spindle::executor& e) : ex(e) {
    while (started.load() < 2) {
      std::this_thread::yield();
    }
    // Both are suspended in async_recv once the worker is free again.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  /// Wakes both (from a worker, inside the test's region).
  void wake() {
    EXPECT_TRUE(ends1.first.try_send(1).is_sent());
    EXPECT_TRUE(ends2.first.try_send(2).is_sent());
  }
  /// Both received their value, and neither ran inside the region.
  void check() {
    c1.join();
    c2.join();
    EXPECT_EQ(got1.load(), 1);
    EXPECT_EQ(got2.load(), 2);
    EXPECT_FALSE(ran_inside.load());
  }
};

/// On a one-worker executor, inside a region: a task of the region is queued, then two
/// suspended coroutines are woken (the second's resumption displaces the first's from the
/// worker's next slot), then `between` runs, then the region waits for its task.
void region_task_under_resumptions(void (*between)()) {
  spindle::executor ex{1};
  two_sleepers sleepers{ex};
  int const r = ex.spawn([&] {
                    return spindle::isolate(ex, [&] {
                      in_region = true;
                      spindle::task_group g{ex};
                      int v = 0;
                      g.spawn([&] { v = 42; });
                      sleepers.wake();
                      between();
                      g.wait();
                      in_region = false;
                      return v;
                    });
                  }).join();
  EXPECT_EQ(r, 42);
  sleepers.check();
}

}  // namespace

// Example: a lock held across a parallel loop, isolated so that no unrelated task re-enters it.
TEST(Isolate, Example) {
  spindle::executor ex{2};
  std::mutex m;
  std::atomic<int> sum{0};
  {
    std::lock_guard guard(m);
    spindle::isolate(
        ex, [&] { spindle::parallel_for(ex, 0, 1000, 1, [&](int i) { sum.fetch_add(i); }); });
  }
  EXPECT_EQ(sum.load(), 999 * 1000 / 2);
}

// Without isolation the waiting worker runs the unrelated task under the held lock (rayon
// #592); this is the deadlock the next test prevents.
TEST(Isolate, WithoutIsolationTheWaiterRunsAnUnrelatedTask) {
  EXPECT_TRUE(lock_across_join(false));
}

// With isolation the waiting worker never runs it; every task still runs.
TEST(Isolate, LockAcrossJoin) {
  for (int rep = 0; rep < 3; ++rep) {
    EXPECT_FALSE(lock_across_join(true));
  }
}

// Tasks queued on the worker's deque before the region began are not run inside it; tasks
// queued inside (task_group, spawn) are, and their results arrive.
TEST(Isolate, OlderTasksOfTheSameDequeWait) {
  spindle::executor ex{1};
  std::atomic<bool> inside{false};
  std::atomic<bool> older_ran_inside{false};
  int result = ex.spawn([&] {
                   // Queued on this worker's deque before the region.
                   ex.post([&] { older_ran_inside.store(inside.load()); });
                   return spindle::isolate(ex, [&] {
                     inside.store(true);
                     spindle::task_group g{ex};
                     int a = 0;
                     int b = 0;
                     g.spawn([&] { a = 20; });
                     g.spawn([&] { b = 22; });
                     g.wait();
                     auto h = ex.spawn([] { return 0; });
                     int const c = h.join();
                     inside.store(false);
                     return a + b + c;
                   });
                 }).join();
  EXPECT_EQ(result, 42);
  ex.shutdown();
  EXPECT_FALSE(older_ran_inside.load());
}

// Regions nest, and the thread's region is restored when f throws.
TEST(Isolate, NestsAndRestoresOnException) {
  spindle::executor ex{2};
  int const v = spindle::isolate(ex, [&] {
    return spindle::isolate(ex, [&] {
      auto [a, b] = spindle::join(
          ex, [] { return 1; }, [] { return 2; });
      return a + b;
    });
  });
  EXPECT_EQ(v, 3);
  EXPECT_THROW(spindle::isolate(ex, [] { throw std::runtime_error("x"); }), std::runtime_error);
  // The thread is back outside any region: an ordinary join still helps and completes.
  auto [a, b] = spindle::join(
      ex, [] { return 4; }, [] { return 5; });
  EXPECT_EQ(a + b, 9);
}

// A deep fork-join inside a region from outside the executor (a guest) computes the right
// answer: isolation restricts helping, never correctness.
TEST(Isolate, ForkJoinInsideARegion) {
  spindle::executor ex{2};
  struct fib {
    static auto run(spindle::executor& e, int n) -> std::uint64_t {
      if (n < 2) {
        return static_cast<std::uint64_t>(n);
      }
      auto [a, b] = spindle::join(
          e, [&] { return run(e, n - 1); }, [&] { return run(e, n - 2); });
      return a + b;
    }
  };
  EXPECT_EQ(spindle::isolate(ex, [&] { return fib::run(ex, 20); }), 6765U);
  EXPECT_EQ(ex.spawn([&] { return spindle::isolate(ex, [&] { return fib::run(ex, 20); }); }).join(),
            6765U);
}

// The region's own task is queued under coroutine resumptions that belong to no region: the
// isolated wait still reaches it (on one worker it used to put the resumption back and sleep
// for ever). Resumptions woken inside a region go where every worker finds them instead.
TEST(Isolate, RegionTaskUnderWokenCoroutines) {
  finishes([] { region_task_under_resumptions([] {}); }, "an isolated wait under resumptions");
}

// The same after a blocking channel call inside the region, which hands the worker's next
// slot (a resumption) to the queues before the thread blocks.
TEST(Isolate, RegionTaskUnderAResumptionFlushedByABlockingCall) {
  finishes(
      [] {
        region_task_under_resumptions([] {
          auto [tx, rx] = spindle::bounded<int>(1);
          EXPECT_TRUE(rx.recv_for(std::chrono::milliseconds(2)).is_timed_out());
        });
      },
      "an isolated wait after a blocking call");
}

// A lock held across an isolated parallel loop while unrelated tasks that take the same lock
// are queued: a worker that stole part of the loop may block on the lock in one of them, with
// more of the loop in its deque. The isolated waiter must take that part from it (it used to
// sleep, and the program hung about once in 25 runs of 200).
TEST(Isolate, LockAcrossAnIsolatedLoopWithQueuedLockers) {
  finishes(
      [] {
        for (int rep = 0; rep < 200; ++rep) {
          spindle::executor ex{2};
          std::mutex m;
          std::atomic<int> lockers{0};
          std::atomic<std::int64_t> sum{0};
          for (int i = 0; i < 8; ++i) {
            ex.post([&] {
              std::lock_guard guard(m);
              lockers.fetch_add(1);
            });
          }
          ex.spawn([&] {
              std::lock_guard guard(m);
              spindle::isolate(ex, [&] {
                spindle::parallel_for(ex, 0, 4096, [&](int i) { sum.fetch_add(i); });
              });
            }).join();
          ex.shutdown();
          ASSERT_EQ(sum.load(), std::int64_t{4095} * 4096 / 2);
          ASSERT_EQ(lockers.load(), 8);
        }
      },
      "a lock held across an isolated loop");
}

// Two regions wait at once on a two-worker executor, each stealing the other's tasks while it
// looks for its own: what a wait takes and may not run goes back where the other finds it.
TEST(Isolate, TwoRegionsAtOnce) {
  finishes(
      [] {
        for (int rep = 0; rep < 50; ++rep) {
          spindle::executor ex{2};
          std::atomic<std::int64_t> sum{0};
          auto loop = [&] {
            spindle::isolate(ex, [&] {
              spindle::parallel_for(ex, 0, 2000, 1, [&](int i) { sum.fetch_add(i); });
            });
          };
          auto a = ex.spawn(loop);
          auto b = ex.spawn(loop);
          a.join();
          b.join();
          ASSERT_EQ(sum.load(), std::int64_t{1999} * 2000);
        }
      },
      "two isolated loops at once");
}

// isolate() left by an exception on a worker restores the worker's region: the worker's next
// wait helps with outside tasks again. (On the only worker, a wait left inside the region
// would never run the outside task it joins, and hang.)
TEST(Isolate, ExceptionRestoresTheRegionOnAWorker) {
  finishes(
      [] {
        spindle::executor ex{1};
        std::atomic<bool> thrown{false};
        std::promise<spindle::join_handle<int>> outside;
        auto got = outside.get_future();
        auto t = ex.spawn([&] {
          try {
            spindle::isolate(ex, [] { throw std::runtime_error("left by an exception"); });
          } catch (std::runtime_error const&) {
            thrown.store(true);
          }
          return got.get().join();
        });
        while (!thrown.load()) {
          std::this_thread::yield();
        }
        outside.set_value(ex.spawn([] { return 7; }));
        EXPECT_EQ(t.join(), 7);
      },
      "a join after isolate() threw");
}

// A join inside a region whose first half wakes two coroutines: the second's resumption
// displaces the first's onto the deque, above the join's second half. The join's own pop finds
// it first and must not run it there (it would run under the region's locks); it waits as for
// a stolen half, and the isolated wait takes the second half from under it.
TEST(Isolate, JoinDoesNotRunAWokenCoroutineInsideTheRegion) {
  finishes(
      [] {
        spindle::executor ex{1};
        two_sleepers sleepers{ex};
        int const r = ex.spawn([&] {
                          return spindle::isolate(ex, [&] {
                            in_region = true;
                            auto [a, b] = spindle::join(
                                ex,
                                [&] {
                                  sleepers.wake();
                                  return 40;
                                },
                                [] { return 2; });
                            in_region = false;
                            return a + b;
                          });
                        }).join();
        EXPECT_EQ(r, 42);
        sleepers.check();
      },
      "a join inside a region after waking coroutines");
}

// Tests for spindle::isolate (spindle/isolate.hpp): while f waits, the calling thread runs only
// tasks queued inside f. The headline case is rayon #592: a lock held across a join, and an
// unrelated task that takes the same lock picked up by the waiting worker. Without isolation
// that task runs on the thread that holds the lock (a deadlock with a real mutex; here it is
// detected instead of hanging); with isolation it never does.

#include <spindle/executor.hpp>
#include <spindle/isolate.hpp>
#include <spindle/parallel.hpp>
#include <spindle/task_group.hpp>

#include "support/stolen_join.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <thread>

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

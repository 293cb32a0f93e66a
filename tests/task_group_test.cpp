// Tests for spindle/task_group.hpp: structured fork-join, exceptions, reuse, nesting.

#include <spindle/task_group.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

auto fib_serial(int n) -> std::uint64_t {
  return n < 2 ? static_cast<std::uint64_t>(n) : fib_serial(n - 1) + fib_serial(n - 2);
}

auto fib_group(spindle::executor& ex, int n) -> std::uint64_t {
  if (n < 12) {
    return fib_serial(n);
  }
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  spindle::task_group g{ex};
  g.spawn([&] { a = fib_group(ex, n - 1); });
  g.spawn([&] { b = fib_group(ex, n - 2); });
  g.wait();
  return a + b;
}

}  // namespace

TEST(TaskGroup, Example) {
  spindle::executor ex{2};
  std::atomic<int> sum{0};
  spindle::task_group g{ex};
  for (int i = 1; i <= 10; ++i) {
    g.spawn([&sum, i] { sum.fetch_add(i, std::memory_order_relaxed); });
  }
  g.wait();  // every task of the group has finished
  EXPECT_EQ(sum.load(), 55);
}

TEST(TaskGroup, WaitOnEmptyGroupReturns) {
  spindle::executor ex{1};
  spindle::task_group g{ex};
  g.wait();
  g.wait();
}

TEST(TaskGroup, FirstExceptionIsRethrownAfterAllTasksFinish) {
  spindle::executor ex{2};
  std::atomic<int> finished{0};
  spindle::task_group g{ex};
  for (int i = 0; i < 20; ++i) {
    g.spawn([&, i] {
      finished.fetch_add(1, std::memory_order_relaxed);
      if (i % 5 == 0) {
        throw std::runtime_error("task failed");
      }
    });
  }
  EXPECT_THROW(g.wait(), std::runtime_error);
  EXPECT_EQ(finished.load(), 20);
  g.wait();  // the exception was consumed; the group is reusable
}

TEST(TaskGroup, GroupIsReusableAfterWait) {
  spindle::executor ex{2};
  std::atomic<int> n{0};
  spindle::task_group g{ex};
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 10; ++i) {
      g.spawn([&] { n.fetch_add(1, std::memory_order_relaxed); });
    }
    g.wait();
    EXPECT_EQ(n.load(), (round + 1) * 10);
  }
}

TEST(TaskGroup, DestructorWaitsForUnwaitedTasks) {
  spindle::executor ex{2};
  std::atomic<int> n{0};
  {
    spindle::task_group g{ex};
    for (int i = 0; i < 50; ++i) {
      g.spawn([&] { n.fetch_add(1, std::memory_order_relaxed); });
    }
  }
  EXPECT_EQ(n.load(), 50);
}

TEST(TaskGroup, UnobservedExceptionGoesToTheHandler) {
  std::atomic<int> reported{0};
  spindle::executor ex{2, [&](std::exception_ptr) { reported.fetch_add(1); }};
  {
    spindle::task_group g{ex};
    g.spawn([] { throw std::runtime_error("nobody waits"); });
  }
  EXPECT_EQ(reported.load(), 1);
}

TEST(TaskGroup, TasksMaySpawnIntoTheirGroup) {
  spindle::executor ex{2};
  std::atomic<int> n{0};
  spindle::task_group g{ex};
  for (int i = 0; i < 10; ++i) {
    g.spawn([&] {
      n.fetch_add(1, std::memory_order_relaxed);
      for (int j = 0; j < 10; ++j) {
        g.spawn([&] { n.fetch_add(1, std::memory_order_relaxed); });
      }
    });
  }
  g.wait();
  EXPECT_EQ(n.load(), 110);
}

TEST(TaskGroup, NestedGroupsComputeFib) {
  spindle::executor ex{2};
  EXPECT_EQ(fib_group(ex, 22), fib_serial(22));
}

TEST(TaskGroup, WaitInsideSingleWorkerDoesNotDeadlock) {
  spindle::executor ex{1};
  auto h = ex.spawn([&] {
    int a = 0;
    spindle::task_group g{ex};
    g.spawn([&] { a = 1; });
    g.wait();
    return a;
  });
  EXPECT_EQ(h.join(), 1);
}

TEST(TaskGroup, SpawnAfterShutdownThrows) {
  spindle::executor ex{1};
  spindle::task_group g{ex};
  ex.shutdown();
  bool ran = false;
  EXPECT_THROW(g.spawn([&] { ran = true; }), std::logic_error);
  g.wait();
  EXPECT_FALSE(ran);
}

TEST(TaskGroup, OutsideThreadsSpawnWhileOneWaits) {
  spindle::executor ex{2};
  std::atomic<int> n{0};
  spindle::task_group g{ex};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        g.spawn([&] { n.fetch_add(1, std::memory_order_relaxed); });
      }
    });
  }
  for (auto& t : ts) {
    t.join();
  }
  g.wait();
  EXPECT_EQ(n.load(), 2000);
}

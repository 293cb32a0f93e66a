// Tests for spindle/executor.hpp: spawn, join handles, post, join, stats, shutdown, and the
// no-lost-wake-up property of the parking protocol.

#include <spindle/executor.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <latch>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

#include "support/fib.hpp"
#include "support/sizes.hpp"

namespace {

constexpr int scale = spindle_test::tsan_divisor(10);

using spindle_test::fib_join;
using spindle_test::fib_serial;

}  // namespace

TEST(Executor, Example) {
  spindle::executor ex{2};

  // spawn returns a handle; join returns the result.
  auto answer = ex.spawn([] { return 6 * 7; });
  EXPECT_EQ(answer.join(), 42);

  // join runs two callables, possibly in parallel, without allocating.
  auto [left, right] = spindle::join(
      ex, [] { return 1; }, [] { return std::string("two"); });
  EXPECT_EQ(left, 1);
  EXPECT_EQ(right, "two");

  // post is fire and forget; the destructor finishes it before returning.
  std::atomic<int> done{0};
  ex.post([&] { done.fetch_add(1, std::memory_order_relaxed); });
  ex.shutdown();
  EXPECT_EQ(done.load(), 1);
}

TEST(Executor, ZeroWorkersIsRejected) {
  EXPECT_THROW(spindle::executor{0}, std::invalid_argument);
}

TEST(Executor, DefaultHasOneWorkerPerProcessorThisProcessMayUse) {
  spindle::executor ex;
  std::size_t expected = 0;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  expected = static_cast<std::size_t>(CPU_COUNT(&set));
#else
  expected = std::max(1U, std::thread::hardware_concurrency());
#endif
  // A cgroup CPU quota below the affinity count caps the default; without one (the usual
  // case outside containers) the default is exactly the affinity count.
  if (auto const quota = spindle::detail::cgroup_cpu_quota()) {
    expected = std::min(expected, *quota);
  }
  EXPECT_EQ(ex.size(), expected);
}

TEST(Executor, SpawnVoidTask) {
  spindle::executor ex{2};
  int x = 0;
  auto h = ex.spawn([&] { x = 5; });
  h.join();
  EXPECT_EQ(x, 5);
}

TEST(Executor, JoinRethrowsTheTaskException) {
  spindle::executor ex{2};
  auto h = ex.spawn([]() -> int { throw std::runtime_error("boom"); });
  EXPECT_THROW(h.join(), std::runtime_error);
}

TEST(Executor, JoinTwiceThrowsLogicError) {
  spindle::executor ex{1};
  auto h = ex.spawn([] { return 1; });
  EXPECT_TRUE(h.valid());
  EXPECT_EQ(h.join(), 1);
  EXPECT_FALSE(h.valid());
  EXPECT_THROW(h.join(), std::logic_error);
}

TEST(Executor, JoinEmptyOrMovedFromHandleThrows) {
  spindle::executor ex{1};
  spindle::join_handle<int> empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_FALSE(empty.is_ready());
  EXPECT_THROW(empty.join(), std::logic_error);
  auto h = ex.spawn([] { return 3; });
  auto moved = std::move(h);
  EXPECT_THROW(h.join(), std::logic_error);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(moved.join(), 3);
}

TEST(Executor, IsReadyAfterTheTaskFinished) {
  spindle::executor ex{1};
  std::promise<void> ran;
  auto h = ex.spawn([&] { ran.set_value(); });
  ran.get_future().wait();
  while (!h.is_ready()) {
    std::this_thread::yield();
  }
  h.join();
}

TEST(Executor, DetachedHandleStillRuns) {
  std::atomic<int> runs{0};
  std::promise<void> ran;
  {
    spindle::executor ex{2};
    {
      auto h = ex.spawn([&] {
        runs.fetch_add(1, std::memory_order_relaxed);
        ran.set_value();
      });
    }  // handle destroyed without join: detached
    EXPECT_EQ(ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  }
  EXPECT_EQ(runs.load(), 1);
}

TEST(Executor, HandleMayOutliveItsExecutor) {
  spindle::join_handle<int> h;
  {
    spindle::executor ex{2};
    h = ex.spawn([] { return 9; });
  }  // the destructor ran the task
  EXPECT_TRUE(h.is_ready());
  EXPECT_EQ(h.join(), 9);
}

TEST(Executor, ResultIsDestroyedWhenHandleIsDetached) {
  auto token = std::make_shared<int>(1);
  std::weak_ptr<int> watch = token;
  {
    spindle::executor ex{2};
    static_cast<void>(ex.spawn([t = std::move(token)] { return t; }));
  }
  EXPECT_TRUE(watch.expired());
}

TEST(Executor, PostExceptionGoesToTheHandler) {
  std::promise<std::string> seen;
  spindle::executor ex{2, [&](std::exception_ptr e) {
                         try {
                           std::rethrow_exception(e);
                         } catch (std::exception const& x) {
                           seen.set_value(x.what());
                         }
                       }};
  ex.post([] { throw std::runtime_error("from post"); });
  auto f = seen.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(f.get(), "from post");
}

TEST(Executor, PostFromAWorkerReportsToTheHandlerToo) {
  std::promise<void> seen;
  spindle::executor ex{2, [&](std::exception_ptr) { seen.set_value(); }};
  ex.post([&] { ex.post([] { throw std::runtime_error("inner"); }); });
  EXPECT_EQ(seen.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
}

TEST(Executor, HandlerCanBeReplaced) {
  spindle::executor ex{1};
  std::promise<void> seen;
  ex.set_unhandled_exception_handler([&](std::exception_ptr) { seen.set_value(); });
  ex.post([] { throw 7; });
  EXPECT_EQ(seen.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
}

TEST(Executor, NestedSpawnAndJoinInsideWorkers) {
  spindle::executor ex{2};
  auto outer = ex.spawn([&] {
    std::vector<spindle::join_handle<int>> inner;
    for (int i = 0; i < 100; ++i) {
      inner.push_back(ex.spawn([i] { return i; }));
    }
    int sum = 0;
    for (auto& h : inner) {
      sum += h.join();  // joins from a worker: helps instead of blocking
    }
    return sum;
  });
  EXPECT_EQ(outer.join(), 4950);
}

TEST(Executor, JoinInsideSingleWorkerDoesNotDeadlock) {
  spindle::executor ex{1};
  auto outer = ex.spawn([&] {
    auto a = ex.spawn([] { return 1; });
    auto b = ex.spawn([&] { return ex.spawn([] { return 2; }).join(); });
    return a.join() + b.join();
  });
  EXPECT_EQ(outer.join(), 3);
}

TEST(Executor, JoinReturnsBothResults) {
  spindle::executor ex{2};
  auto [a, b] = spindle::join(
      ex, [] {}, [] { return 2.5; });
  EXPECT_EQ(a, spindle::void_result{});
  EXPECT_EQ(b, 2.5);
}

TEST(Executor, JoinPropagatesExceptionsAfterBothSidesFinish) {
  spindle::executor ex{2};
  std::atomic<bool> right_ran{false};
  EXPECT_THROW(
      static_cast<void>(spindle::join(
          ex, []() -> int { throw std::runtime_error("left"); }, [&] { right_ran.store(true); })),
      std::runtime_error);
  EXPECT_TRUE(right_ran.load());
  EXPECT_THROW(static_cast<void>(spindle::join(
                   ex, [] {}, []() -> int { throw std::logic_error("right"); })),
               std::logic_error);
}

TEST(Executor, FibWithJoinMatchesSerial) {
  spindle::executor ex{2};
  int const n = scale == 1 ? 25 : 20;
  EXPECT_EQ(fib_join(ex, n), fib_serial(n));
  // From inside a worker too.
  auto h = ex.spawn([&] { return fib_join(ex, 20); });
  EXPECT_EQ(h.join(), fib_serial(20));
}

TEST(Executor, FibWithJoinOnMoreWorkersThanCores) {
  spindle::executor ex{6};
  EXPECT_EQ(fib_join(ex, 20), fib_serial(20));
}

TEST(Executor, MetricsCountTasksRun) {
  spindle::executor ex{2};
  std::vector<spindle::join_handle<void>> hs;
  for (int i = 0; i < 100; ++i) {
    hs.push_back(ex.spawn([] {}));
  }
  for (auto& h : hs) {
    h.join();
  }
  ex.shutdown();
  auto const m = ex.metrics();
  ASSERT_EQ(m.workers.size(), 2U);
  std::uint64_t run = 0;
  for (auto const& w : m.workers) {
    run += w.tasks_run;
    EXPECT_LE(w.tasks_stolen, w.steal_attempts);
  }
  EXPECT_EQ(run, 100U);
}

// The deprecated stats() still works until 1.0: the same four counters as metrics(), which
// agree once the executor is shut down.
TEST(Executor, DeprecatedStatsAgreeWithMetrics) {
  spindle::executor ex{2};
  for (int i = 0; i < 50; ++i) {
    ex.spawn([] {}).join();
  }
  ex.shutdown();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  auto const st = ex.stats();
#pragma GCC diagnostic pop
  auto const m = ex.metrics();
  ASSERT_EQ(st.size(), m.workers.size());
  for (std::size_t i = 0; i < st.size(); ++i) {
    EXPECT_EQ(st[i].tasks_run, m.workers[i].tasks_run) << i;
    EXPECT_EQ(st[i].tasks_stolen, m.workers[i].tasks_stolen) << i;
    EXPECT_EQ(st[i].steal_attempts, m.workers[i].steal_attempts) << i;
    EXPECT_EQ(st[i].times_parked, m.workers[i].times_parked) << i;
  }
}

TEST(Executor, SpawnAfterShutdownThrowsAndDoesNotRun) {
  spindle::executor ex{2};
  ex.shutdown();
  bool ran = false;
  EXPECT_THROW(static_cast<void>(ex.spawn([&] { ran = true; })), std::logic_error);
  EXPECT_THROW(ex.post([&] { ran = true; }), std::logic_error);
  EXPECT_THROW(static_cast<void>(spindle::join(
                   ex, [&] { ran = true; }, [] {})),
               std::logic_error);
  EXPECT_FALSE(ran);
  ex.shutdown();  // idempotent
}

TEST(Executor, ShutdownFromAWorkerThrowsLogicError) {
  spindle::executor ex{2};
  auto h = ex.spawn([&] {
    try {
      ex.shutdown();
    } catch (std::logic_error const&) {
      return true;
    }
    return false;
  });
  EXPECT_TRUE(h.join());
}

TEST(Executor, ShutdownFinishesTasksSpawnedByTasks) {
  std::atomic<int> count{0};
  {
    spindle::executor ex{2};
    for (int i = 0; i < 10; ++i) {
      ex.post([&] {
        count.fetch_add(1, std::memory_order_relaxed);
        for (int j = 0; j < 10; ++j) {
          ex.post([&] {
            count.fetch_add(1, std::memory_order_relaxed);
            ex.post([&] { count.fetch_add(1, std::memory_order_relaxed); });
          });
        }
      });
    }
    ex.shutdown();
    EXPECT_EQ(count.load(), 10 + 100 + 100);
  }
}

TEST(Executor, WorkerThreadIsRecognised) {
  spindle::executor ex{1};
  EXPECT_FALSE(ex.is_worker_thread());
  EXPECT_TRUE(ex.spawn([&] { return ex.is_worker_thread(); }).join());
}

// Lost wake-up: let every worker go idle (parked), then submit one task from outside; it must
// run within a bounded wait. Repeated, so a race in the parking protocol shows up as a hang.
TEST(Executor, TaskSubmittedWhileAllWorkersParkRunsPromptly) {
  spindle::executor ex{3};
  auto parked = [&] {
    std::uint64_t p = 0;
    for (auto const& w : ex.metrics().workers) {
      p += w.times_parked;
    }
    return p;
  };
  int const rounds = 300 / scale;
  for (int round = 0; round < rounds; ++round) {
    auto const before = parked();
    std::promise<void> ran;
    ex.post([&] { ran.set_value(); });
    ASSERT_EQ(ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready)
        << "task not run after all workers went idle, round " << round;
    if (round % 3 == 0) {
      // The worker that ran the task parks again once it finds nothing more (it counts the
      // park before sleeping): then every worker sleeps when the next round posts.
      auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (parked() <= before && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
    }
  }
}

// A task spawned by a worker that then blocks (outside the executor's control) sits in that
// worker's deque: an idle worker must be woken to steal it.
TEST(Executor, TaskLeftByABlockedWorkerIsStolen) {
  spindle::executor ex{2};
  int const rounds = 200 / scale;
  for (int round = 0; round < rounds; ++round) {
    std::promise<void> inner_ran;
    auto outer = ex.spawn([&] {
      auto inner_done = inner_ran.get_future();
      ex.post([&] { inner_ran.set_value(); });
      return inner_done.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
    });
    ASSERT_TRUE(outer.join()) << "round " << round;
  }
}

// Issue 19: posted from outside while both workers sleep, T1 wakes one worker (a searcher)
// and T2, posted while that searcher is counted, wakes nobody: the searcher's hand-off (it
// finds T1 and, as the last searcher, wakes the next sleeper, detail/executor/idle_set.hpp) or the
// announcement of a batch that carried T2 into its deque ((M1) in detail/executor/idle_set.hpp) is
// all that brings the second worker to T2, while T1 blocks the first worker until T2 has run. T1
// waits with a time limit so that a missing wake fails the round instead of hanging the test.
TEST(Executor, TaskWaitingForALaterPostGetsASecondWorker) {
  spindle::executor ex{2};
  int const rounds = 50;
  auto const parked_since = [&ex](std::vector<spindle::worker_metrics> const& before) {
    auto const now = ex.metrics().workers;
    for (std::size_t i = 0; i < now.size(); ++i) {
      if (now[i].times_parked <= before[i].times_parked) {
        return false;
      }
    }
    return true;
  };
  std::vector<spindle::worker_metrics> before(ex.metrics().workers.size());
  for (int round = 0; round < rounds; ++round) {
    // Both workers asleep, as far as the statistics tell: each parked since the last round
    // began (a round in which one was still awake passes without testing the wake).
    auto const settle = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!parked_since(before) && std::chrono::steady_clock::now() < settle) {
      std::this_thread::yield();
    }
    before = ex.metrics().workers;
    std::atomic<bool> second_ran{false};
    std::atomic<bool> first_saw_second{false};
    std::promise<void> first_done;
    ex.post([&] {
      auto const limit = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      while (!second_ran.load(std::memory_order_acquire) &&
             std::chrono::steady_clock::now() < limit) {
        std::this_thread::yield();
      }
      first_saw_second.store(second_ran.load(std::memory_order_acquire), std::memory_order_relaxed);
      first_done.set_value();
    });
    ex.post([&] { second_ran.store(true, std::memory_order_release); });
    ASSERT_EQ(first_done.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready)
        << "round " << round;
    ASSERT_TRUE(first_saw_second.load(std::memory_order_relaxed))
        << "round " << round << ": T2 did not run while T1 waited 2 s for it";
  }
}

TEST(Executor, ManyOutsideThreadsSpawnConcurrently) {
  spindle::executor ex{2};
  constexpr int threads = 6;
  int const per = 2000 / scale;
  std::atomic<std::int64_t> sum{0};
  std::latch start(threads);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      start.arrive_and_wait();
      std::vector<spindle::join_handle<int>> hs;
      for (int i = 0; i < per; ++i) {
        hs.push_back(ex.spawn([i] { return i; }));
      }
      for (auto& h : hs) {
        sum.fetch_add(h.join(), std::memory_order_relaxed);
      }
    });
  }
  for (auto& t : ts) {
    t.join();
  }
  EXPECT_EQ(sum.load(), std::int64_t{threads} * per * (per - 1) / 2);
}

// An outside caller of join takes a guest slot: it runs the first side itself (the work starts
// without waiting for a sleeping worker) but is still not one of the executor's workers.
TEST(Executor, JoinFromOutsideRunsTheFirstSideOnTheCaller) {
  spindle::executor ex{2};
  auto const caller = std::this_thread::get_id();
  auto [on_caller, worker_flag] = spindle::join(
      ex, [&] { return std::this_thread::get_id() == caller; },
      [&] { return ex.is_worker_thread() || std::this_thread::get_id() == caller; });
  EXPECT_TRUE(on_caller);
  EXPECT_TRUE(worker_flag);
  EXPECT_FALSE(ex.is_worker_thread());
}

// More outside callers than guest slots: the callers that find no free slot inject their root
// and sleep; every join still returns the right results.
TEST(Executor, MoreOutsideJoinersThanGuestSlots) {
  spindle::executor ex{2};
  constexpr int threads = 5;
  std::latch start(threads);
  std::atomic<std::uint64_t> wrong{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      start.arrive_and_wait();
      for (int i = 0; i < 50 / scale + 1; ++i) {
        if (fib_join(ex, 12) != fib_serial(12)) {
          wrong.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (auto& t : ts) {
    t.join();
  }
  EXPECT_EQ(wrong.load(), 0U);
}

// A task spawned (and not joined) by the side of an outside join that runs on the caller stays
// in the guest slot's deque when the caller returns; a worker must steal and run it.
TEST(Executor, TaskLeftInAGuestSlotRuns) {
  spindle::executor ex{2};
  int const rounds = 200 / scale;
  for (int round = 0; round < rounds; ++round) {
    std::promise<void> ran;
    static_cast<void>(spindle::join(
        ex, [&] { ex.post([&] { ran.set_value(); }); }, [] {}));
    ASSERT_EQ(ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready)
        << "round " << round;
  }
}

// shutdown() from another thread while an outside join is running on a guest slot: the join's
// work and a task it spawns after shutdown began are accepted and run exactly once, and
// shutdown() returns once the guest has left.
TEST(Executor, ShutdownWaitsForAnOutsideJoin) {
  for (int round = 0; round < 20; ++round) {
    spindle::executor ex{2};
    std::latch started(1);
    std::latch go(1);
    std::atomic<int> sides{0};
    std::atomic<int> spawned{0};
    std::thread joiner([&] {
      static_cast<void>(spindle::join(
          ex,
          [&] {
            started.count_down();
            go.wait();
            // Accepted: this thread holds a guest slot, so the workers cannot have terminated.
            ex.post([&] { spawned.fetch_add(1, std::memory_order_relaxed); });
            sides.fetch_add(1, std::memory_order_relaxed);
          },
          [&] { sides.fetch_add(1, std::memory_order_relaxed); }));
    });
    started.wait();
    std::thread stopper([&] { ex.shutdown(); });
    // Wait until shutdown has begun: an outside post is then refused.
    int refused = 0;
    int accepted = 0;
    while (refused == 0) {
      try {
        ex.post([&] { spawned.fetch_add(1, std::memory_order_relaxed); });
        ++accepted;
      } catch (std::logic_error const&) {
        ++refused;
      }
    }
    go.count_down();
    joiner.join();
    stopper.join();
    EXPECT_EQ(sides.load(), 2);
    EXPECT_EQ(spawned.load(), accepted + 1);
  }
}

TEST(Executor, ShutdownInsideAnOutsideJoinThrowsLogicError) {
  // The caller holds a guest slot while it runs the join: shutting down from there could never
  // finish (the workers wait for the guest to leave), so it throws.
  spindle::executor ex{2};
  auto [threw, unused] = spindle::join(
      ex,
      [&] {
        try {
          ex.shutdown();
        } catch (std::logic_error const&) {
          return true;
        }
        return false;
      },
      [] {});
  static_cast<void>(unused);
  EXPECT_TRUE(threw);
}

namespace {

/// Posts `workers` tasks, each of which waits (without the executor's help) until all of
/// them have started, and returns how many started within `limit`. With fewer workers awake
/// than tasks, the count stays short: a wake count, not a timing, is what fails.
auto tasks_started_together(spindle::executor& ex, std::size_t tasks, std::chrono::seconds limit)
    -> std::size_t {
  std::atomic<std::size_t> started{0};
  std::latch finished(static_cast<std::ptrdiff_t>(tasks));
  auto const give_up = std::chrono::steady_clock::now() + limit;
  for (std::size_t i = 0; i < tasks; ++i) {
    ex.post([&] {
      started.fetch_add(1);
      while (started.load() < tasks && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::yield();
      }
      finished.count_down();
    });
  }
  finished.wait();
  return started.load();
}

}  // namespace

TEST(Executor, PostedTasksReachEveryParkedWorker) {
  // N workers, all parked; N tasks posted from outside that can only finish together must all
  // start: posting wakes a sleeper, and each worker that finds work wakes the next (the
  // idle protocol's ramp-up). Four workers on any number of cores; repeated, so every round
  // starts from parked workers again.
  spindle::executor ex(4);
  for (int round = 0; round < 20; ++round) {
    // Let the workers park: not needed for correctness, only to start the round from the
    // state this test is about.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_EQ(tasks_started_together(ex, 4, std::chrono::seconds(20)), 4U) << "round " << round;
  }
}

TEST(Executor, SpawnedTasksReachEveryParkedWorker) {
  // The same from inside a worker: one task spawns three more and then waits with them, so
  // the three must reach the three parked workers (local spawns wake sleepers too).
  spindle::executor ex(4);
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::atomic<std::size_t> started{0};
    std::latch finished(4);
    auto const give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    auto wait_for_all = [&] {
      started.fetch_add(1);
      while (started.load() < 4 && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::yield();
      }
      finished.count_down();
    };
    ex.post([&] {
      for (int i = 0; i < 3; ++i) {
        ex.post(wait_for_all);
      }
      wait_for_all();
    });
    finished.wait();
    ASSERT_EQ(started.load(), 4U) << "round " << round;
  }
}

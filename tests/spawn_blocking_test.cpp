// Tests for executor::spawn_blocking: blocking calls run on the executor's blocking pool, never
// on a worker; the pool grows up to its bound and shrinks after its keep-alive; results and
// exceptions come back through the join_handle (join or co_await); shutdown runs every
// accepted blocking task and refuses later ones.

#include <spindle/executor.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#endif

using namespace std::chrono_literals;

// Example: a blocking read on the pool while the workers keep computing.
TEST(SpawnBlocking, Example) {
  spindle::executor ex{1};
  auto file = ex.spawn_blocking([] {
    std::this_thread::sleep_for(50ms);  // stands for a blocking read
    return std::string("contents");
  });
  // The only worker is free meanwhile.
  EXPECT_EQ(ex.spawn([] { return 1 + 1; }).join(), 2);
  EXPECT_EQ(file.join(), "contents");
}

// Blocking tasks never run on a worker; they run concurrently up to the pool's bound.
TEST(SpawnBlocking, RunsOffTheWorkersAndInParallel) {
  spindle::executor ex(spindle::executor_options().workers(1).max_blocking_threads(8));
  std::atomic<int> inside{0};
  std::atomic<int> peak{0};
  std::vector<spindle::join_handle<bool>> hs;
  for (int i = 0; i < 8; ++i) {
    hs.push_back(ex.spawn_blocking([&] {
      int const now = inside.fetch_add(1) + 1;
      int p = peak.load();
      while (now > p && !peak.compare_exchange_weak(p, now)) {
      }
      std::this_thread::sleep_for(30ms);
      inside.fetch_sub(1);
      return ex.is_worker_thread();
    }));
  }
  for (auto& h : hs) {
    EXPECT_FALSE(h.join());
  }
  EXPECT_GE(peak.load(), 2);  // more than one at a time, none on the worker
  EXPECT_LE(peak.load(), 8);
  auto const m = ex.metrics();
  EXPECT_GE(m.blocking_threads, 2U);
  EXPECT_LE(m.blocking_threads, 8U);
}

// The bound holds: with max 2 threads, at most 2 blocking tasks run at once; the rest queue.
TEST(SpawnBlocking, BoundedThreads) {
  spindle::executor ex(spindle::executor_options().workers(1).max_blocking_threads(2));
  std::atomic<int> inside{0};
  std::atomic<int> peak{0};
  std::vector<spindle::join_handle<void>> hs;
  for (int i = 0; i < 6; ++i) {
    hs.push_back(ex.spawn_blocking([&] {
      int const now = inside.fetch_add(1) + 1;
      int p = peak.load();
      while (now > p && !peak.compare_exchange_weak(p, now)) {
      }
      std::this_thread::sleep_for(10ms);
      inside.fetch_sub(1);
    }));
  }
  for (auto& h : hs) {
    h.join();
  }
  EXPECT_LE(peak.load(), 2);
  EXPECT_LE(ex.metrics().blocking_threads, 2U);
}

// Idle blocking threads exit after the keep-alive.
TEST(SpawnBlocking, IdleThreadsExit) {
  spindle::executor ex(
      spindle::executor_options().workers(1).blocking_keep_alive(std::chrono::milliseconds(10)));
  ex.spawn_blocking([] {}).join();
  auto const until = std::chrono::steady_clock::now() + 5s;
  while (ex.metrics().blocking_threads != 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(ex.metrics().blocking_threads, 0U);
}

// Exceptions come back through join(); a worker that joins a blocking task helps meanwhile.
TEST(SpawnBlocking, ExceptionsAndJoinFromAWorker) {
  spindle::executor ex{2};
  auto bad = ex.spawn_blocking([]() -> int { throw std::runtime_error("io"); });
  EXPECT_THROW(bad.join(), std::runtime_error);
  int const v = ex.spawn([&ex] { return ex.spawn_blocking([] { return 40; }).join() + 2; }).join();
  EXPECT_EQ(v, 42);
}

// A coroutine awaits a blocking task without holding a worker.
TEST(SpawnBlocking, CoroutineAwaits) {
  spindle::executor ex{1};
  auto coro = [](spindle::executor& e) -> spindle::task<int> {
    int const a = co_await e.spawn_blocking([] {
      std::this_thread::sleep_for(5ms);
      return 20;
    });
    co_return a + 1;
  };
  EXPECT_EQ(ex.spawn(coro(ex)).join(), 21);
}

#if defined(__linux__)
// Blocking threads are named "<prefix>-b-<j>"; hooks see indices from the worker count up.
TEST(SpawnBlocking, NamesAndHooks) {
  std::atomic<std::size_t> min_index{1000};
  spindle::executor ex(
      spindle::executor_options().workers(2).thread_name("svc").on_thread_start([&](std::size_t i) {
        std::size_t m = min_index.load();
        if (i >= 2) {
          while (i < m && !min_index.compare_exchange_weak(m, i)) {
          }
        }
      }));
  auto name = ex.spawn_blocking([] {
                  char buf[32] = {};
                  pthread_getname_np(pthread_self(), buf, sizeof buf);
                  return std::string(buf);
                }).join();
  EXPECT_EQ(name, "svc-b-0");
  EXPECT_EQ(min_index.load(), 2U);
}
#endif

// Shutdown runs every accepted blocking task, then refuses new ones with a clear error.
TEST(SpawnBlocking, ShutdownRunsAcceptedAndRefusesLater) {
  std::atomic<int> ran{0};
  spindle::executor ex(spindle::executor_options().workers(1).max_blocking_threads(1));
  for (int i = 0; i < 5; ++i) {
    static_cast<void>(ex.spawn_blocking([&ran] {
      std::this_thread::sleep_for(2ms);
      ran.fetch_add(1);
    }));
  }
  ex.shutdown();
  EXPECT_EQ(ran.load(), 5);
  EXPECT_THROW(static_cast<void>(ex.spawn_blocking([] {})), std::logic_error);
}

// shutdown() from a spawn_blocking task would wait for that very task: std::logic_error,
// thrown before anything changed, so the executor keeps working (it shut the workers down
// first, then threw).
TEST(SpawnBlocking, ShutdownFromABlockingTaskThrowsAndChangesNothing) {
  spindle::executor ex{1};
  std::string const what = ex.spawn_blocking([&ex] {
                               try {
                                 ex.shutdown();
                               } catch (std::logic_error const& e) {
                                 return std::string(e.what());
                               }
                               return std::string("shutdown() returned");
                             }).join();
  EXPECT_NE(what.find("spindle::executor::shutdown called from one of its own workers or "
                      "blocking threads"),
            std::string::npos)
      << what;
  EXPECT_FALSE(ex.shutdown_token().stop_requested());
  EXPECT_EQ(ex.spawn([] { return 7; }).join(), 7);
  EXPECT_EQ(ex.spawn_blocking([] { return 8; }).join(), 8);
}

// Destroying the executor on one of its blocking threads cannot throw and could never
// finish (it waits for the task doing it): it prints why and terminates, before shutting
// anything down (an exception escaped the destructor instead).
TEST(SpawnBlockingDeathTest, DestroyedOnItsOwnBlockingThreadTerminatesWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto* ex = new spindle::executor{1};
        ex->spawn_blocking([ex] { delete ex; }).join();
      },
      "spindle: executor destroyed from one of its own workers or blocking threads");
}

// A zero bound is refused when the executor is made.
TEST(SpawnBlocking, ZeroBoundIsRejected) {
  EXPECT_THROW(spindle::executor(spindle::executor_options().workers(1).max_blocking_threads(0)),
               std::invalid_argument);
}

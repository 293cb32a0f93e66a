// Tests for detail/executor/blocking_pool.hpp, the pool behind executor::spawn_blocking: every
// accepted task runs exactly once; threads start lazily, one per task while none is idle, up to
// max_threads, and tasks beyond that wait in the queue; an idle thread is reused, and exits
// after keep_alive; shutdown (and the destructor) runs every accepted task, joins every thread
// and refuses later tasks with std::logic_error, also to tasks of the pool itself; the hooks,
// names and stack size reach the threads. The protocol's interleavings are model-checked in
// tests/model/blocking_pool_test.cpp.

#include <spindle/detail/executor/blocking_pool.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <latch>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#endif

#include "support/eventually.hpp"

namespace {

using spindle::detail::blocking_pool;
using spindle::detail::blocking_pool_options;
using spindle::detail::task;
using namespace std::chrono_literals;

/// A heap task that runs a function once and frees itself, as executor tasks do.
class fn_task final : public task {
 public:
  explicit fn_task(std::function<void()> fn) : task(&run_and_free), fn_(std::move(fn)) {}

 private:
  static void run_and_free(task* t) noexcept {
    auto* self = static_cast<fn_task*>(t);
    self->fn_();
    delete self;
  }

  std::function<void()> fn_;
};

/// Submits `fn`; false when the pool refuses it with std::logic_error (shutdown began), in
/// which case the task still belongs to the caller, which frees it here.
auto try_submit(blocking_pool& pool, std::function<void()> fn) -> bool {
  auto t = std::make_unique<fn_task>(std::move(fn));
  try {
    pool.submit(t.get());
  } catch (std::logic_error const&) {
    return false;
  }
  static_cast<void>(t.release());  // the pool runs and frees it
  return true;
}

using spindle_test::eventually;

auto options(std::size_t max_threads, std::chrono::milliseconds keep_alive = 10'000ms)
    -> blocking_pool_options {
  blocking_pool_options o;
  o.max_threads = max_threads;
  o.keep_alive = keep_alive;
  return o;
}

/// The name the pool gives thread `index` of `prefix` ("<prefix>-<index>" in 15 bytes).
auto expected_name(std::string const& prefix, std::size_t index) -> std::string {
  std::string const suffix = "-" + std::to_string(index);
  return prefix.substr(0, 15 - suffix.size()) + suffix;
}

}  // namespace

// Every submitted task runs exactly once, and shutdown returns only after all of them.
TEST(BlockingPool, EveryTaskRunsExactlyOnce) {
  constexpr std::size_t n = 1000;
  std::vector<std::atomic<int>> runs(n);
  blocking_pool pool(options(4));
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(try_submit(pool, [&runs, i] { runs[i].fetch_add(1); }));
  }
  pool.shutdown();
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(runs[i].load(), 1) << "task " << i;
  }
  EXPECT_EQ(pool.threads(), 0u);
  EXPECT_EQ(pool.queued(), 0u);
}

// No thread exists before the first task.
TEST(BlockingPool, StartsNoThreadUntilATaskComes) {
  blocking_pool pool(options(4));
  EXPECT_EQ(pool.threads(), 0u);
  EXPECT_EQ(pool.idle_threads(), 0u);
  EXPECT_EQ(pool.queued(), 0u);
}

// Blocked tasks make the pool grow one thread per task up to max_threads; the rest queue,
// and run once the threads are free again.
TEST(BlockingPool, GrowsToMaxThreadsThenQueues) {
  std::latch gate(1);
  std::atomic<int> started{0};
  std::atomic<int> ran{0};
  blocking_pool pool(options(4));
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(try_submit(pool, [&] {
      started.fetch_add(1);
      gate.wait();
      ran.fetch_add(1);
    }));
  }
  EXPECT_EQ(pool.threads(), 4u);
  ASSERT_TRUE(eventually([&] { return started.load() == 4 && pool.queued() == 4; }));
  EXPECT_EQ(pool.idle_threads(), 0u);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(started.load(), 4) << "a fifth task started while four threads were blocked";
  EXPECT_EQ(pool.threads(), 4u);
  gate.count_down();
  ASSERT_TRUE(eventually([&] { return ran.load() == 8; }));
  ASSERT_TRUE(eventually([&] { return pool.idle_threads() == 4; }));
  EXPECT_EQ(pool.threads(), 4u);
  EXPECT_EQ(pool.queued(), 0u);
}

// A task submitted while a thread is idle goes to that thread: no new thread starts.
TEST(BlockingPool, IdleThreadIsReused) {
  std::mutex m;
  std::set<std::thread::id> ids;
  blocking_pool pool(options(4));
  for (int i = 0; i < 20; ++i) {
    std::latch done(1);
    ASSERT_TRUE(try_submit(pool, [&] {
      {
        std::lock_guard<std::mutex> g(m);
        ids.insert(std::this_thread::get_id());
      }
      done.count_down();
    }));
    done.wait();
    ASSERT_TRUE(eventually([&] { return pool.idle_threads() == 1; }));
  }
  EXPECT_EQ(pool.threads(), 1u);
  EXPECT_EQ(ids.size(), 1u);
}

// An idle thread exits once keep_alive has passed without work; the pool then starts new
// threads for new tasks (joining the exited ones).
TEST(BlockingPool, IdleThreadsExitAfterKeepAlive) {
  std::latch gate(1);
  std::atomic<int> ran{0};
  blocking_pool pool(options(4, 20ms));
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(try_submit(pool, [&] {
      gate.wait();
      ran.fetch_add(1);
    }));
  }
  EXPECT_EQ(pool.threads(), 4u);
  gate.count_down();
  ASSERT_TRUE(eventually([&] { return pool.threads() == 0; }, 5s))
      << pool.threads() << " threads still alive";
  EXPECT_EQ(ran.load(), 4);
  EXPECT_EQ(pool.idle_threads(), 0u);
  std::latch again(1);
  ASSERT_TRUE(try_submit(pool, [&] { again.count_down(); }));
  again.wait();
}

// keep_alive 0: a thread exits as soon as it finds no work; every task still runs.
TEST(BlockingPool, KeepAliveZero) {
  std::atomic<int> ran{0};
  blocking_pool pool(options(2, 0ms));
  for (int i = 0; i < 100; ++i) {
    std::latch done(1);
    ASSERT_TRUE(try_submit(pool, [&] {
      ran.fetch_add(1);
      done.count_down();
    }));
    done.wait();
  }
  EXPECT_EQ(ran.load(), 100);
  ASSERT_TRUE(eventually([&] { return pool.threads() == 0; }, 5s));
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(try_submit(pool, [&] { ran.fetch_add(1); }));
  }
  pool.shutdown();
  EXPECT_EQ(ran.load(), 200);
}

// After shutdown, submit throws std::logic_error and the task is neither run nor freed.
TEST(BlockingPool, SubmitAfterShutdownThrowsLogicError) {
  blocking_pool pool(options(2));
  pool.shutdown();
  int ran = 0;
  auto t = std::make_unique<fn_task>([&ran] { ++ran; });
  EXPECT_THROW(pool.submit(t.get()), std::logic_error);
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(pool.threads(), 0u);
}

// Tasks still queued when shutdown begins run before it returns.
TEST(BlockingPool, ShutdownRunsQueuedTasks) {
  std::atomic<int> ran{0};
  std::atomic<int> probes{0};
  blocking_pool pool(options(1));
  // The first task holds the only thread until shutdown has closed the queue (its own probe
  // is refused), so the ten behind it are still queued when shutdown begins.
  ASSERT_TRUE(try_submit(pool, [&] {
    while (try_submit(pool, [&] { ran.fetch_add(1); })) {
      probes.fetch_add(1);
      std::this_thread::sleep_for(1ms);
    }
  }));
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(try_submit(pool, [&] { ran.fetch_add(1); }));
  }
  EXPECT_GE(pool.queued(), 10u);
  pool.shutdown();
  EXPECT_EQ(ran.load(), 10 + probes.load());
  EXPECT_EQ(pool.queued(), 0u);
  EXPECT_EQ(pool.threads(), 0u);
}

// The destructor shuts down: it runs every accepted task and joins the threads.
TEST(BlockingPool, DestructorShutsDown) {
  std::atomic<int> ran{0};
  {
    blocking_pool pool(options(2));
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(try_submit(pool, [&] {
        std::this_thread::sleep_for(2ms);
        ran.fetch_add(1);
      }));
    }
  }
  EXPECT_EQ(ran.load(), 10);
}

// shutdown() is idempotent, and a concurrent caller returns only after the threads are
// joined: every stop hook has run.
TEST(BlockingPool, ConcurrentShutdownCallersReturnAfterTheJoin) {
  std::atomic<int> stops{0};
  auto o = options(2);
  o.on_thread_stop = [&stops](std::size_t) {
    std::this_thread::sleep_for(10ms);
    stops.fetch_add(1);
  };
  std::latch gate(1);
  blocking_pool pool(std::move(o));
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(try_submit(pool, [&] { gate.wait(); }));
  }
  std::vector<std::thread> callers;
  std::atomic<int> saw_all{0};
  for (int i = 0; i < 3; ++i) {
    callers.emplace_back([&] {
      pool.shutdown();
      if (stops.load() == 2) {
        saw_all.fetch_add(1);
      }
    });
  }
  std::this_thread::sleep_for(10ms);
  gate.count_down();
  for (auto& c : callers) {
    c.join();
  }
  EXPECT_EQ(saw_all.load(), 3);
  pool.shutdown();
  EXPECT_EQ(stops.load(), 2);
}

// shutdown() from a task of the same pool would join its own thread: std::logic_error.
TEST(BlockingPool, ShutdownFromAPoolThreadThrows) {
  std::latch done(1);
  std::atomic<bool> threw{false};
  blocking_pool pool(options(1));
  ASSERT_TRUE(try_submit(pool, [&] {
    try {
      pool.shutdown();
    } catch (std::logic_error const&) {
      threw = true;
    }
    done.count_down();
  }));
  done.wait();
  EXPECT_TRUE(threw.load());
}

// on_own_thread() tells the pool's threads from others, so that an owner can refuse a
// shutdown there before it changes anything of its own (executor_core::shutdown).
TEST(BlockingPool, KnowsItsOwnThreads) {
  blocking_pool pool(options(1));
  blocking_pool other(options(1));
  EXPECT_FALSE(pool.on_own_thread());
  std::latch done(1);
  std::atomic<bool> own{false};
  std::atomic<bool> others{true};
  ASSERT_TRUE(try_submit(pool, [&] {
    own = pool.on_own_thread();
    others = other.on_own_thread();
    done.count_down();
  }));
  done.wait();
  EXPECT_TRUE(own.load());
  EXPECT_FALSE(others.load());
}

// on_thread_start and on_thread_stop run once per thread, on that thread, with its index;
// every task runs on a thread whose start hook ran.
TEST(BlockingPool, HooksRunOncePerThreadOnThatThread) {
  std::mutex m;
  std::vector<std::pair<std::size_t, std::thread::id>> starts;
  std::vector<std::pair<std::size_t, std::thread::id>> stops;
  std::set<std::thread::id> task_threads;
  auto o = options(3);
  o.on_thread_start = [&](std::size_t i) {
    std::lock_guard<std::mutex> g(m);
    starts.emplace_back(i, std::this_thread::get_id());
  };
  o.on_thread_stop = [&](std::size_t i) {
    std::lock_guard<std::mutex> g(m);
    stops.emplace_back(i, std::this_thread::get_id());
  };
  std::latch all_started(3);  // outlives the pool: its tasks use it until shutdown
  {
    blocking_pool pool(std::move(o));
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(try_submit(pool, [&] {
        {
          std::lock_guard<std::mutex> g(m);
          task_threads.insert(std::this_thread::get_id());
        }
        all_started.arrive_and_wait();
      }));
    }
    for (int i = 0; i < 30; ++i) {
      ASSERT_TRUE(try_submit(pool, [&] {
        std::lock_guard<std::mutex> g(m);
        task_threads.insert(std::this_thread::get_id());
      }));
    }
  }
  ASSERT_EQ(starts.size(), 3u);
  ASSERT_EQ(stops.size(), 3u);
  std::sort(starts.begin(), starts.end());
  std::sort(stops.begin(), stops.end());
  std::set<std::thread::id> start_threads;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(starts[i].first, i);
    EXPECT_EQ(stops[i].first, i);
    EXPECT_EQ(starts[i].second, stops[i].second) << "thread " << i << " stopped elsewhere";
    start_threads.insert(starts[i].second);
  }
  EXPECT_EQ(start_threads.size(), 3u);
  EXPECT_EQ(task_threads, start_threads);
}

// An exception escaping a hook goes to on_error, and the thread goes on to run tasks.
TEST(BlockingPool, HookExceptionGoesToOnError) {
  std::atomic<int> errors{0};
  auto o = options(1);
  o.on_thread_start = [](std::size_t) { throw std::runtime_error("start"); };
  o.on_thread_stop = [](std::size_t) { throw std::runtime_error("stop"); };
  o.on_error = [&errors](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (std::runtime_error const&) {
      errors.fetch_add(1);
    }
  };
  std::atomic<int> ran{0};
  {
    blocking_pool pool(std::move(o));
    ASSERT_TRUE(try_submit(pool, [&] { ran.fetch_add(1); }));
  }
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(errors.load(), 2);
}

// Without on_error, an exception escaping a hook prints the pool's message and terminates.
TEST(BlockingPoolDeathTest, HookExceptionWithoutOnErrorTerminates) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto o = options(1);
        o.on_thread_start = [](std::size_t) { throw std::runtime_error("start"); };
        blocking_pool pool(std::move(o));
        static_cast<void>(try_submit(pool, [] {}));
        pool.shutdown();
      },
      "an exception escaped a blocking thread's start/stop hook");
}

// max_threads 0 could never run a task: std::invalid_argument at construction.
TEST(BlockingPool, MaxThreadsZeroThrows) {
  EXPECT_THROW(blocking_pool(options(0)), std::invalid_argument);
}

#if defined(__linux__)
// Threads are named "<prefix>-<index>" in 15 bytes: the prefix is shortened, never the number.
TEST(BlockingPool, ThreadsAreNamed) {
  for (std::string const& prefix :
       {std::string("spindle-blk"), std::string("a-much-too-long-prefix")}) {
    constexpr std::size_t n = 12;  // indices 10 and 11 have two digits
    auto o = options(n);
    o.name_prefix = prefix;
    std::mutex m;
    std::vector<std::string> names;
    std::vector<std::string> expected;
    o.on_thread_start = [&](std::size_t i) {
      char buf[16] = {};
      ASSERT_EQ(pthread_getname_np(pthread_self(), buf, sizeof buf), 0);
      std::lock_guard<std::mutex> g(m);
      names.emplace_back(buf);
      expected.push_back(expected_name(prefix, i));
    };
    std::latch all_started(n);  // outlives the pool: its tasks use it until shutdown
    {
      blocking_pool pool(std::move(o));
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(try_submit(pool, [&] { all_started.arrive_and_wait(); }));
      }
    }
    std::sort(names.begin(), names.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(names, expected);
    EXPECT_EQ(names.size(), n);
    for (auto const& name : names) {
      EXPECT_LE(name.size(), 15u);
    }
  }
  EXPECT_EQ(expected_name("a-much-too-long-prefix", 11), "a-much-too-l-11");
}

// name_tag goes between the prefix and the index and, like the index, is never cut.
TEST(BlockingPool, NameTagIsKeptWhole) {
  auto o = options(1);
  o.name_prefix = "abcdefghijklmno";
  o.name_tag = "b-";
  std::string name;
  std::latch done(1);
  blocking_pool pool(std::move(o));
  ASSERT_TRUE(try_submit(pool, [&] {
    char buf[16] = {};
    pthread_getname_np(pthread_self(), buf, sizeof buf);
    name = buf;
    done.count_down();
  }));
  done.wait();
  EXPECT_EQ(name, "abcdefghijk-b-0");
}

// A stack size that rounding up to whole pages would wrap around is refused at construction
// with std::invalid_argument, like one below the minimum.
TEST(BlockingPool, HugeStackIsRejected) {
  auto o = options(1);
  o.stack_size = std::numeric_limits<std::size_t>::max();
  EXPECT_THROW(blocking_pool(std::move(o)), std::invalid_argument);
}

// A stack size below the system's minimum is refused at construction; a valid one reaches
// the threads.
TEST(BlockingPool, StackSize) {
  auto tiny = options(1);
  tiny.stack_size = 1;
  EXPECT_THROW(blocking_pool(std::move(tiny)), std::invalid_argument);

  auto o = options(1);
  constexpr std::size_t want = std::size_t{1} << 20;
  o.stack_size = want;
  std::size_t got = 0;
  std::latch done(1);
  blocking_pool pool(std::move(o));
  ASSERT_TRUE(try_submit(pool, [&] {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      static_cast<void>(pthread_attr_getstacksize(&attr, &got));
      pthread_attr_destroy(&attr);
    }
    done.count_down();
  }));
  done.wait();
  EXPECT_GE(got, want);
}
#endif

// Four threads submitting 1000 tasks each: every task runs once, and never more than
// max_threads at a time.
TEST(BlockingPool, ConcurrentSubmitters) {
  constexpr int submitters = 4;
  constexpr int per_submitter = 1000;
  constexpr std::size_t max_threads = 8;
  std::atomic<int> ran{0};
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  blocking_pool pool(options(max_threads));
  std::vector<std::thread> threads;
  for (int s = 0; s < submitters; ++s) {
    threads.emplace_back([&] {
      for (int i = 0; i < per_submitter; ++i) {
        ASSERT_TRUE(try_submit(pool, [&] {
          int const now = running.fetch_add(1) + 1;
          int seen = most.load();
          while (now > seen && !most.compare_exchange_weak(seen, now)) {
          }
          ran.fetch_add(1);
          running.fetch_sub(1);
        }));
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_LE(pool.threads(), max_threads);
  pool.shutdown();
  EXPECT_EQ(ran.load(), submitters * per_submitter);
  EXPECT_LE(most.load(), static_cast<int>(max_threads));
}

// A pool task may submit to its own pool, also when every thread is taken (it then queues).
TEST(BlockingPool, SubmitFromInsideATask) {
  std::latch done(1);
  std::atomic<bool> inner_ran{false};
  blocking_pool pool(options(1));
  ASSERT_TRUE(try_submit(pool, [&] {
    ASSERT_TRUE(try_submit(pool, [&] {
      inner_ran = true;
      done.count_down();
    }));
  }));
  done.wait();
  EXPECT_TRUE(inner_ran.load());
}

// A task that submits while shutdown is in progress: its submits are accepted (and run before
// shutdown returns) until shutdown closes the queue, then refused with std::logic_error, the
// refused task left to the submitting task, which frees it (try_submit).
TEST(BlockingPool, SubmitFromATaskDuringShutdown) {
  std::latch first_accepted(1);
  std::atomic<int> accepted{0};
  std::atomic<int> ran{0};
  std::atomic<bool> refused{false};
  blocking_pool pool(options(1));
  ASSERT_TRUE(try_submit(pool, [&] {
    ASSERT_TRUE(try_submit(pool, [&] { ran.fetch_add(1); }));
    accepted.fetch_add(1);
    first_accepted.count_down();
    // Shutdown is starting on the test's thread: keep submitting until it closes the queue.
    for (;;) {
      if (!try_submit(pool, [&] { ran.fetch_add(1); })) {
        refused = true;
        return;
      }
      accepted.fetch_add(1);
      std::this_thread::sleep_for(1ms);
    }
  }));
  first_accepted.wait();
  pool.shutdown();
  EXPECT_TRUE(refused.load());
  EXPECT_EQ(ran.load(), accepted.load());
  EXPECT_GE(accepted.load(), 1);
}

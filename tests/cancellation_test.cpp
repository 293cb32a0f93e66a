// Tests for cancellation: task_group::cancel() with its std::stop_token, and
// join_handle::cancel() of a task that has not started. The contracts: a cancelled task never
// runs; its callable is destroyed exactly once either way (instance-counted); wait() and
// join() report the cancellation; a task already running runs to its end (and sees the token).

#include <spindle/executor.hpp>
#include <spindle/task_group.hpp>

#include "support/tracked.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

namespace {

using spindle_test::tracked;
using spindle_test::tracked_counts;

/// Blocks the executor's only worker until release() so that later tasks wait in a queue.
/// Its destructor releases the worker and waits until the blocking task has let go of it.
class gate {
 public:
  explicit gate(spindle::executor& ex) {
    ex.post([this] {
      entered_.store(true);
      while (!open_.load()) {
        std::this_thread::yield();
      }
      left_.store(true);
    });
    while (!entered_.load()) {
      std::this_thread::yield();
    }
  }
  gate(gate const&) = delete;
  auto operator=(gate const&) -> gate& = delete;
  ~gate() {
    release();
    while (!left_.load()) {
      std::this_thread::yield();
    }
  }
  void release() { open_.store(true); }

 private:
  std::atomic<bool> entered_{false};
  std::atomic<bool> open_{false};
  std::atomic<bool> left_{false};
};

}  // namespace

// Example: cancel a search once one task found the answer; the rest are skipped.
TEST(TaskGroupCancel, Example) {
  spindle::executor ex{2};
  spindle::task_group g{ex};
  std::atomic<int> found{-1};
  for (int i = 0; i < 1000; ++i) {
    g.spawn([&g, &found, i](std::stop_token token) {
      if (token.stop_requested()) {
        return;  // cancelled while running: end early
      }
      if (i == 10) {
        found.store(i);
        g.cancel();
      }
    });
  }
  EXPECT_EQ(g.wait(), spindle::task_group_status::cancelled);
  EXPECT_EQ(found.load(), 10);
}

// Tasks that had not started when cancel() ran never run; every callable is destroyed once.
TEST(TaskGroupCancel, UnstartedTasksAreSkippedAndDestroyedOnce) {
  auto const live0 = tracked_counts::live().load();
  spindle::executor ex{1};
  gate g0(ex);
  std::atomic<int> ran{0};
  {
    spindle::task_group g{ex};
    for (int i = 0; i < 100; ++i) {
      g.spawn([&ran, t = tracked(static_cast<std::uint64_t>(i))] {
        static_cast<void>(t);
        ran.fetch_add(1);
      });
    }
    g.cancel();
    EXPECT_TRUE(g.is_cancelled());
    g0.release();
    EXPECT_EQ(g.wait(), spindle::task_group_status::cancelled);
    EXPECT_EQ(ran.load(), 0);
    EXPECT_EQ(g.skipped_tasks(), 100U);
  }
  EXPECT_EQ(tracked_counts::live().load(), live0);
}

// A running task sees its token requested and may end early; wait() still waits for it.
TEST(TaskGroupCancel, RunningTasksSeeTheToken) {
  spindle::executor ex{2};
  spindle::task_group g{ex};
  std::atomic<bool> started{false};
  std::atomic<bool> saw_stop{false};
  g.spawn([&](std::stop_token token) {
    started.store(true);
    while (!token.stop_requested()) {
      std::this_thread::yield();
    }
    saw_stop.store(true);
  });
  while (!started.load()) {
    std::this_thread::yield();
  }
  g.cancel();
  EXPECT_EQ(g.wait(), spindle::task_group_status::cancelled);
  EXPECT_TRUE(saw_stop.load());
}

// The group is reusable: the round after a cancelled wait() runs normally, with a fresh token.
TEST(TaskGroupCancel, NextRoundIsNotCancelled) {
  spindle::executor ex{2};
  spindle::task_group g{ex};
  g.cancel();
  g.spawn([] { FAIL() << "a task spawned after cancel() ran"; });
  EXPECT_EQ(g.wait(), spindle::task_group_status::cancelled);
  EXPECT_FALSE(g.is_cancelled());
  EXPECT_FALSE(g.stop_token().stop_requested());
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) {
    g.spawn([&ran](std::stop_token token) {
      if (!token.stop_requested()) {
        ran.fetch_add(1);
      }
    });
  }
  EXPECT_EQ(g.wait(), spindle::task_group_status::complete);
  EXPECT_EQ(ran.load(), 10);
}

// cancel() from a task of the group, racing with the group's other tasks and with spawns:
// every task either ran or was skipped, never both, never neither.
TEST(TaskGroupCancel, CancelRacingWithSpawnsAccountsForEveryTask) {
  spindle::executor ex{2};
  for (int rep = 0; rep < 50; ++rep) {
    spindle::task_group g{ex};
    std::atomic<int> ran{0};
    constexpr int n = 200;
    for (int i = 0; i < n; ++i) {
      g.spawn([&, i] {
        ran.fetch_add(1);
        if (i == n / 2) {
          g.cancel();
        }
      });
    }
    auto const status = g.wait();
    auto const skipped = g.skipped_tasks();  // a fresh group: all of its skips
    EXPECT_EQ(static_cast<std::uint64_t>(ran.load()) + skipped, static_cast<std::uint64_t>(n));
    EXPECT_EQ(status, spindle::task_group_status::cancelled);
  }
}

// An exception and a cancel in the same round: wait() rethrows, and the next round is clean.
TEST(TaskGroupCancel, ExceptionWinsOverStatus) {
  spindle::executor ex{2};
  spindle::task_group g{ex};
  g.spawn([&g] {
    g.cancel();
    throw std::runtime_error("boom");
  });
  EXPECT_THROW(g.wait(), std::runtime_error);
  EXPECT_FALSE(g.is_cancelled());
  EXPECT_EQ(g.wait(), spindle::task_group_status::complete);
}

// join_handle::cancel(): a task that has not started never runs, its callable is destroyed on
// the cancelling thread before cancel() returns, and join() throws task_cancelled at once.
TEST(JoinHandleCancel, UnstartedTaskNeverRuns) {
  auto const live0 = tracked_counts::live().load();
  spindle::executor ex{1};
  gate g0(ex);
  std::atomic<bool> ran{false};
  auto h = ex.spawn([&ran, t = tracked(7)] {
    ran.store(true);
    return t.id();
  });
  EXPECT_EQ(tracked_counts::live().load(), live0 + 1);
  EXPECT_TRUE(h.cancel());
  EXPECT_EQ(tracked_counts::live().load(), live0);  // destroyed here, unrun
  EXPECT_FALSE(h.cancel());                         // once
  EXPECT_TRUE(h.is_ready());
  EXPECT_THROW(h.join(), spindle::task_cancelled);
  EXPECT_FALSE(h.valid());
  g0.release();
  ex.shutdown();
  EXPECT_FALSE(ran.load());
}

// A task that started (or finished) cannot be cancelled: cancel() says so and join() returns
// its result.
TEST(JoinHandleCancel, StartedTaskRunsToItsEnd) {
  spindle::executor ex{1};
  auto h = ex.spawn([] { return 5; });
  while (!h.is_ready()) {
    std::this_thread::yield();
  }
  EXPECT_FALSE(h.cancel());
  EXPECT_EQ(h.join(), 5);
  EXPECT_FALSE(h.cancel());  // an empty handle: nothing to cancel
  spindle::join_handle<int> empty;
  EXPECT_FALSE(empty.cancel());
}

// cancel() racing with the worker that starts the task: exactly one side wins, the callable
// is destroyed once, and join() agrees with cancel()'s answer.
TEST(JoinHandleCancel, RaceWithStartDecidesOnce) {
  auto const live0 = tracked_counts::live().load();
  spindle::executor ex{2};
  int cancelled = 0;
  int completed = 0;
  for (int i = 0; i < 2000; ++i) {
    std::atomic<int> runs{0};
    auto h = ex.spawn([&runs, t = tracked(1)] {
      static_cast<void>(t);
      runs.fetch_add(1);
      return 1;
    });
    if (h.cancel()) {
      ++cancelled;
      EXPECT_THROW(h.join(), spindle::task_cancelled);
      EXPECT_EQ(runs.load(), 0);
    } else {
      ++completed;
      EXPECT_EQ(h.join(), 1);
      EXPECT_EQ(runs.load(), 1);
    }
  }
  ex.shutdown();
  EXPECT_EQ(cancelled + completed, 2000);
  EXPECT_EQ(tracked_counts::live().load(), live0);
}

// A coroutine task is cancelled by its handle too (since the cancellation that flows,
// detail/coro/cancel.hpp): before it starts it never runs; one that never waits ends with its
// value, and a cancel after its end says false. Every race between the two gives one of these.
TEST(JoinHandleCancel, CoroutineTaskCancelledByTheHandle) {
  spindle::executor ex{1};
  for (int i = 0; i < 200; ++i) {
    auto coro = []() -> spindle::task<int> { co_return 3; };
    auto h = ex.spawn(coro());
    if (h.cancel()) {
      try {
        EXPECT_EQ(h.join(), 3);  // started before the request: it never waits, so it ends
      } catch (spindle::task_cancelled const&) {
        // cancelled before it started
      }
    } else {
      EXPECT_EQ(h.join(), 3);  // it had ended
    }
  }
}

// Shutdown with cancelled tasks still queued: their records are dropped, nothing runs twice,
// nothing leaks.
TEST(JoinHandleCancel, CancelledTasksQueuedAtShutdown) {
  auto const live0 = tracked_counts::live().load();
  {
    spindle::executor ex{1};
    gate g0(ex);
    std::vector<spindle::join_handle<void>> hs;
    for (int i = 0; i < 100; ++i) {
      hs.push_back(
          ex.spawn([t = tracked(static_cast<std::uint64_t>(i))] { static_cast<void>(t); }));
    }
    for (std::size_t i = 0; i < hs.size(); i += 2) {
      EXPECT_TRUE(hs[i].cancel());
    }
    g0.release();
  }
  EXPECT_EQ(tracked_counts::live().load(), live0);
}

// A group task's captures die before wait() returns, whether the task ran or was skipped:
// they may refer to the waiter's scope.
TEST(TaskGroupCancel, CapturesDieBeforeWaitReturns) {
  struct flags_on_destroy {
    std::atomic<int>* n;
    explicit flags_on_destroy(std::atomic<int>* p) : n(p) {}
    flags_on_destroy(flags_on_destroy&& o) noexcept : n(std::exchange(o.n, nullptr)) {}
    flags_on_destroy(flags_on_destroy const&) = delete;
    auto operator=(flags_on_destroy const&) = delete;
    ~flags_on_destroy() {
      if (n != nullptr) {
        n->fetch_add(1);
      }
    }
  };
  spindle::executor ex{2};
  for (bool cancel : {false, true}) {
    std::atomic<int> destroyed{0};
    spindle::task_group g{ex};
    for (int i = 0; i < 50; ++i) {
      g.spawn([d = flags_on_destroy(&destroyed)] { static_cast<void>(d); });
    }
    if (cancel) {
      g.cancel();
    }
    static_cast<void>(g.wait());
    EXPECT_EQ(destroyed.load(), 50);
  }
}

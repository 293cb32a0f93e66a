// Tests for spindle::task_scope: joining from a coroutine and from a thread, both policies,
// cancel() reaching suspended, unstarted and stop-token children, children spawning into the
// scope while it is joined, cancellation of the joining coroutine flowing into the children,
// the destructor cancelling and waiting, and values destroyed exactly once.

#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/task.hpp>
#include <spindle/task_scope.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <latch>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <utility>

#include "support/tracked.hpp"

namespace {

using namespace std::chrono_literals;
using spindle_test::tracked;

auto add(std::atomic<int>* sum, int v) -> spindle::task<void> {
  co_await spindle::sleep_for(1ms);
  sum->fetch_add(v);
}

auto fail() -> spindle::task<int> {
  co_await spindle::sleep_for(1ms);
  throw std::runtime_error("child failed");
}

auto wait_forever(spindle::receiver<int> rx, std::atomic<int>* cancelled) -> spindle::task<void> {
  try {
    co_await rx.async_recv();
  } catch (spindle::task_cancelled const&) {
    cancelled->fetch_add(1);
    throw;
  }
}

/// As wait_forever, counting its start first: a child cancelled before it starts never runs.
auto started_then_wait(spindle::receiver<int> rx, std::atomic<int>* started,
                       std::atomic<int>* cancelled) -> spindle::task<void> {
  started->fetch_add(1);
  co_await wait_forever(std::move(rx), cancelled);
}

/// An argument whose destructor takes a while (it yields) before it counts itself ended: a
/// scope that returned from its wait while a child's frame still had to be destroyed shows as a
/// count short of the children.
struct slow_to_destroy {
  explicit slow_to_destroy(std::atomic<int>* ended) noexcept : ended_(ended) {}
  slow_to_destroy(slow_to_destroy&& other) noexcept
      : ended_(std::exchange(other.ended_, nullptr)) {}
  slow_to_destroy(slow_to_destroy const&) = delete;
  auto operator=(slow_to_destroy const&) -> slow_to_destroy& = delete;
  auto operator=(slow_to_destroy&&) -> slow_to_destroy& = delete;
  ~slow_to_destroy() {
    if (ended_ != nullptr) {
      for (int i = 0; i < 200; ++i) {
        std::this_thread::yield();
      }
      ended_->fetch_add(1);
    }
  }

 private:
  std::atomic<int>* ended_;
};

auto holds_slowly(slow_to_destroy arg) -> spindle::task<void> {
  static_cast<void>(arg);
  co_return;
}

TEST(TaskScope, JoinWaitsForEveryChild) {
  spindle::executor ex(2);
  std::atomic<int> sum{0};
  auto body = [](spindle::executor* e, std::atomic<int>* s) -> spindle::task<void> {
    spindle::task_scope scope(*e);
    for (int i = 1; i <= 100; ++i) {
      scope.spawn(add(s, i));
    }
    co_await scope.join();
    EXPECT_EQ(scope.running(), 0U);
  };
  ex.spawn(body(&ex, &sum)).join();
  EXPECT_EQ(sum.load(), 5050);
}

TEST(TaskScope, ThreadWaitAndCallables) {
  spindle::executor ex(2);
  std::atomic<int> n{0};
  spindle::task_scope scope(ex);
  for (int i = 0; i < 50; ++i) {
    scope.spawn([&n] { n.fetch_add(1); });
    scope.spawn([&n](std::stop_token st) { n.fetch_add(st.stop_requested() ? 100 : 1); });
  }
  scope.wait();
  EXPECT_EQ(n.load(), 100);
}

TEST(TaskScope, FirstErrorCancelsTheRestAndIsRethrown) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  std::atomic<int> cancelled{0};
  spindle::task_scope scope(ex);
  for (int i = 0; i < 4; ++i) {
    scope.spawn(wait_forever(rx, &cancelled));
  }
  scope.spawn(fail());
  try {
    scope.wait();
    ADD_FAILURE() << "wait returned";
  } catch (std::runtime_error const& e) {
    EXPECT_STREQ(e.what(), "child failed");
  }
  EXPECT_EQ(cancelled.load(), 4);
  EXPECT_TRUE(scope.cancelled());
}

TEST(TaskScope, WaitAllLetsTheOthersRun) {
  spindle::executor ex(2);
  std::atomic<int> sum{0};
  spindle::task_scope scope(ex, spindle::scope_policy::wait_all);
  scope.spawn(fail());
  for (int i = 0; i < 10; ++i) {
    scope.spawn(add(&sum, 1));
  }
  EXPECT_THROW(scope.wait(), std::runtime_error);
  EXPECT_EQ(sum.load(), 10);
  EXPECT_FALSE(scope.cancelled());
  // The error was reported once.
  scope.wait();
}

TEST(TaskScope, CancelReachesEveryChildAndIsNotAnError) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  std::atomic<int> cancelled{0};
  std::atomic<bool> stopped{false};
  spindle::task_scope scope(ex);
  for (int i = 0; i < 8; ++i) {
    scope.spawn(wait_forever(rx, &cancelled));
  }
  std::atomic<bool> started{false};
  scope.spawn([&stopped, &started](std::stop_token st) {
    started.store(true);
    while (!st.stop_requested()) {
      std::this_thread::yield();
    }
    stopped.store(true);
  });
  // A child that has not started when the scope is cancelled never runs: let this one start.
  while (!started.load()) {
    std::this_thread::yield();
  }
  scope.cancel();
  scope.wait();
  EXPECT_TRUE(stopped.load());
  EXPECT_LE(cancelled.load(), 8);
}

TEST(TaskScope, ChildrenSpawnIntoTheScopeWhileItIsJoined) {
  spindle::executor ex(2);
  std::atomic<int> visited{0};
  struct crawl {
    static auto visit(spindle::task_scope* s, std::atomic<int>* n, int depth)
        -> spindle::task<void> {
      n->fetch_add(1);
      if (depth > 0) {
        s->spawn(visit(s, n, depth - 1));
        s->spawn(visit(s, n, depth - 1));
      }
      co_return;
    }
  };
  spindle::task_scope scope(ex);
  scope.spawn(crawl::visit(&scope, &visited, 8));
  scope.wait();
  EXPECT_EQ(visited.load(), 511);
}

TEST(TaskScope, CancellingTheJoinerCancelsTheChildren) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  std::atomic<int> cancelled{0};
  std::atomic<int> started{0};
  auto body = [](spindle::executor* e, spindle::receiver<int> r, std::atomic<int>* c,
                 std::atomic<int>* s) -> spindle::task<void> {
    spindle::task_scope scope(*e);
    for (int i = 0; i < 3; ++i) {
      scope.spawn(started_then_wait(r, s, c));
    }
    co_await scope.join();
  };
  auto h = ex.spawn(body(&ex, rx, &cancelled, &started));
  // Every child has started (one not started when the scope is cancelled never runs).
  while (started.load() < 3) {
    std::this_thread::yield();
  }
  EXPECT_TRUE(h.cancel());
  EXPECT_THROW(h.join(), spindle::task_cancelled);
  EXPECT_EQ(cancelled.load(), 3);
}

TEST(TaskScope, TheDestructorCancelsAndWaits) {
  std::int64_t const before = tracked::live();
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  std::atomic<int> cancelled{0};
  auto holds = [](tracked t, spindle::receiver<int> r, std::atomic<int>* c) -> spindle::task<void> {
    co_await wait_forever(std::move(r), c);
    static_cast<void>(t);
  };
  {
    spindle::task_scope scope(ex);
    for (int i = 0; i < 5; ++i) {
      scope.spawn(holds(tracked(static_cast<std::uint64_t>(i)), rx, &cancelled));
    }
  }
  EXPECT_EQ(tracked::live(), before);
}

TEST(TaskScope, EveryChildsFrameIsDestroyedBeforeTheWaitReturns) {
  // A child's arguments and locals are part of the child: wait(), join() and the destructor
  // return only once they are destroyed, for children that ran and for children that a
  // cancelled scope never started.
  spindle::executor ex(2);
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> ended{0};
    {
      spindle::task_scope scope(ex);
      for (int i = 0; i < 4; ++i) {
        scope.spawn(holds_slowly(slow_to_destroy(&ended)));
      }
      scope.wait();
      EXPECT_EQ(ended.load(), 4) << "wait() returned before a child's frame was destroyed";
    }
    std::atomic<int> never_ran{0};
    {
      spindle::task_scope scope(ex);
      scope.cancel();
      for (int i = 0; i < 4; ++i) {
        scope.spawn(holds_slowly(slow_to_destroy(&never_ran)));
      }
      scope.wait();
      EXPECT_EQ(never_ran.load(), 4) << "a child that never ran kept its arguments past wait()";
    }
    std::atomic<int> joined{0};
    auto body = [](spindle::executor* e, std::atomic<int>* n) -> spindle::task<int> {
      spindle::task_scope scope(*e);
      for (int i = 0; i < 4; ++i) {
        scope.spawn(holds_slowly(slow_to_destroy(n)));
      }
      co_await scope.join();
      co_return n->load();
    };
    EXPECT_EQ(ex.spawn(body(&ex, &joined)).join(), 4)
        << "join() returned before a child's frame was destroyed";
  }
}

TEST(TaskScope, ACancelledScopeRunsNoNewChild) {
  spindle::executor ex(1);
  std::latch gate(1);
  auto blocker = ex.spawn([&gate] { gate.wait(); });
  std::atomic<int> ran{0};
  spindle::task_scope scope(ex);
  scope.spawn([&ran] { ran.fetch_add(1); });
  scope.cancel();
  gate.count_down();
  blocker.join();
  scope.wait();
  EXPECT_EQ(ran.load(), 0);
}

}  // namespace

// Cancellation and isolation under the model checker.
//
// - join_handle::cancel() racing with the worker that starts the task: the election on the
//   task's start state (task.hpp, shared_result) must let exactly one side own the callable:
//   it runs once or is destroyed unrun once, and join() agrees with cancel()'s answer.
// - task_group::cancel() racing with the group's tasks: every task either ran or was skipped,
//   and wait() reports the round as cancelled.
// - isolate(): a task submitted from outside, or queued on the worker's deque before the
//   region, never runs on the region's thread while the region waits.
// Seeded bugs for both protocols are in tools/mutate/mutants.txt (cancel-start-not-elected,
// isolate-wait-unrestricted); these tests are the ones that kill them.

#include <spindle/executor.hpp>
#include <spindle/isolate.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/task_group.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::explore_three;
using spindle_test::tso;

namespace {

/// Counts its live copies in a model atomic, so that a double destroy or a leak shows.
struct counted {
  model::atomic<int>* live;
  explicit counted(model::atomic<int>* l) : live(l) {
    live->fetch_add(1, std::memory_order_relaxed);
  }
  counted(counted&& o) noexcept : live(o.live) { live->fetch_add(1, std::memory_order_relaxed); }
  counted(counted const&) = delete;
  auto operator=(counted const&) -> counted& = delete;
  auto operator=(counted&&) -> counted& = delete;
  ~counted() { live->fetch_sub(1, std::memory_order_relaxed); }
};

/// Whether the calling thread is inside the region of the isolation test (a model thread is a
/// real thread, so a thread_local tells the threads apart).
thread_local bool inside_region = false;

}  // namespace

// cancel() races with the start: exactly one wins; the callable is destroyed exactly once.
TEST(ModelCancel, JoinHandleCancelRacesStart) {
  explore_three("join_handle: cancel races start", 101, 400, [] {
    model::atomic<int> live{0};
    model::plain<int> ran;
    bool cancelled = false;
    {
      spindle::executor ex(1);
      auto h = ex.spawn([&ran, c = counted(&live)] {
        static_cast<void>(c);
        ran.set(ran.get() + 1);
        return 1;
      });
      cancelled = h.cancel();
      if (cancelled) {
        model::check(live.load(std::memory_order_relaxed) == 0,
                     "cancel() returned before the callable was destroyed");
        bool threw = false;
        try {
          static_cast<void>(h.join());
        } catch (spindle::task_cancelled const&) {
          threw = true;
        }
        model::check(threw, "join() of a cancelled task did not throw task_cancelled");
      } else {
        model::check(h.join() == 1, "join() of a started task lost its result");
        model::check(ran.get() == 1, "a task that was not cancelled did not run once");
      }
    }
    model::check(live.load(std::memory_order_relaxed) == 0, "a callable leaked or died twice");
    model::check(ran.get() <= 1, "a task ran twice");
    model::check(!cancelled || ran.get() == 0, "a task that cancel() said would not run ran");
  });
}

// cancel() from another thread races with two tasks of the group: each ran or was skipped.
TEST(ModelCancel, TaskGroupCancelRacesTasks) {
  explore_three("task_group: cancel races tasks", 111, 300, [] {
    model::atomic<int> ran{0};
    spindle::executor ex(2);
    spindle::task_group g(ex);
    g.spawn([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    g.spawn([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    model::thread canceller([&g] { g.cancel(); });
    canceller.join();
    auto const status = g.wait();
    model::check(status == spindle::task_group_status::cancelled,
                 "wait() after cancel() did not report the round cancelled");
    model::check(
        static_cast<std::uint64_t>(ran.load(std::memory_order_relaxed)) + g.skipped_tasks() == 2,
        "a task neither ran nor was skipped, or both");
  });
}

// An isolated wait runs neither an outside submission nor an older task of its own deque.
TEST(ModelIsolate, OutsideTasksNeverRunInsideTheRegion) {
  explore_three("isolate: outside tasks stay out", 121, 300, [] {
    model::atomic<int> done{0};
    spindle::executor ex(2);
    auto a = ex.spawn([&ex, &done] {
      // Older than the region, on this worker's deque.
      ex.post([&done] {
        model::check(!inside_region, "a task older than the region ran inside its wait");
        done.fetch_add(1, std::memory_order_relaxed);
      });
      spindle::isolate(ex, [&ex, &done] {
        inside_region = true;
        spindle::task_group g(ex);
        g.spawn([&done] { done.fetch_add(1, std::memory_order_relaxed); });
        g.wait();
        inside_region = false;
      });
    });
    ex.post([&done] {
      model::check(!inside_region, "an outside task ran inside the region's wait");
      done.fetch_add(1, std::memory_order_relaxed);
    });
    a.join();
    ex.shutdown();
    model::check(done.load(std::memory_order_relaxed) == 3, "a task was lost");
  });
}

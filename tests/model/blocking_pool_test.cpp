// detail::blocking_pool (the pool behind executor::spawn_blocking) under the model checker: its
// threads are model threads (detail::os_thread) and its lock and parkers are the library's, so
// the scheduler interleaves every step of the protocol in blocking_pool.hpp, and ends a
// thread's keep-alive wait whenever it chooses (virtual time), which puts the expiry at every
// point of a racing submit. Checked in every schedule:
//   - no task is lost: the body waits for each accepted task on a parker of its own, so a task
//     left in the queue with nobody to run it is a deadlock; and at every quiescent point (all
//     threads blocked) the pool owes no wake-up: no task queued while a thread sleeps idle,
//     none queued with no thread counted;
//   - every task runs exactly once, and what it wrote is visible to whoever learns it ran (the
//     race detector on model::plain);
//   - shutdown runs every accepted task and refuses the rest, and a concurrent shutdown returns
//     only after the joins.
// Scenarios: a submit racing the keep-alive expiry of the thread that ran the previous task
// (with one thread allowed, the pool must join the exited thread and start another, or hand
// the task to the thread that was timing out); two submitters; a submit from outside, and one
// from a pool task, racing shutdown; two shutdowns.
//
// Seeded bugs: mutants of the real header in tools/mutate/mutants.txt that these tests kill:
// `blocking-pool-exit-although-woken` (a thread that trusts its timed-out park and exits
// although a submitter already chose it), `blocking-pool-idle-after-unlock` (a thread that
// registers as idle in a second critical section after it saw the queue empty: a submit in
// between finds no idle thread, every thread counted, and queues the task behind a thread that
// is about to sleep) and `blocking-pool-submit-no-wake`.
#include <spindle/detail/executor/blocking_pool.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/parker.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/model/track_allocations.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle::detail::blocking_pool;
using spindle::detail::blocking_pool_options;
using spindle::detail::parker;
using spindle::detail::task;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::tso;

namespace {

/// A task in the body's frame: counts its runs in memory the race detector watches, and
/// unparks `done` (the body's) when given one.
class counted_task final : public task {
 public:
  explicit counted_task(parker* done = nullptr) noexcept : task(&run_it), done_(done) {}

  model::plain<int> runs;

 private:
  static void run_it(task* t) noexcept {
    auto* self = static_cast<counted_task*>(t);
    self->runs.set(self->runs.get() + 1);
    if (self->done_ != nullptr) {
      self->done_->unpark();
    }
  }

  parker* done_;
};

/// A pool task that submits `inner` to its own pool, and records whether it was accepted.
class submitting_task final : public task {
 public:
  submitting_task(blocking_pool& pool, task& inner) noexcept
      : task(&run_it), pool_(&pool), inner_(&inner) {}

  model::plain<int> runs;
  model::plain<int> accepted;

 private:
  static void run_it(task* t) noexcept {
    auto* self = static_cast<submitting_task*>(t);
    self->runs.set(self->runs.get() + 1);
    try {
      self->pool_->submit(self->inner_);
      self->accepted.set(1);
    } catch (std::logic_error const&) {
      // Refused: shutdown closed the queue; the inner task stays ours and never runs.
    }
  }

  blocking_pool* pool_;
  task* inner_;
};

/// Whether idle threads time out. The checker treats a timed wait as able to end (virtual
/// time), so a state with a thread in a timed wait is never quiescent; with keep_alive
/// `forever` (steady_time::max(), which the checker treats as no timeout) an idle thread is
/// quiescent, and the invariant below also covers "queued while a thread sleeps idle".
enum class expiry : std::uint8_t { expires, forever };

auto pool_options(std::size_t max_threads, expiry e) -> blocking_pool_options {
  blocking_pool_options o;
  o.max_threads = max_threads;
  // Any finite wait: the checker, not the clock, decides when it expires.
  o.keep_alive =
      e == expiry::expires ? std::chrono::milliseconds(1) : std::chrono::milliseconds::max();
  return o;
}

/// What the pool must never be in when every thread is blocked: a wake-up it owes.
auto owes_wake_up(std::size_t queued, std::size_t idle, std::size_t threads) -> char const* {
  if (queued != 0 && idle != 0) {
    return "a task waits in the queue while a thread sleeps idle";
  }
  if (queued != 0 && threads == 0) {
    return "a task waits in the queue and no thread is left to run it";
  }
  return nullptr;
}

/// The invariant on the real pool, through its observers (at a quiescent point nobody holds
/// the pool's lock: its threads sleep outside it).
auto pool_invariant(blocking_pool const& pool) -> std::function<char const*()> {
  return [&pool] { return owes_wake_up(pool.queued(), pool.idle_threads(), pool.threads()); };
}

/// Every schedule within one preemption (up to 40 x `executions`; each scenario here exhausts
/// it), with and without x86-TSO store buffers, then PCT (depth 3, also on store buffers) and
/// random schedules, `executions` each; a quarter of every budget under sanitizers.
void explore_all(char const* name, std::uint64_t seed, std::uint64_t executions,
                 std::function<void()> const& body) {
  auto const d = explore_and_report(name, model::exhaustive(1, budget(executions * 40)), body);
  // Under sanitizers the budget is a quarter, and the widest scenario is cut short there.
  EXPECT_TRUE(d.exhausted || spindle_test::model_budget_divisor > 1)
      << name << ": one preemption not exhausted";
  spindle_test::explore_tso_then_weak(name, model::exhaustive(1, budget(executions * 40)), body);
  explore_and_report(name, model::pct_schedules(seed, budget(executions), 3), body);
  spindle_test::explore_tso_then_weak(name, model::pct_schedules(seed + 1, budget(executions), 3),
                                      body);
  explore_and_report(name, model::random_schedules(seed + 2, budget(executions)), body);
}

// ---- scenarios on the real pool ------------------------------------------------------------

/// Task a runs; while its thread goes idle and its keep-alive may expire at any point, task b
/// comes. b must run: handed to the thread that was timing out, or to a new one.
void submit_races_keep_alive(std::size_t max_threads, expiry e) {
  blocking_pool pool(pool_options(max_threads, e));
  model::quiescence_invariant owed(pool_invariant(pool));
  parker done;
  counted_task a(&done);
  counted_task b(&done);
  pool.submit(&a);
  done.park();
  model::check(a.runs.get() == 1, "task a did not run exactly once");
  pool.submit(&b);
  done.park();
  model::check(b.runs.get() == 1, "task b did not run exactly once");
  pool.shutdown();
  model::check(pool.threads() == 0 && pool.idle_threads() == 0 && pool.queued() == 0,
               "threads or tasks left after shutdown");
}

/// Two threads submit at once (and a thread of the first task may be timing out while the
/// second comes): both tasks run once.
void two_submitters(std::size_t max_threads, expiry e) {
  blocking_pool pool(pool_options(max_threads, e));
  model::quiescence_invariant owed(pool_invariant(pool));
  parker done_a;
  parker done_b;
  counted_task a(&done_a);
  counted_task b(&done_b);
  model::thread other([&] { pool.submit(&a); });
  pool.submit(&b);
  other.join();
  done_a.park();
  done_b.park();
  model::check(a.runs.get() == 1 && b.runs.get() == 1, "a task did not run exactly once");
  model::check(pool.threads() <= max_threads, "more threads than max_threads");
  pool.shutdown();
}

/// A submit from outside races shutdown: it is accepted (and runs before shutdown returns) or
/// refused with std::logic_error (and never runs).
void submit_races_shutdown(expiry e) {
  blocking_pool pool(pool_options(1, e));
  counted_task a;
  counted_task b;
  model::plain<int> accepted;
  pool.submit(&a);
  model::thread other([&] {
    try {
      pool.submit(&b);
      accepted.set(1);
    } catch (std::logic_error const&) {
      // refused: b stays ours
    }
  });
  pool.shutdown();
  model::check(a.runs.get() == 1, "an accepted task did not run before shutdown returned");
  other.join();
  model::check(b.runs.get() == accepted.get(), "b ran although refused, or not although accepted");
  model::check(pool.threads() == 0 && pool.queued() == 0, "threads or tasks left after shutdown");
}

/// A pool task submits to its own pool while shutdown runs: accepted (runs before shutdown
/// returns) or refused.
void task_submits_during_shutdown(expiry e) {
  blocking_pool pool(pool_options(1, e));
  counted_task inner;
  submitting_task outer(pool, inner);
  pool.submit(&outer);
  pool.shutdown();
  model::check(outer.runs.get() == 1, "the outer task did not run exactly once");
  model::check(inner.runs.get() == outer.accepted.get(),
               "the inner task ran although refused, or not although accepted");
}

/// Two shutdowns at once: each returns only after the task ran and the threads were joined.
void two_shutdowns(expiry e) {
  blocking_pool pool(pool_options(2, e));
  counted_task a;
  pool.submit(&a);
  model::thread other([&] {
    pool.shutdown();
    model::check(a.runs.get() == 1, "a concurrent shutdown returned before the task ran");
  });
  pool.shutdown();
  model::check(a.runs.get() == 1, "shutdown returned before the task ran");
  other.join();
  model::check(pool.threads() == 0, "a thread left after shutdown");
}

}  // namespace

TEST(ModelBlockingPool, SubmitRacesKeepAliveExpiry) {
  // One thread allowed: the exited thread is joined and another started, or the task goes to
  // the thread whose keep-alive was running out. Two allowed: a second thread may start.
  explore_all("blocking pool: submit vs keep-alive, 1 thread", 11, 300,
              [] { submit_races_keep_alive(1, expiry::expires); });
  explore_all("blocking pool: submit vs keep-alive, 2 threads", 21, 300,
              [] { submit_races_keep_alive(2, expiry::expires); });
  // The race itself, deeper: every schedule within two preemptions.
  auto const d = explore_and_report("blocking pool: submit vs keep-alive, 1 thread, dfs bound 2",
                                    model::exhaustive(2, budget(20000)),
                                    [] { submit_races_keep_alive(1, expiry::expires); });
  EXPECT_TRUE(d.exhausted || spindle_test::model_budget_divisor > 1);
}

TEST(ModelBlockingPool, SubmitToAnIdleThread) {
  // No expiry: the second task must reach the idle thread (a lost hand-off leaves it queued
  // while the thread sleeps, which the invariant reports).
  explore_all("blocking pool: submit to an idle thread", 13, 300,
              [] { submit_races_keep_alive(1, expiry::forever); });
}

TEST(ModelBlockingPool, TwoSubmitters) {
  // Both tasks run once, whether they share one thread (one queues) or start two.
  for (expiry const e : {expiry::expires, expiry::forever}) {
    explore_all("blocking pool: two submitters, 1 thread", 31, 300, [e] { two_submitters(1, e); });
    explore_all("blocking pool: two submitters, 2 threads", 41, 300, [e] { two_submitters(2, e); });
  }
}

TEST(ModelBlockingPool, SubmitRacesShutdown) {
  // Accepted and run before shutdown returns, or refused and never run. Without expiry,
  // shutdown must wake the idle thread or its join never returns.
  for (expiry const e : {expiry::expires, expiry::forever}) {
    explore_all("blocking pool: submit vs shutdown", 51, 300, [e] { submit_races_shutdown(e); });
  }
}

TEST(ModelBlockingPool, TaskSubmitsDuringShutdown) {
  // A pool task's submit while shutdown runs: accepted and run, or refused.
  for (expiry const e : {expiry::expires, expiry::forever}) {
    explore_all("blocking pool: task submits during shutdown", 61, 300,
                [e] { task_submits_during_shutdown(e); });
  }
}

TEST(ModelBlockingPool, TwoShutdowns) {
  // The second caller waits for the first one's joins.
  for (expiry const e : {expiry::expires, expiry::forever}) {
    explore_all("blocking pool: two shutdowns", 71, 300, [e] { two_shutdowns(e); });
  }
}

// The parking protocol of detail/executor/idle_set.hpp on its own: two workers made of the real
// idle_set, injector and deques, running scheduler.hpp's find/park loop cut down to its
// protocol steps (no backoff, no fairness tick, no guests, no shutdown protocol). The executor
// itself runs under the checker in tests/model/executor_test.cpp, but its spin and search loops
// make the tree too wide for exhaustive search; here every schedule within one preemption is run.
//
// The scenario: two tasks posted from outside, T1 blocking its worker (on a
// parker, not through the executor) until T2 has run. A worker that is not searching moves
// both from the injector in one batch; while T2 is in transit to its deque the other worker
// re-checks every queue, finds nothing and parks. With the batch announced ((M1) in
// detail/executor/idle_set.hpp) every schedule passes; without it (the earlier protocol, kept here
// as the seeded bug) the checker reports the deadlock.
#include <spindle/deque.hpp>
#include <spindle/detail/executor/idle_set.hpp>
#include <spindle/detail/executor/injector.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/parker.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/model/track_allocations.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "model/support.hpp"

namespace model = spindle::model;
using spindle::detail::parker;
using spindle::detail::task;
using spindle_test::budget;
using spindle_test::print_stats;

namespace {

/// Whether a worker that moved a batch it does not run at once announces it ((M1)).
enum class mover : std::uint8_t { silent, announces };

auto tso(model::options o) -> model::options {
  o.store_buffering = true;
  return o;
}

auto quiet(model::options o) -> model::options {
  o.quiet = true;
  o.use_environment = false;
  return o;
}

/// Two workers and an injector, following scheduler.hpp step for step where the protocol
/// is concerned: submit_outside(), from_injector() with announce_moved(), find_task(),
/// found_work() and park(). Tasks are not run through their function pointer: `run` hands
/// them to the scenario.
template <mover Mover, class Run>
class two_workers {
 public:
  explicit two_workers(Run run) : run_(run) {}

  void submit_outside(task* t) {
    static_cast<void>(injector_.push(t));
    // (N1), as in scheduler.hpp.
    spindle::detail::fence_seq_cst();
    if (idle_.should_wake()) {
      idle_.wake_one();
    }
  }

  /// Worker `i`'s top-level loop, until stop().
  void work(std::size_t i) {
    for (;;) {
      if (task* t = find_task(i)) {
        found_work(i);
        run_(t);
        continue;
      }
      if (park(i)) {
        return;
      }
    }
  }

  /// Makes every worker leave work() once the queues are empty.
  void stop() {
    // seq_cst: read by park() after its (P1) fence; wake_all() below reaches whoever
    // registered before, and whoever registers after sees this store.
    stopping_.store(true, std::memory_order_seq_cst);
    idle_.wake_all();
  }

 private:
  static constexpr std::size_t workers = 2;

  auto from_injector(std::size_t i) -> task* {
    bool moved = false;
    task* const first = injector_.pop_batch(workers, 32, [this, i, &moved](task* t) noexcept {
      deques_[i].push(t);
      moved = true;
    });
    if (moved && Mover == mover::announces && !searching_[i]) {
      // (M1) for a worker that is not searching: (N1) on its own deque.
      spindle::detail::fence_seq_cst();
      if (idle_.should_wake()) {
        idle_.wake_one();
      }
    }
    return first;
  }

  auto find_task(std::size_t i) -> task* {
    if (auto t = deques_[i].pop()) {
      return *t;
    }
    if (task* t = from_injector(i)) {
      return t;
    }
    if (!searching_[i]) {
      searching_[i] = force_search_[i] ? idle_.force_begin_search() : idle_.try_begin_search();
      force_search_[i] = false;
      if (!searching_[i]) {
        return nullptr;
      }
    }
    auto r = stealers_[1 - i].steal_batch_and_pop(deques_[i]);
    return r ? *r.value : nullptr;
  }

  void found_work(std::size_t i) {
    if (searching_[i]) {
      searching_[i] = false;
      if (idle_.end_search() && idle_.should_wake()) {
        idle_.wake_one();
      }
    }
  }

  /// Returns true when the worker must leave.
  auto park(std::size_t i) -> bool {
    idle_.prepare_park(i, searching_[i]);
    searching_[i] = false;
    // (P1) fence, as in scheduler.hpp.
    spindle::detail::fence_seq_cst();
    bool const work = !injector_.looks_empty() || !stealers_[0].empty() || !stealers_[1].empty();
    // seq_cst: see stop().
    bool const stopping = stopping_.load(std::memory_order_seq_cst);
    if (work || stopping) {
      force_search_[i] = work;
      searching_[i] = idle_.cancel_park(i);
      return !work;
    }
    idle_.park(i);
    searching_[i] = idle_.cancel_park(i);
    return false;
  }

  Run run_;
  spindle::detail::idle_set idle_{workers};
  spindle::detail::basic_injector<4> injector_;
  spindle::deque_owner<task*> deques_[workers];
  spindle::stealer<task*> stealers_[workers] = {deques_[0].stealer(), deques_[1].stealer()};
  bool searching_[workers] = {false, false};
  bool force_search_[workers] = {false, false};
  spindle::detail::atomic<bool> stopping_{false};
};

void no_op(task* /*t*/) noexcept {}

/// Issue 19's scenario on two_workers<Mover>: T1 waits on a parker until T2 has run; the
/// body waits for T1 on a parker of its own, so a lost announcement is a deadlock.
template <mover Mover>
void first_waits_for_second() {
  task t1(no_op);
  task t2(no_op);
  model::plain<int> second_ran;
  parker second_done;
  parker first_done;
  auto run = [&](task* t) {
    if (t == &t1) {
      second_done.park();
      // The race detector checks that T2's write happens-before T1 reads it.
      model::check(second_ran.get() == 1, "T1 went on before T2 ran");
      first_done.unpark();
    } else {
      second_ran.set(second_ran.get() + 1);
      second_done.unpark();
    }
  };
  two_workers<Mover, decltype(run)> pool(run);
  model::thread w0([&pool] { pool.work(0); });
  model::thread w1([&pool] { pool.work(1); });
  pool.submit_outside(&t1);
  pool.submit_outside(&t2);
  first_done.park();
  pool.stop();
  w0.join();
  w1.join();
  model::check(second_ran.get() == 1, "T2 did not run exactly once");
}

}  // namespace

TEST(ModelIdle, Example) {
  // Every schedule within one preemption, with sequentially consistent memory and with x86-TSO
  // store buffers: the announced batch is never left behind a sleeping worker. (Two
  // preemptions also pass: 122,829 and 153,038 schedules, too long for every test run.)
  auto const r =
      model::explore(model::exhaustive(1, budget(50000)), first_waits_for_second<mover::announces>);
  EXPECT_TRUE(r) << r.message;
  print_stats("T1 waits for T2, dfs bound 1", r);
  auto const t = model::explore(tso(model::exhaustive(1, budget(50000))),
                                first_waits_for_second<mover::announces>);
  EXPECT_TRUE(t) << t.message;
  print_stats("T1 waits for T2, dfs bound 1, TSO", t);
}

TEST(ModelIdle, BatchInTransitRandomAndPct) {
  auto const r = model::explore(model::random_schedules(7, budget(1000)),
                                first_waits_for_second<mover::announces>);
  EXPECT_TRUE(r) << r.message;
  print_stats("T1 waits for T2, random", r);
  auto const p = model::explore(model::pct_schedules(8, budget(1000), 3),
                                first_waits_for_second<mover::announces>);
  EXPECT_TRUE(p) << p.message;
  print_stats("T1 waits for T2, pct", p);
}

TEST(ModelIdle, SilentBatchMoverIsCaught) {
  // The seeded bug: the earlier protocol, whose batch mover announced nothing.
  // Exhaustive search at one preemption (the mover is preempted between the injector and its
  // deque) and PCT both report the deadlock.
  auto const d = model::explore(quiet(model::exhaustive(1, budget(50000))),
                                first_waits_for_second<mover::silent>);
  EXPECT_EQ(d.failure, model::failure_kind::deadlock) << "dfs missed the unannounced batch";
  std::printf(
      "[model] seeded bug 'silent batch mover' caught by dfs as %s after %llu "
      "executions; replay %s\n",
      model::to_string(d.failure), static_cast<unsigned long long>(d.executions),
      d.schedule.c_str());
  auto const p = model::explore(quiet(model::pct_schedules(9, budget(2000), 3)),
                                first_waits_for_second<mover::silent>);
  EXPECT_EQ(p.failure, model::failure_kind::deadlock) << "pct missed the unannounced batch";
  std::printf(
      "[model] seeded bug 'silent batch mover' caught by pct as %s after %llu "
      "executions\n",
      model::to_string(p.failure), static_cast<unsigned long long>(p.executions));
}

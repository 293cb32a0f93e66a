// Liveness under the model checker: the no-lost-wake-up properties of the executor's idle
// protocol (detail/executor/idle_set.hpp) and of the channels, checked as invariants at every
// quiescent point (model::quiescence_invariant: no thread can run until somebody wakes one),
// not argued; and work that must spread to every worker.
//
// - The executor's invariant (scheduler::lost_wake_up()): no task waits in a queue while a
//   worker sleeps and nobody searches.
// - A channel's invariant (array_channel::lost_wake_up() and the other flavours): no receiver
//   waits while a value is buffered or the channel is closed, no sender waits while a slot is
//   free, no sender and receiver of a rendezvous wait unpaired.
// - Spreading: N tasks that can only finish together (each waits until all N have started)
//   finish only if posting them woke every sleeping worker. A scheduler that never ramps up
//   (the "last searcher" does not wake the next sleeper) runs one of them and leaves the others
//   queued while the rest sleep: the invariant names it at the first quiescent point.
#include <spindle/channel.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/parker.hpp>
#include <spindle/executor.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/model/track_allocations.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle::detail::parker;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::quiet;
using spindle_test::tso;

namespace {

/// `workers` tasks posted from outside while every worker may be asleep; each waits (on a
/// parker of its own, not through the executor) until all have started, so all must run at
/// once. The tasks block rather than spin: a spinning task would let an unfair schedule (PCT)
/// starve the worker that should take the next task, which is not the executor's doing.
void tasks_that_finish_together(std::size_t workers) {
  spindle::executor ex(workers);
  model::quiescence_invariant idle_invariant(
      [&ex] { return spindle::detail::core_of(ex).lost_wake_up(); });
  spindle::detail::atomic<std::size_t> started{0};
  spindle::detail::atomic<std::size_t> finished{0};
  std::vector<parker> gates(workers);
  parker body;
  for (std::size_t i = 0; i < workers; ++i) {
    ex.post([&, i] {
      // seq_cst: a barrier of the test's own; the parkers publish the count to the waiters.
      if (started.fetch_add(1, std::memory_order_seq_cst) + 1 == workers) {
        for (std::size_t j = 0; j < workers; ++j) {
          if (j != i) {
            gates[j].unpark();
          }
        }
      } else {
        gates[i].park();
      }
      if (finished.fetch_add(1, std::memory_order_seq_cst) + 1 == workers) {
        body.unpark();
      }
    });
  }
  // Not a join: an outside join helps run tasks as a guest, which would hide a worker that
  // was never woken.
  body.park();
}

/// Two receivers block on an empty channel; one sender sends two values and drops its handle.
void two_receivers_one_sender(std::pair<spindle::sender<int>, spindle::receiver<int>> ch) {
  auto& state = spindle::detail::channel_access::state_of(ch.second);
  model::quiescence_invariant channel_invariant([&state] { return state.lost_wake_up(); });
  std::vector<int> a;
  std::vector<int> b;
  {
    auto rx = std::move(ch.second);
    model::thread r1([&a, rx]() mutable {
      while (auto v = rx.recv()) {
        a.push_back(*v);
      }
    });
    model::thread r2([&b, rx]() mutable {
      while (auto v = rx.recv()) {
        b.push_back(*v);
      }
    });
    {
      auto tx = std::move(ch.first);
      model::check(tx.send(0).status == spindle::send_status::sent, "send on an open channel");
      model::check(tx.send(1).status == spindle::send_status::sent, "send on an open channel");
    }
    r1.join();
    r2.join();
  }
  spindle_test::expect_each_once({a, b}, 2);
}

/// Two senders block on a full bounded(1) channel; one receiver takes all three values.
void two_senders_one_receiver() {
  auto ch = spindle::bounded<int>(1);
  spindle::sender<int>& tx = ch.first;
  spindle::receiver<int>& rx = ch.second;
  auto& state = spindle::detail::channel_access::state_of(rx);
  model::quiescence_invariant channel_invariant([&state] { return state.lost_wake_up(); });
  model::check(tx.try_send(0).status == spindle::send_status::sent, "the slot is free");
  std::vector<int> got;
  {
    model::thread s1([tx]() mutable { static_cast<void>(tx.send(1)); });
    model::thread s2([tx]() mutable { static_cast<void>(tx.send(2)); });
    for (int i = 0; i < 3; ++i) {
      auto v = rx.recv();
      model::check(v.has_value(), "three values were sent");
      got.push_back(*v);
    }
    s1.join();
    s2.join();
  }
  spindle_test::expect_each_once({got}, 3);
}

}  // namespace

TEST(ModelLiveness, Example) {
  // Two workers, two tasks that finish only together: every schedule within one preemption
  // wakes the second worker.
  auto const r =
      model::explore(model::exhaustive(1, budget(3000)), [] { tasks_that_finish_together(2); });
  EXPECT_TRUE(r) << r.message;
  spindle_test::print_stats("two tasks that finish together, dfs bound 1", r);
}

TEST(ModelLiveness, WorkSpreadsToEveryWorker) {
  // Posted tasks reach every sleeping worker: with 2 and 3 workers, random, PCT and TSO.
  // Three workers is where a searcher that finds another task while parking matters (see
  // "Searchers that find work while parking" in detail/executor/idle_set.hpp): PCT found it
  // in about one execution in 200, hence the larger budget.
  for (std::size_t workers : {std::size_t{2}, std::size_t{3}}) {
    std::uint64_t const n = workers == 2 ? 300 : 1200;
    auto body = [workers] { tasks_that_finish_together(workers); };
    std::string const name = std::to_string(workers) + " tasks finish together";
    explore_and_report((name + ", random").c_str(), model::random_schedules(31, budget(n)), body);
    explore_and_report((name + ", pct d=3").c_str(), model::pct_schedules(32, budget(n), 3), body);
    spindle_test::explore_tso_then_weak((name + ", pct + store buffers").c_str(),
                                        model::pct_schedules(33, budget(n), 3), body);
  }
}

TEST(ModelLiveness, ChannelsOweNoWakeUpAtQuiescence) {
  // Every flavour: no receiver (or sender) waits for a wake the channel's state owes it.
  auto bounded = [] { two_receivers_one_sender(spindle::bounded<int>(1)); };
  auto unbounded = [] { two_receivers_one_sender(spindle::unbounded<int>()); };
  auto rendezvous = [] { two_receivers_one_sender(spindle::bounded<int>(0)); };
  explore_and_report("bounded(1): two receivers, one sender, pct",
                     model::pct_schedules(41, budget(500), 3), bounded);
  explore_and_report("unbounded: two receivers, one sender, pct",
                     model::pct_schedules(42, budget(500), 3), unbounded);
  explore_and_report("rendezvous: two receivers, one sender, pct",
                     model::pct_schedules(43, budget(500), 3), rendezvous);
  explore_and_report("bounded(1): two blocked senders, one receiver, pct",
                     model::pct_schedules(44, budget(500), 3), two_senders_one_receiver);
  spindle_test::explore_tso_then_weak(
      "bounded(1): two blocked senders, one receiver, random + store buffers",
      model::random_schedules(45, budget(500)), two_senders_one_receiver);
}

TEST(ModelLiveness, SeededLostWakeUpIsNamedAtQuiescence) {
  // A toy queue whose notifier publishes an item but forgets to wake the sleeper: the checker
  // stops at the first quiescent point with the invariant's own words, not a bare deadlock.
  auto body = [] {
    spindle::detail::atomic<int> queued{0};
    spindle::detail::atomic<bool> sleeping{false};
    parker sleeper;
    model::quiescence_invariant invariant([&] {
      return queued.load() > 0 && sleeping.load() ? "an item is queued while its consumer sleeps"
                                                  : nullptr;
    });
    model::thread consumer([&] {
      sleeping.store(true);
      if (queued.load() == 0) {
        sleeper.park();
      }
      sleeping.store(false);
    });
    queued.store(1);  // the seeded bug: no sleeper.unpark()
    consumer.join();
  };
  auto const r = model::explore(quiet(model::exhaustive(2, 1000)), body);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.failure, model::failure_kind::assertion);
  EXPECT_NE(r.message.find("an item is queued while its consumer sleeps"), std::string::npos)
      << r.message;
}

// The bounded injector's sleep/wake protocol under the model checker ((R1)/(R2) in
// detail/executor/scheduler.hpp): an outside submitter that finds the injector full counts
// itself as a waiter and re-checks; a worker that takes tasks gives their places back and then
// looks for waiters. A lost wake-up leaves the submitter asleep for ever, which the checker
// reports as a deadlock. Also: shutdown releases a blocked submitter with an error, and every
// accepted task runs exactly once. The seeded bug `room-waiter-no-recheck` in
// tools/mutate/mutants.txt is killed here.

#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/model/atomic.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <stdexcept>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::explore_three;
using spindle_test::tso;

// Two outside submitters against a bound of 1 and one worker: both get in, both tasks run.
TEST(ModelBackpressure, SubmittersWaitForRoom) {
  explore_three("bounded injector: two submitters, bound 1", 201, 300, [] {
    model::atomic<int> ran{0};
    spindle::executor ex(spindle::executor_options().workers(1).injector_capacity(1));
    model::thread other([&] { ex.post([&ran] { ran.fetch_add(1, std::memory_order_relaxed); }); });
    ex.post([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    other.join();
    ex.shutdown();
    model::check(ran.load(std::memory_order_relaxed) == 2, "an accepted task did not run once");
  });
}

// try_post never blocks and never loses: accepted tasks run, refused ones are not queued.
TEST(ModelBackpressure, TryPostRacesTheWorker) {
  explore_three("bounded injector: try_post races the worker", 211, 300, [] {
    model::atomic<int> ran{0};
    int accepted = 0;
    {
      spindle::executor ex(spindle::executor_options().workers(1).injector_capacity(1));
      for (int i = 0; i < 3; ++i) {
        if (ex.try_post([&ran] { ran.fetch_add(1, std::memory_order_relaxed); }).status ==
            spindle::submit_status::accepted) {
          ++accepted;
        }
      }
    }
    model::check(accepted >= 1, "the first try_post on an empty injector was refused");
    model::check(ran.load(std::memory_order_relaxed) == accepted,
                 "an accepted task did not run, or a refused one did");
  });
}

// Shutdown while a submitter sleeps on a full injector: it wakes and throws, or got in.
TEST(ModelBackpressure, ShutdownReleasesASleepingSubmitter) {
  explore_three("bounded injector: shutdown vs blocked submitter", 221, 300, [] {
    model::atomic<int> ran{0};
    model::atomic<int> threw{0};
    spindle::executor ex(spindle::executor_options().workers(1).injector_capacity(1));
    ex.post([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    model::thread submitter([&] {
      try {
        ex.post([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      } catch (std::logic_error const&) {
        threw.fetch_add(1, std::memory_order_relaxed);
      }
    });
    ex.shutdown();
    submitter.join();
    model::check(ran.load(std::memory_order_relaxed) + threw.load(std::memory_order_relaxed) == 2,
                 "a submitter neither got in nor was told");
  });
}

// Two outside submitters race for the last place of a bound of 1 (executor_options::
// injector_capacity) while nothing gives a place back: at most one of them takes it. A place is
// taken by one CAS on the count of queued tasks (scheduler::try_take_room()); a check and a
// separate add would let both read "one free" and both take it, and the injector would then
// hold more tasks than its capacity.
TEST(ModelBackpressure, RacingSubmittersNeverTakeMoreThanTheCapacity) {
  explore_three("bounded injector: two submitters race for the last place", 231, 300, [] {
    spindle::executor ex(spindle::executor_options().workers(1).injector_capacity(1));
    auto& core = spindle::detail::core_of(ex);
    model::atomic<int> taken{0};
    auto const take = [&] {
      if (core.try_take_room()) {
        // relaxed: read after the join below.
        taken.fetch_add(1, std::memory_order_relaxed);
      }
    };
    model::thread other(take);
    take();
    other.join();
    model::check(taken.load(std::memory_order_relaxed) == 1,
                 "two submitters took the last place of the injector, or neither did");
    core.cancel_room();
  });
}

// The same through try_post, with the only worker held by a gate task, so that nothing leaves
// the injector while two submitters race: the injector never holds more tasks than its
// capacity (executor::metrics().injector_depth), at most one submitter is accepted, and every
// accepted task runs once after the gate opens.
TEST(ModelBackpressure, InjectorNeverHoldsMoreThanItsCapacity) {
  explore_three("bounded injector: try_post races try_post, worker held", 241, 300, [] {
    model::atomic<int> ran{0};
    model::atomic<int> accepted{0};
    auto [gate_tx, gate_rx] = spindle::bounded<int>(1);
    auto [started_tx, started_rx] = spindle::bounded<int>(1);
    {
      spindle::executor ex(spindle::executor_options().workers(1).injector_capacity(1));
      ex.post([rx = gate_rx, tx = started_tx]() mutable {
        model::check(tx.send(1).is_sent(), "started: send failed");
        static_cast<void>(rx.recv());
      });
      // The worker runs the gate task: the injector is empty, and stays so but for the racers.
      model::check(started_rx.recv().has_value(), "the gate task did not start");
      auto const submit = [&] {
        if (ex.try_post([&ran] { ran.fetch_add(1, std::memory_order_relaxed); }).status ==
            spindle::submit_status::accepted) {
          // relaxed: read after the join below.
          accepted.fetch_add(1, std::memory_order_relaxed);
        }
      };
      model::thread other(submit);
      submit();
      other.join();
      model::check(ex.metrics().injector_depth <= 1,
                   "the injector holds more tasks than its capacity");
      model::check(accepted.load(std::memory_order_relaxed) == 1,
                   "two try_posts were accepted into one place, or neither was");
      model::check(gate_tx.send(0).is_sent(), "gate: send failed");
    }
    model::check(ran.load(std::memory_order_relaxed) == accepted.load(std::memory_order_relaxed),
                 "an accepted task did not run once");
  });
}

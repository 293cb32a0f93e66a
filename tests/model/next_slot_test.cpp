// A worker's next slot and its watch (detail/executor/next_slot.hpp) under the model checker:
//   - (S1) exactly once: a task put in the slot is run by the owner (take) or by the watch
//     (claim), never by both and never by neither, also when the same task comes back to the
//     slot (a coroutine's resumption node is reused);
//   - (S2) no unwatched slot: when the watch rests, a task put meanwhile has made its owner wake
//     the watch, or the watch saw the task in its last look.
// Both are Dekker pairs of a light fence (a compiler barrier) with a heavy fence (membarrier);
// with x86-TSO store buffers a missing heavy fence shows as a task run twice or an unwatched
// slot. The executor runs no watch under the model checker (next_slot.hpp says why), so these
// are the tests of the protocol; tests/executor_next_slot_test.cpp tests the executor's use.
// Seeded bugs: tools/mutate/mutants.txt, `next-slot-*`.
#include <spindle/detail/executor/next_slot.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/model/atomic.hpp>

#include <gtest/gtest.h>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle::detail::next_slot;
using spindle::detail::next_slot_arming;
using spindle::detail::task;
using spindle_test::explore_and_report;
using spindle_test::explore_three;

namespace {

void no_run(task* /*t*/) noexcept {}

/// Who ran what: the owner's and the watch's counts of each task, as plain (race-checked)
/// memory, so that a run by both shows even when the counts add up.
struct runs {
  model::plain<int> owner_a;
  model::plain<int> owner_b;
  model::plain<int> watch_a;
  model::plain<int> watch_b;
};

/// The owner puts `a`, takes, puts `b`, takes; the watch claims what it sees, twice. Every task
/// runs exactly once.
void two_tasks_each_once() {
  task a(&no_run);
  task b(&no_run);
  next_slot slot;
  runs r;
  model::thread watch([&] {
    for (int look = 0; look < 2; ++look) {
      task* const t = slot.peek();
      if (t != nullptr && slot.claim(t)) {
        (t == &a ? r.watch_a : r.watch_b).set((t == &a ? r.watch_a : r.watch_b).get() + 1);
      }
    }
  });
  slot.put(&a);
  if (task* const t = slot.take()) {
    model::check(t == &a, "take returns the task that was put");
    r.owner_a.set(r.owner_a.get() + 1);
  }
  slot.put(&b);
  if (task* const t = slot.take()) {
    model::check(t == &b, "take returns the task that was put");
    r.owner_b.set(r.owner_b.get() + 1);
  }
  watch.join();
  model::check(r.owner_a.get() + r.watch_a.get() == 1, "the first task ran exactly once");
  model::check(r.owner_b.get() + r.watch_b.get() == 1, "the second task ran exactly once");
  model::check(!slot.occupied(), "every take leaves the slot empty");
}

/// The same task put twice (a resumption node reused): two resumptions, two runs, whoever runs
/// them; the owner's put of the second one comes after its take of the first.
void one_node_twice() {
  task a(&no_run);
  next_slot slot;
  model::plain<int> owner;
  model::plain<int> watched;
  model::thread watch([&] {
    for (int look = 0; look < 2; ++look) {
      task* const t = slot.peek();
      if (t != nullptr && slot.claim(t)) {
        watched.set(watched.get() + 1);
      }
    }
  });
  for (int round = 0; round < 2; ++round) {
    slot.put(&a);
    if (slot.take() != nullptr) {
      owner.set(owner.get() + 1);
    }
  }
  watch.join();
  model::check(owner.get() + watched.get() == 2, "each resumption ran exactly once");
}

/// (S2): the owner puts a task and arms the watch if it rests; the watch tries to rest. Either
/// the watch stays armed, or the owner woke it.
void put_races_rest() {
  task a(&no_run);
  next_slot slot;
  next_slot_arming arming;
  model::plain<int> woken;
  model::thread owner([&] {
    slot.put(&a);
    if (arming.after_put()) {
      woken.set(1);
    }
  });
  bool const rested = arming.try_rest([&] { return slot.peek() != nullptr; });
  owner.join();
  model::check(!rested || woken.get() == 1,
               "the watch rests while a slot holds a task and nobody woke it");
  model::check(rested || arming.armed(), "a watch that does not rest stays armed");
}

}  // namespace

TEST(ModelNextSlot, TwoTasksEachOnce) {
  explore_three("next slot: put/take against claims", 701, 3000, two_tasks_each_once);
  explore_and_report("next slot: put/take against claims, dfs bound 2 + store buffers",
                     spindle_test::tso(model::exhaustive(2, spindle_test::budget(50000))),
                     two_tasks_each_once);
}

TEST(ModelNextSlot, OneNodeTwice) {
  explore_three("next slot: one node put twice against claims", 711, 3000, one_node_twice);
  explore_and_report("next slot: one node twice, dfs bound 2 + store buffers",
                     spindle_test::tso(model::exhaustive(2, spindle_test::budget(50000))),
                     one_node_twice);
}

TEST(ModelNextSlot, PutRacesRest) {
  explore_three("next slot: put and arm against rest", 721, 2000, put_races_rest);
  explore_and_report("next slot: put against rest, dfs bound 3 + store buffers",
                     spindle_test::tso(model::exhaustive(3, spindle_test::budget(50000))),
                     put_races_rest);
}

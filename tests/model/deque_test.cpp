// spindle::worker / spindle::stealer under the model checker: push, pop and steal around the
// last item, around growth from capacity 1, with two thieves, steal_batch_and_pop and
// steal_batch into a span. Every
// item is taken exactly once, and whatever the owner wrote before push is visible to the taker
// (the race detector checks the payloads).
#include <spindle/deque.hpp>
#include <spindle/model/track_allocations.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <optional>
#include <vector>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::expect_each_once;
using spindle_test::explore_and_report;
using ledger = spindle_test::payload_ledger;

namespace {

/// The owner writes a payload before it pushes its index; the taker checks it (ledger::take).
void produce(spindle::deque_owner<int>& w, ledger& l, int index) {
  w.push(l.make(index));
}

/// Pushes items 0 .. n-1.
void produce_n(spindle::deque_owner<int>& w, ledger& l, int n) {
  for (int i = 0; i < n; ++i) {
    produce(w, l, i);
  }
}

void steal_into(spindle::stealer<int>& s, ledger& l, std::vector<int>& into, int attempts) {
  for (int i = 0; i < attempts; ++i) {
    auto r = s.steal();
    if (r.is_stolen()) {
      l.take(into, *r.value);
    }
  }
}

void pop_all(spindle::deque_owner<int>& w, ledger& l, std::vector<int>& into) {
  while (auto v = w.pop()) {
    l.take(into, *v);
  }
}

/// A deque holding items 0-3, a stealer of it, and what a thief and the owner took from it.
struct four_items {
  explicit four_items(spindle::deque_order order, std::size_t capacity = 64) : w(order, capacity) {
    produce_n(w, l, 4);
  }

  spindle::deque_owner<int> w;
  ledger l;
  spindle::stealer<int> s = w.stealer();
  std::vector<int> thief_took;
  std::vector<int> popped;
};

/// The owner pushes `items` items, then pops until empty while a thief tries `items` steals:
/// each item is taken exactly once, by one of them.
void owner_pops_while_thief_steals(spindle::deque_order order, int items) {
  spindle::deque_owner<int> w(order);
  ledger l;
  auto s = w.stealer();
  produce_n(w, l, items);
  std::vector<int> stolen;
  std::vector<int> popped;
  model::thread thief([&] { steal_into(s, l, stolen, items); });
  pop_all(w, l, popped);
  thief.join();
  expect_each_once({stolen, popped}, items);
}

}  // namespace

TEST(ModelDeque, Example) {
  // The owner and a thief race for the last item: exactly one of them gets it, in every
  // schedule with up to three preemptions.
  auto const r = model::explore(model::exhaustive(3, budget(200000)), [] {
    owner_pops_while_thief_steals(spindle::deque_order::lifo, 1);
  });
  EXPECT_TRUE(r) << r.message;
  spindle_test::print_stats("deque last item (lifo), dfs bound 3", r);
}

TEST(ModelDeque, FifoLastItem) {
  explore_and_report("deque two items (fifo), dfs bound 3", model::exhaustive(3, budget(200000)),
                     [] { owner_pops_while_thief_steals(spindle::deque_order::fifo, 2); });
}

TEST(ModelDeque, GrowthWhileStealing) {
  // Capacity 1: the second and third push grow the buffer while a thief reads it.
  auto body = [] {
    spindle::deque_owner<int> w(spindle::deque_order::lifo, 1);
    ledger l;
    auto s = w.stealer();
    std::vector<int> stolen;
    std::vector<int> popped;
    model::thread thief([&] { steal_into(s, l, stolen, 2); });
    produce(w, l, 0);
    produce(w, l, 1);
    produce(w, l, 2);
    if (auto v = w.pop()) {
      l.take(popped, *v);
    }
    produce(w, l, 3);
    thief.join();
    pop_all(w, l, popped);
    expect_each_once({stolen, popped}, 4);
  };
  explore_and_report("deque growth from capacity 1, dfs bound 2",
                     model::exhaustive(2, budget(40000)), body);
  explore_and_report("deque growth from capacity 1, pct d=3",
                     model::pct_schedules(7, budget(1000), 3), body);
}

TEST(ModelDeque, TwoThievesAndTheOwner) {
  auto body = [] {
    spindle::deque_owner<int> w(spindle::deque_order::lifo, 2);
    ledger l;
    auto s1 = w.stealer();
    auto s2 = w.stealer();
    produce(w, l, 0);
    produce(w, l, 1);
    produce(w, l, 2);
    std::vector<int> a;
    std::vector<int> b;
    std::vector<int> popped;
    model::thread t1([&] { steal_into(s1, l, a, 2); });
    model::thread t2([&] { steal_into(s2, l, b, 2); });
    if (auto v = w.pop()) {
      l.take(popped, *v);
    }
    t1.join();
    t2.join();
    pop_all(w, l, popped);
    expect_each_once({a, b, popped}, 3);
  };
  explore_and_report("deque owner + two thieves, random", model::random_schedules(11, budget(1500)),
                     body);
  explore_and_report("deque owner + two thieves, pct d=3",
                     model::pct_schedules(12, budget(1500), 3), body);
}

TEST(ModelDeque, StealBatchAndPop) {
  for (auto order : {spindle::deque_order::lifo, spindle::deque_order::fifo}) {
    auto body = [order] {
      four_items f(order, 2);
      model::thread thief([&] {
        spindle::deque_owner<int> mine(spindle::deque_order::lifo, 1);
        auto r = f.s.steal_batch_and_pop(mine);
        if (r.is_stolen()) {
          f.l.take(f.thief_took, *r.value);
        }
        pop_all(mine, f.l, f.thief_took);
      });
      if (auto v = f.w.pop()) {
        f.l.take(f.popped, *v);
      }
      thief.join();
      pop_all(f.w, f.l, f.popped);
      expect_each_once({f.thief_took, f.popped}, 4);
    };
    bool const lifo = order == spindle::deque_order::lifo;
    explore_and_report(
        lifo ? "deque steal_batch_and_pop lifo, dfs 2" : "deque steal_batch_and_pop fifo, dfs 2",
        model::exhaustive(2, budget(40000)), body);
    explore_and_report(
        lifo ? "deque steal_batch_and_pop lifo, random" : "deque steal_batch_and_pop fifo, random",
        model::random_schedules(5, budget(2000)), body);
  }
}

// A thief steals a batch into a span while the owner pops everything. From a LIFO deque the
// batch is claimed one item at a time: the owner pops without a CAS while it sees two items or
// more, so one CAS for the batch could claim items the owner already took (the argument at
// deque_state::take_batch). The seeded bug deque-lifo-batch-one-cas claims it with one CAS, and
// this test sees the duplicate. From a FIFO deque one CAS is the claim, and it is sound.
TEST(ModelDeque, StealBatchIntoASpanWhileTheOwnerPops) {
  for (auto order : {spindle::deque_order::lifo, spindle::deque_order::fifo}) {
    auto body = [order] {
      four_items f(order);
      model::thread thief([&] {
        std::array<int, 4> out{};
        auto const r = f.s.steal_batch(out);
        for (std::size_t k = 0; k < r.count; ++k) {
          f.l.take(f.thief_took, out[k]);
        }
      });
      pop_all(f.w, f.l, f.popped);
      thief.join();
      expect_each_once({f.thief_took, f.popped}, 4);
    };
    bool const lifo = order == spindle::deque_order::lifo;
    explore_and_report(lifo ? "deque steal_batch lifo, dfs 2" : "deque steal_batch fifo, dfs 2",
                       model::exhaustive(2, budget(40000)), body);
    explore_and_report(lifo ? "deque steal_batch lifo, x86-TSO pct d=3"
                            : "deque steal_batch fifo, x86-TSO pct d=3",
                       spindle_test::tso(model::pct_schedules(13, budget(2000), 3)), body);
    explore_and_report(lifo ? "deque steal_batch lifo, weak memory pct d=3"
                            : "deque steal_batch fifo, weak memory pct d=3",
                       spindle_test::weak(model::pct_schedules(14, budget(2000), 3)), body);
  }
}

// The owner pops without a CAS while it sees more than one item; a thief steals at the same
// time. Under x86-TSO store buffering, pop's seq_cst fence (between its store to bottom and
// its load of top) is what stops both from taking the same item; without it this fails.
TEST(ModelDeque, PopWithoutCasAgainstStealUnderTso) {
  auto const body = [] { owner_pops_while_thief_steals(spindle::deque_order::lifo, 3); };
  explore_and_report("deque pop vs steal, x86-TSO, dfs bound 2",
                     spindle_test::tso(model::exhaustive(2, budget(40000))), body);
  explore_and_report("deque pop vs steal, x86-TSO, pct d=3",
                     spindle_test::tso(model::pct_schedules(11, budget(3000), 3)), body);
}

// The same scenario in the C++ memory model's weak mode, where a thief's load of bottom may
// read an older store: only the seq_cst order of its two loads against the owner's exchange
// and load of top (load_top_then_bottom in deque_state.hpp) keeps the two from taking the
// same item. Acquire loads would pass on x86-TSO and fail here.
TEST(ModelDeque, PopAgainstStealInTheWeakMemoryMode) {
  auto const body = [] { owner_pops_while_thief_steals(spindle::deque_order::lifo, 3); };
  explore_and_report("deque pop vs steal, weak memory, dfs bound 2",
                     spindle_test::weak(model::exhaustive(2, budget(40000))), body);
  explore_and_report("deque pop vs steal, weak memory, pct d=3",
                     spindle_test::weak(model::pct_schedules(12, budget(3000), 3)), body);
}

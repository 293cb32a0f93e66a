// spindle::worker / spindle::stealer under the model checker: push, pop and steal around the
// last item, around growth from capacity 1, with two thieves, and steal_batch_and_pop. Every
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

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::print_stats;

namespace {

/// Payloads written by the owner before it pushes their index, and the indices each thread
/// took; checked after the threads are joined.
struct ledger {
  std::array<model::plain<int>, 16> payload{};

  void produce(spindle::worker<int>& w, int index) {
    payload[static_cast<std::size_t>(index)].set(100 + index);
    w.push(index);
  }
  void consume(std::vector<int>& into, int index) {
    model::check(payload[static_cast<std::size_t>(index)].get() == 100 + index,
                 "the taker saw a payload the owner had not written");
    into.push_back(index);
  }
};

void expect_each_once(std::vector<std::vector<int>> const& taken, int count) {
  std::array<int, 16> seen{};
  for (auto const& list : taken) {
    for (int i : list) {
      ++seen[static_cast<std::size_t>(i)];
    }
  }
  for (int i = 0; i < count; ++i) {
    model::check(seen[static_cast<std::size_t>(i)] == 1, "an item was lost or taken twice");
  }
}

void steal_into(spindle::stealer<int>& s, ledger& l, std::vector<int>& into, int attempts) {
  for (int i = 0; i < attempts; ++i) {
    auto r = s.steal();
    if (r.is_success()) {
      l.consume(into, *r.value);
    }
  }
}

void pop_all(spindle::worker<int>& w, ledger& l, std::vector<int>& into) {
  while (auto v = w.pop()) {
    l.consume(into, *v);
  }
}

}  // namespace

TEST(ModelDeque, Example) {
  // The owner and a thief race for the last item: exactly one of them gets it, in every
  // schedule with up to three preemptions.
  auto const r = model::explore(model::exhaustive(3, budget(200000)), [] {
    spindle::worker<int> w;
    ledger l;
    auto s = w.stealer();
    l.produce(w, 0);
    std::vector<int> stolen;
    std::vector<int> popped;
    model::thread thief([&] { steal_into(s, l, stolen, 1); });
    pop_all(w, l, popped);
    thief.join();
    expect_each_once({stolen, popped}, 1);
  });
  EXPECT_TRUE(r) << r.message;
  print_stats("deque last item (lifo), dfs bound 3", r);
}

TEST(ModelDeque, FifoLastItem) {
  auto const r = model::explore(model::exhaustive(3, budget(200000)), [] {
    spindle::worker<int> w(spindle::deque_order::fifo);
    ledger l;
    auto s = w.stealer();
    l.produce(w, 0);
    l.produce(w, 1);
    std::vector<int> stolen;
    std::vector<int> popped;
    model::thread thief([&] { steal_into(s, l, stolen, 2); });
    pop_all(w, l, popped);
    thief.join();
    expect_each_once({stolen, popped}, 2);
  });
  EXPECT_TRUE(r) << r.message;
  print_stats("deque two items (fifo), dfs bound 3", r);
}

TEST(ModelDeque, GrowthWhileStealing) {
  // Capacity 1: the second and third push grow the buffer while a thief reads it.
  auto body = [] {
    spindle::worker<int> w(spindle::deque_order::lifo, 1);
    ledger l;
    auto s = w.stealer();
    std::vector<int> stolen;
    std::vector<int> popped;
    model::thread thief([&] { steal_into(s, l, stolen, 2); });
    l.produce(w, 0);
    l.produce(w, 1);
    l.produce(w, 2);
    if (auto v = w.pop()) {
      l.consume(popped, *v);
    }
    l.produce(w, 3);
    thief.join();
    pop_all(w, l, popped);
    expect_each_once({stolen, popped}, 4);
  };
  auto const d = model::explore(model::exhaustive(2, budget(40000)), body);
  EXPECT_TRUE(d) << d.message;
  print_stats("deque growth from capacity 1, dfs bound 2", d);
  auto const p = model::explore(model::pct_schedules(7, budget(1000), 3), body);
  EXPECT_TRUE(p) << p.message;
  print_stats("deque growth from capacity 1, pct d=3", p);
}

TEST(ModelDeque, TwoThievesAndTheOwner) {
  auto body = [] {
    spindle::worker<int> w(spindle::deque_order::lifo, 2);
    ledger l;
    auto s1 = w.stealer();
    auto s2 = w.stealer();
    l.produce(w, 0);
    l.produce(w, 1);
    l.produce(w, 2);
    std::vector<int> a;
    std::vector<int> b;
    std::vector<int> popped;
    model::thread t1([&] { steal_into(s1, l, a, 2); });
    model::thread t2([&] { steal_into(s2, l, b, 2); });
    if (auto v = w.pop()) {
      l.consume(popped, *v);
    }
    t1.join();
    t2.join();
    pop_all(w, l, popped);
    expect_each_once({a, b, popped}, 3);
  };
  auto const r = model::explore(model::random_schedules(11, budget(1500)), body);
  EXPECT_TRUE(r) << r.message;
  print_stats("deque owner + two thieves, random", r);
  auto const p = model::explore(model::pct_schedules(12, budget(1500), 3), body);
  EXPECT_TRUE(p) << p.message;
  print_stats("deque owner + two thieves, pct d=3", p);
}

TEST(ModelDeque, StealBatchAndPop) {
  for (auto order : {spindle::deque_order::lifo, spindle::deque_order::fifo}) {
    auto body = [order] {
      spindle::worker<int> w(order, 2);
      ledger l;
      auto s = w.stealer();
      for (int i = 0; i < 4; ++i) {
        l.produce(w, i);
      }
      std::vector<int> thief_took;
      std::vector<int> popped;
      model::thread thief([&] {
        spindle::worker<int> mine(spindle::deque_order::lifo, 1);
        auto r = s.steal_batch_and_pop(mine);
        if (r.is_success()) {
          l.consume(thief_took, *r.value);
        }
        pop_all(mine, l, thief_took);
      });
      if (auto v = w.pop()) {
        l.consume(popped, *v);
      }
      thief.join();
      pop_all(w, l, popped);
      expect_each_once({thief_took, popped}, 4);
    };
    auto const d = model::explore(model::exhaustive(2, budget(40000)), body);
    EXPECT_TRUE(d) << d.message;
    print_stats(order == spindle::deque_order::lifo ? "deque steal_batch_and_pop lifo, dfs 2"
                                                    : "deque steal_batch_and_pop fifo, dfs 2",
                d);
    auto const r = model::explore(model::random_schedules(5, budget(2000)), body);
    EXPECT_TRUE(r) << r.message;
  }
}

// The owner pops without a CAS while it sees more than one item; a thief steals at the same
// time. Under x86-TSO store buffering, pop's seq_cst fence (between its store to bottom and
// its load of top) is what stops both from taking the same item; without it this fails.
TEST(ModelDeque, PopWithoutCasAgainstStealUnderTso) {
  auto const body = [] {
    spindle::worker<int> w;
    ledger l;
    auto s = w.stealer();
    l.produce(w, 0);
    l.produce(w, 1);
    l.produce(w, 2);
    std::vector<int> stolen;
    std::vector<int> popped;
    model::thread thief([&] { steal_into(s, l, stolen, 3); });
    pop_all(w, l, popped);
    thief.join();
    expect_each_once({stolen, popped}, 3);
  };
  auto dfs = model::exhaustive(2, budget(40000));
  dfs.store_buffering = true;
  auto const d = model::explore(dfs, body);
  EXPECT_TRUE(d) << d.message;
  print_stats("deque pop vs steal, x86-TSO, dfs bound 2", d);
  auto pct = model::pct_schedules(11, budget(3000), 3);
  pct.store_buffering = true;
  auto const p = model::explore(pct, body);
  EXPECT_TRUE(p) << p.message;
  print_stats("deque pop vs steal, x86-TSO, pct d=3", p);
}

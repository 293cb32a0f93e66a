// Wake-ups of the channels' wait lists under the model checker: several senders blocked on a
// full bounded channel (capacity 1 and 2), several receivers blocked on an empty one, and
// close racing with both. Every freed slot and every message must wake one sleeper, so a lost
// wake-up shows up here as a deadlock (every thread asleep). Every value is delivered or
// handed back exactly once, in per-sender order.
#include <spindle/channel.hpp>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <deque>
#include <vector>

#include "model/support.hpp"
#include "support/channel_cases.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle::send_status;
using spindle_test::budget;
using spindle_test::expect_each_of_once;
using spindle_test::expect_each_once;
using spindle_test::explore_and_report;

namespace {

/// Values of sender k are k * 4 + 0, 1, ...: a receiver sees each sender's values in order.
void expect_per_sender_order(std::vector<int> const& got) {
  std::array<int, 4> last{-1, -1, -1, -1};
  for (int v : got) {
    auto& l = last[static_cast<std::size_t>(v / 4)];
    model::check(v > l, "values of one sender arrived out of order");
    l = v;
  }
}

/// `senders` threads each send `per_sender` values with blocking send into a bounded channel of
/// `capacity`; `receivers` receivers (the body and receivers - 1 threads) each take their share.
void senders_blocked_on_full(std::size_t capacity, int senders, int per_sender, int receivers) {
  auto [tx, rx] = spindle::bounded<int>(capacity);
  std::deque<model::thread> threads;
  for (int k = 0; k < senders; ++k) {
    threads.emplace_back([k, per_sender, tx = tx]() mutable {
      for (int i = 0; i < per_sender; ++i) {
        auto r = tx.send(k * 4 + i);
        model::check(r.status == send_status::sent, "send failed on an open channel");
      }
    });
  }
  int const total = senders * per_sender;
  std::array<std::vector<int>, 2> got;
  // Receiver j takes `share(j)` values; the shares add up to `total`.
  auto share = [&](int j) { return total / receivers + (j < total % receivers ? 1 : 0); };
  for (int j = 1; j < receivers; ++j) {
    threads.emplace_back([j, &got, share, rx = rx]() mutable {
      for (int i = 0; i < share(j); ++i) {
        auto v = rx.recv();
        model::check(v.has_value(), "recv reported closed on an open channel");
        got[static_cast<std::size_t>(j)].push_back(*v);
      }
    });
  }
  for (int i = 0; i < share(0); ++i) {
    auto v = rx.recv();
    model::check(v.has_value(), "recv reported closed on an open channel");
    got[0].push_back(*v);
  }
  for (auto& t : threads) {
    t.join();
  }
  expect_per_sender_order(got[0]);
  expect_per_sender_order(got[1]);
  std::vector<int> sent;
  for (int k = 0; k < senders; ++k) {
    for (int i = 0; i < per_sender; ++i) {
      sent.push_back(k * 4 + i);
    }
  }
  expect_each_of_once({got[0], got[1]}, sent);
}

/// One sender feeds `receivers` receivers blocked on an empty channel (bounded when capacity
/// > 0, unbounded otherwise); each receiver takes one value.
void receivers_blocked_on_empty(std::size_t capacity, int receivers) {
  auto run = [receivers](auto tx, auto rx) {
    std::array<std::vector<int>, 3> got;
    std::deque<model::thread> threads;
    for (int j = 0; j < receivers; ++j) {
      threads.emplace_back([j, &got, rx = rx]() mutable {
        auto v = rx.recv();
        model::check(v.has_value(), "recv reported closed on an open channel");
        got[static_cast<std::size_t>(j)].push_back(*v);
      });
    }
    for (int i = 0; i < receivers; ++i) {
      auto r = tx.send(i);
      model::check(r.status == send_status::sent, "send failed on an open channel");
    }
    for (auto& t : threads) {
      t.join();
    }
    expect_each_once({got[0], got[1], got[2]}, receivers);
  };
  if (capacity == 0) {
    auto [tx, rx] = spindle::unbounded<int>();
    run(tx, rx);
  } else {
    auto [tx, rx] = spindle::bounded<int>(capacity);
    run(tx, rx);
  }
}

/// Two senders block on a full channel of `capacity` while the receiver drains and another
/// thread closes: every value is received or handed back with `closed`, exactly once.
void close_racing_with_blocked_senders(std::size_t capacity) {
  auto [tx, rx] = spindle::bounded<int>(capacity);
  std::array<std::vector<int>, 2> back;
  std::deque<model::thread> threads;
  for (int k = 0; k < 2; ++k) {
    threads.emplace_back([k, &back, tx = tx]() mutable {
      for (int i = 0; i < 2; ++i) {
        auto r = tx.send(k * 4 + i);
        if (r.status != send_status::sent) {
          model::check(r.status == send_status::closed && r.value.has_value(),
                       "a failed send must report closed and hand the value back");
          back[static_cast<std::size_t>(k)].push_back(*r.value);
        }
      }
    });
  }
  threads.emplace_back([tx = tx]() mutable { tx.close(); });
  std::vector<int> got;
  spindle_test::recv_for_until_closed(rx, std::chrono::hours(1),
                                      [&got](int v) { got.push_back(v); });
  for (auto& t : threads) {
    t.join();
  }
  expect_per_sender_order(got);
  expect_each_of_once({got, back[0], back[1]}, {0, 1, 4, 5});
}

}  // namespace

TEST(ModelChannelWake, Example) {
  // Capacity 1, three senders with one value each, one receiver: at least two senders find
  // the channel full and sleep; every freed slot must reach one of them.
  auto body = [] { senders_blocked_on_full(1, 3, 1, 1); };
  auto const d = model::explore(model::exhaustive(1, budget(2500)), body);
  EXPECT_TRUE(d) << d.message;
  spindle_test::print_stats("bounded(1) 3 senders x1, 1 receiver, dfs bound 1", d);
  auto const p = model::explore(model::pct_schedules(101, budget(400), 3), body);
  EXPECT_TRUE(p) << p.message;
  spindle_test::print_stats("bounded(1) 3 senders x1, 1 receiver, pct d=3", p);
}

TEST(ModelChannelWake, SendersBlockedOnFullCapacityOne) {
  auto body = [] { senders_blocked_on_full(1, 2, 2, 1); };
  explore_and_report("bounded(1) 2 senders x2, 1 receiver, dfs bound 1",
                     model::exhaustive(1, budget(2500)), body);
  explore_and_report("bounded(1) 2 senders x2, 1 receiver, pct d=3",
                     model::pct_schedules(111, budget(400), 3), body);
}

TEST(ModelChannelWake, SendersBlockedOnFullTwoReceivers) {
  for (std::size_t cap : {std::size_t{1}, std::size_t{2}}) {
    auto body = [cap] { senders_blocked_on_full(cap, 3, 1, 2); };
    explore_and_report(cap == 1 ? "bounded(1) 3 senders, 2 receivers, pct d=3"
                                : "bounded(2) 3 senders, 2 receivers, pct d=3",
                       model::pct_schedules(121, budget(400), 3), body);
    explore_and_report(cap == 1 ? "bounded(1) 3 senders, 2 receivers, random + buffers"
                                : "bounded(2) 3 senders, 2 receivers, random + buffers",
                       spindle_test::tso(model::random_schedules(122, budget(300))), body);
    explore_and_report(cap == 1 ? "bounded(1) 3 senders, 2 receivers, weak memory"
                                : "bounded(2) 3 senders, 2 receivers, weak memory",
                       spindle_test::weak(model::random_schedules(123, budget(300))), body);
  }
}

TEST(ModelChannelWake, SendersBlockedOnFullCapacityTwo) {
  auto body = [] { senders_blocked_on_full(2, 3, 2, 1); };
  explore_and_report("bounded(2) 3 senders x2, 1 receiver, pct d=3",
                     model::pct_schedules(131, budget(400), 3), body);
}

TEST(ModelChannelWake, ReceiversBlockedOnEmpty) {
  for (std::size_t cap : {std::size_t{0}, std::size_t{1}, std::size_t{2}}) {
    auto body = [cap] { receivers_blocked_on_empty(cap, cap == 1 ? 2 : 3); };
    explore_and_report(cap == 0   ? "unbounded 3 receivers on empty, dfs bound 1"
                       : cap == 1 ? "bounded(1) 2 receivers on empty, dfs bound 1"
                                  : "bounded(2) 3 receivers on empty, dfs bound 1",
                       model::exhaustive(1, budget(2500)), body);
    explore_and_report(cap == 0   ? "unbounded 3 receivers on empty, pct d=3"
                       : cap == 1 ? "bounded(1) 2 receivers on empty, pct d=3"
                                  : "bounded(2) 3 receivers on empty, pct d=3",
                       model::pct_schedules(141, budget(400), 3), body);
  }
}

TEST(ModelChannelWake, CloseRacingWithBlockedSenders) {
  for (std::size_t cap : {std::size_t{1}, std::size_t{2}}) {
    auto body = [cap] { close_racing_with_blocked_senders(cap); };
    explore_and_report(cap == 1 ? "close vs 2 blocked senders, bounded(1), pct d=3"
                                : "close vs 2 blocked senders, bounded(2), pct d=3",
                       model::pct_schedules(151, budget(400), 3), body);
  }
  explore_and_report("close vs 2 blocked senders, bounded(1), dfs bound 1",
                     model::exhaustive(1, budget(2500)),
                     [] { close_racing_with_blocked_senders(1); });
}

// spindle channels under the model checker: bounded wrap-around at capacity 1 and 2, the
// rendezvous, unbounded block boundaries, close racing with send and recv, and the lanes
// flavour's order per producer and its late lanes. Every accepted
// value is received or handed back exactly once, blocking operations never sleep through a
// message (lost wake-up = deadlock), and the receiver sees what the sender wrote before send
// (the race detector checks the payloads).
#include <spindle/channel.hpp>
#include <spindle/model/track_allocations.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <vector>

#include "model/support.hpp"
#include "support/channel_cases.hpp"
#include "support/model_cases.hpp"
#include "support/tracked.hpp"

namespace model = spindle::model;
using spindle::recv_status;
using spindle::send_status;
using spindle_test::budget;
using spindle_test::expect_each_once;
using spindle_test::explore_and_report;
using spindle_test::tso;
using ledger = spindle_test::payload_ledger;

namespace {

/// One producer sends `n` values with blocking send; the body receives them with recv.
void blocking_pair_body(std::size_t capacity, int n) {
  auto [tx, rx] = spindle::bounded<int>(capacity);
  ledger l;
  model::thread producer([&, tx = tx]() mutable {
    for (int i = 0; i < n; ++i) {
      auto r = tx.send(l.make(i));
      model::check(r.status == send_status::sent, "send failed on an open channel");
    }
  });
  std::vector<int> got;
  for (int i = 0; i < n; ++i) {
    auto v = rx.recv();
    model::check(v.has_value(), "recv reported closed on an open channel");
    l.take(got, *v);
    model::check(*v == i, "values arrived out of order");
  }
  producer.join();
}

}  // namespace

TEST(ModelChannel, Example) {
  // Capacity 1, three values: every send after the first wraps around the one slot and may
  // block; every schedule within one preemption delivers all three in order.
  auto const r =
      model::explore(model::exhaustive(1, budget(20000)), [] { blocking_pair_body(1, 3); });
  EXPECT_TRUE(r) << r.message;
  spindle_test::print_stats("bounded(1) send/recv x3, dfs bound 1", r);
}

TEST(ModelChannel, BoundedCapacityOneAndTwoRandomAndTso) {
  for (std::size_t cap : {std::size_t{1}, std::size_t{2}}) {
    auto body = [cap] { blocking_pair_body(cap, 5); };
    explore_and_report(cap == 1 ? "bounded(1) x5, random" : "bounded(2) x5, random",
                       model::random_schedules(21, budget(500)), body);
    explore_and_report(cap == 1 ? "bounded(1) x5, pct d=3" : "bounded(2) x5, pct d=3",
                       model::pct_schedules(22, budget(500), 3), body);
    spindle_test::explore_tso_then_weak(cap == 1 ? "bounded(1) x5, random + store buffers"
                                                 : "bounded(2) x5, random + store buffers",
                                        model::random_schedules(23, budget(500)), body);
  }
}

TEST(ModelChannel, TwoProducersTryOperations) {
  auto body = [] {
    auto [tx, rx] = spindle::bounded<int>(2);
    ledger l;
    std::vector<int> handed_back;
    std::vector<int> handed_back_b;
    auto produce = [&l](spindle::sender<int> s, int first, std::vector<int>& back) {
      for (int i = first; i < first + 2; ++i) {
        auto r = s.try_send(l.make(i));
        if (r.status != send_status::sent) {
          model::check(r.status == send_status::full && r.value.has_value(),
                       "a failed try_send must hand the value back");
          back.push_back(*r.value);
        }
      }
    };
    model::thread a([&, s = tx] { produce(s, 0, handed_back); });
    model::thread b([&, s = tx] { produce(s, 2, handed_back_b); });
    std::vector<int> got;
    for (int i = 0; i < 3; ++i) {
      auto r = rx.try_recv();
      if (r.status == recv_status::received) {
        l.take(got, *r.value);
      }
    }
    a.join();
    b.join();
    while (true) {
      auto r = rx.try_recv();
      if (r.status != recv_status::received) {
        break;
      }
      l.take(got, *r.value);
    }
    expect_each_once({got, handed_back, handed_back_b}, 4);
  };
  explore_and_report("bounded(2) 2 producers try ops, random",
                     model::random_schedules(31, budget(1000)), body);
  spindle_test::explore_tso_then_weak("bounded(2) 2 producers try ops, pct + store buffers",
                                      model::pct_schedules(32, budget(1000), 3), body);
}

TEST(ModelChannel, Rendezvous) {
  auto body = [] { blocking_pair_body(0, 2); };
  explore_and_report("bounded(0) rendezvous x2, dfs bound 2", model::exhaustive(2, budget(20000)),
                     body);
  spindle_test::explore_tso_then_weak("bounded(0) rendezvous x2, random + store buffers",
                                      model::random_schedules(41, budget(1000)), body);
}

TEST(ModelChannel, UnboundedAcrossBlockBoundary) {
  // 33 values cross the first 31-slot block while the receiver drains concurrently.
  auto body = [] {
    auto [tx, rx] = spindle::unbounded<int>();
    ledger l;
    model::thread producer([&, tx = tx]() mutable {
      for (int i = 0; i < 33; ++i) {
        auto r = tx.try_send(l.make(i));
        model::check(r.status == send_status::sent, "unbounded try_send must succeed");
      }
    });
    std::vector<int> got;
    for (int i = 0; i < 33; ++i) {
      auto v = rx.recv();
      model::check(v.has_value() && *v == i, "unbounded lost or reordered a value");
      l.take(got, *v);
    }
    producer.join();
  };
  explore_and_report("unbounded x33 (block boundary), random",
                     model::random_schedules(51, budget(150)), body);
  spindle_test::explore_tso_then_weak("unbounded x33 (block boundary), pct + buffers",
                                      model::pct_schedules(52, budget(150), 3), body);
}

TEST(ModelChannel, CloseRacingWithSendAndRecv) {
  for (std::size_t cap : {std::size_t{0}, std::size_t{1}, std::size_t{2}}) {
    auto body = [cap] {
      auto [tx, rx] = spindle::bounded<int>(cap);
      ledger l;
      std::vector<int> handed_back;
      model::thread producer([&, tx = tx]() mutable {
        for (int i = 0; i < 2; ++i) {
          auto r = tx.send(l.make(i));
          if (r.status != send_status::sent) {
            model::check(r.status == send_status::closed && r.value.has_value(),
                         "a send that failed must report closed and hand the value back");
            handed_back.push_back(*r.value);
          }
        }
      });
      model::thread closer([tx = tx]() mutable { tx.close(); });
      std::vector<int> got;
      while (auto v = rx.recv()) {
        l.take(got, *v);
      }
      producer.join();
      closer.join();
      expect_each_once({got, handed_back}, 2);
    };
    if (cap == 1) {
      explore_and_report("close vs send/recv, bounded(1), dfs bound 1",
                         model::exhaustive(1, budget(20000)), body);
    }
    explore_and_report(cap == 0   ? "close vs send/recv, bounded(0), pct d=3"
                       : cap == 1 ? "close vs send/recv, bounded(1), pct d=3"
                                  : "close vs send/recv, bounded(2), pct d=3",
                       model::pct_schedules(60, budget(300), 3), body);
    spindle_test::explore_tso_then_weak(
        cap == 0   ? "close vs send/recv, bounded(0), random + buffers"
        : cap == 1 ? "close vs send/recv, bounded(1), random + buffers"
                   : "close vs send/recv, bounded(2), random + buffers",
        model::random_schedules(61, budget(300)), body);
  }
}

TEST(ModelChannel, UnboundedCloseWhileReceiverWaits) {
  auto body = [] {
    auto [tx, rx] = spindle::unbounded<int>();
    ledger l;
    model::thread producer([&, tx = tx]() mutable {
      static_cast<void>(tx.send(l.make(0)));
      tx.close();
    });
    std::vector<int> got;
    while (auto v = rx.recv()) {
      l.take(got, *v);
    }
    producer.join();
    expect_each_once({got}, 1);
  };
  explore_and_report("unbounded send+close vs recv, dfs bound 2",
                     model::exhaustive(2, budget(20000)), body);
}

TEST(ModelChannel, DroppingTheLastReceiverDestroysBufferedValues) {
  auto body = [] {
    auto const before = spindle_test::tracked::live();
    {
      auto [tx, rx] = spindle::bounded<spindle_test::tracked>(2);
      model::thread producer([tx = tx]() mutable {
        for (std::uint64_t i = 0; i < 3; ++i) {
          static_cast<void>(tx.try_send(spindle_test::tracked(i)));
        }
      });
      model::thread consumer([rx = std::move(rx)]() mutable { static_cast<void>(rx.try_recv()); });
      producer.join();
      consumer.join();
    }
    model::check(spindle_test::tracked::live() == before, "a value leaked or died twice");
  };
  explore_and_report("last receiver dropped, tracked values, random",
                     model::random_schedules(71, budget(1500)), body);
}

TEST(ModelChannel, TimeoutsRacingWithSendAndRecv) {
  // The deadline is an hour away, so only the model's virtual time ends a wait: the scheduler
  // may time out any sleeping send_for/recv_for at any point. A timed-out operation must leave
  // nothing behind: the value it did not send comes back, the value it did not receive stays.
  for (std::size_t cap : {std::size_t{0}, std::size_t{1}}) {
    auto body = [cap] {
      auto [tx, rx] = spindle::bounded<int>(cap);
      ledger l;
      model::thread producer([&, tx = std::move(tx)]() mutable {
        for (int i = 0; i < 2; ++i) {
          auto r = tx.send_for(l.make(i), std::chrono::hours(1));
          while (r.status == send_status::timed_out) {
            model::check(r.value.has_value() && *r.value == i,
                         "a timed-out send did not hand its value back");
            r = tx.send_for(*r.value, std::chrono::hours(1));
          }
          model::check(r.status == send_status::sent, "send_for failed on an open channel");
        }
      });
      std::vector<int> got;
      spindle_test::recv_for_until_closed(rx, std::chrono::hours(1),
                                          [&](int v) { l.take(got, v); });
      producer.join();
      expect_each_once({got}, 2);
      model::check(got.size() == 2 && got[0] == 0 && got[1] == 1, "values reordered");
    };
    explore_and_report(cap == 0 ? "send_for/recv_for timeouts, bounded(0), random"
                                : "send_for/recv_for timeouts, bounded(1), random",
                       model::random_schedules(81, budget(500)), body);
    spindle_test::explore_tso_then_weak(
        cap == 0 ? "send_for/recv_for timeouts, bounded(0), pct + buffers"
                 : "send_for/recv_for timeouts, bounded(1), pct + buffers",
        model::pct_schedules(82, budget(500), 3), body);
  }
}

TEST(ModelChannel, TwoSendersTwoReceiversBlocking) {
  auto body = [] {
    auto [tx, rx] = spindle::bounded<int>(1);
    ledger l;
    std::vector<int> got_a;
    std::vector<int> got_b;
    model::thread s1([&, tx = tx]() mutable { static_cast<void>(tx.send(l.make(0))); });
    model::thread s2([&, tx = tx]() mutable { static_cast<void>(tx.send(l.make(1))); });
    model::thread r1([&, rx = rx]() mutable {
      if (auto v = rx.recv()) {
        l.take(got_a, *v);
      }
    });
    if (auto v = rx.recv()) {
      l.take(got_b, *v);
    }
    s1.join();
    s2.join();
    r1.join();
    expect_each_once({got_a, got_b}, 2);
  };
  explore_and_report("bounded(1) 2 senders 2 receivers, pct d=3",
                     model::pct_schedules(91, budget(1000), 3), body);
  spindle_test::explore_tso_then_weak("bounded(1) 2 senders 2 receivers, random + buffers",
                                      model::random_schedules(92, budget(1000)), body);
}

TEST(ModelChannel, LanesKeepEachProducersOrderAndCloseDrainsEveryLane) {
  // bounded_lanes(1, 3): two producers with copies of their own (lanes 1 and 2) send two values
  // each with blocking sends into one-slot lanes, while a third copy (lane 0) closes. The
  // receiver takes until closed: every value is received or handed back once, each producer's
  // values arrive in its order, and nothing is left in a lane once the receiver saw closed.
  auto body = [] {
    auto [tx, rx] = spindle::bounded_lanes<int>(1, 3);
    ledger l;
    std::vector<int> back_a;
    std::vector<int> back_b;
    auto produce = [&l](spindle::sender<int> s, int first, std::vector<int>& back) {
      for (int i = first; i < first + 2; ++i) {
        auto r = s.send(l.make(i));
        if (!r.is_sent()) {
          model::check(r.is_closed() && r.value.has_value(),
                       "a send that failed must report closed and hand the value back");
          back.push_back(*r.value);
        }
      }
    };
    model::thread a([&, s = tx] { produce(s, 0, back_a); });
    model::thread b([&, s = tx] { produce(s, 2, back_b); });
    model::thread closer([s = std::move(tx)]() mutable { s.close(); });
    std::vector<int> got;
    int last_a = -1;
    int last_b = -1;
    while (auto v = rx.recv()) {
      int& last = *v < 2 ? last_a : last_b;
      model::check(*v > last, "a producer's values arrived out of order");
      last = *v;
      l.take(got, *v);
    }
    model::check(rx.size() == 0, "a receiver saw closed while a lane still held a value");
    a.join();
    b.join();
    closer.join();
    expect_each_once({got, back_a, back_b}, 4);
  };
  explore_and_report("bounded_lanes(1, 3) 2 producers + close, pct d=3",
                     model::pct_schedules(101, budget(1000), 3), body);
  spindle_test::explore_tso_then_weak("bounded_lanes(1, 3) 2 producers + close, random + buffers",
                                      model::random_schedules(102, budget(1000)), body);
}

TEST(ModelChannel, LanesReceiverWakesForALaneHandedOutWhileItWaits) {
  // The receiver may already be parked when the sender is copied: the copy's lane (1) is one
  // the receiver's last scan did not count, and its send must still wake it.
  auto body = [] {
    auto [tx, rx] = spindle::bounded_lanes<int>(1, 4);
    ledger l;
    std::vector<int> got;
    model::thread consumer([&, rx = rx]() mutable {
      auto v = rx.recv();
      model::check(v.has_value() && *v == 0, "the receiver missed the late lane's value");
      l.take(got, *v);
    });
    {
      auto late = tx;
      model::check(late.send(l.make(0)).is_sent(), "a send into an open lane failed");
    }
    consumer.join();
    expect_each_once({got}, 1);
  };
  explore_and_report("bounded_lanes(1, 4) late lane, dfs bound 2",
                     model::exhaustive(2, budget(20000)), body);
  spindle_test::explore_tso_then_weak("bounded_lanes(1, 4) late lane, random + buffers",
                                      model::random_schedules(112, budget(1000)), body);
}

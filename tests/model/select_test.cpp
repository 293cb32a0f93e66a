// spindle::select under the model checker: one select waiting on several channels against
// concurrent senders, receivers and close. Exactly one case completes per select; a value is
// received, or handed back, exactly once; a case not chosen leaves its value untouched; a
// withdrawn registration leaves no trace (a later operation on that channel never selects the
// gone waiter: the race detector and the exactly-once checks see it if it does); and a lost
// wake-up shows as a deadlock. Rendezvous cases pair with plain operations and with another
// select; a bounded channel's receiver that frees a slot sends for the waiting send case it
// selects (the hand-off), also against a sender that takes the slot first. The seeded bugs of
// the select loop are mutants of the real code in
// tools/mutate/mutants.txt that these tests kill: `select-withdraws-without-abort` (a select
// loop that withdraws without checking whether it was won) and `select-ignores-winner` (one
// that ignores which entry won).
#include <spindle/channel.hpp>
#include <spindle/select.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle::send_result;
using spindle::send_status;
using spindle_test::budget;
using spindle_test::expect_each_of_once;
using spindle_test::explore_and_report;
using spindle_test::tso;

namespace {

/// A value that remembers being moved from (-1), so a test can tell an untouched send value
/// from one the channel took.
struct token {
  explicit token(int value) noexcept : v(value) {}
  token(token&& other) noexcept : v(std::exchange(other.v, -1)) {}
  auto operator=(token&& other) noexcept -> token& {
    v = std::exchange(other.v, -1);
    return *this;
  }
  token(token const&) = delete;
  auto operator=(token const&) -> token& = delete;
  ~token() = default;
  int v;
};

/// A bounded channel of `capacity` (0: a rendezvous).
auto channel(std::size_t capacity) {
  return spindle::bounded<int>(capacity);
}

/// Two senders, one per channel, block in plain sends while the body receives both values
/// with two selects over both channels.
void select_receives_from_two_senders(std::size_t cap_a, std::size_t cap_b) {
  auto [tx_a, rx_a] = channel(cap_a);
  auto [tx_b, rx_b] = channel(cap_b);
  model::thread sa([tx = tx_a]() mutable {
    model::check(tx.send(0).is_sent(), "send on an open channel failed");
  });
  model::thread sb([tx = tx_b]() mutable {
    model::check(tx.send(1).is_sent(), "send on an open channel failed");
  });
  std::vector<int> got;
  for (int round = 0; round < 2; ++round) {
    int completed = 0;
    auto take = [&](std::optional<int> v) {
      model::check(v.has_value(), "recv reported closed on an open channel");
      got.push_back(*v);
      ++completed;
    };
    auto case_a = spindle::on_recv(rx_a, take);
    auto case_b = spindle::on_recv(rx_b, take);
    auto const i = spindle::select(case_a, case_b);
    model::check(completed == 1 && i < 2, "a select must complete exactly one case");
  }
  sa.join();
  sb.join();
  expect_each_of_once({got}, {0, 1});
}

/// A sender sends 0 into A and closes A; another thread closes B. The body selects until it
/// has seen both closed: value 0 exactly once, then nullopt from each.
void select_against_close(std::size_t cap_a) {
  auto [tx_a, rx_a] = channel(cap_a);
  auto [tx_b, rx_b] = channel(1);
  std::vector<int> back;
  model::thread sa([tx = tx_a, &back]() mutable {
    auto r = tx.send(0);
    if (!r.is_sent()) {
      model::check(r.is_closed() && r.value.has_value(), "a failed send hands the value back");
      back.push_back(*r.value);
    }
    tx.close();
  });
  model::thread cb([tx = tx_b]() mutable { tx.close(); });
  std::vector<int> got;
  bool a_closed = false;
  bool b_closed = false;
  auto on_a = [&](std::optional<int> v) {
    if (v) {
      got.push_back(*v);
    } else {
      a_closed = true;
    }
  };
  auto on_b = [&](std::optional<int> v) {
    model::check(!v.has_value(), "nothing was sent on B");
    b_closed = true;
  };
  while (!a_closed || !b_closed) {
    if (!a_closed && !b_closed) {
      static_cast<void>(
          spindle::select(spindle::on_recv(rx_a, on_a), spindle::on_recv(rx_b, on_b)));
    } else if (!a_closed) {
      static_cast<void>(spindle::select(spindle::on_recv(rx_a, on_a)));
    } else {
      static_cast<void>(spindle::select(spindle::on_recv(rx_b, on_b)));
    }
  }
  sa.join();
  cb.join();
  // A rendezvous send that found nobody before the close hands 0 back; otherwise it arrived.
  expect_each_of_once({got, back}, {0});
}

/// Two send cases, one into a rendezvous A (a receiver waits there), one into a full bounded
/// B (a receiver frees it). The case not chosen keeps its value; the chosen one's value arrives
/// exactly once.
void select_sends_to_rendezvous_or_full() {
  auto [tx_a, rx_a] = channel(0);
  auto [tx_b, rx_b] = channel(1);
  model::check(tx_b.try_send(9).is_sent(), "prefill");
  std::optional<int> at_a;
  std::optional<int> at_b;
  model::thread ra([rx = rx_a, &at_a]() mutable { at_a = rx.recv(); });
  model::thread rb([rx = rx_b, &at_b]() mutable { at_b = rx.recv(); });
  int a = 0;
  int b = 1;
  std::array<int, 2> handled{};
  auto const i =
      spindle::select(spindle::on_send(tx_a, a,
                                       [&](send_result<int> r) {
                                         model::check(r.is_sent(), "the rendezvous is open");
                                         ++handled[0];
                                       }),
                      spindle::on_send(tx_b, b, [&](send_result<int> r) {
                        model::check(r.is_sent(), "the channel is open");
                        ++handled[1];
                      }));
  model::check(handled[i] == 1 && handled[1 - i] == 0, "exactly one handler runs");
  if (i == 1) {
    // A was not chosen: its value is untouched, and A's receiver still waits for one.
    model::check(tx_a.send(a).is_sent(), "send on an open channel failed");
  }
  ra.join();
  rb.join();
  model::check(at_a == 0, "the rendezvous receiver got A's value once");
  model::check(at_b == 9, "B's receiver got the prefilled value first");
  auto rest = rx_b.try_recv();
  model::check(i == 1 ? (rest.is_received() && *rest.value == 1) : rest.is_empty(),
               "B holds the select's value exactly when its case was chosen");
}

/// Two selects on opposite ends of two rendezvous channels: T1 sends on A or receives from B,
/// T2 receives from A or sends on B. They must pair with each other, exactly once, and the
/// side not chosen keeps its value.
void two_selects_pair_through_rendezvous() {
  auto [tx_a, rx_a] = spindle::bounded<token>(0);
  auto [tx_b, rx_b] = spindle::bounded<token>(0);
  token x(10);
  token y(20);
  std::optional<int> t1_got;
  std::optional<int> t2_got;
  std::size_t t1_case = 9;
  model::thread t1([&, tx = tx_a, rx = rx_b]() mutable {
    auto* s = &tx;
    auto* r = &rx;
    t1_case = spindle::select(
        spindle::on_send(*s, x,
                         [](send_result<token> res) { model::check(res.is_sent(), "sent"); }),
        spindle::on_recv(*r, [&](std::optional<token> v) {
          if (v) {
            t1_got = v->v;
          }
        }));
  });
  std::size_t const t2_case = spindle::select(spindle::on_recv(rx_a,
                                                               [&](std::optional<token> v) {
                                                                 if (v) {
                                                                   t2_got = v->v;
                                                                 }
                                                               }),
                                              spindle::on_send(tx_b, y, [](send_result<token> res) {
                                                model::check(res.is_sent(), "sent");
                                              }));
  t1.join();
  if (t1_case == 0) {
    model::check(t2_case == 0 && t2_got == 10 && !t1_got && y.v == 20,
                 "T1 sent x to T2; y untouched");
  } else {
    model::check(t1_case == 1 && t2_case == 1 && t1_got == 20 && !t2_got && x.v == 10,
                 "T2 sent y to T1; x untouched");
  }
}

/// The hand-off to a waiting send case (array_channel::hand_off) against a sender that does
/// not wait. bounded(1) holds one value; A waits in a select with one send case, B tries once,
/// and the body receives. The slot the body frees goes to A through the hand-off, to A by its
/// own retry, or to B when B's try comes first, and then A's wake finds the ring full again and
/// A waits on. Every value arrives exactly once, the prefilled one first, and A's handler runs
/// once with `sent`.
void send_case_hand_off_against_a_sender_that_did_not_wait() {
  auto [tx, rx] = channel(1);
  model::check(tx.try_send(0).is_sent(), "prefill");
  int handled = 0;
  model::thread a([&handled, tx = tx]() mutable {
    int v = 4;
    spindle::select(spindle::on_send(tx, v, [&handled](send_result<int> r) {
      model::check(r.is_sent(), "the channel is open");
      ++handled;
    }));
  });
  bool b_sent = false;
  model::thread b([&b_sent, tx = tx]() mutable { b_sent = tx.try_send(8).is_sent(); });
  std::vector<int> got;
  auto take = [&got](spindle::receiver<int>& r) {
    auto v = r.recv();
    model::check(v.has_value(), "recv reported closed on an open channel");
    got.push_back(*v);
  };
  take(rx);
  take(rx);
  b.join();
  if (b_sent) {
    take(rx);
  }
  a.join();
  model::check(handled == 1, "the send case's handler runs once");
  model::check(got.front() == 0, "the prefilled value leaves first");
  model::check(rx.try_recv().is_empty(), "nothing is left over");
  std::vector<int> sent{0, 4};
  if (b_sent) {
    sent.push_back(8);
  }
  expect_each_of_once({got}, sent);
}

}  // namespace

TEST(ModelSelect, SendCaseHandOffAgainstASenderThatDidNotWait) {
  auto body = [] { send_case_hand_off_against_a_sender_that_did_not_wait(); };
  explore_and_report("send case hand-off vs a sender that tries once, dfs bound 2",
                     model::exhaustive(2, budget(5000)), body);
  explore_and_report("send case hand-off vs a sender that tries once, pct d=3",
                     model::pct_schedules(1418, budget(400), 3), body);
  spindle_test::explore_tso_then_weak(
      "send case hand-off vs a sender that tries once, random + buffers",
      model::random_schedules(1419, budget(300)), body);
}

TEST(ModelSelect, Example) {
  // One select loop receives from a bounded(1) and a rendezvous channel whose senders block.
  auto body = [] { select_receives_from_two_senders(1, 0); };
  explore_and_report("select recv bounded(1) + rendezvous, dfs bound 2",
                     model::exhaustive(2, budget(20000)), body);
  explore_and_report("select recv bounded(1) + rendezvous, pct d=3",
                     model::pct_schedules(1401, budget(500), 3), body);
}

TEST(ModelSelect, ReceivesFromTwoSenders) {
  // Capacities of A and B (0: a rendezvous), each with its own line of statistics.
  for (auto caps : {std::pair<std::size_t, std::size_t>{1, 1}, {2, 0}, {0, 0}}) {
    auto body = [caps] { select_receives_from_two_senders(caps.first, caps.second); };
    std::string const name = "select recv from two blocked senders, caps " +
                             std::to_string(caps.first) + "/" + std::to_string(caps.second);
    explore_and_report((name + ", pct d=3").c_str(), model::pct_schedules(1402, budget(1500), 3),
                       body);
    spindle_test::explore_tso_then_weak((name + ", random + buffers").c_str(),
                                        model::random_schedules(1403, budget(1000)), body);
  }
}

TEST(ModelSelect, AgainstClose) {
  for (std::size_t cap : {std::size_t{0}, std::size_t{1}}) {
    auto body = [cap] { select_against_close(cap); };
    explore_and_report(cap == 0 ? "select vs send+close, rendezvous A, pct d=3"
                                : "select vs send+close, bounded(1) A, pct d=3",
                       model::pct_schedules(1404, budget(1500), 3), body);
    spindle_test::explore_tso_then_weak(
        cap == 0 ? "select vs send+close, rendezvous A, random + buffers"
                 : "select vs send+close, bounded(1) A, random + buffers",
        model::random_schedules(1405, budget(1000)), body);
  }
}

TEST(ModelSelect, SendCasesLeaveTheOtherValueUntouched) {
  auto body = [] { select_sends_to_rendezvous_or_full(); };
  explore_and_report("select send rendezvous or full bounded(1), dfs bound 2",
                     model::exhaustive(2, budget(20000)), body);
  explore_and_report("select send rendezvous or full bounded(1), pct d=3",
                     model::pct_schedules(1406, budget(500), 3), body);
}

TEST(ModelSelect, TwoSelectsPairThroughRendezvous) {
  auto body = [] { two_selects_pair_through_rendezvous(); };
  explore_and_report("two selects, opposite ends of two rendezvous, dfs bound 2",
                     model::exhaustive(2, budget(20000)), body);
  spindle_test::explore_tso_then_weak("two selects, opposite ends of two rendezvous, pct + buffers",
                                      model::pct_schedules(1407, budget(500), 3), body);
}

TEST(ModelSelect, RendezvousSendCaseDoesNotPairAfterClose) {
  // A select's send case on a rendezvous races with close(); the closing thread then tries to
  // receive. A send case may find the channel open, then register only after close() has
  // woken every waiter: its registration must not be taken by a receive that started after
  // close() returned (that would be a hand-over after the close). The receive reports closed,
  // and so does the send.
  auto body = [] {
    auto [tx, rx] = spindle::bounded<int>(0);
    std::optional<send_status> sent;
    model::thread sender([&sent, tx = tx]() mutable {
      int v = 7;
      spindle::select(spindle::on_send(tx, v, [&sent](send_result<int> r) { sent = r.status; }));
    });
    rx.close();
    auto r = rx.try_recv();
    model::check(r.status == spindle::recv_status::closed,
                 "a rendezvous receive that started after close() paired with a send");
    sender.join();
    model::check(sent == send_status::closed, "a send case on a closed rendezvous did not fail");
  };
  explore_and_report("select send vs close + try_recv, rendezvous, dfs bound 2",
                     model::exhaustive(2, budget(20000)), body);
  spindle_test::explore_tso_then_weak(
      "select send vs close + try_recv, rendezvous, random + buffers",
      model::random_schedules(1410, budget(1000)), body);
}

// Coroutines waiting on channels under the model checker: a coroutine run by sync_wait
// suspends in async_recv / async_send / async_select while plain threads send, receive and
// close. Every value is received or handed back exactly once, the coroutine is resumed exactly
// once per wait (a second resume would run a finished frame: the race detector and the checks
// see it), and a lost wake-up shows as a deadlock (the sync_wait thread sleeps for ever).
//
// The resume protocol (detail/coro/select_awaiter.hpp: two arrivals per round, the second
// continues) is checked through these tests; its seeded bug, a hand-off in which both the
// suspending side and the waker may resume the coroutine, is the mutant
// `coro-wake-resumes-when-first` of the real header in tools/mutate/mutants.txt.
#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::expect_each_of_once;
using spindle_test::explore_and_report;
using spindle_test::tso;

namespace {

auto drain(spindle::receiver<int> rx, std::vector<int>& got) -> spindle::task<void> {
  while (auto v = co_await rx.async_recv()) {
    got.push_back(*v);
  }
}

/// A coroutine receives until closed while one thread sends two values and another closes:
/// each value is received by the coroutine or handed back to its sender, once.
void async_recv_races_send_and_close(std::size_t capacity) {
  auto [tx, rx] = spindle::bounded<int>(capacity);
  std::vector<int> back;
  model::thread sender([tx = tx, &back]() mutable {
    for (int i = 0; i < 2; ++i) {
      auto r = tx.send(i);
      if (!r.is_sent()) {
        model::check(r.is_closed() && r.value.has_value(), "a failed send hands the value back");
        back.push_back(*r.value);
      }
    }
  });
  model::thread closer([tx = tx]() mutable { tx.close(); });
  std::vector<int> got;
  spindle::sync_wait(drain(rx, got));
  sender.join();
  closer.join();
  expect_each_of_once({got, back}, {0, 1});
}

auto fill(spindle::sender<int> tx, std::vector<int>& back) -> spindle::task<void> {
  for (int i = 0; i < 2; ++i) {
    auto r = co_await tx.async_send(i);
    if (!r.is_sent()) {
      model::check(r.is_closed() && r.value.has_value(), "a failed send hands the value back");
      back.push_back(*r.value);
    }
  }
}

/// A coroutine sends two values into a channel that a thread drains while another closes.
void async_send_races_recv_and_close(std::size_t capacity) {
  auto [tx, rx] = spindle::bounded<int>(capacity);
  std::vector<int> got;
  model::thread receiver([rx = rx, &got]() mutable {
    while (auto v = rx.recv()) {
      got.push_back(*v);
    }
  });
  model::thread closer([rx = rx]() mutable { rx.close(); });
  std::vector<int> back;
  spindle::sync_wait(fill(tx, back));
  tx.close();
  receiver.join();
  closer.join();
  expect_each_of_once({got, back}, {0, 1});
}

auto select_two(spindle::receiver<int> a, spindle::receiver<int> b, std::vector<int>& got)
    -> spindle::task<void> {
  for (int round = 0; round < 2; ++round) {
    int completed = 0;
    auto take = [&](std::optional<int> v) {
      model::check(v.has_value(), "recv reported closed on an open channel");
      got.push_back(*v);
      ++completed;
    };
    co_await spindle::async_select(spindle::on_recv(a, take), spindle::on_recv(b, take));
    model::check(completed == 1, "an async_select completes exactly one case");
  }
}

/// A coroutine selects over a rendezvous and a bounded(1) channel whose senders block.
void async_select_with_rendezvous() {
  auto [tx_a, rx_a] = spindle::bounded<int>(0);
  auto [tx_b, rx_b] = spindle::bounded<int>(1);
  model::thread sa([tx = tx_a]() mutable { model::check(tx.send(0).is_sent(), "sent"); });
  model::thread sb([tx = tx_b]() mutable { model::check(tx.send(1).is_sent(), "sent"); });
  std::vector<int> got;
  spindle::sync_wait(select_two(rx_a, rx_b, got));
  sa.join();
  sb.join();
  expect_each_of_once({got}, {0, 1});
}

auto receive_one(spindle::receiver<int> rx, model::plain<int>& got) -> spindle::task<int> {
  auto v = co_await rx.async_recv();
  got.set(v ? *v : -1);
  co_return v ? *v : -1;
}

/// A coroutine spawned on an executor suspends in async_recv; an outside thread sends while
/// the executor shuts down. Shutdown must wait for the bound coroutine (a wake after the
/// workers exited would touch a dead executor) and the coroutine must get the value, once.
void shutdown_waits_for_suspended_coroutine(std::size_t workers) {
  auto [tx, rx] = spindle::bounded<int>(1);
  model::plain<int> got;
  {
    spindle::executor ex(workers);
    // Detached: only shutdown waits for it.
    ex.spawn(receive_one(rx, got)).detach();
    model::thread sender([tx = tx]() mutable { model::check(tx.send(5).is_sent(), "sent"); });
    sender.join();
    // ~executor: shutdown runs while the coroutine may still be suspended.
  }
  // The race detector also checks that the coroutine's write happens-before shutdown's return.
  model::check(got.get() == 5, "the coroutine finished before shutdown returned");
}

auto ping(spindle::sender<int> out, spindle::receiver<int> in, int& sum) -> spindle::task<void> {
  for (int i = 1; i <= 2; ++i) {
    model::check((co_await out.async_send(i)).is_sent(), "sent");
    auto v = co_await in.async_recv();
    model::check(v.has_value(), "pong answered");
    sum += *v;
  }
}

auto pong(spindle::sender<int> out, spindle::receiver<int> in) -> spindle::task<void> {
  while (auto v = co_await in.async_recv()) {
    model::check((co_await out.async_send(*v * 10)).is_sent(), "sent");
  }
}

/// Two coroutines on one executor pass messages (each wakes the other into its worker's next
/// slot); the sum proves each message went through once, and shutdown ends.
void coroutines_ping_pong(std::size_t workers) {
  auto [a_tx, a_rx] = spindle::bounded<int>(1);
  auto [b_tx, b_rx] = spindle::bounded<int>(1);
  int sum = 0;
  {
    spindle::executor ex(workers);
    auto hp = ex.spawn(pong(b_tx, a_rx));
    auto hi = ex.spawn(ping(a_tx, b_rx, sum));
    hi.join();
    a_tx.close();
    hp.join();
  }
  model::check(sum == 30, "every ping was answered once");
}

}  // namespace

TEST(ModelCoro, Example) {
  // A coroutine in sync_wait receives from a bounded(1) channel until a racing close.
  auto body = [] { async_recv_races_send_and_close(1); };
  explore_and_report("async_recv vs send + close, bounded(1), dfs bound 2",
                     model::exhaustive(2, budget(20000)), body);
  spindle_test::explore_tso_then_weak("async_recv vs send + close, bounded(1), pct + buffers",
                                      model::pct_schedules(1501, budget(1500), 3), body);
}

TEST(ModelCoro, AsyncRecvRacesSendAndClose) {
  for (std::size_t cap : {std::size_t{0}, std::size_t{2}}) {
    auto body = [cap] { async_recv_races_send_and_close(cap); };
    explore_and_report(cap == 0 ? "async_recv vs send + close, rendezvous, pct d=3"
                                : "async_recv vs send + close, bounded(2), pct d=3",
                       model::pct_schedules(1502, budget(1500), 3), body);
    spindle_test::explore_tso_then_weak(
        cap == 0 ? "async_recv vs send + close, rendezvous, random + buffers"
                 : "async_recv vs send + close, bounded(2), random + buffers",
        model::random_schedules(1503, budget(1000)), body);
  }
}

TEST(ModelCoro, AsyncSendRacesRecvAndClose) {
  for (std::size_t cap : {std::size_t{0}, std::size_t{1}}) {
    auto body = [cap] { async_send_races_recv_and_close(cap); };
    explore_and_report(cap == 0 ? "async_send vs recv + close, rendezvous, pct d=3"
                                : "async_send vs recv + close, bounded(1), pct d=3",
                       model::pct_schedules(1504, budget(1500), 3), body);
    spindle_test::explore_tso_then_weak(
        cap == 0 ? "async_send vs recv + close, rendezvous, random + buffers"
                 : "async_send vs recv + close, bounded(1), random + buffers",
        model::random_schedules(1505, budget(1000)), body);
  }
}

TEST(ModelCoro, AsyncSelectWithRendezvousCase) {
  auto body = [] { async_select_with_rendezvous(); };
  explore_and_report("async_select rendezvous + bounded(1), dfs bound 2",
                     model::exhaustive(2, budget(20000)), body);
  explore_and_report("async_select rendezvous + bounded(1), pct d=3",
                     model::pct_schedules(1506, budget(1500), 3), body);
}

TEST(ModelCoro, ShutdownWaitsForSuspendedCoroutine) {
  for (std::size_t workers : {std::size_t{1}, std::size_t{2}}) {
    auto body = [workers] { shutdown_waits_for_suspended_coroutine(workers); };
    explore_and_report(workers == 1 ? "shutdown vs suspended coroutine, 1 worker, pct d=3"
                                    : "shutdown vs suspended coroutine, 2 workers, pct d=3",
                       model::pct_schedules(1507, budget(500), 3), body);
    spindle_test::explore_tso_then_weak(
        workers == 1 ? "shutdown vs suspended coroutine, 1 worker, random + buffers"
                     : "shutdown vs suspended coroutine, 2 workers, random + buffers",
        model::random_schedules(1508, budget(300)), body);
  }
}

TEST(ModelCoro, PingPongThroughTheNextSlot) {
  for (std::size_t workers : {std::size_t{1}, std::size_t{2}}) {
    auto body = [workers] { coroutines_ping_pong(workers); };
    explore_and_report(workers == 1 ? "coroutine ping-pong, 1 worker, pct d=3"
                                    : "coroutine ping-pong, 2 workers, pct d=3",
                       model::pct_schedules(1509, budget(300), 3), body);
  }
}

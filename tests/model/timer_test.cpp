// The timer (detail/coro/timer.hpp) under the model checker: its thread is a model thread on
// virtual time, so a deadline an hour away may pass at any scheduling point, and a fire races
// whatever the owner of the entry does at that moment. The owner frees its entry right after
// cancel(), or after the coroutine, awaiter or channel that holds it is done; an entry the
// service still holds when it is destroyed (queued, or its callback running on the timer
// thread) fails the execution, as does an entry left queued when the body returns.
//
// Kinds: cancel against a fire on the service itself; a coroutine's sleep_for with a stop
// token against the fire (resumed exactly once, whichever wins); after and tick dropped
// against the fire; async_recv_for and on_timeout in async_select timing out against a send
// (the value is received or stays in the channel, once).
#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/detail/coro/timer.hpp>
#include <spindle/detail/sync/deadline.hpp>
#include <spindle/executor.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::expect_each_of_once;
using spindle_test::explore_and_report;
using spindle_test::tso;
using namespace std::chrono_literals;

namespace {

/// Explores `body` with every schedule within two preemptions, PCT and random schedules on
/// store buffers.
void explore_all(char const* name, std::uint64_t n, std::function<void()> const& body) {
  std::string const dfs = std::string(name) + ", dfs bound 2";
  std::string const pct = std::string(name) + ", pct d=3";
  std::string const rnd = std::string(name) + ", random + buffers";
  explore_and_report(dfs.c_str(), model::exhaustive(2, budget(4 * n)), body);
  explore_and_report(pct.c_str(), model::pct_schedules(3901, budget(n), 3), body);
  spindle_test::explore_tso_then_weak(rnd.c_str(), model::random_schedules(3902, budget(n)), body);
}

/// The owner of an entry: freed right after cancel() returns.
struct owner {
  spindle::detail::timer_entry entry;
  model::plain<int> alive{1};
  model::plain<int> fired{0};
};

void owner_fire(spindle::detail::timer_entry* e) noexcept {
  auto* o = static_cast<owner*>(e->context);
  model::check(o->alive.get() == 1, "a callback runs after cancel() returned");
  o->fired.set(1);
}

/// An entry due in an hour (virtual time may let it pass at once) is cancelled from another
/// thread, whose owner then frees it. cancel() returning true means it never fires; false,
/// that its callback has returned (the owner sees its write).
void cancel_races_fire() {
  auto* o = new owner;
  o->entry.when = spindle::detail::deadline_after(1h);
  o->entry.fire = &owner_fire;
  o->entry.context = o;
  spindle::detail::timer_service::instance().add(o->entry);
  model::thread canceller([o] {
    bool const removed = spindle::detail::timer_service::instance().cancel(o->entry);
    model::check(o->fired.get() == (removed ? 0 : 1),
                 "cancel() reports removal exactly when the callback did not run, and "
                 "returns only after a running callback");
    o->alive.set(0);
    delete o;
  });
  canceller.join();
}

auto sleeper(std::stop_token stop, model::plain<int>& resumed, model::plain<int>& slept)
    -> spindle::task<void> {
  bool const full = co_await spindle::sleep_for(1h, std::move(stop));
  resumed.set(resumed.get() + 1);
  slept.set(full ? 1 : 0);
}

/// A coroutine sleeps an hour with a stop token; a task on the same worker requests stop
/// while the timer may fire (the stop callback runs on the requesting thread, which is the
/// worker that resumes the coroutine: std::stop_callback's own wait is outside the model).
/// The coroutine resumes exactly once; the sleep's result says which side won.
void stoppable_sleep_races_fire() {
  model::plain<int> resumed;
  model::plain<int> slept;
  std::stop_source source;
  {
    spindle::executor ex(1);
    auto h = ex.spawn(sleeper(source.get_token(), resumed, slept));
    auto s = ex.spawn([&source] { source.request_stop(); });
    s.join();
    h.join();
  }
  model::check(resumed.get() == 1, "the sleeping coroutine resumes exactly once");
}

/// A coroutine sleeps without a stop token: only the fire resumes it.
void plain_sleep_fires() {
  model::plain<int> resumed;
  model::plain<int> slept;
  spindle::sync_wait(sleeper(std::stop_token{}, resumed, slept));
  model::check(resumed.get() == 1 && slept.get() == 1, "the sleep ends by its deadline, once");
}

/// after(1h)'s receiver is looked at and dropped on another thread while the timer may fire
/// (try_send into the channel): the drop cancels the timer and frees the record.
void after_dropped_races_fire() {
  auto rx = spindle::after(1h);
  model::thread dropper([rx = std::move(rx)]() mutable {
    auto const r = rx.try_recv();
    static_cast<void>(r);
    auto const gone = std::move(rx);
  });
  dropper.join();
}

/// after(1h) delivers one time point, then reports closed; the receiver is dropped then.
void after_delivers_once() {
  auto rx = spindle::after(1h);
  model::thread receiver([rx = std::move(rx)]() mutable {
    model::check(rx.recv().has_value(), "after delivers a time point");
    model::check(!rx.recv().has_value(), "after reports closed after its one time point");
  });
  receiver.join();
}

/// tick(1h): one tick is received, then the receiver is dropped while the ticker queues its
/// entry again and may fire again.
void tick_dropped_races_refire() {
  auto rx = spindle::tick(1h);
  model::thread receiver([rx = std::move(rx)]() mutable {
    model::check(rx.recv().has_value(), "tick delivers a time point");
    auto const gone = std::move(rx);
  });
  receiver.join();
}

auto recv_for(spindle::receiver<int> rx, std::vector<int>& got) -> spindle::task<void> {
  auto r = co_await rx.async_recv_for(1h);
  if (r.is_received()) {
    got.push_back(*r.value);
  } else {
    model::check(r.is_timed_out(), "async_recv_for on an open channel: received or timed out");
  }
}

/// A coroutine in sync_wait receives with a timeout of an hour while a thread sends one value:
/// the value is received by it, or it times out and the value stays in the channel.
void async_recv_for_races_send() {
  auto [tx, rx] = spindle::bounded<int>(1);
  model::thread sender([tx = tx]() mutable { model::check(tx.send(3).is_sent(), "sent"); });
  std::vector<int> got;
  spindle::sync_wait(recv_for(rx, got));
  sender.join();
  std::vector<int> left;
  while (auto v = rx.try_recv().value) {
    left.push_back(*v);
  }
  expect_each_of_once({got, left}, {3});
}

auto select_or_timeout(spindle::receiver<int> rx, std::vector<int>& got, int& timeouts)
    -> spindle::task<void> {
  co_await spindle::async_select(
      spindle::on_recv(rx,
                       [&got](std::optional<int> v) {
                         model::check(v.has_value(), "recv reported closed on an open channel");
                         got.push_back(*v);
                       }),
      spindle::on_timeout(1h, [&timeouts] { ++timeouts; }));
}

/// As async_recv_for_races_send, through on_timeout in async_select.
void async_select_timeout_races_send() {
  auto [tx, rx] = spindle::bounded<int>(1);
  model::thread sender([tx = tx]() mutable { model::check(tx.send(4).is_sent(), "sent"); });
  std::vector<int> got;
  int timeouts = 0;
  spindle::sync_wait(select_or_timeout(rx, got, timeouts));
  sender.join();
  model::check(timeouts + static_cast<int>(got.size()) == 1, "exactly one case is chosen");
  std::vector<int> left;
  while (auto v = rx.try_recv().value) {
    left.push_back(*v);
  }
  expect_each_of_once({got, left}, {4});
}

}  // namespace

TEST(ModelTimer, CancelRacesFire) {
  explore_all("timer cancel vs fire", 400, [] { cancel_races_fire(); });
}

TEST(ModelTimer, StoppableSleepRacesFire) {
  explore_all("sleep_for(stop) vs fire", 150, [] { stoppable_sleep_races_fire(); });
}

TEST(ModelTimer, SleepFires) {
  explore_all("sleep_for fires", 100, [] { plain_sleep_fires(); });
}

TEST(ModelTimer, AfterDroppedRacesFire) {
  explore_all("after dropped vs fire", 300, [] { after_dropped_races_fire(); });
  explore_all("after delivers once", 100, [] { after_delivers_once(); });
}

TEST(ModelTimer, TickDroppedRacesRefire) {
  explore_all("tick dropped vs refire", 200, [] { tick_dropped_races_refire(); });
}

TEST(ModelTimer, AsyncRecvForRacesSend) {
  explore_all("async_recv_for vs send", 200, [] { async_recv_for_races_send(); });
}

TEST(ModelTimer, AsyncSelectTimeoutRacesSend) {
  explore_all("async_select on_timeout vs send", 200, [] { async_select_timeout_races_send(); });
}

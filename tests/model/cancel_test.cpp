// Cancellation that flows into a suspended coroutine (detail/coro/cancel.hpp) and the children
// of when_all / when_any (detail/coro/group.hpp) under the model checker, on the real code.
// What each execution checks:
//   - no lost cancellation: a coroutine whose cancellation was requested while it waits with
//     nothing else to wake it ends (a request that misses the armed hook, or a hook armed after
//     the request, leaves it asleep for ever: the checker reports the deadlock);
//   - exactly once: the coroutine is resumed once per wait (a second resume runs a finished
//     frame), and a value sent to a coroutine that is cancelled is received or stays in the
//     channel, once;
//   - a ready value wins: a coroutine never reports cancellation for a wait whose value it took;
//   - the group: the parent of when_all resumes once, after every child has stored its outcome.
// Unlike std::stop_callback, the slot's protocol is all model atomics, so the request can come
// from another model thread. The seeded bugs are mutants of the real headers
// (tools/mutate/mutants.txt, `cancel-*`) that these tests kill.
#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/detail/coro/cancel.hpp>
#include <spindle/task.hpp>
#include <spindle/when.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <coroutine>
#include <stdexcept>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::explore_three;

namespace {

using namespace std::chrono_literals;

/// `co_await use_slot{&s}`: gives the calling coroutine (and the tasks it awaits) the slot `s`,
/// as ex.spawn gives a root its own; sync_wait's root has none.
struct use_slot {
  spindle::detail::cancel_slot* slot;
  [[nodiscard]] auto await_ready() const noexcept -> bool { return false; }
  template <class Promise>
  auto await_suspend(std::coroutine_handle<Promise> h) const noexcept -> bool {
    h.promise().cancel = slot;
    return false;
  }
  void await_resume() const noexcept {}
};

/// Outcome codes a coroutine writes once.
constexpr int got_value = 1;
constexpr int got_cancelled = 2;

auto receive_or_cancel(spindle::detail::cancel_slot* slot, spindle::receiver<int> rx,
                       model::plain<int>* outcome, model::plain<int>* value)
    -> spindle::task<void> {
  co_await use_slot{slot};
  try {
    auto v = co_await rx.async_recv();
    value->set(v ? *v : -1);
    outcome->set(outcome->get() * 10 + got_value);
  } catch (spindle::task_cancelled const&) {
    outcome->set(outcome->get() * 10 + got_cancelled);
  }
}

/// A coroutine waits in async_recv; one thread sends a value, another requests cancellation.
/// The coroutine ends once, with the value or cancelled; a value it did not take is still in
/// the channel.
void recv_races_send_and_cancel() {
  spindle::detail::cancel_slot slot;
  auto [tx, rx] = spindle::bounded<int>(1);
  model::thread sender([tx = tx]() mutable { model::check(tx.send(7).is_sent(), "sent"); });
  model::thread canceller([&slot] { static_cast<void>(slot.request()); });
  model::plain<int> outcome;
  model::plain<int> value;
  spindle::sync_wait(receive_or_cancel(&slot, rx, &outcome, &value));
  sender.join();
  canceller.join();
  if (outcome.get() == got_value) {
    model::check(value.get() == 7, "the received value is the one sent");
    model::check(!rx.try_recv().value.has_value(), "a received value is not received again");
  } else {
    model::check(outcome.get() == got_cancelled, "the coroutine ends exactly once");
    model::check(rx.try_recv().value == 7, "a value the cancelled coroutine did not take stays");
  }
}

/// Nothing but the request can end the wait: a lost request is a deadlock.
void cancel_alone_ends_the_wait() {
  spindle::detail::cancel_slot slot;
  auto [tx, rx] = spindle::bounded<int>(1);
  model::thread canceller(
      [&slot] { model::check(slot.request(), "the first request of an open slot is accepted"); });
  model::plain<int> outcome;
  model::plain<int> value;
  spindle::sync_wait(receive_or_cancel(&slot, rx, &outcome, &value));
  canceller.join();
  model::check(outcome.get() == got_cancelled, "the wait ends with task_cancelled, once");
}

auto sleep_or_cancel(spindle::detail::cancel_slot* slot, model::plain<int>* outcome)
    -> spindle::task<void> {
  co_await use_slot{slot};
  try {
    co_await spindle::sleep_for(1h);
    outcome->set(outcome->get() * 10 + got_value);
  } catch (spindle::task_cancelled const&) {
    outcome->set(outcome->get() * 10 + got_cancelled);
  }
}

/// A sleep that the timer may end (the checker lets its hour pass) races a request from another
/// thread: the coroutine resumes once, the timer entry is gone either way.
void sleep_races_cancel() {
  spindle::detail::cancel_slot slot;
  model::thread canceller([&slot] { static_cast<void>(slot.request()); });
  model::plain<int> outcome;
  spindle::sync_wait(sleep_or_cancel(&slot, &outcome));
  canceller.join();
  model::check(outcome.get() == got_value || outcome.get() == got_cancelled,
               "the sleeping coroutine resumes exactly once");
}

auto recv_child(spindle::receiver<int> rx, model::plain<int>* seen) -> spindle::task<int> {
  auto v = co_await rx.async_recv();
  seen->set(v ? *v : -1);
  co_return v ? *v : -1;
}

auto failing_child() -> spindle::task<int> {
  co_await std::suspend_never{};
  throw std::runtime_error("child failed");
}

auto run_when_all(spindle::receiver<int> rx, model::plain<int>* seen, model::plain<int>* result)
    -> spindle::task<void> {
  try {
    auto r = co_await spindle::when_all(recv_child(rx, seen), failing_child());
    static_cast<void>(r);
    result->set(1);
  } catch (std::runtime_error const&) {
    result->set(2);
  }
}

/// when_all inside sync_wait: one child waits in async_recv while a thread sends, the other
/// fails at once and cancels it. The error is rethrown once both ended; the sent value was
/// taken by the child or is still in the channel.
void when_all_error_cancels_a_waiting_child() {
  auto [tx, rx] = spindle::bounded<int>(1);
  model::thread sender([tx = tx]() mutable { model::check(tx.send(5).is_sent(), "sent"); });
  model::plain<int> seen;
  model::plain<int> result;
  spindle::sync_wait(run_when_all(rx, &seen, &result));
  sender.join();
  model::check(result.get() == 2, "when_all rethrows the child's error, once");
  bool const taken = seen.get() == 5;
  model::check(taken != rx.try_recv().value.has_value(),
               "the value is taken by the child or stays");
}

auto run_when_any(spindle::receiver<int> a, spindle::receiver<int> b, model::plain<int>* result)
    -> spindle::task<void> {
  model::plain<int> seen_a;
  model::plain<int> seen_b;
  auto r = co_await spindle::when_any(recv_child(a, &seen_a), recv_child(b, &seen_b));
  result->set(static_cast<int>(r.index()) + 1);
}

/// when_any over two waiting children, fed by two threads: the first to receive wins, the other
/// is cancelled (or receives too, if its value came first); the parent resumes once.
void when_any_two_senders() {
  auto [ta, ra] = spindle::bounded<int>(1);
  auto [tb, rb] = spindle::bounded<int>(1);
  model::thread sa([tx = ta]() mutable { model::check(tx.send(1).is_sent(), "sent"); });
  model::thread sb([tx = tb]() mutable { model::check(tx.send(2).is_sent(), "sent"); });
  model::plain<int> result;
  spindle::sync_wait(run_when_any(ra, rb, &result));
  sa.join();
  sb.join();
  model::check(result.get() == 1 || result.get() == 2, "when_any ends once, with a winner");
}

}  // namespace

TEST(ModelCancel, RecvRacesSendAndCancel) {
  explore_three("cancel: async_recv vs send vs request", 101, 2000, recv_races_send_and_cancel);
  explore_and_report("cancel: async_recv vs send vs request, dfs bound 2",
                     model::exhaustive(2, budget(20000)), recv_races_send_and_cancel);
}

TEST(ModelCancel, RequestAloneEndsTheWait) {
  explore_three("cancel: the request alone ends async_recv", 111, 2000, cancel_alone_ends_the_wait);
  explore_and_report("cancel: request alone, dfs bound 2", model::exhaustive(2, budget(20000)),
                     cancel_alone_ends_the_wait);
}

TEST(ModelCancel, SleepRacesCancel) {
  explore_three("cancel: sleep_for vs timer vs request", 121, 1500, sleep_races_cancel);
}

TEST(ModelCancel, WhenAllErrorCancelsAWaitingChild) {
  explore_three("when_all: error cancels a waiting child", 131, 1500,
                when_all_error_cancels_a_waiting_child);
}

TEST(ModelCancel, WhenAnyTwoSenders) {
  explore_three("when_any: two waiting children", 141, 1500, when_any_two_senders);
}

// spindle::broadcast (broadcast.hpp, detail/broadcast/) under the model checker, on the real
// code. What each execution checks:
//   - no torn read: the payload's copy reads, and its destructor and constructor write, a word
//     the race detector sees, so a receiver copying a slot while the sender overwrites it (a
//     slot lock that does not exclude, or does not publish) is a data race;
//   - nothing lost silently, nothing twice: each receiver's received messages plus the counts
//     its lagged results report equal the messages sent, received in order;
//   - no lost wake-up: a receiver asleep while a message or the close is there for it is a
//     deadlock the checker reports;
//   - every value destroyed exactly once (the payload's live count returns to zero).
// Timed waits use a deadline real time never reaches: under the checker a timeout happens only
// when the scheduler chooses it. The seeded bugs of this protocol are mutants of the real code
// (tools/mutate/mutants.txt, `broadcast-*`) that these tests kill.
#include <spindle/broadcast.hpp>
#include <spindle/channel.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

#include "model/broadcast_support.hpp"
#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::bc_payload;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::explore_three;

namespace {

constexpr auto long_wait = std::chrono::hours(1);

/// One receiver's account: the position it expects next, checked against every result.
struct account {
  int next = 0;
  bool closed = false;

  /// Folds one result in; ids are positions (the sender sends 0, 1, 2, ...).
  void take(spindle::broadcast_recv_result<bc_payload> const& r) {
    switch (r.status) {
      case spindle::broadcast_recv_status::received:
        model::check(r.value->id() == next, "a message out of order, twice or skipped");
        ++next;
        break;
      case spindle::broadcast_recv_status::lagged:
        model::check(r.missed > 0, "a lag of zero messages");
        next += static_cast<int>(r.missed);
        break;
      case spindle::broadcast_recv_status::closed:
        closed = true;
        break;
      default:
        break;
    }
  }

  /// Reads to the close (the broadcast must be closed).
  void drain(spindle::broadcast_receiver<bc_payload>& rx) {
    while (!closed) {
      take(rx.recv());
    }
  }
};

/// Capacity 1: the sender overwrites the one slot while a receiver on another thread copies
/// it. Every message is received or counted as missed, in order; a copy overlapping the
/// overwrite is a data race.
void overwrite_body() {
  auto const live = bc_payload::live().load();
  {
    auto [tx, rx] = spindle::broadcast<bc_payload>(1);
    account acc;
    model::thread reader([&acc, r = &rx] { acc.drain(*r); });
    for (int i = 0; i < 3; ++i) {
      model::check(tx.send(bc_payload(i)).is_sent(), "a send with a receiver failed");
    }
    { auto gone = std::move(tx); }
    reader.join();
    model::check(acc.next == 3, "a message was neither received nor reported missed");
  }
  model::check(bc_payload::live().load() == live, "a value was leaked or destroyed twice");
}

/// Capacity 2, two receivers on two threads, one of them reading with a deadline the checker
/// may let pass, and a third message that laps a receiver that has not started: lag counts are
/// exact whatever the interleaving.
void lag_body() {
  auto const live = bc_payload::live().load();
  {
    auto [tx, rx] = spindle::broadcast<bc_payload>(2);
    auto rx2 = rx;
    account a;
    account b;
    model::thread one([&a, r = &rx] { a.drain(*r); });
    model::thread two([&b, r = &rx2] {
      auto first = r->recv_for(long_wait);
      b.take(first);
      b.drain(*r);
    });
    for (int i = 0; i < 3; ++i) {
      static_cast<void>(tx.send(bc_payload(i)));
    }
    tx.close();
    one.join();
    two.join();
    model::check(a.next == 3 && b.next == 3, "a message was neither received nor missed");
  }
  model::check(bc_payload::live().load() == live, "a value was leaked or destroyed twice");
}

/// A receiver blocked in recv() against a send and the close right after it: it gets the
/// message, then closed; never asleep while either is there.
void close_vs_recv_body() {
  auto [tx, rx] = spindle::broadcast<bc_payload>(2);
  account acc;
  model::thread reader([&acc, r = &rx] {
    acc.take(r->recv());
    acc.drain(*r);
  });
  static_cast<void>(tx.send(bc_payload(0)));
  tx.close();
  reader.join();
  model::check(acc.next == 1 && acc.closed, "the message or the close was lost");
}

/// Two receivers wait (a thread and a select over the broadcast and a channel) while the sender
/// sends two messages: neither sleeps past a message. The channel case never fires.
void waiters_body() {
  auto [tx, rx] = spindle::broadcast<bc_payload>(2);
  auto rx2 = rx;
  auto [ctx, crx] = spindle::bounded<int>(1);
  account a;
  account b;
  model::thread plain_wait([&a, r = &rx] {
    a.take(r->recv());
    a.take(r->recv());
  });
  model::thread select_wait([&b, r = &rx2, c = &crx] {
    for (int i = 0; i < 2; ++i) {
      auto const chosen = spindle::select(
          spindle::on_recv(*c, [](std::optional<int>) {}),
          spindle::on_recv(*r, [&b](spindle::broadcast_recv_result<bc_payload> m) { b.take(m); }));
      model::check(chosen == 1, "the idle channel's case fired");
    }
  });
  static_cast<void>(tx.send(bc_payload(0)));
  static_cast<void>(tx.send(bc_payload(1)));
  plain_wait.join();
  select_wait.join();
  model::check(a.next == 2 && b.next == 2, "a waiting receiver missed a message");
}

/// A coroutine (sync_wait on a model thread) suspends in async_recv while the sender sends and
/// closes.
auto drain_async(spindle::broadcast_receiver<bc_payload>& rx, account& acc) -> spindle::task<> {
  while (!acc.closed) {
    auto r = co_await rx.async_recv();
    acc.take(r);
  }
}

void coroutine_body() {
  auto [tx, rx] = spindle::broadcast<bc_payload>(1);
  account acc;
  model::thread reader([&acc, r = &rx] { spindle::sync_wait(drain_async(*r, acc)); });
  static_cast<void>(tx.send(bc_payload(0)));
  static_cast<void>(tx.send(bc_payload(1)));
  tx.close();
  reader.join();
  model::check(acc.next == 2, "a message was neither received nor missed");
}

/// Two senders on two threads and a receiver: messages are numbered in the order the sends
/// took effect; the receiver gets each exactly once or counts it missed.
void two_senders_body() {
  auto [tx, rx] = spindle::broadcast<bc_payload>(1);
  auto tx2 = tx;
  spindle::detail::atomic<int> sent{0};
  model::thread other([&sent, s = std::move(tx2)]() mutable {
    if (s.send(bc_payload(7)).is_sent()) {
      sent.fetch_add(1, std::memory_order_relaxed);
    }
  });
  if (tx.send(bc_payload(8)).is_sent()) {
    sent.fetch_add(1, std::memory_order_relaxed);
  }
  other.join();
  { auto gone = std::move(tx); }
  int got = 0;
  for (;;) {
    auto r = rx.recv();
    if (r.is_closed()) {
      break;
    }
    got += r.is_lagged() ? static_cast<int>(r.missed) : 1;
  }
  model::check(got == sent.load(std::memory_order_relaxed), "a message was lost or doubled");
}

}  // namespace

TEST(ModelBroadcast, SenderOverwritesASlotAReceiverReads) {
  explore_three("broadcast(1): overwrite while copying", 81, 2000, overwrite_body);
  explore_and_report("broadcast(1): overwrite, dfs bound 2", model::exhaustive(2, budget(20000)),
                     overwrite_body);
}

TEST(ModelBroadcast, LagCountsAreExact) {
  explore_three("broadcast(2): two receivers lag", 91, 2000, lag_body);
}

TEST(ModelBroadcast, CloseAgainstABlockedRecv) {
  explore_three("broadcast: recv vs send and close", 101, 2000, close_vs_recv_body);
  explore_and_report("broadcast: recv vs close, dfs bound 2", model::exhaustive(2, budget(20000)),
                     close_vs_recv_body);
}

TEST(ModelBroadcast, WaitingReceiversNeverSleepPastAMessage) {
  explore_three("broadcast: thread and select waiters", 111, 1500, waiters_body);
}

TEST(ModelBroadcast, CoroutineReceiver) {
  explore_three("broadcast: async_recv vs send and close", 121, 1500, coroutine_body);
}

TEST(ModelBroadcast, TwoSenders) {
  explore_three("broadcast(1): two senders", 131, 1500, two_senders_body);
}

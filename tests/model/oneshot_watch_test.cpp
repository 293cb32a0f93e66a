// spindle::oneshot and spindle::watch under the model checker, on the real code. What each
// execution checks:
//   - exactly once: a oneshot value is received once, handed back once, or destroyed once with
//     the receiver (a counting type finds a leak or a double destroy after every schedule);
//   - publication: the sender writes a plain payload before send(); a receive that returns the
//     value without seeing the payload is a data race the checker's detector reports;
//   - no lost wake-up: a receiver left asleep once the value was sent or the sender is gone is a
//     deadlock the checker reports; so is a watch receiver asleep in changed() while a version
//     newer than the one it saw is there;
//   - watch: a receiver never reads a torn value (the value's two halves are plain words the
//     detector watches, written by the sender under the lock), versions it sees never go back,
//     and once the sender is gone the last value it read is the latest one sent.
// Timed waits use a deadline real time never reaches: under the checker a timeout happens only
// when the scheduler chooses it, anywhere in the wait. The seeded bugs of these protocols are
// mutants of the real code (`oneshot-*`, `watch-*`) that these tests kill.
#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/oneshot.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>
#include <spindle/watch.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <utility>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::explore_three;

namespace {

constexpr auto long_wait = std::chrono::hours(1);

/// Live instances of `counted`. Model threads run one at a time, so a plain std::atomic counts
/// exactly; it is no part of the protocol under test.
std::atomic<int> live{0};

/// A value that counts itself, so that every schedule can check nothing leaked or died twice.
struct counted {
  explicit counted(int v) noexcept : value(v) { live.fetch_add(1, std::memory_order_relaxed); }
  counted(counted&& other) noexcept : value(other.value) {
    live.fetch_add(1, std::memory_order_relaxed);
  }
  counted(counted const&) = delete;
  auto operator=(counted const&) -> counted& = delete;
  auto operator=(counted&&) -> counted& = delete;
  ~counted() { live.fetch_sub(1, std::memory_order_relaxed); }
  int value;
};

// ---------------------------------------------------------------------------------------------
// oneshot

/// A sender thread sends (or, with `send` false, leaves without sending) against a receive with
/// a deadline the checker may let pass at any point. A received value carries the payload; a
/// closed receive means no send; after a timeout the value is still there for try_recv.
void oneshot_send_or_drop(bool send) {
  live.store(0, std::memory_order_relaxed);
  {
    auto pair = spindle::oneshot<counted>();
    auto& rx = pair.second;
    model::plain<int> payload;
    model::thread sender([send, &payload, &pair] {
      auto s = std::move(pair.first);
      if (send) {
        payload.set(7);
        auto r = s.send(counted(7));
        model::check(r.is_sent(), "a send to a waiting receiver failed");
      } else {
        auto gone = std::move(s);
      }
    });
    auto r = rx.recv_for(long_wait);
    if (r.is_received()) {
      model::check(send && r.value->value == 7 && payload.get() == 7,
                   "received a value that was not sent, or without its payload");
    } else if (r.is_closed()) {
      model::check(!send, "closed although a value was sent");
    } else {
      model::check(r.is_timed_out(), "recv_for ended neither received, closed nor timed out");
    }
    sender.join();
    if (r.is_timed_out()) {
      auto again = rx.try_recv();
      model::check(send ? again.is_received() : again.is_closed(),
                   "after the sender finished, try_recv found the wrong outcome");
    }
  }
  model::check(live.load(std::memory_order_relaxed) == 0, "a value leaked or died twice");
}

void oneshot_send_body() {
  oneshot_send_or_drop(true);
}
void oneshot_drop_body() {
  oneshot_send_or_drop(false);
}

/// A blocking receive against a send (or, with `send` false, the sender leaving unsent): it
/// must wake (else a deadlock), with the payload, or see closed.
void oneshot_blocking(bool send) {
  auto pair = spindle::oneshot<int>();
  auto& rx = pair.second;
  model::plain<int> payload;
  model::thread sender([send, &payload, &pair] {
    auto s = std::move(pair.first);
    if (send) {
      payload.set(1);
      model::check(s.send(5).is_sent(), "a send to a waiting receiver failed");
    }
  });
  auto v = rx.recv();
  if (send) {
    model::check(v == 5 && payload.get() == 1, "the receiver missed the value or its payload");
  } else {
    model::check(!v.has_value(), "a value came from a sender that sent none");
  }
  sender.join();
}

void oneshot_blocking_send_body() {
  oneshot_blocking(true);
}
void oneshot_blocking_drop_body() {
  oneshot_blocking(false);
}

/// The receiver leaves (closes, then is destroyed) while the sender sends: the value is handed
/// back, received, or destroyed with the receiver: once.
void oneshot_receiver_leaves_body() {
  live.store(0, std::memory_order_relaxed);
  {
    auto pair = spindle::oneshot<counted>();
    auto& rx = pair.second;
    model::thread sender([&pair] {
      auto s = std::move(pair.first);
      auto r = s.send(counted(1));
      model::check(r.is_sent() || (r.is_closed() && r.value.has_value()),
                   "a failed send must hand the value back");
    });
    rx.close();
    auto r = rx.try_recv();
    model::check(!r.is_empty(), "a closed receiver reported empty: a send may still come");
    { auto gone = std::move(rx); }
    sender.join();
  }
  model::check(live.load(std::memory_order_relaxed) == 0, "a value leaked or died twice");
}

/// The sender waits (blocking) for the receiver to leave while the receiver closes, or is
/// destroyed: the sender must wake (else a deadlock), and its send then fails.
void oneshot_wait_closed(bool drop) {
  auto pair = spindle::oneshot<int>();
  model::thread sender([&pair] {
    auto s = std::move(pair.first);
    s.wait_closed();
    model::check(s.send(1).is_closed(), "a send after the receiver left succeeded");
  });
  if (drop) {
    auto gone = std::move(pair.second);
  } else {
    pair.second.close();
  }
  sender.join();
}

void oneshot_wait_closed_drop_body() {
  oneshot_wait_closed(true);
}
void oneshot_wait_closed_close_body() {
  oneshot_wait_closed(false);
}

/// A select over the oneshot, a channel and a timeout: a sender thread for each. Exactly one
/// case completes; the value not taken stays where it was.
void oneshot_select_body() {
  auto pair = spindle::oneshot<int>();
  auto& rx = pair.second;
  auto [ctx, crx] = spindle::bounded<int>(1);
  auto c = ctx;
  model::thread a([&pair] {
    auto s = std::move(pair.first);
    static_cast<void>(s.send(1));
  });
  model::thread b([&c] { static_cast<void>(c.send(2)); });
  int completed = 0;
  int got = 0;
  auto const i = spindle::select(spindle::on_recv(rx,
                                                  [&](std::optional<int> v) {
                                                    ++completed;
                                                    got = v.value_or(-1);
                                                  }),
                                 spindle::on_recv(crx,
                                                  [&](std::optional<int> v) {
                                                    ++completed;
                                                    got = v.value_or(-1);
                                                  }),
                                 spindle::on_timeout(long_wait, [&] { ++completed; }));
  a.join();
  b.join();
  model::check(completed == 1, "a select must complete exactly one case");
  model::check(i != 0 || got == 1, "the oneshot case got the wrong value");
  model::check(i != 1 || got == 2, "the channel case got the wrong value");
  model::check(i == 0 || rx.try_recv().is_received(), "the oneshot value was lost");
  model::check(i == 1 || crx.try_recv().is_received(), "the channel value was lost");
}

auto await_oneshot(spindle::oneshot_receiver<counted>& rx) -> spindle::task<int> {
  auto r = co_await rx.async_recv_for(long_wait);
  if (r.is_received()) {
    co_return r.value->value;
  }
  co_return r.is_closed() ? -1 : 0;
}

/// A coroutine (sync_wait) waits with a deadline while a thread sends or leaves.
void oneshot_coroutine_body() {
  live.store(0, std::memory_order_relaxed);
  {
    auto pair = spindle::oneshot<counted>();
    auto& rx = pair.second;
    model::plain<int> payload;
    model::thread sender([&payload, &pair] {
      auto s = std::move(pair.first);
      payload.set(3);
      static_cast<void>(s.send(counted(3)));
    });
    int const got = spindle::sync_wait(await_oneshot(rx));
    model::check(got != -1, "closed although a value was sent");
    model::check(got != 3 || payload.get() == 3, "the coroutine received without the payload");
    sender.join();
  }
  model::check(live.load(std::memory_order_relaxed) == 0, "a value leaked or died twice");
}

// ---------------------------------------------------------------------------------------------
// watch

/// A value of two plain words the race detector watches, always written equal: a read outside
/// the lock, or one that sees half of a change, fails.
struct halves {
  explicit halves(int v) noexcept {
    a.set(v);
    b.set(v);
  }
  halves(halves&& other) noexcept {
    a.set(other.a.get());
    b.set(other.b.get());
  }
  halves(halves const&) = delete;
  auto operator=(halves const&) -> halves& = delete;
  auto operator=(halves&&) -> halves& = delete;
  ~halves() = default;

  void set(int v) noexcept {
    a.set(v);
    b.set(v);
  }
  [[nodiscard]] auto read() const -> int {
    int const x = a.get();
    int const y = b.get();
    model::check(x == y, "a receiver read a torn value");
    return x;
  }

  model::plain<int> a;
  model::plain<int> b;
};

/// Reads every version it is woken for until closed; checks the versions never go back and
/// returns the last value read.
auto watch_until_closed(spindle::watch_receiver<halves>& rx) -> int {
  int last = rx.borrow()->read();
  for (;;) {
    auto r = rx.changed();
    if (r.is_closed()) {
      return last;
    }
    model::check(r.is_changed(), "a blocking changed() ended neither changed nor closed");
    int const now = rx.borrow_and_update()->read();
    model::check(now >= last, "a receiver saw the versions go back");
    last = now;
  }
}

/// A sender thread sends 1 (send), then 2 (send_modify), then leaves; the body's receiver waits
/// with blocking changed() until closed. It may skip version 1, never version 2: once closed
/// it has read 2. A receiver asleep past a newer version is a deadlock.
void watch_latest_body() {
  auto pair = spindle::watch(halves(0));
  auto& rx = pair.second;
  model::thread sender([&pair] {
    auto s = std::move(pair.first);
    model::check(s.send(halves(1)).is_sent(), "a send with a receiver failed");
    s.send_modify([](halves& h) { h.set(2); });
  });
  int const last = watch_until_closed(rx);
  model::check(last == 2, "the receiver missed the latest version");
  sender.join();
}

/// A blocking changed() against one send_modify, the sender staying: whichever runs first, the
/// receiver must wake for the new version (nothing else would wake it).
void watch_changed_races_send_body() {
  auto pair = spindle::watch(halves(0));
  auto& rx = pair.second;
  auto& tx = pair.first;
  model::thread sender([&tx] { tx.send_modify([](halves& h) { h.set(1); }); });
  auto r = rx.changed();
  model::check(r.is_changed(), "changed() ended without the new version");
  model::check(rx.borrow()->read() == 1, "changed() returned before the new value was there");
  sender.join();
  model::check(!rx.has_changed(), "changed() did not mark the version seen");
}

/// Two receivers (a copy on another thread and the body's) against a sender thread: each sees
/// the latest version before it sees closed.
void watch_two_receivers_body() {
  auto pair = spindle::watch(halves(0));
  auto& rx = pair.second;
  auto copy = rx;
  model::thread sender([&pair] {
    auto s = std::move(pair.first);
    static_cast<void>(s.send_replace(halves(1)));
    static_cast<void>(s.send(halves(2)));
  });
  model::thread other(
      [&copy] { model::check(watch_until_closed(copy) == 2, "a copy missed the latest version"); });
  model::check(watch_until_closed(rx) == 2, "the receiver missed the latest version");
  sender.join();
  other.join();
}

/// changed_for against one send (the sender stays): the checker may let the deadline pass at
/// any point. Changed: the value is the new one. Timed out: the version is there afterwards.
void watch_timed_body() {
  auto pair = spindle::watch(halves(0));
  auto& rx = pair.second;
  auto& tx = pair.first;
  model::thread sender([&tx] { tx.send_modify([](halves& h) { h.set(1); }); });
  auto r = rx.changed_for(long_wait);
  if (r.is_changed()) {
    model::check(rx.borrow()->read() == 1, "changed() returned before the new value was there");
  } else {
    model::check(r.is_timed_out(), "changed_for ended neither changed nor timed out");
  }
  sender.join();
  model::check(r.is_changed() != rx.has_changed(), "a version was lost or seen twice");
}

/// A select over the watch, a channel and a timeout, senders on two threads.
void watch_select_body() {
  auto pair = spindle::watch(halves(0));
  auto& rx = pair.second;
  auto& tx = pair.first;
  auto [ctx, crx] = spindle::bounded<int>(1);
  auto c = ctx;
  model::thread a([&tx] { tx.send_modify([](halves& h) { h.set(1); }); });
  model::thread b([&c] { static_cast<void>(c.send(2)); });
  int completed = 0;
  auto const i = spindle::select(
      spindle::on_changed(rx,
                          [&](bool changed) {
                            ++completed;
                            model::check(changed, "the watch case saw closed with a sender");
                          }),
      spindle::on_recv(crx,
                       [&](std::optional<int> v) {
                         ++completed;
                         model::check(v == 2, "the channel case got the wrong value");
                       }),
      spindle::on_timeout(long_wait, [&] { ++completed; }));
  a.join();
  b.join();
  model::check(completed == 1, "a select must complete exactly one case");
  model::check((i == 0) != rx.has_changed(), "the watch version was lost or seen twice");
  model::check(i == 1 || crx.try_recv().is_received(), "the channel value was lost");
  if (i == 0) {
    model::check(rx.borrow()->read() == 1, "the watch case fired before the value was there");
  }
}

auto await_watch(spindle::watch_receiver<halves>& rx) -> spindle::task<int> {
  int last = 0;
  for (;;) {
    auto r = co_await rx.async_changed();
    if (!r) {
      co_return last;
    }
    last = rx.borrow()->read();
  }
}

/// A coroutine (sync_wait) waits with async_changed() until closed while a thread sends twice
/// and leaves.
void watch_coroutine_body() {
  auto pair = spindle::watch(halves(0));
  auto& rx = pair.second;
  model::thread sender([&pair] {
    auto s = std::move(pair.first);
    s.send_modify([](halves& h) { h.set(1); });
    s.send_modify([](halves& h) { h.set(2); });
  });
  int const last = spindle::sync_wait(await_watch(rx));
  model::check(last == 2, "the coroutine missed the latest version");
  sender.join();
}

}  // namespace

TEST(ModelOneshot, SendAgainstTimedRecv) {
  explore_three("oneshot: send vs recv_for", 101, 2000, oneshot_send_body);
  explore_and_report("oneshot: send vs recv_for, dfs bound 2", model::exhaustive(2, budget(20000)),
                     oneshot_send_body);
}

TEST(ModelOneshot, DropAgainstTimedRecv) {
  explore_three("oneshot: drop vs recv_for", 111, 2000, oneshot_drop_body);
  explore_and_report("oneshot: drop vs recv_for, dfs bound 2", model::exhaustive(2, budget(20000)),
                     oneshot_drop_body);
}

TEST(ModelOneshot, BlockingRecvWakes) {
  explore_three("oneshot: send vs recv", 121, 2000, oneshot_blocking_send_body);
  explore_three("oneshot: drop vs recv", 125, 2000, oneshot_blocking_drop_body);
}

TEST(ModelOneshot, ReceiverLeavesWhileSending) {
  explore_three("oneshot: send vs close + drop", 131, 2000, oneshot_receiver_leaves_body);
}

TEST(ModelOneshot, SenderWaitsForTheReceiverToLeave) {
  explore_three("oneshot: wait_closed vs drop receiver", 161, 2000, oneshot_wait_closed_drop_body);
  explore_three("oneshot: wait_closed vs close", 171, 2000, oneshot_wait_closed_close_body);
}

TEST(ModelOneshot, SelectWithAChannelAndATimeout) {
  explore_three("oneshot: select with a channel", 141, 1000, oneshot_select_body);
}

TEST(ModelOneshot, CoroutineWaits) {
  explore_three("oneshot: async_recv_for vs send", 151, 1000, oneshot_coroutine_body);
}

TEST(ModelWatch, ReceiverNeverMissesTheLatest) {
  explore_three("watch: send, send_modify, drop vs changed", 201, 2000, watch_latest_body);
  explore_and_report("watch: latest, dfs bound 2", model::exhaustive(2, budget(20000)),
                     watch_latest_body);
}

TEST(ModelWatch, ChangedRacingASendNeverSleepsPastIt) {
  explore_three("watch: changed vs send_modify", 251, 2000, watch_changed_races_send_body);
  explore_and_report("watch: changed vs send_modify, dfs bound 2",
                     model::exhaustive(2, budget(20000)), watch_changed_races_send_body);
}

TEST(ModelWatch, TwoReceivers) {
  explore_three("watch: two receivers", 211, 1000, watch_two_receivers_body);
}

TEST(ModelWatch, ChangedForRacesASend) {
  explore_three("watch: changed_for vs send_modify", 221, 2000, watch_timed_body);
  explore_and_report("watch: changed_for, dfs bound 2", model::exhaustive(2, budget(20000)),
                     watch_timed_body);
}

TEST(ModelWatch, SelectWithAChannelAndATimeout) {
  explore_three("watch: select with a channel", 231, 1000, watch_select_body);
}

TEST(ModelWatch, CoroutineWaits) {
  explore_three("watch: async_changed vs sends", 241, 1000, watch_coroutine_body);
}

// The operation matrix of select and coroutines (tests/support/op_matrix.hpp): every pair of
// the operations below, each against each (itself included), on one shared channel, under the
// model checker, for a rendezvous, a bounded(1) channel that starts empty, a bounded(1)
// channel that starts full, and an unbounded channel. Then a second, smaller matrix: a join
// handle's join, co_await and drop against each other and against the completion of its task.
//
// What each pair proves, besides "no data race, no lost wake-up (deadlock), no livelock":
//   - every value that entered the channel (sent by an operation, by the fixture's feeder, or
//     buffered before the pair started) is received once, handed back once by a send that saw
//     the channel closed, or destroyed once with the last receiver; its payload, written
//     before the send, is visible to whoever receives it (payload_ledger); nothing else comes
//     out;
//   - a select runs exactly one handler and returns that handler's index; its idle case (a
//     channel nobody uses) never completes, and an idle send case's value stays with the
//     caller, untouched; the idle channels hold no trace of a withdrawn registration;
//   - a coroutine runs to its end exactly once, before the wait for it returns, and the
//     executor it ran on shuts down;
//   - a receive sees closed only in a pair that closes the channel for receivers (close, drop
//     of the last sender), a send only in one that closes it for senders (close, drop of the
//     last receiver); the channel is closed at the end exactly in those pairs;
//   - a spawned task completes once, its result reaches join / co_await once or is destroyed
//     once when the handle was dropped, and the executor shuts down.
//
// The fixture of a pair is built from the two names so that both operations can finish
// without anybody else: values buffered in advance (or a feeder thread) for receiving
// operations, room (or a drainer thread) for sending ones, nothing where the pair itself
// closes the channel (there the interesting path is a wait that only the close ends). A
// thread still blocked at the end is therefore a lost wake-up. The coroutine operations are
// spawned on a one-worker executor the pair shares and joined from their operation's thread;
// the pairs with a coroutine run a second time with it in spindle::sync_wait on its
// operation's thread (as tests/model/coro_test.cpp drives them). The join-handle matrix runs
// its tasks on a one-worker executor, where a channel send resumes them.
//
// Not modelled (tests/model/README.md lists them with the matrix): the timed awaitables of
// coroutines (async_recv_for, on_timeout in async_select, sleep_for) wait on the timer thread
// (detail/coro/timer.hpp), a real std::thread on real time that the checker does not schedule;
// stop requests (on_stop, async_recv(stop_token)) go through std::stop_token's own atomics,
// which are not the checker's. A thread select's on_timeout is in the matrix with a deadline an
// hour away (select_recv_timeout): its wait is a timed park, which the checker may end at any
// point (virtual time), so the pairs check that an early end loses nothing; the timeout itself
// never fires, since whether it has passed is read from the real clock.
#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/join_handle.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "model/support.hpp"
#include "support/model_cases.hpp"
#include "support/op_matrix.hpp"

namespace model = spindle::model;
using spindle::send_result;
using spindle_test::operation;
using spindle_test::payload_ledger;

namespace {

/// Where values that nobody took end up: counted per index when destroyed still holding it.
struct discard_log {
  std::array<int, spindle_test::max_index> count{};
};

/// A channel value: a ledger index that whoever ends up with it takes once (a receiver, or a
/// sender that got it back). Destroyed while it still holds its index, it records a discard:
/// the channel dropped it with its last receiver, or a join handle with its task's result.
class item {
 public:
  item(int index, discard_log* log) noexcept : index_(index), log_(log) {}
  item(item&& other) noexcept : index_(std::exchange(other.index_, -1)), log_(other.log_) {}
  auto operator=(item&& other) noexcept -> item& {
    if (this != &other) {
      discard();
      index_ = std::exchange(other.index_, -1);
      log_ = other.log_;
    }
    return *this;
  }
  item(item const&) = delete;
  auto operator=(item const&) -> item& = delete;
  ~item() { discard(); }

  /// The index, leaving the item empty (-1 if it was empty already).
  auto take() noexcept -> int { return std::exchange(index_, -1); }
  [[nodiscard]] auto index() const noexcept -> int { return index_; }

 private:
  void discard() noexcept {
    if (index_ >= 0 && log_ != nullptr) {
      ++log_->count[static_cast<std::size_t>(index_)];
    }
  }

  int index_;
  discard_log* log_;
};

/// Destroys the handle `h` holds now, leaving it moved from.
template <class Handle>
void release(Handle& h) {
  Handle const gone = std::move(h);
}

/// Each of `values` exactly once across `lists` and the discards, and nothing else there.
void expect_exactly(std::vector<std::vector<int>> lists, discard_log const& log,
                    std::vector<int> const& values) {
  std::vector<int> discarded;
  for (std::size_t i = 0; i < log.count.size(); ++i) {
    for (int k = 0; k < log.count[i]; ++k) {
      discarded.push_back(static_cast<int>(i));
    }
  }
  lists.push_back(discarded);
  spindle_test::expect_each_of_once(lists, values);
  std::size_t total = 0;
  for (auto const& l : lists) {
    total += l.size();
  }
  model::check(total == values.size(), "a value that was never sent came out of the channel");
}

// ---------------------------------------------------------------------------------------------
// The select and coroutine matrix.

/// The channel every pair of a suite shares.
enum class flavour : std::uint8_t { rendezvous, bounded1, bounded1_full, unbounded };

/// What an operation does to the channel, which decides what its fixture provides.
enum class role : std::uint8_t { sends, receives, tries, closes, drops_sender, drops_receiver };

auto role_of(std::string_view op) -> role {
  if (op == "send" || op == "select_send" || op == "async_send") {
    return role::sends;
  }
  if (op == "select_recv_default") {
    return role::tries;
  }
  if (op == "close") {
    return role::closes;
  }
  if (op == "drop_sender") {
    return role::drops_sender;
  }
  if (op == "drop_receiver") {
    return role::drops_receiver;
  }
  return role::receives;
}

// Ledger indices: an operation sends its side (0, 1); values buffered in advance or fed by a
// thread from 2; the value a bounded1_full channel starts with, 8; an idle send case's value
// from 40.
constexpr int first_provided = 2;
constexpr int initial_value = 8;
constexpr int first_idle = 40;

/// How the coroutine operations run: in spindle::sync_wait on their operation's thread, or
/// spawned on one one-worker executor that the pair shares, joined by their operation's thread.
enum class driver : std::uint8_t { sync_wait, executor };

auto is_coroutine(std::string_view op) -> bool {
  return op.substr(0, 6) == "async_";
}

template <flavour Fl, driver Dr>
class channel_fixture {
 public:
  static constexpr bool rendezvous = Fl == flavour::rendezvous;
  static constexpr bool unbounded = Fl == flavour::unbounded;
  static constexpr int capacity = rendezvous ? 0 : 1;
  static constexpr int initial = Fl == flavour::bounded1_full ? 1 : 0;

  /// The sync_wait suites run only the pairs with a coroutine: without one, a pair is the
  /// same exploration as in the executor suite of its channel.
  static auto skip(std::string_view a, std::string_view b) -> char const* {
    if (Dr == driver::sync_wait && !is_coroutine(a) && !is_coroutine(b)) {
      return "no coroutine in this pair: the same exploration as the executor suite's";
    }
    return nullptr;
  }

  channel_fixture(std::string_view a, std::string_view b)
      : channel_(make_channel()),
        idle_in_(spindle::bounded<item>(1)),
        idle_out_(spindle::bounded<item>(0)) {
    std::array<role, 2> const roles{role_of(a), role_of(b)};
    auto count = [&roles](role r) {
      return static_cast<int>(roles[0] == r) + static_cast<int>(roles[1] == r);
    };
    int const senders = count(role::sends);
    int const receivers = count(role::receives);
    int const tries = count(role::tries);
    bool const closes = count(role::closes) > 0;
    bool const drops_tx = count(role::drops_sender) > 0;
    bool const drops_rx = count(role::drops_receiver) > 0;
    receivers_may_see_closed_ = closes || drops_tx;
    senders_may_see_closed_ = closes || drops_rx;
    closed_at_end_ = closes || drops_tx || drops_rx;
    if (Dr == driver::executor && (is_coroutine(a) || is_coroutine(b))) {
      ex_.emplace(1);
    }

    auto& tx = channel_.first;
    auto& rx = channel_.second;
    if (initial > 0) {
      put(tx, initial_value);
    }
    // Values the receiving operations (and the tries) may take beyond what the pair sends:
    // buffered in advance where there is room, the rest from a feeder thread. None where the
    // pair closes the channel for receivers: the close is what ends their wait.
    int provide = 0;
    int drain = 0;
    if (!closes && !drops_tx) {
      provide = std::max(0, receivers + tries - senders - initial);
    }
    // Values the sending operations put in beyond what the receivers take and the room left:
    // a drainer thread takes them. None where the pair closes the channel for senders.
    if (!closes && !drops_rx && provide == 0 && !unbounded) {
      drain = std::max(0, initial + senders - receivers - capacity);
    }
    int next = first_provided;
    int room = unbounded ? provide : std::max(0, capacity - initial);
    for (; provide > 0 && room > 0; --provide, --room) {
      put(tx, next++);
    }
    for (int i = 0; i < provide; ++i) {
      fed_.push_back(next++);
    }

    for (std::size_t side = 0; side < 2; ++side) {
      switch (roles[side]) {
        case role::sends:
          expected_.push_back(static_cast<int>(side));
          tx_[side].emplace(tx);
          break;
        case role::closes:
        case role::drops_sender:
          tx_[side].emplace(tx);
          break;
        case role::receives:
        case role::tries:
        case role::drops_receiver:
          rx_[side].emplace(rx);
          break;
      }
    }
    if (!fed_.empty()) {
      feeder_.emplace([this, h = tx]() mutable {
        for (int v : fed_) {
          auto r = h.send(item(ledger_.make(v), &log_));
          if (!r.is_sent()) {
            feeder_back_.push_back(r.value->take());
          }
        }
      });
    }
    if (drain > 0) {
      drainer_.emplace([this, h = rx, drain]() mutable {
        for (int k = 0; k < drain; ++k) {
          auto v = h.recv();
          if (!v) {
            break;
          }
          ledger_.take(drained_, v->take());
        }
      });
    }
    // The fixture's own handles keep the channel open, except the side whose last handle a
    // drop operation of the pair must be.
    if (drops_tx) {
      release(channel_.first);
      has_tx_ = false;
    }
    if (drops_rx) {
      release(channel_.second);
      has_rx_ = false;
    }
  }

  /// After both operations: the channel is closed exactly when the pair closes it; helpers
  /// end; what is left is drained; every value is accounted for exactly once; the idle
  /// channels are untouched.
  void finish() {
    // Shutdown returns: the coroutines' tasks are done and the worker has exited.
    ex_.reset();
    if (has_tx_) {
      model::check(channel_.first.is_closed() == closed_at_end_,
                   "the channel is closed exactly when the pair closed it");
      channel_.first.close();
    } else if (has_rx_) {
      model::check(channel_.second.is_closed() == closed_at_end_,
                   "the channel is closed exactly when the pair closed it");
      channel_.second.close();
    }
    if (feeder_) {
      feeder_->join();
    }
    if (drainer_) {
      drainer_->join();
    }
    if (has_rx_) {
      while (auto v = channel_.second.recv()) {
        ledger_.take(left_, v->take());
      }
    }
    if (has_tx_) {
      release(channel_.first);
    }
    if (has_rx_) {
      release(channel_.second);
    }
    for (auto& h : tx_) {
      h.reset();
    }
    for (auto& h : rx_) {
      h.reset();
    }
    model::check(idle_in_.second.try_recv().is_empty() && !idle_in_.second.is_closed(),
                 "a receive case left a trace on its idle channel");
    model::check(idle_out_.second.try_recv().is_empty() && !idle_out_.second.is_closed(),
                 "a send case left a trace on its idle channel");
    std::vector<int> values = expected_;
    values.insert(values.end(), fed_.begin(), fed_.end());
    values.insert(values.end(), buffered_.begin(), buffered_.end());
    expect_exactly({got_[0], got_[1], back_[0], back_[1], drained_, feeder_back_, left_}, log_,
                   values);
  }

  // The operations. Each takes its own copy of the handle it needs from the fixture; the copy
  // is gone when the operation returns.

  /// send: sent, or closed with the value handed back.
  void send(int side) {
    auto h = take_tx(side);
    settle_send(side, h.send(make(side)));
  }

  /// recv: a value, or closed.
  void recv(int side) {
    auto h = take_rx(side);
    settle_recv(side, h.recv());
  }

  /// A thread select: a receive case on the channel and one on an idle channel; exactly one
  /// handler, the channel's.
  void select_recv(int side) {
    auto h = take_rx(side);
    int handled = 0;
    auto const i = spindle::select(spindle::on_recv(idle_in_.second, never_received),
                                   spindle::on_recv(h, [&](std::optional<item> v) {
                                     ++handled;
                                     settle_recv(side, std::move(v));
                                   }));
    model::check(i == 1 && handled == 1, "a select runs exactly one handler, its chosen case's");
  }

  /// A thread select: a send case on the channel and one on an idle rendezvous; the idle
  /// case's value stays with the caller, the sent one is moved from.
  void select_send(int side) {
    auto h = take_tx(side);
    item v(make(side));
    item spare(first_idle + side, &log_);
    int handled = 0;
    auto const i = spindle::select(spindle::on_send(idle_out_.first, spare, never_sent),
                                   spindle::on_send(h, v, [&](send_result<item> r) {
                                     ++handled;
                                     settle_send(side, std::move(r));
                                   }));
    model::check(i == 1 && handled == 1, "a select runs exactly one handler, its chosen case's");
    model::check(spare.take() == first_idle + side, "a case not chosen left its value untouched");
    model::check(v.index() == -1, "the chosen send case took its value");
  }

  /// A thread select with a receive case and on_default: never blocks; one handler.
  void select_recv_default(int side) {
    auto h = take_rx(side);
    int handled = 0;
    auto const i = spindle::select(spindle::on_recv(h,
                                                    [&](std::optional<item> v) {
                                                      ++handled;
                                                      settle_recv(side, std::move(v));
                                                    }),
                                   spindle::on_default([&] { ++handled; }));
    model::check(i < 2 && handled == 1, "a select runs exactly one handler");
  }

  /// A thread select with a receive case and a timeout an hour away: the checker may end its
  /// timed park early (virtual time), which must lose nothing; the timeout never fires.
  void select_recv_timeout(int side) {
    auto h = take_rx(side);
    int handled = 0;
    auto const i = spindle::select(spindle::on_recv(h,
                                                    [&](std::optional<item> v) {
                                                      ++handled;
                                                      settle_recv(side, std::move(v));
                                                    }),
                                   spindle::on_timeout(std::chrono::hours(1), [] {
                                     model::check(false, "an hour-long timeout fired");
                                   }));
    model::check(i == 0 && handled == 1, "a select runs exactly one handler, its chosen case's");
  }

  /// A coroutine: co_await async_recv.
  void async_recv(int side) {
    auto h = take_rx(side);
    drive(side, async_recv_task(*this, side, h));
  }

  /// A coroutine: co_await async_send.
  void async_send(int side) {
    auto h = take_tx(side);
    drive(side, async_send_task(*this, side, h));
  }

  /// A coroutine: co_await async_select over the channel and an idle channel.
  void async_select_recv(int side) {
    auto h = take_rx(side);
    drive(side, async_select_task(*this, side, h));
  }

  /// close, through a sender.
  void close(int side) { take_tx(side).close(); }

  /// Destroys a sender: the last one unless the other operation holds one too.
  void drop_sender(int side) { tx_[static_cast<std::size_t>(side)].reset(); }

  /// Destroys a receiver: the last one unless the other operation holds one too.
  void drop_receiver(int side) { rx_[static_cast<std::size_t>(side)].reset(); }

 private:
  static auto make_channel() -> std::pair<spindle::sender<item>, spindle::receiver<item>> {
    if constexpr (unbounded) {
      return spindle::unbounded<item>();
    } else {
      return spindle::bounded<item>(static_cast<std::size_t>(capacity));
    }
  }

  static void never_received(std::optional<item> /*unused*/) {
    model::check(false, "a receive case on an idle channel completed");
  }
  static void never_sent(send_result<item> /*unused*/) {
    model::check(false, "a send case on an idle channel completed");
  }

  static auto async_recv_task(channel_fixture& f, int side, spindle::receiver<item>& rx)
      -> spindle::task<void> {
    f.settle_recv(side, co_await rx.async_recv());
    f.ran(side);
  }

  static auto async_send_task(channel_fixture& f, int side, spindle::sender<item>& tx)
      -> spindle::task<void> {
    f.settle_send(side, co_await tx.async_send(f.make(side)));
    f.ran(side);
  }

  static auto async_select_task(channel_fixture& f, int side, spindle::receiver<item>& rx)
      -> spindle::task<void> {
    int handled = 0;
    auto const i = co_await spindle::async_select(
        spindle::on_recv(f.idle_in_.second, never_received),
        spindle::on_recv(rx, [&f, &handled, side](std::optional<item> v) {
          ++handled;
          f.settle_recv(side, std::move(v));
        }));
    model::check(i == 1 && handled == 1,
                 "an async_select runs exactly one handler, its chosen case's");
    f.ran(side);
  }

  /// Runs a coroutine operation to its end: in sync_wait on this thread, or spawned on the
  /// fixture's executor and joined from this thread. Either way it ran exactly once.
  void drive(int side, spindle::task<void> t) {
    if constexpr (Dr == driver::sync_wait) {
      spindle::sync_wait(std::move(t));
    } else {
      ex_->spawn(std::move(t)).join();
    }
    model::check(coro_runs_[static_cast<std::size_t>(side)].get() == 1,
                 "the coroutine ran to its end exactly once before its wait returned");
  }

  void ran(int side) {
    auto& runs = coro_runs_[static_cast<std::size_t>(side)];
    runs.set(runs.get() + 1);
  }

  void put(spindle::sender<item>& tx, int index) {
    model::check(tx.try_send(item(ledger_.make(index), &log_)).is_sent(),
                 "a value buffered in advance fits");
    buffered_.push_back(index);
  }

  auto make(int side) -> item { return item(ledger_.make(side), &log_); }

  auto take_tx(int side) -> spindle::sender<item> {
    auto& h = tx_[static_cast<std::size_t>(side)];
    spindle::sender<item> out = std::move(*h);
    h.reset();
    return out;
  }

  auto take_rx(int side) -> spindle::receiver<item> {
    auto& h = rx_[static_cast<std::size_t>(side)];
    spindle::receiver<item> out = std::move(*h);
    h.reset();
    return out;
  }

  void settle_recv(int side, std::optional<item> v) {
    if (v) {
      ledger_.take(got_[static_cast<std::size_t>(side)], v->take());
      return;
    }
    model::check(receivers_may_see_closed_,
                 "a receive saw closed in a pair that does not close the channel for receivers");
  }

  void settle_send(int side, send_result<item> r) {
    if (r.is_sent()) {
      model::check(!r.value.has_value(), "a sent value is not handed back");
      return;
    }
    model::check(r.is_closed() && r.value.has_value(), "a failed send hands its value back");
    model::check(senders_may_see_closed_,
                 "a send saw closed in a pair that does not close the channel for senders");
    back_[static_cast<std::size_t>(side)].push_back(r.value->take());
  }

  payload_ledger ledger_;
  discard_log log_;
  std::pair<spindle::sender<item>, spindle::receiver<item>> channel_;
  // Nobody sends on idle_in_, nobody receives from idle_out_ (a rendezvous).
  std::pair<spindle::sender<item>, spindle::receiver<item>> idle_in_;
  std::pair<spindle::sender<item>, spindle::receiver<item>> idle_out_;
  bool has_tx_ = true;
  bool has_rx_ = true;
  bool receivers_may_see_closed_ = false;
  bool senders_may_see_closed_ = false;
  bool closed_at_end_ = false;
  std::array<std::optional<spindle::sender<item>>, 2> tx_;
  std::array<std::optional<spindle::receiver<item>>, 2> rx_;
  std::array<model::plain<int>, 2> coro_runs_{};
  std::vector<int> expected_;
  std::vector<int> buffered_;
  std::vector<int> fed_;
  std::array<std::vector<int>, 2> got_;
  std::array<std::vector<int>, 2> back_;
  std::vector<int> drained_;
  std::vector<int> feeder_back_;
  std::vector<int> left_;
  std::optional<model::thread> feeder_;
  std::optional<model::thread> drainer_;
  std::optional<spindle::executor> ex_;
};

template <flavour Fl, driver Dr>
auto channel_ops() -> std::vector<operation<channel_fixture<Fl, Dr>>> const& {
  using fx = channel_fixture<Fl, Dr>;
  static std::vector<operation<fx>> const ops{
      {"send", [](fx& f, int side) { f.send(side); }},
      {"recv", [](fx& f, int side) { f.recv(side); }},
      {"select_recv", [](fx& f, int side) { f.select_recv(side); }},
      {"select_send", [](fx& f, int side) { f.select_send(side); }},
      {"select_recv_default", [](fx& f, int side) { f.select_recv_default(side); }},
      {"select_recv_timeout", [](fx& f, int side) { f.select_recv_timeout(side); }},
      {"async_recv", [](fx& f, int side) { f.async_recv(side); }},
      {"async_send", [](fx& f, int side) { f.async_send(side); }},
      {"async_select_recv", [](fx& f, int side) { f.async_select_recv(side); }},
      {"close", [](fx& f, int side) { f.close(side); }},
      {"drop_sender", [](fx& f, int side) { f.drop_sender(side); }},
      {"drop_receiver", [](fx& f, int side) { f.drop_receiver(side); }},
  };
  return ops;
}

/// The schedules of one pair: every schedule within one preemption up to 120, then 30 PCT of
/// depth 3, then 30 random on store buffers (a quarter under sanitizers); a tenth of
/// pair_schedules()'s default, since the suites hold 378 pairs to run.
auto select_schedules() -> std::vector<model::options> {
  return spindle_test::pair_schedules(30);
}

using rendezvous_fixture = channel_fixture<flavour::rendezvous, driver::executor>;
using bounded1_fixture = channel_fixture<flavour::bounded1, driver::executor>;
using bounded1_full_fixture = channel_fixture<flavour::bounded1_full, driver::executor>;
using unbounded_fixture = channel_fixture<flavour::unbounded, driver::executor>;
using rendezvous_sync_wait_fixture = channel_fixture<flavour::rendezvous, driver::sync_wait>;
using bounded1_sync_wait_fixture = channel_fixture<flavour::bounded1, driver::sync_wait>;

}  // namespace

SPINDLE_OPERATION_MATRIX(SelectRendezvous, rendezvous_fixture,
                         (channel_ops<flavour::rendezvous, driver::executor>()),
                         select_schedules());
SPINDLE_OPERATION_MATRIX(SelectBounded1, bounded1_fixture,
                         (channel_ops<flavour::bounded1, driver::executor>()), select_schedules());
SPINDLE_OPERATION_MATRIX(SelectBounded1Full, bounded1_full_fixture,
                         (channel_ops<flavour::bounded1_full, driver::executor>()),
                         select_schedules());
SPINDLE_OPERATION_MATRIX(SelectUnbounded, unbounded_fixture,
                         (channel_ops<flavour::unbounded, driver::executor>()), select_schedules());
SPINDLE_OPERATION_MATRIX(SelectRendezvousSyncWait, rendezvous_sync_wait_fixture,
                         (channel_ops<flavour::rendezvous, driver::sync_wait>()),
                         select_schedules());
SPINDLE_OPERATION_MATRIX(SelectBounded1SyncWait, bounded1_sync_wait_fixture,
                         (channel_ops<flavour::bounded1, driver::sync_wait>()), select_schedules());

// ---------------------------------------------------------------------------------------------
// The join-handle matrix.

namespace {

/// Each side that uses a handle has its own task, spawned on one shared one-worker executor:
/// the task waits on a gate channel (co_await async_recv), then returns its ledger index.
/// "complete" opens the other side's gate (the task then resumes on the worker and finishes,
/// racing the handle operation); in a pair without it the gates start open, so the tasks
/// finish on their own while the handle operations run.
class handle_fixture {
 public:
  static auto skip(std::string_view a, std::string_view b) -> char const* {
    if (a == "complete" && b == "complete") {
      return "a completion is what a handle operation races; two completions with no handle "
             "between them are two executor tasks, which tests/model/executor_test.cpp covers";
    }
    return nullptr;
  }

  handle_fixture(std::string_view a, std::string_view b) : gate_(spindle::bounded<int>(2)) {
    std::array<std::string_view, 2> const names{a, b};
    bool const completes = a == "complete" || b == "complete";
    ex_.emplace(1);
    for (std::size_t side = 0; side < 2; ++side) {
      if (names[side] != "complete") {
        tasks_.push_back(static_cast<int>(side));
        handles_[side].emplace(
            ex_->spawn(gated(gate_.second, static_cast<int>(side), ledger_, log_, runs_[side])));
        if (!completes) {
          model::check(gate_.first.try_send(0).is_sent(), "the gate has room");
        }
      }
    }
  }

  /// Shuts the executor down (it must finish the tasks whose handles were dropped), then:
  /// every task ran once, and its result reached a joiner once or was destroyed once.
  void finish() {
    ex_.reset();
    for (int t : tasks_) {
      model::check(runs_[static_cast<std::size_t>(t)].get() == 1, "a task ran exactly once");
    }
    for (auto& h : handles_) {
      h.reset();
    }
    expect_exactly({got_[0], got_[1]}, log_, tasks_);
  }

  /// join() from a thread: waits for the task, returns its result once.
  void join(int side) {
    auto h = take(side);
    item v = h.join();
    ledger_.take(got_[static_cast<std::size_t>(side)], v.take());
    model::check(!h.valid(), "a joined handle is empty");
  }

  /// co_await of the handle from a coroutine in sync_wait.
  void await(int side) {
    auto h = take(side);
    spindle::sync_wait(await_task(*this, side, h));
    model::check(!h.valid(), "an awaited handle is empty");
  }

  /// Destroys the handle: the task still runs, and its result is destroyed once.
  void drop(int side) { handles_[static_cast<std::size_t>(side)].reset(); }

  /// Opens the gate of the other side's task.
  void complete(int /*side*/) {
    auto tx = gate_.first;
    model::check(tx.send(0).is_sent(), "the gate is open");
  }

 private:
  static auto gated(spindle::receiver<int> gate, int index, payload_ledger& ledger,
                    discard_log& log, model::plain<int>& runs) -> spindle::task<item> {
    auto g = co_await gate.async_recv();
    model::check(g.has_value(), "the gate opened");
    runs.set(runs.get() + 1);
    co_return item(ledger.make(index), &log);
  }

  static auto await_task(handle_fixture& f, int side, spindle::join_handle<item>& h)
      -> spindle::task<void> {
    item v = co_await h;
    f.ledger_.take(f.got_[static_cast<std::size_t>(side)], v.take());
  }

  auto take(int side) -> spindle::join_handle<item> {
    auto& h = handles_[static_cast<std::size_t>(side)];
    spindle::join_handle<item> out = std::move(*h);
    h.reset();
    return out;
  }

  payload_ledger ledger_;
  discard_log log_;
  std::pair<spindle::sender<int>, spindle::receiver<int>> gate_;
  std::array<model::plain<int>, 2> runs_{};
  std::array<std::vector<int>, 2> got_;
  std::vector<int> tasks_;
  std::optional<spindle::executor> ex_;
  std::array<std::optional<spindle::join_handle<item>>, 2> handles_;
};

auto handle_ops() -> std::vector<operation<handle_fixture>> const& {
  static std::vector<operation<handle_fixture>> const ops{
      {"join", [](handle_fixture& f, int side) { f.join(side); }},
      {"await", [](handle_fixture& f, int side) { f.await(side); }},
      {"drop", [](handle_fixture& f, int side) { f.drop(side); }},
      {"complete", [](handle_fixture& f, int side) { f.complete(side); }},
  };
  return ops;
}

/// Nine pairs: more schedules each than the channel pairs (160 within one preemption, 40 PCT,
/// 40 on store buffers).
auto handle_schedules() -> std::vector<model::options> {
  return spindle_test::pair_schedules(40);
}

}  // namespace

SPINDLE_OPERATION_MATRIX(JoinHandle, handle_fixture, handle_ops(), handle_schedules());

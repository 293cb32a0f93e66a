// The operation matrix of spindle::oneshot (detail/sync/oneshot_state.hpp) and spindle::watch
// (detail/sync/watch_state.hpp): every operation against every other and itself, under the
// model checker (tests/support/op_matrix.hpp). Each fixture is built so that both operations can
// finish on their own; a receiver left asleep is a lost wake-up (a deadlock the checker
// reports), a value read without the sender's release/acquire pair is a data race, and finish()
// checks that every value was received, handed back or destroyed exactly once.
#include <spindle/async.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/oneshot.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>
#include <spindle/watch.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "support/op_matrix.hpp"

namespace model = spindle::model;
using spindle_test::operation;

namespace {

constexpr auto long_wait = std::chrono::hours(1);

auto has(std::string_view a, std::string_view b, std::string_view name) -> bool {
  return a == name || b == name;
}

/// Live instances of `counted`: model threads run one at a time, so a plain std::atomic counts
/// exactly; it is no part of the protocol under test.
std::atomic<int> live{0};

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
// Oneshot: the sender's operations (send, drop_sender, wait_closed_for) against the receiver's
// (recv, recv_for, try_recv, select_recv with a timeout, async_recv, close, drop_receiver). Each
// handle is used by one thread at a time, so two operations of one side are not a valid pair. A
// send writes a payload first; whoever receives the value must see it. finish(): both handles gone,
// no value alive; a receive got a value exactly when a send in the pair succeeded.

auto sender_side(std::string_view op) -> bool {
  return op == "send" || op == "drop_sender" || op == "wait_closed_for";
}

struct oneshot_fixture {
  std::optional<spindle::oneshot_sender<counted>> tx;
  std::optional<spindle::oneshot_receiver<counted>> rx;
  model::plain<int> payload;
  bool may_send;         // the pair has a send
  bool receiver_leaves;  // the pair has close or drop_receiver
  spindle::detail::atomic<int> sent{0};
  spindle::detail::atomic<int> received{0};

  oneshot_fixture(std::string_view a, std::string_view b)
      : may_send(has(a, b, "send")),
        receiver_leaves(has(a, b, "close") || has(a, b, "drop_receiver")) {
    live.store(0, std::memory_order_relaxed);
    auto [t, r] = spindle::oneshot<counted>();
    tx.emplace(std::move(t));
    rx.emplace(std::move(r));
  }

  static auto skip(std::string_view a, std::string_view b) -> char const* {
    return sender_side(a) == sender_side(b)
               ? "each handle is used by one thread at a time: two operations of one side"
               : nullptr;
  }

  /// A receive's outcome: a value (with its payload) only after a send; closed only without a
  /// send or after the receiver left.
  void got(std::optional<counted> const& v) {
    if (v) {
      model::check(may_send && v->value == 1 && payload.get() == 1,
                   "received a value that was not sent, or without its payload");
      received.fetch_add(1, std::memory_order_relaxed);
    } else {
      model::check(!may_send || receiver_leaves, "closed although a value was sent");
    }
  }

  void finish() {
    tx.reset();
    rx.reset();
    model::check(live.load(std::memory_order_relaxed) == 0, "a value leaked or died twice");
    model::check(received.load(std::memory_order_relaxed) <= sent.load(std::memory_order_relaxed),
                 "received more than was sent");
  }
};

auto receive_result(oneshot_fixture& f, spindle::recv_result<counted> r) {
  if (r.is_received() || r.is_closed()) {
    f.got(r.value);
  }
}

auto await_recv(spindle::oneshot_receiver<counted>& rx) -> spindle::task<std::optional<counted>> {
  co_return co_await rx.async_recv();
}

auto oneshot_ops() -> std::vector<operation<oneshot_fixture>> const& {
  static std::vector<operation<oneshot_fixture>> const ops{
      // The sender writes a payload and sends; it fails only when the receiver left.
      {"send",
       [](oneshot_fixture& f, int) {
         f.payload.set(1);
         auto r = f.tx->send(counted(1));
         if (r.is_sent()) {
           f.sent.fetch_add(1, std::memory_order_relaxed);
         } else {
           model::check(r.is_closed() && r.value.has_value() && f.receiver_leaves,
                        "a send failed without the receiver leaving, or lost the value");
         }
       }},
      // The sender leaves without sending.
      {"drop_sender", [](oneshot_fixture& f, int) { f.tx.reset(); }},
      // The sender waits (with a deadline the checker may let pass) for the receiver to leave,
      // then leaves without sending. The wait ends early only after close or drop_receiver.
      {"wait_closed_for",
       [](oneshot_fixture& f, int) {
         if (f.tx->wait_closed_for(long_wait)) {
           model::check(f.receiver_leaves && f.tx->is_closed(),
                        "wait_closed ended without the receiver leaving");
         }
         f.tx.reset();
       }},
      // Blocks until the value or closed.
      {"recv", [](oneshot_fixture& f, int) { f.got(f.rx->recv()); }},
      // The same with a deadline the checker may let pass at any point.
      {"recv_for", [](oneshot_fixture& f, int) { receive_result(f, f.rx->recv_for(long_wait)); }},
      {"try_recv", [](oneshot_fixture& f, int) { receive_result(f, f.rx->try_recv()); }},
      // A select of the oneshot and a timeout.
      {"select_recv",
       [](oneshot_fixture& f, int) {
         std::optional<counted> out;
         bool chosen = false;
         auto const i = spindle::select(spindle::on_recv(*f.rx,
                                                         [&](std::optional<counted> v) {
                                                           chosen = true;
                                                           if (v) {
                                                             out.emplace(std::move(*v));
                                                           }
                                                         }),
                                        spindle::on_timeout(long_wait, [] {}));
         model::check((i == 0) == chosen, "the select ran the wrong handler");
         if (chosen) {
           f.got(out);
         }
       }},
      // A coroutine (sync_wait) waits until the value or closed.
      {"async_recv", [](oneshot_fixture& f, int) { f.got(spindle::sync_wait(await_recv(*f.rx))); }},
      // The receiver refuses later sends; a value already sent stays receivable.
      {"close",
       [](oneshot_fixture& f, int) {
         f.rx->close();
         auto r = f.rx->try_recv();
         model::check(!r.is_empty(), "a closed receiver reported empty: a send may still come");
         receive_result(f, std::move(r));
       }},
      // The receiver leaves: a value sent and not received dies with it.
      {"drop_receiver", [](oneshot_fixture& f, int) { f.rx.reset(); }},
  };
  return ops;
}

SPINDLE_OPERATION_MATRIX(OneshotPairs, oneshot_fixture, oneshot_ops(),
                         spindle_test::pair_schedules(300));

// ---------------------------------------------------------------------------------------------
// Watch: the sender's operations (send, send_modify, drop_sender) against receivers' (changed,
// changed_for, select_changed with a timeout, async_changed, borrow, drop_receiver), each side
// on a receiver copy of its own. One sender: two sender operations are not a valid pair. A pair
// with no sender operation gets version 1 up front, so that a blocking changed() can finish; a
// receiver asleep while a version it has not seen is there is a deadlock. The value's two
// halves are plain words written under the lock: a read outside it, or of half a change, fails.
// finish(): every handle gone, no value alive.

/// A watched value: two halves, always equal, and counted.
struct cell {
  explicit cell(int v) noexcept {
    a.set(v);
    b.set(v);
    live.fetch_add(1, std::memory_order_relaxed);
  }
  cell(cell&& other) noexcept {
    a.set(other.a.get());
    b.set(other.b.get());
    live.fetch_add(1, std::memory_order_relaxed);
  }
  cell(cell const&) = delete;
  auto operator=(cell const&) -> cell& = delete;
  auto operator=(cell&&) -> cell& = delete;
  ~cell() { live.fetch_sub(1, std::memory_order_relaxed); }

  [[nodiscard]] auto read() const -> int {
    int const x = a.get();
    int const y = b.get();
    model::check(x == y, "a receiver read a torn value");
    return x;
  }

  model::plain<int> a;
  model::plain<int> b;
};

auto watch_sender_side(std::string_view op) -> bool {
  return op == "send" || op == "send_modify" || op == "drop_sender";
}

struct watch_fixture {
  std::optional<spindle::watch_sender<cell>> tx;
  std::array<std::optional<spindle::watch_receiver<cell>>, 2> rx;
  bool may_close;  // the pair has drop_sender
  model::plain<int> payload;

  watch_fixture(std::string_view a, std::string_view b) : may_close(has(a, b, "drop_sender")) {
    live.store(0, std::memory_order_relaxed);
    auto [t, r] = spindle::watch(cell(0));
    tx.emplace(std::move(t));
    rx[0].emplace(r);
    rx[1].emplace(std::move(r));
    if (!watch_sender_side(a) && !watch_sender_side(b)) {
      payload.set(1);
      static_cast<void>(tx->send(cell(1)));
    }
  }

  static auto skip(std::string_view a, std::string_view b) -> char const* {
    return watch_sender_side(a) && watch_sender_side(b)
               ? "a watch has one sender, used by one thread at a time"
               : nullptr;
  }

  /// A wait's outcome on receiver `side`: changed shows a newer value (with its payload);
  /// closed only once the sender left.
  void got(spindle::watch_result r, int side) {
    if (r.is_changed()) {
      int const v = rx[static_cast<std::size_t>(side)]->borrow()->read();
      model::check(v >= 1 && payload.get() >= 1, "changed() without a newer value or its payload");
    } else if (r.is_closed()) {
      model::check(may_close, "closed while the sender is there");
    } else {
      model::check(r.is_timed_out(), "a wait ended neither changed, closed nor timed out");
    }
  }

  void finish() {
    tx.reset();
    rx[0].reset();
    rx[1].reset();
    model::check(live.load(std::memory_order_relaxed) == 0, "a value leaked or died twice");
  }
};

auto await_changed(spindle::watch_receiver<cell>& rx) -> spindle::task<spindle::watch_result> {
  co_return co_await rx.async_changed();
}

auto watch_ops() -> std::vector<operation<watch_fixture>> const& {
  static std::vector<operation<watch_fixture>> const ops{
      // A new value: receivers are there, so it is sent.
      {"send",
       [](watch_fixture& f, int) {
         f.payload.set(1);
         model::check(f.tx->send(cell(1)).is_sent(), "a send with receivers failed");
       }},
      // The value changed in place, under the lock.
      {"send_modify",
       [](watch_fixture& f, int) {
         f.payload.set(2);
         f.tx->send_modify([](cell& c) {
           c.a.set(2);
           c.b.set(2);
         });
       }},
      // The sender leaves: receivers that saw everything see closed.
      {"drop_sender", [](watch_fixture& f, int) { f.tx.reset(); }},
      // Blocks until a version this receiver has not seen, or closed.
      {"changed", [](watch_fixture& f,
                     int side) { f.got(f.rx[static_cast<std::size_t>(side)]->changed(), side); }},
      // The same with a deadline the checker may let pass at any point.
      {"changed_for",
       [](watch_fixture& f, int side) {
         f.got(f.rx[static_cast<std::size_t>(side)]->changed_for(long_wait), side);
       }},
      // A select of the watch and a timeout.
      {"select_changed",
       [](watch_fixture& f, int side) {
         std::optional<bool> out;
         auto& r = *f.rx[static_cast<std::size_t>(side)];
         auto const i = spindle::select(spindle::on_changed(r, [&out](bool c) { out = c; }),
                                        spindle::on_timeout(long_wait, [] {}));
         model::check((i == 0) == out.has_value(), "the select ran the wrong handler");
         if (out) {
           f.got(spindle::watch_result{*out ? spindle::watch_status::changed
                                            : spindle::watch_status::closed},
                 side);
         }
       }},
      // A coroutine (sync_wait) waits for a newer version or closed.
      {"async_changed",
       [](watch_fixture& f, int side) {
         f.got(spindle::sync_wait(await_changed(*f.rx[static_cast<std::size_t>(side)])), side);
       }},
      // Reads the value under the lock, marking its version seen.
      {"borrow",
       [](watch_fixture& f, int side) {
         static_cast<void>(f.rx[static_cast<std::size_t>(side)]->borrow_and_update()->read());
       }},
      // This side's receiver copy goes.
      {"drop_receiver",
       [](watch_fixture& f, int side) { f.rx[static_cast<std::size_t>(side)].reset(); }},
  };
  return ops;
}

SPINDLE_OPERATION_MATRIX(WatchPairs, watch_fixture, watch_ops(), spindle_test::pair_schedules(300));

}  // namespace

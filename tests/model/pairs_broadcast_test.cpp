// The operation matrix of spindle::broadcast (broadcast.hpp): every operation against every
// other and itself, under the model checker (tests/support/op_matrix.hpp). Each fixture is a
// broadcast of capacity 2 with two receivers at message 0 (one per side: a receiver handle is
// one position, used by one thread) and the senders the two operations need; a receive that
// could otherwise wait for ever gets one message up front. A thread left asleep is a lost
// wake-up (a deadlock the checker reports); a copy racing with an overwrite is a data race the
// payload's plain word shows; finish() closes, reads every receiver to the end and checks that
// each got every message sent exactly once or counted it as missed, and that every value was
// destroyed exactly once.
#include <spindle/broadcast.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "model/broadcast_support.hpp"
#include "support/op_matrix.hpp"

namespace model = spindle::model;
namespace detail = spindle::detail;
using spindle_test::bc_payload;
using spindle_test::operation;

namespace {

using result = spindle::broadcast_recv_result<bc_payload>;
using status = spindle::broadcast_recv_status;

auto has(std::string_view a, std::string_view b, std::string_view name) -> bool {
  return a == name || b == name;
}

/// A deadline real time never reaches during a test: under the checker a timed wait times out
/// only when the scheduler chooses (virtual time).
auto later() -> detail::steady_time {
  return detail::steady_time::clock::now() + std::chrono::hours(1);
}

auto is_sending(std::string_view op) -> bool {
  return op == "send" || op == "close" || op == "drop_sender";
}
auto is_blocking_recv(std::string_view op) -> bool {
  return op == "recv" || op == "select" || op == "async_recv";
}

auto recv_async(spindle::broadcast_receiver<bc_payload>& rx) -> spindle::task<result> {
  auto r = co_await rx.async_recv();
  co_return r;
}

struct broadcast_fixture {
  std::optional<spindle::broadcast_sender<bc_payload>> keep;  // a sender no operation drops
  std::optional<spindle::broadcast_sender<bc_payload>> tx[2];
  std::optional<spindle::broadcast_receiver<bc_payload>> rx[2];
  // Per side: messages received or reported missed, the ids seen, whether closed was seen.
  std::uint64_t consumed[2] = {0, 0};
  unsigned seen[2] = {0, 0};
  bool closed[2] = {false, false};
  detail::atomic<std::uint64_t> sent{0};
  bool closes = false;
  std::int64_t live_before = bc_payload::live().load();

  broadcast_fixture(std::string_view a, std::string_view b)
      : closes(has(a, b, "close") || has(a, b, "drop_sender")) {
    auto [t, r] = spindle::broadcast<bc_payload>(2);
    rx[0].emplace(r);
    rx[1].emplace(std::move(r));
    std::string_view const ops[2] = {a, b};
    for (int s = 0; s < 2; ++s) {
      if (is_sending(ops[s])) {
        tx[s].emplace(t);
      }
    }
    if (!has(a, b, "drop_sender")) {
      keep.emplace(t);
    }
    // A blocking receive whose partner neither sends nor closes gets one message up front.
    for (int s = 0; s < 2; ++s) {
      if (is_blocking_recv(ops[s]) && !is_sending(ops[1 - s])) {
        send_from(t, 3);
        break;
      }
    }
  }

  void send_from(spindle::broadcast_sender<bc_payload>& s, int id) {
    auto r = s.send(bc_payload(id));
    if (r.is_sent()) {
      sent.fetch_add(1, std::memory_order_relaxed);
    } else {
      model::check(closes && r.is_closed() && r.value.has_value(),
                   "a send failed without a close, or lost the value");
    }
  }

  /// Folds one result of side `s` in; `may_wait_out`: timed_out is a valid outcome.
  void take(int s, result const& r, bool may_wait_out = false) {
    switch (r.status) {
      case status::received: {
        int const id = r.value->id();
        model::check(id >= 0 && id < 8, "a value that was never sent");
        model::check((seen[s] & (1U << id)) == 0, "a message received twice");
        seen[s] |= 1U << id;
        ++consumed[s];
        break;
      }
      case status::lagged:
        model::check(r.missed > 0, "a lag of zero messages");
        consumed[s] += r.missed;
        break;
      case status::closed:
        closed[s] = true;
        break;
      case status::empty:
        break;
      case status::timed_out:
        model::check(may_wait_out, "timed_out from a wait without a deadline");
        break;
      case status::cancelled:
        model::check(false, "cancelled without a stop token");
        break;
    }
  }

  void finish() {
    keep.reset();
    tx[0].reset();
    tx[1].reset();
    for (int s = 0; s < 2; ++s) {
      if (!rx[s]) {
        continue;
      }
      while (!closed[s]) {
        take(s, rx[s]->recv());
      }
      model::check(consumed[s] == sent.load(std::memory_order_relaxed),
                   "a receiver neither got nor was told it missed every message");
    }
    rx[0].reset();
    rx[1].reset();
    model::check(bc_payload::live().load() == live_before, "a value leaked or destroyed twice");
  }
};

auto broadcast_ops() -> std::vector<operation<broadcast_fixture>> const& {
  static std::vector<operation<broadcast_fixture>> const ops{
      {"send", [](broadcast_fixture& f, int s) { f.send_from(*f.tx[s], s + 1); }},
      {"try_recv",
       [](broadcast_fixture& f, int s) {
         auto r = f.rx[s]->try_recv();
         model::check(!r.is_closed() || f.closes, "closed while a sender remains");
         f.take(s, r);
       }},
      {"recv",
       [](broadcast_fixture& f, int s) {
         auto r = f.rx[s]->recv();
         model::check(!r.is_closed() || f.closes, "closed while a sender remains");
         f.take(s, r);
       }},
      {"recv_for",
       [](broadcast_fixture& f, int s) {
         auto r = f.rx[s]->recv_until(later());
         model::check(!r.is_closed() || f.closes, "closed while a sender remains");
         f.take(s, r, /*may_wait_out=*/true);
       }},
      {"select",
       [](broadcast_fixture& f, int s) {
         static_cast<void>(spindle::select(spindle::on_recv(*f.rx[s], [&f, s](result r) {
           model::check(!r.is_closed() || f.closes, "closed while a sender remains");
           f.take(s, r);
         })));
       }},
      {"async_recv",
       [](broadcast_fixture& f, int s) {
         auto r = spindle::sync_wait(recv_async(*f.rx[s]));
         model::check(!r.is_closed() || f.closes, "closed while a sender remains");
         f.take(s, r);
       }},
      {"subscribe",
       [](broadcast_fixture& f, int s) {
         // A new receiver starts at the next message: nothing before it, at most what a
         // concurrent send stores after it.
         auto late = f.rx[s]->subscribe();
         auto r = late.try_recv();
         model::check(r.is_empty() || r.is_closed() || r.is_received(),
                      "a new receiver lagged or saw a message older than itself");
       }},
      {"close", [](broadcast_fixture& f, int s) { f.tx[s]->close(); }},
      {"drop_sender", [](broadcast_fixture& f, int s) { f.tx[s].reset(); }},
      {"drop_receiver", [](broadcast_fixture& f, int s) { f.rx[s].reset(); }},
  };
  return ops;
}

SPINDLE_OPERATION_MATRIX(BroadcastPairs, broadcast_fixture, broadcast_ops(),
                         spindle_test::pair_schedules(300));

}  // namespace

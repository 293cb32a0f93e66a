// Select is linearizable: a select that completed case i is, for linearizability, exactly the
// single operation of case i on that case's channel, at some point between its invocation and
// its response. Short random histories mix selects (blocking, biased, with on_default, the
// coroutine form under sync_wait, dynamic_select) over two channels with plain try/blocking
// sends and receives, awaitable sends and receives, and close; each channel's sub-history is
// checked (by locality) against a sequential channel: a FIFO with a capacity and a closed flag.
//
// What a select records:
//   - chosen recv case: recv -> the value, or closed (closed and drained);
//   - chosen send case: send(v) -> ok, or closed;
//   - on_default chosen: one "not ready" operation per case, each with the select's window
//     (recv -> empty, send -> full). The select only promises that each case was found not
//     ready at some point of its window; per-object checking cannot express "at one common
//     point" anyway, so this is the exact per-channel content of a default.
//
// Rendezvous channels: the sequential model expresses a rendezvous as a one-value hand-off. A
// successful send(v) puts v in the hand-off slot, and the only operation that may come next on
// that channel is the receive that returns v: the pair takes effect at one point, which exists
// only when the two windows overlap (a receive that started after the send returned, or a send
// whose value nobody received, is rejected). What the model cannot express is whether a
// partner was blocked when a try_send/try_recv (or a select with on_default) ran: that is not
// sequential state, so on an open rendezvous `full` and `empty` are always accepted. Closing
// is exact: after close every send reports closed and every receive reports closed.
//
// Termination: every history has one "closer" thread that only makes non-blocking calls and
// then closes both channels, so every blocked send, receive or select ends (by a partner, or
// by closed) and no history can hang.
#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lin/runner.hpp"
#include "lin/wgl.hpp"

using spindle_lin::op_kind;
using spindle_lin::operation;
using spindle_lin::outcome;

namespace {

/// The checker's operation kinds are shared with the deque spec; a channel's close is recorded
/// with the kind the channel specification has no other use for.
constexpr op_kind close_kind = op_kind::push;
/// The checker accepts a history once every operation is placed, whatever the final state; a
/// rendezvous send whose value nobody received must fail, so each channel's history ends with
/// this marker, after every operation, which requires that no hand-off is pending.
constexpr op_kind end_kind = op_kind::pop;
/// A recv recorded from a select carries this arg (a plain recv has arg 0), so that the
/// mutation test can find one.
constexpr std::int64_t from_select = 1;
constexpr std::size_t unbounded_capacity = std::numeric_limits<std::size_t>::max();

/// The sequential specification of a channel: bounded (capacity >= 1), unbounded, or a
/// rendezvous (capacity 0, see the file comment), with close.
struct channel_spec {
  std::size_t capacity;

  struct state {
    std::deque<std::int64_t> items;
    std::optional<std::int64_t> handoff;  // rendezvous: sent, not yet received
    std::uint64_t handoff_ret = 0;        // the response time of that send
    bool closed = false;

    friend auto operator<(state const& a, state const& b) -> bool {
      return std::tie(a.items, a.handoff, a.handoff_ret, a.closed) <
             std::tie(b.items, b.handoff, b.handoff_ret, b.closed);
    }
  };

  [[nodiscard]] auto apply(state& s, operation const& op) const -> bool {
    if (s.handoff) {
      // The receive that pairs with the rendezvous send must come next, and take effect at the
      // same point: it must have started before the send returned.
      if (op.kind != op_kind::recv || op.result != outcome::ok || op.value != *s.handoff ||
          op.call > s.handoff_ret) {
        return false;
      }
      s.handoff.reset();
      return true;
    }
    switch (op.kind) {
      case end_kind:
        return true;
      case close_kind:
        s.closed = true;
        return true;
      case op_kind::send:
        switch (op.result) {
          case outcome::closed:
            return s.closed;
          case outcome::full:
            return !s.closed && (capacity == 0 || s.items.size() >= capacity);
          case outcome::ok:
            if (s.closed) {
              return false;
            }
            if (capacity == 0) {
              s.handoff = op.arg;
              s.handoff_ret = op.ret;
              return true;
            }
            if (s.items.size() >= capacity) {
              return false;
            }
            s.items.push_back(op.arg);
            return true;
          default:
            return false;
        }
      case op_kind::recv:
        switch (op.result) {
          case outcome::closed:
            return s.closed && s.items.empty();
          case outcome::empty:
            return !s.closed && s.items.empty();
          case outcome::ok:
            if (s.items.empty() || s.items.front() != op.value) {
              return false;
            }
            s.items.pop_front();
            return true;
          default:
            return false;
        }
      default:
        return false;
    }
  }
};

auto describe_channels(std::vector<operation> const& history) -> std::string {
  static char const* const results[] = {"ok", "full", "empty", "retry", "closed"};
  std::string out;
  for (auto const& op : history) {
    if (op.kind == end_kind) {
      continue;
    }
    std::string what = op.kind == close_kind      ? "close()"
                       : op.kind == op_kind::send ? "send(" + std::to_string(op.arg) + ")"
                       : op.arg == from_select    ? "select-recv()"
                                                  : "recv()";
    out += "  ch" + std::to_string(op.object) + " " + what + " -> " +
           results[static_cast<int>(op.result)];
    if (op.kind == op_kind::recv && op.result == outcome::ok) {
      out += " " + std::to_string(op.value);
    }
    out += " [" + std::to_string(op.call) + ", " + std::to_string(op.ret) + "]\n";
  }
  return out;
}

/// Appends the end marker of channels 0 and 1, after every operation of `history`.
auto with_end(std::vector<operation> history) -> std::vector<operation> {
  std::uint64_t last = 0;
  for (auto const& o : history) {
    last = std::max(last, o.ret);
  }
  for (int object = 0; object < 2; ++object) {
    operation o;
    o.object = object;
    o.kind = end_kind;
    o.call = last + 1 + 2 * static_cast<std::uint64_t>(object);
    o.ret = o.call + 1;
    history.push_back(o);
  }
  return history;
}

struct channel_pair {
  spindle::sender<std::int64_t> tx;
  spindle::receiver<std::int64_t> rx;
};

auto make(std::size_t capacity) -> channel_pair {
  if (capacity == unbounded_capacity) {
    auto [tx, rx] = spindle::unbounded<std::int64_t>();
    return {std::move(tx), std::move(rx)};
  }
  auto [tx, rx] = spindle::bounded<std::int64_t>(capacity);
  return {std::move(tx), std::move(rx)};
}

auto to_outcome(spindle::send_status s) -> outcome {
  switch (s) {
    case spindle::send_status::sent:
      return outcome::ok;
    case spindle::send_status::full:
      return outcome::full;
    case spindle::send_status::closed:
      return outcome::closed;
    default:
      return outcome::retry;  // timed_out: never expected here, and rejected by the spec
  }
}

void set_recv(operation& x, std::optional<std::int64_t> const& v) {
  if (v) {
    x.value = *v;
  } else {
    x.result = outcome::closed;
  }
}

void set_recv(operation& x, spindle::recv_result<std::int64_t> const& r) {
  switch (r.status) {
    case spindle::recv_status::received:
      x.value = *r.value;
      break;
    case spindle::recv_status::empty:
      x.result = outcome::empty;
      break;
    case spindle::recv_status::closed:
      x.result = outcome::closed;
      break;
    default:
      x.result = outcome::retry;  // rejected by the spec
      break;
  }
}

// ---- the coroutine forms, run by sync_wait on the recording thread ----

auto async_recv_one(spindle::receiver<std::int64_t>& rx)
    -> spindle::task<std::optional<std::int64_t>> {
  co_return co_await rx.async_recv();
}

auto async_send_one(spindle::sender<std::int64_t>& tx, std::int64_t v)
    -> spindle::task<spindle::send_status> {
  auto r = co_await tx.async_send(v);
  co_return r.status;
}

template <class... Cases>
auto async_select_of(bool biased, Cases... cases) -> spindle::task<std::size_t> {
  if (biased) {
    co_return co_await spindle::async_select_biased(std::move(cases)...);
  }
  co_return co_await spindle::async_select(std::move(cases)...);
}

// ---- selects over two cases ----

struct case_spec {
  bool send = false;
  int channel = 0;
  std::int64_t value = 0;  // a send case's value
};

struct case_out {
  bool fired = false;
  std::optional<std::int64_t> got;  // a recv case's outcome (nullopt: closed)
  spindle::send_status status = spindle::send_status::full;
};

enum class select_form {
  fair,         // select(a, b)
  biased,       // select_biased(a, b)
  fair_try,     // select(a, b, on_default)
  biased_try,   // select_biased(a, b, on_default)
  async_fair,   // sync_wait(async_select(a, b))
  async_try,    // sync_wait(async_select_biased(a, b, on_default))
  dynamic,      // dynamic_select{a, b}.select()
  dynamic_try,  // dynamic_select{a, b, on_default}.select_biased()
};
constexpr int select_forms = 8;

auto is_try(select_form f) -> bool {
  return f == select_form::fair_try || f == select_form::biased_try ||
         f == select_form::async_try || f == select_form::dynamic_try;
}

/// Calls `k` with the select case `s` describes.
template <class K>
void with_case(case_spec& s, channel_pair* ch, case_out& out, K&& k) {
  if (s.send) {
    k(spindle::on_send(ch[s.channel].tx, s.value, [&out](spindle::send_result<std::int64_t> r) {
      out.fired = true;
      out.status = r.status;
    }));
  } else {
    k(spindle::on_recv(ch[s.channel].rx, [&out](std::optional<std::int64_t> v) {
      out.fired = true;
      out.got = v;
    }));
  }
}

/// Runs one select of `form` over the two cases; returns the chosen index (2: the default).
auto run_select(select_form form, case_spec* cs, case_out* outs, channel_pair* ch) -> std::size_t {
  std::size_t chosen = 0;
  with_case(cs[0], ch, outs[0], [&](auto&& a) {
    with_case(cs[1], ch, outs[1], [&](auto&& b) {
      auto none = spindle::on_default([] {});
      switch (form) {
        case select_form::fair:
          chosen = spindle::select(a, b);
          break;
        case select_form::biased:
          chosen = spindle::select_biased(a, b);
          break;
        case select_form::fair_try:
          chosen = spindle::select(a, b, none);
          break;
        case select_form::biased_try:
          chosen = spindle::select_biased(a, b, none);
          break;
        case select_form::async_fair:
          chosen = spindle::sync_wait(async_select_of(false, std::move(a), std::move(b)));
          break;
        case select_form::async_try:
          chosen = spindle::sync_wait(
              async_select_of(true, std::move(a), std::move(b), std::move(none)));
          break;
        case select_form::dynamic:
        case select_form::dynamic_try: {
          spindle::dynamic_select sel;
          sel.add(std::move(a));
          sel.add(std::move(b));
          if (form == select_form::dynamic_try) {
            sel.add(std::move(none));
            chosen = sel.select_biased();
          } else {
            chosen = sel.select();
          }
          break;
        }
      }
    });
  });
  return chosen;
}

/// Fills `x` with what case `s` did when chosen.
void record_case(operation& x, case_spec const& s, case_out const& out) {
  x.object = s.channel;
  if (s.send) {
    x.kind = op_kind::send;
    x.arg = s.value;
    x.result = out.fired ? to_outcome(out.status) : outcome::retry;
  } else {
    x.kind = op_kind::recv;
    x.arg = from_select;
    if (out.fired) {
      set_recv(x, out.got);
    } else {
      x.result = outcome::retry;  // the handler did not run: rejected by the spec
    }
  }
}

/// Fills `x` with "case `s` was not ready" (a default was chosen).
void record_not_ready(operation& x, case_spec const& s) {
  x.object = s.channel;
  x.kind = s.send ? op_kind::send : op_kind::recv;
  x.arg = s.send ? s.value : from_select;
  x.result = s.send ? outcome::full : outcome::empty;
}

/// One history's threads: thread 0 is the closer (non-blocking calls, then close both); the
/// others may block. Extra operations (the second case of a default) go to `extra[t]`.
struct history_plan {
  std::uint32_t seed;
  int h;
  int workers = 3;
  int worker_ops = 4;
  int closer_ops = 3;
};

void run_thread(spindle_lin::recorder& r, channel_pair const* shared, int t,
                history_plan const& plan, std::vector<operation>& extra) {
  std::mt19937 rng(plan.seed * 7919U + static_cast<std::uint32_t>(plan.h * 31 + t));
  // Each thread uses its own handle copies.
  channel_pair ch[2] = {shared[0], shared[1]};
  bool const closer = t == 0;
  int const ops = closer ? plan.closer_ops : plan.worker_ops;
  for (int i = 0; i < ops; ++i) {
    std::int64_t const value = 1000 * (t + 1) + 10 * i;  // unique in the history
    operation o;
    o.object = static_cast<int>(rng() % 2);
    auto& c = ch[o.object];
    // Kinds 0..3 never block; 4..7 may (workers only).
    int const kind = static_cast<int>(rng() % (closer ? 4 : 8));
    switch (kind) {
      case 0:
        o.kind = op_kind::send;
        o.arg = value;
        r.record(o, [&](operation& x) { x.result = to_outcome(c.tx.try_send(x.arg).status); });
        break;
      case 1:
        o.kind = op_kind::recv;
        r.record(o, [&](operation& x) { set_recv(x, c.rx.try_recv()); });
        break;
      case 4:
        o.kind = op_kind::send;
        o.arg = value;
        if (rng() % 2 == 0) {
          r.record(o, [&](operation& x) { x.result = to_outcome(c.tx.send(x.arg).status); });
        } else {
          r.record(o, [&](operation& x) {
            x.result = to_outcome(spindle::sync_wait(async_send_one(c.tx, x.arg)));
          });
        }
        break;
      case 5:
        o.kind = op_kind::recv;
        if (rng() % 2 == 0) {
          r.record(o, [&](operation& x) { set_recv(x, c.rx.recv()); });
        } else {
          r.record(o, [&](operation& x) { set_recv(x, spindle::sync_wait(async_recv_one(c.rx))); });
        }
        break;
      default: {
        // A select over two different cases (kinds 2, 3: a try form; 6, 7: any form).
        static constexpr select_form try_forms[] = {select_form::fair_try, select_form::biased_try,
                                                    select_form::async_try,
                                                    select_form::dynamic_try};
        auto const form =
            kind < 4 ? try_forms[rng() % 4] : static_cast<select_form>(rng() % select_forms);
        case_spec cs[2];
        auto const first = rng() % 4;
        auto const second = (first + 1 + rng() % 3) % 4;
        for (int k = 0; k < 2; ++k) {
          auto const which = k == 0 ? first : second;
          cs[k].send = which >= 2;
          cs[k].channel = static_cast<int>(which % 2);
          cs[k].value = value + k;
        }
        case_out outs[2];
        std::size_t chosen = 0;
        r.record(o, [&](operation& x) {
          chosen = run_select(form, cs, outs, ch);
          if (chosen < 2) {
            record_case(x, cs[chosen], outs[chosen]);
          } else {
            record_not_ready(x, cs[0]);
          }
        });
        if (chosen >= 2) {
          // The second case was found not ready in the same window.
          operation second_case = r.ops().back();
          record_not_ready(second_case, cs[1]);
          extra.push_back(second_case);
        }
        // Exactly one handler ran, and none for a default.
        if ((chosen < 2) != (outs[0].fired || outs[1].fired) || (outs[0].fired && outs[1].fired) ||
            (chosen >= 2 && !is_try(form))) {
          operation bad = r.ops().back();
          bad.result = outcome::retry;  // makes the history fail, with this select in it
          extra.push_back(bad);
        }
        break;
      }
    }
  }
  if (closer) {
    for (int object = 0; object < 2; ++object) {
      operation o;
      o.object = object;
      o.kind = close_kind;
      bool const by_sender = rng() % 2 == 0;
      r.record(o, [&](operation&) {
        if (by_sender) {
          ch[object].tx.close();
        } else {
          ch[object].rx.close();
        }
      });
    }
  }
}

/// Records one history on fresh channels of the two capacities.
auto record_history(std::size_t cap0, std::size_t cap1, history_plan const& plan)
    -> std::vector<operation> {
  channel_pair shared[2] = {make(cap0), make(cap1)};
  std::vector<std::vector<operation>> extra(static_cast<std::size_t>(plan.workers) + 1);
  std::vector<std::function<void(spindle_lin::recorder&)>> bodies;
  for (int t = 0; t <= plan.workers; ++t) {
    bodies.emplace_back([&shared, &plan, &extra, t](spindle_lin::recorder& r) {
      run_thread(r, shared, t, plan, extra[static_cast<std::size_t>(t)]);
    });
  }
  auto history = spindle_lin::run_history(bodies);
  for (auto const& e : extra) {
    history.insert(history.end(), e.begin(), e.end());
  }
  return with_end(std::move(history));
}

auto spec_of(std::size_t cap0, std::size_t cap1) {
  return [cap0, cap1](int object) { return channel_spec{object == 0 ? cap0 : cap1}; };
}

/// Runs `histories` random histories on channels of `cap0` and `cap1`; returns the first one
/// that is not linearizable (empty when all are).
auto check_select(std::size_t cap0, std::size_t cap1, std::uint32_t seed)
    -> std::vector<operation> {
  auto run_one = [cap0, cap1, seed](int h) {
    history_plan plan{seed, h};
    return record_history(cap0, cap1, plan);
  };
  return spindle_lin::first_non_linearizable(run_one, spec_of(cap0, cap1));
}

auto op(int object, op_kind k, std::int64_t arg, outcome r, std::int64_t value, std::uint64_t call,
        std::uint64_t ret) -> operation {
  operation o;
  o.object = object;
  o.kind = k;
  o.arg = arg;
  o.result = r;
  o.value = value;
  o.call = call;
  o.ret = ret;
  return o;
}

}  // namespace

// Selects over two bounded(2) channels mixed with plain and awaitable operations and close
// are linearizable.
TEST(LinSelect, Example) {
  auto const bad = check_select(2, 2, 1);
  EXPECT_TRUE(bad.empty()) << "bounded(2) x bounded(2) history not linearizable:\n"
                           << describe_channels(bad);
}

// bounded(1) on both sides: selects meet full and empty channels most of the time.
TEST(LinSelect, BoundedCapacityOne) {
  auto const bad = check_select(1, 1, 2);
  EXPECT_TRUE(bad.empty()) << "bounded(1) x bounded(1) history not linearizable:\n"
                           << describe_channels(bad);
}

// A select over an unbounded channel (send always ready) and a bounded(3) one.
TEST(LinSelect, UnboundedAndBounded) {
  auto const bad = check_select(unbounded_capacity, 3, 3);
  EXPECT_TRUE(bad.empty()) << "unbounded x bounded(3) history not linearizable:\n"
                           << describe_channels(bad);
}

// Two rendezvous channels: every completed send pairs with an overlapping receive of its value
// (a select on either side), and close ends every waiting operation.
TEST(LinSelect, Rendezvous) {
  auto const bad = check_select(0, 0, 4);
  EXPECT_TRUE(bad.empty()) << "rendezvous x rendezvous history not linearizable:\n"
                           << describe_channels(bad);
}

// A select over a rendezvous and a bounded(1) channel: a case of either flavour may win.
TEST(LinSelect, RendezvousAndBounded) {
  auto const bad = check_select(0, 1, 5);
  EXPECT_TRUE(bad.empty()) << "rendezvous x bounded(1) history not linearizable:\n"
                           << describe_channels(bad);
}

// The channel specification itself: hand-written histories it must accept and reject.
TEST(LinSelect, SpecificationAcceptsAndRejects) {
  auto const rendezvous = spec_of(0, 0);
  auto const bounded = spec_of(1, 1);
  // A rendezvous pair whose windows overlap is accepted; one whose receive started after the
  // send returned is not, nor is a send nobody received.
  std::vector<operation> pair = {op(0, op_kind::send, 7, outcome::ok, 0, 0, 3),
                                 op(0, op_kind::recv, from_select, outcome::ok, 7, 1, 2)};
  EXPECT_TRUE(spindle_lin::linearizable(with_end(pair), rendezvous));
  pair[1].call = 4;
  pair[1].ret = 5;
  EXPECT_FALSE(spindle_lin::linearizable(with_end(pair), rendezvous));
  pair.pop_back();
  EXPECT_FALSE(spindle_lin::linearizable(with_end(pair), rendezvous));
  // The same sequential send then receive is fine on a buffered channel.
  std::vector<operation> buffered = {op(0, op_kind::send, 7, outcome::ok, 0, 0, 1),
                                     op(0, op_kind::recv, from_select, outcome::ok, 7, 2, 3)};
  EXPECT_TRUE(spindle_lin::linearizable(with_end(buffered), bounded));
  // A select that took the default after a send completed on its channel: rejected.
  std::vector<operation> missed = {op(1, op_kind::send, 7, outcome::ok, 0, 0, 1),
                                   op(1, op_kind::recv, from_select, outcome::empty, 0, 2, 3)};
  EXPECT_FALSE(spindle_lin::linearizable(with_end(missed), bounded));
  // After close: a send that succeeds, or a receive that reports closed while a value is
  // still buffered, is rejected; draining first is accepted.
  std::vector<operation> closed = {op(0, op_kind::send, 7, outcome::ok, 0, 0, 1),
                                   op(0, close_kind, 0, outcome::ok, 0, 2, 3),
                                   op(0, op_kind::recv, 0, outcome::closed, 0, 4, 5)};
  EXPECT_FALSE(spindle_lin::linearizable(with_end(closed), bounded));
  closed[2] = op(0, op_kind::recv, 0, outcome::ok, 7, 4, 5);
  closed.push_back(op(0, op_kind::recv, 0, outcome::closed, 0, 6, 7));
  EXPECT_TRUE(spindle_lin::linearizable(with_end(closed), bounded));
  closed.push_back(op(0, op_kind::send, 8, outcome::ok, 0, 8, 9));
  EXPECT_FALSE(spindle_lin::linearizable(with_end(closed), bounded));
  // A try_send on an open rendezvous may report full whether or not a receiver waits.
  std::vector<operation> full = {op(0, op_kind::send, 7, outcome::full, 0, 0, 1)};
  EXPECT_TRUE(spindle_lin::linearizable(with_end(full), rendezvous));
}

// Real histories with one select's receive falsified (seeded): a value never sent, or the value
// credited to the other channel. The checker must reject every one of them, so the histories
// above could have failed.
TEST(LinSelect, RejectsFalsifiedSelectReceives) {
  std::mt19937 rng(12345);
  int mutated = 0;
  for (int h = 0; h < 200 && mutated < 40; ++h) {
    history_plan plan{99, h};
    std::size_t const cap0 = h % 2 == 0 ? 1 : 0;
    auto history = record_history(cap0, 2, plan);
    auto const spec = spec_of(cap0, 2);
    ASSERT_TRUE(spindle_lin::linearizable(history, spec)) << describe_channels(history);
    std::vector<std::size_t> picks;
    for (std::size_t i = 0; i < history.size(); ++i) {
      auto const& o = history[i];
      if (o.kind == op_kind::recv && o.arg == from_select && o.result == outcome::ok) {
        picks.push_back(i);
      }
    }
    if (picks.empty()) {
      continue;
    }
    auto const i = picks[rng() % picks.size()];
    auto never_sent = history;
    never_sent[i].value = 424242;
    EXPECT_FALSE(spindle_lin::linearizable(never_sent, spec)) << describe_channels(never_sent);
    auto other_channel = history;
    other_channel[i].object = 1 - other_channel[i].object;
    EXPECT_FALSE(spindle_lin::linearizable(other_channel, spec))
        << describe_channels(other_channel);
    ++mutated;
  }
  EXPECT_GE(mutated, 10) << "too few histories had a select that received a value";
}

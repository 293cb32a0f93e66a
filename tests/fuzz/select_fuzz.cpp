// Fuzz target: bytes decode into a sequence of operations on two or three channels of random
// flavours (unbounded, bounded(1..3), rendezvous), all on one thread: selects of one to three
// channel cases (spindle::select, select_biased, dynamic_select, and async_select /
// async_select_biased run by sync_wait) ending in on_default, on_timeout(0), a short
// on_timeout or no terminal case; try/timed/blocking sends and receives; the awaitable sends
// and receives (async_send, async_recv and their timed and stop_token forms) under sync_wait;
// close; and replacing a channel by a fresh one (which discards what it buffered).
//
// Nothing waits for a partner that cannot come: an operation that would wait forever is only
// issued when the model says it completes at once; otherwise the decoder picks its zero-timeout
// or default form, or a short timeout (bounded per input, to keep runs fast), which must then
// expire: on one thread nothing else can make a channel ready.
//
// Every outcome is checked against a sequential model (per channel: a FIFO of value ids, a
// capacity, a closed flag): a select completes exactly one case, and only a ready one (the
// first ready one when biased); on_default and timeouts are chosen only when no channel case is
// ready; a received value is the oldest buffered one; a send case not chosen leaves its value
// untouched; a send that fails hands the same value back. Values are tracked objects: after
// every step the live ones are exactly the buffered ones, and none is left at the end.
#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <optional>
#include <stop_token>
#include <utility>
#include <vector>

#include "fuzz/byte_reader.hpp"
#include "support/tracked.hpp"

namespace {

using spindle_test::tracked;
using namespace std::chrono_literals;

[[noreturn]] void fail(char const* what) {
  std::fprintf(stderr, "select_fuzz: %s\n", what);
  std::abort();
}

void expect(bool cond, char const* what) {
  if (!cond) {
    fail(what);
  }
}

/// A short wait that must expire (nothing else runs); at most `max_waits` per input.
constexpr auto short_wait = 50us;
constexpr int max_waits = 4;
constexpr std::size_t max_cases = 3;

struct channel {
  spindle::sender<tracked> tx;
  spindle::receiver<tracked> rx;
  std::size_t capacity;
  std::deque<std::uint64_t> model;
  bool closed = false;

  /// Whether a receive completes at once: a value is buffered, or closed (and drained).
  [[nodiscard]] auto recv_ready() const -> bool { return !model.empty() || closed; }
  /// Whether a send completes at once: closed, or room (never, for an open rendezvous).
  [[nodiscard]] auto send_ready() const -> bool {
    return closed || (capacity != 0 && model.size() < capacity);
  }
};

auto make_channel(std::uint8_t flavour_byte) -> channel {
  auto const flavour = flavour_byte % 5;  // 0 unbounded, 1..3 bounded(n), 4 rendezvous
  if (flavour == 0) {
    auto [tx, rx] = spindle::unbounded<tracked>();
    return {std::move(tx), std::move(rx), std::numeric_limits<std::size_t>::max(), {}};
  }
  std::size_t const capacity = flavour == 4 ? 0 : flavour;
  auto [tx, rx] = spindle::bounded<tracked>(capacity);
  return {std::move(tx), std::move(rx), capacity, {}};
}

struct world {
  std::vector<channel> channels;
  std::uint64_t next_id = 0;
  int waits_left = max_waits;

  /// Checks a receive that the model says completed (`got`: the value, or nullopt for closed).
  void check_recv(channel& ch, std::optional<tracked> const& got) {
    if (!ch.model.empty()) {
      expect(got.has_value() && got->id() == ch.model.front(),
             "a receive did not return the oldest buffered value");
      ch.model.pop_front();
    } else {
      expect(ch.closed && !got.has_value(), "a receive returned a value on an empty channel");
    }
  }

  /// Checks a send that the model says completed, of value `id`.
  void check_send(channel& ch, spindle::send_result<tracked> const& r, std::uint64_t id) {
    if (ch.closed) {
      expect(r.status == spindle::send_status::closed, "a send on a closed channel did not fail");
      expect(r.value.has_value() && r.value->id() == id, "a closed send lost its value");
    } else {
      expect(r.status == spindle::send_status::sent, "a send with room did not complete");
      expect(!r.value.has_value(), "a completed send handed a value back");
      ch.model.push_back(id);
    }
  }

  /// Checks a send that the model says could not complete now: `expected` (full or timed_out),
  /// the value handed back.
  static void check_not_sent(spindle::send_result<tracked> const& r, spindle::send_status expected,
                             std::uint64_t id) {
    expect(r.status == expected, "a send that had no room did not report it");
    expect(r.value.has_value() && r.value->id() == id, "a failed send lost its value");
  }
};

// ---- the coroutine forms, run by sync_wait ----

// clang 14 cannot emit a coroutine built with -fsanitize=function (part of undefined) and
// libFuzzer's coverage together ("Cannot represent a difference across sections"), so the
// coroutines here opt out of that one check.

[[clang::no_sanitize("function")]] auto async_send_now(spindle::sender<tracked>& tx,
                                                       std::uint64_t id)
    -> spindle::task<spindle::send_result<tracked>> {
  co_return co_await tx.async_send(tracked(id));
}

[[clang::no_sanitize("function")]] auto async_send_for(spindle::sender<tracked>& tx,
                                                       std::uint64_t id,
                                                       std::chrono::microseconds timeout)
    -> spindle::task<spindle::send_result<tracked>> {
  co_return co_await tx.async_send_for(tracked(id), timeout);
}

[[clang::no_sanitize("function")]] auto async_send_until_past(spindle::sender<tracked>& tx,
                                                              std::uint64_t id)
    -> spindle::task<spindle::send_result<tracked>> {
  co_return co_await tx.async_send_until(tracked(id), std::chrono::steady_clock::time_point::min());
}

[[clang::no_sanitize("function")]] auto async_recv_now(spindle::receiver<tracked>& rx)
    -> spindle::task<std::optional<tracked>> {
  co_return co_await rx.async_recv();
}

[[clang::no_sanitize("function")]] auto async_recv_for(spindle::receiver<tracked>& rx,
                                                       std::chrono::microseconds timeout)
    -> spindle::task<spindle::recv_result<tracked>> {
  co_return co_await rx.async_recv_for(timeout);
}

[[clang::no_sanitize("function")]] auto async_recv_stopped(spindle::receiver<tracked>& rx)
    -> spindle::task<spindle::recv_result<tracked>> {
  std::stop_source stop;
  stop.request_stop();
  co_return co_await rx.async_recv(stop.get_token());
}

template <class... Cases>
[[clang::no_sanitize("function")]] auto async_select_of(bool biased, Cases... cases)
    -> spindle::task<std::size_t> {
  if (biased) {
    co_return co_await spindle::async_select_biased(std::move(cases)...);
  }
  co_return co_await spindle::async_select(std::move(cases)...);
}

// ---- selects ----

enum class form : std::uint8_t { fair, biased, async_fair, async_biased, dynamic, dynamic_biased };
constexpr int forms = 6;

auto is_biased(form f) -> bool {
  return f == form::biased || f == form::async_biased || f == form::dynamic_biased;
}

template <class... Cases>
auto run_form(form f, Cases&... cases) -> std::size_t {
  switch (f) {
    case form::fair:
      return spindle::select(cases...);
    case form::biased:
      return spindle::select_biased(cases...);
    case form::async_fair:
      return spindle::sync_wait(async_select_of(false, std::move(cases)...));
    case form::async_biased:
      return spindle::sync_wait(async_select_of(true, std::move(cases)...));
    case form::dynamic:
    case form::dynamic_biased: {
      spindle::dynamic_select sel;
      (sel.add(std::move(cases)), ...);
      return f == form::dynamic ? sel.select() : sel.select_biased();
    }
  }
  return max_cases + 1;
}

enum class terminal : std::uint8_t { none, on_default, timeout_zero, timeout_short };

struct case_spec {
  bool send = false;
  bool no_arg = false;  // the handler takes no argument (only in a select of one case)
  std::size_t channel = 0;
};

/// One select: its cases, the values of its send cases, and what the handlers saw.
struct select_step {
  std::array<case_spec, max_cases> specs{};
  std::size_t n = 0;
  std::array<std::optional<tracked>, max_cases> values;
  std::array<std::uint64_t, max_cases> ids{};
  std::array<int, max_cases + 1> fired{};  // per case, and the terminal's
  std::array<std::optional<tracked>, max_cases> received;
  std::array<std::optional<spindle::send_result<tracked>>, max_cases> sent;
};

/// Calls `k` with the select case `i` of `s`.
template <class K>
void with_case(world& w, select_step& s, std::size_t i, K&& k) {
  auto& spec = s.specs[i];
  auto& ch = w.channels[spec.channel];
  if (spec.send) {
    k(spindle::on_send(ch.tx, *s.values[i], [&s, i](spindle::send_result<tracked> r) {
      ++s.fired[i];
      s.sent[i].emplace(std::move(r));
    }));
  } else {
    k(spindle::on_recv(ch.rx, [&s, i](std::optional<tracked> v) {
      ++s.fired[i];
      s.received[i] = std::move(v);
    }));
  }
}

/// Calls `k` with the only case of `s`, whose handler takes no argument.
template <class K>
void with_no_arg_case(world& w, select_step& s, K& k) {
  auto& ch = w.channels[s.specs[0].channel];
  if (s.specs[0].send) {
    auto c = spindle::on_send(ch.tx, *s.values[0], [&s] { ++s.fired[0]; });
    k(c);
  } else {
    auto c = spindle::on_recv(ch.rx, [&s] { ++s.fired[0]; });
    k(c);
  }
}

/// Builds cases i.. of `s` (at most max_cases in all), then calls `k` with all of them.
template <class K, class... Built>
void build_cases(world& w, select_step& s, std::size_t i, K& k, Built&... built) {
  if constexpr (sizeof...(Built) == 0) {
    if (s.specs[0].no_arg) {
      with_no_arg_case(w, s, k);
      return;
    }
  }
  if constexpr (sizeof...(Built) < max_cases) {
    // Always at least one case (s.n >= 1): a select with none does not compile.
    if (sizeof...(Built) == 0 || i < s.n) {
      with_case(w, s, i, [&](auto&& c) { build_cases(w, s, i + 1, k, built..., c); });
      return;
    }
  }
  if constexpr (sizeof...(Built) > 0) {
    k(built...);
  }
}

void do_select(world& w, spindle_fuzz::byte_reader& in) {
  select_step s;
  s.n = 1 + in.next() % max_cases;
  for (std::size_t i = 0; i < s.n; ++i) {
    auto const b = in.next();
    s.specs[i].send = (b & 1U) != 0;
    s.specs[i].no_arg = s.n == 1 && (b & 2U) != 0;
    s.specs[i].channel = (b >> 2U) % w.channels.size();
    if (s.specs[i].send) {
      s.ids[i] = w.next_id++;
      s.values[i].emplace(s.ids[i]);
    }
  }
  auto const mode = in.next();
  auto const f = static_cast<form>(mode % forms);
  auto term = static_cast<terminal>((mode / forms) % 4);

  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < s.n; ++i) {
    auto const& ch = w.channels[s.specs[i].channel];
    if (s.specs[i].send ? ch.send_ready() : ch.recv_ready()) {
      ready.push_back(i);
    }
  }
  if (ready.empty() && term == terminal::none) {
    term = terminal::on_default;  // would wait forever
  }
  if (term == terminal::timeout_short) {
    if (!ready.empty() || w.waits_left == 0) {
      term = terminal::timeout_zero;  // a short wait only where it must expire
    } else {
      --w.waits_left;
    }
  }

  std::size_t chosen = max_cases + 1;
  auto run = [&](auto&... cases) {
    auto terminal_fired = [&s] { ++s.fired[max_cases]; };
    switch (term) {
      case terminal::none:
        chosen = run_form(f, cases...);
        break;
      case terminal::on_default: {
        auto d = spindle::on_default(terminal_fired);
        chosen = run_form(f, cases..., d);
        break;
      }
      case terminal::timeout_zero:
      case terminal::timeout_short: {
        auto t =
            spindle::on_timeout(term == terminal::timeout_zero ? 0us : short_wait, terminal_fired);
        chosen = run_form(f, cases..., t);
        break;
      }
    }
  };
  build_cases(w, s, 0, run);

  if (ready.empty()) {
    expect(chosen == s.n, "a select with no ready case did not choose its default or timeout");
    expect(s.fired[max_cases] == 1, "the default or timeout handler did not run once");
  } else {
    expect(chosen < s.n, "a select chose its default or timeout while a case was ready");
    bool const was_ready = std::find(ready.begin(), ready.end(), chosen) != ready.end();
    expect(was_ready, "a select chose a case that was not ready");
    expect(!is_biased(f) || chosen == ready.front(), "a biased select skipped an earlier case");
    expect(s.fired[chosen] == 1, "the chosen handler did not run once");
  }
  for (std::size_t i = 0; i <= max_cases; ++i) {
    expect(i == chosen || (i == max_cases && chosen == s.n) || s.fired[i] == 0,
           "a handler of a case not chosen ran");
  }
  // Cases not chosen leave their values untouched.
  for (std::size_t i = 0; i < s.n; ++i) {
    if (s.specs[i].send && i != chosen) {
      expect(s.values[i]->id() == s.ids[i], "a send case not chosen moved its value");
    }
  }
  if (chosen >= s.n) {
    return;
  }
  auto const& spec = s.specs[chosen];
  auto& ch = w.channels[spec.channel];
  if (spec.send) {
    // The value left the caller's variable: into the channel, or into the result.
    expect(s.values[chosen]->id() != s.ids[chosen], "a chosen send case kept its value");
    if (spec.no_arg) {
      if (!ch.closed) {
        ch.model.push_back(s.ids[chosen]);
      }
    } else {
      w.check_send(ch, *s.sent[chosen], s.ids[chosen]);
    }
  } else if (spec.no_arg) {
    // The value was dropped by the select; the model only drops its oldest.
    if (!ch.model.empty()) {
      ch.model.pop_front();
    }
  } else {
    w.check_recv(ch, s.received[chosen]);
  }
}

// ---- plain and awaitable operations ----

void do_send(world& w, channel& ch, std::uint8_t how) {
  auto const id = w.next_id++;
  bool const now = ch.send_ready();
  switch (how % 6) {
    case 0: {
      auto r = ch.tx.try_send(tracked(id));
      if (now) {
        w.check_send(ch, r, id);
      } else {
        world::check_not_sent(r, spindle::send_status::full, id);
      }
      break;
    }
    case 1:
      if (now) {
        auto r = ch.tx.send(tracked(id));
        w.check_send(ch, r, id);
        break;
      }
      [[fallthrough]];
    case 2: {
      auto r = (how & 8U) != 0
                   ? ch.tx.send_for(tracked(id), 0ms)
                   : ch.tx.send_until(tracked(id), std::chrono::steady_clock::time_point::min());
      if (now) {
        w.check_send(ch, r, id);
      } else {
        world::check_not_sent(r, spindle::send_status::timed_out, id);
      }
      break;
    }
    case 3:
      if (now) {
        auto r = spindle::sync_wait(async_send_now(ch.tx, id));
        w.check_send(ch, r, id);
        break;
      }
      [[fallthrough]];
    case 4: {
      bool const wait = !now && w.waits_left > 0 && (how & 8U) != 0;
      w.waits_left -= wait ? 1 : 0;
      auto r = spindle::sync_wait(async_send_for(ch.tx, id, wait ? short_wait : 0us));
      if (now) {
        w.check_send(ch, r, id);
      } else {
        world::check_not_sent(r, spindle::send_status::timed_out, id);
      }
      break;
    }
    default: {
      auto r = spindle::sync_wait(async_send_until_past(ch.tx, id));
      if (now) {
        w.check_send(ch, r, id);
      } else {
        world::check_not_sent(r, spindle::send_status::timed_out, id);
      }
      break;
    }
  }
}

/// Checks a recv_result: received/closed as the model says, else `otherwise`.
void check_recv_result(world& w, channel& ch, spindle::recv_result<tracked> const& r,
                       spindle::recv_status otherwise) {
  if (ch.recv_ready()) {
    expect(r.status ==
               (ch.model.empty() ? spindle::recv_status::closed : spindle::recv_status::received),
           "a receive reported the wrong status");
    w.check_recv(ch, r.value);
  } else {
    expect(r.status == otherwise && !r.value.has_value(),
           "a receive on an empty channel did not report it");
  }
}

void do_recv(world& w, channel& ch, std::uint8_t how) {
  bool const now = ch.recv_ready();
  switch (how % 6) {
    case 0:
      check_recv_result(w, ch, ch.rx.try_recv(), spindle::recv_status::empty);
      break;
    case 1:
      if (now) {
        auto v = ch.rx.recv();
        w.check_recv(ch, v);
        break;
      }
      [[fallthrough]];
    case 2:
      check_recv_result(w, ch, ch.rx.recv_for(0ms), spindle::recv_status::timed_out);
      break;
    case 3:
      if (now) {
        auto v = spindle::sync_wait(async_recv_now(ch.rx));
        w.check_recv(ch, v);
        break;
      }
      [[fallthrough]];
    case 4: {
      bool const wait = !now && w.waits_left > 0 && (how & 8U) != 0;
      w.waits_left -= wait ? 1 : 0;
      auto r = spindle::sync_wait(async_recv_for(ch.rx, wait ? short_wait : 0us));
      check_recv_result(w, ch, r, spindle::recv_status::timed_out);
      break;
    }
    default:
      check_recv_result(w, ch, spindle::sync_wait(async_recv_stopped(ch.rx)),
                        spindle::recv_status::cancelled);
      break;
  }
}

void run(spindle_fuzz::byte_reader& in) {
  world w;
  std::size_t const count = 2 + in.next() % 2;
  for (std::size_t i = 0; i < count; ++i) {
    w.channels.push_back(make_channel(in.next()));
  }
  for (int steps = 0; steps < 1024 && !in.done(); ++steps) {
    auto const op = in.next();
    auto& ch = w.channels[(op >> 4U) % w.channels.size()];
    switch (op % 8) {
      case 0:
      case 1:
      case 2:
        do_select(w, in);
        break;
      case 3:
        do_send(w, ch, in.next());
        break;
      case 4:
        do_recv(w, ch, in.next());
        break;
      case 5:
        if ((op & 8U) != 0) {
          ch.tx.close();
        } else {
          ch.rx.close();
        }
        ch.closed = true;
        break;
      case 6:
        if ((op & 8U) != 0) {
          // A fresh channel: the old one's buffered values are destroyed with its handles.
          ch = make_channel(in.next());
        } else {
          expect(ch.rx.capacity() == ch.capacity, "capacity() disagrees with the model");
        }
        break;
      default:
        do_recv(w, ch, in.next());
        break;
    }
    std::size_t buffered = 0;
    for (auto const& c : w.channels) {
      buffered += c.model.size();
      if (c.capacity != 0) {
        expect(c.rx.size() == c.model.size(), "size() disagrees with the model");
      }
      expect(c.tx.is_closed() == c.closed, "is_closed() disagrees with the model");
    }
    expect(tracked::live() == static_cast<std::int64_t>(buffered),
           "live values differ from buffered values");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  spindle_fuzz::byte_reader in(data, size);
  run(in);
  expect(tracked::live() == 0, "values leaked or destroyed twice after the channels died");
  return 0;
}

// SPDX-License-Identifier: BSL-1.0
#pragma once
// Select: wait on several channel operations at once and complete exactly one (Go's select,
// crossbeam-channel's select!).
//
//   std::size_t i = spindle::select(
//       spindle::on_recv(rx_a, [&](std::optional<A> a) { /* nullopt: closed and drained */ }),
//       spindle::on_send(tx_b, b, [&](spindle::send_result<B> r) { /* sent, or closed */ }),
//       spindle::on_timeout(5ms, [&] { /* nothing was ready in time */ }));
//
// Exactly one case completes; its handler runs on the calling thread, and select returns the
// case's position in the argument list.
//   - Fair: spindle::select tries the cases from a random start, so among ready cases each is
//     equally likely and no ready channel starves; spindle::select_biased tries them in order.
//   - on_recv(rx, f): f(std::optional<T>): the value, or nullopt once the channel is closed and
//     drained (a closed channel is a ready case).
//   - on_send(tx, value, f): f(send_result<T>). `value` is taken by reference; the select moves
//     from it only when this case is chosen: when the channel accepted it (`sent`), or when the
//     channel is closed (`closed`, and the value is handed back in the result, as
//     sender::send() does). A case that is not chosen leaves its channel and its value
//     untouched.
//   - on_timeout(d, f) / on_deadline(t, f): chosen when no channel case is ready once the
//     deadline has passed (saturating as every timeout in the library:
//     detail/sync/deadline.hpp). The deadline is fixed when the case is made.
//   - on_stop(token, f): chosen once stop is requested and no channel case is ready; a request
//     wakes a waiting select.
//   - So a channel case that is ready always wins over an expired timeout or a stop request
//     (as recv_for and recv(stop_token) receive a value that is there); among several expired
//     timeouts and requested stops, the earliest in the argument list wins.
//   - on_default(f): chosen at once when no other case is ready: the select does not block.
//   - Every channel flavour works, the rendezvous included: a rendezvous case pairs with a
//     blocked partner (or another select) exactly as a plain send or recv would.
//   - A handler may also take no argument.
//
// Waiting: a select that finds nothing ready registers one waiter on every channel's wait
// list, sleeps once, and on wake-up withdraws from every list it did not win. It allocates
// nothing, whatever the number of cases (detail/select/select_loop.hpp has the protocol and
// its argument). Coroutines use the same cases with `co_await spindle::async_select(...)`
// (async.hpp).
//
// dynamic_select holds a number of cases known only at run time (crossbeam's Select).
// Timer channels: spindle::after(d) delivers one time point after d, spindle::tick(d) one every
// d (dropping ticks a slow receiver missed, as Go's Ticker); both are receivers, usable in any
// select or on their own.
//
// Thread safety: cases refer to their handles and values; a select uses them from the calling
// thread only while it runs. Any number of threads may select over the same channels.
// Misuse: a select with no case throws std::invalid_argument; a case on a moved-from handle is
// reported in every build.
// Examples: tests/select_test.cpp, examples/select_server.cpp.

#include <spindle/channel.hpp>
#include <spindle/channel_result.hpp>
#include <spindle/detail/coro/timer.hpp>
#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/select/select_loop.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>

#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <stop_token>
#include <type_traits>
#include <utility>
#include <vector>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// A type that spindle::select accepts as a case (what on_recv, on_send, ... return).
template <class C>
concept select_case = std::derived_from<std::remove_cvref_t<C>, detail::select_case>;

namespace detail {
/// Keeps a receiver passed by value (`on_recv(spindle::after(1s), f)`) alive for its case:
/// `Rx` is receiver<T> or spsc_receiver<T>.
template <class Rx>
struct receiver_holder {
  Rx held;
};

template <class Rx, class T, class F>
class owning_recv_case : private receiver_holder<Rx>, public recv_case<T, F> {
 public:
  owning_recv_case(Rx&& rx, F f)
      : receiver_holder<Rx>{std::move(rx)},
        recv_case<T, F>(channel_access::state_of(this->held), std::move(f)) {}
  owning_recv_case(owning_recv_case&& other) noexcept(std::is_nothrow_move_constructible_v<F>)
      : receiver_holder<Rx>{std::move(other.held)}, recv_case<T, F>(std::move(other)) {}
};
}  // namespace detail

/// Receives from `rx` (a receiver<T> or an spsc_receiver<T>); `f(std::optional<T>)` gets the
/// value, or nullopt when closed and drained.
template <class T, class F>
auto on_recv(basic_receiver<T>& rx, F f) -> detail::recv_case<T, F> {
  return detail::recv_case<T, F>(detail::channel_access::state_of(rx), std::move(f));
}

/// As above, for a receiver the case keeps (a timer channel made in place).
template <class T, class F>
auto on_recv(receiver<T>&& rx, F f) -> detail::owning_recv_case<receiver<T>, T, F> {
  return detail::owning_recv_case<receiver<T>, T, F>(std::move(rx), std::move(f));
}
template <class T, class F>
auto on_recv(spsc_receiver<T>&& rx, F f) -> detail::owning_recv_case<spsc_receiver<T>, T, F> {
  return detail::owning_recv_case<spsc_receiver<T>, T, F>(std::move(rx), std::move(f));
}

/// Sends `value` into `tx` (a sender<T> or an spsc_sender<T>); `f(send_result<T>)`. See the
/// file comment for when `value` is moved from.
template <class T, class F>
auto on_send(basic_sender<T>& tx, std::type_identity_t<T>& value, F f) -> detail::send_case<T, F> {
  return detail::send_case<T, F>(detail::channel_access::state_of(tx), value, std::move(f),
                                 detail::channel_access::lane_of(tx));
}

/// Chosen when no other case is ready within `timeout` (measured from now).
template <class Rep, class Period, class F>
auto on_timeout(std::chrono::duration<Rep, Period> timeout, F f) -> detail::timeout_case<F> {
  return detail::timeout_case<F>(detail::deadline_after(timeout), std::move(f));
}

/// Chosen when no other case is ready by `deadline`, on any clock.
template <class Clock, class Duration, class F>
auto on_deadline(std::chrono::time_point<Clock, Duration> deadline, F f)
    -> detail::timeout_case<F> {
  return detail::timeout_case<F>(detail::to_steady(deadline), std::move(f));
}

/// Chosen at once when no other case is ready: the select never blocks.
template <class F>
auto on_default(F f) -> detail::default_case<F> {
  return detail::default_case<F>(std::move(f));
}

/// Chosen once stop is requested on `token`.
template <class F>
auto on_stop(std::stop_token token, F f) -> detail::stop_case<F> {
  return detail::stop_case<F>(std::move(token), std::move(f));
}

/// Completes exactly one case, fairly among the ready ones, and returns its index. Blocks until
/// a case is ready, unless there is an on_default case.
/// Throws: whatever the chosen handler throws; std::bad_alloc from an unbounded channel's send.
template <select_case... Cases>
requires(sizeof...(Cases) > 0)
auto select(Cases&&... cases) -> std::size_t {
  std::array<detail::select_case*, sizeof...(Cases)> const all{&cases...};
  return detail::run_select(all, /*biased=*/false);
}

/// As select(), but among ready cases the earliest in the argument list wins.
template <select_case... Cases>
requires(sizeof...(Cases) > 0)
auto select_biased(Cases&&... cases) -> std::size_t {
  std::array<detail::select_case*, sizeof...(Cases)> const all{&cases...};
  return detail::run_select(all, /*biased=*/true);
}

/// A select over a number of cases known only at run time (crossbeam-channel's `Select`):
///
///   spindle::dynamic_select sel;
///   for (auto& rx : inputs) sel.add(spindle::on_recv(rx, [&](std::optional<int> v) { ... }));
///   std::size_t i = sel.select();                 // the index add() returned
///
/// The cases stay in the set, so select() may be called again (a timeout case keeps the
/// deadline it was made with). Each add() allocates the case; select() allocates nothing.
class dynamic_select {
 public:
  /// Adds a case and returns its index.
  template <select_case Case>
  auto add(Case&& c) -> std::size_t {
    using stored = std::remove_cvref_t<Case>;
    auto owned = std::make_unique<stored>(std::forward<Case>(c));
    ptrs_.push_back(owned.get());
    try {
      cases_.push_back(std::move(owned));
    } catch (...) {
      ptrs_.pop_back();
      throw;
    }
    return ptrs_.size() - 1;
  }

  /// Completes one case, fairly; returns its index. Throws: std::invalid_argument when empty;
  /// as spindle::select.
  auto select() -> std::size_t { return detail::run_select(ptrs_, /*biased=*/false); }
  /// As select(), preferring the case added first.
  auto select_biased() -> std::size_t { return detail::run_select(ptrs_, /*biased=*/true); }

  [[nodiscard]] auto size() const noexcept -> std::size_t { return ptrs_.size(); }
  [[nodiscard]] auto empty() const noexcept -> bool { return ptrs_.empty(); }
  void clear() noexcept {
    ptrs_.clear();
    cases_.clear();
  }

 private:
  std::vector<std::unique_ptr<detail::select_case>> cases_;
  std::vector<detail::select_case*> ptrs_;
};

namespace detail {
/// A timer channel's record: sends the time at each deadline (once for after, every period for
/// tick) into a channel of capacity one, and lives until the channel's last receiver is gone.
///
/// Lifetime: the record is the channel's receivers_gone_hook (channel_state.hpp), so it is
/// freed by the last receiver handle, whether the timer has fired or not (Go 1.23's
/// time.After and time.Ticker, collectable once unreferenced). The hook cancels the entry
/// first: timer_service::cancel() returns only once the entry is out of the heap and its
/// callback is not running on the timer thread, so the delete never meets a running fire()
/// and a dropped after(1h) frees its entry, record and channel at once. A record whose timer
/// is done (after's one delivery; a ticker whose channel was closed) drops its sender, so that
/// receivers see `closed` after the last time point, and waits for the hook.
///
/// Synchronization: fire() runs on the timer thread; the hook on the thread dropping the last
/// receiver. cancel()'s lock orders every fire() before the hook's delete. The one case the
/// lock does not cover is the hook running inside fire() on the timer thread itself (the
/// try_send resumed a coroutine of another library inline, and it dropped the receiver):
/// `in_fire_` and `orphaned_`, touched only by the timer thread there, hand the delete to
/// fire(). INVARIANT: fire() touches nothing of the record after queueing the entry again.
class timer_channel final : private receivers_gone_hook {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  /// Throws: std::system_error if the timer thread cannot start; std::bad_alloc.
  static auto start(steady_time first, std::chrono::steady_clock::duration period)
      -> receiver<time_point> {
    auto [tx, rx] = bounded<time_point>(1);
    auto* self = new timer_channel(std::move(tx), first, period);
    try {
      timer_service::instance().add(self->entry_);
    } catch (...) {
      delete self;
      throw;
    }
    // Before rx leaves this thread: the precondition of set_receivers_gone_hook.
    channel_access::state_of(rx).set_receivers_gone_hook(self);
    return std::move(rx);
  }

 private:
  timer_channel(sender<time_point>&& tx, steady_time first,
                std::chrono::steady_clock::duration period) noexcept
      : receivers_gone_hook{&receivers_gone}, tx_(std::move(tx)), period_(period) {
    entry_.when = first;
    entry_.fire = &fire;
    entry_.context = this;
  }

  /// The last receiver is gone: stop the timer, then free the record.
  static void receivers_gone(receivers_gone_hook* hook) noexcept {
    auto* self = static_cast<timer_channel*>(hook);
    static_cast<void>(timer_service::instance().cancel(self->entry_));
    if (self->in_fire_) {
      // Inside fire() on the timer thread (see Synchronization): fire() deletes.
      self->orphaned_ = true;
      return;
    }
    delete self;
  }

  static void fire(timer_entry* e) noexcept {
    auto* self = static_cast<timer_channel*>(e->context);
    auto const now = std::chrono::steady_clock::now();
    self->in_fire_ = true;
    // A full channel drops the tick: the receiver has not taken the last one yet.
    auto const r = self->tx_.try_send(now);
    self->in_fire_ = false;
    if (self->orphaned_) {
      delete self;
      return;
    }
    if (self->period_ <= self->period_.zero() || r.is_closed()) {
      self->finish_sending();
      return;
    }
    auto next = steady_time::max();
    if (self->period_ < steady_time::max() - e->when) {
      // Saturating: a period of centuries from a deadline near the end of steady_clock's
      // range would overflow; max() is never reached anyway.
      next = e->when + self->period_;
    }
    if (next <= now) {
      // Behind by a whole period or more (a stalled process): skip the missed ticks.
      next = self->period_ < steady_time::max() - now ? now + self->period_ : steady_time::max();
    }
    e->when = next;
    try {
      // INVARIANT (see the class comment): the last access to the record.
      timer_service::instance().add(*e);
    } catch (...) {
      // The timer's heap could not grow: the ticker stops, and its receiver sees closed.
      self->finish_sending();
    }
  }

  /// The timer is done: drop the sender, so receivers see `closed` once they took the last
  /// time point. The record stays for the hook.
  void finish_sending() noexcept { auto const gone = std::move(tx_); }

  sender<time_point> tx_;
  std::chrono::steady_clock::duration period_;
  timer_entry entry_;
  // Timer thread only (see Synchronization).
  bool in_fire_ = false;
  bool orphaned_ = false;
};

/// A tick period as steady_clock's duration, saturating at its max() as every timeout in the
/// library does (deadline.hpp) instead of overflowing.
/// Throws: std::invalid_argument if `period` is not positive (or NaN).
template <class Rep, class Period>
auto tick_period(std::chrono::duration<Rep, Period> period) -> std::chrono::steady_clock::duration {
  using target = std::chrono::steady_clock::duration;
  if (!(period > period.zero())) {
    throw std::invalid_argument("spindle::tick: the period must be positive");
  }
  if (!fits_half_of<target>(period)) {
    return target::max();
  }
  auto const p = std::chrono::duration_cast<target>(period);
  // A positive period shorter than steady_clock's tick still ticks, once per clock tick.
  return p > target::zero() ? p : target(1);
}
}  // namespace detail

/// A channel that receives one time point (steady_clock::now() at delivery) once `delay` has
/// passed (crossbeam-channel's `after`, Go's time.After), then reports closed. Usable in any
/// select. The delay saturates as every timeout does (detail/sync/deadline.hpp): one beyond
/// steady_clock's range never fires. Dropping the last receiver cancels the timer and frees
/// the channel at once, fired or not: `on_recv(after(1h), ...)` in a select loop costs nothing
/// once each select returns.
/// Throws: std::system_error if the timer thread cannot start; std::bad_alloc.
template <class Rep, class Period>
auto after(std::chrono::duration<Rep, Period> delay)
    -> receiver<std::chrono::steady_clock::time_point> {
  return detail::timer_channel::start(detail::deadline_after(delay),
                                      std::chrono::steady_clock::duration::zero());
}

/// A channel that receives a time point every `period` (Go's time.Ticker). Capacity one: a tick
/// that finds the last one still unreceived is dropped. The ticker stops, and its timer and
/// channel are freed, once every receiver is gone. A period beyond steady_clock's range
/// saturates (it never ticks); a positive period shorter than the clock's resolution ticks at
/// that resolution.
/// Throws: std::invalid_argument if period is not positive (or NaN); as after().
template <class Rep, class Period>
auto tick(std::chrono::duration<Rep, Period> period)
    -> receiver<std::chrono::steady_clock::time_point> {
  auto const p = detail::tick_period(period);
  return detail::timer_channel::start(detail::deadline_after(p), p);
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

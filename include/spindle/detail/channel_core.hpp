#pragma once
// What every channel flavour shares: the `transferable` concept, the status and result types
// of the public API (re-exported by <spindle/channel.hpp>), the options of a blocking call, and
// the register / re-check / park / unregister step of the blocking protocol.
//
// The blocking protocol (crossbeam-channel array.rs `send`/`recv`, RESEARCH.md §1.4 and
// (b) 4-5): an operation first tries without blocking, spinning with `detail::backoff` for a
// bounded budget; then it registers a waiter on the side's wait list, re-checks readiness
// (the lost-wakeup guard: see detail/wait_list.hpp for the seq_cst pairing), parks, and
// unregisters. A wake-up is a hint, not a hand-off: the woken party retries from the top.
// Every freed slot or sent message wakes one waiter; close wakes all.

#include <spindle/detail/atomic.hpp>
#include <spindle/detail/wait_list.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <type_traits>

namespace spindle {

/// A type a channel can carry. A slot is claimed before the value moves in, so the move must
/// not throw (a throwing move would leave a claimed slot that no value will ever fill); each
/// value is destroyed exactly once, by whoever holds it last (a receiver, or the channel on
/// discard), so neither may ~T: a throwing destructor during a discard would leak the rest.
template <class T>
concept transferable = std::is_object_v<T> && std::is_nothrow_move_constructible_v<T> &&
    std::is_nothrow_destructible_v<T>;

/// How a send ended.
enum class send_status : std::uint8_t {
  sent,      ///< the channel accepted the value
  full,      ///< try_send only: no room (no receiver waiting, for a rendezvous channel)
  closed,    ///< the channel is closed (or every receiver is gone)
  timed_out  ///< send_for/send_until only: no room before the deadline
};

/// The outcome of a send. Whenever `status != sent`, `value` holds the caller's value, handed
/// back untouched.
template <class T>
struct [[nodiscard]] send_result {
  send_status status;
  std::optional<T> value;  // the caller's value whenever status != sent

  explicit operator bool() const noexcept { return status == send_status::sent; }
};

/// How a receive ended.
enum class recv_status : std::uint8_t {
  received,   ///< `value` holds the message
  empty,      ///< try_recv only: nothing to receive yet
  timed_out,  ///< recv_for/recv_until only: nothing arrived before the deadline
  closed,     ///< the channel is closed and drained: nothing will ever arrive
  cancelled   ///< recv(stop_token) only: stop was requested before a message arrived
};

/// The outcome of a receive; `value` holds the message exactly when `status == received`.
template <class T>
struct [[nodiscard]] recv_result {
  recv_status status;
  std::optional<T> value;

  explicit operator bool() const noexcept { return status == recv_status::received; }
};

namespace detail {

/// What may end a blocking call besides success or close.
struct wait_options {
  std::optional<steady_time> deadline;
  std::stop_token const* stop = nullptr;

  [[nodiscard]] auto expired() const noexcept -> bool {
    return deadline && std::chrono::steady_clock::now() >= *deadline;
  }
  [[nodiscard]] auto stop_requested() const noexcept -> bool {
    return stop != nullptr && stop->stop_requested();
  }
};

/// Converts a deadline on any clock to a steady_clock deadline (re-based on both clocks' now).
template <class Clock, class Duration>
auto to_steady(std::chrono::time_point<Clock, Duration> t) -> steady_time {
  if constexpr (std::is_same_v<Clock, std::chrono::steady_clock>) {
    return std::chrono::time_point_cast<std::chrono::steady_clock::duration>(t);
  } else {
    auto const left = t - Clock::now();
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(left);
  }
}

/// A timeout as a steady_clock deadline, saturating instead of overflowing for huge timeouts.
template <class Rep, class Period>
auto deadline_after(std::chrono::duration<Rep, Period> d) -> steady_time {
  auto const now = std::chrono::steady_clock::now();
  using sd = std::chrono::steady_clock::duration;
  if (d <= d.zero()) {
    return now;
  }
  auto const room = steady_time::max() - now;
  if (std::chrono::duration_cast<std::chrono::duration<double>>(d) >=
      std::chrono::duration_cast<std::chrono::duration<double>>(room)) {
    return steady_time::max();
  }
  return now + std::chrono::duration_cast<sd>(d);
}

/// Aborts a waiter when stop is requested (the callback of a std::stop_callback).
struct abort_on_stop {
  waiter* target;
  void operator()() const noexcept {
    if (target->try_select(waiter::aborted)) {
      target->wake();
    }
  }
};

/// One round of blocking: registers the calling thread on `list`, re-checks `ready()` (which
/// must read the structure's state with seq_cst loads, see wait_list.hpp (A)/(B)), parks until
/// a waker, close, the deadline or stop ends the wait, and unregisters. The caller retries its
/// operation afterwards whatever happened.
template <class Ready>
void park_on(wait_list& list, Ready&& ready, wait_options const& options) noexcept {
  waiter self;
  wait_entry entry(self);
  list.push(entry);
  if (ready()) {
    if (self.try_select(waiter::aborted)) {
      list.remove(entry);
      return;
    }
    // A waker selected us in between; consume its wake below.
  }
  std::uintptr_t selection = waiter::waiting;
  if (options.stop != nullptr) {
    // May run abort_on_stop at once when stop was already requested.
    std::stop_callback<abort_on_stop> on_stop(*options.stop, abort_on_stop{&self});
    selection = self.wait(options.deadline);
    // on_stop's destructor waits for a callback running on another thread, so the waiter
    // outlives every access the callback makes.
  } else {
    selection = self.wait(options.deadline);
  }
  if (selection < waiter::first_operation) {
    // aborted or closed: nobody unlinked us on the way (a notifier unlinks what it selects).
    list.remove(entry);
  }
}

}  // namespace detail
}  // namespace spindle

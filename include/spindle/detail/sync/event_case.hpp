// SPDX-License-Identifier: BSL-1.0
#pragma once
// Waiting for a one-way event on a wait list: a value that arrives once (spindle::oneshot) or a
// version that moves on (spindle::watch). The three ways to wait that every spindle primitive
// offers, written once over a small `Source` interface: a thread blocks (wait_event_until, the
// park loop of a blocked channel receive), a coroutine suspends (event_awaiter, over the select
// awaiter of detail/coro/select_awaiter.hpp), and a select waits on it beside channel cases
// (event_case).
//
// A Source is a cheap, copyable view of the waited-on state:
//   using outcome = ...;                   what a completed wait yields (default-constructible)
//   auto poll(outcome& out) -> bool;       completes the wait now if it can, writing `out`
//   auto list() const -> wait_list&;       where waiters of this event sleep
//   auto ready() const noexcept -> bool;   the re-check after registering (seq_cst loads,
//                                          wait_list.hpp (A)): would poll() complete now?
// The event's side that makes it happen changes the state with a seq_cst RMW and then wakes
// every waiter of the list (wait_list::close_all behind an is_empty() look, (B)): either it
// sees the registration or the waiter's re-check sees the change. A wake is a hint, as for the
// buffered channels: every woken party polls again, so no operation id is handed over.
//
// Synchronization: none of its own; the source's state word and the wait list carry it.

#include <spindle/detail/channel/park.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/coro/select_awaiter.hpp>
#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/sync/backoff.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <cstdint>
#include <optional>
#include <stop_token>
#include <tuple>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// How a blocking or awaited wait on an event ended.
enum class event_wait : std::uint8_t { completed, timed_out, cancelled };

/// Wakes every party waiting on `list`: the waker's half of the Dekker pair (the caller changed
/// the event's state with a seq_cst RMW just before).
inline void wake_all_waiting(wait_list& list) noexcept {
  // seq_cst (B) in wait_list.hpp: is_empty() is that load; a waiter whose registration it
  // misses re-checks the state after registering and sees the caller's change.
  if (!list.is_empty()) {
    list.close_all();
  }
}

/// The event as a select case: chosen once poll() completes; the handler gets the outcome.
template <class Source, class F>
class event_case : public select_case {
 public:
  event_case(Source source, F f) : source_(source), f_(std::move(f)) {}
  event_case(event_case&& other) noexcept(std::is_nothrow_move_constructible_v<F>)
      : select_case(std::move(other)), source_(other.source_), f_(std::move(other.f_)) {}
  event_case(event_case const&) = delete;
  auto operator=(event_case const&) -> event_case& = delete;
  auto operator=(event_case&&) -> event_case& = delete;
  ~event_case() override = default;

  // An event case: tried before timeouts and stops, as a channel operation is.
  [[nodiscard]] auto is_channel() const noexcept -> bool override { return true; }
  [[nodiscard]] auto describe() const noexcept -> wait_target override {
    return {wait_kind::event, nullptr};
  }
  auto try_fire() -> bool override { return source_.poll(out_); }
  void watch(waiter& w) noexcept override {
    entry_.emplace(w);
    source_.list().push(*entry_);
  }
  [[nodiscard]] auto ready(waiter const& /*w*/) const noexcept -> bool override {
    return source_.ready();
  }
  void unwatch() noexcept override {
    if (entry_) {
      source_.list().remove(*entry_);
      entry_.reset();
    }
  }
  [[nodiscard]] auto owns(std::uintptr_t selection) const noexcept -> bool override {
    return entry_ && selection == entry_->operation();
  }
  // The waker selects with waiter::closed (a hint), never through the entry; if a selection
  // ever names the entry, polling again is still right.
  auto accept() -> bool override { return try_fire(); }
  void fire() override {
    if constexpr (!std::is_same_v<F, no_handler>) {
      call_handler(f_, std::move(out_));
    }
  }

  /// The outcome, once the case was chosen.
  auto take() noexcept -> typename Source::outcome { return std::move(out_); }

 private:
  Source source_;
  F f_;
  typename Source::outcome out_{};
  std::optional<wait_entry> entry_;
};

/// Blocks the calling thread until `source.poll(out)` completes, or until `deadline` passed or
/// stop was requested on `stop`. An event that happened wins over an expired deadline or a
/// requested stop. The loop of a blocked channel receive (recv_blocking.hpp): try, spin
/// briefly, park on the source's list until a wake (or the deadline, or stop), try again. A
/// timed park that ends unwoken is the deadline (under the model checker, the scheduler
/// letting it pass), as for a channel's timed receive.
template <class Source>
auto wait_event_until(Source source, typename Source::outcome& out,
                      std::optional<steady_time> deadline, std::stop_token const* stop)
    -> event_wait {
  wait_options options;
  options.deadline = deadline;
  options.stop = stop;
  options.what = {wait_kind::event, nullptr};
  backoff spin;
  bool blocked = false;
  for (;;) {
    if (source.poll(out)) {
      return event_wait::completed;
    }
    if (options.stop_requested()) {
      return event_wait::cancelled;
    }
    if (options.expired()) {
      return event_wait::timed_out;
    }
    if (!spin.is_completed()) {
      // The event is often a reply that is already on its way: a few rounds of spinning and
      // yielding cost less than a sleep and a wake.
      spin.snooze();
      continue;
    }
    park_on(
        source.list(), [&source] { return source.ready(); }, options, blocked,
        /*is_send=*/false);
  }
}

/// `co_await`: the coroutine form, a select of the event case and at most one timeout or stop
/// case. `result()` is the outcome, or nullopt when the extra case was chosen; `other()` says
/// which way that extra case ended the wait.
template <class Source, class... Extra>
class event_awaiter : public select_awaiter_base<event_case<Source, no_handler>, Extra...> {
  using base = select_awaiter_base<event_case<Source, no_handler>, Extra...>;

 public:
  explicit event_awaiter(Source source, Extra&&... extra)
      : base(/*biased=*/true, event_case<Source, no_handler>(source, no_handler{}),
             std::move(extra)...) {}

 protected:
  auto result() -> std::optional<typename Source::outcome> {
    this->rethrow_error();
    if (this->chosen() == 0) {
      return std::optional<typename Source::outcome>(std::get<0>(this->cases()).take());
    }
    return std::nullopt;
  }

  /// How a chosen extra case ended the wait: a stop request, or else a deadline.
  static constexpr event_wait other = (std::is_same_v<Extra, stop_case<no_handler>> || ...)
                                          ? event_wait::cancelled
                                          : event_wait::timed_out;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

// SPDX-License-Identifier: BSL-1.0
#pragma once
// Waiting for a broadcast message (detail/broadcast/broadcast_state.hpp) in the three ways every
// spindle wait offers: a thread blocks (broadcast_recv_blocking: try, keep trying for the wait
// budget, then park_on the state's wait list), a coroutine suspends (broadcast_recv_awaiter, on
// the select awaiter of detail/coro/select_awaiter.hpp), and a select waits on it beside
// channel cases (broadcast_recv_case). All three register on the one wait list; a sender wakes
// every registered receiver, each completing its wait as `closed`, which all three treat as
// "look again" (a broadcast message is for everyone, so a wake is a hint, never a hand-off).

#include <spindle/broadcast_result.hpp>
#include <spindle/detail/broadcast/broadcast_state.hpp>
#include <spindle/detail/channel/park.hpp>
#include <spindle/detail/channel/wait_budget.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/coro/select_awaiter.hpp>
#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <cstdint>
#include <optional>
#include <stop_token>
#include <tuple>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Receives from a broadcast at `cursor` (a receiver's position, which it moves on); the
/// handler gets broadcast_recv_result<T>: received, lagged or closed.
template <class T, class F>
class broadcast_recv_case : public select_case {
 public:
  broadcast_recv_case(broadcast_state<T>& state, broadcast_cursor& cursor, F f)
      : state_(&state), cursor_(&cursor), f_(std::move(f)) {}
  broadcast_recv_case(broadcast_recv_case&& other) noexcept(std::is_nothrow_move_constructible_v<F>)
      : select_case(std::move(other)),
        state_(other.state_),
        cursor_(other.cursor_),
        f_(std::move(other.f_)) {}
  broadcast_recv_case(broadcast_recv_case const&) = delete;
  auto operator=(broadcast_recv_case const&) -> broadcast_recv_case& = delete;
  auto operator=(broadcast_recv_case&&) -> broadcast_recv_case& = delete;
  ~broadcast_recv_case() override = default;

  [[nodiscard]] auto is_channel() const noexcept -> bool override { return true; }
  [[nodiscard]] auto describe() const noexcept -> wait_target override {
    return {wait_kind::broadcast, state_};
  }
  /// Throws: whatever T's copy constructor throws (the message stays unread).
  auto try_fire() -> bool override {
    auto r = state_->try_recv(*cursor_);
    if (r.status == broadcast_recv_status::empty) {
      return false;
    }
    out_.emplace(std::move(r));
    return true;
  }
  void watch(waiter& w) noexcept override {
    entry_.emplace(w);
    state_->note_waiting(true);
    state_->waiters().push(*entry_);
  }
  [[nodiscard]] auto ready(waiter const& /*w*/) const noexcept -> bool override {
    return state_->ready(*cursor_);
  }
  void unwatch() noexcept override {
    if (entry_) {
      state_->waiters().remove(*entry_);
      state_->note_waiting(false);
      entry_.reset();
    }
  }
  // A sender completes the waits it wakes as `closed`, never through an entry: owns() is
  // false, and the select tries every case again.
  auto accept() -> bool override { return try_fire(); }
  void fire() override {
    if constexpr (!std::is_same_v<F, no_handler>) {
      call_handler(f_, take());
    }
  }

  /// The outcome, once the case was chosen.
  auto take() noexcept -> broadcast_recv_result<T> {
    SPINDLE_ASSERT(out_.has_value(), "take() of a broadcast case that was not chosen");
    broadcast_recv_result<T> r = std::move(*out_);
    out_.reset();
    return r;
  }

 private:
  broadcast_state<T>* state_;
  broadcast_cursor* cursor_;
  F f_;
  std::optional<broadcast_recv_result<T>> out_;
  std::optional<wait_entry> entry_;
};

/// Blocks the calling thread until a message, a lag or the close is there at `cursor`, or
/// until the deadline passes (timed_out) or stop is requested (cancelled). A message that is
/// there wins over an expired deadline or a requested stop.
///
/// Throws: whatever T's copy constructor throws (the message stays unread).
template <class T>
auto broadcast_recv_blocking(broadcast_state<T>& state, broadcast_cursor& cursor,
                             wait_options const& options) -> broadcast_recv_result<T> {
  bool blocked = false;
  for (;;) {
    auto r = state.try_recv(cursor);
    if (r.status != broadcast_recv_status::empty) {
      return r;
    }
    if (options.stop_requested()) {
      return {broadcast_recv_status::cancelled, std::nullopt, 0};
    }
    if (options.expired()) {
      return {broadcast_recv_status::timed_out, std::nullopt, 0};
    }
    bool found = false;
    for (wait_budget budget(options, wait_budget::default_polls); budget.keep_trying();) {
      if (state.ready(cursor)) {
        found = true;
        break;
      }
    }
    if (found) {
      continue;
    }
    state.note_waiting(true);
    wait_options parked = options;
    parked.what = {wait_kind::broadcast, &state};
    park_on(
        state.waiters(), [&state, &cursor] { return state.ready(cursor); }, parked, blocked,
        /*is_send=*/false);
    options.deadline_passed = parked.deadline_passed;
    state.note_waiting(false);
  }
}

/// `co_await rx.async_recv...()`: the coroutine form. The result is broadcast_recv_result<T>:
/// received, lagged or closed, and with an extra case timed_out (a timeout) or cancelled (a
/// stop).
template <class T, class... Extra>
class broadcast_recv_awaiter
    : public select_awaiter_base<broadcast_recv_case<T, no_handler>, Extra...> {
  using base = select_awaiter_base<broadcast_recv_case<T, no_handler>, Extra...>;

 public:
  broadcast_recv_awaiter(broadcast_state<T>& state, broadcast_cursor& cursor,
                         broadcast_recv_status other, Extra&&... extra)
      : base(/*biased=*/true, broadcast_recv_case<T, no_handler>(state, cursor, no_handler{}),
             std::move(extra)...),
        other_(other) {}
  broadcast_recv_awaiter(broadcast_recv_awaiter&& other) noexcept
      : base(std::move(other)), other_(other.other_) {}

  auto await_resume() -> broadcast_recv_result<T> {
    this->rethrow_error();
    if (this->chosen() == 0) {
      return std::get<0>(this->cases()).take();
    }
    return broadcast_recv_result<T>{other_, std::nullopt, 0};
  }

 private:
  broadcast_recv_status other_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

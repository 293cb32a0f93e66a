// SPDX-License-Identifier: BSL-1.0
#pragma once
// The cases of a select (spindle/select.hpp) and of the awaitable channel operations
// (detail/coro/select_awaiter.hpp): each is one operation that the select may complete.
//
// A case is used in rounds by the select loop (detail/select/select_loop.hpp):
//   try_fire()   completes the operation now if it can (the case is then chosen: its outcome
//                is stored in the case, and fire() runs the handler with it);
//   watch(w)     registers waiter `w` on the channel side the operation waits for;
//   ready(w)     the re-check after watching (seq_cst loads, wait_list.hpp (A)): would
//                try_fire() not find the channel full/empty?
//   unwatch()    withdraws the registration (unless the selector already unlinked it);
//   owns(sel)    whether selection `sel` is this case's entry;
//   accept()     the waiter was selected through this case's entry: completes the operation.
//                For the rendezvous flavour the selector already handed the value over through
//                the entry's packet, so accept() only collects it; so it is for a bounded
//                channel's send case when the receiver that selected it found it a slot
//                (wait_entry::completed); otherwise a selection is a wake-up hint and accept()
//                tries again (it may lose to another party, and the select then goes round).
// A case that is not chosen leaves its channel and its value untouched: a send case moves from
// the caller's value only inside a successful try_send, or when a rendezvous partner or a
// bounded channel's receiver selected its entry (which only happens while the select waits, and
// then the select completes through that case).
//
// Design: crossbeam-channel's `SelectHandle` (crossbeam-rs/crossbeam:
// crossbeam-channel/src/select.rs: try_select, register, is_ready, unregister, accept) over
// spindle's wait list (detail/sync/wait_list.hpp).

#include <spindle/channel_result.hpp>
#include <spindle/detail/channel/channel_state.hpp>
#include <spindle/detail/channel/park.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>
#include <spindle/detail/sync/wait_note.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stop_token>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// What the select loop asks of every case. See the file comment for the protocol.
class select_case {
 public:
  select_case() = default;
  select_case(select_case const&) = delete;
  auto operator=(select_case const&) -> select_case& = delete;
  virtual ~select_case() = default;

  /// Throws: std::bad_alloc from an unbounded channel's send.
  virtual auto try_fire() -> bool = 0;
  virtual void watch(waiter& /*w*/) noexcept {}
  [[nodiscard]] virtual auto ready(waiter const& /*w*/) const noexcept -> bool { return false; }
  virtual void unwatch() noexcept {}
  [[nodiscard]] virtual auto owns(std::uintptr_t /*selection*/) const noexcept -> bool {
    return false;
  }
  virtual auto accept() -> bool { return false; }
  /// Runs the handler with the outcome. Throws: whatever the handler throws.
  virtual void fire() = 0;
  /// The deadline of a timeout case.
  [[nodiscard]] virtual auto deadline() const noexcept -> std::optional<steady_time> {
    return std::nullopt;
  }
  /// Whether this is the case that runs when nothing else is ready (on_default).
  [[nodiscard]] virtual auto is_default() const noexcept -> bool { return false; }
  /// Whether this is a channel operation. The others (a timeout, a stop) are tried only after
  /// every channel case failed: a value ready in time is never lost to an expired deadline or a
  /// stop request, as recv_for and recv(stop_token) behave.
  [[nodiscard]] virtual auto is_channel() const noexcept -> bool { return false; }
  /// What this case waits on, for spindle::dump() (detail/sync/wait_note.hpp). A case that
  /// only bounds a wait (a stop, the default) says `none`; a timeout says `sleep`.
  [[nodiscard]] virtual auto describe() const noexcept -> wait_target { return {}; }

 protected:
  // Cases are moved into an awaiter before any use; the registration state is never moved.
  select_case(select_case&& /*other*/) noexcept {}
};

/// Calls `f(arg)` if `f` takes an argument, else `f()`: handlers may ignore the outcome.
template <class F, class Arg>
void call_handler(F& f, Arg&& arg) {
  if constexpr (std::is_invocable_v<F&, Arg&&>) {
    std::invoke(f, std::forward<Arg>(arg));
  } else {
    std::invoke(f);
  }
}

/// A handler that does nothing: the awaitable operations read the outcome from the case.
struct no_handler {
  template <class... A>
  void operator()(A&&... /*args*/) const noexcept {}
};

/// Receives from a channel; the handler gets std::optional<T> (nullopt: closed and drained).
template <class T, class F>
class recv_case : public select_case {
 public:
  recv_case(channel_state<T>& ch, F f) : ch_(&ch), f_(std::move(f)) {}
  recv_case(recv_case&& other) noexcept(std::is_nothrow_move_constructible_v<F>)
      : select_case(std::move(other)), ch_(other.ch_), f_(std::move(other.f_)) {}

  [[nodiscard]] auto is_channel() const noexcept -> bool override { return true; }
  [[nodiscard]] auto describe() const noexcept -> wait_target override {
    return {wait_kind::recv, ch_};
  }
  auto try_fire() -> bool override {
    auto r = ch_->try_recv();
    switch (r.status) {
      case recv_status::received:
        out_ = std::move(r.value);
        return true;
      case recv_status::closed:
        out_.reset();
        return true;
      default:
        return false;
    }
  }
  void watch(waiter& w) noexcept override {
    entry_.emplace(w, &packet_);
    ch_->watch_recv(*entry_);
  }
  [[nodiscard]] auto ready(waiter const& w) const noexcept -> bool override {
    return ch_->recv_ready(&w);
  }
  void unwatch() noexcept override {
    if (entry_) {
      ch_->unwatch_recv(*entry_);
      entry_.reset();
    }
  }
  [[nodiscard]] auto owns(std::uintptr_t selection) const noexcept -> bool override {
    return entry_ && selection == entry_->operation();
  }
  auto accept() -> bool override {
    if (ch_->hands_off()) {
      // The sender moved its value into packet_ under the channel's mutex before it woke us.
      out_ = std::move(packet_);
      packet_.reset();
      return true;
    }
    return try_fire();
  }
  void fire() override { call_handler(f_, std::move(out_)); }

  /// The outcome, for the awaitable receive: the value, or nullopt when closed and drained.
  auto take() noexcept -> std::optional<T> { return std::move(out_); }

 private:
  channel_state<T>* ch_;
  F f_;
  std::optional<T> out_;
  // The rendezvous flavour's hand-off storage while the entry is watched.
  std::optional<T> packet_;
  std::optional<wait_entry> entry_;
};

/// Sends the caller's value; the handler gets send_result<T>: sent, or closed with the value
/// (moved out of the caller's variable into the result, as sender::send returns it). `lane`
/// is the sender handle's (state_ref::lane), which the lanes flavour sends into.
template <class T, class F>
class send_case : public select_case {
 public:
  send_case(channel_state<T>& ch, T& value, F f, send_lane lane = 0)
      : ch_(&ch), value_(&value), f_(std::move(f)), lane_(lane) {}
  send_case(send_case&& other) noexcept(std::is_nothrow_move_constructible_v<F>)
      : select_case(std::move(other)),
        ch_(other.ch_),
        value_(other.value_),
        f_(std::move(other.f_)),
        lane_(other.lane_) {}

  [[nodiscard]] auto is_channel() const noexcept -> bool override { return true; }
  [[nodiscard]] auto describe() const noexcept -> wait_target override {
    return {wait_kind::send, ch_};
  }
  auto try_fire() -> bool override {
    status_ = ch_->try_send(*value_, lane_);
    return status_ != send_status::full;
  }
  void watch(waiter& w) noexcept override {
    // A receiver that selects this entry moves the value out of the caller's variable
    // directly: a rendezvous (zero_channel::take) always, a bounded channel when it finds a
    // slot for it (array_channel::hand_off).
    entry_.emplace(w, value_);
    handed_off_ = false;
    ch_->watch_send(*entry_, lane_);
  }
  [[nodiscard]] auto ready(waiter const& w) const noexcept -> bool override {
    return ch_->send_ready(&w, lane_);
  }
  void unwatch() noexcept override {
    if (entry_) {
      ch_->unwatch_send(*entry_, lane_);
      // Read once the wait has ended (unwatch follows it): only the selector that won this
      // entry's operation writes it, before its wake.
      note_read(&entry_->completed, sizeof(entry_->completed));
      handed_off_ = entry_->completed;
      entry_.reset();
    }
  }
  [[nodiscard]] auto owns(std::uintptr_t selection) const noexcept -> bool override {
    return entry_ && selection == entry_->operation();
  }
  auto accept() -> bool override {
    if (ch_->hands_off() || handed_off_) {
      status_ = send_status::sent;
      return true;
    }
    return try_fire();
  }
  void fire() override { call_handler(f_, take()); }

  /// The outcome: sent, or closed with the value moved into the result.
  auto take() noexcept -> send_result<T> {
    if (status_ == send_status::sent) {
      return send_result<T>{send_status::sent, std::nullopt};
    }
    return send_result<T>{status_, std::optional<T>(std::move(*value_))};
  }

  /// Points the case at another variable (the awaitable send keeps the value in its awaiter).
  void rebind(T& value) noexcept { value_ = &value; }

 private:
  channel_state<T>* ch_;
  T* value_;
  F f_;
  send_lane lane_;
  send_status status_ = send_status::full;
  // Whether the last watched round's entry was completed by a bounded channel's receiver
  // (wait_entry::completed, array_channel::hand_off).
  bool handed_off_ = false;
  std::optional<wait_entry> entry_;
};

/// Chosen once its deadline has passed and no other case was ready before.
template <class F>
class timeout_case : public select_case {
 public:
  timeout_case(steady_time deadline, F f) : deadline_(deadline), f_(std::move(f)) {}
  timeout_case(timeout_case&& other) noexcept(std::is_nothrow_move_constructible_v<F>)
      : select_case(std::move(other)), deadline_(other.deadline_), f_(std::move(other.f_)) {}

  auto try_fire() -> bool override {
#if defined(SPINDLE_MODEL_CHECK)
    // The timer's virtual time (detail/coro/timer.hpp): the deadline passed once the timer
    // fired for it.
    return ::spindle::model::now() >= deadline_;
#else
    return std::chrono::steady_clock::now() >= deadline_;
#endif
  }
  [[nodiscard]] auto deadline() const noexcept -> std::optional<steady_time> override {
    return deadline_;
  }
  [[nodiscard]] auto describe() const noexcept -> wait_target override {
    return {wait_kind::sleep, nullptr};
  }
  void fire() override { std::invoke(f_); }

 private:
  steady_time deadline_;
  F f_;
};

/// Whether `C` is a timeout case (an awaiter that holds none needs no timer entry).
template <class C>
inline constexpr bool is_timeout_case_v = false;
template <class F>
inline constexpr bool is_timeout_case_v<timeout_case<F>> = true;

/// Chosen when no other case is ready at once: the select does not block (Go's `default:`).
template <class F>
class default_case : public select_case {
 public:
  explicit default_case(F f) : f_(std::move(f)) {}
  default_case(default_case&& other) noexcept(std::is_nothrow_move_constructible_v<F>)
      : select_case(std::move(other)), f_(std::move(other.f_)) {}

  auto try_fire() -> bool override { return false; }
  [[nodiscard]] auto is_default() const noexcept -> bool override { return true; }
  [[nodiscard]] auto describe() const noexcept -> wait_target override {
    return {wait_kind::none, nullptr};
  }
  void fire() override { std::invoke(f_); }

 private:
  F f_;
};

/// Chosen once stop is requested on its token; while the select waits, the request wakes it.
template <class F>
class stop_case : public select_case {
 public:
  stop_case(std::stop_token token, F f) : token_(std::move(token)), f_(std::move(f)) {}
  stop_case(stop_case&& other) noexcept(std::is_nothrow_move_constructible_v<F>)
      : select_case(std::move(other)), token_(std::move(other.token_)), f_(std::move(other.f_)) {}

  auto try_fire() -> bool override { return token_.stop_requested(); }
  void watch(waiter& w) noexcept override {
    // Runs abort_on_stop at once when stop was already requested. The callback's destructor
    // (in unwatch) waits for a callback running on another thread, so the waiter outlives it.
    callback_.emplace(token_, abort_on_stop{&w});
  }
  [[nodiscard]] auto ready(waiter const& /*w*/) const noexcept -> bool override {
    return token_.stop_requested();
  }
  void unwatch() noexcept override { callback_.reset(); }
  [[nodiscard]] auto describe() const noexcept -> wait_target override {
    return {wait_kind::none, nullptr};
  }
  void fire() override { std::invoke(f_); }

 private:
  std::stop_token token_;
  F f_;
  std::optional<std::stop_callback<abort_on_stop>> callback_;
};

/// What a select waits on, for dumps: the one case that waits (a timeout, a stop or the
/// default beside it only bounds the wait), else a select of the `count` waiting cases with
/// the first one's object.
struct case_summary {
  wait_target what;
  std::size_t count = 0;
};

inline auto summarize(std::span<select_case* const> cases) noexcept -> case_summary {
  wait_target first{wait_kind::none, nullptr};
  std::size_t waiting = 0;
  bool sleeps = false;
  for (select_case const* const c : cases) {
    wait_target const t = c->describe();
    if (t.kind == wait_kind::none) {
      continue;
    }
    if (t.kind == wait_kind::sleep) {
      sleeps = true;
      continue;
    }
    if (waiting++ == 0) {
      first = t;
    }
  }
  if (waiting == 0) {
    return {{sleeps ? wait_kind::sleep : wait_kind::other, nullptr}, 0};
  }
  if (waiting == 1) {
    return {first, 0};
  }
  return {{wait_kind::select, first.object}, waiting};
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle::oneshot: one value, sent once, received once, for threads and coroutines alike (a
// reply to a request, the result of a job). tokio's oneshot channel
// (tokio-rs/tokio: tokio/src/sync/oneshot.rs), in the shape of spindle's channels.
//
//   auto [tx, rx] = spindle::oneshot<int>();
//   // a thread or a coroutine:              // another thread or coroutine:
//   tx.send(42);                             std::optional<int> v = rx.recv();
//                                            auto v = co_await rx.async_recv();
//
// - oneshot<T>() makes a connected pair of move-only handles, a oneshot_sender<T> and a
//   oneshot_receiver<T>.
// - The sender sends at most once: send(v) returns `sent`, or `closed` with v handed back when
//   the receiver closed or is gone. A second send after a value was sent is a bug and throws
//   std::logic_error in every build. Destroying the sender without sending closes the oneshot:
//   the receiver's waits end with nullopt / `closed`. is_closed() tells the sender that the
//   receiver is gone (or closed), so nobody wants the value any more; wait_closed() (with
//   _for and stop_token forms), co_await async_closed() and on_closed(tx, f) wait for that.
// - The receiver receives with recv() (blocking; nullopt: no value will come), try_recv(),
//   recv_for/recv_until/recv(stop_token) (recv_result: received, closed, timed_out,
//   cancelled), co_await async_recv() and its timed and stop_token forms, and
//   on_recv(rx, f) in a select beside channel cases. After the value was received, every
//   receive reports closed. close() refuses later sends; a value sent before stays receivable.
//   A value that is there wins over an expired deadline or a requested stop.
// - Exactly once: a value sent is received once, or destroyed once when the receiver is
//   destroyed without receiving it.
//
// Protocol: one state word and a slot (detail/sync/oneshot_state.hpp); the receiver waits on
// one wait list as every spindle primitive does (detail/sync/event_case.hpp), woken by the send
// or by the sender's destruction. Model tests: tests/model/oneshot_watch_test.cpp and
// tests/model/pairs_oneshot_test.cpp.
// Happens-before: whatever the sender did before send(v) is visible to the receiver once its
// receive returns v; the sender's destruction happens before a receive that reports closed
// because of it.
// Progress: send, try_recv and the handles' destruction are lock-free (a short lock only to wake
// a receiver that sleeps); a blocked receive spins briefly, then parks.
// Thread safety: each handle is used by one thread (or coroutine) at a time; the two handles may
// be used concurrently from anywhere. A moved-from handle may only be destroyed or assigned to;
// any other use is reported in every build.
// Memory: one allocation per pair (the value's slot, two words and two wait lists).
// When not to use: for a stream of values use a channel; for the latest of many values that
// several readers watch, spindle::watch.
// Examples: tests/oneshot_test.cpp (test `Oneshot.Example`).

#include <spindle/channel_result.hpp>
#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>
#include <spindle/detail/sync/event_case.hpp>
#include <spindle/detail/sync/oneshot_state.hpp>

#include <chrono>
#include <optional>
#include <stop_token>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

template <transferable T>
class oneshot_sender;
template <transferable T>
class oneshot_receiver;

namespace detail {
/// Makes the pair: the only caller of the handles' adopting constructors.
struct oneshot_access {
  template <class T>
  static auto make_pair() -> std::pair<oneshot_sender<T>, oneshot_receiver<T>> {
    auto* s = new oneshot_state<T>();
    return {oneshot_sender<T>(s), oneshot_receiver<T>(s)};
  }
  template <class T>
  static auto source_of(oneshot_receiver<T> const& rx) noexcept -> oneshot_source<T> {
    return {&rx.get()};
  }
};

/// `co_await rx.async_recv()` -> std::optional<T>; with a timeout or stop case, recv_result<T>.
template <class T, class... Extra>
class oneshot_recv_awaiter : public event_awaiter<oneshot_source<T>, Extra...> {
  using base = event_awaiter<oneshot_source<T>, Extra...>;

 public:
  using base::base;

  auto await_resume() {
    auto r = this->result();
    if constexpr (sizeof...(Extra) == 0) {
      return std::move(*r);
    } else {
      if (!r) {
        return recv_result<T>{
            base::other == event_wait::cancelled ? recv_status::cancelled : recv_status::timed_out,
            std::nullopt};
      }
      auto const status = r->has_value() ? recv_status::received : recv_status::closed;
      return recv_result<T>{status, std::move(*r)};
    }
  }
};
/// `co_await tx.async_closed()`: resumes once the receiver closed or is gone.
template <class T>
class oneshot_closed_awaiter : public event_awaiter<oneshot_closed_source<T>> {
  using base = event_awaiter<oneshot_closed_source<T>>;

 public:
  using base::base;

  void await_resume() { static_cast<void>(this->result()); }
};
}  // namespace detail

/// Makes a oneshot: a connected pair of a oneshot_sender<T> and a oneshot_receiver<T>.
/// Throws: std::bad_alloc.
///
/// Returns: std::pair<oneshot_sender<T>, oneshot_receiver<T>> (deduced, as bounded()'s).
template <transferable T>
auto oneshot() {
  return detail::oneshot_access::make_pair<T>();
}

/// The sending side of a oneshot: move-only; sends at most one value.
///
/// Thread safety: one thread at a time. A moved-from sender may only be destroyed or assigned
/// to; any other use is reported in every build.
template <transferable T>
class oneshot_sender {
 public:
  oneshot_sender(oneshot_sender&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  auto operator=(oneshot_sender&& other) noexcept -> oneshot_sender& {
    if (this != &other) {
      drop();
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  oneshot_sender(oneshot_sender const&) = delete;
  auto operator=(oneshot_sender const&) -> oneshot_sender& = delete;
  /// Without a send before, closes the oneshot: the receiver's waits end with closed.
  ~oneshot_sender() { drop(); }

  /// Sends `value`: `sent`, or `closed` with the value handed back when the receiver closed or
  /// is gone. Never blocks.
  /// Throws: std::logic_error when this sender sent a value already (nothing is sent; the
  /// argument is destroyed).
  auto send(T value) -> send_result<T> { return get().send(std::move(value)); }

  /// True once the receiver closed or is gone: a send would fail, nobody wants the value.
  [[nodiscard]] auto is_closed() const noexcept -> bool { return get().receiver_closed(); }

  /// True once this sender sent a value (received or not).
  [[nodiscard]] auto was_sent() const noexcept -> bool { return get().was_sent(); }

  /// Blocks until the receiver closed or is gone (tokio's `Sender::closed`): a worker can stop
  /// computing a reply nobody waits for any more.
  void wait_closed() {
    bool out = false;
    static_cast<void>(detail::wait_event_until(closed_source(), out, std::nullopt, nullptr));
  }
  /// As wait_closed(); false when `timeout` passed first (saturating as every timeout).
  template <class Rep, class Period>
  [[nodiscard]] auto wait_closed_for(std::chrono::duration<Rep, Period> timeout) -> bool {
    bool out = false;
    return detail::wait_event_until(closed_source(), out, detail::deadline_after(timeout),
                                    nullptr) == detail::event_wait::completed;
  }
  /// As wait_closed(); false once stop is requested on `stop` first.
  [[nodiscard]] auto wait_closed(std::stop_token stop) -> bool {
    bool out = false;
    return detail::wait_event_until(closed_source(), out, std::nullopt, &stop) ==
           detail::event_wait::completed;
  }
  /// `co_await tx.async_closed()`: the coroutine form of wait_closed().
  [[nodiscard]] auto async_closed() -> detail::oneshot_closed_awaiter<T> {
    return detail::oneshot_closed_awaiter<T>(closed_source());
  }

 private:
  friend struct detail::oneshot_access;
  explicit oneshot_sender(detail::oneshot_state<T>* s) noexcept : state_(s) {}

  [[nodiscard]] auto get() const noexcept -> detail::oneshot_state<T>& {
    SPINDLE_CHECK(state_ != nullptr, "use of a moved-from spindle::oneshot_sender");
    return *state_;
  }
  [[nodiscard]] auto closed_source() const noexcept -> detail::oneshot_closed_source<T> {
    return {&get()};
  }
  void drop() noexcept {
    if (state_ != nullptr) {
      std::exchange(state_, nullptr)->drop_sender();
    }
  }

  template <class U, class F>
  friend auto on_closed(oneshot_sender<U>& tx, F f)
      -> detail::event_case<detail::oneshot_closed_source<U>, F>;

  detail::oneshot_state<T>* state_;
};

/// The receiving side of a oneshot: move-only; receives the one value.
///
/// Thread safety: one thread (or coroutine, or select) at a time. A moved-from receiver may
/// only be destroyed or assigned to; any other use is reported in every build.
template <transferable T>
class oneshot_receiver {
 public:
  oneshot_receiver(oneshot_receiver&& other) noexcept
      : state_(std::exchange(other.state_, nullptr)) {}
  auto operator=(oneshot_receiver&& other) noexcept -> oneshot_receiver& {
    if (this != &other) {
      drop();
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  oneshot_receiver(oneshot_receiver const&) = delete;
  auto operator=(oneshot_receiver const&) -> oneshot_receiver& = delete;
  /// Closes; destroys a value that was sent and not received.
  ~oneshot_receiver() { drop(); }

  /// Receives the value, blocking until it is sent. Returns std::nullopt when no value will
  /// come: the sender is gone without sending, this receiver closed before a send, or the value
  /// was received already.
  auto recv() -> std::optional<T> {
    std::optional<T> out;
    static_cast<void>(detail::wait_event_until(source(), out, std::nullopt, nullptr));
    return out;
  }

  /// As recv(), but `stop.request_stop()` from any thread ends the wait: `received`, `closed`
  /// or `cancelled`. A value that is there is received even when stop was requested.
  auto recv(std::stop_token stop) -> recv_result<T> { return recv_at(std::nullopt, &stop); }

  /// As recv(), but gives up after `timeout`: `received`, `closed` or `timed_out` (saturating
  /// as every timeout in the library: detail/sync/deadline.hpp).
  template <class Rep, class Period>
  auto recv_for(std::chrono::duration<Rep, Period> timeout) -> recv_result<T> {
    return recv_at(detail::deadline_after(timeout), nullptr);
  }

  /// As recv(), but gives up at `deadline`, on any clock: `received`, `closed` or `timed_out`.
  template <class Clock, class Duration>
  auto recv_until(std::chrono::time_point<Clock, Duration> deadline) -> recv_result<T> {
    return recv_at(detail::to_steady(deadline), nullptr);
  }

  /// Receives without waiting: `received`, `empty` (not sent yet) or `closed`.
  auto try_recv() noexcept -> recv_result<T> {
    std::optional<T> out;
    if (!get().poll(out)) {
      return recv_result<T>{recv_status::empty, std::nullopt};
    }
    auto const status = out ? recv_status::received : recv_status::closed;
    return recv_result<T>{status, std::move(out)};
  }

  /// `co_await rx.async_recv()` -> std::optional<T>: the coroutine form of recv(); the
  /// coroutine is suspended, holding no thread, until the value is sent or the sender is gone.
  [[nodiscard]] auto async_recv() -> detail::oneshot_recv_awaiter<T> {
    return detail::oneshot_recv_awaiter<T>(source());
  }

  /// -> recv_result<T>: as recv(stop).
  [[nodiscard]] auto async_recv(std::stop_token stop)
      -> detail::oneshot_recv_awaiter<T, detail::stop_case<detail::no_handler>> {
    return detail::oneshot_recv_awaiter<T, detail::stop_case<detail::no_handler>>(
        source(), detail::stop_case<detail::no_handler>(std::move(stop), {}));
  }

  /// -> recv_result<T>: as recv_for(). The deadline is kept by the timer.
  template <class Rep, class Period>
  [[nodiscard]] auto async_recv_for(std::chrono::duration<Rep, Period> timeout)
      -> detail::oneshot_recv_awaiter<T, detail::timeout_case<detail::no_handler>> {
    return detail::oneshot_recv_awaiter<T, detail::timeout_case<detail::no_handler>>(
        source(), detail::timeout_case<detail::no_handler>(detail::deadline_after(timeout), {}));
  }

  /// -> recv_result<T>: as recv_until().
  template <class Clock, class Duration>
  [[nodiscard]] auto async_recv_until(std::chrono::time_point<Clock, Duration> deadline)
      -> detail::oneshot_recv_awaiter<T, detail::timeout_case<detail::no_handler>> {
    return detail::oneshot_recv_awaiter<T, detail::timeout_case<detail::no_handler>>(
        source(), detail::timeout_case<detail::no_handler>(detail::to_steady(deadline), {}));
  }

  /// Refuses later sends (they fail and hand the value back); a value sent before stays
  /// receivable. Idempotent.
  void close() noexcept { get().close_receiver(); }

 private:
  friend struct detail::oneshot_access;
  explicit oneshot_receiver(detail::oneshot_state<T>* s) noexcept : state_(s) {}

  [[nodiscard]] auto get() const noexcept -> detail::oneshot_state<T>& {
    SPINDLE_CHECK(state_ != nullptr, "use of a moved-from spindle::oneshot_receiver");
    return *state_;
  }
  [[nodiscard]] auto source() const noexcept -> detail::oneshot_source<T> { return {&get()}; }

  auto recv_at(std::optional<detail::steady_time> deadline, std::stop_token const* stop)
      -> recv_result<T> {
    std::optional<T> out;
    switch (detail::wait_event_until(source(), out, deadline, stop)) {
      case detail::event_wait::completed:
        break;
      case detail::event_wait::timed_out:
        return recv_result<T>{recv_status::timed_out, std::nullopt};
      case detail::event_wait::cancelled:
        return recv_result<T>{recv_status::cancelled, std::nullopt};
    }
    auto const status = out ? recv_status::received : recv_status::closed;
    return recv_result<T>{status, std::move(out)};
  }

  void drop() noexcept {
    if (state_ != nullptr) {
      std::exchange(state_, nullptr)->drop_receiver();
    }
  }

  detail::oneshot_state<T>* state_;
};

/// A select case that receives from `rx`: `f(std::optional<T>)` gets the value, or nullopt
/// when no value will come.
template <class T, class F>
auto on_recv(oneshot_receiver<T>& rx, F f) -> detail::event_case<detail::oneshot_source<T>, F> {
  return detail::event_case<detail::oneshot_source<T>, F>(detail::oneshot_access::source_of(rx),
                                                          std::move(f));
}

/// A select case chosen once the receiver of `tx` closed or is gone; `f()` runs then.
template <class T, class F>
auto on_closed(oneshot_sender<T>& tx, F f)
    -> detail::event_case<detail::oneshot_closed_source<T>, F> {
  return detail::event_case<detail::oneshot_closed_source<T>, F>(tx.closed_source(), std::move(f));
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

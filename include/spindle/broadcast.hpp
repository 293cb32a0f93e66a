// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle::broadcast<T>(capacity): every receiver gets every message; a receiver that falls
// more than `capacity` messages behind is told how many it lost and goes on from the oldest
// message still held. The sender never waits for a slow receiver.
//
//   auto [tx, rx] = spindle::broadcast<config>(16);
//   auto rx2 = tx.subscribe();                 // gets every message sent from now on
//   tx.send(cfg);                              // -> how many receivers it reached
//   auto r = rx.recv();                        // received / lagged (r.missed) / closed
//
// Design: tokio's broadcast channel (tokio-rs/tokio: tokio/src/sync/broadcast.rs): a ring of
// `capacity` slots, each with the position of the message it holds and a reader-writer lock;
// how this one differs, and why, is in detail/broadcast/broadcast_state.hpp. Worked examples:
// the `Example` test of tests/broadcast_test.cpp and examples/broadcast_config.cpp.
//
// Semantics:
//   - Messages are numbered in the order the senders' send() calls take effect (senders are
//     serialised by a short lock). Each receiver reads them in that order, each at most once.
//   - A new receiver from subscribe() starts at the next message sent; a clone of a receiver
//     starts where the original is now. The first receiver starts at message 0.
//   - The ring holds the last `capacity` messages. A receiver whose next message was
//     overwritten gets `lagged` with `missed` = how many it skipped, and the next receive
//     returns the oldest message still held. Lag counts are exact for the moment of the
//     receive: under a fast sender a lagged receiver may lag again at once.
//   - send() with no receiver returns `no_receivers` and hands the value back (tokio's
//     SendError): a message nobody can ever read is not stored. A receiver subscribed later
//     gets the messages sent after it.
//   - The broadcast closes when the last sender is destroyed or close() is called on a sender:
//     then sends fail (`closed`, value handed back), and each receiver reads what the ring
//     still holds for it and then gets `closed`.
//   - Values: each message is copied out to each receiver that reads it; the message itself is
//     destroyed exactly once, when a later send overwrites its slot or when the last handle
//     goes. So up to `capacity` messages stay alive after every receiver read them.
//
// Thread safety: any number of sender handles may send at once from any threads. A receiver
// handle is one reader position: use each receiver from one thread or coroutine at a time
// (clone it to read from several); different receivers may be used concurrently. A select
// case and an awaitable hold a reference to their receiver, which must outlive them.
//
// Progress: send() takes the senders' lock (a bit in the tail word; concurrent senders spin and
// yield while one is inside), one slot's write lock (waiting only for a copy in progress on that
// slot) and wakes receivers only when some wait: it never waits for a receiver to catch up.
// try_recv() takes one slot's read lock (waiting only while a send rewrites that slot). recv()
// blocks while nothing new is there.
//
// Happens-before: whatever a sender did before send(v) is visible to a receiver once its
// receive returns a copy of v. close() happens before every receive that reports `closed`.
//
// Memory: `capacity` slots of one T, a position and a lock word each, allocated once; no
// allocation per message. When not to use it: when each message must go to one receiver only
// (a channel), or when slow receivers must slow the sender down instead of losing messages
// (one bounded channel per receiver).

#include <spindle/broadcast_result.hpp>
#include <spindle/detail/broadcast/broadcast_state.hpp>
#include <spindle/detail/broadcast/broadcast_wait.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

template <broadcastable T>
class broadcast_sender;
template <broadcastable T>
class broadcast_receiver;

namespace detail {
/// Makes the first pair of handles of a new state: the only caller of their adopting
/// constructors, which are private so that no public signature takes a detail:: type.
struct broadcast_access {
  template <class T>
  static auto make_pair(broadcast_state<T>* s) noexcept
      -> std::pair<broadcast_sender<T>, broadcast_receiver<T>> {
    return {broadcast_sender<T>(s), broadcast_receiver<T>(s, s->cursor_at_tail())};
  }
};
}  // namespace detail

/// The sending handle of a broadcast. Copyable: every copy is a sender; the broadcast closes
/// when the last one is destroyed (or on close()).
template <broadcastable T>
class broadcast_sender {
 public:
  broadcast_sender(broadcast_sender const& other) noexcept : state_(other.state_) {
    if (state_ != nullptr) {
      state_->add_sender();
    }
  }
  broadcast_sender(broadcast_sender&& other) noexcept
      : state_(std::exchange(other.state_, nullptr)) {}
  auto operator=(broadcast_sender other) noexcept -> broadcast_sender& {
    std::swap(state_, other.state_);
    return *this;
  }
  ~broadcast_sender() {
    if (state_ != nullptr && state_->drop_sender()) {
      delete state_;
    }
  }

  /// Stores `value` for every receiver; never blocks on a receiver. Returns `sent` with the
  /// number of receivers that existed then, or `no_receivers` / `closed` with the value
  /// handed back.
  ///
  /// Preconditions: this handle was not moved from (checked: std::logic_error).
  auto send(T value) -> broadcast_send_result<T> { return get().send(std::move(value)); }

  /// A new receiver that gets every message sent after this call.
  [[nodiscard]] auto subscribe() const -> broadcast_receiver<T> {
    auto& s = get();
    s.add_receiver();
    return broadcast_receiver<T>(&s, s.cursor_at_tail());
  }

  /// Closes the broadcast for every handle: later sends fail; receivers read what is held,
  /// then get `closed`.
  void close() { get().close(); }
  [[nodiscard]] auto is_closed() const -> bool { return get().is_closed(); }

  [[nodiscard]] auto capacity() const -> std::size_t { return get().capacity(); }
  /// Receivers that exist now (a snapshot).
  [[nodiscard]] auto receiver_count() const -> std::size_t { return get().receiver_count(); }
  /// Receivers registered to wait for a message now (a snapshot).
  [[nodiscard]] auto waiting() const -> std::size_t { return get().waiting(); }

 private:
  friend struct detail::broadcast_access;
  explicit broadcast_sender(detail::broadcast_state<T>* s) noexcept : state_(s) {}

  auto get() const -> detail::broadcast_state<T>& {
    if (state_ == nullptr) {
      throw std::logic_error("spindle::broadcast_sender: use of a moved-from handle");
    }
    return *state_;
  }

  detail::broadcast_state<T>* state_;
};

/// A receiving handle of a broadcast: one position in the stream of messages. A copy is a new
/// receiver at the same position.
template <broadcastable T>
class broadcast_receiver {
 public:
  broadcast_receiver(broadcast_receiver const& other) noexcept
      : state_(other.state_), cursor_(other.cursor_) {
    if (state_ != nullptr) {
      state_->add_receiver();
    }
  }
  broadcast_receiver(broadcast_receiver&& other) noexcept
      : state_(std::exchange(other.state_, nullptr)), cursor_(other.cursor_) {}
  auto operator=(broadcast_receiver other) noexcept -> broadcast_receiver& {
    std::swap(state_, other.state_);
    std::swap(cursor_, other.cursor_);
    return *this;
  }
  ~broadcast_receiver() {
    if (state_ != nullptr && state_->drop_receiver()) {
      delete state_;
    }
  }

  /// The next message without blocking: received, lagged, empty (nothing new) or closed.
  ///
  /// Throws: whatever T's copy constructor throws (the message stays unread);
  /// std::logic_error on a moved-from handle.
  auto try_recv() -> broadcast_recv_result<T> { return get().try_recv(cursor_); }

  /// Blocks until a message is there: received, lagged or closed.
  /// Throws: as try_recv().
  auto recv() -> broadcast_recv_result<T> { return wait(detail::wait_options{}); }
  /// As recv(); `cancelled` once stop is requested on `stop` first.
  auto recv(std::stop_token stop) -> broadcast_recv_result<T> {
    detail::wait_options options;
    options.stop = &stop;
    return wait(options);
  }
  /// As recv(); `timed_out` when `timeout` passed first.
  template <class Rep, class Period>
  auto recv_for(std::chrono::duration<Rep, Period> timeout) -> broadcast_recv_result<T> {
    detail::wait_options options;
    options.deadline = detail::deadline_after(timeout);
    return wait(options);
  }
  /// As recv(); `timed_out` when `deadline` (on any clock) passed first.
  template <class Clock, class Duration>
  auto recv_until(std::chrono::time_point<Clock, Duration> deadline) -> broadcast_recv_result<T> {
    detail::wait_options options;
    options.deadline = detail::to_steady(deadline);
    return wait(options);
  }

  /// `co_await rx.async_recv()` -> broadcast_recv_result<T>: received, lagged or closed.
  [[nodiscard]] auto async_recv() -> detail::broadcast_recv_awaiter<T> {
    return detail::broadcast_recv_awaiter<T>(get(), cursor_, broadcast_recv_status::closed);
  }
  /// As async_recv(); `cancelled` once stop is requested on `stop` first.
  [[nodiscard]] auto async_recv(std::stop_token stop)
      -> detail::broadcast_recv_awaiter<T, detail::stop_case<detail::no_handler>> {
    return {get(), cursor_, broadcast_recv_status::cancelled,
            detail::stop_case<detail::no_handler>(std::move(stop), {})};
  }
  /// As async_recv(); `timed_out` when `timeout` passed first.
  template <class Rep, class Period>
  [[nodiscard]] auto async_recv_for(std::chrono::duration<Rep, Period> timeout)
      -> detail::broadcast_recv_awaiter<T, detail::timeout_case<detail::no_handler>> {
    return {get(), cursor_, broadcast_recv_status::timed_out,
            detail::timeout_case<detail::no_handler>(detail::deadline_after(timeout), {})};
  }
  /// As async_recv(); `timed_out` when `deadline` (on any clock) passed first.
  template <class Clock, class Duration>
  [[nodiscard]] auto async_recv_until(std::chrono::time_point<Clock, Duration> deadline)
      -> detail::broadcast_recv_awaiter<T, detail::timeout_case<detail::no_handler>> {
    return {get(), cursor_, broadcast_recv_status::timed_out,
            detail::timeout_case<detail::no_handler>(detail::to_steady(deadline), {})};
  }

  /// A new receiver at the next message to be sent (tokio's resubscribe).
  [[nodiscard]] auto subscribe() const -> broadcast_receiver<T> {
    auto& s = get();
    s.add_receiver();
    return broadcast_receiver<T>(&s, s.cursor_at_tail());
  }

  [[nodiscard]] auto is_closed() const -> bool { return get().is_closed(); }
  [[nodiscard]] auto capacity() const -> std::size_t { return get().capacity(); }
  /// Receivers registered to wait for a message now (a snapshot).
  [[nodiscard]] auto waiting() const -> std::size_t { return get().waiting(); }

 private:
  friend struct detail::broadcast_access;
  friend class broadcast_sender<T>;
  template <class U, class F>
  friend auto on_recv(broadcast_receiver<U>& rx, F f) -> detail::broadcast_recv_case<U, F>;

  broadcast_receiver(detail::broadcast_state<T>* s, detail::broadcast_cursor c) noexcept
      : state_(s), cursor_(c) {}

  auto get() const -> detail::broadcast_state<T>& {
    if (state_ == nullptr) {
      throw std::logic_error("spindle::broadcast_receiver: use of a moved-from handle");
    }
    return *state_;
  }

  auto wait(detail::wait_options const& options) -> broadcast_recv_result<T> {
    return detail::broadcast_recv_blocking(get(), cursor_, options);
  }

  detail::broadcast_state<T>* state_;
  detail::broadcast_cursor cursor_;
};

/// A select case that receives from `rx`: `f(broadcast_recv_result<T>)` gets received, lagged
/// or closed (a lag is an outcome too: the case is chosen and `rx` moves to the oldest message).
template <class T, class F>
auto on_recv(broadcast_receiver<T>& rx, F f) -> detail::broadcast_recv_case<T, F> {
  return detail::broadcast_recv_case<T, F>(rx.get(), rx.cursor_, std::move(f));
}

/// Makes a broadcast holding the last `capacity` messages.
///
/// Throws: std::invalid_argument if `capacity` is 0 or above 2^30
/// (broadcast_max_capacity); std::bad_alloc.
///
/// Returns: std::pair<broadcast_sender<T>, broadcast_receiver<T>>.
template <broadcastable T>
auto broadcast(std::size_t capacity) {
  return detail::broadcast_access::make_pair(new detail::broadcast_state<T>(capacity));
}

/// The largest capacity broadcast() accepts.
inline constexpr std::size_t broadcast_max_capacity = std::size_t{1} << 30U;
static_assert(broadcast_max_capacity == detail::broadcast_state<int>::max_capacity);

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

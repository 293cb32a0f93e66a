// SPDX-License-Identifier: BSL-1.0
#pragma once
// The vocabulary of spindle::broadcast (spindle/broadcast.hpp) that a user names: which types
// a broadcast carries (`broadcastable`) and how a send or a receive ended. Kept apart from
// broadcast.hpp, as channel_result.hpp is from channel.hpp, for code that only passes results
// around. The results have the shape of every spindle result (channel_result.hpp): a status
// enum, what the call hands back, `explicit operator bool` true on success, one `is_...()`
// per status.

#include <spindle/channel_result.hpp>
#include <spindle/detail/sync/config.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// A type a broadcast carries. Every receiver gets its own copy of each message, made while
/// the message stays in the ring for the others, so T must be copy constructible (the copy may
/// throw: the receive then throws and the message stays unread). The sender moves the value
/// into a slot it has claimed, so the move must not throw, and the ring destroys the values it
/// overwrites, so neither may ~T (the requirements of `transferable`).
template <class T>
concept broadcastable = transferable<T> && std::is_copy_constructible_v<T>;

/// How a broadcast send ended.
enum class broadcast_send_status : std::uint8_t {
  sent,          ///< stored for every receiver that exists now (`receivers` of them)
  no_receivers,  ///< no receiver exists: nobody could ever read it, so it was not stored
  closed         ///< the broadcast is closed (close(), or every sender is gone)
};

/// The outcome of a send: how many receivers the message reached, or the caller's value handed
/// back untouched when it was not sent.
template <class T>
struct [[nodiscard]] broadcast_send_result {
  broadcast_send_status status;
  /// Receivers that existed when the message was stored (a snapshot; 0 unless sent).
  std::size_t receivers = 0;
  /// The caller's value whenever status != sent.
  std::optional<T> value;

  explicit operator bool() const noexcept { return status == broadcast_send_status::sent; }
  [[nodiscard]] auto is_sent() const noexcept -> bool {
    return status == broadcast_send_status::sent;
  }
  [[nodiscard]] auto is_no_receivers() const noexcept -> bool {
    return status == broadcast_send_status::no_receivers;
  }
  [[nodiscard]] auto is_closed() const noexcept -> bool {
    return status == broadcast_send_status::closed;
  }
};

/// How a broadcast receive ended.
enum class broadcast_recv_status : std::uint8_t {
  received,   ///< `value` holds a copy of the next message
  lagged,     ///< the receiver fell more than `capacity` behind: `missed` messages were
              ///< overwritten unread; the next receive continues from the oldest still held
  empty,      ///< try_recv only: no new message yet
  timed_out,  ///< recv_for/recv_until only: nothing arrived before the deadline
  closed,     ///< every sender is gone (or close() was called) and this receiver read the rest
  cancelled   ///< recv(stop_token) only: stop was requested before a message arrived
};

/// The outcome of a broadcast receive: `value` holds the message exactly when
/// `status == received`; `missed` is the number of messages skipped when `status == lagged`.
template <class T>
struct [[nodiscard]] broadcast_recv_result {
  broadcast_recv_status status;
  std::optional<T> value;
  std::uint64_t missed = 0;

  explicit operator bool() const noexcept { return status == broadcast_recv_status::received; }
  [[nodiscard]] auto is_received() const noexcept -> bool {
    return status == broadcast_recv_status::received;
  }
  [[nodiscard]] auto is_lagged() const noexcept -> bool {
    return status == broadcast_recv_status::lagged;
  }
  [[nodiscard]] auto is_empty() const noexcept -> bool {
    return status == broadcast_recv_status::empty;
  }
  [[nodiscard]] auto is_timed_out() const noexcept -> bool {
    return status == broadcast_recv_status::timed_out;
  }
  [[nodiscard]] auto is_closed() const noexcept -> bool {
    return status == broadcast_recv_status::closed;
  }
  [[nodiscard]] auto is_cancelled() const noexcept -> bool {
    return status == broadcast_recv_status::cancelled;
  }
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

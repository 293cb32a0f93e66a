// SPDX-License-Identifier: BSL-1.0
#pragma once
// The vocabulary of spindle's channels that a user names: which types a channel carries
// (`transferable`), and how a send or a receive ended (`send_status`/`send_result`,
// `recv_status`/`recv_result`). Included by <spindle/channel.hpp>; on its own for code that
// only passes results around.
//
// A result is a status and a `std::optional<T>`: the received message, or the caller's value
// handed back by a send that did not happen, so no value is ever lost in a result. Test it
// with `if (r)` (sent / received) or one of the `is_...()` helpers.
//
// The shape of every result type in spindle (these two; steal_result and steal_batch_result in
// deque_result.hpp; try_post_result and try_spawn_result in executor.hpp):
//   - a `struct [[nodiscard]]` whose `status` member is an enum class saying how the call
//     ended, next to what the call hands back (a value, a count, a join handle);
//   - `explicit operator bool`, true exactly on success;
//   - one `[[nodiscard]] is_<enumerator>()` per enumerator of its status.
// The success enumerator says what happened to the value or the task: `sent`, `received`,
// `stolen`, `accepted`. Every other enumerator names why that did not happen (`full`, `empty`,
// `closed`, `timed_out`, `cancelled`, `retry`).

#include <spindle/detail/sync/config.hpp>

#include <concepts>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// A type a channel can carry. A slot is claimed before the value moves in, so the move must
/// not throw (a throwing move would leave a claimed slot that no value will ever fill); each
/// value is destroyed exactly once, by whoever holds it last (a receiver, or the channel on
/// discard), so neither may ~T: a throwing destructor during a discard would leak the rest.
template <class T>
concept transferable = std::is_object_v<T> && std::is_nothrow_move_constructible_v<T> &&
                       std::is_nothrow_destructible_v<T>;

/// How a send ended.
enum class send_status : std::uint8_t {
  sent,       ///< the channel accepted the value
  full,       ///< try_send only: no room (no receiver waiting, for a rendezvous channel)
  closed,     ///< the channel is closed (or every receiver is gone)
  timed_out,  ///< send_for/send_until only: no room before the deadline
  cancelled   ///< send(v, stop_token) only: stop was requested before the value was taken
};

/// The outcome of a send. Whenever `status != sent`, `value` holds the caller's value, handed
/// back untouched.
template <class T>
struct [[nodiscard]] send_result {
  send_status status;
  std::optional<T> value;  // the caller's value whenever status != sent

  explicit operator bool() const noexcept { return status == send_status::sent; }
  [[nodiscard]] auto is_sent() const noexcept -> bool { return status == send_status::sent; }
  [[nodiscard]] auto is_full() const noexcept -> bool { return status == send_status::full; }
  [[nodiscard]] auto is_closed() const noexcept -> bool { return status == send_status::closed; }
  [[nodiscard]] auto is_timed_out() const noexcept -> bool {
    return status == send_status::timed_out;
  }
  [[nodiscard]] auto is_cancelled() const noexcept -> bool {
    return status == send_status::cancelled;
  }
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
  [[nodiscard]] auto is_received() const noexcept -> bool {
    return status == recv_status::received;
  }
  [[nodiscard]] auto is_empty() const noexcept -> bool { return status == recv_status::empty; }
  [[nodiscard]] auto is_closed() const noexcept -> bool { return status == recv_status::closed; }
  [[nodiscard]] auto is_timed_out() const noexcept -> bool {
    return status == recv_status::timed_out;
  }
  [[nodiscard]] auto is_cancelled() const noexcept -> bool {
    return status == recv_status::cancelled;
  }
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

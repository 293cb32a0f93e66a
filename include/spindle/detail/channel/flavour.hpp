// SPDX-License-Identifier: BSL-1.0
#pragma once
// What a channel flavour provides: the operations the handles, select and the coroutine
// awaiters reach through channel_state's dispatch. Every flavour (array, list, zero, spsc, lanes)
// satisfies `channel_flavour`, checked by static_asserts in channel_state.hpp, so that a
// flavour missing an operation or giving it another shape fails where it is declared, not in
// the middle of a dispatch.

#include <spindle/channel_result.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <concepts>
#include <cstddef>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// A channel flavour of element type T.
///   try_send(T&), send(T&, wait_options const&): send_status; the value is moved from only
///     when sent.
///   try_recv(), first_look(), recv(wait_options const&): recv_result<T>; first_look is the
///     blocking receive's first try, which a rendezvous answers `empty`.
///   close(): true for the call that closed; discard(): the last receiver is gone, destroy
///     what is buffered; is_closed(), size().
///   watch_send/unwatch_send/watch_recv/unwatch_recv(wait_entry&), send_ready/recv_ready(
///     waiter const*): the select hooks (detail/select/select_loop.hpp).
///   lost_wake_up(): the no-lost-wake-up invariant the model tests check at quiescence
///     (nullptr when it holds).
template <class F, class T>
concept channel_flavour = requires(F& f, F const& cf, T& value, wait_options const& options,
                                   wait_entry& entry, waiter const* self) {
  { f.try_send(value) } -> std::same_as<send_status>;
  { f.send(value, options) } -> std::same_as<send_status>;
  { f.try_recv() } -> std::same_as<recv_result<T>>;
  { f.first_look() } -> std::same_as<recv_result<T>>;
  { f.recv(options) } -> std::same_as<recv_result<T>>;
  { f.close() } -> std::same_as<bool>;
  f.discard();
  { cf.is_closed() } -> std::same_as<bool>;
  { cf.size() } -> std::same_as<std::size_t>;
  f.watch_send(entry);
  f.unwatch_send(entry);
  f.watch_recv(entry);
  f.unwatch_recv(entry);
  { cf.send_ready(self) } -> std::same_as<bool>;
  { cf.recv_ready(self) } -> std::same_as<bool>;
  { cf.lost_wake_up() } -> std::same_as<char const*>;
};

/// A flavour with a fixed capacity (every one but the unbounded list): also capacity().
template <class F, class T>
concept bounded_channel_flavour = channel_flavour<F, T> && requires(F const& cf) {
  { cf.capacity() } -> std::same_as<std::size_t>;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

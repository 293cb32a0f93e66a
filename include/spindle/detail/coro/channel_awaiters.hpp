// SPDX-License-Identifier: BSL-1.0
#pragma once
// The awaitable channel operations (sender::async_send, receiver::async_recv and their timed
// and stop_token forms): each is a select of one channel case, with a timeout or stop case for
// the bounded forms, run by the coroutine select loop (select_awaiter.hpp). A coroutine waiting
// on a channel therefore sits in the channel's wait list exactly as a blocked thread does, and
// a thread's send wakes a coroutine's receive and the other way round.

#include <spindle/channel_result.hpp>
#include <spindle/detail/channel/channel_state.hpp>
#include <spindle/detail/coro/select_awaiter.hpp>
#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/sync/config.hpp>

#include <optional>
#include <stop_token>
#include <tuple>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// `co_await tx.async_send(v)` -> send_result<T>: sent, or closed with the value; with a
/// deadline also timed_out with the value, with a stop token cancelled with the value.
template <class T, class... Extra>
class send_awaiter : public select_awaiter_base<send_case<T, no_handler>, Extra...> {
  using base = select_awaiter_base<send_case<T, no_handler>, Extra...>;

 public:
  /// `lane`: the sender handle's (state_ref::lane).
  send_awaiter(channel_state<T>& ch, send_lane lane, T&& value, Extra&&... extra)
      : base(/*biased=*/true, send_case<T, no_handler>(ch, value_, no_handler{}, lane),
             std::move(extra)...),
        value_(std::move(value)) {}
  send_awaiter(send_awaiter&& other) noexcept
      : base(std::move(other)), value_(std::move(other.value_)) {}

  auto await_ready() -> bool {
    std::get<0>(this->cases()).rebind(value_);
    return base::await_ready();
  }

  auto await_resume() -> send_result<T> {
    this->rethrow_error();
    if (this->chosen() == 0) {
      return std::get<0>(this->cases()).take();
    }
    return send_result<T>{other_status, std::optional<T>(std::move(value_))};
  }

 private:
  // What a chosen extra case means: a stop request, or else a deadline.
  static constexpr send_status other_status = (std::is_same_v<Extra, stop_case<no_handler>> || ...)
                                                  ? send_status::cancelled
                                                  : send_status::timed_out;

  T value_;
};

/// `co_await rx.async_recv()` -> std::optional<T> (nullopt: closed and drained).
template <class T>
class recv_awaiter : public select_awaiter_base<recv_case<T, no_handler>> {
  using base = select_awaiter_base<recv_case<T, no_handler>>;

 public:
  explicit recv_awaiter(channel_state<T>& ch)
      : base(/*biased=*/true, recv_case<T, no_handler>(ch, no_handler{})) {}

  auto await_resume() -> std::optional<T> {
    this->rethrow_error();
    return std::get<0>(this->cases()).take();
  }
};

/// The timed and stop_token receives -> recv_result<T>: received, closed, and timed_out (a
/// timeout case) or cancelled (a stop case).
template <class T, class Extra>
class recv_result_awaiter : public select_awaiter_base<recv_case<T, no_handler>, Extra> {
  using base = select_awaiter_base<recv_case<T, no_handler>, Extra>;

 public:
  recv_result_awaiter(channel_state<T>& ch, Extra&& extra, recv_status other)
      : base(/*biased=*/true, recv_case<T, no_handler>(ch, no_handler{}), std::move(extra)),
        other_(other) {}
  recv_result_awaiter(recv_result_awaiter&& other) noexcept
      : base(std::move(other)), other_(other.other_) {}

  auto await_resume() -> recv_result<T> {
    this->rethrow_error();
    if (this->chosen() == 0) {
      auto v = std::get<0>(this->cases()).take();
      auto const status = v ? recv_status::received : recv_status::closed;
      return recv_result<T>{status, std::move(v)};
    }
    return recv_result<T>{other_, std::nullopt};
  }

 private:
  recv_status other_;
};

/// `co_await spindle::async_select(cases...)` -> the index of the chosen case, whose handler
/// has run in the coroutine.
template <class... Cases>
class select_awaiter : public select_awaiter_base<Cases...> {
  using base = select_awaiter_base<Cases...>;

 public:
  explicit select_awaiter(bool biased, Cases&&... cases) : base(biased, std::move(cases)...) {}

  auto await_resume() -> std::size_t {
    this->rethrow_error();
    this->fire_chosen();
    return this->chosen();
  }
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

// SPDX-License-Identifier: BSL-1.0
#pragma once
// Multi-producer multi-consumer channels: bounded, unbounded and rendezvous; and a bounded
// channel for one sender and one receiver.
//
// `bounded<T>(n)` and `unbounded<T>()` return a connected pair of handles, a `sender<T>` and a
// `receiver<T>`. Both are copyable (reference counted) and every operation may be called from
// any thread, through any copy. `bounded_spsc<T>(n)` returns a move-only `spsc_sender<T>` and
// `spsc_receiver<T>`, each for one thread at a time, with every operation of the others. The
// operations live in `basic_sender<T>` and `basic_receiver<T>`, the non-copyable bases of both
// kinds: take a handle as a basic_sender<T>& / basic_receiver<T>& to accept either.
// Examples: tests/channel_test.cpp (test `Channel.Example`), examples/channel_pipeline.cpp and
// examples/channel_spsc.cpp.
//
// Flavours (after crossbeam-channel, crossbeam-channel/src/flavors/):
//   bounded(n), n >= 1  a preallocated ring of n stamped slots (Vyukov's bounded MPMC queue as
//                       crossbeam builds it): no allocation per message, any n (not only powers
//                       of two), linearizable FIFO. Consecutive positions sit on different
//                       cache lines, so threads on the same side do not share a slot's line.
//                       detail/channel/array_channel.hpp.
//   bounded(0)          a rendezvous: send completes only when a receiver takes the value.
//                       detail/channel/zero_channel.hpp.
//   unbounded()         a lock-free list of 31-slot blocks (crossbeam list.rs); send never
//                       blocks; memory returns to the allocator as the channel drains (one
//                       drained block is kept for reuse). detail/channel/list_channel.hpp.
//   bounded_spsc(n)     one sender and one receiver: Lamport's ring, each side caching the
//                       other's index; no stamps, no CAS, no locked instruction per message
//                       (wake-ups and close use asymmetric fences, paid by a thread about to
//                       sleep or by close(); a channel whose waiters sleep more often than
//                       once a millisecond switches to a fence per message).
//                       detail/channel/spsc_channel.hpp.
//   bounded_lanes(c, l) a bounded channel that scales with its producers: l rings ("lanes")
//                       of c slots, one per sender handle (each copy of the sender takes the
//                       next lane, round robin). A send waits only for room in its own lane;
//                       a receive takes from any lane. FIFO per sender handle, no order
//                       between handles. detail/channel/lanes_channel.hpp.
//
// Blocking: a blocked operation keeps trying for about 100 us, then parks the thread on a
// futex (detail/sync/wait_list.hpp); no system call is made on a path where nobody sleeps. A
// receiver first polls for about 2 us when the channel's handles number at most the
// processors and, for bounded(n) and bounded_lanes, it is the channel's only receiver
// (channel_state::receiver_may_poll); otherwise it yields between tries from the start
// (detail::recv_blocking says why). A sender waiting on a full bounded channel holds back, while it
// yields, until half the ring is free (detail/channel/array_channel.hpp, "room to resume"). One
// waiter is woken per sent message or freed slot; close wakes everyone.
//
// Progress: try_send/try_recv of the bounded and unbounded flavours are lock-free in the
// system-wide sense except while the one slot they need is mid-transfer by a preempted thread
// (they then spin on it, as crossbeam and every ticket queue do). Those of bounded_spsc are
// wait-free; its close() waits for a send that is inside its publication. The rendezvous
// flavour and the registration of a blocked operation take a short futex lock.
//
// Happens-before: whatever a sender did before `send(v)` is visible to the receiver once its
// receive returns v. `close()` happens before any operation that reports `closed` because of it.
//
// Close semantics:
//   - close() on any handle closes the channel for everyone: from then on every send fails with
//     `closed` and hands the value back; receivers still drain what is buffered, then see
//     `closed`. Destroying the last sender does the same.
//   - Destroying the last receiver closes the channel too, and destroys every buffered value at
//     once (eager discard, crossbeam PR #669); later sends fail with `closed`.
//   - Every value a send accepted is received or destroyed exactly once; a value whose send did
//     not succeed is handed back in send_result::value, never dropped.
//
// Timeouts: the _for and _until calls saturate instead of overflowing. A deadline already passed
// (time_point::min(), a timeout <= 0) or NaN makes one try; one beyond steady_clock's range
// (time_point::max() on any clock, duration::max(), +inf) never expires
// (detail/sync/deadline.hpp).
//
// Iteration: `for (auto v : rx)` and the standard range adaptors. The iterator receives only
// when it is compared with the end or dereferenced, so take(n) and views::counted never receive
// a message they do not yield (receiver::iterator gives the rule).
//
// Capacity: capacity() is the bound of a bounded channel, 0 for a rendezvous, and
// std::numeric_limits<std::size_t>::max() for an unbounded channel.
//
// Memory: bounded: capacity * (8 + sizeof(T), aligned) bytes, once; bounded_spsc: (capacity +
// 1) * sizeof(T), aligned, once. Unbounded: one block of
// 31 slots per 31 buffered values, plus at most one cached block. Rendezvous: nothing per
// message. Plus a few cache lines of shared state per channel.
//
// When not to use: a pipeline stage with one producer and one consumer should use
// bounded_spsc(n) rather than bounded(n) (docs/performance.md has the figures), but a
// request/response pair that passes one message at a time should not: the spsc receiver
// reads two lines per message where the bounded one reads one, so bounded(1) answers sooner.
// A ring that never blocks and never closes is still a little faster than either.

#include <spindle/channel_result.hpp>
#include <spindle/detail/channel/channel_state.hpp>
#include <spindle/detail/channel/state_ref.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/coro/channel_awaiters.hpp>
#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/select/select_loop.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <ranges>
#include <stop_token>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

template <transferable T>
class basic_sender;
template <transferable T>
class basic_receiver;
template <transferable T>
class sender;
template <transferable T>
class receiver;
template <transferable T>
class spsc_sender;
template <transferable T>
class spsc_receiver;

/// What sender::stats() and receiver::stats() report: how often the channel's blocking calls
/// had to sleep (send, recv and their _for/_until forms; the try_ forms never sleep, and
/// coroutines and select wait without these counters). A high count of blocked sends says
/// the channel is too small or its receivers too slow; of blocked receives, that receivers
/// wait for work. Relaxed snapshots; the counters are raised only next to a sleep, so they
/// cost nothing on a call that does not wait.
struct channel_stats {
  std::uint64_t blocked_sends = 0;     ///< sends that slept at least once
  std::uint64_t blocked_receives = 0;  ///< receives that slept at least once
  std::uint64_t waits = 0;             ///< sleeps on the channel, all operations
};

namespace detail {
template <class T>
auto stats_of(channel_state<T> const& s) noexcept -> channel_stats {
  auto const& c = s.counters();
  // relaxed (all three): statistics, see channel_counters.
  return {c.blocked_sends.load(std::memory_order_relaxed),
          c.blocked_receives.load(std::memory_order_relaxed),
          c.waits.load(std::memory_order_relaxed)};
}

/// Makes the two first handles of a new channel state: the only caller of their adopting
/// constructors, which are private so that no public signature takes a detail:: type.
struct channel_access {
  template <class T>
  static auto make_pair(channel_state<T>* s) noexcept -> std::pair<sender<T>, receiver<T>> {
    return {sender<T>(s, adopt_handle), receiver<T>(s, adopt_handle)};
  }
  template <class T>
  static auto make_spsc_pair(channel_state<T>* s) noexcept
      -> std::pair<spsc_sender<T>, spsc_receiver<T>> {
    return {spsc_sender<T>(s, adopt_handle), spsc_receiver<T>(s, adopt_handle)};
  }
  /// The state behind a handle, for select and the awaitable operations.
  template <class T>
  static auto state_of(basic_sender<T> const& tx) noexcept -> channel_state<T>& {
    return tx.get();
  }
  template <class T>
  static auto state_of(basic_receiver<T> const& rx) noexcept -> channel_state<T>& {
    return rx.get();
  }
  /// The lane a sending handle sends into (the lanes flavour; 0 for the others).
  template <class T>
  static auto lane_of(basic_sender<T> const& tx) noexcept -> send_lane {
    return tx.lane();
  }
};
}  // namespace detail

/// Every operation of a sending handle, and the type to take a sending handle by reference
/// when any will do (select's on_send, a function that sends): both `sender<T>` (copyable)
/// and `spsc_sender<T>` (move-only) are a basic_sender<T>. A basic_sender itself can be
/// neither made, copied, moved nor assigned: its special members are protected, so that a
/// copy of an spsc_sender, which would give its channel a second producer, does not compile
/// through a basic_sender& either.
///
/// Thread safety: that of the handle (sender<T>: any thread; spsc_sender<T>: one at a time). A
/// moved-from handle may only be destroyed, assigned to, copied or moved; any other use is
/// reported in every build.
template <transferable T>
class basic_sender {
 public:
  /// Sends `value`, blocking while a bounded channel is full (or, for a rendezvous, until a
  /// receiver takes it). Returns `sent`, or `closed` with the value handed back.
  /// Throws: std::bad_alloc (unbounded only) when a new block cannot be allocated; nothing was
  /// sent and the value is destroyed with the argument.
  ///
  /// The first attempt is inlined into the caller and the wait is a call, as for
  /// receiver::recv().
  SPINDLE_ALWAYS_INLINE auto send(T value) -> send_result<T> {
    if (get().first_try_send(value, lane()) == send_status::sent) {
      return send_result<T>{send_status::sent, std::nullopt};
    }
    return send_after_first_try(value);
  }

  /// As send(), but `stop.request_stop()` from any thread ends the wait: `sent`, `closed`, or
  /// `cancelled` once stop is requested before a receiver took the value; the value is handed
  /// back unless sent. A channel with room takes the value even when stop was requested
  /// (as recv(stop) receives a value that is there). The wait is a select of the send and the
  /// stop request (select.hpp).
  /// Throws: as send().
  auto send(T value, std::stop_token stop) -> send_result<T> {
    std::optional<send_result<T>> out;
    auto keep = [&out](send_result<T> r) noexcept { out.emplace(std::move(r)); };
    detail::send_case<T, decltype(keep)> to_send(get(), value, keep, lane());
    detail::stop_case<detail::no_handler> to_stop(std::move(stop), {});
    std::array<detail::select_case*, 2> const cases{&to_send, &to_stop};
    if (detail::run_select(cases, /*biased=*/true) == 0) {
      return std::move(*out);
    }
    return send_result<T>{send_status::cancelled, std::optional<T>(std::move(value))};
  }

  /// Sends `value` only if that needs no waiting: `sent`, `full` (no room; for a rendezvous,
  /// no receiver waiting) or `closed`, the value handed back unless sent.
  /// Throws: as send().
  auto try_send(T value) -> send_result<T> { return finish(get().try_send(value, lane()), value); }

  /// As send(), but gives up after `timeout`: `sent`, `closed` or `timed_out`, the value
  /// handed back unless sent.
  /// A timeout of zero or less, or NaN, makes one try and does not wait; one too long for
  /// steady_clock (duration::max(), +inf) waits without end.
  template <class Rep, class Period>
  auto send_for(T value, std::chrono::duration<Rep, Period> timeout) -> send_result<T> {
    return send_with(value, {detail::deadline_after(timeout), nullptr});
  }

  /// As send(), but gives up at `deadline`, on any clock (measured as the time left on
  /// steady_clock): `sent`, `closed` or `timed_out`, the value handed back unless sent.
  /// A deadline already passed (time_point::min() included), or NaN, makes one try and does not
  /// wait; one beyond steady_clock's range (time_point::max() of any clock and duration type)
  /// waits without end.
  template <class Clock, class Duration>
  auto send_until(T value, std::chrono::time_point<Clock, Duration> deadline) -> send_result<T> {
    return send_with(value, {detail::to_steady(deadline), nullptr});
  }

  /// `co_await tx.async_send(v)`: the coroutine form of send(). While the channel is full (or,
  /// for a rendezvous, until a receiver takes the value) the coroutine is suspended, holding no
  /// thread, and it is resumed on its executor (task.hpp) once the value is sent or the channel
  /// is closed. Returns `sent`, or `closed` with the value handed back. The value lives in the
  /// awaiter until then. Threads and coroutines mix freely on one channel.
  /// Throws (from the co_await): std::bad_alloc, as send().
  [[nodiscard]] auto async_send(T value) -> detail::send_awaiter<T> {
    return detail::send_awaiter<T>(get(), lane(), std::move(value));
  }

  /// As send(value, stop): `sent`, `closed`, or `cancelled` with the value handed back once
  /// stop is requested (from any thread; the request resumes the suspended coroutine).
  [[nodiscard]] auto async_send(T value, std::stop_token stop)
      -> detail::send_awaiter<T, detail::stop_case<detail::no_handler>> {
    return {get(), lane(), std::move(value),
            detail::stop_case<detail::no_handler>(std::move(stop), {})};
  }

  /// As async_send(), but gives up after `timeout` (`timed_out`, value handed back), with the
  /// same saturation as send_for(). The deadline is kept by the timer (detail/coro/timer.hpp).
  template <class Rep, class Period>
  [[nodiscard]] auto async_send_for(T value, std::chrono::duration<Rep, Period> timeout)
      -> detail::send_awaiter<T, detail::timeout_case<detail::no_handler>> {
    return {get(), lane(), std::move(value),
            detail::timeout_case<detail::no_handler>(detail::deadline_after(timeout), {})};
  }

  /// As async_send(), but gives up at `deadline`, on any clock, as send_until().
  template <class Clock, class Duration>
  [[nodiscard]] auto async_send_until(T value, std::chrono::time_point<Clock, Duration> deadline)
      -> detail::send_awaiter<T, detail::timeout_case<detail::no_handler>> {
    return {get(), lane(), std::move(value),
            detail::timeout_case<detail::no_handler>(detail::to_steady(deadline), {})};
  }

  /// Closes the channel for every handle (see the file comment). Idempotent.
  void close() noexcept { get().close_as_sender(); }

  /// True once the channel is closed (by close(), or because all senders or all receivers are
  /// gone). Values may still be buffered.
  [[nodiscard]] auto is_closed() const noexcept -> bool { return get().is_closed(); }

  /// The number of buffered values: a snapshot, exact only when nobody sends or receives.
  /// Always 0 for a rendezvous.
  [[nodiscard]] auto size() const noexcept -> std::size_t { return get().size(); }

  /// The channel's counters of blocking calls (the same from every handle): see
  /// spindle::channel_stats.
  [[nodiscard]] auto stats() const noexcept -> channel_stats { return detail::stats_of(get()); }

  /// The bound; 0 for a rendezvous; std::numeric_limits<std::size_t>::max() for unbounded.
  [[nodiscard]] auto capacity() const noexcept -> std::size_t { return get().capacity(); }

 protected:
  /// Adopts one handle count of `state` (the derived handles' constructors, for
  /// bounded(), unbounded() and bounded_spsc()).
  basic_sender(detail::channel_state<T>* state, detail::adopt_handle_t /*tag*/) noexcept
      : ref_(state) {}

  // Those of detail::state_ref: a copy counts one more sender, a move leaves a moved-from
  // handle, the last sender gone closes. Protected: see the class comment.
  basic_sender(basic_sender const&) = default;
  basic_sender(basic_sender&&) noexcept = default;
  auto operator=(basic_sender const&) -> basic_sender& = default;
  auto operator=(basic_sender&&) noexcept -> basic_sender& = default;
  ~basic_sender() = default;

 private:
  friend struct detail::channel_access;

  /// The blocking send of send(), send_for() and send_until(): the value is handed back
  /// unless sent.
  auto send_with(T& value, detail::wait_options const& options) -> send_result<T> {
    auto const status = get().send(value, options, lane());
    return finish(status, value);
  }

  /// send() after its first attempt did not send: the blocking send, out of line.
  [[gnu::noinline]] auto send_after_first_try(T& value) -> send_result<T> {
    return send_with(value, {});
  }

  static auto finish(send_status status, T& value) -> send_result<T> {
    if (status == send_status::sent) {
      return send_result<T>{status, std::nullopt};
    }
    return send_result<T>{status, std::optional<T>(std::move(value))};
  }

  /// The channel; every operation other than the special members goes through here.
  [[nodiscard]] auto get() const noexcept -> detail::channel_state<T>& { return ref_.get(); }
  /// The lane this handle sends into (bounded_lanes; 0 for every other kind of channel).
  [[nodiscard]] auto lane() const noexcept -> detail::send_lane { return ref_.lane(); }

  detail::state_ref<T, detail::channel_side::sender> ref_;
};

/// The sending handle of a channel made by bounded() or unbounded(). Copyable: every copy
/// sends into the same channel; the channel closes for receivers (after they drain it) when
/// the last sender is destroyed. Its operations are basic_sender<T>'s.
///
/// Thread safety: any thread may use any copy. Operations may run concurrently on one copy
/// too, except assignment and destruction of that copy. A moved-from sender may only be
/// destroyed, assigned to, copied or moved; any other use is reported in every build.
template <transferable T>
class sender : public basic_sender<T> {
 public:
  sender(sender const&) = default;
  sender(sender&&) noexcept = default;
  auto operator=(sender const&) -> sender& = default;
  auto operator=(sender&&) noexcept -> sender& = default;
  ~sender() = default;

 private:
  friend struct detail::channel_access;
  sender(detail::channel_state<T>* state, detail::adopt_handle_t tag) noexcept
      : basic_sender<T>(state, tag) {}
};

/// Every operation of a receiving handle, and the type to take a receiving handle by
/// reference when any will do (select's on_recv, a function that receives, a range loop):
/// both `receiver<T>` (copyable) and `spsc_receiver<T>` (move-only) are a basic_receiver<T>.
/// Its special members are protected, as basic_sender's: a copy of an spsc_receiver does not
/// compile through a basic_receiver& either.
///
/// Thread safety: that of the handle (receiver<T>: any thread; spsc_receiver<T>: one at a
/// time). A moved-from handle may only be destroyed, assigned to, copied or moved; any other
/// use is reported in every build.
template <transferable T>
class basic_receiver {
 public:
  /// Receives the next value, blocking while the channel is empty. Returns std::nullopt only
  /// when the channel is closed and drained. The only receive that returns a plain optional:
  /// it can end in just two ways (a value, or closed for good), which an optional says
  /// exactly, as Go's `v, ok := <-ch`; every other receive can also end empty, timed out or
  /// cancelled, and returns a recv_result that names which.
  ///
  /// The first look for a ready value is inlined into the caller, and the wait is a call:
  /// returned from a call, the optional crossed a stack slot that g++ writes a byte of and
  /// reads back a word of, a store-forwarding stall on every receive (docs/performance.md).
  SPINDLE_ALWAYS_INLINE auto recv() noexcept -> std::optional<T> {
    if (auto r = get().first_look(); r.status == recv_status::received) {
      return std::move(r.value);
    }
    return recv_after_first_look();
  }

  /// As recv(), but `stop.request_stop()` from any thread ends the wait: `received`, `closed`
  /// (closed and drained) or `cancelled`. A value already buffered is received even when stop
  /// was requested. A recv_result rather than recv()'s optional: this receive fails in two
  /// ways (closed, cancelled), and the caller must tell them apart.
  auto recv(std::stop_token stop) noexcept -> recv_result<T> {
    return get().recv({std::nullopt, &stop});
  }

  /// Receives without waiting: `received`, `empty` or `closed` (closed and drained).
  auto try_recv() noexcept -> recv_result<T> {
    return get().visit([](auto& ch) { return ch.try_recv(); });
  }

  /// As recv(), but gives up after `timeout`: `received`, `timed_out` or `closed`.
  /// A timeout of zero or less, or NaN, makes one try and does not wait; one too long for
  /// steady_clock (duration::max(), +inf) waits without end.
  template <class Rep, class Period>
  auto recv_for(std::chrono::duration<Rep, Period> timeout) -> recv_result<T> {
    return get().recv({detail::deadline_after(timeout), nullptr});
  }

  /// As recv(), but gives up at `deadline`, on any clock (measured as the time left on
  /// steady_clock): `received`, `timed_out` or `closed`.
  /// A deadline already passed (time_point::min() included), or NaN, makes one try and does not
  /// wait; one beyond steady_clock's range (time_point::max() of any clock and duration type)
  /// waits without end.
  template <class Clock, class Duration>
  auto recv_until(std::chrono::time_point<Clock, Duration> deadline) -> recv_result<T> {
    return get().recv({detail::to_steady(deadline), nullptr});
  }

  /// `co_await rx.async_recv()`: the coroutine form of recv(). While the channel is empty the
  /// coroutine is suspended, holding no thread, and it is resumed on its executor (task.hpp)
  /// once a value arrives or the channel is closed and drained (std::nullopt). Threads and
  /// coroutines mix freely on one channel.
  [[nodiscard]] auto async_recv() -> detail::recv_awaiter<T> {
    return detail::recv_awaiter<T>(get());
  }

  /// As recv(stop): `received`, `closed` or `cancelled` once stop is requested (from any
  /// thread; the request resumes the suspended coroutine).
  [[nodiscard]] auto async_recv(std::stop_token stop)
      -> detail::recv_result_awaiter<T, detail::stop_case<detail::no_handler>> {
    return {get(), detail::stop_case<detail::no_handler>(std::move(stop), {}),
            recv_status::cancelled};
  }

  /// As recv_for(): `received`, `closed` or `timed_out`, with the same saturation. The deadline
  /// is kept by the timer (detail/coro/timer.hpp).
  template <class Rep, class Period>
  [[nodiscard]] auto async_recv_for(std::chrono::duration<Rep, Period> timeout)
      -> detail::recv_result_awaiter<T, detail::timeout_case<detail::no_handler>> {
    return {get(), detail::timeout_case<detail::no_handler>(detail::deadline_after(timeout), {}),
            recv_status::timed_out};
  }

  /// As recv_until(): `received`, `closed` or `timed_out`, on any clock.
  template <class Clock, class Duration>
  [[nodiscard]] auto async_recv_until(std::chrono::time_point<Clock, Duration> deadline)
      -> detail::recv_result_awaiter<T, detail::timeout_case<detail::no_handler>> {
    return {get(), detail::timeout_case<detail::no_handler>(detail::to_steady(deadline), {}),
            recv_status::timed_out};
  }

  /// Closes the channel for every handle; buffered values stay receivable. Idempotent.
  void close() noexcept { get().close(); }

  /// True once the channel is closed. Values may still be buffered.
  [[nodiscard]] auto is_closed() const noexcept -> bool { return get().is_closed(); }

  /// The number of buffered values: a snapshot. Always 0 for a rendezvous.
  [[nodiscard]] auto size() const noexcept -> std::size_t { return get().size(); }

  /// The channel's counters of blocking calls (the same from every handle): see
  /// spindle::channel_stats.
  [[nodiscard]] auto stats() const noexcept -> channel_stats { return detail::stats_of(get()); }

  /// The bound; 0 for a rendezvous; std::numeric_limits<std::size_t>::max() for unbounded.
  [[nodiscard]] auto capacity() const noexcept -> std::size_t { return get().capacity(); }

  /// An input iterator that receives: `for (auto v : rx)` receives until the channel is
  /// closed and drained. `*it` is an rvalue reference to the received value, so move-only
  /// values can be taken by value.
  ///
  /// Lazy: the iterator receives when it is first compared with the end or dereferenced, not
  /// in begin() and not in operator++. operator++ destroys the value the iterator holds (the
  /// one the caller already looked at; if it never looked, the next value is received and
  /// destroyed: that is what skipping it means). So an adaptor that stops after a count
  /// (std::views::take, std::views::counted) ends without receiving one more message, and
  /// whatever it did not yield stays in the channel: take(n) with exactly n buffered returns
  /// without waiting, and a second take(n) gets the next n messages. This relies on the
  /// standard's take_view sentinel testing the count before it compares the underlying
  /// iterator ([range.take.sentinel]: `y.count() == 0 || y.base() == x.end_`), and on
  /// counted_iterator's last increment reaching ours ([counted.iter.nav]), which must then not
  /// receive.
  ///
  /// The rule: a value leaves the channel only when the iterator is compared or dereferenced,
  /// and is consumed once it did. Adaptors whose predicate sees the value (filter,
  /// take_while, drop_while) therefore consume every value they hand to the predicate,
  /// including the one take_while stops on; a value the predicate saw was handed to the
  /// caller's code. filter looks for its next match as soon as it is incremented, so
  /// `filter | take(n)` consumes the values its predicate saw after the n-th match too. A
  /// predicate should take the value by const reference: one that takes it by value moves it
  /// out of the iterator, and the loop body then sees a moved-from value.
  ///
  /// Move-only: a copy of an iterator that holds a received value would duplicate a message.
  /// The iterator points at its receiver, which must outlive it and stay where it is.
  class iterator {
   public:
    using iterator_concept = std::input_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;

    /// An iterator at the end.
    iterator() = default;
    explicit iterator(basic_receiver* rx) noexcept : rx_(rx), state_(state::unread) {}

    iterator(iterator&& other) noexcept : rx_(other.rx_), state_(other.state_) {
      if (state_ == state::holding) {
        current_.emplace(std::move(*other.current_));
      }
      other.current_.reset();
      other.state_ = state::done;
    }
    /// Destroys the value this iterator holds, if any. reset + emplace rather than
    /// optional's assignment, so that T need not be move-assignable (std::movable asks for
    /// the iterator's assignment, not T's).
    auto operator=(iterator&& other) noexcept -> iterator& {
      if (this != &other) {
        current_.reset();
        rx_ = other.rx_;
        state_ = other.state_;
        if (state_ == state::holding) {
          current_.emplace(std::move(*other.current_));
        }
        other.current_.reset();
        other.state_ = state::done;
      }
      return *this;
    }
    iterator(iterator const&) = delete;
    auto operator=(iterator const&) -> iterator& = delete;
    ~iterator() = default;

    /// Receives the value if this iterator has not yet (blocking), and returns it.
    ///
    /// Preconditions: the iterator is not at the end (closed and drained).
    auto operator*() const noexcept -> T&& {
      look();
      SPINDLE_ASSERT(state_ == state::holding, "dereference of a spindle::receiver end iterator");
      return std::move(*current_);
    }

    /// Moves past the current value: destroys it, receiving it first if nobody looked.
    auto operator++() noexcept -> iterator& {
      look();
      current_.reset();
      if (state_ == state::holding) {
        state_ = state::unread;
      }
      return *this;
    }
    void operator++(int) noexcept { ++*this; }

    /// Receives the value if this iterator has not yet (blocking); true once the channel is
    /// closed and drained.
    friend auto operator==(iterator const& it, std::default_sentinel_t /*end*/) noexcept -> bool {
      it.look();
      return it.state_ == state::done;
    }

   private:
    enum class state : std::uint8_t {
      unread,   ///< nothing received yet for this position
      holding,  ///< current_ holds the value at this position
      done      ///< the channel was closed and drained (or this iterator is an end)
    };

    void look() const noexcept {
      if (state_ != state::unread) {
        return;
      }
      // emplace, not assignment: T need not be move-assignable.
      if (auto next = rx_->recv()) {
        current_.emplace(std::move(*next));
        state_ = state::holding;
      } else {
        state_ = state::done;
      }
    }

    basic_receiver* rx_ = nullptr;
    // Mutable: comparing with the end and dereferencing receive, and both are const (as
    // std::indirectly_readable and std::sentinel_for require).
    // INVARIANT: current_ holds a value exactly when state_ == holding.
    mutable std::optional<T> current_;
    mutable state state_ = state::done;
  };

  /// An iterator at the first value. Receives nothing: see `iterator`.
  auto begin() noexcept -> iterator {
    static_cast<void>(get());
    return iterator(this);
  }
  auto end() const noexcept -> std::default_sentinel_t {
    static_cast<void>(get());
    return std::default_sentinel;
  }

 protected:
  /// Adopts one handle count of `state` (the derived handles' constructors).
  basic_receiver(detail::channel_state<T>* state, detail::adopt_handle_t /*tag*/) noexcept
      : ref_(state) {}

  // Those of detail::state_ref: a copy counts one more receiver, a move leaves a moved-from
  // handle, the last receiver gone discards. Protected: see the class comment.
  basic_receiver(basic_receiver const&) = default;
  basic_receiver(basic_receiver&&) noexcept = default;
  auto operator=(basic_receiver const&) -> basic_receiver& = default;
  auto operator=(basic_receiver&&) noexcept -> basic_receiver& = default;
  ~basic_receiver() = default;

 private:
  friend struct detail::channel_access;

  /// The channel; every operation other than the special members goes through here.
  [[nodiscard]] auto get() const noexcept -> detail::channel_state<T>& { return ref_.get(); }

  /// recv() after its first look found no value: the blocking receive, out of line.
  [[gnu::noinline]] auto recv_after_first_look() noexcept -> std::optional<T> {
    auto r = get().recv({});
    return std::move(r.value);
  }

  detail::state_ref<T, detail::channel_side::receiver> ref_;
};

/// The receiving handle of a channel made by bounded() or unbounded(). Copyable: every copy
/// receives from the same channel (each value goes to exactly one receiver); buffered values
/// are destroyed when the last receiver is destroyed. Its operations are basic_receiver<T>'s.
///
/// Thread safety: any thread may use any copy. Operations may run concurrently on one copy
/// too, except assignment and destruction of that copy. A moved-from receiver may only be
/// destroyed, assigned to, copied or moved; any other use is reported in every build.
template <transferable T>
class receiver : public basic_receiver<T> {
 public:
  receiver(receiver const&) = default;
  receiver(receiver&&) noexcept = default;
  auto operator=(receiver const&) -> receiver& = default;
  auto operator=(receiver&&) noexcept -> receiver& = default;
  ~receiver() = default;

 private:
  friend struct detail::channel_access;
  receiver(detail::channel_state<T>* state, detail::adopt_handle_t tag) noexcept
      : basic_receiver<T>(state, tag) {}
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

/// A receiver is not a sized range, although it has a size(): its size is a snapshot that other
/// receivers change at any moment. Without this, std::views::take(n) would become
/// take(min(n, size())) and then count alone, never asking the iterator whether the channel is
/// closed: it would end early on a channel still being filled, and dereference past the end when
/// another receiver took a value in between. ([range.sized]: opting out is what
/// disable_sized_range is for.)
template <class T>
inline constexpr bool std::ranges::disable_sized_range<spindle::basic_receiver<T>> = true;
template <class T>
inline constexpr bool std::ranges::disable_sized_range<spindle::receiver<T>> = true;
template <class T>
inline constexpr bool std::ranges::disable_sized_range<spindle::spsc_receiver<T>> = true;

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// Creates a channel that buffers at most `capacity` values; `capacity == 0` makes a
/// rendezvous channel, where a send completes only when a receiver takes the value.
///
/// Throws: std::length_error if `capacity` slots would not fit in memory's address space
/// (capacity * slot size overflows); std::bad_alloc if they cannot be allocated.
///
/// Returns: std::pair<sender<T>, receiver<T>> (deduced, so that a type that is not
/// transferable is reported as such rather than as a failure to name the handles).
template <transferable T>
auto bounded(std::size_t capacity) {
  using state = detail::channel_state<T>;
  state* s = capacity == 0 ? new state(typename state::zero_tag{})
                           : new state(typename state::array_tag{}, capacity);
  return detail::channel_access::make_pair(s);
}

/// Creates a channel with no bound: send never blocks (capacity() reports
/// std::numeric_limits<std::size_t>::max()).
///
/// Throws: std::bad_alloc.
///
/// Returns: std::pair<sender<T>, receiver<T>> (deduced, see bounded()).
template <transferable T>
auto unbounded() {
  using state = detail::channel_state<T>;
  auto* s = new state(typename state::list_tag{});
  return detail::channel_access::make_pair(s);
}

/// The sending handle of a channel made by bounded_spsc(): move-only, so that the channel
/// has exactly one. Every operation of sender<T> works on it (both are a basic_sender<T>), and
/// it goes wherever a basic_sender<T>& is taken (select's on_send, a function that sends);
/// not where a sender<T> is, which could be copied. A copy does not compile, directly or
/// through basic_sender<T>.
///
/// Thread safety: one thread at a time; moving it (or handing it over with the usual
/// synchronization) gives it to another thread. Two threads using it at once is a precondition
/// violation, as for every single-producer queue; builds with SPINDLE_ASSERTIONS report it
/// (detail/channel/spsc_channel.hpp says how, and why not every build).
template <transferable T>
class spsc_sender : public basic_sender<T> {
 public:
  spsc_sender(spsc_sender&&) noexcept = default;
  auto operator=(spsc_sender&&) noexcept -> spsc_sender& = default;
  spsc_sender(spsc_sender const&) = delete;
  auto operator=(spsc_sender const&) -> spsc_sender& = delete;
  ~spsc_sender() = default;

 private:
  friend struct detail::channel_access;
  spsc_sender(detail::channel_state<T>* state, detail::adopt_handle_t tag) noexcept
      : basic_sender<T>(state, tag) {}
};

/// The receiving handle of a channel made by bounded_spsc(): move-only, a basic_receiver<T>
/// as receiver<T> is, but not a receiver<T>. Thread safety: as spsc_sender.
template <transferable T>
class spsc_receiver : public basic_receiver<T> {
 public:
  spsc_receiver(spsc_receiver&&) noexcept = default;
  auto operator=(spsc_receiver&&) noexcept -> spsc_receiver& = default;
  spsc_receiver(spsc_receiver const&) = delete;
  auto operator=(spsc_receiver const&) -> spsc_receiver& = delete;
  ~spsc_receiver() = default;

 private:
  friend struct detail::channel_access;
  spsc_receiver(detail::channel_state<T>* state, detail::adopt_handle_t tag) noexcept
      : basic_receiver<T>(state, tag) {}
};

/// Creates a bounded channel that scales with its producers: `lanes` rings of `lane_capacity`
/// slots each. Every sender handle sends into a lane of its own: the first handle into lane 0,
/// each copy into the next lane, round robin once every lane has one. So give each producing
/// thread (or coroutine) its own copy of the sender: producers then never share a cache line
/// with each other, which is what stops a bounded(n) channel from scaling past a few
/// producers (docs/performance.md). `lanes == 0` makes one lane per processor the process may
/// use, at most 64.
///
/// Order: the values sent through one sender handle are received in the order they were sent
/// (one FIFO per lane); values sent through different handles, copies of each other included,
/// have no order between them. Receivers take from every lane, so that none is starved (each
/// takes a burst of at most 32 values from one lane before it moves on), and `try_recv`'s
/// `empty` means that each lane was empty when it was looked at, not that all were at one
/// moment. Blocking, close, select, timeouts, iteration and `co_await` work as for
/// bounded(n); a send waits while its own lane is full, whatever the others hold. The one
/// difference at close: sends that run concurrently with close() may see it in any order
/// (lanes are marked one by one); every send that starts after close() returned fails, and
/// receivers drain every lane before they report closed.
///
/// capacity() is lanes * lane_capacity; size() counts every lane.
///
/// Throws: std::invalid_argument if `lane_capacity` is 0 or `lanes` is above 4096;
/// std::length_error if lanes * lane_capacity slots would not fit in memory's address space;
/// std::bad_alloc if they cannot be allocated.
///
/// Returns: std::pair<sender<T>, receiver<T>>.
template <transferable T>
auto bounded_lanes(std::size_t lane_capacity, std::size_t lanes = 0) {
  using state = detail::channel_state<T>;
  if (lanes == 0) {
    lanes = detail::lanes_channel<T>::default_lanes();
  }
  auto* s = new state(typename state::lanes_tag{}, lane_capacity, lanes);
  return detail::channel_access::make_pair(s);
}

/// Creates a bounded channel for one sending thread and one receiving thread at a time: a
/// ring without a stamp per slot, whose sides read each other's position only when the ring
/// looks full or empty (detail/channel/spsc_channel.hpp). It blocks, closes, times out,
/// selects, iterates and awaits as bounded(capacity) does; the handles are move-only.
///
/// Throws: std::invalid_argument if `capacity` is 0 (a rendezvous needs bounded(0));
/// std::length_error if `capacity + 1` slots would not fit in memory's address space;
/// std::bad_alloc if they cannot be allocated.
///
/// Returns: std::pair<spsc_sender<T>, spsc_receiver<T>>.
template <transferable T>
auto bounded_spsc(std::size_t capacity) {
  using state = detail::channel_state<T>;
  auto* s = new state(typename state::spsc_tag{}, capacity);
  return detail::channel_access::make_spsc_pair(s);
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

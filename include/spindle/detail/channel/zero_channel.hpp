// SPDX-License-Identifier: BSL-1.0
#pragma once
// The rendezvous flavour (capacity 0): a send completes only when a receiver takes the value
// directly from the sender's hands.
//
// Algorithm: crossbeam-channel's zero flavour (crossbeam-rs/crossbeam:
// crossbeam-channel/src/flavors/zero.rs): one mutex over two wait queues,
// one of blocked senders and one of blocked receivers, each entry pointing at a packet on its
// owner's stack. An arriving sender selects the oldest waiting receiver and moves the value
// into that receiver's packet; an arriving receiver selects the oldest waiting sender and moves
// the value out of that sender's packet. With no partner, the operation registers and parks
// (or, for try_, reports full/empty). Lock-freedom buys nothing here: a rendezvous must wait for
// the partner anyway.
// Deviation from crossbeam: the hand-off happens under the mutex, before the partner is woken,
// so the partner needs no "packet ready" flag: the wake (parker release/acquire) publishes it.
//
// Synchronization: `mutex_` guards both queues, `closed_` and every packet hand-off.
// `closed_flag_` mirrors `closed_` for lock-free is_closed(). Happens-before: whatever the sender
// did before send(v) is visible to the receiver once it has v (mutex, then parker).
//
// Memory: none per message; a blocked operation's entry and packet live on its stack.

#include <spindle/channel_result.hpp>
#include <spindle/detail/channel/park.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/wait_list.hpp>
#include <spindle/detail/sync/wait_note.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

template <class T>
class zero_channel {
 public:
  zero_channel() = default;
  zero_channel(zero_channel const&) = delete;
  auto operator=(zero_channel const&) -> zero_channel& = delete;

  /// Hands `value` to a waiting receiver, if one waits: sent, full (nobody waits) or closed.
  auto try_send(T& value) noexcept -> send_status {
    std::unique_lock lock(mutex_);
    if (closed_) {
      return send_status::closed;
    }
    wait_entry* receiver = receivers_.try_select();
    if (receiver == nullptr) {
      return send_status::full;
    }
    give(*receiver, value);
    lock.unlock();
    receiver->owner->wake();
    return send_status::sent;
  }

  /// Blocks until a receiver takes `value`: sent, closed or timed_out.
  auto send(T& value, wait_options const& options) noexcept -> send_status {
    std::unique_lock lock(mutex_);
    if (closed_) {
      return send_status::closed;
    }
    if (wait_entry* receiver = receivers_.try_select(); receiver != nullptr) {
      give(*receiver, value);
      lock.unlock();
      receiver->owner->wake();
      return send_status::sent;
    }
    if (options.expired()) {
      return send_status::timed_out;
    }
    waiter self;
    // The packet is the caller's value itself; a receiver moves it out under the mutex.
    wait_entry entry(self, std::addressof(value));
    senders_.push(entry);
    lock.unlock();
    bool blocked = false;
    options.note_wait(blocked, /*is_send=*/true);
    blocking_note_scope const note(options.what);
    auto const selection = self.wait(options.deadline);
    if (selection >= waiter::first_operation) {
      return send_status::sent;
    }
    lock.lock();
    senders_.remove(entry);
    return selection == waiter::closed ? send_status::closed : send_status::timed_out;
  }

  /// The first look of a blocking receive (channel_state::first_look): always `empty`, so
  /// that a receive takes recv(), which finds a waiting sender as well.
  auto first_look() noexcept -> recv_result<T> {
    return recv_result<T>{recv_status::empty, std::nullopt};
  }

  /// Takes the value of a waiting sender, if one waits: received, empty or closed.
  ///
  /// Closed first: after close() no sender may hand over. close() ended every sender waiting
  /// then, but a select or coroutine send case that found the channel open may register just
  /// after it (watch_send) and withdraw only once its re-check sees closed_; a receive that
  /// took that registration would complete a hand-over after the close.
  auto try_recv() noexcept -> recv_result<T> {
    std::unique_lock lock(mutex_);
    if (closed_) {
      return recv_result<T>{recv_status::closed, std::nullopt};
    }
    wait_entry* sender = senders_.try_select();
    if (sender == nullptr) {
      return recv_result<T>{recv_status::empty, std::nullopt};
    }
    auto out = take(*sender);
    lock.unlock();
    sender->owner->wake();
    return out;
  }

  /// Blocks until a sender hands over a value: received, closed, timed_out or cancelled.
  /// Closed first, as in try_recv().
  auto recv(wait_options const& options) noexcept -> recv_result<T> {
    std::unique_lock lock(mutex_);
    if (closed_) {
      return recv_result<T>{recv_status::closed, std::nullopt};
    }
    if (wait_entry* sender = senders_.try_select(); sender != nullptr) {
      auto out = take(*sender);
      lock.unlock();
      sender->owner->wake();
      return out;
    }
    if (options.stop_requested()) {
      return recv_result<T>{recv_status::cancelled, std::nullopt};
    }
    if (options.expired()) {
      return recv_result<T>{recv_status::timed_out, std::nullopt};
    }
    waiter self;
    std::optional<T> packet;
    wait_entry entry(self, &packet);
    receivers_.push(entry);
    lock.unlock();
    bool blocked = false;
    options.note_wait(blocked, /*is_send=*/false);
    auto const selection = wait_for_selection(self, options);
    if (selection >= waiter::first_operation) {
      // The sender moved its value into `packet` under the mutex, before it woke us.
      return recv_result<T>{recv_status::received, std::move(packet)};
    }
    lock.lock();
    receivers_.remove(entry);
    if (selection == waiter::closed) {
      return recv_result<T>{recv_status::closed, std::nullopt};
    }
    return recv_result<T>{
        options.stop_requested() ? recv_status::cancelled : recv_status::timed_out, std::nullopt};
  }

  /// Closes the channel; returns true for the call that closed it. Wakes every waiter.
  auto close() noexcept -> bool {
    wait_entry* senders = nullptr;
    wait_entry* receivers = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (closed_) {
        return false;
      }
      closed_ = true;
      // release: pairs with the acquire load in is_closed(), for callers that read it without
      // the mutex.
      closed_flag_.store(true, std::memory_order_release);
      senders = senders_.select_all(waiter::closed);
      receivers = receivers_.select_all(waiter::closed);
    }
    wait_queue::wake_chain(senders);
    wait_queue::wake_chain(receivers);
    return true;
  }

  // Select (detail/select/select_loop.hpp): a select registers its entries in the same queues
  // as blocked senders and receivers, with the same packets (the send case's value, the receive
  // case's empty optional), so a partner pairs with it exactly as with a plain send or recv:
  // it selects the entry, hands the value over under the mutex, then wakes the select. The
  // select's own entries on both sides of one channel never pair with each other: only
  // another party's operation selects an entry.
  void watch_send(wait_entry& e) noexcept {
    std::lock_guard lock(mutex_);
    senders_.push(e);
  }
  void unwatch_send(wait_entry& e) noexcept {
    // A partner that selected the entry unlinked it before waking us (wait_list.hpp).
    if (!e.is_linked()) {
      return;
    }
    std::lock_guard lock(mutex_);
    static_cast<void>(senders_.remove(e));
  }
  void watch_recv(wait_entry& e) noexcept {
    std::lock_guard lock(mutex_);
    receivers_.push(e);
  }
  void unwatch_recv(wait_entry& e) noexcept {
    if (!e.is_linked()) {
      return;
    }
    std::lock_guard lock(mutex_);
    static_cast<void>(receivers_.remove(e));
  }
  /// Whether a receiver other than `self` waits (a send would pair now), or the channel is
  /// closed.
  [[nodiscard]] auto send_ready(waiter const* self) const noexcept -> bool {
    std::lock_guard lock(mutex_);
    return closed_ || receivers_.has_waiting(self);
  }
  /// Whether a sender other than `self` waits (a receive would pair now), or the channel is
  /// closed.
  [[nodiscard]] auto recv_ready(waiter const* self) const noexcept -> bool {
    std::lock_guard lock(mutex_);
    return closed_ || senders_.has_waiting(self);
  }

  /// The last receiver is gone. A rendezvous buffers nothing, so this is close().
  void discard() noexcept { close(); }

  /// The channel's no-lost-wake-up property as a checkable invariant: what breaks it, or
  /// nullptr. Where every thread is quiescent, nobody may still wait for a wake that the
  /// channel's state already owes it. The model tests check it at every quiescent point
  /// (tests/model/liveness_test.cpp); between two steps of a protocol it may not hold.
  /// Here: a sender and a receiver both wait unpaired (a select that waits on both ends of one
  /// channel would count as both; the tests that check it do not do that), or a party waits on
  /// a closed channel. Read without the lock: every thread is quiescent.
  [[nodiscard]] auto lost_wake_up() const noexcept -> char const* {
    bool const senders = senders_.has_waiting(nullptr);
    bool const receivers = receivers_.has_waiting(nullptr);
    if (senders && receivers) {
      return "a sender and a receiver wait unpaired";
    }
    if ((senders || receivers) && closed_) {
      return "a sender or receiver waits on a closed channel";
    }
    return nullptr;
  }

  [[nodiscard]] auto is_closed() const noexcept -> bool {
    // acquire: pairs with the release store in close().
    return closed_flag_.load(std::memory_order_acquire);
  }

  [[nodiscard]] auto size() const noexcept -> std::size_t { return 0; }
  [[nodiscard]] auto capacity() const noexcept -> std::size_t { return 0; }

 private:
  /// Moves `value` into a selected receiver's packet. Called under mutex_.
  static void give(wait_entry& receiver, T& value) noexcept {
    auto* packet = static_cast<std::optional<T>*>(receiver.packet);
    packet->emplace(std::move(value));
  }

  /// Moves the value out of a selected sender's packet. Called under mutex_.
  static auto take(wait_entry& sender) noexcept -> recv_result<T> {
    auto* value = static_cast<T*>(sender.packet);
    return recv_result<T>{recv_status::received, std::optional<T>(std::move(*value))};
  }

  mutable mutex mutex_;
  wait_queue senders_;
  wait_queue receivers_;
  bool closed_ = false;
  atomic<bool> closed_flag_{false};
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

// SPDX-License-Identifier: BSL-1.0
#pragma once
// The shared state of spindle::oneshot: one slot for one value, one state word, a wait list for
// the receiver's waits (a thread, a coroutine or a select), one for the sender's wait for the
// receiver to leave, and a count of the two handles.
//
// State word `state_` (bits, each set at most once, never cleared):
//   sent          the sender constructed the value in the slot and published it;
//   sender_gone   the sender handle was destroyed (with or without sending);
//   rx_closed     the receiver closed its side (close(), or its handle was destroyed): a send
//                 from then on fails and hands the value back;
//   taken         the slot's value was moved out (a receive), or destroyed with the receiver.
// Transitions:
//   send: one seq_cst CAS from a word with neither `sent` nor `rx_closed` to the word | `sent`,
//     after constructing the value in the slot; if `rx_closed` is set the value is moved back
//     out of the slot to the caller. A CAS and not a fetch_or: a receiver that closed must never
//     see `sent` appear afterwards, or both it and the sender would own the value.
//   receive: a CAS from a word with `sent` and not `taken` to the word | `taken`; the winner
//     moves the value out of the slot and destroys it there.
//   receiver's close: fetch_or(rx_closed).
//   receiver's drop: fetch_or(rx_closed | taken); if the word had `sent` and not `taken`, the
//     receiver destroys the value (the value goes with the last side that could receive it).
//   sender's drop: fetch_or(sender_gone); a receiver that finds neither `sent` nor `taken` then
//     reports closed.
// INVARIANT: the slot holds a live T exactly when `sent` is set and `taken` is not, outside the
// window in which send() constructed the value and has not yet won or lost its CAS (then only
// the sender touches the slot). So every value is received or destroyed exactly once.
//
// Wake-ups: the sender's send and its drop are seq_cst RMWs on the word followed by
// wake_all_waiting() (the is_empty load (B) of wait_list.hpp); the receiver's waits register and
// re-check the word with a seq_cst load: no lost wake-up (detail/sync/event_case.hpp). The same
// pair, the other way, for the sender's wait for the receiver to leave (wait_closed): the
// receiver's close and drop set `rx_closed` with a seq_cst RMW and wake `sender_list_`.
//
// Lifetime: `handles_` counts the two handles; the last one to go deletes the state. The sender
// wakes the waiters before it gives up its count, so the state is alive for every wake.
//
// Happens-before: the sender's CAS is (also) a release, the receiver's CAS an acquire: whatever
// the sender did before send(v) is visible to the receiver that received v.

#include <spindle/channel_result.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/event_case.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

template <class T>
class oneshot_state {
 public:
  static constexpr std::uint32_t sent = 1;
  static constexpr std::uint32_t sender_gone = 2;
  static constexpr std::uint32_t rx_closed = 4;
  static constexpr std::uint32_t taken = 8;

  oneshot_state() = default;
  oneshot_state(oneshot_state const&) = delete;
  auto operator=(oneshot_state const&) -> oneshot_state& = delete;
  ~oneshot_state() {
    // relaxed: the last handle's acq_rel decrement ordered every access before this.
    SPINDLE_ASSERT((state_.load(std::memory_order_relaxed) & (sent | taken)) != sent,
                   "a oneshot value was neither received nor destroyed");
  }

  // ---- the sender's side ----

  /// Sends `value` once. Returns `sent`, or `closed` with the value handed back when the
  /// receiver closed or is gone.
  /// Throws: std::logic_error when a value was sent already (a second send).
  auto send(T&& value) -> send_result<T> {
    // relaxed: only the sender sets `sent`, and this is the sender; the CAS below re-reads.
    std::uint32_t s = state_.load(std::memory_order_relaxed);
    if ((s & sent) != 0) {
      throw std::logic_error("spindle::oneshot_sender: send after a value was sent");
    }
    if ((s & rx_closed) != 0) {
      return send_result<T>{send_status::closed, std::optional<T>(std::move(value))};
    }
    // SAFETY: `sent` is clear, so no receiver reads the slot, and only this sender writes it.
    ::new (static_cast<void*>(slot_)) T(std::move(value));
    // seq_cst (the event's state change, wait_list.hpp (B)): publishes the value (release part,
    // pairs with the acquire CAS in poll()) and is ordered before wake_all_waiting()'s load of
    // is_empty. relaxed on failure: the loop re-checks what the receiver set.
    while (!state_.compare_exchange_weak(s, s | sent, std::memory_order_seq_cst,
                                         std::memory_order_relaxed)) {
      if ((s & rx_closed) != 0) {
        // SAFETY: the CAS failed, so `sent` is clear and the slot is still only ours.
        send_result<T> back{send_status::closed, std::optional<T>(std::move(value_ref()))};
        std::destroy_at(&value_ref());
        return back;
      }
    }
    wake_all_waiting(list_);
    return send_result<T>{send_status::sent, std::nullopt};
  }

  /// The sender handle is going: a receiver waiting for a value that never came sees closed.
  void drop_sender() noexcept {
    // seq_cst: the event's state change, as in send(), before the wake's is_empty load.
    std::uint32_t const before = state_.fetch_or(sender_gone, std::memory_order_seq_cst);
    if ((before & sent) == 0) {
      wake_all_waiting(list_);
    }
    release();
  }

  /// Whether the receiver closed or is gone (a send would fail).
  [[nodiscard]] auto receiver_closed() const noexcept -> bool {
    // acquire: pairs with the seq_cst fetch_or of close_receiver()/drop_receiver().
    return (state_.load(std::memory_order_acquire) & rx_closed) != 0;
  }

  /// The re-check of the sender's wait_closed() after registering.
  [[nodiscard]] auto receiver_closed_ready() const noexcept -> bool {
    // seq_cst: the waiter's half of the Dekker pair (wait_list.hpp (A)).
    return (state_.load(std::memory_order_seq_cst) & rx_closed) != 0;
  }

  /// Where the sender waits for the receiver to close or go.
  [[nodiscard]] auto sender_list() noexcept -> wait_list& { return sender_list_; }

  /// Whether a value was sent (received or not).
  [[nodiscard]] auto was_sent() const noexcept -> bool {
    // relaxed: a snapshot for the sender, which set the bit itself.
    return (state_.load(std::memory_order_relaxed) & sent) != 0;
  }

  // ---- the receiver's side ----

  /// Receives without waiting: true with the value in `out`, true with `out` empty when no
  /// value will ever come (the sender left without sending, the receiver closed, or the value
  /// was received already), false when a value may still come.
  auto poll(std::optional<T>& out) noexcept -> bool {
    // acquire: pairs with the seq_cst CAS of send(), as below.
    std::uint32_t s = state_.load(std::memory_order_acquire);
    while ((s & (sent | taken)) == sent) {
      // acquire: pairs with the seq_cst (release) CAS of send(): the value in the slot and
      // whatever the sender did before send() are visible. relaxed on failure: re-check.
      if (state_.compare_exchange_weak(s, s | taken, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        // SAFETY: this CAS set `taken`: no one else reads or destroys the slot now.
        out.emplace(std::move(value_ref()));
        std::destroy_at(&value_ref());
        return true;
      }
    }
    if ((s & (taken | sender_gone | rx_closed)) != 0) {
      out.reset();
      return true;
    }
    return false;
  }

  /// The re-check after registering: whether poll() would complete now.
  [[nodiscard]] auto ready() const noexcept -> bool {
    // seq_cst: the waiter's half of the Dekker pair (wait_list.hpp (A)); every bit ends a wait.
    return state_.load(std::memory_order_seq_cst) != 0;
  }

  [[nodiscard]] auto list() noexcept -> wait_list& { return list_; }

  /// The receiver closes its side: later sends fail; a value sent before stays receivable.
  void close_receiver() noexcept {
    // seq_cst: the event the sender's wait_closed() waits for (wait_list.hpp (B), before the
    // wake's is_empty load); its release part pairs with receiver_closed()'s acquire, its
    // acquire part orders the receiver's later reads after a send that won before.
    std::uint32_t const before = state_.fetch_or(rx_closed, std::memory_order_seq_cst);
    if ((before & rx_closed) == 0) {
      wake_all_waiting(sender_list_);
    }
  }

  /// The receiver handle is going: closes, and destroys a value sent but not received.
  void drop_receiver() noexcept {
    // seq_cst: as in close_receiver(); its acquire part also pairs with the release part of
    // send()'s CAS (the value to destroy is visible).
    std::uint32_t const before = state_.fetch_or(rx_closed | taken, std::memory_order_seq_cst);
    if ((before & (sent | taken)) == sent) {
      // SAFETY: `sent` was set and `taken` clear, and this fetch_or set `taken`: the value is
      // live and ours alone.
      std::destroy_at(&value_ref());
    }
    if ((before & rx_closed) == 0) {
      // Before release(): the state is alive for the wake.
      wake_all_waiting(sender_list_);
    }
    release();
  }

 private:
  auto value_ref() noexcept -> T& { return *std::launder(reinterpret_cast<T*>(slot_)); }

  void release() noexcept {
    // acq_rel: the last handle to go sees everything the other did (release) before it deletes
    // the state (acquire).
    if (handles_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete this;
    }
  }

  // INVARIANT: see the file comment; bits are only ever set.
  atomic<std::uint32_t> state_{0};
  atomic<std::uint32_t> handles_{2};
  wait_list list_;
  wait_list sender_list_;
  alignas(T) std::byte slot_[sizeof(T)];
};

/// The sender's wait for the receiver to close or go, as an event source (the outcome carries
/// nothing: the event is the only way it ends).
template <class T>
struct oneshot_closed_source {
  using outcome = bool;
  oneshot_state<T>* state;

  auto poll(outcome& out) const noexcept -> bool {
    out = state->receiver_closed();
    return out;
  }
  [[nodiscard]] auto list() const noexcept -> wait_list& { return state->sender_list(); }
  [[nodiscard]] auto ready() const noexcept -> bool { return state->receiver_closed_ready(); }
};

/// The receiver's wait as an event source (detail/sync/event_case.hpp): the outcome is the
/// value, or nullopt once no value will come.
template <class T>
struct oneshot_source {
  using outcome = std::optional<T>;
  oneshot_state<T>* state;

  auto poll(outcome& out) const noexcept -> bool { return state->poll(out); }
  [[nodiscard]] auto list() const noexcept -> wait_list& { return state->list(); }
  [[nodiscard]] auto ready() const noexcept -> bool { return state->ready(); }
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

// SPDX-License-Identifier: BSL-1.0
#pragma once
// The bounded channel flavour: a preallocated ring of stamped slots.
//
// Algorithm: Dmitry Vyukov's bounded MPMC queue
// (https://www.1024cores.net/home/lock-free-algorithms/queues/bounded-mpmc-queue) in the form
// crossbeam-channel gives it (crossbeam-rs/crossbeam:crossbeam-channel/src/flavors/array.rs;
// D. Vyukov, "Bounded MPMC queue", 1024cores.net, 2010). Each slot carries a 64-bit stamp; `head_`
// and `tail_` are positions packing {lap, mark, index}: index in the low bits (< mark_bit), the
// mark bit in `tail_` meaning "closed", the lap above. mark_bit = next_pow2(capacity + 1) and
// one_lap = 2 * mark_bit, so any capacity >= 1 works, not only powers of two.
//   - Slot i starts with stamp i. A sender at position `tail` may write slot i when its stamp
//     equals `tail` (empty in this lap): it claims the position with a CAS on tail_, moves the
//     value in and publishes stamp = tail + 1 ("full in this lap").
//   - A receiver at `head` may read when the stamp equals head + 1: it claims with a CAS on
//     head_, moves the value out and publishes stamp = head + one_lap ("empty in the next lap").
//   - A stamp one lap behind means full (or empty) unless the other side's position says a
//     claim is merely in flight; the lap in the stamp is the ABA defence.
// Every operation is linearizable at its successful CAS (FIFO across all producers). The CAS
// paths never wait for another thread's claim except when the one slot they need is mid-
// transfer (claimed but not yet published), where they spin and retry, as crossbeam does.
//
// Room to resume: a sender that found the channel full and waits for room does not take the
// first slot a receiver frees; in its poll rounds it waits until `resume_room_` more slots
// behind that one are free too (half the capacity, at most 512), then sends again. Otherwise
// a full ring keeps every waiting sender polling and writing the slot a receiver has just
// emptied, while that receiver works on the next positions: the lines around the receivers'
// position go back and forth between the cores on every message. With room between them, the
// senders work on lines the receivers left long ago. Linux wakes a socket writer on the same
// rule, only once half the send buffer is free (net/core/sock.c, sock_def_write_space). It is
// a heuristic for how to wait, never a condition: the full attempt every
// `wait_budget::full_every` rounds and the check before parking need only one free slot, so a
// sender never waits for room that no receiver will make. Holding back this way raised the
// throughput of a full ring most for a single producer, and for several producers before the
// slots were spread (measurements: docs/performance.md, Channels).
//
// Spread slots: where the process may use more than two processors, consecutive positions live
// on different cache lines, so that threads on the same side do not pass one slot line back and
// forth; on one or two processors the ring is contiguous, which measured twice as fast there
// (detail/channel/spread_layout.hpp says why).
//
// Hand-off to a waiting send case: a receiver that frees a slot and selects a select's send
// case waiting on the senders' list (spindle::select, and so every coroutine's async_send)
// claims the senders' position once on that case's behalf, moves the value out of the entry's
// packet into the slot and marks the entry completed before the wake; the woken party returns
// `sent` without touching the ring again. Without it every woken sender came back to the ring,
// often found the slot taken by a sender that had not waited, and registered again. Go's
// channels do the same in both directions (runtime/chan.go, `send` and `recv` with a waiting
// partner). Exactly once: the selection (one CAS on the waiter) is the claim on the sender's
// operation; a sender whose re-check after registering found room aborts its own waiter by the
// same CAS and then sends itself, and one that loses that CAS consumes the wake and finds its
// entry completed. If the receiver's claim of the position fails (the ring is full again, or
// closed), it only wakes the sender, which tries again. A blocked thread's send (park_on, whose
// entry has no packet) is only woken: for threads the cost meter counted the hand-off adding
// line transfers, for coroutine senders taking them away (docs/performance.md, "The hand-off to
// waiting send cases").
//
// Close: one fetch_or of the mark bit in tail_. Sends that have not claimed a slot fail from
// then on; receivers drain what was claimed before and then see closed. When the last receiver
// is gone, discard() receives and destroys what is left at once (crossbeam PR #669).
//
// Synchronization:
//   tail_   written by senders (CAS) and close (fetch_or); read by everyone.
//   head_   written by receivers (CAS); read by everyone.
//   slot.stamp  the hand-over of one slot: release store by whoever finished with the slot,
//               acquire load by whoever wants it next; it guards slot.storage.
//   senders_/receivers_  wait lists (detail/sync/wait_list.hpp).
// The tail_/head_ CASes are seq_cst: each is the state change half of the Dekker pair (B) with
// the wait list's is_empty flag (see wait_list.hpp), and on x86 a CAS is a full barrier anyway.
//
// Memory: capacity slots of (8 bytes + sizeof(T), aligned), allocated once; nothing per message.

#include <spindle/channel_result.hpp>
#include <spindle/detail/channel/close.hpp>
#include <spindle/detail/channel/park.hpp>
#include <spindle/detail/channel/readiness.hpp>
#include <spindle/detail/channel/recv_blocking.hpp>
#include <spindle/detail/channel/spread_layout.hpp>
#include <spindle/detail/channel/tuning.hpp>
#include <spindle/detail/channel/wait_budget.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/backoff.hpp>
#include <spindle/detail/sync/cache_padded.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

template <class T>
class array_channel {
 public:
  /// Throws: std::invalid_argument if capacity is 0 (a rendezvous is another flavour);
  /// std::length_error if capacity * sizeof(slot) does not fit in memory's address space;
  /// std::bad_alloc if the ring cannot be allocated.
  /// `spread`: whether the ring spreads its slots (spread_layout); the default decides by the
  /// processors the process may use, and tests pass it to cover both layouts on any machine.
  explicit array_channel(std::size_t capacity, bool spread = spread_pays())
      : capacity_(checked_capacity(capacity)),
        mark_bit_(std::bit_ceil(static_cast<std::uint64_t>(capacity) + 1)),
        one_lap_(mark_bit_ * 2),
        resume_room_(std::min(capacity_ / 2, max_resume_room)),
        layout_(capacity, sizeof(slot), spread),
        slots_(std::make_unique<slot[]>(capacity)) {
    for (std::uint64_t i = 0; i < capacity_; ++i) {
      // relaxed: the channel is not shared yet; handing out the handles publishes it.
      slot_at(i).stamp.store(i, std::memory_order_relaxed);
    }
  }

  array_channel(array_channel const&) = delete;
  auto operator=(array_channel const&) -> array_channel& = delete;

  ~array_channel() {
    // SAFETY: no handle is left, so no other thread touches the channel; every slot between
    // head and tail holds a live value (senders finished, since their handles are gone).
    drain(*this);
  }

  /// Sends without waiting. On success `value` is moved from; otherwise it is untouched.
  auto try_send(T& value) noexcept -> send_status {
    std::uint64_t tail = 0;
    slot* s = nullptr;
    switch (start_send(tail, s)) {
      case claim::ok:
        write(*s, tail, value);
        return send_status::sent;
      case claim::closed:
        return send_status::closed;
      case claim::unavailable:
        break;
    }
    return send_status::full;
  }

  /// Sends, blocking while the channel is full. Returns sent, closed, or timed_out (deadline).
  auto send(T& value, wait_options const& options) noexcept -> send_status {
    bool blocked = false;
    for (;;) {
      // A full channel gets room only when a receiver runs. Spinning with PAUSE would hold
      // the core that receiver may need (a full channel usually means more busy threads than
      // cores), so a blocked sender polls only `wait_budget::send_polls` times (none by
      // default) and only when the users fit the cores, then yields (measurements:
      // docs/performance.md, Channels; on 16 cores, polling senders neither won nor lost
      // clearly, "Channel variants on 16 cores"). Most rounds use poll_send, which leaves the
      // receivers' position alone and waits for room to resume (see the header); the full try_send
      // now and then takes any free slot and also waits out a receiver that is mid-read (which
      // park_on's readiness check cannot tell from "not full", so it would not park).
      bool const poll_first = options.spin() && !options.expired();
      wait_budget budget(options, poll_first ? wait_budget::send_polls : 0);
      do {
        auto const status = budget.full_attempt_due() ? try_send(value) : poll_send(value);
        if (status != send_status::full) {
          return status;
        }
      } while (budget.keep_trying());
      if (options.expired()) {
        return send_status::timed_out;
      }
      park_on(
          senders_.value, [this] { return !is_full() || is_closed(); }, options, blocked,
          /*is_send=*/true);
    }
  }

  /// Receives without waiting: received, empty, or closed (closed and drained).
  auto try_recv() noexcept -> recv_result<T> {
    std::uint64_t head = 0;
    slot* s = nullptr;
    auto const c = start_recv(head, s);
    return recv_outcome<T>(c, [&] { return read(*s, head); });
  }

  /// The first look of a blocking receive (channel_state::first_look): the value at the
  /// receivers' position if it is there, otherwise `empty` (also when closed).
  auto first_look() noexcept -> recv_result<T> { return poll_recv(); }

  /// Receives, blocking while the channel is empty: received, closed, timed_out or cancelled.
  auto recv(wait_options const& options) noexcept -> recv_result<T> {
    return recv_blocking<T>([this] { return poll_recv(); }, [this] { return try_recv(); },
                            receivers_.value, [this] { return !is_empty() || is_closed(); },
                            options);
  }

  /// Closes the channel; returns true for the call that closed it. Wakes every waiter.
  auto close() noexcept -> bool {
    return close_by_mark(tail_.value, mark_bit_, senders_.value, receivers_.value);
  }

  /// The last receiver is gone: closes the channel and destroys every buffered value now.
  /// Senders that claimed a slot before the mark are waited for inside start_recv.
  void discard() noexcept {
    close();
    drain(*this);
  }

  /// Where the channel counts its sender handles (channel_state), for prefetch_pays; until
  /// it is set, the flavour counts as having several senders.
  void watch_sender_count(atomic<std::size_t> const* senders) noexcept { sender_count_ = senders; }

  // Select (detail/select/select_loop.hpp): a party that waits on several channels at once
  // registers an entry on each side it waits for, re-checks readiness, and withdraws what it
  // did not win. A wake-up through these lists is a hint, as for a blocked send or recv.
  void watch_send(wait_entry& e) noexcept { senders_.value.push(e); }
  void unwatch_send(wait_entry& e) noexcept { senders_.value.remove(e); }
  void watch_recv(wait_entry& e) noexcept { receivers_.value.push(e); }
  void unwatch_recv(wait_entry& e) noexcept { receivers_.value.remove(e); }
  /// Whether a send would not find the channel full (or finds it closed); seq_cst loads, the
  /// re-check after watch_send (wait_list.hpp (A)).
  [[nodiscard]] auto send_ready(waiter const* /*self*/) const noexcept -> bool {
    return send_would_proceed(is_full(), is_closed());
  }
  /// Whether a receive would not find the channel empty (or finds it closed); as send_ready.
  [[nodiscard]] auto recv_ready(waiter const* /*self*/) const noexcept -> bool {
    return recv_would_proceed(is_empty(), is_closed());
  }

  /// Whether a value is buffered, closed or not; seq_cst loads, for a readiness re-check that
  /// tells "closed" apart itself (lanes_channel::recv_ready).
  [[nodiscard]] auto holds_value() const noexcept -> bool { return !is_empty(); }

  /// The channel's no-lost-wake-up property as a checkable invariant (readiness.hpp): what
  /// breaks it, or nullptr.
  [[nodiscard]] auto lost_wake_up() const noexcept -> char const* {
    return buffered_lost_wake_up(
        receivers_.value, [this] { return recv_ready(nullptr); }, &senders_.value,
        [this] { return send_ready(nullptr); });
  }

  [[nodiscard]] auto is_closed() const noexcept -> bool {
    // seq_cst: part of the re-check after registering a waiter (wait_list.hpp (A)).
    return (tail_.value.load(std::memory_order_seq_cst) & mark_bit_) != 0;
  }

  [[nodiscard]] auto capacity() const noexcept -> std::size_t { return capacity_; }

  /// The number of buffered values (a snapshot; exact when nobody sends or receives).
  [[nodiscard]] auto size() const noexcept -> std::size_t {
    for (;;) {
      // seq_cst: the three loads form a consistent snapshot when the two tail loads agree.
      auto const tail = tail_.value.load(std::memory_order_seq_cst);
      auto const head = head_.value.load(std::memory_order_seq_cst);
      if (tail_.value.load(std::memory_order_seq_cst) != tail) {
        continue;
      }
      auto const hix = head & (mark_bit_ - 1);
      auto const tix = tail & (mark_bit_ - 1);
      if (hix < tix) {
        return static_cast<std::size_t>(tix - hix);
      }
      if (hix > tix) {
        return static_cast<std::size_t>(capacity_ - hix + tix);
      }
      return (tail & ~mark_bit_) == head ? 0 : capacity_;
    }
  }

 private:
  static constexpr std::size_t max_resume_room = channel_tuning::resume_room;

  struct slot {
    // INVARIANT: storage holds a live T exactly when stamp == position + 1 for the position
    // (lap and index) that last claimed it as a sender; whoever moves the stamp out of that
    // state has moved the T out and destroyed it.
    atomic<std::uint64_t> stamp{0};
    alignas(T) std::byte storage[sizeof(T)];

    auto raw() noexcept -> void* { return storage; }
    auto value() noexcept -> T& { return *std::launder(reinterpret_cast<T*>(storage)); }
  };

  static auto checked_capacity(std::size_t capacity) -> std::size_t {
    if (capacity == 0) {
      throw std::invalid_argument("spindle: array channel capacity must be at least 1");
    }
    // capacity * sizeof(slot) must not overflow, and the positions need two spare bits above
    // the index (the mark and the lap), which this bound also guarantees.
    if (capacity > std::numeric_limits<std::ptrdiff_t>::max() / sizeof(slot)) {
      throw std::length_error("spindle: bounded channel capacity too large to allocate");
    }
    return capacity;
  }

  /// The slot of position `pos` (its index bits, spread).
  [[nodiscard]] auto slot_at(std::uint64_t pos) const noexcept -> slot& {
    return slots_[layout_.slot_of(pos & (mark_bit_ - 1))];
  }

  /// The position `n` after `pos`, for n < capacity (the next index, or one in the next lap).
  [[nodiscard]] auto advance(std::uint64_t pos, std::uint64_t n = 1) const noexcept
      -> std::uint64_t {
    auto const index = (pos & (mark_bit_ - 1)) + n;
    auto const lap = pos & ~(one_lap_ - 1);
    return index < capacity_ ? lap + index : lap + one_lap_ + (index - capacity_);
  }

  /// Forced inline: with hand_off as its second caller g++ kept it out of line, and every
  /// try_send paid a call (docs/performance.md, "The hand-off to waiting send cases").
  SPINDLE_ALWAYS_INLINE auto start_send(std::uint64_t& tail, slot*& out) noexcept -> claim {
    backoff spin;
    // relaxed: a stale position only makes the CAS below fail; the stamp's acquire load
    // guards the slot.
    tail = tail_.value.load(std::memory_order_relaxed);
    for (;;) {
      if ((tail & mark_bit_) != 0) {
        return claim::closed;
      }
      slot& s = slot_at(tail);
      // The stamp load is followed by the value and stamp stores: take the line exclusive
      // now, when that pays (prefetch_pays).
      if (prefetch_pays()) {
        prefetch_for_write(&s);
      }
      // acquire: pairs with the release stamp store in read(); the previous value of this
      // slot was moved out and destroyed before we may construct a new one in it.
      auto const stamp = s.stamp.load(std::memory_order_acquire);
      if (stamp == tail) {
        // seq_cst: claims the position; the state change of the Dekker pair with the
        // receivers' wait list (B). relaxed on failure: we retry with the fresh value.
        if (tail_.value.compare_exchange_weak(tail, advance(tail), std::memory_order_seq_cst,
                                              std::memory_order_relaxed)) {
          out = &s;
          return claim::ok;
        }
        spin.spin();
      } else if (stamp + one_lap_ == tail + 1) {
        // The slot still holds last lap's value: full, unless a receiver is mid-read.
        // seq_cst fence: orders our stamp load before the head_ load, pairing with the
        // seq_cst CAS on head_ in start_recv (crossbeam array.rs start_send).
        fence_seq_cst();
        // relaxed: ordered by the fence above.
        auto const head = head_.value.load(std::memory_order_relaxed);
        if (head + one_lap_ == tail) {
          return claim::unavailable;
        }
        // A receiver claimed this slot and has not finished reading it; it may have been
        // preempted, so give way rather than spin on a core it may need.
        spin.snooze();
        // relaxed: re-validated by the stamp and the CAS.
        tail = tail_.value.load(std::memory_order_relaxed);
      } else {
        // Another sender claimed this position and has not published yet.
        spin.snooze();
        // relaxed: as above.
        tail = tail_.value.load(std::memory_order_relaxed);
      }
    }
  }

  void write(slot& s, std::uint64_t tail, T& value) noexcept {
    note_write(s.raw(), sizeof(T));
    // SAFETY: start_send won the CAS for position `tail`, whose stamp said "empty in this
    // lap", so the storage holds no live T and no other thread touches it until the release
    // store below.
    ::new (s.raw()) T(std::move(value));
    // release: publishes the constructed value; pairs with the acquire stamp load in
    // start_recv(), which lets a receiver read only after seeing this stamp.
    s.stamp.store(tail + 1, std::memory_order_release);
    receivers_.value.notify_one();
  }

  auto start_recv(std::uint64_t& head, slot*& out) noexcept -> claim {
    backoff spin;
    // relaxed: re-validated by the stamp and the CAS, as in start_send.
    head = head_.value.load(std::memory_order_relaxed);
    for (;;) {
      slot& s = slot_at(head);
      // acquire: pairs with the release stamp store in write(); the value is constructed.
      auto const stamp = s.stamp.load(std::memory_order_acquire);
      if (head + 1 == stamp) {
        // seq_cst: claims the position; the state change of the Dekker pair with the
        // senders' wait list (B). relaxed on failure: we retry with the fresh value.
        if (head_.value.compare_exchange_weak(head, advance(head), std::memory_order_seq_cst,
                                              std::memory_order_relaxed)) {
          out = &s;
          return claim::ok;
        }
        spin.spin();
      } else if (stamp == head) {
        // The slot is empty in this lap: empty, unless a sender is mid-write.
        // seq_cst fence: orders the stamp load before the tail_ load; pairs with the seq_cst
        // CAS on tail_ in start_send and the fetch_or in close().
        fence_seq_cst();
        // relaxed: ordered by the fence above.
        auto const tail = tail_.value.load(std::memory_order_relaxed);
        if ((tail & ~mark_bit_) == head) {
          return (tail & mark_bit_) != 0 ? claim::closed : claim::unavailable;
        }
        // A sender claimed this slot and has not finished writing it; it may have been
        // preempted, so give way rather than spin on a core it may need.
        spin.snooze();
        // relaxed: re-validated by the stamp and the CAS.
        head = head_.value.load(std::memory_order_relaxed);
      } else {
        // Another receiver claimed this position and has not published yet.
        spin.snooze();
        // relaxed: as above.
        head = head_.value.load(std::memory_order_relaxed);
      }
    }
  }

  auto read(slot& s, std::uint64_t head) noexcept -> std::optional<T> {
    note_read(s.raw(), sizeof(T));
    // SAFETY: start_recv won the CAS for position `head`, whose stamp (acquired) said "full in
    // this lap": the storage holds a live T that only this thread may touch until the release
    // store below.
    std::optional<T> out(std::in_place, std::move(s.value()));
    std::destroy_at(&s.value());
    // release: the slot is empty for the next lap; pairs with the acquire stamp load in
    // start_send(), so the next sender constructs only after our move and destroy.
    s.stamp.store(head + one_lap_, std::memory_order_release);
    senders_.value.notify_one_then([this](wait_entry& e) { hand_off(e); });
    return out;
  }

  /// A receiver that freed a slot and selected a waiting send case sends that case's value
  /// itself, so that the woken party has already sent and does not come back to the ring (the
  /// hand-off, see the header). Runs after the selection and before the wake: the sender
  /// cannot leave its wait, and its value (`e.packet`) stays put until the wake. An entry
  /// without a packet (a blocked thread's send) is only woken. Out of line: it runs only after
  /// a wait-list lock, and inlined it would swell every receive.
  [[gnu::noinline]] void hand_off(wait_entry& e) noexcept {
    if (e.packet == nullptr) {
      return;
    }
    std::uint64_t tail = 0;
    slot* s = nullptr;
    // One claim on the sender's behalf. If the ring is full again (a sender that was not
    // waiting took the slot first) or closed, the woken sender tries itself, as every woken
    // sender did before the hand-off.
    if (start_send(tail, s) != claim::ok) {
      return;
    }
    // SAFETY: the packet is the selected send case's value (send_case::watch), which nobody
    // else touches until its wake; the write's release store publishes the moved value.
    write(*s, tail, *static_cast<T*>(e.packet));
    note_write(&e.completed, sizeof(e.completed));
    e.completed = true;
  }

  /// Sends if the slot at the senders' position is free and so is the slot `resume_room_`
  /// positions after it; otherwise reports `full` (also when a receiver is mid-read): the
  /// waiting form of try_send, which reads no line a receiver writes except slots'. try_send's
  /// full check reads the receivers' position, and a sender polling it pulls that line away
  /// from the receivers on every round.
  auto poll_send(T& value) noexcept -> send_status {
    backoff spin;
    // relaxed: re-validated by the stamp and the CAS, as in start_send.
    auto tail = tail_.value.load(std::memory_order_relaxed);
    for (;;) {
      if ((tail & mark_bit_) != 0) {
        return send_status::closed;
      }
      slot& s = slot_at(tail);
      // acquire: pairs with the release stamp store in read(), as in start_send.
      if (s.stamp.load(std::memory_order_acquire) != tail) {
        return send_status::full;
      }
      if (!room_after(tail)) {
        return send_status::full;
      }
      // Only for a free slot: a waiting sender that took a full slot's line exclusive would
      // take it from the receiver about to read it.
      if (prefetch_pays()) {
        prefetch_for_write(&s);
      }
      // seq_cst: claims the position, as in start_send (the Dekker pair (B) with the
      // receivers' wait list). relaxed on failure: we look again at the fresh position.
      if (tail_.value.compare_exchange_weak(tail, advance(tail), std::memory_order_seq_cst,
                                            std::memory_order_relaxed)) {
        write(s, tail, value);
        return send_status::sent;
      }
      // Another sender won: back off before the next CAS, so that contending senders do not
      // keep stealing the position's cache line from each other.
      spin.spin();
    }
  }

  /// Takes the value at the receivers' position if it is there; otherwise reports `empty`
  /// (also when the channel is closed, or a sender is mid-write): the poll of recv_blocking,
  /// which reads no line a sender writes except the slot's.
  auto poll_recv() noexcept -> recv_result<T> {
    backoff spin;
    // relaxed: re-validated by the stamp and the CAS, as in start_recv.
    auto head = head_.value.load(std::memory_order_relaxed);
    for (;;) {
      slot& s = slot_at(head);
      // acquire: pairs with the release stamp store in write(); the value is constructed.
      if (s.stamp.load(std::memory_order_acquire) != head + 1) {
        return recv_result<T>{recv_status::empty, std::nullopt};
      }
      // seq_cst: claims the position, as in start_recv (the Dekker pair (B) with the
      // senders' wait list). relaxed on failure: we look again at the fresh position.
      if (head_.value.compare_exchange_weak(head, advance(head), std::memory_order_seq_cst,
                                            std::memory_order_relaxed)) {
        return recv_result<T>{recv_status::received, read(s, head)};
      }
      // Another receiver won: back off, as in poll_send.
      spin.spin();
    }
  }

  /// Whether the slot `resume_room_` positions after `tail` is free in its lap as well (room
  /// to resume, see the header). Receivers empty slots in position order, so the ones between
  /// are free too, or about to be.
  [[nodiscard]] auto room_after(std::uint64_t tail) const noexcept -> bool {
    if (resume_room_ == 0) {
      return true;
    }
    auto const ahead = advance(tail, resume_room_);
    // relaxed: a hint for when to try; the claim itself goes through the stamp at `tail` and
    // the CAS on tail_.
    return slot_at(ahead).stamp.load(std::memory_order_relaxed) == ahead;
  }

  /// Whether a sender takes the line of the slot it is about to claim exclusive before it
  /// loads the stamp (channel_tuning::prefetch). By default only a sole sender does: where
  /// other senders spin on the same slot lines, taking a line exclusive early takes it from
  /// them, and several senders lost throughput by it on 16 cores, while a ping-pong (one sender
  /// a channel) gained (docs/performance.md, "Channel variants on 16 cores"). Not under the
  /// model checker, where the prefetch is no operation at all and the count's load would only
  /// add steps; except in the coherence meter's build (SPINDLE_MODEL_COHERENCE), which counts
  /// what the prefetch costs (include/spindle/model/coherence.hpp).
  [[nodiscard]] auto prefetch_pays() const noexcept -> bool {
#if defined(SPINDLE_MODEL_CHECK) && !defined(SPINDLE_MODEL_COHERENCE)
    return false;
#else
    if constexpr (channel_tuning::prefetch == 2) {
      // relaxed: a snapshot of the handle count for a heuristic; nothing is published.
      return sender_count_ != nullptr && sender_count_->load(std::memory_order_relaxed) == 1;
    } else {
      return channel_tuning::prefetch == 1;
    }
#endif
  }

  [[nodiscard]] auto is_empty() const noexcept -> bool {
    // seq_cst: the re-check after registering a receiver (wait_list.hpp (A)).
    auto const head = head_.value.load(std::memory_order_seq_cst);
    auto const tail = tail_.value.load(std::memory_order_seq_cst);
    return (tail & ~mark_bit_) == head;
  }

  [[nodiscard]] auto is_full() const noexcept -> bool {
    // seq_cst: the re-check after registering a sender (wait_list.hpp (A)).
    auto const tail = tail_.value.load(std::memory_order_seq_cst);
    auto const head = head_.value.load(std::memory_order_seq_cst);
    return head + one_lap_ == (tail & ~mark_bit_);
  }

  // Receivers' position: {lap, index}. INVARIANT: head_ <= tail_ (ignoring the mark) and
  // tail_ - head_ covers at most capacity_ slots.
  cache_padded<atomic<std::uint64_t>> head_;
  // Senders' position: {lap, mark, index}; the mark means closed and is never cleared.
  cache_padded<atomic<std::uint64_t>> tail_;
  // Read-only after construction.
  std::size_t capacity_;
  std::uint64_t mark_bit_;
  std::uint64_t one_lap_;
  // Free slots a waiting sender wants after the first before its poll rounds send again.
  std::size_t resume_room_;
  spread_layout layout_;
  std::unique_ptr<slot[]> slots_;
  // The channel's sender handle count (prefetch_pays); set once, before the channel is shared.
  atomic<std::size_t> const* sender_count_ = nullptr;
  cache_padded<wait_list> senders_;
  cache_padded<wait_list> receivers_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

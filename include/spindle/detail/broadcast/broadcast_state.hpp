// SPDX-License-Identifier: BSL-1.0
#pragma once
// The shared state of a broadcast (spindle/broadcast.hpp): a ring of `capacity` slots that
// every receiver reads at its own position, each slot guarded by a small reader-writer lock.
//
// Design: tokio's broadcast channel (tokio-rs/tokio: tokio/src/sync/broadcast.rs): a ring of
// slots, each with the position of the message it holds and a reader-writer lock; the sender
// takes the slot's write lock to overwrite it, a receiver takes its read lock to copy the
// message out; a receiver compares the slot's position with its own to tell "not sent yet"
// from "overwritten" (then it skips to the oldest message still held and reports how many it
// missed). Differences, each for a reason:
//   - tokio takes its tail mutex on every receive that finds nothing, and counts per slot the
//     receivers that have not read it yet, so that the value is dropped by the last one. Here
//     a slot's value lives until the sender overwrites it (or the broadcast is destroyed), so
//     a receive touches the slot's lock word and nothing else: no shared counter that every
//     receiver decrements, and a clone of a receiver costs nothing. The price: up to
//     `capacity` messages stay alive after everyone read them.
//   - tokio's tail mutex (next position, closed flag, waiter list) becomes one atomic word:
//     the next position, the closed flag and a `locked` bit that serialises senders. A send
//     takes the bit with one CAS and gives it back with the store that publishes the new
//     position, so an uncontended send is two RMWs on the tail (tokio: a mutex lock and unlock
//     around the same work) plus the slot's lock. Receivers read the word without a lock; a
//     blocked receiver waits on a wait list (detail/sync/wait_list.hpp) like every other
//     spindle wait, so threads, coroutines and select wait alike.
//   - The capacity is exact (not rounded up to a power of two): a receiver lags when it falls
//     more than `capacity` messages behind, not more than the next power of two. Positions
//     advance with a wrapping index next to them, so no division is on the fast paths.
//
// Why a lock per slot and not a seqlock: a seqlock reader copies while a writer may be
// overwriting and throws the copy away if the sequence moved. For a T with a non-trivial copy
// (a std::string, a shared_ptr) that copy would read a half-destroyed object: undefined
// behaviour, not merely a torn value. So a reader holds the slot's read lock for the length of
// its copy, and the sender waits for the copy before it destroys the old value. The sender
// never waits for a slow receiver to read a slot (it overwrites it; the receiver then lags),
// only for a copy that is running at that moment.
//
// Synchronization:
//   - `tail_` = next position << 2 | locked << 1 | closed. The `locked` bit is the senders'
//     lock: set by a CAS in lock_tail(), cleared by the store that ends a send or a close.
//     Only the holder changes the word; receivers read it without a lock. INVARIANT: positions
//     below tail_ >> 2 are written in their slots (each slot holds the newest position
//     congruent to its index mod capacity). `send_index_` is the slot of tail_ >> 2, read and
//     written only by the holder.
//   - `slot::lock`: bit 31 = writer, low bits = readers. Only the sender holding the tail lock
//     sets the writer bit; a reader joins only while it is clear (a CAS), so while it is set the
//     word changes only by readers leaving. `slot::stamp` (position + 1 of the value held, 0
//     when empty) and the storage are written under the writer bit with no readers, read under
//     a read lock.
//   - `senders_`, `receivers_`, `refs_`: handle counts. The last sender closes; the last
//     handle destroys the state.
//   - `waiters_`: receivers waiting for a message (threads, coroutines, select cases).
//
// Lost wake-ups: a waiting receiver pushes its entry (seq_cst store (A) of wait_list.hpp) and
// re-checks `tail_` with a seq_cst load (R); the sender stores `tail_` with seq_cst (S) and then
// loads the wait list's is_empty with seq_cst (B). In the single total order either the
// re-check sees the new tail or the sender sees the entry and wakes everyone waiting.
//
// Happens-before: whatever a sender did before send(v) is visible to a receiver once its
// receive returns a copy of v (the slot's write unlock is a release, the read lock an
// acquire). close() happens before every receive that reports `closed` because of it.
//
// Progress: a send takes the tail lock (uncontended with one sender; concurrent senders spin
// and yield for the length of one slot write), takes one slot's write lock (waiting only for
// copies in progress) and wakes receivers only when some wait.
// A receive takes one slot's read lock (waiting only while the sender rewrites that slot).

#include <spindle/broadcast_result.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/backoff.hpp>
#include <spindle/detail/sync/cache_padded.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// A receiver's position: the next message it reads and that message's slot.
struct broadcast_cursor {
  std::uint64_t next = 0;
  std::size_t index = 0;
};

template <class T>
class broadcast_state {
 public:
  /// The largest capacity a broadcast accepts.
  static constexpr std::size_t max_capacity = std::size_t{1} << 30U;

  /// Throws: std::invalid_argument if capacity is 0 or above max_capacity; std::bad_alloc.
  explicit broadcast_state(std::size_t capacity)
      : capacity_(checked(capacity)), slots_(std::make_unique<slot[]>(capacity)) {}
  broadcast_state(broadcast_state const&) = delete;
  auto operator=(broadcast_state const&) -> broadcast_state& = delete;
  ~broadcast_state() {
    for (std::size_t i = 0; i < capacity_; ++i) {
      // SAFETY: the last handle is gone, so nobody else touches the slots; a stamp other than
      // 0 means the slot holds a live T that no later send destroyed.
      if (slots_[i].stamp != 0) {
        std::destroy_at(slots_[i].value());
      }
    }
  }

  [[nodiscard]] auto capacity() const noexcept -> std::size_t { return capacity_; }

  /// Stores `value` for every receiver, overwriting the oldest message when the ring is full.
  auto send(T&& value) noexcept -> broadcast_send_result<T> {
    std::uint64_t const t = lock_tail();
    if ((t & closed_bit) != 0) {
      unlock_tail(t);
      return {broadcast_send_status::closed, 0, std::optional<T>(std::move(value))};
    }
    // relaxed: a snapshot for the caller; a receiver made concurrently may or may not get this
    // message, as its subscribe() reads the tail before or after (S) below.
    std::size_t const receivers = receivers_.load(std::memory_order_relaxed);
    if (receivers == 0) {
      unlock_tail(t);
      return {broadcast_send_status::no_receivers, 0, std::optional<T>(std::move(value))};
    }
    std::uint64_t const pos = t >> position_shift;
    // The plain fields the tail lock and the slot lock guard, marked for the model checker's
    // race detector (nothing in other builds).
    note_write(&send_index_, sizeof(send_index_));
    slot& s = slots_[send_index_];
    lock_for_write(s);
    note_write(&s.stamp, sizeof(s.stamp));
    note_write(s.storage, sizeof(T));
    if (s.stamp != 0) {
      // SAFETY: we hold the write lock and no reader is inside (lock_for_write waited for
      // them), and stamp != 0 says the slot holds a live T.
      std::destroy_at(s.value());
    }
    // SAFETY: as above; the storage holds no live T now. T's move does not throw.
    ::new (static_cast<void*>(s.storage)) T(std::move(value));
    s.stamp = pos + 1;
    unlock_write(s);
    send_index_ = send_index_ + 1 == capacity_ ? 0 : send_index_ + 1;
    // seq_cst (S): publishes the position to receivers that read tail_ (their acquire or
    // seq_cst loads) and releases the tail lock (the next sender's acquire CAS in lock_tail()
    // sees send_index_ and the slot as we left them); with (B) below it is the sender's half of
    // the Dekker pair with a waiter's push (A) and re-check (R) (file comment).
    tail_.value.store((pos + 1) << position_shift, std::memory_order_seq_cst);
    // (B): one load when nobody waits.
    wake_all();
    return {broadcast_send_status::sent, receivers, std::nullopt};
  }

  /// Marks the broadcast closed: later sends fail, receivers read what is held, then `closed`.
  void close() noexcept {
    std::uint64_t const t = lock_tail();
    // seq_cst: the Dekker store (S) as in send(): a waiter's re-check (R) sees it or the wake
    // below sees the waiter. It also releases the tail lock: no send completes after it.
    tail_.value.store(t | closed_bit, std::memory_order_seq_cst);
    wake_all();
  }

  [[nodiscard]] auto is_closed() const noexcept -> bool {
    // acquire: pairs with the seq_cst fetch_or in close().
    return (tail_.value.load(std::memory_order_acquire) & closed_bit) != 0;
  }

  /// Receives the message at `c` without blocking, and moves `c` on past it (or, lagged, to
  /// the oldest message still held).
  ///
  /// Throws: whatever T's copy constructor throws; `c` is unchanged then.
  auto try_recv(broadcast_cursor& c) -> broadcast_recv_result<T> {
    backoff spin;
    for (;;) {
      slot& s = slots_[c.index];
      if (!try_lock_for_read(s)) {
        // The sender is rewriting this slot: it holds the lock for one destroy and one move.
        // Wait with loads only, off the line's ownership.
        wait_for_writer(s, spin);
        continue;
      }
      note_read(&s.stamp, sizeof(s.stamp));
      std::uint64_t const stamp = s.stamp;
      if (stamp == c.next + 1) {
        note_read(s.storage, sizeof(T));
        read_guard guard(s);
        // SAFETY: the read lock keeps the sender from destroying the value while we copy it;
        // the stamp says it is the message at our position.
        broadcast_recv_result<T> r{broadcast_recv_status::received, std::optional<T>(*s.value()),
                                   0};
        advance(c);
        return r;
      }
      unlock_read(s);
      if (stamp > c.next + 1) {
        return skip_to_oldest(c, stamp);
      }
      // Not written yet. seq_cst (R): the waiter's re-check of ready() uses the same load.
      std::uint64_t const t = tail_.value.load(std::memory_order_seq_cst);
      if ((t >> position_shift) > c.next) {
        // Sent between our look at the slot and this load: read it.
        continue;
      }
      if ((t & closed_bit) != 0) {
        return {broadcast_recv_status::closed, std::nullopt, 0};
      }
      return {broadcast_recv_status::empty, std::nullopt, 0};
    }
  }

  /// Whether a receive at `c` would find something (a message, or the close): the re-check
  /// of a waiter after it registered.
  [[nodiscard]] auto ready(broadcast_cursor const& c) const noexcept -> bool {
    // seq_cst (R): pairs with (S) in send() and close(); see the file comment.
    std::uint64_t const t = tail_.value.load(std::memory_order_seq_cst);
    return (t >> position_shift) > c.next || (t & closed_bit) != 0;
  }

  /// A cursor at the next message to be sent (subscribe()).
  [[nodiscard]] auto cursor_at_tail() const noexcept -> broadcast_cursor {
    // acquire: pairs with (S); every message from this position on is one we will read.
    std::uint64_t const pos = tail_.value.load(std::memory_order_acquire) >> position_shift;
    return broadcast_cursor{pos, static_cast<std::size_t>(pos % capacity_)};
  }

  auto waiters() noexcept -> wait_list& { return waiters_; }

  /// Receivers registered to wait now (a snapshot).
  [[nodiscard]] auto waiting() const noexcept -> std::size_t {
    // relaxed: a snapshot for tests and diagnostics.
    return waiting_.load(std::memory_order_relaxed);
  }
  void note_waiting(bool entering) noexcept {
    // relaxed: a snapshot counter (waiting()); the wait list carries the synchronisation.
    if (entering) {
      waiting_.fetch_add(1, std::memory_order_relaxed);
    } else {
      // relaxed: as above.
      waiting_.fetch_sub(1, std::memory_order_relaxed);
    }
  }

  // Handle counts. refs_ counts every handle; senders_ and receivers_ the two kinds.
  void add_sender() noexcept {
    // relaxed: a new handle is made from an existing one, which keeps the state alive.
    senders_.fetch_add(1, std::memory_order_relaxed);
    refs_.fetch_add(1, std::memory_order_relaxed);
  }
  void add_receiver() noexcept {
    // relaxed: as add_sender(); send() reads receivers_ as a snapshot.
    receivers_.fetch_add(1, std::memory_order_relaxed);
    refs_.fetch_add(1, std::memory_order_relaxed);
  }
  /// Drops a sender handle; the last one closes. Returns whether the caller must delete.
  [[nodiscard]] auto drop_sender() noexcept -> bool {
    // acq_rel: the last sender's close() comes after every other sender's last send.
    if (senders_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      close();
    }
    return drop_ref();
  }
  [[nodiscard]] auto drop_receiver() noexcept -> bool {
    // relaxed: a snapshot count for send(); the state's lifetime is refs_.
    receivers_.fetch_sub(1, std::memory_order_relaxed);
    return drop_ref();
  }
  [[nodiscard]] auto receiver_count() const noexcept -> std::size_t {
    // relaxed: a snapshot.
    return receivers_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] auto sender_count() const noexcept -> std::size_t {
    // relaxed: a snapshot.
    return senders_.load(std::memory_order_relaxed);
  }

 private:
  static constexpr std::uint64_t closed_bit = 1;
  static constexpr std::uint64_t locked_bit = 2;
  static constexpr unsigned position_shift = 2;
  static constexpr std::uint32_t writer_bit = std::uint32_t{1} << 31U;
  static constexpr std::uint32_t reader_mask = writer_bit - 1;

  struct slot {
    // INVARIANT: the writer bit is set only by the sender holding the tail lock; while it is
    // set with no readers counted, the sender alone touches stamp and storage.
    atomic<std::uint32_t> lock{0};
    // INVARIANT: storage holds a live T exactly when stamp != 0; stamp = its position + 1.
    std::uint64_t stamp = 0;
    alignas(T) std::byte storage[sizeof(T)];

    auto value() noexcept -> T* { return std::launder(reinterpret_cast<T*>(storage)); }
  };

  /// Unlocks a read lock on scope exit (the copy of a message may throw).
  struct read_guard {
    explicit read_guard(slot& locked) noexcept : s(&locked) {}
    read_guard(read_guard const&) = delete;
    auto operator=(read_guard const&) -> read_guard& = delete;
    ~read_guard() { unlock_read(*s); }
    slot* s;
  };

  static auto checked(std::size_t capacity) -> std::size_t {
    if (capacity == 0) {
      throw std::invalid_argument("spindle::broadcast: capacity must be at least 1");
    }
    if (capacity > max_capacity) {
      throw std::invalid_argument("spindle::broadcast: capacity above max_capacity (2^30)");
    }
    return capacity;
  }

  /// Takes the senders' lock (the `locked` bit of tail_); returns the word without it.
  auto lock_tail() noexcept -> std::uint64_t {
    backoff spin;
    // relaxed: a first look; the CAS below decides.
    std::uint64_t t = tail_.value.load(std::memory_order_relaxed);
    for (;;) {
      if ((t & locked_bit) == 0) {
        // acquire: pairs with the seq_cst store that ended the previous send or close (or
        // unlock_tail()): its slot write and send_index_ are visible to us. relaxed on failure:
        // we look again.
        if (tail_.value.compare_exchange_weak(t, t | locked_bit, std::memory_order_acquire,
                                              std::memory_order_relaxed)) {
          return t;
        }
        continue;
      }
      // Another sender is inside for one slot write: wait with loads only.
      spin.snooze();
      // relaxed: a look; the CAS decides.
      t = tail_.value.load(std::memory_order_relaxed);
    }
  }
  /// Gives the senders' lock back without sending: `t` is what lock_tail() returned.
  void unlock_tail(std::uint64_t t) noexcept {
    // release: pairs with the acquire CAS in lock_tail(); nothing was written.
    tail_.value.store(t, std::memory_order_release);
  }

  /// Takes the write lock: announces the writer (readers arriving from now on stay out), then
  /// waits for the copies in progress.
  static void lock_for_write(slot& s) noexcept {
    // acquire (W1): pairs with the release in unlock_read() of readers that left before; no
    // other writer exists (the tail lock).
    std::uint32_t seen = s.lock.fetch_or(writer_bit, std::memory_order_acquire);
    backoff spin;
    while ((seen & reader_mask) != 0) {
      spin.snooze();
      // acquire (W2): pairs with the release fetch_sub in unlock_read(): a reader's copy
      // happens before we destroy the value it copied.
      seen = s.lock.load(std::memory_order_acquire);
    }
  }
  static void unlock_write(slot& s) noexcept {
    // release: publishes the new value and stamp; pairs with the acquire CAS in
    // try_lock_for_read(). A plain store suffices: while the writer bit is set no reader
    // changes the word (they join only by a CAS that sees the bit clear), and the count is 0.
    s.lock.store(0, std::memory_order_release);
  }
  [[nodiscard]] static auto try_lock_for_read(slot& s) noexcept -> bool {
    // relaxed: a first look; the CAS decides.
    std::uint32_t v = s.lock.load(std::memory_order_relaxed);
    for (;;) {
      if ((v & writer_bit) != 0) {
        return false;
      }
      // acquire: pairs with the release store in unlock_write(): the value and stamp we read
      // are the ones the sender wrote. relaxed on failure: we look again.
      if (s.lock.compare_exchange_weak(v, v + 1, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return true;
      }
    }
  }
  static void wait_for_writer(slot& s, backoff& spin) noexcept {
    do {
      spin.snooze();
      // relaxed: a hint; try_lock_for_read()'s acquire RMW decides.
    } while ((s.lock.load(std::memory_order_relaxed) & writer_bit) != 0);
  }
  static void unlock_read(slot& s) noexcept {
    // release: our copy happens before the writer's destroy; pairs with (W1)/(W2).
    s.lock.fetch_sub(1, std::memory_order_release);
  }

  void advance(broadcast_cursor& c) const noexcept {
    ++c.next;
    c.index = c.index + 1 == capacity_ ? 0 : c.index + 1;
  }

  /// The slot at `c` holds a later message (stamp - 1): the messages from c.next to the
  /// oldest still held were overwritten. Moves `c` to that oldest and reports the count.
  auto skip_to_oldest(broadcast_cursor& c, std::uint64_t stamp) noexcept
      -> broadcast_recv_result<T> {
    // acquire: pairs with (S). The slot we saw may be newer than the tail we read (the sender
    // stores the tail after the slot), so the tail is at least `stamp`.
    std::uint64_t tail = tail_.value.load(std::memory_order_acquire) >> position_shift;
    if (tail < stamp) {
      tail = stamp;
    }
    // stamp - 1 is congruent to c.next and above it, so tail >= c.next + capacity + 1.
    std::uint64_t const oldest = tail - capacity_;
    SPINDLE_ASSERT(oldest > c.next, "a lagged receiver moves forward");
    std::uint64_t const missed = oldest - c.next;
    c.next = oldest;
    c.index = static_cast<std::size_t>(oldest % capacity_);
    return {broadcast_recv_status::lagged, std::nullopt, missed};
  }

  void wake_all() noexcept {
    // seq_cst (B) inside is_empty(): see the file comment. A woken receiver (its wait
    // completed as `closed`, which every wait form treats as "look again") retries.
    if (!waiters_.is_empty()) {
      waiters_.close_all();
    }
  }

  [[nodiscard]] auto drop_ref() noexcept -> bool {
    // acq_rel: the last handle's deletion comes after every other handle's use.
    return refs_.fetch_sub(1, std::memory_order_acq_rel) == 1;
  }

  std::size_t const capacity_;
  std::unique_ptr<slot[]> slots_;
  // The sender side: send_index_ is guarded by the tail lock.
  cache_padded<atomic<std::uint64_t>> tail_;
  std::size_t send_index_ = 0;
  wait_list waiters_;
  atomic<std::size_t> waiting_{0};
  atomic<std::size_t> senders_{1};
  atomic<std::size_t> receivers_{1};
  atomic<std::size_t> refs_{2};
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

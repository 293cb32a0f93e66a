// SPDX-License-Identifier: BSL-1.0
#pragma once
// The single-producer single-consumer flavour (spindle::bounded_spsc): a ring of plain slots
// that one sender and one receiver pass values through, with the blocking, close, select and
// awaitable operations of the other flavours.
//
// Algorithm: Lamport's ring (L. Lamport, "Specifying Concurrent Program Modules", ACM TOPLAS
// 5(2), 1983), with each side caching the other's position as rigtorp's SPSCQueue
// (rigtorp/SPSCQueue, include/rigtorp/SPSCQueue.h) and folly's ProducerConsumerQueue
// (folly/ProducerConsumerQueue.h) do. The ring has capacity + 1 slots; tail_ is the sender's
// next index, head_ the receiver's; the ring is empty when they are equal and full when the
// slot after tail_ is head_. A side reads the other's position only when its cached copy says
// empty (receiver) or full (sender), so while values flow each side's position stays in its
// own cache and a slot's line crosses once, from sender to receiver. Against the array
// flavour: no stamp per slot (the receiver writes nothing into a slot), no CAS race between
// threads of one side, and slots in position order instead of spread over lines.
//
// What it adds to the bare ring, and what that costs:
//   - Blocking. Each side wakes the other side's waiters after it publishes: it stores its
//     position (a plain release store, as in the bare ring), then looks at the other side's
//     wait list. A waiter registers, then re-checks the position. That is a Dekker pair, and
//     it needs a store->load barrier on both sides; a seq_cst store or CAS per message would
//     cost a locked instruction and, worse, stall on the line the other side is polling. So
//     the pair is asymmetric (detail/sync/atomic.hpp): the side that publishes runs
//     light_fence(), a compiler barrier, and the side that is about to sleep runs
//     heavy_fence() (membarrier(2)) between registering and re-checking. The heavy fence
//     costs a system call (atomic.hpp), next to a sleep that already waited out the poll
//     budget.
//   - When waits are frequent, the pair stops being asymmetric. A coroutine or select waits
//     after a single look, and a thread whose partner sends every few hundred microseconds
//     parks on every message; then a heavy fence per wait costs more than a fence per
//     message would. After 8 heavy fences in a row less than 1 ms apart (2 under the model
//     checker), a waiter switches the channel, once and for good, to a full fence on both
//     sides: it moves fence_mode_ from asymmetric to switching, runs one more heavy fence,
//     then stores symmetric. A side that publishes loads fence_mode_ after its store of the
//     position and fences unless it reads asymmetric; a waiter skips its heavy fence only
//     once it reads symmetric. Why that is safe: a publisher that still read asymmetric read
//     it before the switcher's heavy fence reached its CPU, so the store before that load
//     was flushed by that fence, before symmetric was stored; every later publisher fences.
//   - Close. A receiver must be able to tell "closed and drained" from "a send is about to
//     publish". A send that finds room moves the value into the slot, raises `publishing` on
//     its own line, runs light_fence() and reads `closed_`; it publishes only if that is false
//     (otherwise it moves the value back to the caller), then lowers `publishing`.
//     close() sets `closed_`, runs heavy_fence(), waits until `publishing` is down, and only
//     then sets the mark bit in tail_ (one fetch_or, as close.hpp). The asymmetric pair
//     guarantees that a send either saw `closed_` (and hands its value back) or is
//     seen publishing by close(), which waits for it: after the mark, the sender never stores
//     tail_ again, so the plain store cannot wipe the mark, and a receiver that sees the mark
//     with nothing buffered has seen every value sent before the close. The wait is for a few
//     instructions of the sender, unless the sender is preempted inside them; then close()
//     yields until it runs.
//   - One user per side: a spsc_sender and a spsc_receiver cannot be copied, through their
//     base classes either (a compile error; channel_state::acquire_sender also refuses a copy
//     that reached the state some other way, in every build). Two
//     threads using one handle at once is a precondition violation, as for every
//     single-producer queue. Builds with SPINDLE_ENABLE_ASSERTS (the SPINDLE_ASSERTIONS
//     option) report it: each side marks itself busy for the length of an operation with
//     relaxed loads and stores of a flag on its own line, so an overlap is reported as soon as
//     one use sees the other's mark (a sustained overlap at once; a single overlap of two short
//     calls may slip through). The flag orders nothing: a correct hand-over of the handle
//     between threads already orders its uses, and then no use sees another's mark. It is off
//     in other builds because it cost a third of the throughput (docs/performance.md).
//
// Waiting: a sender on a full ring holds back until half the ring is free (at most 512 slots),
// as the array flavour's "room to resume"; a receiver waits as recv_blocking says.
//
// Synchronization:
//   tail_   written by the sender (release store) and, once, by close (fetch_or of the mark);
//           read by everyone. Its release publishes the value constructed in the slot (the
//           receiver's acquire load pairs).
//   head_   (rx_.head, on the receiver's line) written by the receiver (release store); read
//           by everyone. Its release hands the emptied slot back (the sender's acquire load
//           pairs).
//   closed_, publishing  the close hand-shake above (asymmetric fences between them).
//   head_cache / tail_cache  plain: each touched only by the side that owns it.
//   senders_/receivers_  wait lists (detail/sync/wait_list.hpp); the light_fence() after a
//           publication pairs with the heavy_fence() after a registration.
//
// Progress: try_send and try_recv are wait-free (no loop, no spin on the other side); close()
// waits for a send that is inside its publication (see Close).

#include <spindle/channel_result.hpp>
#include <spindle/detail/channel/close.hpp>
#include <spindle/detail/channel/park.hpp>
#include <spindle/detail/channel/readiness.hpp>
#include <spindle/detail/channel/recv_blocking.hpp>
#include <spindle/detail/channel/wait_budget.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/backoff.hpp>
#include <spindle/detail/sync/cache_padded.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Marks one side of a single-producer single-consumer channel busy for a scope, and reports
/// an overlap with another use of the same side as misuse. Only with SPINDLE_ENABLE_ASSERTS;
/// otherwise it does nothing (see spsc_channel's header).
class exclusive_use {
 public:
#if defined(SPINDLE_ENABLE_ASSERTS)
  exclusive_use(atomic<bool>& busy, char const* what) noexcept : busy_(&busy) {
    // relaxed: a misuse detector, not a synchronization (see spsc_channel's header): the
    // hand-over of a handle between threads orders its uses, so a correct program never
    // reads another use's mark here.
    SPINDLE_CHECK(!busy_->load(std::memory_order_relaxed), what);
    // relaxed: as above.
    busy_->store(true, std::memory_order_relaxed);
  }
  ~exclusive_use() {
    // relaxed: as above.
    busy_->store(false, std::memory_order_relaxed);
  }
#else
  exclusive_use(atomic<bool>& /*busy*/, char const* /*what*/) noexcept {}
  ~exclusive_use() = default;
#endif
  exclusive_use(exclusive_use const&) = delete;
  auto operator=(exclusive_use const&) -> exclusive_use& = delete;

#if defined(SPINDLE_ENABLE_ASSERTS)
 private:
  atomic<bool>* busy_;
#endif
};

template <class T>
class spsc_channel {
 public:
  /// Throws: std::invalid_argument if capacity is 0; std::length_error if capacity + 1 slots
  /// do not fit in memory's address space; std::bad_alloc if they cannot be allocated.
  explicit spsc_channel(std::size_t capacity)
      : capacity_(checked_capacity(capacity)),
        ring_(static_cast<std::uint64_t>(capacity_) + 1),
        resume_room_(std::max<std::uint64_t>(1, std::min(capacity_ / 2, max_resume_room))),
        asymmetric_(asymmetric_fences()),
        fence_mode_(asymmetric_ ? fence_mode::asymmetric : fence_mode::symmetric),
        slots_(std::make_unique_for_overwrite<cell[]>(capacity_ + 1)) {}

  spsc_channel(spsc_channel const&) = delete;
  auto operator=(spsc_channel const&) -> spsc_channel& = delete;

  ~spsc_channel() {
    // SAFETY: no handle is left, so no other thread touches the channel; the slots from head
    // to tail hold live values.
    drain(*this);
  }

  /// Sends without waiting. On success `value` is moved from; otherwise it is untouched.
  SPINDLE_ALWAYS_INLINE auto try_send(T& value) noexcept -> send_status {
    exclusive_use const use(tx_.value.busy, sender_overlap);
    return send_once(value);
  }

  /// Sends, blocking while the channel is full: sent, closed, or timed_out (deadline).
  auto send(T& value, wait_options const& options) noexcept -> send_status {
    exclusive_use const use(tx_.value.busy, sender_overlap);
    bool blocked = false;
    for (;;) {
      // As the array flavour's send: a full ring gets room only when the receiver runs, so
      // the wait yields from the first round; most rounds wait for room to resume, and every
      // full_every-th round takes any free slot.
      wait_budget budget(options, 0);
      do {
        auto const status = budget.full_attempt_due() ? send_once(value) : poll_send(value);
        if (status != send_status::full) {
          return status;
        }
      } while (budget.keep_trying());
      if (options.expired()) {
        return send_status::timed_out;
      }
      park_on(
          senders_.value,
          [this] {
            // The rare side of the pair with after_publication() in recv_once().
            before_recheck();
            return !is_full() || is_closed();
          },
          options, blocked, /*is_send=*/true);
    }
  }

  /// Receives without waiting: received, empty, or closed (closed and drained).
  SPINDLE_ALWAYS_INLINE auto try_recv() noexcept -> recv_result<T> {
    exclusive_use const use(rx_.value.busy, receiver_overlap);
    return recv_once();
  }

  /// The first look of a blocking receive (channel_state::first_look): try_recv.
  SPINDLE_ALWAYS_INLINE auto first_look() noexcept -> recv_result<T> { return try_recv(); }

  /// Receives, blocking while the channel is empty: received, closed, timed_out or cancelled.
  auto recv(wait_options const& options) noexcept -> recv_result<T> {
    exclusive_use const use(rx_.value.busy, receiver_overlap);
    auto const once = [this] { return recv_once(); };
    return recv_blocking<T>(
        once, once, receivers_.value,
        [this] {
          // The rare side of the pair with after_publication() in send_once().
          before_recheck();
          return !is_empty() || is_closed();
        },
        options);
  }

  /// Closes the channel; returns true for the call that closed it. Wakes every waiter. From
  /// any thread: the hand-shake with a send that may be publishing (see Close in the header).
  auto close() noexcept -> bool {
    if (is_closed()) {
      return false;  // the usual second close: the last handle of a side going after close()
    }
    // relaxed: ordered before the publishing loads by the heavy fence below.
    closed_.store(true, std::memory_order_relaxed);
    // The heavy side of the pair with the light_fence() in send_once(): from here on, a send
    // that raises `publishing` sees closed_, or this thread sees it raised below.
    heavy_fence(asymmetric_);
    backoff spin;
    // acquire: pairs with the sender's release store that lowers `publishing`, after its
    // store of tail_.
    while (tx_.value.publishing.load(std::memory_order_acquire)) {
      spin.snooze();
    }
    return close_by_mark(tail_.value, mark_bit, senders_.value, receivers_.value);
  }

  /// close() from the sending side (the sender's close(), or the sender going): no send can be
  /// publishing, since the sender is this thread, so the hand-shake and its heavy fence are
  /// not needed; the mark alone closes.
  auto close_as_sender() noexcept -> bool {
    if (is_closed()) {
      return false;
    }
    // relaxed: every later send of this thread reads it in program order; other threads
    // learn of the close from the mark, stored after it.
    closed_.store(true, std::memory_order_relaxed);
    return close_by_mark(tail_.value, mark_bit, senders_.value, receivers_.value);
  }

  /// The last receiver is gone: closes the channel and destroys every buffered value now.
  void discard() noexcept {
    close();
    drain(*this);
  }

  // Select (detail/select/select_loop.hpp), as the array flavour's.
  // Each watch ends with the fence that the re-check after it needs (before_recheck(), the
  // rare side of the pair with after_publication(), as in the blocking calls).
  void watch_send(wait_entry& e) noexcept {
    senders_.value.push(e);
    before_recheck();
  }
  void unwatch_send(wait_entry& e) noexcept { senders_.value.remove(e); }
  void watch_recv(wait_entry& e) noexcept {
    receivers_.value.push(e);
    before_recheck();
  }
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

  /// The no-lost-wake-up invariant (readiness.hpp).
  [[nodiscard]] auto lost_wake_up() const noexcept -> char const* {
    return buffered_lost_wake_up(
        receivers_.value, [this] { return recv_ready(nullptr); }, &senders_.value,
        [this] { return send_ready(nullptr); });
  }

  [[nodiscard]] auto is_closed() const noexcept -> bool {
    // seq_cst: part of the re-check after registering a waiter (wait_list.hpp (A)).
    return (tail_.value.load(std::memory_order_seq_cst) & mark_bit) != 0;
  }

  [[nodiscard]] auto capacity() const noexcept -> std::size_t { return capacity_; }

  /// The number of buffered values (a snapshot; exact when nobody sends or receives).
  [[nodiscard]] auto size() const noexcept -> std::size_t {
    for (;;) {
      // seq_cst: the three loads form a consistent snapshot when the two tail loads agree.
      auto const tail = tail_.value.load(std::memory_order_seq_cst);
      auto const head = rx_.value.head.load(std::memory_order_seq_cst);
      if (tail_.value.load(std::memory_order_seq_cst) != tail) {
        continue;
      }
      return static_cast<std::size_t>(distance(head, tail & ~mark_bit));
    }
  }

 private:
  /// The mark in tail_: closed. Indices stay below ring_, which is below it.
  static constexpr std::uint64_t mark_bit = std::uint64_t{1} << 63;
  static constexpr std::size_t max_resume_room = 512;
  static constexpr char const* sender_overlap =
      "a spindle::spsc_sender used by two threads at once (one thread at a time per handle)";
  static constexpr char const* receiver_overlap =
      "a spindle::spsc_receiver used by two threads at once (one thread at a time per handle)";

  struct cell {
    alignas(T) std::byte storage[sizeof(T)];

    auto raw() noexcept -> void* { return storage; }
    auto value() noexcept -> T& { return *std::launder(reinterpret_cast<T*>(storage)); }
  };

  /// The sender's private line: what only the sender touches. Its position tail_ is on a line
  /// of its own, which the receiver reads whenever its cached tail says empty: a flag written
  /// twice per send beside it would pull that line back and forth once more per message.
  struct sender_side {
    atomic<bool> busy{false};
    // Raised while a send checks closed_ and publishes (the close hand-shake in the header).
    atomic<bool> publishing{false};
    // The receiver's index as the sender last read it: head_ has moved at most further on.
    std::uint64_t head_cache = 0;
  };

  /// The receiver's line: its position (head_) and what only the receiver touches. The sender
  /// reads head_ only when its cached head says full, so the receiver's other fields can share
  /// the line (unlike the sender's `publishing`, written twice per send beside a tail_ that the
  /// receiver polls whenever the ring looks empty).
  struct receiver_side {
    // The receiver's next index.
    atomic<std::uint64_t> head{0};
    atomic<bool> busy{false};
    // The sender's index (unmarked) as the receiver last read it: tail_ is at least there.
    std::uint64_t tail_cache = 0;
  };

  /// fence_mode_'s values (see the header).
  struct fence_mode {
    static constexpr std::uint8_t asymmetric = 0;
    static constexpr std::uint8_t switching = 1;
    static constexpr std::uint8_t symmetric = 2;
  };

  /// The waiters' heavy fences: when the last one ran, and how many in a row came close
  /// together.
  struct heavy_fence_log {
    atomic<std::int64_t> last_ns{0};
    atomic<std::uint32_t> streak{0};
  };

  /// Heavy fences in a row, each less than `heavy_gap` after the one before, that switch the
  /// channel to symmetric fences.
#if defined(SPINDLE_MODEL_CHECK)
  static constexpr std::uint32_t heavy_streak = 2;
#else
  static constexpr std::uint32_t heavy_streak = 8;
#endif
  static constexpr std::chrono::nanoseconds heavy_gap = std::chrono::milliseconds(1);

  /// The common side of the wake-up pair: after a release store of the position, before the
  /// look at the other side's wait list.
  SPINDLE_ALWAYS_INLINE void after_publication() noexcept {
    // relaxed: loaded after the position's store, which is what the switch relies on (see the
    // header): a load that still returns asymmetric ran before the switcher's heavy fence
    // reached this CPU, and that fence flushed the store.
    if (fence_mode_.load(std::memory_order_relaxed) == fence_mode::asymmetric) {
      light_fence(/*asymmetric=*/true);
    } else {
      // seq_cst: pairs with the seq_cst store of the wait list's push() and the waiter's
      // seq_cst re-check, as any waker's state change does (wait_list.hpp (B)).
      fence_seq_cst();
    }
  }

  /// The rare side of the wake-up pair: after a waiter's push(), before its re-check.
  void before_recheck() noexcept {
    // acquire: pairs with the release store of symmetric in switch_to_symmetric(), after its
    // heavy fence.
    auto const mode = fence_mode_.load(std::memory_order_acquire);
    if (mode == fence_mode::symmetric) {
      // seq_cst: the waiter's side of a symmetric pair with after_publication()'s fence.
      fence_seq_cst();
      return;
    }
    heavy_fence(/*asymmetric=*/true);
    if (mode == fence_mode::asymmetric && heavy_fences_too_often()) {
      switch_to_symmetric();
    }
  }

  /// Notes a waiter's heavy fence; true when the last `heavy_streak` came close together.
  auto heavy_fences_too_often() noexcept -> bool {
    auto& log = heavy_log_;
#if defined(SPINDLE_MODEL_CHECK)
    std::int64_t const now = 0;  // the model has no clock: every fence is close to the last
#else
    std::int64_t const now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
#endif
    // relaxed (both): a heuristic for when to switch, never for correctness.
    auto const last = log.last_ns.exchange(now, std::memory_order_relaxed);
    if (now - last >= heavy_gap.count()) {
      log.streak.store(0, std::memory_order_relaxed);
      return false;
    }
    // relaxed: as above; a lost or doubled count only moves the switch by one wait.
    return log.streak.fetch_add(1, std::memory_order_relaxed) + 1 >= heavy_streak;
  }

  /// Moves the channel to symmetric fences, once (see the header).
  void switch_to_symmetric() noexcept {
    auto expected = fence_mode::asymmetric;
    // relaxed: only one waiter switches; the heavy fence below orders the store of switching
    // before what follows, and the publishers read the mode relaxed anyway.
    if (!fence_mode_.compare_exchange_strong(expected, fence_mode::switching,
                                             std::memory_order_relaxed)) {
      return;
    }
    // Every publisher that read asymmetric before this fence reached its CPU has its position
    // store flushed by it; every later one reads switching or symmetric and fences.
    heavy_fence(/*asymmetric=*/true);
    // release: pairs with the acquire load in before_recheck(), which then skips its heavy
    // fence.
    fence_mode_.store(fence_mode::symmetric, std::memory_order_release);
  }

  static auto checked_capacity(std::size_t capacity) -> std::size_t {
    if (capacity == 0) {
      throw std::invalid_argument("spindle: spsc channel capacity must be at least 1");
    }
    // (capacity + 1) * sizeof(cell) must not overflow.
    if (capacity >= std::numeric_limits<std::ptrdiff_t>::max() / sizeof(cell)) {
      throw std::length_error("spindle: spsc channel capacity too large to allocate");
    }
    return capacity;
  }

  /// The index after `index`.
  [[nodiscard]] auto next(std::uint64_t index) const noexcept -> std::uint64_t {
    return index + 1 == ring_ ? 0 : index + 1;
  }

  /// The number of slots from `head` to `tail` (unmarked indices).
  [[nodiscard]] auto distance(std::uint64_t head, std::uint64_t tail) const noexcept
      -> std::uint64_t {
    return tail >= head ? tail - head : ring_ - head + tail;
  }

  SPINDLE_ALWAYS_INLINE auto send_once(T& value) noexcept -> send_status {
    auto& tx = tx_.value;
    // relaxed: the sender's own index; besides the sender only close() writes tail_, and only
    // once no send can publish any more (see Close in the header).
    auto const tail = tail_.value.load(std::memory_order_relaxed);
    if ((tail & mark_bit) != 0) {
      return send_status::closed;
    }
    auto const after = next(tail);
    if (after == tx.head_cache) {
      // acquire: pairs with the receiver's release store of head_ in recv_once(), which comes
      // after it moved the slot's value out and destroyed it.
      tx.head_cache = rx_.value.head.load(std::memory_order_acquire);
      if (after == tx.head_cache) {
        return send_status::full;
      }
    }
    cell& c = slots_[tail];
    note_write(c.raw(), sizeof(T));
    // SAFETY: the slot at tail is outside head..tail, so it holds no live value, and the
    // receiver does not touch it until the store of tail_ below publishes it. The value is
    // moved in before the close hand-shake, so that no code of T runs while close() waits.
    ::new (c.raw()) T(std::move(value));
    // relaxed: ordered before the closed_ load by the light fence, against close()'s heavy one.
    tx.publishing.store(true, std::memory_order_relaxed);
    light_fence(asymmetric_);
    // relaxed: as above.
    if (closed_.load(std::memory_order_relaxed)) {
      // relaxed: nothing was published; close() waits only for the flag.
      tx.publishing.store(false, std::memory_order_relaxed);
      hand_back(value, c.value());
      return send_status::closed;
    }
    // release: publishes the value; pairs with the receiver's acquire load of tail_.
    tail_.value.store(after, std::memory_order_release);
    // release: pairs with close()'s acquire load, which then sees the store of tail_ above.
    tx.publishing.store(false, std::memory_order_release);
    // The common side of the pair with before_recheck() in a receiver that registers to wait:
    // it sees the new tail_, or this thread sees its registration.
    after_publication();
    receivers_.value.notify_one();
    return send_status::sent;
  }

  /// A close came before the send published: the value goes back to the caller.
  static void hand_back(T& value, T& stored) noexcept {
    if constexpr (std::is_nothrow_move_assignable_v<T>) {
      value = std::move(stored);
    } else {
      // SAFETY: `value` is the caller's T, moved from; a T of the same type replaces it.
      std::destroy_at(&value);
      std::construct_at(&value, std::move(stored));
    }
    std::destroy_at(&stored);
  }

  /// Sends only if room to resume is free behind the receiver (see the header); otherwise
  /// `full`. `closed` once the mark is set.
  auto poll_send(T& value) noexcept -> send_status {
    auto& tx = tx_.value;
    // relaxed: as in send_once.
    auto const tail = tail_.value.load(std::memory_order_relaxed);
    if ((tail & mark_bit) != 0) {
      return send_status::closed;
    }
    // acquire: as in send_once.
    tx.head_cache = rx_.value.head.load(std::memory_order_acquire);
    if (capacity_ - distance(tx.head_cache, tail) < resume_room_) {
      return send_status::full;
    }
    return send_once(value);
  }

  SPINDLE_ALWAYS_INLINE auto recv_once() noexcept -> recv_result<T> {
    auto& rx = rx_.value;
    // relaxed: the receiver's own index; only the receiver writes it.
    auto const head = rx_.value.head.load(std::memory_order_relaxed);
    if (head == rx.tail_cache) {
      // acquire: pairs with the sender's CAS in send_once(): the values up to tail are
      // constructed.
      auto const tail = tail_.value.load(std::memory_order_acquire);
      rx.tail_cache = tail & ~mark_bit;
      if (rx.tail_cache == head) {
        return recv_result<T>{(tail & mark_bit) != 0 ? recv_status::closed : recv_status::empty,
                              std::nullopt};
      }
    }
    cell& c = slots_[head];
    note_read(c.raw(), sizeof(T));
    // SAFETY: head is before tail, so the slot holds a live value the sender published, and
    // the sender does not touch it until the store below hands the slot back.
    recv_result<T> out{recv_status::received,
                       std::optional<T>(std::in_place, std::move(c.value()))};
    std::destroy_at(&c.value());
    // release: hands the emptied slot back; pairs with the sender's acquire load of head_.
    rx_.value.head.store(next(head), std::memory_order_release);
    // The common side of the pair with before_recheck() in a sender that registers to wait.
    after_publication();
    senders_.value.notify_one();
    return out;
  }

  [[nodiscard]] auto is_empty() const noexcept -> bool {
    // seq_cst: the re-check after registering a receiver (wait_list.hpp (A)).
    auto const head = rx_.value.head.load(std::memory_order_seq_cst);
    auto const tail = tail_.value.load(std::memory_order_seq_cst);
    return (tail & ~mark_bit) == head;
  }

  [[nodiscard]] auto is_full() const noexcept -> bool {
    // seq_cst: the re-check after registering a sender (wait_list.hpp (A)).
    auto const tail = tail_.value.load(std::memory_order_seq_cst);
    auto const head = rx_.value.head.load(std::memory_order_seq_cst);
    return next(tail & ~mark_bit) == head;
  }

  // The sender's next index, and the close mark. INVARIANT (index part): the slots from
  // head_ to tail_ (exclusive, wrapping) hold live values.
  cache_padded<atomic<std::uint64_t>> tail_;
  cache_padded<sender_side> tx_;
  cache_padded<receiver_side> rx_;
  // Read-only after construction.
  std::size_t capacity_;
  std::uint64_t ring_;
  // Free slots a waiting sender wants before its poll rounds send again (at least 1).
  std::uint64_t resume_room_;
  // Whether the fences are the asymmetric pair (asymmetric_fences()).
  bool asymmetric_;
  // Set once by close(), before the mark; read by every send (see Close in the header).
  atomic<bool> closed_{false};
  // How the wake-up pair is fenced: moves at most once, asymmetric -> switching -> symmetric
  // (see the header); read by every publication.
  atomic<std::uint8_t> fence_mode_;
  // The waiters' record of their heavy fences, for the switch; written only next to a sleep,
  // so it may share the line of the fields above, which every operation reads.
  heavy_fence_log heavy_log_;
  std::unique_ptr<cell[]> slots_;
  cache_padded<wait_list> senders_;
  cache_padded<wait_list> receivers_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

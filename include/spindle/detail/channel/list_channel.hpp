// SPDX-License-Identifier: BSL-1.0
#pragma once
// The unbounded channel flavour: a lock-free linked list of blocks of slots.
//
// Algorithm: crossbeam-channel's list flavour (crossbeam-rs/crossbeam:
// crossbeam-channel/src/flavors/list.rs), itself after Vyukov's
// unbounded queue with blocks. Positions count slots; each block has block_cap = 31 slots and
// owns 32 position values (lap = 32), the last of which (offset 31) is a "moving to the next
// block" state that others wait out. Positions are shifted left by one so the low bit is a
// mark: in tail_ it means "closed"; in head_ it means "the tail is in a later block", which
// lets a receiver skip the emptiness check.
//   - A sender claims a position with a CAS on tail_.index. The sender that takes the last
//     slot of a block installs the next block, which it allocated before its CAS (while it was
//     about to take that slot), so others wait for the install as briefly as possible.
//   - A slot's state word has WRITE (value published), READ (value taken) and DESTROY (the
//     block's destroyer passed here while the slot was still being read) bits.
//   - Block destruction is cooperative: the receiver of a block's last slot starts it; any
//     slot still being read gets DESTROY set, and that slot's reader continues the job. No
//     epochs or hazard pointers.
// Deviation from crossbeam: a block that is finished is returned to a per-channel cache of at
// most one block (as tokio's mpsc reuses blocks), so a channel in steady state allocates no
// block at all; every other finished block is freed at once. The first block is installed by
// the first send.
//
// Close: one fetch_or of the mark bit in tail_.index, as in the bounded flavour; when the last
// receiver is gone, discard() receives and destroys what is left at once (crossbeam PR #669).
//
// Synchronization:
//   tail_.index  senders (CAS, fetch_add at block ends) and close (fetch_or); read by all.
//   tail_.block  senders: null -> first block (CAS), then the block-end sender; read by senders.
//   head_.index, head_.block  receivers (CAS on the index; block-end receiver stores both).
//   slot.state   WRITE by the slot's sender (release), READ by its receiver (acq_rel),
//                DESTROY by the block's destroyer (acq_rel); guards slot.storage and the block.
//   block.next   written once by the block-end sender (release); read by the block-end
//                receiver and by discard/destruction (acquire).
//   spare_       the one-block cache: put by CAS from null (release), taken by exchange
//                (acquire), so a block has one owner at a time and no ABA is possible.
// The CASes on the indices are seq_cst: they are the state change of the Dekker pair with
// the receivers' wait list (wait_list.hpp (B)).
//
// Memory: one block (8 + 31 * (4 + sizeof(T), aligned) bytes) per 31 values in the channel,
// plus at most one cached block; drained blocks go back to the allocator as the channel drains.

#include <spindle/channel_result.hpp>
#include <spindle/detail/channel/close.hpp>
#include <spindle/detail/channel/readiness.hpp>
#include <spindle/detail/channel/recv_blocking.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/backoff.hpp>
#include <spindle/detail/sync/cache_padded.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

template <class T>
class list_channel {
  static constexpr std::uint64_t shift = 1;
  static constexpr std::uint64_t mark_bit = 1;
  static constexpr std::uint64_t lap = 32;
  static constexpr std::uint64_t block_cap = lap - 1;
  static constexpr std::uint64_t one = std::uint64_t{1} << shift;

  static constexpr std::uint32_t write_bit = 1;
  static constexpr std::uint32_t read_bit = 2;
  static constexpr std::uint32_t destroy_bit = 4;

  struct slot {
    // INVARIANT: storage holds a live T from the WRITE bit until the slot's receiver moved it
    // out (before it sets READ or starts the block's destruction).
    atomic<std::uint32_t> state{0};
    alignas(T) std::byte storage[sizeof(T)];

    auto raw() noexcept -> void* { return storage; }
    auto value() noexcept -> T& { return *std::launder(reinterpret_cast<T*>(storage)); }

    void wait_write() const noexcept {
      backoff spin;
      // acquire: pairs with the release fetch_or of WRITE in write(); the value is built.
      while ((state.load(std::memory_order_acquire) & write_bit) == 0) {
        spin.snooze();
      }
    }
  };

  struct block {
    atomic<block*> next{nullptr};
    slot slots[block_cap];

    auto wait_next() const noexcept -> block* {
      backoff spin;
      for (;;) {
        // acquire: pairs with the release store of next in start_send(); the block is built.
        if (block* n = next.load(std::memory_order_acquire); n != nullptr) {
          return n;
        }
        spin.snooze();
      }
    }
  };

  struct position {
    atomic<std::uint64_t> index{0};
    atomic<block*> block_ptr{nullptr};

    /// Loads the index, then the block, so that the block is at least as new as the index.
    void load(std::uint64_t& index_out, block*& block_out) const noexcept {
      // seq_cst: its acquire part pairs with the release store of the index at a block end
      // (the fetch_add in start_send, the store in start_recv), which follows the store of the
      // next block; seq_cst so that a receiver's load of head precedes its load of tail in
      // the single total order (start_recv). A plain load on x86, LDAR on AArch64, as acquire.
      index_out = index.load(std::memory_order_seq_cst);
      // acquire: pairs with the release stores of block_ptr; the block is built.
      block_out = block_ptr.load(std::memory_order_acquire);
    }
  };

 public:
  list_channel() = default;
  list_channel(list_channel const&) = delete;
  auto operator=(list_channel const&) -> list_channel& = delete;

  ~list_channel() {
    // SAFETY: no handle is left, so this thread is alone; every slot between head and tail
    // holds a live value (their senders finished), and the blocks from head_.block on are
    // owned by the channel. relaxed loads: the last handle's release published everything.
    auto head = head_.value.index.load(std::memory_order_relaxed) & ~mark_bit;
    auto const tail = tail_.value.index.load(std::memory_order_relaxed) & ~mark_bit;
    block* b = head_.value.block_ptr.load(std::memory_order_relaxed);
    while (head != tail) {
      auto const offset = (head >> shift) % lap;
      if (offset < block_cap) {
        std::destroy_at(&b->slots[offset].value());
      } else {
        // relaxed: the destructor runs alone (see SAFETY above).
        block* next = b->next.load(std::memory_order_relaxed);
        delete b;
        b = next;
      }
      head += one;
    }
    delete b;
    // relaxed: the destructor runs alone (see SAFETY above).
    delete spare_.value.load(std::memory_order_relaxed);
  }

  /// Sends without waiting: sent or closed. On success `value` is moved from.
  /// Throws: std::bad_alloc if a new block is needed and cannot be allocated (nothing was
  /// claimed and `value` is untouched).
  auto try_send(T& value) -> send_status {
    block* b = nullptr;
    std::uint64_t offset = 0;
    if (!start_send(b, offset)) {
      return send_status::closed;
    }
    slot& s = b->slots[offset];
    note_write(s.raw(), sizeof(T));
    // SAFETY: start_send won the CAS for this position, so the slot is ours until WRITE.
    ::new (s.raw()) T(std::move(value));
    // release: publishes the constructed value; pairs with the acquire in wait_write().
    s.state.fetch_or(write_bit, std::memory_order_release);
    receivers_.value.notify_one();
    return send_status::sent;
  }

  /// Sends; an unbounded channel never makes a sender wait, so this is try_send().
  auto send(T& value, wait_options const& /*options*/) -> send_status { return try_send(value); }

  /// Receives without waiting: received, empty, or closed (closed and drained).
  auto try_recv() noexcept -> recv_result<T> {
    block* b = nullptr;
    std::uint64_t offset = 0;
    auto const c = start_recv(b, offset);
    return recv_outcome<T>(c, [&] { return read(b, offset); });
  }

  /// The first look of a blocking receive (channel_state::first_look): try_recv, as recv's.
  auto first_look() noexcept -> recv_result<T> { return try_recv(); }

  /// Receives, blocking while the channel is empty: received, closed, timed_out or cancelled.
  auto recv(wait_options const& options) noexcept -> recv_result<T> {
    // No cheaper poll: a block may be freed under a reader that has not claimed a slot in it,
    // so only try_recv (which claims first) may look into a block.
    return recv_blocking<T>([this] { return try_recv(); }, [this] { return try_recv(); },
                            receivers_.value, [this] { return !is_empty() || is_closed(); },
                            options);
  }

  /// Closes the channel; returns true for the call that closed it. Wakes every receiver.
  auto close() noexcept -> bool {
    return close_by_mark(tail_.value.index, mark_bit, receivers_.value);
  }

  /// The last receiver is gone: closes the channel and destroys every buffered value now,
  /// freeing the drained blocks. Senders that claimed a position before the mark are waited
  /// for in read() (wait_write).
  void discard() noexcept {
    close();
    drain(*this);
  }

  // Select (detail/select/select_loop.hpp): as in the bounded flavour. A send never waits
  // here, so a send case never registers and is always ready.
  void watch_send(wait_entry& /*e*/) noexcept {}
  void unwatch_send(wait_entry& /*e*/) noexcept {}
  void watch_recv(wait_entry& e) noexcept { receivers_.value.push(e); }
  void unwatch_recv(wait_entry& e) noexcept { receivers_.value.remove(e); }
  [[nodiscard]] auto send_ready(waiter const* /*self*/) const noexcept -> bool { return true; }
  /// Whether a receive would not find the channel empty (or finds it closed); seq_cst loads, the
  /// re-check after watch_recv (wait_list.hpp (A)).
  [[nodiscard]] auto recv_ready(waiter const* /*self*/) const noexcept -> bool {
    return recv_would_proceed(is_empty(), is_closed());
  }

  /// The no-lost-wake-up invariant (readiness.hpp); a send never waits here.
  [[nodiscard]] auto lost_wake_up() const noexcept -> char const* {
    return buffered_lost_wake_up(
        receivers_.value, [this] { return recv_ready(nullptr); }, nullptr, [] { return false; });
  }

  [[nodiscard]] auto is_closed() const noexcept -> bool {
    // seq_cst: part of the re-check after registering a waiter (wait_list.hpp (A)).
    return (tail_.value.index.load(std::memory_order_seq_cst) & mark_bit) != 0;
  }

  /// The number of buffered values (a snapshot; exact when nobody sends or receives).
  [[nodiscard]] auto size() const noexcept -> std::size_t {
    for (;;) {
      // seq_cst: the loads form a consistent snapshot when the two tail loads agree.
      auto tail = tail_.value.index.load(std::memory_order_seq_cst);
      auto head = head_.value.index.load(std::memory_order_seq_cst);
      if (tail_.value.index.load(std::memory_order_seq_cst) != tail) {
        continue;
      }
      tail &= ~mark_bit;
      head &= ~mark_bit;
      // A position resting on a block end counts as the start of the next block.
      if (((tail >> shift) & (lap - 1)) == lap - 1) {
        tail += one;
      }
      if (((head >> shift) & (lap - 1)) == lap - 1) {
        head += one;
      }
      // Rebase both so that head is in block 0, then subtract the block-end positions.
      auto const base = ((head >> shift) / lap) * lap;
      auto const t = (tail >> shift) - base;
      auto const h = (head >> shift) - base;
      return static_cast<std::size_t>(t - h - t / lap);
    }
  }

 private:
  /// A block allocated ahead of need; goes back to the cache if it was not used.
  class spare_block {
   public:
    explicit spare_block(list_channel& ch) noexcept : ch_(ch) {}
    spare_block(spare_block const&) = delete;
    auto operator=(spare_block const&) -> spare_block& = delete;
    ~spare_block() { ch_.recycle(b_); }
    [[nodiscard]] auto get() const noexcept -> block* { return b_; }
    void reset(block* b) noexcept {
      ch_.recycle(b_);
      b_ = b;
    }
    auto release() noexcept -> block* { return std::exchange(b_, nullptr); }

   private:
    list_channel& ch_;
    block* b_ = nullptr;
  };

  auto allocate() -> block* {
    // acquire: pairs with the release CAS in recycle(); the reset block is visible.
    if (block* b = spare_.value.exchange(nullptr, std::memory_order_acquire); b != nullptr) {
      return b;
    }
    return new block;
  }

  void recycle(block* b) noexcept {
    if (b == nullptr) {
      return;
    }
    // relaxed: we own `b` exclusively; the release CAS below publishes the reset.
    b->next.store(nullptr, std::memory_order_relaxed);
    for (auto& s : b->slots) {
      s.state.store(0, std::memory_order_relaxed);
    }
    block* expected = nullptr;
    // release: publishes the reset to the acquire exchange in allocate(). relaxed on failure:
    // the cache is full and we free the block instead.
    if (!spare_.value.compare_exchange_strong(expected, b, std::memory_order_release,
                                              std::memory_order_relaxed)) {
      delete b;
    }
  }

  /// Claims a position for a send; false when the channel is closed.
  auto start_send(block*& out, std::uint64_t& out_offset) -> bool {
    backoff spin;
    spare_block next_block(*this);
    std::uint64_t tail = 0;
    block* b = nullptr;
    tail_.value.load(tail, b);
    for (;;) {
      if ((tail & mark_bit) != 0) {
        return false;
      }
      auto const offset = (tail >> shift) % lap;
      if (offset == block_cap) {
        // The block-end sender is installing the next block: wait for it.
        spin.snooze();
        tail_.value.load(tail, b);
        continue;
      }
      if (offset + 1 == block_cap && next_block.get() == nullptr) {
        // About to take a block's last slot: allocate its successor before claiming, so the
        // others wait only for two stores.
        next_block.reset(allocate());
      }
      if (b == nullptr) {
        // The first send installs the first block.
        block* fresh = allocate();
        block* expected = nullptr;
        // release: publishes the built block to the acquire loads of tail_.block. relaxed on
        // failure: another sender installed one; we reload below.
        if (tail_.value.block_ptr.compare_exchange_strong(
                expected, fresh, std::memory_order_release, std::memory_order_relaxed)) {
          // release: publishes the block to receivers' acquire load of head_.block.
          head_.value.block_ptr.store(fresh, std::memory_order_release);
          b = fresh;
        } else {
          if (next_block.get() == nullptr) {
            next_block.reset(fresh);
          } else {
            recycle(fresh);
          }
          tail_.value.load(tail, b);
          continue;
        }
      }
      // seq_cst: claims the position; the state change of the Dekker pair with the receivers'
      // wait list (B). acquire on failure: as the index load in position::load().
      if (tail_.value.index.compare_exchange_weak(tail, tail + one, std::memory_order_seq_cst,
                                                  std::memory_order_acquire)) {
        if (offset + 1 == block_cap) {
          block* n = next_block.release();
          // release: publishes the new block to senders' acquire loads of tail_.block.
          tail_.value.block_ptr.store(n, std::memory_order_release);
          // release: moves the index past the block end; pairs with the acquire index loads,
          // which then see the block pointer stored above.
          tail_.value.index.fetch_add(one, std::memory_order_release);
          // release: pairs with the acquire in wait_next(); the receiver of this block's last
          // slot follows the link.
          b->next.store(n, std::memory_order_release);
        }
        out = b;
        out_offset = offset;
        return true;
      }
      // acquire: as the block load in position::load().
      b = tail_.value.block_ptr.load(std::memory_order_acquire);
      spin.spin();
    }
  }

  auto start_recv(block*& out, std::uint64_t& out_offset) noexcept -> claim {
    backoff spin;
    std::uint64_t head = 0;
    block* b = nullptr;
    head_.value.load(head, b);
    for (;;) {
      auto const offset = (head >> shift) % lap;
      if (offset == block_cap) {
        // The block-end receiver is moving to the next block: wait for it.
        spin.snooze();
        head_.value.load(head, b);
        continue;
      }
      auto new_head = head + one;
      if ((new_head & mark_bit) == 0) {
        // seq_cst: ordered after our seq_cst load of head (position::load, or the failed CAS
        // below) in the single total order S, and it reads the last seq_cst write of tail_
        // before it in S: the senders' CAS and close()'s fetch_or. crossbeam-channel's list
        // flavour puts a seq_cst fence between a relaxed head load and a relaxed tail load
        // instead; under C++20 [atomics.order] p4 (P0668R5) the two seq_cst loads order the
        // same pair of reads against those writes, and on x86 they are plain loads where the
        // fence is a locked instruction on every receive that finds head and tail in one
        // block (docs/performance.md).
        auto const tail = tail_.value.index.load(std::memory_order_seq_cst);
        if ((head >> shift) == (tail >> shift)) {
          return (tail & mark_bit) != 0 ? claim::closed : claim::unavailable;
        }
        if ((head >> shift) / lap != (tail >> shift) / lap) {
          // The tail is in a later block: tell later receivers they may skip this check.
          new_head |= mark_bit;
        }
      }
      if (b == nullptr) {
        // The first send is installing the first block.
        spin.snooze();
        head_.value.load(head, b);
        continue;
      }
      // seq_cst: claims the position. seq_cst on failure: the reload of head, as the index
      // load in position::load(), before the next tail load.
      if (head_.value.index.compare_exchange_weak(head, new_head, std::memory_order_seq_cst,
                                                  std::memory_order_seq_cst)) {
        if (offset + 1 == block_cap) {
          block* next = b->wait_next();
          auto next_index = (new_head & ~mark_bit) + one;
          // relaxed: only a hint that the tail is further ahead; re-checked by the next
          // receiver's tail load when absent.
          if (next->next.load(std::memory_order_relaxed) != nullptr) {
            next_index |= mark_bit;
          }
          // release: publishes the block pointer before the index (acquire loads above).
          head_.value.block_ptr.store(next, std::memory_order_release);
          // release: pairs with the acquire index loads in this function.
          head_.value.index.store(next_index, std::memory_order_release);
        }
        out = b;
        out_offset = offset;
        return claim::ok;
      }
      // acquire: as the block load in position::load().
      b = head_.value.block_ptr.load(std::memory_order_acquire);
      spin.spin();
    }
  }

  auto read(block* b, std::uint64_t offset) noexcept -> std::optional<T> {
    slot& s = b->slots[offset];
    s.wait_write();
    note_read(s.raw(), sizeof(T));
    // SAFETY: start_recv won the CAS for this position, and wait_write() acquired the
    // sender's WRITE: the slot holds a live T that only this thread may touch, and the block
    // lives until this slot is marked READ (or, for the last slot, until we destroy it).
    std::optional<T> out(std::in_place, std::move(s.value()));
    std::destroy_at(&s.value());
    if (offset + 1 == block_cap) {
      destroy_block(b, 0);
      return out;
    }
    // acq_rel: release publishes our move-out to the destroyer's acquire; acquire pairs with
    // the destroyer's acq_rel fetch_or of DESTROY, which handed the destruction to us.
    if ((s.state.fetch_or(read_bit, std::memory_order_acq_rel) & destroy_bit) != 0) {
      destroy_block(b, offset + 1);
    }
    return out;
  }

  /// Finishes the destruction of `b` from slot `start` on, or hands it to a slot still being
  /// read. The last slot needs no mark: its reader started the destruction.
  void destroy_block(block* b, std::uint64_t start) noexcept {
    for (auto i = start; i + 1 < block_cap; ++i) {
      slot& s = b->slots[i];
      // acquire: pairs with the acq_rel READ in read(); the reader is done with the slot.
      // acq_rel on the fetch_or: release hands the block to that reader, acquire sees READ.
      if ((s.state.load(std::memory_order_acquire) & read_bit) == 0 &&
          (s.state.fetch_or(destroy_bit, std::memory_order_acq_rel) & read_bit) == 0) {
        return;  // the slot's reader continues the destruction
      }
    }
    // SAFETY: every slot of `b` has been read, and nobody else holds a pointer to it that it
    // will dereference: head_ and tail_ moved past it.
    recycle(b);
  }

  [[nodiscard]] auto is_empty() const noexcept -> bool {
    // seq_cst: the re-check after registering a receiver (wait_list.hpp (A)).
    auto const head = head_.value.index.load(std::memory_order_seq_cst);
    auto const tail = tail_.value.index.load(std::memory_order_seq_cst);
    return (head >> shift) == (tail >> shift);
  }

  cache_padded<position> head_;
  cache_padded<position> tail_;
  cache_padded<atomic<block*>> spare_;
  cache_padded<wait_list> receivers_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

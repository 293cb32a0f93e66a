// SPDX-License-Identifier: BSL-1.0
#pragma once
// The executor's global injection queue: tasks submitted from outside the workers.
//
// A FIFO of `task*` stored in linked blocks of `block_size` pointers, with one lock for the
// pushing side and another for the popping side: Michael and Scott's two-lock queue ("Simple,
// Fast, and Practical Non-Blocking and Blocking Concurrent Queue Algorithms", PODC 1996, §2,
// the blocking algorithm), with blocks of slots instead of one node per item, as tokio's
// inject queue and crossbeam-deque's Injector store them (tokio/src/runtime/scheduler/inject.rs,
// crossbeam-deque/src/deque.rs `Injector`).
//
// Why blocks and a lock per end: a batch pop copies consecutive pointers instead of walking a
// link per task (each link just written on another core, under the lock the producer needs);
// the producer's lock, block pointer and own count sit on lines no worker touches, so the only
// lines both sides share are the slots and the published tail count, which workers poll on
// every find-task pass (measurements: docs/performance.md, Executor).
//
// Counts: `tail_` (tasks ever pushed) is stored by the pusher holding push_.mu after it wrote
// the slot (release); `pop_.head` (tasks ever taken) by the popper holding pop_.mu. A popper reads
// tail_ with acquire, so the slots below it and the block links they needed are visible. A
// block is left by the popper only once it takes the first task of the next block, which the
// pusher linked before it published that task: so the pusher never touches a block a popper
// retires. A retired block goes to the one-block `spare_` (the popper's release exchange pairs
// with the pusher's acquire exchange: the popper's reads of its slots happen-before the pusher's
// reuse), so a steady stream costs no allocation.
//
// Kinds: a slot records whether its task is a new submission from outside or a task the
// executor accepted earlier, such as a coroutine's resumption (`injected`), in the low bit of
// the stored pointer (a task is at least 8-byte aligned, so the bit is free). The executor
// bounds submissions only (executor_options::injector_capacity): pop_batch() reports how many
// of the tasks it took were submissions, so that exactly their places are given back.
//
// Synchronization:
//   push_.mu  guards push_.tail_block, push_.pushed, push_.closed (and the stores to tail_).
//   pop_.mu   guards pop_.head_block (and the stores to pop_.head).
//   tail_     tasks pushed; release store by the pusher, acquire loads by poppers, relaxed
//             loads as a hint (looks_empty) ordered by the parking protocol's seq_cst fences
//             in scheduler.hpp ((N1)/(P1)).
//   pop_.head tasks taken; stores by the popper under pop_.mu, loads by looks_empty (a hint).
//   spare_    one free block; exchanges by poppers (give) and the pusher (take).
//   INVARIANT (whenever both locks are free): head <= tail_; the queued tasks are tasks
//   head .. tail_ - 1, task k in slot k % block_size of its block, following `next` from
//   head_block (the block of task head, or of task head - 1 when head is a multiple of
//   block_size) to tail_block (likewise for tail_).
//
// Progress: blocking (short critical sections: a slot store per push, a copy of at most
// `max_batch` pointers per pop); pushers and poppers do not wait for each other.

#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/cache_padded.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// What a task pushed into the injector is.
enum class injected : std::uint8_t {
  /// A task submitted from outside the workers (spawn, post, co_await ex.schedule()).
  submission,
  /// A task the executor accepted earlier (the resumption of a suspended coroutine, a task
  /// moved out of a deque): queued even once the queue is closed, and not counted as a
  /// submission by pop_batch().
  accepted
};

/// The injection queue with blocks of `BlockSize` task pointers (`injector` below; the model
/// tests use tiny blocks so that a few tasks cross block boundaries).
template <std::size_t BlockSize>
class basic_injector {
  static_assert(BlockSize >= 1);

 public:
  /// Task pointers per block.
  static constexpr std::size_t block_size = BlockSize;
  /// Most tasks one pop_batch() takes.
  static constexpr std::size_t max_batch = 64;

  /// Throws: std::bad_alloc.
  basic_injector() {
    pop_.value.head_block = new block;
    push_.value.tail_block = pop_.value.head_block;
  }
  basic_injector(basic_injector const&) = delete;
  auto operator=(basic_injector const&) -> basic_injector& = delete;

  /// Preconditions: no push or pop runs (the executor has joined its workers).
  ~basic_injector() {
    block* b = pop_.value.head_block;
    while (b != nullptr) {
      block* const next = b->next;
      delete b;
      b = next;
    }
    // relaxed: no other thread uses the queue any more.
    delete spare_.value.load(std::memory_order_relaxed);
  }

  /// Appends one task. Returns false (and leaves `t` alone) once the queue is closed, unless
  /// `kind` is injected::accepted (a task the executor accepted before the close).
  /// Throws: std::bad_alloc when a new block cannot be allocated (`t` is not queued).
  [[nodiscard]] auto push(task* t, injected kind = injected::submission) -> bool {
    push_side& side = push_.value;
    std::lock_guard guard(side.mu);
    if (side.closed && kind != injected::accepted) {
      return false;
    }
    // The pushers' own count, not a load of tail_: every worker's looks_empty() reads tail_,
    // so loading it here would miss in the cache on nearly every push, and that miss stalls
    // the push, where the store below only waits in the store buffer.
    std::uint64_t const n = side.pushed;
    auto const index = static_cast<std::size_t>(n % block_size);
    if (index == 0 && n != 0) {
      // The current block is full: link a fresh one before publishing its first task, so a
      // popper that sees the task (acquire on tail_) also sees the link.
      // acquire: pairs with the popper's release exchange in retire(): its reads of the
      // block's slots happen-before our writes to them.
      block* b = spare_.value.exchange(nullptr, std::memory_order_acquire);
      if (b == nullptr) {
        b = new block;
      }
      b->next = nullptr;
      side.tail_block->next = b;
      side.tail_block = b;
    }
    note_write(&side.tail_block->slots[index], sizeof(std::uintptr_t));
    side.tail_block->slots[index] =
        reinterpret_cast<std::uintptr_t>(t) | (kind == injected::accepted ? accepted_bit : 0);
    // release: publishes the slot (and the link to its block) to the acquire load of tail_ in
    // pop_batch(); the executor's (N1) fence orders it before the look for sleepers.
    tail_.value.store(n + 1, std::memory_order_release);
    side.pushed = n + 1;
    return true;
  }

  /// Refuses every later push. Every push that succeeded happens-before close() returns.
  void close() noexcept {
    std::lock_guard guard(push_.value.mu);
    push_.value.closed = true;
  }

  /// True when the queue looked empty at some recent moment; a hint, see the file comment.
  [[nodiscard]] auto looks_empty() const noexcept -> bool {
    // relaxed (both): a hint; the parking protocol orders the load of tail_ with a seq_cst
    // fence ((P1) in scheduler.hpp, pairing with (N1) after the push). A stale head only
    // makes the queue look non-empty, which costs a search, never a task.
    return pop_.value.head.load(std::memory_order_relaxed) ==
           tail_.value.load(std::memory_order_relaxed);
  }

  /// Queued tasks of both kinds (for metrics): tasks pushed minus tasks taken, never more than
  /// the queue held when tail_ was read (exact when nothing moves).
  [[nodiscard]] auto approximate_size() const noexcept -> std::size_t {
    // tail_ first, then head. The other order over-counts: every push between the two loads
    // adds to the figure while the pops that made room for it do not subtract, so a bounded
    // injector under churn reported more tasks than its bound (19 for a bound of 8, under
    // ThreadSanitizer). Read this way, a pop between the loads only lowers the figure.
    // acquire: pairs with the release store of tail_ in push(); the head loaded after it is
    // then no older than the pops that happened before that push (head only grows).
    std::uint64_t const t = tail_.value.load(std::memory_order_acquire);
    // relaxed: a statistic; ordered after the load above by its acquire.
    std::uint64_t const h = pop_.value.head.load(std::memory_order_relaxed);
    return t >= h ? static_cast<std::size_t>(t - h) : 0;
  }

  /// Takes up to `max` tasks (at most max_batch), oldest first: returns the first and passes
  /// the rest to `sink` (in FIFO order). Takes about len / share + 1 tasks, so that several
  /// idle workers share a burst instead of one of them draining it. When `submissions` is not
  /// null, it receives how many of the tasks taken were pushed as injected::submission.
  template <class Sink>
  auto pop_batch(std::size_t share, std::size_t max, Sink&& sink,
                 std::size_t* submissions = nullptr) noexcept -> task* {
    std::size_t counted = 0;
    if (submissions != nullptr) {
      *submissions = 0;
    }
    if (looks_empty()) {
      return nullptr;
    }
    // The batch's first task is returned; the others go to `sink` once the lock is released.
    task* first = nullptr;
#if defined(SPINDLE_MODEL_CHECK)
    // Each entry below take - 1 is written before it is read; g++ 12 cannot always see that
    // through the model checker's atomics (-Wmaybe-uninitialized), so the model build zeroes it.
    task* rest[max_batch - 1] = {};
#else
    task* rest[max_batch - 1];
#endif
    std::size_t take = 0;
    {
      pop_side& side = pop_.value;
      std::lock_guard guard(side.mu);
      // relaxed: only poppers store head, and we hold the pop lock.
      std::uint64_t const h = side.head.load(std::memory_order_relaxed);
      // acquire: pairs with the release store in push(): the slots below it are written and
      // the blocks holding them linked.
      std::uint64_t const tail = tail_.value.load(std::memory_order_acquire);
      SPINDLE_ASSERT(h <= tail, "injector: more tasks taken than pushed");
      auto const len = static_cast<std::size_t>(tail - h);
      if (len == 0) {
        return nullptr;
      }
      take = len / (share == 0 ? 1 : share) + 1;
      take = take > max ? max : take;
      take = take > max_batch ? max_batch : take;
      take = take > len ? len : take;
      for (std::size_t i = 0; i < take; ++i) {
        auto const index = static_cast<std::size_t>((h + i) % block_size);
        if (index == 0 && h + i != 0) {
          // INVARIANT: task h + i exists, so the pusher linked its block before publishing it
          // and has left the block we retire.
          block* const used = side.head_block;
          side.head_block = used->next;
          retire(used);
        }
        note_read(&side.head_block->slots[index], sizeof(std::uintptr_t));
        std::uintptr_t const slot = side.head_block->slots[index];
        counted += (slot & accepted_bit) == 0 ? 1 : 0;
        // SAFETY: the slot holds a task pointer that push() stored, with at most accepted_bit
        // set, which the task's alignment leaves free.
        task* const taken = reinterpret_cast<task*>(slot & ~accepted_bit);
        if (i == 0) {
          first = taken;
        } else {
          rest[i - 1] = taken;
        }
      }
      // relaxed: read by looks_empty() as a hint; the next popper reads it under the lock.
      side.head.store(h + take, std::memory_order_relaxed);
    }
    if (submissions != nullptr) {
      *submissions = counted;
    }
    for (std::size_t i = 0; i + 1 < take; ++i) {
      sink(rest[i]);
    }
    return first;
  }

  /// Takes one task, or nullptr.
  auto pop() noexcept -> task* {
    return pop_batch(1, 1, [](task*) noexcept {});
  }

 private:
  // The tag of an injected::accepted task in a slot (see "Kinds" in the file comment).
  static constexpr std::uintptr_t accepted_bit = 1;
  static_assert(alignof(task) > accepted_bit, "the tag bit must be free in a task pointer");

  struct block {
    block* next = nullptr;
    // A task pointer, tagged with accepted_bit for injected::accepted.
    std::uintptr_t slots[block_size];
  };

  /// Keeps `used` as the spare block, or frees it when a spare is already kept.
  void retire(block* used) noexcept {
    // acq_rel: release publishes our reads of its slots to the pusher's acquire exchange in
    // push() before it rewrites them; acquire pairs with the release of the popper that left
    // the block we get back, whose reads of it then happen-before our delete.
    block* const old = spare_.value.exchange(used, std::memory_order_acq_rel);
    delete old;
  }

  // The popping side: touched by workers only.
  struct pop_side {
    mutex mu;
    block* head_block = nullptr;
    atomic<std::uint64_t> head{0};
  };
  // The pushing side: its own line, which no popper writes.
  struct push_side {
    mutex mu;
    block* tail_block = nullptr;
    // INVARIANT: equals tail_ whenever mu is free (only pushers holding mu store either).
    std::uint64_t pushed = 0;
    bool closed = false;
  };

  cache_padded<pop_side> pop_{};
  cache_padded<push_side> push_{};
  // Read by every popper and by looks_empty(), stored by the pusher: a line of its own.
  cache_padded<atomic<std::uint64_t>> tail_{};
  cache_padded<atomic<block*>> spare_{};
};

/// 126 pointers and a link: a block is 1 KiB.
using injector = basic_injector<126>;

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

#pragma once
// The executor's global injection queue: tasks submitted from outside the workers.
//
// A FIFO of `task*` guarded by a `detail::mutex`, as tokio's inject queue is (RESEARCH.md
// §2.1), but stored in linked blocks of `block_size` pointers instead of linking the tasks
// themselves. The first version linked the tasks through an intrusive `next` field; a profile
// of one outside thread posting 1,000,000 empty tasks to 2 workers (perf record, Release)
// put the hottest instructions of the workers in pop_batch's walk to the end of its batch:
// each step loaded the `next` field of a task the producer had just written on the other
// core, a cache miss per task, taken while holding the lock the producer needed for its next
// push. With blocks, a batch is a copy of consecutive pointers (a few cache lines that the
// hardware prefetches), and a task's own memory is first touched by the worker that runs it,
// outside the lock. Blocks are recycled: the queue keeps one spare, so a steady stream costs
// no allocation.
//
// A worker takes a batch under one lock acquisition and moves all but the first into its own
// deque, so the lock is taken about once per batch on the consumer side (tokio pulls
// `len / workers + 1` tasks; so does `pop_batch`).
//
// Synchronization:
//   head_, head_index_, tail_, tail_index_, spare_, closed_  guarded by mu_.
//   len_          written under mu_, read without it by `looks_empty()`: a hint for the hot
//                 path, and the "is there work" re-check of the parking protocol, which is
//                 ordered by the seq_cst fences in executor_core.hpp (see there).
//   INVARIANT (whenever mu_ is free): len_ is the number of queued tasks; they sit in
//   head_->slots[head_index_ ..] through tail_->slots[.. tail_index_), following `next` from
//   head_ to tail_; head_ == tail_ == nullptr only before the first push.
//
// Progress: blocking (short critical sections: a few stores per push, a copy of at most
// `max_batch` pointers per pop).

#include <spindle/detail/atomic.hpp>
#include <spindle/detail/config.hpp>
#include <spindle/detail/mutex.hpp>
#include <spindle/detail/task.hpp>

#include <cstddef>
#include <mutex>

namespace spindle::detail {

class injector {
 public:
  /// Task pointers per block.
  static constexpr std::size_t block_size = 126;
  /// Most tasks one pop_batch() takes.
  static constexpr std::size_t max_batch = 64;

  injector() = default;
  injector(injector const&) = delete;
  auto operator=(injector const&) -> injector& = delete;

  /// Preconditions: the queue is empty (the executor runs every task before it is destroyed).
  ~injector() {
    block* b = head_;
    while (b != nullptr) {
      block* const next = b->next;
      delete b;
      b = next;
    }
    delete spare_;
  }

  /// Appends one task. Returns false (and leaves `t` alone) once the queue is closed.
  /// Throws: std::bad_alloc when a new block cannot be allocated (`t` is not queued).
  [[nodiscard]] auto push(task* t) -> bool {
    std::lock_guard guard(mu_);
    if (closed_) {
      return false;
    }
    if (tail_ == nullptr) {
      head_ = tail_ = new block;
    } else if (tail_index_ == block_size) {
      block* const b = spare_ != nullptr ? spare_ : new block;
      spare_ = nullptr;
      b->next = nullptr;
      tail_->next = b;
      tail_ = b;
      tail_index_ = 0;
    }
    tail_->slots[tail_index_] = t;
    ++tail_index_;
    // relaxed: written under mu_; readers without the lock use it as a hint or order it with
    // the parking protocol's seq_cst fences (executor_core.hpp, (N1)/(P1)).
    len_.store(len_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return true;
  }

  /// Refuses every later push. Every push that succeeded happens-before close() returns.
  void close() noexcept {
    std::lock_guard guard(mu_);
    closed_ = true;
  }

  /// True when the queue looked empty at some recent moment; a hint, see the file comment.
  [[nodiscard]] auto looks_empty() const noexcept -> bool {
    // relaxed: a hint; the parking protocol orders this load with a seq_cst fence.
    return len_.load(std::memory_order_relaxed) == 0;
  }

  /// Takes up to `max` tasks (at most max_batch), oldest first: returns the first and passes
  /// the rest to `sink` (in FIFO order). Takes about len / share + 1 tasks, so that several
  /// idle workers share a burst instead of one of them draining it.
  template <class Sink>
  auto pop_batch(std::size_t share, std::size_t max, Sink&& sink) noexcept -> task* {
    if (looks_empty()) {
      return nullptr;
    }
    task* batch[max_batch];
    std::size_t take = 0;
    block* retired = nullptr;
    {
      std::lock_guard guard(mu_);
      // relaxed: written only under mu_, which we hold.
      auto const len = len_.load(std::memory_order_relaxed);
      if (len == 0) {
        return nullptr;
      }
      take = len / (share == 0 ? 1 : share) + 1;
      take = take > max ? max : take;
      take = take > max_batch ? max_batch : take;
      take = take > len ? len : take;
      for (std::size_t i = 0; i < take; ++i) {
        if (head_index_ == block_size) {
          // INVARIANT: len > 0 here, so a later block holds the rest.
          block* const used = head_;
          head_ = used->next;
          head_index_ = 0;
          if (spare_ == nullptr) {
            spare_ = used;
          } else {
            used->next = retired;
            retired = used;
          }
        }
        batch[i] = head_->slots[head_index_];
        ++head_index_;
      }
      if (take == len) {
        // Empty again: start the (single remaining) block from its first slot.
        SPINDLE_ASSERT(head_ == tail_ && head_index_ == tail_index_,
                       "injector: an empty queue spans several blocks");
        head_index_ = 0;
        tail_index_ = 0;
      }
      // relaxed: as in push().
      len_.store(len - take, std::memory_order_relaxed);
    }
    while (retired != nullptr) {
      block* const next = retired->next;
      delete retired;
      retired = next;
    }
    for (std::size_t i = 1; i < take; ++i) {
      sink(batch[i]);
    }
    return batch[0];
  }

  /// Takes one task, or nullptr.
  auto pop() noexcept -> task* {
    return pop_batch(1, 1, [](task*) noexcept {});
  }

 private:
  struct block {
    block* next = nullptr;
    task* slots[block_size];
  };

  mutable mutex mu_;
  block* head_ = nullptr;
  std::size_t head_index_ = 0;
  block* tail_ = nullptr;
  std::size_t tail_index_ = 0;
  block* spare_ = nullptr;
  bool closed_ = false;
  atomic<std::size_t> len_{0};
};

}  // namespace spindle::detail

#pragma once
// The executor's global injection queue: tasks submitted from outside the workers.
//
// An intrusive FIFO of `task*` (linked through `task::next`) guarded by a `detail::mutex`, as
// in tokio's inject queue (RESEARCH.md §2.1, "an intrusive linked list guarded by a mutex").
// Pushing costs no allocation; a worker takes a batch under one lock acquisition and moves all
// but the first into its own deque, so the lock is taken about once per batch on the consumer
// side (tokio pulls `len / workers + 1` tasks; so does `pop_batch`).
//
// Synchronization:
//   head_, tail_, closed_  guarded by mu_.
//   len_          written under mu_, read without it by `looks_empty()`: a hint for the hot
//                 path, and the "is there work" re-check of the parking protocol, which is
//                 ordered by the seq_cst fences in executor_core.hpp (see there).
//   INVARIANT: len_ equals the number of linked tasks whenever mu_ is free.
//
// Progress: blocking (short critical sections, a handful of pointer writes).

#include <spindle/detail/atomic.hpp>
#include <spindle/detail/mutex.hpp>
#include <spindle/detail/task.hpp>

#include <cstddef>
#include <mutex>

namespace spindle::detail {

class injector {
 public:
  injector() = default;
  injector(injector const&) = delete;
  auto operator=(injector const&) -> injector& = delete;

  /// Appends one task. Returns false (and leaves `t` alone) once the queue is closed.
  [[nodiscard]] auto push(task* t) noexcept -> bool {
    t->next = nullptr;
    std::lock_guard guard(mu_);
    if (closed_) {
      return false;
    }
    if (tail_ == nullptr) {
      head_ = t;
    } else {
      tail_->next = t;
    }
    tail_ = t;
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

  /// Takes up to `max` tasks, oldest first: returns the first and passes the rest to `sink`
  /// (in FIFO order). Takes about len / share + 1 tasks, so that several idle workers share a
  /// burst instead of one of them draining it.
  template <class Sink>
  auto pop_batch(std::size_t share, std::size_t max, Sink&& sink) noexcept -> task* {
    if (looks_empty()) {
      return nullptr;
    }
    task* first = nullptr;
    task* rest = nullptr;
    {
      std::lock_guard guard(mu_);
      // relaxed: written only under mu_, which we hold.
      auto const len = len_.load(std::memory_order_relaxed);
      if (len == 0) {
        return nullptr;
      }
      std::size_t take = len / (share == 0 ? 1 : share) + 1;
      take = take > max ? max : take;
      take = take > len ? len : take;
      first = head_;
      task* last = first;
      for (std::size_t i = 1; i < take; ++i) {
        last = last->next;
      }
      head_ = last->next;
      if (head_ == nullptr) {
        tail_ = nullptr;
      }
      last->next = nullptr;
      rest = first->next;
      first->next = nullptr;
      // relaxed: as in push().
      len_.store(len - take, std::memory_order_relaxed);
    }
    while (rest != nullptr) {
      task* const t = rest;
      rest = rest->next;
      t->next = nullptr;
      sink(t);
    }
    return first;
  }

  /// Takes one task, or nullptr.
  auto pop() noexcept -> task* {
    return pop_batch(1, 1, [](task*) noexcept {});
  }

 private:
  mutable mutex mu_;
  task* head_ = nullptr;
  task* tail_ = nullptr;
  bool closed_ = false;
  atomic<std::size_t> len_{0};
};

}  // namespace spindle::detail

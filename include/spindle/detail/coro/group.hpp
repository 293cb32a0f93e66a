// SPDX-License-Identifier: BSL-1.0
#pragma once
// Children run side by side for one awaiting coroutine: the machinery of when_all, when_any and
// timeout (spindle/when.hpp).
//
// The awaiting coroutine (the *parent*) hands the group one runner coroutine per child. A runner
// awaits its child task, stores the outcome and ends. The group starts every runner as a fresh
// submission on the parent's target (an executor's workers may steal them, so they run in
// parallel), gives each a cancellation slot of its own (cancel.hpp), and resumes the parent
// once every runner has ended. Children never outlive the parent's co_await: the parent waits
// for all of them, also after an error or a cancellation.
//
// Counting: `remaining_` starts at children + 1. Each runner's end takes one (its on_done, in
// its final_suspend, the last thing it does), and the parent's await_suspend takes one after it
// started every runner. Whoever takes the last one continues the parent: a runner hands it to
// the parent's target, await_suspend declines to suspend. So the parent is resumed exactly
// once, and only after every runner has stopped touching the group.
//
// Cancellation: the parent's own cancellation is passed to every child (the parent's hook
// requests on every child slot). when_all cancels the other children after the first error;
// when_any after the first child that ends. A child ends its current wait by throwing
// task_cancelled (cancel.hpp) and its runner records that like any other outcome.
//
// Synchronization: `remaining_` is acq_rel: whoever takes the last count sees every runner's
// outcome. `winner_` (when_any) and `failed_` (when_all) are elections by CAS; the outcome each
// elects is written before the runner's count is given back, which publishes it.
// Model tests: tests/model/cancel_test.cpp.

#include <spindle/detail/coro/cancel.hpp>
#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/task.hpp>
#include <spindle/task_traits.hpp>

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

class child_group {
 public:
  static constexpr std::size_t no_winner = ~std::size_t{0};

  explicit child_group(std::size_t n)
      : children_(std::make_unique<child[]>(n)), count_(n), remaining_(n + 1) {}
  child_group(child_group const&) = delete;
  auto operator=(child_group const&) -> child_group& = delete;
  ~child_group() = default;

  /// Whether the children should stop at the first one that ends (when_any).
  void stop_at_first() noexcept { race_ = true; }

  /// A runner's outcome: `ok` false when its child threw `error`.
  void ended(std::size_t i, std::exception_ptr error) noexcept {
    if (race_) {
      std::size_t expected = no_winner;
      // relaxed: an election only; the winner's outcome reaches the parent through the runner
      // counts (acq_rel) of remaining_.
      if (winner_.compare_exchange_strong(expected, i, std::memory_order_relaxed,
                                          std::memory_order_relaxed)) {
        error_ = std::move(error);
        cancel_children();
      }
      return;
    }
    if (error) {
      bool expected = false;
      // relaxed: as above.
      if (failed_.compare_exchange_strong(expected, true, std::memory_order_relaxed,
                                          std::memory_order_relaxed)) {
        error_ = std::move(error);
        cancel_children();
      }
    }
  }

  /// The child that ended first (when_any), valid once the parent resumed.
  [[nodiscard]] auto winner() const noexcept -> std::size_t {
    // relaxed: read after the parent's resumption, which acquired every runner's count.
    return winner_.load(std::memory_order_relaxed);
  }

  /// The awaiter that starts `runners` and waits for them; rethrows the elected error (the
  /// first error of when_all, the winner's of when_any). The runners must stay alive until it
  /// returns.
  class awaiter {
   public:
    awaiter(child_group& g, std::span<spindle::task<void>> runners) noexcept
        : g_(&g), runners_(runners) {}

    [[nodiscard]] auto await_ready() const noexcept -> bool { return false; }

    template <class Promise>
    auto await_suspend(std::coroutine_handle<Promise> h) noexcept -> bool {
      g_->where_ = target_of(h);
      g_->parent_.handle = h;
      cancel_.bind(cancel_slot_of(h), &forward_cancel, g_);
      // Noted before the children start: the last of them may resume the parent at once.
      cancel_.note(pack_note(g_->race_ ? wait_kind::when_any : wait_kind::when_all, nullptr,
                             runners_.size()));
      bool const cancelled = !cancel_.arm();
      for (std::size_t i = 0; i < runners_.size(); ++i) {
        g_->start(i, runners_[i]);
      }
      if (cancelled) {
        g_->cancel_children();
      }
      // acq_rel: see the file comment; the parent's own count, taken after every start.
      return g_->remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1;
    }

    void await_resume() {
      cancel_.disarm();
      cancel_.note(0);
      if (g_->error_) {
        std::rethrow_exception(g_->error_);
      }
    }

   private:
    static void forward_cancel(void* group) noexcept {
      static_cast<child_group*>(group)->cancel_children();
    }

    child_group* g_;
    std::span<spindle::task<void>> runners_;
    cancel_link cancel_;
  };

  auto run(std::span<spindle::task<void>> runners) noexcept -> awaiter {
    SPINDLE_ASSERT(runners.size() == count_, "one runner per child");
    return awaiter(*this, runners);
  }

 private:
  struct child {
    cancel_slot slot;
    resume_node start;
  };

  /// Starts runner `i` on the parent's target (a fresh submission), or on this thread when the
  /// parent has no target or its target no longer accepts work.
  void start(std::size_t i, spindle::task<void>& runner) noexcept {
    auto h = task_access::handle(runner);
    check_startable(h, "a child of when_all/when_any is empty or already started");
    auto& p = h.promise();
    child& c = children_[i];
    p.where = where_;
    p.cancel = &c.slot;
    p.on_done = &runner_done;
    p.on_done_arg = this;
    c.start.handle = h;
    if (where_ != nullptr) {
      try {
        where_->submit(c.start);
        return;
      } catch (...) {
        // An executor that shut down: the runner starts here instead.
      }
    }
    h.resume();
  }

  void cancel_children() noexcept {
    for (std::size_t i = 0; i < count_; ++i) {
      static_cast<void>(children_[i].slot.request());
    }
  }

  /// A runner's on_done (its final_suspend): gives back its count.
  static void runner_done(void* arg) noexcept {
    auto* self = static_cast<child_group*>(arg);
    // acq_rel: see the file comment.
    if (self->remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      resume_on(self->where_, self->parent_);
    }
  }

  std::unique_ptr<child[]> children_;
  std::size_t count_;
  atomic<std::size_t> remaining_;
  atomic<std::size_t> winner_{no_winner};
  atomic<bool> failed_{false};
  bool race_ = false;
  std::exception_ptr error_;
  resume_target* where_ = nullptr;
  resume_node parent_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

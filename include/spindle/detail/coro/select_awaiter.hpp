// SPDX-License-Identifier: BSL-1.0
#pragma once
// The select loop of a coroutine: the same rounds as a thread's select
// (detail/select/select_loop.hpp), but step 3 suspends the coroutine instead of parking a
// thread. It serves `co_await spindle::async_select(cases...)` and every awaitable channel
// operation (`async_send`, `async_recv` and their timed and stop_token forms are selects of
// one or two cases), so threads and coroutines wait through one protocol and one wait list.
//
// A round, in await_suspend (the first) or in the resume node (later ones):
//   - a fresh waiter whose wake is a callback (wake_thunk), not a parker; the deadline, if any,
//     goes to the timer (detail/coro/timer.hpp), whose entry aborts the waiter;
//   - watch every case, re-check readiness, abort if ready (as a thread does);
//   - arm the coroutine's cancellation hook (detail/coro/cancel.hpp), which aborts the waiter as
//     the deadline does; a coroutine cancelled already does not wait;
//   - suspend: arrive at `arrivals_`.
// The waker arrives at `arrivals_` too (wake_thunk). Two arrivals per round: whoever arrives
// second continues the select, so that the round's set-up (which reads the awaiter after the
// entries became visible to wakers) never overlaps the resumption of the coroutine on another
// thread, and the coroutine is resumed exactly once per round. If the waker is second, it hands
// the resume node to the coroutine's target (an executor queues it as a task); the node then
// finishes the round (cancels the timer, disarms the cancellation hook, unwatches, accepts) and
// either resumes the coroutine or starts another round, still suspended.
//
// Diagnostics: a coroutine its executor lists (spindle::dump) notes in its cancellation slot
// what the round waits on (the cases' describe()) just before it suspends, and clears the note
// when the round finishes: one relaxed store each, and only a `listed` test when unlisted.
//
// Cancellation: a ready case still wins over a cancellation request (as a value ready in time
// wins over a deadline). When no case was chosen and the coroutine's cancellation was
// requested, the awaitable ends by throwing spindle::task_cancelled from await_resume.
//
// Synchronization: `arrivals_` is an acq_rel counter: the second arrival sees what the first
// did before arriving (the selector's hand-off into a packet, the set-up's registrations).
// Everything else in the awaiter is touched by one party at a time, ordered by it.
//
// Memory: the awaiter lives in the coroutine frame: the cases, one waiter, one resume node, and
// a timer entry only when a case has a deadline; nothing is allocated per operation.

#include <spindle/detail/coro/cancel.hpp>
#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/coro/timer.hpp>
#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/select/select_loop.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>
#include <spindle/detail/sync/wait_note.hpp>
#include <spindle/task_traits.hpp>

#include <array>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <tuple>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// The select machinery of an awaiter over `Cases` (owned). `Derived::await_resume` maps the
/// chosen case to the awaitable's result.
template <class... Cases>
class select_awaiter_base : private cancel_hook {
 public:
  explicit select_awaiter_base(bool biased, Cases&&... cases)
      : cases_(std::move(cases)...), biased_(biased) {}
  select_awaiter_base(select_awaiter_base const&) = delete;
  auto operator=(select_awaiter_base const&) -> select_awaiter_base& = delete;
  // Awaiters are returned by value (guaranteed elision); a move before the first use is safe.
  select_awaiter_base(select_awaiter_base&& other) noexcept
      : cases_(std::move(other.cases_)), biased_(other.biased_) {}

  ~select_awaiter_base() = default;

  /// Step 1 without suspending: true when a case (or the default) completes at once.
  auto await_ready() -> bool {
    bind();
    chosen_ = list().try_round(biased_);
    return chosen_ != no_case;
  }

  /// Starts the first round. Returns false when the select completed during set-up.
  /// Throws: std::bad_alloc when the timer's heap cannot grow (nothing is registered then).
  template <class Promise>
  auto await_suspend(std::coroutine_handle<Promise> h) -> bool {
    promise_ = promise_of(h);
    where_ = target_of(h);
    node_.handle = h;
    node_.context = this;
    cancel_hook::fire = &cancel_thunk;
    if constexpr (timed) {
      timer_.context = this;
    }
    return !round();
  }

 protected:
  /// The chosen case (valid in await_resume).
  [[nodiscard]] auto chosen() const noexcept -> std::size_t { return chosen_; }
  auto cases() noexcept -> std::tuple<Cases...>& { return cases_; }
  void fire_chosen() { ptrs_[chosen_]->fire(); }
  /// Rethrows what a later round could not report while the coroutine was suspended.
  void rethrow_error() const {
    if (error_) {
      std::rethrow_exception(error_);
    }
  }

 private:
  static constexpr std::size_t count = sizeof...(Cases);
  // Only an awaiter with a timeout case carries a timer entry: a suspended coroutine's frame is
  // its whole memory cost (docs/performance.md, Coroutines).
  static constexpr bool timed = (is_timeout_case_v<Cases> || ...);
  struct no_timer {};

  void bind() noexcept {
    ptrs_ = std::apply([](auto&... c) { return std::array<select_case*, count>{&c...}; }, cases_);
  }

  /// The cases as the select loop sees them, rebuilt on use rather than stored (the default
  /// index and the deadline never change), which keeps the frame smaller.
  auto list() noexcept -> case_list { return case_list(std::span<select_case* const>(ptrs_)); }

  /// Rounds until the select completes (returns true: resume the coroutine now) or the
  /// coroutine stays suspended (returns false: a wake will continue it).
  auto round() -> bool {
    for (;;) {
      waiter_.emplace(&wake_thunk, this);
      // relaxed: nothing can arrive before the entries are watched below, which publishes it.
      arrivals_.store(0, std::memory_order_relaxed);
      case_list cases = list();
      if constexpr (timed) {
        if (cases.deadline) {
          timer_.when = *cases.deadline;
          timer_.fire = &timer_thunk;
          timer_service::instance().add(timer_);
          timer_armed_ = true;
        }
      }
      bool ready = cases.watch_all(*waiter_);
      if (cancel_slot* const slot = cancel_slot_of_promise()) {
        cancel_slot::arm_result const armed = slot->arm(this);
        cancel_armed_ = armed == cancel_slot::arm_result::armed;
        if (armed == cancel_slot::arm_result::cancelled) {
          ready = true;
        }
      }
      if (ready && waiter_->try_select(waiter::aborted)) {
        if (finish_round()) {
          return true;
        }
        continue;
      }
      if (cancel_slot* const slot = cancel_slot_of_promise(); slot != nullptr && slot->listed()) {
        slot->note(describe());
      }
      // acq_rel: see the file comment; the first arrival returns, the second continues.
      if (arrivals_.fetch_add(1, std::memory_order_acq_rel) == 0) {
        return false;
      }
      if (finish_round()) {
        return true;
      }
    }
  }

  /// Step 4 after the waiter was selected (by a waker, the timer, stop, or itself): withdraw
  /// everything, then accept the winning case or try every case again. Returns true when a case
  /// was chosen.
  auto finish_round() -> bool {
    if (cancel_slot* const slot = cancel_slot_of_promise()) {
      slot->note(0);
    }
    if constexpr (timed) {
      if (timer_armed_) {
        static_cast<void>(timer_service::instance().cancel(timer_));
        timer_armed_ = false;
      }
    }
    if (cancel_armed_) {
      cancel_armed_ = false;
      static_cast<void>(cancel_slot_of_promise()->disarm(this));
    }
    case_list cases = list();
    std::size_t const winner = cases.unwatch_all(waiter_->selected());
    if (winner != no_case && ptrs_[winner]->accept()) {
      chosen_ = winner;
      return true;
    }
    chosen_ = cases.try_round(biased_);
    if (chosen_ == no_case && cancel_slot_of_promise() != nullptr &&
        cancel_slot_of_promise()->requested()) {
      error_ = std::make_exception_ptr(task_cancelled());
      return true;
    }
    return chosen_ != no_case;
  }

  /// The diagnostics note of this wait (detail/sync/wait_note.hpp): the one case that waits
  /// (a timeout or stop beside it only bounds the wait), else a select of the waiting cases.
  [[nodiscard]] auto describe() const noexcept -> std::uint64_t {
    case_summary const s = summarize(std::span<select_case* const>(ptrs_));
    return pack_note(s.what.kind, s.what.object, s.count);
  }

  [[nodiscard]] auto cancel_slot_of_promise() const noexcept -> cancel_slot* {
    return promise_ != nullptr ? promise_->cancel : nullptr;
  }

  /// The coroutine's cancellation was requested: abort the waiter unless a waker won it first.
  static void cancel_thunk(cancel_hook* h) noexcept {
    auto* self = static_cast<select_awaiter_base*>(h);
    if (self->waiter_->try_select(waiter::aborted)) {
      self->waiter_->wake();
    }
  }

  /// The waiter's wake: the second arrival of the round continues it.
  static void wake_thunk(void* arg) noexcept {
    auto* self = static_cast<select_awaiter_base*>(arg);
    // acq_rel: see the file comment.
    if (self->arrivals_.fetch_add(1, std::memory_order_acq_rel) == 0) {
      return;
    }
    self->node_.run = &resumed;
    resume_on(self->where_, self->node_);
  }

  /// The deadline passed: abort the waiter unless a waker won it first.
  static void timer_thunk(timer_entry* t) noexcept {
    static_assert(timed);
    auto* self = static_cast<select_awaiter_base*>(t->context);
    if (self->waiter_->try_select(waiter::aborted)) {
      self->waiter_->wake();
    }
  }

  /// The resume node's task: finish the round on the target, then resume the coroutine or wait
  /// again.
  static void resumed(task* t) noexcept {
    auto* node = static_cast<resume_node*>(t);
    auto* self = static_cast<select_awaiter_base*>(node->context);
    std::coroutine_handle<> const h = node->handle;
    bool done = false;
    try {
      done = self->finish_round() || self->round();
    } catch (...) {
      // The timer's heap could not grow, or an unbounded channel's send could not allocate.
      // Nothing is registered at either point; the coroutine gets the exception.
      self->error_ = std::current_exception();
      done = true;
    }
    if (done) {
      h.resume();
    }
  }

  std::tuple<Cases...> cases_;
  std::array<select_case*, count> ptrs_{};
  std::size_t chosen_ = no_case;
  std::optional<waiter> waiter_;
  atomic<std::uint32_t> arrivals_{0};
  bool biased_;
  bool timer_armed_ = false;
  bool cancel_armed_ = false;
  // The suspended coroutine's promise, for its cancellation slot (cancel.hpp; this awaiter is
  // the hook it arms), or null for a coroutine not spindle's. The slot is read through it by
  // the coroutine's own side only; the waker reads `where_`, a copy next to the awaiter's other
  // fields, rather than a line of the promise that another core holds.
  promise_base* promise_ = nullptr;
  resume_target* where_ = nullptr;
  [[no_unique_address]] std::conditional_t<timed, timer_entry, no_timer> timer_;
  resume_node node_;
  std::exception_ptr error_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

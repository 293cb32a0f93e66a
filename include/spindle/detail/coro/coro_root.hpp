// SPDX-License-Identifier: BSL-1.0
#pragma once
// The heap node of `executor::spawn(task<T>)`: a task node that starts the coroutine on a
// worker, and the shared result its join_handle reads (detail/executor/task.hpp). The
// coroutine's promise gets the executor as its target and an on_done that moves the result
// into the node, frees the frame, sets the completion and drops the executor's reference: the
// node outlives the coroutine, so a join_handle behaves the same for a coroutine as for a
// function.
//
// Cancellation (join_handle::cancel): the node holds the coroutine's cancellation slot
// (cancel.hpp), which the whole chain of tasks it awaits shares. Before it starts, a cancel
// wins the same election as for a function (shared_result): the frame is destroyed unrun and
// join throws task_cancelled. After it started, a cancel requests on the slot: the awaitable
// the coroutine waits in (or its next wait) throws task_cancelled into it. The slot is closed
// when the coroutine ends, so a later cancel returns false.
//
// Diagnostics: a listed coroutine (coro_registry.hpp) links its record when it is made, marks
// it started, and unlinks it at its end or at a cancel before its start.

#include <spindle/detail/coro/cancel.hpp>
#include <spindle/detail/coro/coro_registry.hpp>
#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/executor/task_pool.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/task.hpp>

#include <cstdint>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

template <class R>
class coro_root final : public task, public shared_result<R> {
 public:
  /// `record`: the coroutine's entry in `list`, the executor's list of coroutines, when this
  /// one is listed (coro_registry.hpp; the root owns the entry from here on); null when
  /// unlisted.
  coro_root(spindle::task<R>&& t, resume_target* where, coro_registry* list = nullptr,
            coro_record* record = nullptr) noexcept
      : task(&start), shared_result<R>(node_ops), t_(std::move(t)), where_(where) {
    if (record != nullptr) {
      record->key = &this->done;
      slot_.list(record);
      list->add(*record);
    }
  }
  coro_root(coro_root const&) = delete;
  auto operator=(coro_root const&) -> coro_root& = delete;
  /// Unlists a coroutine still listed: only a spawn that failed to queue it gets here with one
  /// (every other path unlisted it while the executor was alive).
  ~coro_root() { unlist(); }

 private:
  static void start(task* n) noexcept {
    auto* self = static_cast<coro_root*>(n);
    if (!self->try_start()) {
      // Cancelled before it started: the canceller destroyed the frame and set the outcome.
      self->release();
      return;
    }
    if (coro_record* const r = self->record()) {
      // relaxed: read only by dumps (coro_registry.hpp).
      r->started.store(true, std::memory_order_relaxed);
    }
    auto h = task_access::handle(self->t_);
    auto& p = h.promise();
    p.where = self->where_;
    p.cancel = &self->slot_;
    // Bound while it lives (resume.hpp, Accounting); unbound in its final_suspend. This runs on
    // a worker of the executor, which cannot terminate meanwhile.
    self->where_->bind();
    p.counted = self->where_;
    p.on_done = &finished;
    p.on_done_arg = self;
    h.resume();
  }

  /// The coroutine's on_done, in its final_suspend.
  static void finished(void* arg) noexcept {
    auto* self = static_cast<coro_root*>(arg);
    auto h = task_access::handle(self->t_);
    auto take = [&h] { return h.promise().take(); };
    self->result.run(take);
    self->slot_.close();
    self->unlist();
    // The frame (and every local of the coroutine) dies on the worker, before the joiner may
    // return; the coroutine is suspended at its final point, where destroying it is allowed.
    self->t_ = spindle::task<R>();
    self->done.set();
    self->release();
  }

  static void destroy(shared_result<R>* s) noexcept { delete_node(static_cast<coro_root*>(s)); }

  /// Before the start: the frame is destroyed unrun. After: a request on the slot. `no_more`:
  /// the slot closes (the handle is blocked in join()).
  static auto cancel(shared_result<R>* s, typename shared_result<R>::cancel_op op) noexcept
      -> bool {
    auto* self = static_cast<coro_root*>(s);
    using op_t = typename shared_result<R>::cancel_op;
    if (op == op_t::no_more) {
      self->slot_.close();
      return false;
    }
    if (op == op_t::started) {
      return self->slot_.request();
    }
    self->unlist();
    self->t_ = spindle::task<R>();
    self->result.set_error(std::make_exception_ptr(spindle::task_cancelled()));
    self->done.set();
    return true;
  }

  /// Takes the coroutine off its executor's list and frees its entry (no more notes come: the
  /// coroutine ended, or never started).
  void unlist() noexcept {
    if (coro_record* const r = record()) {
      slot_.list(nullptr);
      coro_registry::remove(*r);
      delete r;
    }
  }

  /// The coroutine's record while it is listed.
  [[nodiscard]] auto record() const noexcept -> coro_record* {
    return static_cast<coro_record*>(slot_.listing());
  }

  static constexpr typename shared_result<R>::ops node_ops{&destroy, &cancel};

  spindle::task<R> t_;
  resume_target* where_;
  cancel_slot slot_;
};

// The node of a spawned coroutine without a result fits one task pool node
// (detail/executor/task_pool.hpp), which the memory per suspended coroutine
// (docs/performance.md, spindle-bench coro --scenario memory) counts on.
static_assert(pooled_v<coro_root<void>>,
              "a spawned coroutine's node no longer fits the task pool's payload");

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

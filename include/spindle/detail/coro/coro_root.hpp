// SPDX-License-Identifier: BSL-1.0
#pragma once
// The heap node of `executor::spawn(task<T>)`: a task node that starts the coroutine on a
// worker, and the shared result its join_handle reads (detail/executor/task.hpp). The
// coroutine's promise gets the executor as its target and an on_done that moves the result
// into the node, frees the frame, sets the completion and drops the executor's reference: the
// node outlives the coroutine, so a join_handle behaves the same for a coroutine as for a
// function.

#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/executor/task_pool.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/task.hpp>

#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

template <class R>
class coro_root final : public task, public shared_result<R> {
 public:
  coro_root(spindle::task<R>&& t, resume_target* where) noexcept
      : task(&start), shared_result<R>(&destroy), t_(std::move(t)), where_(where) {}

 private:
  static void start(task* n) noexcept {
    auto* self = static_cast<coro_root*>(n);
    auto h = task_access::handle(self->t_);
    auto& p = h.promise();
    p.where = self->where_;
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
    // The frame (and every local of the coroutine) dies on the worker, before the joiner may
    // return; the coroutine is suspended at its final point, where destroying it is allowed.
    self->t_ = spindle::task<R>();
    self->done.set();
    self->release();
  }

  static void destroy(shared_result<R>* s) noexcept { delete_node(static_cast<coro_root*>(s)); }

  spindle::task<R> t_;
  resume_target* where_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

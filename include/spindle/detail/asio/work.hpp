// SPDX-License-Identifier: BSL-1.0
#pragma once
// Outstanding work on a spindle executor, for Asio (spindle/asio.hpp): what
// `asio::require(ex, asio::execution::outstanding_work.tracked)` holds.
//
// Asio tracks work so that an execution context keeps running while an operation may still
// submit to it: io_context::run() does not return, thread_pool::join() waits. spindle's
// executor has the same notion for coroutines: a coroutine bound to it (detail/coro/resume.hpp,
// Accounting) keeps shutdown waiting, so the executor is still there to run its resumption.
// Tracked work is therefore one such binding: an Asio operation whose completion handler will
// run on the executor (Asio holds tracked work on the handler's executor until then), or an
// asio::co_spawn'ed coroutine, keeps the executor's shutdown waiting exactly as a suspended
// spindle coroutine does.
//
// A `work_token` is one binding, shared by every copy of a tracked executor handle (a reference
// count), so copying a tracked handle costs one RMW on the token, not one on the executor. The
// binding is released by the last copy: on a thread that runs for the executor (a worker or a
// guest) at once; elsewhere by queueing the token itself, a task, to run on a worker. That
// second path is what the rule of resume.hpp asks: the count of bound coroutines is lowered only
// by a thread that is not idle, so the last worker to go idle sees zero and shutdown completes;
// lowered from a foreign thread, the workers might all sleep having seen one, and shutdown would
// wait for ever. The executor cannot terminate before the token runs (the binding holds it),
// and the queueing (executor_core::resume) takes the reference that keeps the executor's engine
// alive across the hand-over.
//
// Synchronization:
//   refs_   copies of the handle that hold the token; RMWs: relaxed to add (the adder holds a
//           reference), acq_rel to drop (the last dropper sees every holder's accesses).

#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/executor/executor_core.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>

#include <cstddef>
#include <stdexcept>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

class work_token final : private resume_node {
 public:
  /// Binds one unit of work to `core`.
  ///
  /// Throws: std::logic_error when called from a thread that does not run for `core` after its
  /// shutdown began (the executor accepts nothing more from outside; binding then could come
  /// after it decided to terminate); std::bad_alloc.
  static auto make(executor_core& core) -> work_token* {
    if (core.local() == nullptr && core.stopping()) {
      throw std::logic_error(
          "spindle::asio_executor: outstanding work tracked after the executor's shutdown began");
    }
    auto* const t = new work_token(core);
    core.bind();
    // A shutdown that began between the check above and the bind may have read the count of
    // bound coroutines without us. If its workers are still running they wait for the count to
    // reach zero, so the token goes back through a worker, as any release from outside does,
    // and the caller gets the same error as above. If they had already terminated, the token
    // stays in the closed queue: one record lost, in a race that only a program creating work
    // from outside while it shuts the executor down can hit, where the alternative (unbinding
    // here) could leave the workers asleep and shutdown waiting for ever.
    if (core.local() == nullptr && core.stopping()) {
      t->finish();
      throw std::logic_error(
          "spindle::asio_executor: outstanding work tracked after the executor's shutdown began");
    }
    return t;
  }

  work_token(work_token const&) = delete;
  auto operator=(work_token const&) -> work_token& = delete;

  /// Another handle holds the token. Preconditions: the caller holds a reference.
  void acquire() noexcept {
    // relaxed: the caller's own reference keeps the count above zero; no data is published.
    refs_.fetch_add(1, std::memory_order_relaxed);
  }

  /// A handle lets go; the last one releases the binding.
  void release() noexcept {
    // acq_rel: release orders this holder's uses before the unbinding; the acquire side lets
    // the last holder (who unbinds and frees the token) see the others'.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      finish();
    }
  }

 private:
  explicit work_token(executor_core& core) noexcept : resume_node(&on_worker), core_(&core) {}
  ~work_token() = default;

  /// Unbinds here when this thread runs for the executor, else queues the token to a worker.
  void finish() noexcept {
    if (core_->local() != nullptr) {
      core_->unbind();
      delete this;
      return;
    }
    // Accepted also during shutdown (a resumption), and never throws: if the queue cannot grow
    // the token runs here, which still unbinds (the only fallback left).
    core_->resume(*this);
  }

  static void on_worker(task* t) noexcept {
    auto* const self = static_cast<work_token*>(static_cast<resume_node*>(t));
    self->core_->unbind();
    delete self;
  }

  executor_core* core_;
  atomic<std::size_t> refs_{1};
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

// SPDX-License-Identifier: BSL-1.0
#pragma once
// `co_await ex.schedule()`: moves the awaiting coroutine onto executor `ex` (executor.hpp).

#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/sync/config.hpp>

#include <coroutine>
#include <type_traits>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

class schedule_awaiter {
 public:
  explicit schedule_awaiter(resume_target* target) noexcept : target_(target) {}

  [[nodiscard]] auto await_ready() const noexcept -> bool { return false; }

  /// Throws: as resume_target::submit (the coroutine then continues where it was, with the
  /// exception).
  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> h) {
    node_.handle = h;
    if constexpr (std::is_base_of_v<promise_base, Promise>) {
      promise_base& p = h.promise();
      resume_target* const where_before = p.where;
      resume_target* const counted_before = p.counted;
      // Bound and set before the submission: once submitted, a worker may resume the coroutine
      // at once, and nothing of it may be touched here afterwards.
      target_->bind();
      p.where = target_;
      p.counted = target_;
      try {
        target_->submit(node_);
      } catch (...) {
        p.where = where_before;
        p.counted = counted_before;
        target_->unbind();
        throw;
      }
      if (counted_before != nullptr) {
        // The coroutine leaves its previous target; this thread still runs for it (one of its
        // workers, or the thread it was started on), so that target is still alive.
        counted_before->unbind();
      }
    } else {
      // A coroutine of another library is moved once; it has no target for later waits
      // (task.hpp), so it binds nothing.
      target_->submit(node_);
    }
  }

  void await_resume() const noexcept {}

 private:
  resume_target* target_;
  resume_node node_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

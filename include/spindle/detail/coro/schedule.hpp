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
      resume_target* const before = h.promise().where;
      // Set before the submission: once submitted, a worker may resume the coroutine at once.
      h.promise().where = target_;
      try {
        target_->submit(node_);
      } catch (...) {
        h.promise().where = before;
        throw;
      }
    } else {
      target_->submit(node_);
    }
  }

  void await_resume() const noexcept {}

 private:
  resume_target* target_;
  resume_node node_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

// SPDX-License-Identifier: BSL-1.0
#pragma once
// A thread about to block outside its scheduler first lets the scheduler hand over what only
// that thread would run. An executor worker keeps the resumption of a coroutine it woke in a
// private slot (detail/executor/scheduler.hpp, push_resumed); if the worker's current task then
// blocks the thread in a channel wait, that coroutine would wait with it, so the wait calls
// before_blocking() and the worker moves the slot to its deque, where other workers steal it.
// A thread that is not a worker has no hook, and the call costs one thread-local load.

#include <spindle/detail/sync/config.hpp>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

struct blocking_hook {
  void (*fn)(void* arg) noexcept = nullptr;
  void* arg = nullptr;
};

/// The calling thread's hook (set by executor workers for their lifetime).
inline thread_local blocking_hook current_blocking_hook{};

/// Called by a thread just before it parks in a wait that its scheduler does not see.
inline void before_blocking() noexcept {
  blocking_hook const& h = current_blocking_hook;
  if (h.fn != nullptr) {
    h.fn(h.arg);
  }
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

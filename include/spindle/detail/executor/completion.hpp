// SPDX-License-Identifier: BSL-1.0
#pragma once
// A one-shot completion flag with a single waiter, for join handles, stack jobs and task groups.
//
// A `completion` starts pending and is set exactly once by whoever finishes the work. One
// thread waits for it: either a worker of the executor (which keeps running other tasks while
// it waits, see executor_core.hpp) or an outside thread (which sleeps). Either kind of waiter
// sleeps on a `detail::parker` that outlives the completion: a worker's own parker, or the
// outside thread's thread-local parker.
//
// States of `state_`:
//   pending --arm(waiter)--> armed --set()--> done
//   pending --set()--> done
// `set()` unparks the waiter only when it finds `armed`: no system call when nobody sleeps.
// The waiter is a thread's parker, or a `completion_hook` (a coroutine awaiting a join handle,
// join_handle.hpp): `waiter_` holds either pointer, a hook's with its low bit set.
//
// Lifetime. A stack job's completion dies as soon as its waiter sees `done`, and the waiter
// may see `done` (after a stale parker token) before `set()` has returned. So `set()` reads
// every field it needs BEFORE its exchange publishes `done`, and touches nothing of the
// completion afterwards. For that, the waiter must be known before `set()` can run: either
// fixed at construction (stack jobs) or bound by `arm()`, in which case the caller of `set()`
// keeps the completion alive by a reference count (join handles) and `set()` may re-read it.
//
// Synchronization:
//   state_   written by the setter (exchange) and the waiter (CAS pending->armed);
//            INVARIANT: done is final.
//   waiter_  written by the constructor or by the waiter in arm() before its CAS; read by
//            set(). Happens-before: everything the setter did before set() is visible to the
//            waiter once it observes `done` (release exchange / acquire load).

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/parker.hpp>

#include <cstdint>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// A callback that set() calls instead of unparking a thread (a suspended coroutine's resume).
struct completion_hook {
  void (*fire)(completion_hook* self) noexcept = nullptr;
  void* context = nullptr;
};

class completion {
 public:
  completion() = default;
  explicit completion(parker* fixed_waiter) noexcept
      : waiter_(reinterpret_cast<std::uintptr_t>(fixed_waiter)) {}
  completion(completion const&) = delete;
  auto operator=(completion const&) -> completion& = delete;
  // For the model checker's race detector: the end of the completion's life is a write to it,
  // and set() reads it first, so a set() that can run after the waiter let the completion die
  // (no happens-before from set() to the waiter's return) is a reported race, not a silent
  // write to a dead stack frame. Compiles to nothing outside the model checker.
  ~completion() { note_write(this, sizeof *this); }

  /// True once set() has run; whatever the setter did before set() is then visible.
  [[nodiscard]] auto is_set() const noexcept -> bool {
    // acquire: pairs with the release exchange in set(); publishes the task's result.
    return state_.load(std::memory_order_acquire) == done;
  }

  /// Marks the work finished and wakes the waiter if it sleeps.
  void set() noexcept {
    note_read(this, sizeof *this);  // see ~completion()
    // acquire: pairs with the release store in arm() (or happens-before through the
    // construction of a stack job); read before the exchange, see "Lifetime" above.
    std::uintptr_t waiter = waiter_.load(std::memory_order_acquire);
    // acq_rel: release publishes the result to the waiter's acquire load in is_set(); acquire
    // pairs with the acq_rel CAS in arm(), so a waiter bound there is visible below.
    if (state_.exchange(done, std::memory_order_acq_rel) == armed) {
      if (waiter == 0) {
        // Only for completions armed with a late-bound waiter, whose setter holds a reference
        // (see "Lifetime"). acquire: pairs with the release store in arm().
        waiter = waiter_.load(std::memory_order_acquire);
      }
      if ((waiter & hook_bit) != 0) {
        auto* hook = reinterpret_cast<completion_hook*>(waiter & ~hook_bit);
        hook->fire(hook);
      } else {
        reinterpret_cast<parker*>(waiter)->unpark();
      }
    }
  }

  /// Announces that `waiter` is about to sleep until set(). Returns false when the completion
  /// is already set (the caller must not sleep). Calling it again while armed is harmless.
  ///
  /// Preconditions: a single waiting thread, always with the same parker.
  [[nodiscard]] auto arm(parker* waiter) noexcept -> bool {
    return arm_with(reinterpret_cast<std::uintptr_t>(waiter));
  }

  /// As arm(), for a coroutine: set() calls `hook->fire(hook)` instead of unparking a thread.
  /// The hook must live until it fired. Only for completions whose setter holds a reference
  /// (join handles), so that set() may read the hook after publishing `done`.
  [[nodiscard]] auto arm_hook(completion_hook* hook) noexcept -> bool {
    return arm_with(reinterpret_cast<std::uintptr_t>(hook) | hook_bit);
  }

  /// Blocks an outside (non-worker) thread until set(), sleeping on `own`.
  void wait_outside(parker& own) noexcept {
    while (!is_set()) {
      if (!arm(&own)) {
        return;
      }
      own.park();
    }
  }

 private:
  static constexpr std::uint32_t pending = 0;
  static constexpr std::uint32_t done = 1;
  static constexpr std::uint32_t armed = 2;
  static constexpr std::uintptr_t hook_bit = 1;
  static_assert(alignof(parker) > hook_bit && alignof(completion_hook) > hook_bit);

  auto arm_with(std::uintptr_t waiter) noexcept -> bool {
    // relaxed load: only this waiter writes waiter_ after construction.
    if (waiter_.load(std::memory_order_relaxed) == 0) {
      // release: pairs with the acquire loads of waiter_ in set().
      waiter_.store(waiter, std::memory_order_release);
    }
    std::uint32_t expected = pending;
    // acq_rel: release publishes waiter_ to set()'s acquire exchange; acquire on failure pairs
    // with set()'s release exchange when we find `done`.
    if (state_.compare_exchange_strong(expected, armed, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
      return true;
    }
    return expected == armed;
  }

  // INVARIANT: done is final; armed only after waiter_ is non-null.
  atomic<std::uint32_t> state_{pending};
  // A parker*, or a completion_hook* with hook_bit set; 0 until bound.
  atomic<std::uintptr_t> waiter_{0};
};

/// The parker an outside thread sleeps on while it waits for a completion.
inline auto outside_parker() noexcept -> parker& {
  thread_local parker own;
  return own;
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

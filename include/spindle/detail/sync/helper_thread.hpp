// SPDX-License-Identifier: BSL-1.0
#pragma once
// A thread of the library's own that sleeps between looks at something: the executor's stall
// watchdog (detail/executor/stall_watchdog.hpp) and its next-slot watch
// (detail/executor/next_slot.hpp). It sleeps on a parker of its own, so wake() ends a sleep
// early and stop() costs one wake-up, not a period: stop() sets a flag, wakes the thread and
// joins it.
//
// Synchronization: `stop_` is set once by stop() (release) before it unparks the thread; the
// thread reads it (acquire) after each sleep (stopping()). The parker publishes what a waker
// did before wake() to the thread's return from the sleep.

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/native_thread.hpp>
#include <spindle/detail/sync/parker.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

class helper_thread {
 public:
  helper_thread() = default;
  helper_thread(helper_thread const&) = delete;
  auto operator=(helper_thread const&) -> helper_thread& = delete;
  ~helper_thread() { stop(); }

  /// Starts the thread, named `name`, running `body`, which loops until stopping() and sleeps
  /// through sleep() or sleep_for() between its looks. Called once, by the owner, after
  /// everything `body` uses is built.
  /// Throws: std::system_error if the thread cannot start.
  template <class Body>
  void start(std::string name, Body body) {
    thread_ =
        std::make_unique<native_thread>(thread_settings{std::move(name), 0, {}}, std::move(body));
  }

  /// Ends the thread's sleep in progress, or its next one. Callable from any thread.
  void wake() noexcept { parker_.unpark(); }

  /// On the thread: sleeps until woken.
  void sleep() noexcept { parker_.park(); }
  /// On the thread: sleeps until woken or until `d` has passed.
  template <class Rep, class Period>
  void sleep_for(std::chrono::duration<Rep, Period> d) noexcept {
    static_cast<void>(parker_.park_for(d));
  }
  /// On the thread: whether stop() asked it to end.
  [[nodiscard]] auto stopping() const noexcept -> bool {
    // acquire: pairs with the release store in stop().
    return stop_.load(std::memory_order_acquire);
  }

  /// Stops the thread and joins it; idempotent. Called by one thread at a time.
  void stop() noexcept {
    if (!thread_) {
      return;
    }
    // release: pairs with the acquire load in stopping().
    stop_.store(true, std::memory_order_release);
    parker_.unpark();
    thread_->join();
    thread_.reset();
  }

 private:
  parker parker_;
  atomic<bool> stop_{false};
  std::unique_ptr<native_thread> thread_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

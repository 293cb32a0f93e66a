// SPDX-License-Identifier: BSL-1.0
#pragma once
// Acquiring permits of a fair semaphore (detail/sync/fair_semaphore.hpp) as a select case, and
// the three ways to wait on it that every primitive built on the semaphore offers: a thread
// blocks (acquire_blocking_until below, the park loop of a blocked channel operation), a
// coroutine suspends (the select awaiter of detail/coro/select_awaiter.hpp), and a select waits
// on it beside channel cases. So a mutex, a shared mutex, a semaphore and a notify are one
// protocol and one wait list, with a timeout and a stop token in every form.

#include <spindle/detail/channel/park.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/coro/select_awaiter.hpp>
#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/sync/backoff.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/fair_semaphore.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <tuple>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Permits held, returned when the holder is destroyed: the state of spindle::semaphore_permit
/// and spindle::mutex_guard.
class held_permits {
 public:
  held_permits() noexcept = default;
  held_permits(fair_semaphore& sem, std::size_t n) noexcept : sem_(&sem), count_(n) {}
  held_permits(held_permits const&) = delete;
  auto operator=(held_permits const&) -> held_permits& = delete;
  held_permits(held_permits&& other) noexcept
      : sem_(std::exchange(other.sem_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  auto operator=(held_permits&& other) noexcept -> held_permits& {
    if (this != &other) {
      give_back();
      sem_ = std::exchange(other.sem_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  ~held_permits() { give_back(); }

  /// Returns the permits now (to the next waiter in line, if any); afterwards nothing is held.
  void give_back() noexcept {
    if (sem_ != nullptr) {
      SPINDLE_CHECK(std::exchange(sem_, nullptr)->release(std::exchange(count_, 0)),
                    "permits returned to a semaphore that release() filled beyond max_permits");
    }
  }
  /// Keeps the permits out of the semaphore for good; returns how many.
  auto forget() noexcept -> std::size_t {
    sem_ = nullptr;
    return std::exchange(count_, 0);
  }
  [[nodiscard]] auto count() const noexcept -> std::size_t { return count_; }
  [[nodiscard]] auto holds() const noexcept -> bool { return sem_ != nullptr; }
  [[nodiscard]] auto of(fair_semaphore const& sem) const noexcept -> bool { return sem_ == &sem; }

 private:
  fair_semaphore* sem_ = nullptr;
  std::size_t count_ = 0;
};

/// Acquires `n` permits; the handler gets a `Permit` (built from held_permits) holding them. A
/// case that is not chosen holds nothing and leaves the semaphore as it found it: permits it
/// collected while queued go on to the next waiter when it withdraws.
template <class Permit, class F>
class acquire_case : public select_case {
 public:
  acquire_case(fair_semaphore& sem, std::size_t n, F f) : sem_(&sem), n_(n), f_(std::move(f)) {}
  acquire_case(acquire_case&& other) noexcept(std::is_nothrow_move_constructible_v<F>)
      : select_case(std::move(other)), sem_(other.sem_), n_(other.n_), f_(std::move(other.f_)) {}
  acquire_case(acquire_case const&) = delete;
  auto operator=(acquire_case const&) -> acquire_case& = delete;
  auto operator=(acquire_case&&) -> acquire_case& = delete;
  ~acquire_case() override {
    // Chosen but never collected (a handler that was not run): give the permits back.
    if (acquired_) {
      held_permits(*sem_, n_).give_back();
    }
  }

  // An event case: tried before timeouts and stops, as a channel operation is.
  [[nodiscard]] auto is_channel() const noexcept -> bool override { return true; }
  [[nodiscard]] auto describe() const noexcept -> wait_target override {
    return {wait_kind::lock, sem_};
  }
  auto try_fire() -> bool override {
    acquired_ = n_ == 0 || sem_->try_acquire(n_);
    return acquired_;
  }
  void watch(waiter& w) noexcept override {
    grant_ = semaphore_grant{n_, 0};
    entry_.emplace(w, &grant_);
    ready_ = sem_->watch(*entry_);
  }
  [[nodiscard]] auto ready(waiter const& /*w*/) const noexcept -> bool override { return ready_; }
  void unwatch() noexcept override {
    if (entry_) {
      sem_->unwatch(*entry_);
      entry_.reset();
    }
  }
  [[nodiscard]] auto owns(std::uintptr_t selection) const noexcept -> bool override {
    return entry_ && selection == entry_->operation();
  }
  auto accept() -> bool override {
    // The releaser selects a queued entry only once it has every permit it asked for.
    acquired_ = true;
    return true;
  }
  void fire() override {
    // Without a handler (the blocking and awaitable forms) the caller collects with take().
    if constexpr (!std::is_same_v<F, no_handler>) {
      call_handler(f_, take());
    }
  }

  /// The permits, once the case was chosen.
  auto take() noexcept -> Permit {
    SPINDLE_ASSERT(acquired_, "take() of an acquire case that was not chosen");
    acquired_ = false;
    return Permit(held_permits(*sem_, n_));
  }

 private:
  fair_semaphore* sem_;
  std::size_t n_;
  F f_;
  bool acquired_ = false;
  bool ready_ = false;
  semaphore_grant grant_;
  std::optional<wait_entry> entry_;
};

/// Blocks the calling thread until `n` permits are acquired, or (nullopt) until `deadline`
/// passed or stop was requested on `stop`. A permit that is there wins over an expired deadline
/// or a requested stop.
///
/// The loop of a blocked channel operation (detail/channel/park.hpp), on the semaphore's queue:
/// try, spin briefly, queue (or find the permits there and try again), park until the releaser
/// completes the wait, the deadline passes or stop comes, and withdraw. A timed park that ends
/// without a grant is the deadline (under the model checker, the scheduler letting it pass),
/// as for a channel's timed receive.
template <class Permit>
auto acquire_blocking_until(fair_semaphore& sem, std::size_t n, std::optional<steady_time> deadline,
                            std::stop_token const* stop) -> std::optional<Permit> {
  backoff spin;
  for (;;) {
    if (n == 0 || sem.try_acquire(n)) {
      return Permit(held_permits(sem, n));
    }
    if (stop != nullptr && stop->stop_requested()) {
      return std::nullopt;
    }
    if (!spin.is_completed()) {
      // A lock is usually held for a short section: a few rounds of spinning and yielding
      // cost less than a sleep and a wake.
      spin.snooze();
      continue;
    }
    waiter self;
    semaphore_grant grant{n, 0};
    wait_entry entry(self, &grant);
    if (sem.watch(entry)) {
      // The permits are there now and nobody is queued: try again.
      continue;
    }
    wait_options options;
    options.deadline = deadline;
    options.stop = stop;
    options.what = {wait_kind::lock, &sem};
    auto const selection = wait_for_selection(self, options);
    if (selection == entry.operation()) {
      // Granted: the releaser gave the entry every permit it asked for.
      return Permit(held_permits(sem, n));
    }
    sem.unwatch(entry);
    if (stop != nullptr && stop->stop_requested()) {
      return std::nullopt;
    }
    if (deadline) {
      return std::nullopt;
    }
  }
}

template <class Permit>
auto acquire_blocking(fair_semaphore& sem, std::size_t n) -> Permit {
  // No deadline and no stop: only a grant ends the wait.
  return *acquire_blocking_until<Permit>(sem, n, std::nullopt, nullptr);
}

/// `co_await`: the coroutine form. Without an extra case the result is the `Permit`; with a
/// timeout or stop case it is std::optional<Permit> (nullopt: timed out or cancelled).
template <class Permit, class... Extra>
class acquire_awaiter : public select_awaiter_base<acquire_case<Permit, no_handler>, Extra...> {
  using base = select_awaiter_base<acquire_case<Permit, no_handler>, Extra...>;

 public:
  acquire_awaiter(fair_semaphore& sem, std::size_t n, Extra&&... extra)
      : base(/*biased=*/true, acquire_case<Permit, no_handler>(sem, n, no_handler{}),
             std::move(extra)...) {}

  auto await_resume() {
    this->rethrow_error();
    if constexpr (sizeof...(Extra) == 0) {
      return std::get<0>(this->cases()).take();
    } else {
      if (this->chosen() == 0) {
        return std::optional<Permit>(std::get<0>(this->cases()).take());
      }
      return std::optional<Permit>();
    }
  }
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

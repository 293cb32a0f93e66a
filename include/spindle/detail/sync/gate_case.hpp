// SPDX-License-Identifier: BSL-1.0
#pragma once
// Waiting for a phase of a phase gate (detail/sync/phase_gate.hpp) to pass, in the three forms
// every primitive on the gate offers, as acquire_case.hpp does for the fair semaphore: a select
// case, a thread's blocking loop (the park loop of a blocked channel operation), and a
// coroutine's awaiter (the select awaiter of detail/coro/select_awaiter.hpp). So a latch and a
// barrier are one protocol and one wait list, with a timeout and a stop token in every form.

#include <spindle/detail/channel/park.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/coro/select_awaiter.hpp>
#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/sync/backoff.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/phase_gate.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Chosen once the gate's phase is past `k`; the handler takes no argument. Completing leaves
/// the gate as it was: a gate that passed a phase lets every wait for it through.
template <class F>
class gate_case : public select_case {
 public:
  gate_case(phase_gate& gate, std::uint64_t k, F f) : gate_(&gate), wait_{k}, f_(std::move(f)) {}
  gate_case(gate_case&& other) noexcept(std::is_nothrow_move_constructible_v<F>)
      : select_case(std::move(other)),
        gate_(other.gate_),
        wait_(other.wait_),
        f_(std::move(other.f_)) {}
  gate_case(gate_case const&) = delete;
  auto operator=(gate_case const&) -> gate_case& = delete;
  auto operator=(gate_case&&) -> gate_case& = delete;
  ~gate_case() override = default;

  // An event case: tried before timeouts and stops, as a channel operation is.
  [[nodiscard]] auto is_channel() const noexcept -> bool override { return true; }
  [[nodiscard]] auto describe() const noexcept -> wait_target override {
    return {wait_kind::gate, gate_};
  }
  auto try_fire() -> bool override { return gate_->passed(wait_.phase); }
  void watch(waiter& w) noexcept override {
    entry_.emplace(w, &wait_);
    ready_ = gate_->watch(*entry_);
  }
  [[nodiscard]] auto ready(waiter const& /*w*/) const noexcept -> bool override { return ready_; }
  void unwatch() noexcept override {
    if (entry_) {
      gate_->unwatch(*entry_);
      entry_.reset();
    }
  }
  [[nodiscard]] auto owns(std::uintptr_t selection) const noexcept -> bool override {
    return entry_ && selection == entry_->operation();
  }
  // The opener selects a queued entry only once the phase passed.
  auto accept() -> bool override { return true; }
  void fire() override {
    if constexpr (!std::is_same_v<F, no_handler>) {
      std::invoke(f_);
    }
  }

 private:
  phase_gate* gate_;
  phase_wait wait_;
  F f_;
  bool ready_ = false;
  std::optional<wait_entry> entry_;
};

/// Blocks the calling thread until the gate's phase is past `k` (true), or until `deadline`
/// passed or stop was requested on `stop` (false). A phase already passed wins over an expired
/// deadline or a requested stop.
///
/// Try, spin briefly, queue (or find the phase passed and return), park until the opener
/// completes the wait, the deadline passes or stop comes, and withdraw. A timed park that ends
/// without a grant is the deadline (under the model checker, the scheduler letting it pass).
inline auto gate_wait_until(phase_gate& gate, std::uint64_t k, std::optional<steady_time> deadline,
                            std::stop_token const* stop) -> bool {
  backoff spin;
  for (;;) {
    if (gate.passed(k)) {
      return true;
    }
    if (stop != nullptr && stop->stop_requested()) {
      return false;
    }
    if (!spin.is_completed()) {
      // The last party is often moments away: a few rounds of spinning and yielding cost less
      // than a sleep and a wake.
      spin.snooze();
      continue;
    }
    waiter self;
    phase_wait packet{k};
    wait_entry entry(self, &packet);
    if (gate.watch(entry)) {
      return true;
    }
    wait_options options;
    options.deadline = deadline;
    options.stop = stop;
    options.what = {wait_kind::gate, &gate};
    auto const selection = wait_for_selection(self, options);
    if (selection == entry.operation()) {
      return true;
    }
    gate.unwatch(entry);
    if (gate.passed(k)) {
      // Opened while the wait was ending: the phase wins over the deadline or the stop.
      return true;
    }
    if (stop != nullptr && stop->stop_requested()) {
      return false;
    }
    if (deadline) {
      return false;
    }
  }
}

/// `co_await`: the coroutine form. Without an extra case the result is void; with a timeout or
/// stop case it is bool (false: timed out or stopped).
template <class... Extra>
class gate_awaiter : public select_awaiter_base<gate_case<no_handler>, Extra...> {
  using base = select_awaiter_base<gate_case<no_handler>, Extra...>;

 public:
  gate_awaiter(phase_gate& gate, std::uint64_t k, Extra&&... extra)
      : base(/*biased=*/true, gate_case<no_handler>(gate, k, no_handler{}), std::move(extra)...) {}

  auto await_resume() {
    this->rethrow_error();
    if constexpr (sizeof...(Extra) == 0) {
      return;
    } else {
      return this->chosen() == 0;
    }
  }
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

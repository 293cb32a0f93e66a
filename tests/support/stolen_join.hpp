#pragma once
// Test support: a join whose second half is certainly stolen, so that the calling worker waits
// for a thief, and the thief is held long enough for the test to see what the waiter does
// meanwhile (does it help with an unrelated task or not?). Used by the isolation and the
// helping-depth tests.

#include <spindle/executor.hpp>

#include <atomic>
#include <chrono>
#include <thread>

namespace spindle_test {

/// spindle::join(ex, x, y) on a worker of `ex` (of at least two workers): x spins until y has
/// started on another worker (so y was stolen), then returns; y sets `y_started` and holds its
/// worker until `release` is set or 200 ms passed. The caller's worker therefore waits in the
/// join, with nothing of its own to run, while y is held.
inline void join_with_stolen_half(spindle::executor& ex, std::atomic<bool>& y_started,
                                  std::atomic<bool> const& release) {
  auto x = [&] {
    while (!y_started.load()) {
      std::this_thread::yield();
    }
  };
  auto y = [&] {
    y_started.store(true);
    auto const until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (!release.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
  };
  spindle::join(ex, x, y);
}

}  // namespace spindle_test

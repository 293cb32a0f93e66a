#pragma once
// Polling for a condition another thread will make true, with a bound, so that a test whose
// condition never comes fails instead of hanging.

#include <chrono>
#include <thread>

namespace spindle_test {

/// Polls `cond` (every `step`) until it holds or `limit` passes; returns whether it held.
template <class Cond>
auto eventually(Cond cond, std::chrono::milliseconds limit = std::chrono::seconds(10),
                std::chrono::microseconds step = std::chrono::milliseconds(1)) -> bool {
  auto const deadline = std::chrono::steady_clock::now() + limit;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(step);
  }
  return true;
}

}  // namespace spindle_test

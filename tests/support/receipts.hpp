#pragma once
// Test support for exactly-once checks across threads and coroutines: a ledger of the ids each
// receiver saw, and a bounded wait that turns a lost wake-up or a deadlock into a failure with a
// message instead of a hung test.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace spindle_test {

/// Per id: how many times it was received; the sum and the count of everything received.
class id_ledger {
 public:
  explicit id_ledger(std::size_t ids) : seen_(ids) {}

  void record(std::uint64_t id) {
    // relaxed: read after every party is joined.
    seen_.at(id).fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(id, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
  }
  [[nodiscard]] auto times(std::uint64_t id) const -> std::uint32_t {
    return seen_.at(id).load(std::memory_order_relaxed);
  }
  [[nodiscard]] auto count() const -> std::uint64_t {
    return count_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] auto sum() const -> std::uint64_t { return sum_.load(std::memory_order_relaxed); }
  /// Ids in [0, n) not received exactly once.
  [[nodiscard]] auto wrong(std::uint64_t n) const -> std::uint64_t {
    std::uint64_t w = 0;
    for (std::uint64_t id = 0; id < n; ++id) {
      w += times(id) == 1 ? 0 : 1;
    }
    return w;
  }
  /// Ids not received exactly once, over the whole ledger.
  [[nodiscard]] auto wrong() const -> std::uint64_t { return wrong(seen_.size()); }

 private:
  std::vector<std::atomic<std::uint32_t>> seen_;
  std::atomic<std::uint64_t> sum_{0};
  std::atomic<std::uint64_t> count_{0};
};

/// Aborts with a message when `done()` does not become true within `limit`: a lost wake-up or a
/// deadlock would otherwise hang the test (and an executor's destructor).
template <class Done>
void wait_until(Done done, std::chrono::seconds limit, char const* what) {
  auto const deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "hang: %s not reached within %llds\n", what,
                   static_cast<long long>(limit.count()));
      std::abort();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace spindle_test

#pragma once
// Test support: a payload that counts its live instances, so tests can assert that every value
// a structure accepted was destroyed exactly once (no leak, no double destroy).

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace spindle_test {

/// Counts constructions and destructions of `tracked` across all threads.
struct tracked_counts {
  static auto live() noexcept -> std::atomic<std::int64_t>& {
    static std::atomic<std::int64_t> n{0};
    return n;
  }
};

/// A move-only value with an id. A moved-from object holds no value and is still counted, so
/// `live()` returns to its starting point exactly when every object is gone. Destroying an
/// object twice aborts (the guard word is checked and poisoned).
class tracked {
 public:
  explicit tracked(std::uint64_t id) noexcept : id_(id) {
    tracked_counts::live().fetch_add(1, std::memory_order_relaxed);
  }
  tracked(tracked&& other) noexcept : id_(other.id_) {
    other.check();
    other.id_ = moved_from;
    tracked_counts::live().fetch_add(1, std::memory_order_relaxed);
  }
  auto operator=(tracked&& other) noexcept -> tracked& {
    other.check();
    check();
    id_ = other.id_;
    other.id_ = moved_from;
    return *this;
  }
  tracked(tracked const&) = delete;
  auto operator=(tracked const&) -> tracked& = delete;
  ~tracked() {
    check();
    guard_ = poisoned;
    tracked_counts::live().fetch_sub(1, std::memory_order_relaxed);
  }

  [[nodiscard]] auto id() const noexcept -> std::uint64_t { return id_; }

  static auto live() noexcept -> std::int64_t {
    return tracked_counts::live().load(std::memory_order_relaxed);
  }

 private:
  static constexpr std::uint64_t moved_from = ~std::uint64_t{0};
  static constexpr std::uint64_t alive = 0x5350494e444c4521;  // "SPINDLE!"
  static constexpr std::uint64_t poisoned = 0xdeaddeaddeaddead;

  void check() const noexcept {
    if (guard_ != alive) {
      std::fprintf(stderr, "tracked: use of a destroyed object (double destroy?)\n");
      std::abort();
    }
  }

  std::uint64_t id_;
  std::uint64_t guard_ = alive;
};

}  // namespace spindle_test

#pragma once
// A broadcast payload for the model tests (broadcast_test.cpp, pairs_broadcast_test.cpp): its
// copy reads and its destructor writes a word the race detector sees, so a receiver copying a
// slot while the sender destroys or rebuilds it is reported as a data race (a torn read); and
// it counts live instances, so every value is seen destroyed exactly once.

#include <spindle/model/atomic.hpp>

#include <atomic>
#include <cstdint>

namespace spindle_test {

class bc_payload {
 public:
  explicit bc_payload(int id) noexcept {
    word_.set(id);
    live().fetch_add(1, std::memory_order_relaxed);
  }
  bc_payload(bc_payload const& other) noexcept {
    word_.set(other.id());
    live().fetch_add(1, std::memory_order_relaxed);
  }
  bc_payload(bc_payload&& other) noexcept {
    word_.set(other.id());
    live().fetch_add(1, std::memory_order_relaxed);
  }
  auto operator=(bc_payload const&) -> bc_payload& = delete;
  auto operator=(bc_payload&&) -> bc_payload& = delete;
  ~bc_payload() {
    spindle::model::check(word_.get() != destroyed, "a payload was destroyed twice");
    word_.set(destroyed);
    live().fetch_sub(1, std::memory_order_relaxed);
  }

  [[nodiscard]] auto id() const noexcept -> int {
    int const v = word_.get();
    spindle::model::check(v != destroyed, "a destroyed payload was read");
    return v;
  }

  /// Instances alive. Test bookkeeping, not part of the protocol under test: the checker runs
  /// one thread at a time, so a std::atomic counts exactly.
  static auto live() noexcept -> std::atomic<std::int64_t>& {
    static std::atomic<std::int64_t> n{0};
    return n;
  }

 private:
  static constexpr int destroyed = -1000;
  spindle::model::plain<int> word_;
};

}  // namespace spindle_test

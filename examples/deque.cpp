// A work-stealing deque in a few lines: one owner thread pushes the numbers 1..n (as indices
// into a table) and works on them newest first; thieves take the oldest, in batches when they
// can, and every number is summed exactly once. Two thieves move each batch into a deque of
// their own (steal_batch_and_pop), where it could be stolen again; the third takes its
// batches into a plain array (steal_batch) and sums them itself.

#include <spindle/deque.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <thread>
#include <vector>

int main() {
  constexpr std::uint32_t n = 100000;
  std::vector<std::uint64_t> numbers(n);
  std::iota(numbers.begin(), numbers.end(), 1);  // the "tasks": indices into this table

  spindle::deque_owner<std::uint32_t> owner;  // LIFO for the owner, FIFO for thieves
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> total{0};

  std::vector<std::thread> thieves;
  for (int t = 0; t < 2; ++t) {
    thieves.emplace_back([&, victim = owner.stealer()]() mutable {
      spindle::deque_owner<std::uint32_t> mine;  // a thief's own deque, filled by batch steals
      std::uint64_t sum = 0;
      for (;;) {
        bool const finished = done.load(std::memory_order_acquire);
        auto r = victim.steal_batch_and_pop(mine);
        if (r) {
          sum += numbers[*r.value];
          while (auto i = mine.pop()) {
            sum += numbers[*i];
          }
        } else if (finished && r.is_empty()) {
          break;  // the owner is done and nothing is left
        } else {
          std::this_thread::yield();  // empty for now, or lost a race (retry)
        }
      }
      total.fetch_add(sum, std::memory_order_relaxed);
    });
  }
  thieves.emplace_back([&, victim = owner.stealer()]() mutable {
    std::array<std::uint32_t, 32> batch{};  // up to 32 indices per steal, for this thread only
    std::uint64_t sum = 0;
    for (;;) {
      bool const finished = done.load(std::memory_order_acquire);
      auto r = victim.steal_batch(batch);
      for (std::size_t k = 0; k < r.count; ++k) {
        sum += numbers[batch[k]];
      }
      if (!r && finished && r.is_empty()) {
        break;
      }
      if (!r) {
        std::this_thread::yield();
      }
    }
    total.fetch_add(sum, std::memory_order_relaxed);
  });

  std::uint64_t sum = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    owner.push(i);
    if (i % 4 == 0) {
      if (auto j = owner.pop()) {  // the owner works too: newest first
        sum += numbers[*j];
      }
    }
  }
  while (auto j = owner.pop()) {
    sum += numbers[*j];
  }
  done.store(true, std::memory_order_release);
  for (auto& t : thieves) {
    t.join();
  }
  total.fetch_add(sum, std::memory_order_relaxed);

  std::uint64_t const expected = std::uint64_t{n} * (n + 1) / 2;
  std::printf("sum %llu, expected %llu\n", static_cast<unsigned long long>(total.load()),
              static_cast<unsigned long long>(expected));
  return total.load() == expected ? 0 : 1;
}

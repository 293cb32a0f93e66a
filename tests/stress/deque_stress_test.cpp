// Stress tests for <spindle/deque.hpp>: one owner pushing and popping, more thieves than
// cores stealing singly and in batches (into a deque of their own or into a span); every item
// must be taken exactly once.

#include <spindle/deque.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <thread>
#include <vector>

namespace {

using spindle::deque_order;

#if defined(__SANITIZE_ADDRESS__)
#define SPINDLE_DEQUE_STRESS_SMALL 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPINDLE_DEQUE_STRESS_SMALL 1
#endif
#endif

#if defined(SPINDLE_TSAN) || defined(SPINDLE_DEQUE_STRESS_SMALL)
constexpr std::size_t items_per_round = 30000;
constexpr int rounds = 6;
#else
constexpr std::size_t items_per_round = 100000;
constexpr int rounds = 10;
#endif
constexpr int thieves = 5;  // plus the owner: three times the machine's two cores

// What a deque carries here: a pointer to a payload the owner writes before pushing, so a
// missing happens-before edge between push and take shows up as a data race under TSan.
struct payload {
  std::uint64_t id = 0;
  std::uint64_t check = 0;
};

auto check_of(std::uint64_t id) -> std::uint64_t {
  return id * 0x9E3779B97F4A7C15ULL + 1;
}

struct ledger {
  explicit ledger(std::size_t n) : taken(n) {}

  // Records that `p` was taken; returns false when it already was.
  auto take(payload const* p) -> bool {
    if (p->check != check_of(p->id)) {
      return false;
    }
    count.fetch_add(1, std::memory_order_relaxed);
    sum.fetch_add(p->id, std::memory_order_relaxed);
    return taken[p->id].fetch_add(1, std::memory_order_relaxed) == 0;
  }

  // Records that `p` was taken, counting an error when it already was or is corrupt.
  void record(payload const* p) {
    if (!take(p)) {
      // relaxed: a tally, read after the threads are joined.
      errors.fetch_add(1, std::memory_order_relaxed);
    }
  }

  std::vector<std::atomic<std::uint8_t>> taken;
  std::atomic<std::uint64_t> count{0};
  std::atomic<std::uint64_t> sum{0};
  std::atomic<std::uint64_t> errors{0};
};

// The owner's end of a round: takes what is left, tells the thieves, and waits for them.
void finish_round(spindle::deque_owner<payload*>& owner, ledger& book,
                  std::atomic<bool>& owner_done, std::vector<std::thread>& threads) {
  while (auto p = owner.pop()) {
    book.record(*p);
  }
  // release: pairs with the thieves' acquire loads of owner_done; they stop only after
  // seeing it, and then find the deque empty.
  owner_done.store(true, std::memory_order_release);
  for (auto& t : threads) {
    t.join();
  }
}

void run_round(deque_order order, std::uint64_t seed) {
  std::vector<payload> items(items_per_round);
  ledger book(items_per_round);
  spindle::deque_owner<payload*> owner(order, 2);
  std::atomic<bool> owner_done{false};
  std::barrier start(thieves + 1);

  auto thief = [&](spindle::stealer<payload*> s, std::uint64_t thief_seed) {
    spindle::deque_owner<payload*> mine(thief_seed % 2 == 0 ? deque_order::lifo : deque_order::fifo,
                                        1);
    std::minstd_rand rng(static_cast<std::uint32_t>(thief_seed));
    start.arrive_and_wait();
    for (;;) {
      // Read before the steal: the owner sets it only after draining its deque, so a steal
      // that starts after seeing it and finds the deque empty has seen the end.
      bool const done = owner_done.load(std::memory_order_acquire);
      // A single steal, a batch into a deque of its own, or a batch into a span of 1 to 40.
      auto const how = rng() % 3;
      spindle::steal_status status{};
      if (how == 2) {
        std::array<payload*, 40> batch{};
        auto const n = 1 + rng() % batch.size();
        auto const r = s.steal_batch(std::span(batch.data(), n));
        for (std::size_t k = 0; k < r.count; ++k) {
          book.record(batch[k]);
        }
        status = r.status;
      } else {
        auto r = how == 0 ? s.steal() : s.steal_batch_and_pop(mine);
        if (r.is_stolen()) {
          payload* p = *r.value;
          book.record(p);
        }
        status = r.status;
      }
      if (rng() % 4 == 0 || done) {
        while (auto q = mine.pop()) {
          book.record(*q);
        }
      }
      if (done && status == spindle::steal_status::empty) {
        break;
      }
      if (status != spindle::steal_status::stolen) {
        std::this_thread::yield();
      }
    }
  };

  // Single steals by one thief take items in push order: top only moves forward, and the
  // items in [top, bottom) are always in push order.
  auto ordered_thief = [&](spindle::stealer<payload*> s) {
    std::uint64_t last = 0;
    bool have = false;
    start.arrive_and_wait();
    for (;;) {
      bool const done = owner_done.load(std::memory_order_acquire);
      auto r = s.steal();
      if (r.is_stolen()) {
        payload* p = *r.value;
        if (!book.take(p) || (have && p->id <= last)) {
          book.errors.fetch_add(1, std::memory_order_relaxed);
        }
        last = p->id;
        have = true;
      } else if (done && r.is_empty()) {
        break;
      } else {
        std::this_thread::yield();
      }
    }
  };

  std::vector<std::thread> threads;
  threads.emplace_back(ordered_thief, owner.stealer());
  for (int i = 1; i < thieves; ++i) {
    threads.emplace_back(thief, owner.stealer(), seed * 31 + static_cast<std::uint64_t>(i));
  }

  std::mt19937_64 rng(seed);
  start.arrive_and_wait();
  for (std::size_t i = 0; i < items_per_round; ++i) {
    items[i].id = i;
    items[i].check = check_of(i);
    owner.push(&items[i]);
    int const pops = rng() % 3 == 0 ? 1 : (i % 1024 == 1023 ? 200 : 0);
    for (int k = 0; k < pops; ++k) {
      if (auto p = owner.pop()) {
        book.record(*p);
      }
    }
  }
  finish_round(owner, book, owner_done, threads);

  EXPECT_EQ(book.errors.load(), 0U);
  EXPECT_EQ(book.count.load(), items_per_round);
  EXPECT_EQ(book.sum.load(), items_per_round * (items_per_round - 1) / 2);
  std::size_t missing = 0;
  for (auto& t : book.taken) {
    missing += t.load() == 1 ? 0 : 1;
  }
  EXPECT_EQ(missing, 0U);
  EXPECT_GT(owner.capacity(), 2U);  // it grew
}

TEST(DequeStress, LifoOwnerAndThievesTakeEveryItemOnce) {
  for (int r = 0; r < rounds; ++r) {
    run_round(deque_order::lifo, 100 + static_cast<std::uint64_t>(r));
  }
}

TEST(DequeStress, FifoOwnerAndThievesTakeEveryItemOnce) {
  for (int r = 0; r < rounds; ++r) {
    run_round(deque_order::fifo, 200 + static_cast<std::uint64_t>(r));
  }
}

// Push+pop pairs on a nearly empty deque: the owner and the thieves race for the last item on
// almost every operation, through both of pop's paths (one CAS, or fence then CAS).
TEST(DequeStress, OwnerAndThievesRaceForTheLastItem) {
  std::vector<payload> items(items_per_round);
  ledger book(items_per_round);
  spindle::deque_owner<payload*> owner(deque_order::lifo, 2);
  std::atomic<bool> owner_done{false};
  std::barrier start(thieves + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < thieves; ++t) {
    threads.emplace_back([&, s = owner.stealer()]() mutable {
      start.arrive_and_wait();
      for (;;) {
        bool const done = owner_done.load(std::memory_order_acquire);
        auto r = s.steal();
        if (r.is_stolen()) {
          book.record(*r.value);
        }
        if (done && r.is_empty()) {
          break;
        }
      }
    });
  }
  start.arrive_and_wait();
  for (std::size_t i = 0; i < items_per_round; ++i) {
    items[i].id = i;
    items[i].check = check_of(i);
    owner.push(&items[i]);
    if (i % 7 == 3 && i + 1 < items_per_round) {
      ++i;  // sometimes two, so that pop also takes its fence path
      items[i].id = i;
      items[i].check = check_of(i);
      owner.push(&items[i]);
    }
    if (auto p = owner.pop()) {
      book.record(*p);
    }
  }
  finish_round(owner, book, owner_done, threads);
  EXPECT_EQ(book.errors.load(), 0U);
  EXPECT_EQ(book.count.load(), items_per_round);
}

// The deque dies with its last handle, whichever that is: here thieves outlive the owner and
// keep stealing what it left, across buffers it retired while growing.
TEST(DequeStress, ThievesOutliveTheOwner) {
  constexpr std::uint64_t n = items_per_round;
  std::vector<std::atomic<std::uint8_t>> taken(n);
  std::atomic<std::uint64_t> twice{0};
  std::vector<std::thread> threads;
  {
    spindle::deque_owner<std::uint64_t> owner(deque_order::lifo, 2);
    for (std::uint64_t i = 0; i < n; ++i) {
      owner.push(i);
    }
    for (int t = 0; t < thieves; ++t) {
      threads.emplace_back([s = owner.stealer(), &taken, &twice]() mutable {
        while (!s.empty()) {
          if (auto r = s.steal(); r.is_stolen()) {
            if (taken[*r.value].fetch_add(1, std::memory_order_relaxed) != 0) {
              twice.fetch_add(1, std::memory_order_relaxed);
            }
          }
        }
      });
    }
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(twice.load(), 0U);
  std::size_t missing = 0;
  for (auto& t : taken) {
    missing += t.load() == 1 ? 0 : 1;
  }
  EXPECT_EQ(missing, 0U);
}

}  // namespace

// Tests for <spindle/deque.hpp>: the Chase-Lev work-stealing deque (deque_owner / stealer).

#include <spindle/deque.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using spindle::deque_order;
using spindle::steal_status;

TEST(Deque, Example) {
  // The owner pushes tasks (here: indices into a table) and pops the newest; a thief on
  // another thread steals the oldest.
  spindle::deque_owner<std::uint32_t> owner;
  for (std::uint32_t i = 1; i <= 4; ++i) {
    owner.push(i);
  }
  spindle::stealer<std::uint32_t> thief = owner.stealer();

  std::uint32_t stolen = 0;
  std::thread other([&thief, &stolen] {
    if (auto r = thief.steal(); r.is_stolen()) {
      stolen = *r.value;
    }
  });
  other.join();

  EXPECT_EQ(stolen, 1U);       // the oldest
  EXPECT_EQ(owner.pop(), 4U);  // the newest
  EXPECT_EQ(owner.size(), 2U);
}

TEST(Deque, StealableAcceptsPointersAndSmallTrivialTypes) {
  struct pair32 {
    std::uint32_t a;
    std::uint32_t b;
  };
  static_assert(spindle::stealable<int*>);
  static_assert(spindle::stealable<std::size_t>);
  static_assert(spindle::stealable<std::uint8_t>);
  static_assert(spindle::stealable<pair32>);
  static_assert(!spindle::stealable<std::vector<int>>);
  static_assert(!spindle::stealable<std::pair<std::uint64_t, std::uint64_t>>);
  struct three_bytes {
    char c[3];
  };
  static_assert(!spindle::stealable<three_bytes>);
}

TEST(Deque, HandlesAreMovableAndStealersCopyable) {
  static_assert(!std::is_copy_constructible_v<spindle::deque_owner<int>>);
  static_assert(std::is_nothrow_move_constructible_v<spindle::deque_owner<int>>);
  static_assert(std::is_copy_constructible_v<spindle::stealer<int>>);
  static_assert(std::is_nothrow_move_constructible_v<spindle::stealer<int>>);

  spindle::deque_owner<int> a;
  a.push(7);
  spindle::deque_owner<int> b = std::move(a);
  EXPECT_EQ(b.pop(), 7);
  a = std::move(b);  // assigning to a moved-from deque_owner revives it
  a.push(8);
  auto s1 = a.stealer();
  auto s2 = s1;
  EXPECT_EQ(s2.steal().value, 8);
  EXPECT_TRUE(s1.steal().is_empty());
}

// Misuse aborts with "spindle: misuse: ..." in every build, not only with assertions: each
// operation checks its handle (one predictable branch).
TEST(DequeDeathTest, EveryOperationOnAMovedFromOwnerAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  spindle::deque_owner<int> a;
  spindle::deque_owner<int> b = std::move(a);
  auto const* message = "misuse: use of a moved-from spindle::deque_owner";
  // NOLINTBEGIN(bugprone-use-after-move): the point of the test
  EXPECT_DEATH(a.push(1), message);
  EXPECT_DEATH(static_cast<void>(a.pop()), message);
  EXPECT_DEATH(static_cast<void>(a.stealer()), message);
  EXPECT_DEATH(static_cast<void>(a.size()), message);
  EXPECT_DEATH(static_cast<void>(a.empty()), message);
  EXPECT_DEATH(static_cast<void>(a.capacity()), message);
  EXPECT_DEATH(static_cast<void>(a.order()), message);
  auto thief = b.stealer();
  EXPECT_DEATH(static_cast<void>(thief.steal_batch_and_pop(a)), message);
  // NOLINTEND(bugprone-use-after-move)
  b.push(1);
  EXPECT_EQ(b.pop(), 1);
}

TEST(DequeDeathTest, EveryOperationOnAMovedFromStealerAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  spindle::deque_owner<int> w;
  w.push(1);
  auto s = w.stealer();
  auto t = std::move(s);
  spindle::deque_owner<int> dest;
  auto const* message = "misuse: use of a moved-from spindle::stealer";
  // NOLINTBEGIN(bugprone-use-after-move): the point of the test
  EXPECT_DEATH(static_cast<void>(s.steal()), message);
  EXPECT_DEATH(static_cast<void>(s.steal_batch_and_pop(dest)), message);
  std::array<int, 4> out{};
  EXPECT_DEATH(static_cast<void>(s.steal_batch(out)), message);
  EXPECT_DEATH(static_cast<void>(s.size()), message);
  EXPECT_DEATH(static_cast<void>(s.empty()), message);
  auto copy = s;  // copying a moved-from stealer is allowed; the copy is moved-from too
  EXPECT_DEATH(static_cast<void>(copy.steal()), message);
  // NOLINTEND(bugprone-use-after-move)
  EXPECT_EQ(t.steal().value, 1);
}

TEST(DequeDeathTest, StealingABatchIntoTheVictimsOwnWorkerAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (auto const order : {deque_order::lifo, deque_order::fifo}) {
    spindle::deque_owner<int> w(order);
    for (int i = 0; i < 8; ++i) {
      w.push(i);
    }
    auto thief = w.stealer();
    EXPECT_DEATH(static_cast<void>(thief.steal_batch_and_pop(w)),
                 "misuse: steal_batch_and_pop into the deque_owner of the deque it steals from");
    EXPECT_EQ(w.size(), 8U);
  }
}

TEST(DequeDeathTest, StealingABatchIntoAnEmptySpanAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  spindle::deque_owner<int> w;
  w.push(1);
  auto thief = w.stealer();
  std::vector<int> none;
  EXPECT_DEATH(static_cast<void>(thief.steal_batch(none)),
               "misuse: spindle::stealer::steal_batch into an empty span");
  EXPECT_EQ(w.size(), 1U);  // nothing was taken
}

TEST(Deque, PushPopIsLifoByDefault) {
  spindle::deque_owner<int> w;
  EXPECT_EQ(w.order(), deque_order::lifo);
  for (int i = 0; i < 10; ++i) {
    w.push(i);
  }
  for (int i = 9; i >= 0; --i) {
    EXPECT_EQ(w.pop(), i);
  }
  EXPECT_EQ(w.pop(), std::nullopt);
}

TEST(Deque, FifoWorkerPopsOldestFirst) {
  spindle::deque_owner<int> w(deque_order::fifo);
  EXPECT_EQ(w.order(), deque_order::fifo);
  for (int i = 0; i < 10; ++i) {
    w.push(i);
  }
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(w.pop(), i);
  }
  EXPECT_EQ(w.pop(), std::nullopt);
}

TEST(Deque, StealTakesOldestItem) {
  for (auto order : {deque_order::lifo, deque_order::fifo}) {
    spindle::deque_owner<int> w(order);
    auto s = w.stealer();
    for (int i = 0; i < 5; ++i) {
      w.push(i);
    }
    for (int i = 0; i < 5; ++i) {
      auto r = s.steal();
      ASSERT_TRUE(r);
      EXPECT_EQ(r.status, steal_status::stolen);
      EXPECT_EQ(r.value, i);
    }
  }
}

TEST(Deque, StealResultStates) {
  spindle::deque_owner<int> w;
  auto s = w.stealer();
  auto empty = s.steal();
  EXPECT_FALSE(empty);
  EXPECT_TRUE(empty.is_empty());
  EXPECT_FALSE(empty.is_stolen());
  EXPECT_FALSE(empty.is_retry());
  EXPECT_FALSE(empty.value.has_value());

  w.push(3);
  auto got = s.steal();
  EXPECT_TRUE(got);
  EXPECT_TRUE(got.is_stolen());
  EXPECT_EQ(got.value, 3);

  spindle::steal_result<int> lost{steal_status::retry, std::nullopt};
  EXPECT_FALSE(lost);
  EXPECT_TRUE(lost.is_retry());
}

TEST(Deque, EmptyPopsAndStealsLeaveTheDequeUsable) {
  for (auto order : {deque_order::lifo, deque_order::fifo}) {
    spindle::deque_owner<int> w(order, 2);
    auto s = w.stealer();
    for (int round = 0; round < 100; ++round) {
      EXPECT_EQ(w.pop(), std::nullopt);
      EXPECT_TRUE(s.steal().is_empty());
      EXPECT_TRUE(w.empty());
      EXPECT_TRUE(s.empty());
      w.push(round);
      EXPECT_EQ(s.size(), 1U);
      EXPECT_EQ(w.pop(), round);
    }
    EXPECT_EQ(w.capacity(), 2U);
  }
}

TEST(Deque, CapacityRoundsUpToPowerOfTwo) {
  EXPECT_EQ(spindle::deque_owner<int>().capacity(), 64U);
  EXPECT_EQ(spindle::deque_owner<int>(deque_order::lifo, 1).capacity(), 1U);
  EXPECT_EQ(spindle::deque_owner<int>(deque_order::lifo, 3).capacity(), 4U);
  EXPECT_EQ(spindle::deque_owner<int>(deque_order::lifo, 64).capacity(), 64U);
  EXPECT_EQ(spindle::deque_owner<int>(deque_order::fifo, 100).capacity(), 128U);
}

TEST(Deque, BadCapacityThrows) {
  EXPECT_THROW(spindle::deque_owner<int>(deque_order::lifo, 0), std::invalid_argument);
  EXPECT_THROW(
      spindle::deque_owner<int>(deque_order::lifo, std::numeric_limits<std::size_t>::max()),
      std::invalid_argument);
  EXPECT_THROW(spindle::deque_owner<int>(deque_order::fifo, (std::size_t{1} << 40) + 1),
               std::invalid_argument);
}

TEST(Deque, GrowsAndKeepsEveryItem) {
  for (auto order : {deque_order::lifo, deque_order::fifo}) {
    spindle::deque_owner<std::uint64_t> w(order, 1);
    auto s = w.stealer();
    // Steal some so that the live range wraps around the buffer before it grows.
    std::uint64_t next_stolen = 0;
    for (std::uint64_t i = 0; i < 1000; ++i) {
      w.push(i);
      if (i % 3 == 0) {
        auto r = s.steal();
        ASSERT_TRUE(r);
        EXPECT_EQ(r.value, next_stolen++);
      }
    }
    EXPECT_EQ(w.size(), 1000 - next_stolen);
    EXPECT_GE(w.capacity(), w.size());
    EXPECT_EQ(w.capacity() & (w.capacity() - 1), 0U);
    std::vector<bool> seen(1000, false);
    for (std::uint64_t i = 0; i < next_stolen; ++i) {
      seen[i] = true;
    }
    while (auto v = w.pop()) {
      ASSERT_LT(*v, 1000U);
      EXPECT_FALSE(seen[*v]);
      seen[*v] = true;
    }
    for (std::uint64_t i = 0; i < 1000; ++i) {
      EXPECT_TRUE(seen[i]) << i;
    }
  }
}

TEST(Deque, StealBatchAndPopMovesAboutHalf) {
  for (auto order : {deque_order::lifo, deque_order::fifo}) {
    spindle::deque_owner<int> victim(order);
    for (int i = 0; i < 10; ++i) {
      victim.push(i);
    }
    spindle::deque_owner<int> mine(deque_order::fifo);
    auto r = victim.stealer().steal_batch_and_pop(mine);
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value, 0);  // the oldest is returned
    EXPECT_EQ(mine.size(), 4U);
    for (int i = 1; i <= 4; ++i) {
      EXPECT_EQ(mine.pop(), i);  // the rest, oldest first
    }
    EXPECT_EQ(victim.size(), 5U);
  }
}

TEST(Deque, StealBatchIsCappedAndGrowsTheDestination) {
  for (auto order : {deque_order::lifo, deque_order::fifo}) {
    spindle::deque_owner<int> victim(order);
    for (int i = 0; i < 1000; ++i) {
      victim.push(i);
    }
    spindle::deque_owner<int> mine(deque_order::lifo, 1);
    mine.push(-1);
    auto r = victim.stealer().steal_batch_and_pop(mine);
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value, 0);
    EXPECT_EQ(mine.size(), 33U);  // 32 moved, plus the item it held
    EXPECT_EQ(victim.size(), 1000U - 33U);
    for (int i = 32; i >= 1; --i) {
      EXPECT_EQ(mine.pop(), i);
    }
    EXPECT_EQ(mine.pop(), -1);
  }
}

TEST(Deque, StealBatchFromOneItemReturnsItAndMovesNothing) {
  spindle::deque_owner<int> victim;
  spindle::deque_owner<int> mine;
  auto s = victim.stealer();
  EXPECT_TRUE(s.steal_batch_and_pop(mine).is_empty());
  victim.push(5);
  auto r = s.steal_batch_and_pop(mine);
  EXPECT_EQ(r.value, 5);
  EXPECT_TRUE(mine.empty());
  EXPECT_TRUE(victim.empty());
}

// steal_batch hands the batch to the caller: the oldest items, about half of them, at most as
// many as the span holds; the rest stays in the victim, where the owner pops it as before.
TEST(Deque, StealBatchWritesAboutHalfIntoTheSpan) {
  for (auto order : {deque_order::lifo, deque_order::fifo}) {
    spindle::deque_owner<int> victim(order);
    for (int i = 0; i < 10; ++i) {
      victim.push(i);
    }
    std::array<int, 8> out{};
    auto const r = victim.stealer().steal_batch(out);
    ASSERT_TRUE(r);
    ASSERT_EQ(r.count, 5U);  // half of 10
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(out[static_cast<std::size_t>(i)], i);  // oldest first
    }
    EXPECT_EQ(victim.size(), 5U);
    EXPECT_EQ(victim.pop(), order == deque_order::lifo ? 9 : 5);
  }
}

TEST(Deque, StealBatchTakesAtMostTheSpansSize) {
  for (auto order : {deque_order::lifo, deque_order::fifo}) {
    spindle::deque_owner<int> victim(order);
    for (int i = 0; i < 1000; ++i) {
      victim.push(i);
    }
    auto thief = victim.stealer();
    std::array<int, 3> three{};
    auto r = thief.steal_batch(three);
    ASSERT_TRUE(r);
    EXPECT_EQ(r.count, 3U);
    EXPECT_EQ(three, (std::array<int, 3>{0, 1, 2}));
    // A span of one is a single steal; a span far larger than half takes half (rounded up).
    int one = -1;
    r = thief.steal_batch(std::span(&one, 1));
    EXPECT_EQ(r.count, 1U);
    EXPECT_EQ(one, 3);
    std::vector<int> large(5000, -1);
    r = thief.steal_batch(large);
    EXPECT_EQ(r.count, 498U);  // (996 + 1) / 2
    EXPECT_EQ(large[0], 4);
    EXPECT_EQ(large[497], 501);
    EXPECT_EQ(large[498], -1);  // past the count the span is untouched here (LIFO or a won claim)
    EXPECT_EQ(victim.size(), 1000U - 502U);
  }
}

TEST(Deque, StealBatchFromAnEmptyDequeTakesNothing) {
  spindle::deque_owner<int> victim;
  auto s = victim.stealer();
  std::array<int, 4> out{};
  auto r = s.steal_batch(out);
  EXPECT_TRUE(r.is_empty());
  EXPECT_EQ(r.count, 0U);
  victim.push(7);
  r = s.steal_batch(out);
  ASSERT_TRUE(r.is_stolen());
  EXPECT_EQ(r.count, 1U);
  EXPECT_EQ(out[0], 7);
  EXPECT_TRUE(victim.empty());
  EXPECT_TRUE(s.steal_batch(out).is_empty());
}

TEST(Deque, StealersOutliveTheWorker) {
  std::optional<spindle::stealer<int>> s;
  {
    spindle::deque_owner<int> w(deque_order::lifo, 1);
    for (int i = 0; i < 100; ++i) {
      w.push(i);  // grows several times: retired buffers die with the deque
    }
    s.emplace(w.stealer());
  }
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(s->steal().value, i);
  }
  EXPECT_TRUE(s->steal().is_empty());
}

// Thousands of random operations from one thread, compared with a std::deque model.
TEST(Deque, RandomOperationsMatchAModel) {
  for (auto order : {deque_order::lifo, deque_order::fifo}) {
    std::mt19937_64 rng(order == deque_order::lifo ? 1 : 2);
    spindle::deque_owner<std::uint64_t> w(order, 2);
    spindle::deque_owner<std::uint64_t> other(deque_order::lifo, 1);
    auto s = w.stealer();
    std::deque<std::uint64_t> model;
    std::deque<std::uint64_t> other_model;
    std::uint64_t next = 0;
    for (int op = 0; op < 20000; ++op) {
      switch (rng() % 9) {
        case 0:
        case 1:
        case 2:
          w.push(next);
          model.push_back(next++);
          break;
        case 3:
        case 4: {
          auto got = w.pop();
          if (model.empty()) {
            ASSERT_EQ(got, std::nullopt);
          } else if (order == deque_order::lifo) {
            ASSERT_EQ(got, model.back());
            model.pop_back();
          } else {
            ASSERT_EQ(got, model.front());
            model.pop_front();
          }
          break;
        }
        case 5:
        case 6: {
          auto got = s.steal();
          if (model.empty()) {
            ASSERT_TRUE(got.is_empty());
          } else {
            ASSERT_TRUE(got.is_stolen());
            ASSERT_EQ(got.value, model.front());
            model.pop_front();
          }
          break;
        }
        case 7: {
          std::array<std::uint64_t, 40> out{};
          auto const n = 1 + static_cast<std::size_t>(rng() % out.size());
          auto const got = s.steal_batch(std::span(out.data(), n));
          if (model.empty()) {
            ASSERT_TRUE(got.is_empty());
            ASSERT_EQ(got.count, 0U);
            break;
          }
          ASSERT_TRUE(got.is_stolen());
          ASSERT_EQ(got.count, std::min((model.size() + 1) / 2, n));
          for (std::size_t i = 0; i < got.count; ++i) {
            ASSERT_EQ(out[i], model.front());
            model.pop_front();
          }
          break;
        }
        default: {
          auto got = s.steal_batch_and_pop(other);
          if (model.empty()) {
            ASSERT_TRUE(got.is_empty());
            break;
          }
          ASSERT_TRUE(got.is_stolen());
          auto const claim = std::min<std::size_t>((model.size() + 1) / 2, 33);
          ASSERT_EQ(got.value, model.front());
          model.pop_front();
          for (std::size_t i = 1; i < claim; ++i) {
            other_model.push_back(model.front());
            model.pop_front();
          }
          while (!other_model.empty()) {
            ASSERT_EQ(other.pop(), other_model.back());
            other_model.pop_back();
          }
          ASSERT_EQ(other.pop(), std::nullopt);
          break;
        }
      }
      ASSERT_EQ(w.size(), model.size());
      ASSERT_EQ(s.size(), model.size());
    }
  }
}

}  // namespace

// The 0.1.0 names deprecated for 1.0 still work (and warn): the owner handle's former name is
// the same type, and the former success status and helper are the new ones.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static_assert(std::is_same_v<spindle::worker<int*>, spindle::deque_owner<int*>>);
static_assert(spindle::steal_status::success == spindle::steal_status::stolen);
TEST(Deque, DeprecatedSuccessNamesStillWork) {
  spindle::deque_owner<int*> owner;
  int item = 0;
  owner.push(&item);
  auto const r = owner.stealer().steal();
  EXPECT_TRUE(r.is_success());
  EXPECT_EQ(r.status, spindle::steal_status::success);
  spindle::steal_batch_result const none{spindle::steal_status::empty, 0};
  EXPECT_FALSE(none.is_success());
}
#pragma GCC diagnostic pop

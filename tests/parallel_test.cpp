// Tests for spindle/parallel.hpp: parallel_for and parallel_reduce.

#include <spindle/parallel.hpp>

#include "support/sizes.hpp"
#include "support/tracked.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t big = 1'000'000 / spindle_test::tsan_divisor<std::size_t>(50);

/// A partial sum that can be moved but neither copied nor assigned, and counts its instances
/// (through spindle_test::tracked, which also aborts on a double destroy).
class partial_sum {
 public:
  explicit partial_sum(std::uint64_t sum) : sum_(sum), token_(sum) {}
  partial_sum(partial_sum&&) noexcept = default;
  auto operator=(partial_sum&&) -> partial_sum& = delete;
  ~partial_sum() = default;

  [[nodiscard]] auto sum() const noexcept -> std::uint64_t { return sum_; }

 private:
  std::uint64_t sum_;
  spindle_test::tracked token_;
};

auto add(partial_sum a, partial_sum b) -> partial_sum {
  return partial_sum(a.sum() + b.sum());
}

/// Runs `fn` on a thread of its own and waits for it at most 20 s; a call still running then
/// is reported and the test binary exits: a loop that does not stop must fail, not stall CI.
template <class Fn>
void within_deadline(char const* what, Fn fn) {
  std::packaged_task<void()> task(std::move(fn));
  auto done = task.get_future();
  std::thread t(std::move(task));
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED: %s did not return within 20 s\n", what);
    std::_Exit(1);
  }
  t.join();
  done.get();
}

/// Counts the calls of a loop body (or map, or reduce) and throws at call `fail_at` (from 0).
struct counting_thrower {
  std::atomic<std::uint64_t>* calls;
  std::uint64_t fail_at;

  void tick() const {
    if (calls->fetch_add(1, std::memory_order_relaxed) == fail_at) {
      throw std::runtime_error("call " + std::to_string(fail_at));
    }
  }
};

/// How many calls a cancelled loop may make in all: the 1000 before the throw, then up to a
/// check interval (256) per running leaf, and what the other threads start while the
/// exception is being thrown. Far below the 10^8 of the short range.
constexpr std::uint64_t cancelled_call_bound = 1'000'000;

/// Runs `scenario(ex)` on executor{1} and executor{2}, from an outside thread and from inside a
/// worker, each under a deadline.
template <class Scenario>
void from_outside_and_inside(Scenario scenario) {
  for (std::size_t const workers : {std::size_t{1}, std::size_t{2}}) {
    SCOPED_TRACE(testing::Message() << "workers " << workers);
    spindle::executor ex{workers};
    within_deadline("the scenario from outside", [&] { scenario(ex, false); });
    within_deadline("the scenario in a worker",
                    [&] { ex.spawn([&] { scenario(ex, true); }).join(); });
  }
}

}  // namespace

TEST(Parallel, Example) {
  spindle::executor ex{2};
  std::vector<int> v(1000);
  spindle::parallel_for(ex, std::size_t{0}, v.size(),
                        [&](std::size_t i) { v[i] = static_cast<int>(i); });
  auto const sum = spindle::parallel_reduce(
      ex, std::size_t{0}, v.size(), std::int64_t{0},
      [&](std::size_t i) { return std::int64_t{v[i]}; },
      [](std::int64_t a, std::int64_t b) { return a + b; });
  EXPECT_EQ(sum, 999 * 1000 / 2);
}

TEST(Parallel, ForTouchesEveryIndexExactlyOnce) {
  spindle::executor ex{3};
  std::size_t const n = big / 10;
  auto hits = std::make_unique<std::atomic<std::uint8_t>[]>(n);
  spindle::parallel_for(ex, std::size_t{0}, n,
                        [&](std::size_t i) { hits[i].fetch_add(1, std::memory_order_relaxed); });
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(hits[i].load(), 1) << "index " << i;
  }
}

TEST(Parallel, ForWithGrainAndSignedRange) {
  spindle::executor ex{2};
  std::vector<std::atomic<int>> hits(2001);
  spindle::parallel_for(ex, -1000, 1001, 64,
                        [&](int i) { hits[static_cast<std::size_t>(i + 1000)].fetch_add(1); });
  for (auto const& h : hits) {
    ASSERT_EQ(h.load(), 1);
  }
}

// A grain at least as large as the range means one serial loop on the calling thread, even
// a grain past the largest signed index difference.
TEST(Parallel, GrainLargerThanTheRangeRunsOneSerialLoop) {
  spindle::executor ex{2};
  for (std::size_t const grain : {std::size_t{100}, std::numeric_limits<std::size_t>::max()}) {
    std::vector<int> order;
    auto const caller = std::this_thread::get_id();
    bool elsewhere = false;
    spindle::parallel_for(ex, 0, 100, grain, [&](int i) {
      elsewhere = elsewhere || std::this_thread::get_id() != caller;
      order.push_back(i);  // no lock needed: a single serial loop
    });
    EXPECT_FALSE(elsewhere) << "grain " << grain;
    ASSERT_EQ(order.size(), 100U);
    EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  }
}

// Without a grain, the grain is about n / (128 * workers), at least 1 and at most SIZE_MAX, so
// a loop makes at most about 256 leaves a worker (a leaf: one serial stretch of consecutive
// indices on one thread) however hungry the workers are; an explicit grain 1 may go finer.
TEST(Parallel, WithoutAGrainTheGrainIsAboutNOver128Workers) {
  spindle::executor ex{4};
  using spindle::detail::automatic_grain;
  EXPECT_EQ(automatic_grain(ex, 0, 100), 1U) << "short ranges keep grain 1";
  EXPECT_EQ(automatic_grain(ex, std::size_t{0}, std::size_t{1} << 20),
            (std::size_t{1} << 20) / 512);
  EXPECT_EQ(automatic_grain(ex, 10, 0), 1U) << "a reversed range";
  EXPECT_EQ(automatic_grain(ex, std::uint64_t{0}, std::numeric_limits<std::uint64_t>::max()),
            std::numeric_limits<std::uint64_t>::max() / 512);
  EXPECT_EQ(automatic_grain(ex, std::numeric_limits<std::int64_t>::min(),
                            std::numeric_limits<std::int64_t>::max()),
            std::numeric_limits<std::uint64_t>::max() / 512);

  constexpr std::size_t n = std::size_t{1} << 18;
  std::size_t const grain = automatic_grain(ex, std::size_t{0}, n);
  std::atomic<std::size_t> leaves{0};
  std::vector<std::atomic<int>> hits(n);
  auto const count_leaves = [&](std::size_t i) {
    thread_local std::size_t next = SIZE_MAX;  // the index after this thread's last one
    if (i != next) {
      leaves.fetch_add(1, std::memory_order_relaxed);
    }
    next = i + 1;
    hits[i].fetch_add(1, std::memory_order_relaxed);
  };
  spindle::parallel_for(ex, std::size_t{0}, n, count_leaves);
  // A range is split only while longer than the grain, so every leaf is longer than half of it.
  EXPECT_LE(leaves.load(), 2 * n / grain + 1);
  EXPECT_GE(leaves.load(), 1U);
  for (auto const& h : hits) {
    ASSERT_EQ(h.load(), 1);
  }
  auto const sum = spindle::parallel_reduce(
      ex, std::size_t{0}, n, std::uint64_t{0}, [](std::size_t i) { return std::uint64_t{i}; },
      std::plus<>{});
  EXPECT_EQ(sum, std::uint64_t{n} * (n - 1) / 2);
}

TEST(Parallel, ForOverIterators) {
  spindle::executor ex{2};
  std::vector<int> v(5000, 1);
  spindle::parallel_for(ex, v.begin(), v.end(), [](auto it) { *it += 1; });
  EXPECT_EQ(std::accumulate(v.begin(), v.end(), 0), 10000);
}

TEST(Parallel, EmptyAndReversedRangesDoNothing) {
  spindle::executor ex{2};
  int calls = 0;
  spindle::parallel_for(ex, 5, 5, [&](int) { ++calls; });
  spindle::parallel_for(ex, 5, 3, [&](int) { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(spindle::parallel_reduce(
                ex, 0, 0, 17, [](int i) { return i; }, std::plus<>{}),
            17);
}

TEST(Parallel, ReduceMatchesAccumulate) {
  spindle::executor ex{2};
  std::vector<std::uint64_t> v(big);
  std::iota(v.begin(), v.end(), std::uint64_t{1});
  auto const expected = std::accumulate(v.begin(), v.end(), std::uint64_t{7});
  auto const got = spindle::parallel_reduce(
      ex, std::size_t{0}, v.size(), std::uint64_t{7}, [&](std::size_t i) { return v[i]; },
      std::plus<>{});
  EXPECT_EQ(got, expected);
}

TEST(Parallel, ReduceKeepsOrderForNonCommutativeOperations) {
  spindle::executor ex{3};
  auto const s = spindle::parallel_reduce(
      ex, 0, 200, std::string(">"),
      [](int i) { return std::string(1, static_cast<char>('a' + i % 26)); },
      [](std::string a, std::string const& b) { return a + b; });
  std::string expected = ">";
  for (int i = 0; i < 200; ++i) {
    expected += static_cast<char>('a' + i % 26);
  }
  EXPECT_EQ(s, expected);
}

TEST(Parallel, ReduceNeedsOnlyAMoveConstructibleType) {
  // partial_sum has no assignment: the reduction only constructs and destroys partial results.
  static_assert(!std::is_move_assignable_v<partial_sum>);
  spindle::executor ex{3};
  auto const live_before = spindle_test::tracked::live();
  {
    auto const total = spindle::parallel_reduce(
        ex, std::uint64_t{1}, std::uint64_t{10'001}, partial_sum(5),
        [](std::uint64_t i) { return partial_sum(i); }, add);
    EXPECT_EQ(total.sum(), 5 + 10'000U * 10'001U / 2U);
  }
  EXPECT_EQ(spindle_test::tracked::live(), live_before);
}

TEST(Parallel, ReduceDestroysEveryPartialResultOnceWhenMapOrReduceThrows) {
  spindle::executor ex{3};
  auto const live_before = spindle_test::tracked::live();
  for (int const fail_at : {0, 1, 777, 4999}) {
    SCOPED_TRACE(fail_at);
    EXPECT_THROW(static_cast<void>(spindle::parallel_reduce(
                     ex, 0, 5000, partial_sum(0),
                     [fail_at](int i) {
                       if (i == fail_at) {
                         throw std::runtime_error("map");
                       }
                       return partial_sum(static_cast<std::uint64_t>(i));
                     },
                     add)),
                 std::runtime_error);
    EXPECT_EQ(spindle_test::tracked::live(), live_before);
    // Every index but the first is, in a leaf or at a join, the start of a right operand.
    std::atomic<int> reduces{0};
    EXPECT_THROW(static_cast<void>(spindle::parallel_reduce(
                     ex, 0, 5000, partial_sum(0),
                     [](int i) { return partial_sum(static_cast<std::uint64_t>(i) << 32U); },
                     [fail_at, &reduces](partial_sum a, partial_sum b) {
                       reduces.fetch_add(1, std::memory_order_relaxed);
                       if (b.sum() >> 32U == static_cast<std::uint64_t>(fail_at)) {
                         throw std::runtime_error("reduce");
                       }
                       return partial_sum(a.sum() + (b.sum() & 0xffff'ffffU) + 1);
                     })),
                 std::runtime_error);
    EXPECT_GT(reduces.load(), 0);
    EXPECT_EQ(spindle_test::tracked::live(), live_before);
  }
}

TEST(Parallel, NullFunctionPointersAreRejectedBeforeAnyWork) {
  spindle::executor ex{2};
  void (*null_body)(int) = nullptr;
  int (*null_map)(int) = nullptr;
  int (*null_reduce)(int, int) = nullptr;
  EXPECT_THROW(spindle::parallel_for(ex, 0, 100, null_body), std::invalid_argument);
  EXPECT_THROW(spindle::parallel_for(ex, 0, 0, 4, null_body), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(spindle::parallel_reduce(ex, 0, 100, 0, null_map, std::plus<>{})),
               std::invalid_argument);
  EXPECT_THROW(static_cast<void>(spindle::parallel_reduce(
                   ex, 0, 100, 0, [](int i) { return i; }, null_reduce)),
               std::invalid_argument);
}

TEST(Parallel, CalledFromInsideAWorker) {
  spindle::executor ex{2};
  auto h = ex.spawn([&] {
    std::atomic<int> n{0};
    spindle::parallel_for(ex, 0, 10000, [&](int) { n.fetch_add(1, std::memory_order_relaxed); });
    return n.load() + spindle::parallel_reduce(
                          ex, 0, 100, 0, [](int i) { return i; }, std::plus<>{});
  });
  EXPECT_EQ(h.join(), 10000 + 4950);
}

TEST(Parallel, ExceptionPropagatesAfterOtherBranchesFinish) {
  spindle::executor ex{2};
  EXPECT_THROW(spindle::parallel_for(ex, 0, 10000,
                                     [](int i) {
                                       if (i == 7777) {
                                         throw std::runtime_error("index 7777");
                                       }
                                     }),
               std::runtime_error);
}

// A body that throws at its 1000th call cancels the loop: over [0, 10^8) the other leaves do
// not run their tens of millions of calls, and over [0, UINT64_MAX) the loop returns at once,
// with either partitioner. On one worker, from inside it, the loop is sequential: exactly the
// 1000 calls of the first leaf run.
TEST(Parallel, ThrowingBodyCancelsTheRestOfTheLoop) {
  from_outside_and_inside([](spindle::executor& ex, bool inside) {
    std::atomic<std::uint64_t> calls{0};
    counting_thrower const body{&calls, 999};
    auto check = [&](std::uint64_t last, auto part) {
      calls = 0;
      EXPECT_THROW(
          spindle::parallel_for(
              ex, std::uint64_t{0}, last, 1, [&body](std::uint64_t) { body.tick(); }, part),
          std::runtime_error);
      EXPECT_LT(calls.load(), cancelled_call_bound) << "last " << last;
      if (inside && ex.size() == 1) {
        EXPECT_EQ(calls.load(), 1000U);
      }
    };
    for (std::uint64_t const last : {std::uint64_t{100'000'000}, ~std::uint64_t{0}}) {
      check(last, spindle::adaptive_partitioner{});
      check(last, spindle::static_partitioner{});
    }
    // The longest range of a signed type, through its default grain.
    calls = 0;
    EXPECT_THROW(spindle::parallel_for(ex, std::numeric_limits<std::int64_t>::min(),
                                       std::numeric_limits<std::int64_t>::max(),
                                       [&body](std::int64_t) { body.tick(); }),
                 std::runtime_error);
    EXPECT_LT(calls.load(), cancelled_call_bound);
  });
}

// The same for a reduction whose map, or whose reduce, throws at its 1000th call; every
// partial result is destroyed once (instance count).
TEST(Parallel, ThrowingMapOrReduceCancelsTheRestOfTheReduction) {
  auto const live_before = spindle_test::tracked::live();
  from_outside_and_inside([](spindle::executor& ex, bool) {
    std::atomic<std::uint64_t> calls{0};
    counting_thrower const thrower{&calls, 999};
    auto check = [&](std::uint64_t last, bool in_map, auto part) {
      calls = 0;
      EXPECT_THROW(static_cast<void>(spindle::parallel_reduce(
                       ex, std::uint64_t{0}, last, 1, partial_sum(0),
                       [&](std::uint64_t i) {
                         if (in_map) {
                           thrower.tick();
                         }
                         return partial_sum(i);
                       },
                       [&](partial_sum a, partial_sum b) {
                         if (!in_map) {
                           thrower.tick();
                         }
                         return add(std::move(a), std::move(b));
                       },
                       part)),
                   std::runtime_error);
      EXPECT_LT(calls.load(), cancelled_call_bound) << "last " << last << " in map " << in_map;
    };
    for (std::uint64_t const last : {std::uint64_t{100'000'000}, ~std::uint64_t{0}}) {
      for (bool const in_map : {true, false}) {
        check(last, in_map, spindle::adaptive_partitioner{});
        check(last, in_map, spindle::static_partitioner{});
      }
    }
  });
  EXPECT_EQ(spindle_test::tracked::live(), live_before);
}

// An exception in one loop cancels that loop only: a loop nested in its body that throws
// cancels itself, and the outer loop too once the exception leaves the outer body; a loop that
// catches its inner loop's exception keeps going.
TEST(Parallel, CancellationStaysWithinTheCallThatThrew) {
  spindle::executor ex{2};
  std::atomic<int> outer{0};
  std::atomic<int> caught{0};
  spindle::parallel_for(ex, 0, 64, [&](int i) {
    outer.fetch_add(1, std::memory_order_relaxed);
    try {
      spindle::parallel_for(ex, 0, 1000, [i](int j) {
        if (j == i) {
          throw std::runtime_error("inner");
        }
      });
    } catch (std::runtime_error const&) {
      caught.fetch_add(1, std::memory_order_relaxed);
    }
  });
  EXPECT_EQ(outer.load(), 64);
  EXPECT_EQ(caught.load(), 64);
  // The same loop right after a cancelled one runs in full: the flag is per call.
  std::atomic<int> n{0};
  EXPECT_THROW(spindle::parallel_for(ex, 0, 1000,
                                     [](int j) {
                                       if (j == 3) {
                                         throw std::runtime_error("first");
                                       }
                                     }),
               std::runtime_error);
  spindle::parallel_for(ex, 0, 1000, [&n](int) { n.fetch_add(1, std::memory_order_relaxed); });
  EXPECT_EQ(n.load(), 1000);
}

TEST(Parallel, AfterShutdownThrowsFromOutside) {
  spindle::executor ex{1};
  ex.shutdown();
  EXPECT_THROW(spindle::parallel_for(ex, 0, 10, [](int) {}), std::logic_error);
}

TEST(Parallel, OutsideCallerTakesPart) {
  // From outside the workers, the caller takes a guest slot and runs part of the loop itself.
  spindle::executor ex{2};
  auto const caller = std::this_thread::get_id();
  std::atomic<int> by_caller{0};
  std::atomic<int> total{0};
  spindle::parallel_for(ex, 0, 100000, [&](int) {
    total.fetch_add(1, std::memory_order_relaxed);
    if (std::this_thread::get_id() == caller) {
      by_caller.fetch_add(1, std::memory_order_relaxed);
    }
  });
  EXPECT_EQ(total.load(), 100000);
  EXPECT_GT(by_caller.load(), 0);
}

TEST(Parallel, ManyOutsideCallersAtOnce) {
  // More concurrent outside callers than guest slots: some run as guests, the others inject
  // their loop and sleep. Every index of every loop is touched exactly once.
  spindle::executor ex{2};
  constexpr int threads = 5;
  std::vector<std::vector<int>> hits(threads, std::vector<int>(big / 10, 0));
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&ex, &hits, t] {
      auto& h = hits[static_cast<std::size_t>(t)];
      spindle::parallel_for(ex, std::size_t{0}, h.size(), [&h](std::size_t i) { ++h[i]; });
    });
  }
  for (auto& t : ts) {
    t.join();
  }
  for (auto const& h : hits) {
    EXPECT_EQ(std::count(h.begin(), h.end(), 1), static_cast<std::ptrdiff_t>(h.size()));
  }
}

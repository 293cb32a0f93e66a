// Tests for the index ranges of spindle/parallel.hpp: parallel_for and parallel_reduce visit
// every index of every range of every integer type exactly once, however long the range, and
// a range whose length does not fit the index type (such as [INT_MIN, 0) for int) is no
// exception.
//
// Exactly-once is checked index by index on the full range of each 8- and 16-bit type and on
// windows at the ends of the wider ones. A full [INT_MIN, INT_MAX) loop would take 2^32 calls
// (seconds here, minutes under the sanitizers), and [0, UINT64_MAX) centuries; for those long
// ranges, the cut that parallel_for and parallel_reduce share (detail::for_each_leaf and
// detail::reduce_each_leaf), run with leaves that record their bounds instead of calling a
// body, shows where every serial stretch (leaf) starts: exactly at points of halving of the
// whole range, the leaves tiling it. The arithmetic behind the split points is checked
// directly at the limits of each type.

#include <spindle/parallel.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace {

template <class I>
using limits = std::numeric_limits<I>;

/// The offset of `i` from `first`, for any integer type of at most 64 bits: the difference is
/// taken modulo 2^64, which is exact for i >= first.
template <class I>
auto offset_of(I first, I i) -> std::uint64_t {
  return static_cast<std::uint64_t>(i) - static_cast<std::uint64_t>(first);
}

/// Runs parallel_for over [first, last), a range of at most a few hundred thousand indices,
/// and expects each index to be passed to f exactly once, and nothing outside the range.
template <class I>
void expect_for_visits_each_index_once(spindle::executor& ex, I first, I last) {
  std::uint64_t const n = offset_of(first, last);
  std::vector<std::atomic<std::uint32_t>> hits(n);
  std::atomic<std::uint64_t> outside{0};
  spindle::parallel_for(ex, first, last, [&](I i) {
    auto const k = offset_of(first, i);
    if (k >= n) {
      outside.fetch_add(1, std::memory_order_relaxed);
    } else {
      hits[k].fetch_add(1, std::memory_order_relaxed);
    }
  });
  EXPECT_EQ(outside.load(), 0U);
  for (std::uint64_t k = 0; k < n; ++k) {
    ASSERT_EQ(hits[k].load(), 1U) << "offset " << k << " of a range of " << n;
  }
}

/// What a reduction over a contiguous run of indices knows of it: its first and last index
/// and how many indices it covered.
template <class I>
struct run {
  I lo;
  I hi;
  std::uint64_t count;
};

/// Runs parallel_reduce over [first, last) with a reduce that checks that its two operands
/// are adjacent runs, left before right: the result covers the range exactly when every
/// index was mapped once and the order of the elements was kept.
template <class I>
void expect_reduce_covers_each_index_once(spindle::executor& ex, I first, I last) {
  std::atomic<std::uint64_t> gaps{0};
  auto const whole = spindle::parallel_reduce(
      ex, first, last, run<I>{first, first, 0},
      [](I i) {
        return run<I>{i, i, 1};
      },
      [&gaps](run<I> l, run<I> r) {
        if (l.count == 0) {
          return r;  // init, the empty run before first
        }
        if (offset_of(l.hi, r.lo) != 1) {
          gaps.fetch_add(1, std::memory_order_relaxed);
        }
        return run<I>{l.lo, r.hi, l.count + r.count};
      });
  EXPECT_EQ(gaps.load(), 0U);
  EXPECT_EQ(whole.lo, first);
  EXPECT_EQ(whole.hi, static_cast<I>(last - 1));
  EXPECT_EQ(whole.count, offset_of(first, last));
}

/// Whether `x` is where a serial stretch can start when [first, first + n) is split by
/// halving: first itself, or recursively such a point of the left half [first, first + n/2)
/// or of the right half [first + n/2, first + n).
template <class I>
auto is_halving_point(I first, std::uint64_t n, I x) -> bool {
  std::uint64_t const k = offset_of(first, x);
  std::uint64_t lo = 0;
  while (k != lo) {
    if (n < 2 || k < lo || k >= lo + n) {
      return false;
    }
    std::uint64_t const half = n / 2;
    if (k < lo + half) {
      n = half;
    } else {
      lo += half;
      n -= half;
    }
  }
  return true;
}

/// Records the serial stretches (leaves) [start, start + length) a loop is cut into.
template <class I>
struct leaf_starts {
  std::mutex mutex;
  std::vector<std::pair<I, std::uint64_t>> leaves;

  auto record(I start, std::uint64_t length) -> void {
    std::scoped_lock const lock(mutex);
    leaves.emplace_back(start, length);
  }

  /// The recorded starts, sorted; fails the test if a start was recorded twice or if the
  /// leaves do not tile [first, first + n) (each begins where the one before it ends).
  auto sorted(I first, std::uint64_t n) -> std::vector<I> {
    std::sort(leaves.begin(), leaves.end());
    std::vector<I> s;
    std::uint64_t next = 0;
    for (auto const& [start, length] : leaves) {
      EXPECT_EQ(offset_of(first, start), next) << "a gap, an overlap or a leaf twice";
      next += length;
      s.push_back(start);
    }
    EXPECT_EQ(next, n) << "the leaves do not cover the range";
    return s;
  }
};

/// Cuts a long [first, last) as parallel_for (or parallel_reduce) does, with leaves that record
/// their bounds, and checks that the leaves tile the range and start at the range's own
/// halving points, including the first index, the middle (first + n/2) and the middle of the
/// right half (which is reached through the length n - n/2).
template <class I>
void expect_long_range_splits_at_halving_points(spindle::executor& ex, I first, I last,
                                                bool reduce) {
  std::uint64_t const n = offset_of(first, last);
  leaf_starts<I> leaves;
  spindle::detail::failure_flag failed;
  if (reduce) {
    auto leaf = [&leaves](I lo, auto k) -> std::optional<int> {
      leaves.record(lo, k);
      return 1;
    };
    std::plus<> plus;
    auto const count = spindle::detail::reduce_each_leaf<int>(
        ex, first, last, 1, failed, leaf, plus, spindle::adaptive_partitioner{});
    EXPECT_EQ(count, static_cast<int>(leaves.leaves.size()));
  } else {
    auto leaf = [&leaves](I lo, auto k) { leaves.record(lo, k); };
    spindle::detail::for_each_leaf(ex, first, last, 1, failed, leaf,
                                   spindle::adaptive_partitioner{});
  }
  auto const starts = leaves.sorted(first, n);
  ASSERT_FALSE(starts.empty()) << "the loop called nothing";
  EXPECT_EQ(starts.front(), first);
  for (I const s : starts) {
    EXPECT_TRUE(first <= s && s < last) << s;
    EXPECT_TRUE(is_halving_point(first, n, s)) << s;
  }
  // ex has 2 workers: the splitter's budget (2 splits per worker) splits at least 3 levels.
  auto const middle = static_cast<I>(static_cast<std::uint64_t>(first) + n / 2);
  auto const right_middle = static_cast<I>(static_cast<std::uint64_t>(middle) + (n - n / 2) / 2);
  EXPECT_TRUE(std::binary_search(starts.begin(), starts.end(), middle)) << middle;
  EXPECT_TRUE(std::binary_search(starts.begin(), starts.end(), right_middle)) << right_middle;
}

}  // namespace

TEST(ParallelRange, Example) {
  // The whole range of a signed type, [INT16_MIN, INT16_MAX): 65535 indices, more than
  // INT16_MAX, each visited once.
  spindle::executor ex{2};
  std::vector<std::atomic<int>> hits(65536);
  spindle::parallel_for(ex, limits<std::int16_t>::min(), limits<std::int16_t>::max(),
                        [&](std::int16_t i) { hits[static_cast<std::size_t>(i + 32768)]++; });
  EXPECT_EQ(std::count_if(hits.begin(), hits.end() - 1, [](auto& h) { return h.load() == 1; }),
            65535);
  EXPECT_EQ(hits.back().load(), 0);  // INT16_MAX itself is `last`, outside [first, last)
}

TEST(ParallelRange, IndexTypesAreIntegersOtherThanBoolAndRandomAccessIterators) {
  static_assert(spindle::parallel_index<std::int8_t>);
  static_assert(spindle::parallel_index<char>);
  static_assert(spindle::parallel_index<char16_t>);
  static_assert(spindle::parallel_index<std::uint64_t>);
  static_assert(spindle::parallel_index<int*>);
  static_assert(spindle::parallel_index<std::vector<int>::iterator>);
  static_assert(!spindle::parallel_index<bool>);  // tests/compile_fail/parallel_for_bool_index
  static_assert(!spindle::parallel_index<double>);
}

TEST(ParallelRange, ForVisitsEveryIndexOfEachEightAndSixteenBitTypeOnce) {
  spindle::executor ex{3};
  expect_for_visits_each_index_once(ex, limits<std::int8_t>::min(), limits<std::int8_t>::max());
  expect_for_visits_each_index_once(ex, limits<std::uint8_t>::min(), limits<std::uint8_t>::max());
  expect_for_visits_each_index_once(ex, limits<char>::min(), limits<char>::max());
  expect_for_visits_each_index_once(ex, limits<std::int16_t>::min(), limits<std::int16_t>::max());
  expect_for_visits_each_index_once(ex, limits<std::uint16_t>::min(), limits<std::uint16_t>::max());
  expect_for_visits_each_index_once(ex, limits<char16_t>::min(), limits<char16_t>::max());
}

TEST(ParallelRange, ReduceCoversEveryIndexOfEachEightAndSixteenBitTypeInOrder) {
  spindle::executor ex{3};
  expect_reduce_covers_each_index_once(ex, limits<std::int8_t>::min(), limits<std::int8_t>::max());
  expect_reduce_covers_each_index_once(ex, limits<std::uint8_t>::min(),
                                       limits<std::uint8_t>::max());
  expect_reduce_covers_each_index_once(ex, limits<std::int16_t>::min(),
                                       limits<std::int16_t>::max());
  expect_reduce_covers_each_index_once(ex, limits<std::uint16_t>::min(),
                                       limits<std::uint16_t>::max());
}

TEST(ParallelRange, WindowsAtTheEndsOfWideTypesAndAcrossZero) {
  spindle::executor ex{3};
  constexpr int w = 1000;
  auto both = [&ex](auto first, auto last) {
    expect_for_visits_each_index_once(ex, first, last);
    expect_reduce_covers_each_index_once(ex, first, last);
  };
  both(limits<int>::max() - w, limits<int>::max());
  both(limits<int>::min(), limits<int>::min() + w);
  both(-w, w);
  both(limits<std::uint32_t>::max() - w, limits<std::uint32_t>::max());
  both(limits<std::int64_t>::max() - w, limits<std::int64_t>::max());
  both(limits<std::int64_t>::min(), limits<std::int64_t>::min() + w);
  both(std::int64_t{-w}, std::int64_t{w});
  both(limits<std::uint64_t>::max() - w, limits<std::uint64_t>::max());
}

TEST(ParallelRange, RangesLongerThanTheLargestIndexAreSplitAtTheirHalvingPoints) {
  spindle::executor ex{2};
  for (bool const reduce : {false, true}) {
    SCOPED_TRACE(reduce ? "parallel_reduce" : "parallel_for");
    expect_long_range_splits_at_halving_points(ex, limits<int>::min(), 0, reduce);
    expect_long_range_splits_at_halving_points(ex, -2'000'000'000, 2'000'000'000, reduce);
    expect_long_range_splits_at_halving_points(ex, limits<int>::min(), limits<int>::max(), reduce);
    expect_long_range_splits_at_halving_points(ex, std::uint64_t{0}, limits<std::uint64_t>::max(),
                                               reduce);
    expect_long_range_splits_at_halving_points(ex, limits<std::int64_t>::min(),
                                               limits<std::int64_t>::max(), reduce);
  }
}

TEST(ParallelRange, GrainOfSizeMaxRunsEvenTheLongestRangeAsOneSerialLoop) {
  spindle::executor ex{2};
  auto const caller = std::this_thread::get_id();
  std::vector<std::uint64_t> starts;
  bool elsewhere = false;
  // The body ends the loop by throwing at its first call; with one leaf, that is its start.
  EXPECT_THROW(spindle::parallel_for(ex, std::uint64_t{0}, limits<std::uint64_t>::max(),
                                     limits<std::size_t>::max(),
                                     [&](std::uint64_t i) {
                                       elsewhere = std::this_thread::get_id() != caller;
                                       starts.push_back(i);
                                       throw std::runtime_error("stop this leaf");
                                     }),
               std::runtime_error);
  EXPECT_EQ(starts, std::vector<std::uint64_t>{0});
  EXPECT_FALSE(elsewhere);
  leaf_starts<std::uint64_t> leaves;
  spindle::detail::failure_flag failed;
  auto leaf = [&leaves](std::uint64_t lo, auto k) { leaves.record(lo, k); };
  spindle::detail::for_each_leaf(ex, std::uint64_t{0}, limits<std::uint64_t>::max(),
                                 limits<std::size_t>::max(), failed, leaf,
                                 spindle::adaptive_partitioner{});
  EXPECT_EQ(leaves.sorted(0, limits<std::uint64_t>::max()), std::vector<std::uint64_t>{0});
}

TEST(ParallelRange, ReversedRangesAtTheLimitsAreEmpty) {
  spindle::executor ex{2};
  std::atomic<int> calls{0};
  auto count = [&calls](auto) { calls.fetch_add(1); };
  spindle::parallel_for(ex, limits<int>::max(), limits<int>::min(), count);
  spindle::parallel_for(ex, limits<std::int64_t>::max(), limits<std::int64_t>::min(), count);
  spindle::parallel_for(ex, limits<std::uint64_t>::max(), std::uint64_t{0}, count);
  spindle::parallel_for(ex, limits<std::int8_t>::max(), limits<std::int8_t>::min(), count);
  EXPECT_EQ(calls.load(), 0);
  EXPECT_EQ(
      spindle::parallel_reduce(
          ex, limits<int>::max(), limits<int>::min(), 5, [](int) { return 1; }, std::plus<>{}),
      5);
}

// The arithmetic behind the split points, at the limits of each type: the length of the whole
// range of a type is 2^N - 1 and is counted exactly; first + offset reaches every index,
// including the end of the range, without passing through an overflow.
TEST(ParallelRangeDetail, CountAndOffsetAreExactAtTheLimitsOfEachType) {
  using spindle::detail::index_at;
  using spindle::detail::index_count;
  auto check = [](auto first, auto last, std::uint64_t n) {
    EXPECT_EQ(index_count(first, last), n);
    EXPECT_EQ(index_count(last, first), 0U);
    EXPECT_EQ(index_at(first, n), last);
    EXPECT_EQ(index_at(first, n - 1), static_cast<decltype(first)>(last - 1));
    EXPECT_EQ(offset_of(first, index_at(first, n / 2)), n / 2);
  };
  check(limits<std::int8_t>::min(), limits<std::int8_t>::max(), 255);
  check(limits<std::uint16_t>::min(), limits<std::uint16_t>::max(), 65535);
  check(limits<int>::min(), 0, std::uint64_t{1} << 31);
  check(-2'000'000'000, 2'000'000'000, 4'000'000'000);
  check(limits<int>::min(), limits<int>::max(), (std::uint64_t{1} << 32) - 1);
  check(std::uint64_t{0}, limits<std::uint64_t>::max(), limits<std::uint64_t>::max());
  check(limits<std::int64_t>::min(), limits<std::int64_t>::max(), limits<std::uint64_t>::max());
  check(limits<std::int64_t>::min(), std::int64_t{1}, (std::uint64_t{1} << 63) + 1);
}

// Tests for the data-parallel loops and algorithms: parallel_reduce with a grain, the static
// and adaptive partitioners, the 2-D parallel_for (spindle/parallel.hpp), parallel_scan and
// parallel_sort (spindle/algorithms.hpp).
//
// What they prove: every index, cell and element is visited or kept exactly once, over empty,
// reversed, tiny (fewer indices than workers) and extreme ranges of the index types; the static
// partitioner cuts exactly the blocks it documents; the order of non-commutative operations is
// kept; exceptions propagate and lose nothing (instance-counted elements: a sort interrupted by
// a throwing comparator leaves a permutation of its elements); and everything works from
// outside threads, many at once, and nested inside the workers.
//
// The serial cutoffs of scan and sort are passed explicitly to their detail entry points in
// some tests, so that the parallel code paths also run on a handful of elements.

#include <spindle/algorithms.hpp>
#include <spindle/parallel.hpp>

#include "support/sizes.hpp"
#include "support/tracked.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

template <class I>
using limits = std::numeric_limits<I>;

constexpr std::size_t scale = spindle_test::tsan_divisor<std::size_t>(20);
constexpr std::size_t sizemax = limits<std::size_t>::max();

/// The offset of i from first, modulo 2^64: exact for first <= i.
template <class I>
auto offset_of(I first, I i) -> std::uint64_t {
  return static_cast<std::uint64_t>(i) - static_cast<std::uint64_t>(first);
}

/// Records the first index of each serial stretch (leaf) of a loop.
template <class I>
struct leaf_starts {
  std::mutex mutex;
  std::vector<I> starts;

  void record(I i) {
    std::scoped_lock const lock(mutex);
    starts.push_back(i);
  }

  auto sorted() -> std::vector<I> {
    std::scoped_lock const lock(mutex);
    std::vector<I> s = starts;
    std::sort(s.begin(), s.end());
    return s;
  }
};

/// The starts of the static partitioner's blocks of [first, first + n): `blocks` blocks, the
/// first n % blocks of them one longer.
template <class I>
auto static_starts(I first, std::uint64_t n, std::uint64_t blocks) -> std::vector<I> {
  std::vector<I> s;
  for (std::uint64_t b = 0; b < blocks; ++b) {
    s.push_back(static_cast<I>(static_cast<std::uint64_t>(first) + b * (n / blocks) +
                               std::min(b, n % blocks)));
  }
  return s;
}

/// Cuts [first, last) as parallel_for and as parallel_reduce (with `part`) do, through the
/// detail entries they share with the public ones (detail::for_each_leaf, reduce_each_leaf),
/// with leaves that record their start instead of calling a body; returns the leaf starts of
/// each.
template <class I, class P>
auto leaves_of(spindle::executor& ex, I first, I last, std::size_t grain, P part)
    -> std::pair<std::vector<I>, std::vector<I>> {
  leaf_starts<I> for_leaves;
  leaf_starts<I> reduce_leaves;
  spindle::detail::failure_flag failed;
  auto for_leaf = [&](I lo, auto) { for_leaves.record(lo); };
  spindle::detail::for_each_leaf(ex, first, last, grain, failed, for_leaf, part);
  auto reduce_leaf = [&](I lo, auto) -> std::optional<int> {
    reduce_leaves.record(lo);
    return 0;
  };
  std::plus<> plus;
  EXPECT_EQ(spindle::detail::reduce_each_leaf<int>(ex, first, last, grain, failed, reduce_leaf,
                                                   plus, part),
            0);
  return {for_leaves.sorted(), reduce_leaves.sorted()};
}

/// A contiguous run of indices, for reductions that check their operands are adjacent and in
/// order (the result spans the range exactly when each index was mapped once, in order).
struct run {
  std::int64_t lo;
  std::int64_t hi;  // last index, inclusive
  std::uint64_t count;
  bool ok;
};

auto join_runs(run const& l, run const& r) -> run {
  if (l.count == 0) {
    return r;
  }
  return {l.lo, r.hi, l.count + r.count, l.ok && r.ok && l.hi + 1 == r.lo};
}

/// A 2x2 matrix of integers modulo 2^64: multiplication is associative, not commutative.
struct mat {
  std::uint64_t a;
  std::uint64_t b;
  std::uint64_t c;
  std::uint64_t d;
  friend auto operator==(mat const&, mat const&) -> bool = default;
};

auto mul(mat const& x, mat const& y) -> mat {
  return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c,
          x.c * y.b + x.d * y.d};
}

auto make_mats(std::size_t n) -> std::vector<mat> {
  std::vector<mat> m(n);
  std::mt19937_64 rng(n);
  for (auto& x : m) {
    x = {rng() % 7, rng() % 7 + 1, rng() % 5, rng() % 3};
  }
  return m;
}

/// A copyable value that counts its live instances, for the scan (whose elements are copied).
struct counted {
  static auto live() -> std::atomic<std::int64_t>& {
    static std::atomic<std::int64_t> n{0};
    return n;
  }
  std::int64_t v = 0;
  counted() { live().fetch_add(1, std::memory_order_relaxed); }
  explicit counted(std::int64_t x) : v(x) { live().fetch_add(1, std::memory_order_relaxed); }
  counted(counted const& o) : v(o.v) { live().fetch_add(1, std::memory_order_relaxed); }
  auto operator=(counted const&) -> counted& = default;
  ~counted() { live().fetch_sub(1, std::memory_order_relaxed); }
};

/// A sortable, move-only element: a key to sort by and a tracked identity (its position in the
/// input), so a test can check that no element was lost or duplicated.
struct item {
  std::uint64_t key;
  spindle_test::tracked id;
};

auto make_items(std::size_t n, std::uint64_t distinct) -> std::vector<item> {
  std::vector<item> v;
  v.reserve(n);
  std::mt19937_64 rng(n + distinct);
  for (std::size_t i = 0; i < n; ++i) {
    v.push_back(item{rng() % distinct, spindle_test::tracked(i)});
  }
  return v;
}

/// Whether the items' identities are exactly 0 .. n-1, each once.
template <class Range>
auto is_permutation_of_identities(Range const& v) -> bool {
  std::vector<std::uint64_t> ids;
  for (auto const& x : v) {
    ids.push_back(x.id.id());
  }
  std::sort(ids.begin(), ids.end());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != i) {
      return false;
    }
  }
  return true;
}

/// A comparator that may throw (not noexcept: the sort takes its guarded leaf path) and, when
/// armed, throws at its `fail_at`-th call, counting calls across threads.
struct throwing_less {
  std::atomic<std::uint64_t>* calls;
  std::uint64_t fail_at;
  auto operator()(item const& x, item const& y) const -> bool {
    if (calls->fetch_add(1, std::memory_order_relaxed) == fail_at) {
      throw std::runtime_error("comparator");
    }
    return x.key < y.key;
  }
};

/// Input patterns for the sorts.
enum class pattern { random, sorted, reversed, equal, few, organ };

auto make_keys(std::size_t n, pattern p) -> std::vector<std::uint64_t> {
  std::vector<std::uint64_t> v(n);
  std::mt19937_64 rng(n * 7 + static_cast<std::size_t>(p));
  for (std::size_t i = 0; i < n; ++i) {
    switch (p) {
      case pattern::random:
        v[i] = rng();
        break;
      case pattern::sorted:
        v[i] = i;
        break;
      case pattern::reversed:
        v[i] = n - i;
        break;
      case pattern::equal:
        v[i] = 42;
        break;
      case pattern::few:
        v[i] = rng() % 4;
        break;
      case pattern::organ:
        v[i] = i < n / 2 ? i : n - i;
        break;
    }
  }
  return v;
}

constexpr pattern all_patterns[] = {pattern::random, pattern::sorted, pattern::reversed,
                                    pattern::equal,  pattern::few,    pattern::organ};

/// Checks that 2-D blocks tile [rows) x [cols) exactly: on the grid of every block boundary,
/// each cell is covered by exactly one block. Works for any extent, however large.
template <class I>
void expect_tiling(std::vector<spindle::blocked_range2d<I>> const& blocks,
                   spindle::blocked_range2d<I> const& range) {
  std::vector<I> rb{range.rows_first, range.rows_last};
  std::vector<I> cb{range.cols_first, range.cols_last};
  for (auto const& b : blocks) {
    ASSERT_TRUE(range.rows_first <= b.rows_first && b.rows_first < b.rows_last &&
                b.rows_last <= range.rows_last);
    ASSERT_TRUE(range.cols_first <= b.cols_first && b.cols_first < b.cols_last &&
                b.cols_last <= range.cols_last);
    rb.push_back(b.rows_first);
    rb.push_back(b.rows_last);
    cb.push_back(b.cols_first);
    cb.push_back(b.cols_last);
  }
  std::sort(rb.begin(), rb.end());
  rb.erase(std::unique(rb.begin(), rb.end()), rb.end());
  std::sort(cb.begin(), cb.end());
  cb.erase(std::unique(cb.begin(), cb.end()), cb.end());
  std::vector<int> cover((rb.size() - 1) * (cb.size() - 1), 0);
  for (auto const& b : blocks) {
    for (std::size_t r = 0; r + 1 < rb.size(); ++r) {
      for (std::size_t c = 0; c + 1 < cb.size(); ++c) {
        if (b.rows_first <= rb[r] && rb[r] < b.rows_last && b.cols_first <= cb[c] &&
            cb[c] < b.cols_last) {
          ++cover[r * (cb.size() - 1) + c];
        }
      }
    }
  }
  EXPECT_EQ(std::count(cover.begin(), cover.end(), 1), static_cast<std::ptrdiff_t>(cover.size()));
}

/// Runs the 2-D parallel_for over `range` with `part` and returns the blocks it passed.
template <class I, class P>
auto blocks_of(spindle::executor& ex, spindle::blocked_range2d<I> const& range, P part)
    -> std::vector<spindle::blocked_range2d<I>> {
  std::mutex m;
  std::vector<spindle::blocked_range2d<I>> blocks;
  spindle::parallel_for(
      ex, range,
      [&](spindle::blocked_range2d<I> const& b) {
        std::scoped_lock const lock(m);
        blocks.push_back(b);
      },
      part);
  return blocks;
}

}  // namespace

TEST(ParallelAlgorithms, Example) {
  spindle::executor ex{2};
  // A loop whose every index costs the same: one block per worker.
  std::vector<double> v(100'000);
  spindle::parallel_for(
      ex, std::size_t{0}, v.size(), [&](std::size_t i) { v[i] = 0.5 * static_cast<double>(i); },
      spindle::static_partitioner{});
  // A reduction that never splits below 4096 indices.
  double const sum = spindle::parallel_reduce(
      ex, std::size_t{0}, v.size(), 4096, 0.0, [&](std::size_t i) { return v[i]; }, std::plus<>{});
  EXPECT_DOUBLE_EQ(sum, 0.5 * 99'999.0 * 100'000.0 / 2);
  // A matrix-style loop: f gets a block of rows x columns.
  std::vector<int> grid(300 * 400, 0);
  spindle::parallel_for(ex, spindle::blocked_range2d<int>{0, 300, 0, 400, 16, 64},
                        [&](spindle::blocked_range2d<int> const& b) {
                          for (int r = b.rows_first; r < b.rows_last; ++r) {
                            for (int c = b.cols_first; c < b.cols_last; ++c) {
                              grid[static_cast<std::size_t>(r * 400 + c)] += r + c;
                            }
                          }
                        });
  EXPECT_EQ(grid[299 * 400 + 399], 299 + 399);
  // Prefix sums, then a sort.
  std::vector<std::int64_t> prefix(v.size());
  std::vector<std::int64_t> ones(v.size(), 1);
  spindle::parallel_scan(ex, ones.begin(), ones.end(), prefix.begin(), std::plus<>{});
  EXPECT_EQ(prefix.back(), 100'000);
  std::vector<std::uint64_t> keys = make_keys(100'000, pattern::random);
  spindle::parallel_sort(ex, keys.begin(), keys.end());
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
}

// ---- parallel_reduce with a grain ----

// Every grain, from 0 (counts as 1) to SIZE_MAX, gives the serial result, with both
// partitioners.
TEST(ParallelAlgorithms, ReduceWithAnyGrainMatchesAccumulate) {
  spindle::executor ex{3};
  std::size_t const n = 200'000 / scale;
  std::uint64_t const expected = 7 + std::uint64_t{n} * (n - 1) / 2;
  for (std::size_t const grain : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{4096},
                                  n - 1, n, n + 1, sizemax}) {
    SCOPED_TRACE(grain);
    auto map = [](std::size_t i) { return std::uint64_t{i}; };
    EXPECT_EQ(spindle::parallel_reduce(ex, std::size_t{0}, n, grain, std::uint64_t{7}, map,
                                       std::plus<>{}),
              expected);
    EXPECT_EQ(spindle::parallel_reduce(ex, std::size_t{0}, n, grain, std::uint64_t{7}, map,
                                       std::plus<>{}, spindle::static_partitioner{}),
              expected);
    EXPECT_EQ(spindle::parallel_reduce(ex, std::size_t{0}, n, grain, std::uint64_t{7}, map,
                                       std::plus<>{}, spindle::adaptive_partitioner{}),
              expected);
  }
}

// A grain at least the length of the range reduces every index on the calling thread, in order.
TEST(ParallelAlgorithms, ReduceGrainOfTheWholeRangeRunsSeriallyOnTheCaller) {
  spindle::executor ex{2};
  auto const caller = std::this_thread::get_id();
  for (std::size_t const grain : {std::size_t{300}, sizemax}) {
    bool elsewhere = false;
    std::string const s = spindle::parallel_reduce(
        ex, 0, 300, grain, std::string(">"),
        [&](int i) {
          elsewhere = elsewhere || std::this_thread::get_id() != caller;
          return std::string(1, static_cast<char>('a' + i % 26));
        },
        [](std::string a, std::string const& b) { return a + b; });
    EXPECT_FALSE(elsewhere);
    ASSERT_EQ(s.size(), 301U);
    EXPECT_EQ(s.substr(0, 4), ">abc");
  }
}

// The grain bounds splitting: no leaf of a reduction is shorter than half the grain, and with
// the grain of SIZE_MAX the longest range of uint64 is one leaf.
TEST(ParallelAlgorithms, ReduceGrainBoundsTheLeaves) {
  spindle::executor ex{2};
  // Adjacent leaf starts are at least grain / 2 apart (a range longer than the grain halves).
  auto const both = leaves_of(ex, 0, 100'000, 1000, spindle::adaptive_partitioner{});
  auto const& starts = both.second;
  ASSERT_FALSE(starts.empty());
  for (std::size_t k = 1; k < starts.size(); ++k) {
    EXPECT_GE(starts[k] - starts[k - 1], 500);
  }
  auto const whole = leaves_of(ex, std::uint64_t{0}, limits<std::uint64_t>::max(), sizemax,
                               spindle::adaptive_partitioner{});
  EXPECT_EQ(whole.second, std::vector<std::uint64_t>{0});
  EXPECT_EQ(whole.first, std::vector<std::uint64_t>{0});
}

// A reduction with a grain keeps the order of a non-commutative operation and maps each
// index once, on windows at the ends of int64 and with both partitioners.
TEST(ParallelAlgorithms, ReduceWithGrainKeepsOrderAtTheLimits) {
  spindle::executor ex{3};
  auto check = [&ex](std::int64_t first, std::int64_t last, std::size_t grain, auto part) {
    run const r = spindle::parallel_reduce(
        ex, first, last, grain, run{first, first, 0, true},
        [](std::int64_t i) {
          return run{i, i, 1, true};
        },
        [](run const& l, run const& rr) { return join_runs(l, rr); }, part);
    EXPECT_TRUE(r.ok);
    EXPECT_EQ(r.lo, first);
    EXPECT_EQ(r.hi, last - 1);
    EXPECT_EQ(r.count, offset_of(first, last));
  };
  for (std::size_t const grain : {std::size_t{0}, std::size_t{3}, std::size_t{100}, sizemax}) {
    check(limits<std::int64_t>::max() - 1000, limits<std::int64_t>::max(), grain,
          spindle::adaptive_partitioner{});
    check(limits<std::int64_t>::min(), limits<std::int64_t>::min() + 1000, grain,
          spindle::static_partitioner{});
    check(-500, 500, grain, spindle::static_partitioner{});
  }
}

// ---- partitioners ----

// The static partitioner cuts min(workers, ceil(n / grain)) blocks of equal length, the first
// n % blocks one longer, and runs each as one serial loop: the leaf starts are exactly the
// block starts, for parallel_for and parallel_reduce.
TEST(ParallelAlgorithms, StaticPartitionerCutsOneEqualBlockPerWorker) {
  spindle::executor ex{4};
  auto expect_blocks = [&ex](int n, std::size_t grain, std::uint64_t blocks) {
    SCOPED_TRACE(testing::Message() << "n " << n << " grain " << grain);
    auto const both = leaves_of(ex, 0, n, grain, spindle::static_partitioner{});
    auto const expected = static_starts(0, static_cast<std::uint64_t>(n), blocks);
    EXPECT_EQ(both.first, expected);
    EXPECT_EQ(both.second, expected);
  };
  expect_blocks(1000, 1, 4);
  expect_blocks(10, 1, 4);   // 3, 3, 2, 2
  expect_blocks(10, 4, 3);   // ceil(10 / 4) = 3 blocks: 4, 3, 3
  expect_blocks(10, 0, 4);   // grain 0 counts as 1
  expect_blocks(10, 10, 1);  // one grain: one serial loop
  expect_blocks(10, sizemax, 1);
  // Fewer indices than workers: one block per index.
  expect_blocks(3, 1, 3);
  expect_blocks(1, 1, 1);
}

// The static partitioner over the longest ranges of the 64-bit types: two workers, two blocks,
// split at the exact middle.
TEST(ParallelAlgorithms, StaticPartitionerOverTheLongestRanges) {
  spindle::executor ex{2};
  auto const s64 = leaves_of(ex, limits<std::int64_t>::min(), limits<std::int64_t>::max(), 1,
                             spindle::static_partitioner{});
  std::vector<std::int64_t> const expected_s{limits<std::int64_t>::min(), 0};
  EXPECT_EQ(s64.first, expected_s);
  EXPECT_EQ(s64.second, expected_s);
  auto const u64 = leaves_of(ex, std::uint64_t{0}, limits<std::uint64_t>::max(), 0,
                             spindle::static_partitioner{});
  std::vector<std::uint64_t> const expected_u{0, std::uint64_t{1} << 63};
  EXPECT_EQ(u64.first, expected_u);
  EXPECT_EQ(u64.second, expected_u);
  auto const i8 = leaves_of(ex, limits<std::int8_t>::min(), limits<std::int8_t>::max(), 1,
                            spindle::static_partitioner{});
  std::vector<std::int8_t> const expected_8{-128, 0};
  EXPECT_EQ(i8.first, expected_8);
}

// Every index once, with either partitioner, over iterators and integers; empty and reversed
// ranges call nothing.
TEST(ParallelAlgorithms, PartitionersVisitEveryIndexOnce) {
  spindle::executor ex{3};
  std::size_t const n = 100'000 / scale;
  std::vector<std::atomic<int>> hits(n);
  auto body = [&hits](std::size_t i) { hits[i].fetch_add(1, std::memory_order_relaxed); };
  spindle::parallel_for(ex, std::size_t{0}, n, body, spindle::static_partitioner{});
  spindle::parallel_for(ex, std::size_t{0}, n, 64, body, spindle::static_partitioner{});
  spindle::parallel_for(ex, std::size_t{0}, n, body, spindle::adaptive_partitioner{});
  spindle::parallel_for(ex, std::size_t{0}, n, 64, body, spindle::adaptive_partitioner{});
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(hits[i].load(), 4) << i;
  }
  std::vector<int> v(1000, 1);
  spindle::parallel_for(
      ex, v.begin(), v.end(), [](auto it) { *it += 1; }, spindle::static_partitioner{});
  EXPECT_EQ(std::accumulate(v.begin(), v.end(), 0), 2000);
  std::atomic<int> calls{0};
  auto count = [&calls](auto) { calls.fetch_add(1); };
  spindle::parallel_for(ex, 5, 5, count, spindle::static_partitioner{});
  spindle::parallel_for(ex, 5, 3, 2, count, spindle::static_partitioner{});
  spindle::parallel_for(ex, limits<std::int64_t>::max(), limits<std::int64_t>::min(), count,
                        spindle::static_partitioner{});
  EXPECT_EQ(calls.load(), 0);
  EXPECT_EQ(
      spindle::parallel_reduce(
          ex, 9, 3, 0, 17, [](int i) { return i; }, std::plus<>{}, spindle::static_partitioner{}),
      17);
}

// An exception from a static block propagates after the other blocks have returned (each
// skipped, or stopped early by the cancellation); the partial results of a reduction are each
// destroyed once.
TEST(ParallelAlgorithms, StaticPartitionerPropagatesExceptions) {
  spindle::executor ex{3};
  std::atomic<int> done{0};
  EXPECT_THROW(spindle::parallel_for(
                   ex, 0, 3000,
                   [&](int i) {
                     if (i == 1500) {
                       throw std::runtime_error("block");
                     }
                     done.fetch_add(1);
                   },
                   spindle::static_partitioner{}),
               std::runtime_error);
  // The middle block stops at its 501st index; the other two run, stop early or are skipped.
  EXPECT_GE(done.load(), 500);
  EXPECT_LE(done.load(), 1000 + 500 + 1000);
  auto const live = spindle_test::tracked::live();
  EXPECT_THROW(static_cast<void>(spindle::parallel_reduce(
                   ex, 0, 3000, 1, spindle_test::tracked(0),
                   [](int i) {
                     if (i == 2999) {
                       throw std::runtime_error("map");
                     }
                     return spindle_test::tracked(static_cast<std::uint64_t>(i));
                   },
                   [](spindle_test::tracked a, spindle_test::tracked b) {
                     return spindle_test::tracked(a.id() + b.id());
                   },
                   spindle::static_partitioner{})),
               std::runtime_error);
  EXPECT_EQ(spindle_test::tracked::live(), live);
}

// Both partitioners from a worker (nested in another loop) and from several outside threads
// at once, more of them than guest slots.
TEST(ParallelAlgorithms, PartitionersNestedAndFromOutsideThreads) {
  spindle::executor ex{2};
  std::vector<std::atomic<int>> hits(64 * 100);
  spindle::parallel_for(ex, 0, 64, [&](int outer) {
    spindle::parallel_for(
        ex, 0, 100,
        [&](int inner) { hits[static_cast<std::size_t>(outer * 100 + inner)].fetch_add(1); },
        spindle::static_partitioner{});
  });
  EXPECT_EQ(std::count_if(hits.begin(), hits.end(), [](auto& h) { return h.load() == 1; }),
            64 * 100);
  std::vector<std::thread> ts;
  std::vector<std::uint64_t> sums(6);
  for (std::size_t t = 0; t < sums.size(); ++t) {
    ts.emplace_back([&ex, &sums, t] {
      sums[t] = spindle::parallel_reduce(
          ex, std::uint64_t{0}, std::uint64_t{10'000}, t, std::uint64_t{0},
          [](std::uint64_t i) { return i; }, std::plus<>{}, spindle::static_partitioner{});
    });
  }
  for (auto& t : ts) {
    t.join();
  }
  for (auto const s : sums) {
    EXPECT_EQ(s, 10'000U * 9'999U / 2U);
  }
}

// ---- 2-D parallel_for ----

// The blocks tile the rectangle: every cell once, with either partitioner and any grains; the
// static partitioner passes at most one block per worker, each at least a grain wide in each
// dimension unless it ends the dimension.
TEST(ParallelAlgorithms, TwoDimensionalBlocksTileTheRectangle) {
  spindle::executor ex{4};
  int const rows = 97;
  int const cols = 131;
  for (std::size_t const rg :
       {std::size_t{0}, std::size_t{1}, std::size_t{8}, std::size_t{97}, sizemax}) {
    for (std::size_t const cg : {std::size_t{1}, std::size_t{16}, std::size_t{1000}}) {
      SCOPED_TRACE(testing::Message() << "grains " << rg << " x " << cg);
      spindle::blocked_range2d<int> const range{0, rows, 0, cols, rg, cg};
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(rows * cols));
      auto touch = [&](spindle::blocked_range2d<int> const& b) {
        EXPECT_EQ(b.row_grain, rg);
        for (int r = b.rows_first; r < b.rows_last; ++r) {
          for (int c = b.cols_first; c < b.cols_last; ++c) {
            hits[static_cast<std::size_t>(r * cols + c)].fetch_add(1, std::memory_order_relaxed);
          }
        }
      };
      spindle::parallel_for(ex, range, touch);
      spindle::parallel_for(ex, range, touch, spindle::static_partitioner{});
      EXPECT_EQ(std::count_if(hits.begin(), hits.end(), [](auto& h) { return h.load() == 2; }),
                rows * cols);
      auto const adaptive = blocks_of(ex, range, spindle::adaptive_partitioner{});
      expect_tiling(adaptive, range);
      auto const fixed = blocks_of(ex, range, spindle::static_partitioner{});
      expect_tiling(fixed, range);
      EXPECT_LE(fixed.size(), 4U);
      std::size_t const rgrain = rg == 0 ? 1 : rg;
      for (auto const& b : fixed) {
        EXPECT_TRUE(static_cast<std::size_t>(b.rows_last - b.rows_first) >= rgrain ||
                    b.rows_last == rows);
        EXPECT_TRUE(static_cast<std::size_t>(b.cols_last - b.cols_first) >= cg ||
                    b.cols_last == cols);
      }
      // A dimension no longer than its grain is never split.
      for (auto const& b : adaptive) {
        if (rgrain >= rows) {
          EXPECT_EQ(b.rows_last - b.rows_first, rows);
        }
        if (cg >= cols) {
          EXPECT_EQ(b.cols_last - b.cols_first, cols);
        }
      }
    }
  }
}

// Static 2-D: exactly one block per worker when the rectangle has the grains for it, fewer
// (one per cell) when it has fewer cells than workers.
TEST(ParallelAlgorithms, TwoDimensionalStaticBlockCount) {
  spindle::executor ex{4};
  EXPECT_EQ(
      blocks_of(ex, spindle::blocked_range2d<int>{0, 100, 0, 100}, spindle::static_partitioner{})
          .size(),
      4U);
  EXPECT_EQ(blocks_of(ex, spindle::blocked_range2d<int>{0, 1, 0, 3}, spindle::static_partitioner{})
                .size(),
            3U);
  EXPECT_EQ(blocks_of(ex, spindle::blocked_range2d<int>{0, 1, 0, 1}, spindle::static_partitioner{})
                .size(),
            1U);
  EXPECT_EQ(blocks_of(ex, spindle::blocked_range2d<int>{0, 2, 0, 1000, 1, 1000},
                      spindle::static_partitioner{})
                .size(),
            2U);
}

// 0 rows, 0 columns, or a reversed dimension: no call.
TEST(ParallelAlgorithms, TwoDimensionalEmptyOrReversedCallsNothing) {
  spindle::executor ex{2};
  std::atomic<int> calls{0};
  auto count = [&calls](spindle::blocked_range2d<int> const&) { calls.fetch_add(1); };
  for (auto const& r :
       {spindle::blocked_range2d<int>{0, 0, 0, 10}, spindle::blocked_range2d<int>{0, 10, 5, 5},
        spindle::blocked_range2d<int>{10, 0, 0, 10}, spindle::blocked_range2d<int>{0, 10, 10, 0},
        spindle::blocked_range2d<int>{limits<int>::max(), limits<int>::min(), 0, 10, 0, 0}}) {
    spindle::parallel_for(ex, r, count);
    spindle::parallel_for(ex, r, count, spindle::static_partitioner{});
  }
  EXPECT_EQ(calls.load(), 0);
}

// The longest rectangles of int64 and uint8 are tiled exactly (the blocks are recorded, not
// iterated), with both partitioners; iterators work as 2-D indices too.
TEST(ParallelAlgorithms, TwoDimensionalExtremeRanges) {
  spindle::executor ex{3};
  spindle::blocked_range2d<std::int64_t> const huge{limits<std::int64_t>::min(),
                                                    limits<std::int64_t>::max(),
                                                    limits<std::int64_t>::min(),
                                                    limits<std::int64_t>::max(),
                                                    1,
                                                    1};
  expect_tiling(blocks_of(ex, huge, spindle::adaptive_partitioner{}), huge);
  auto const fixed = blocks_of(ex, huge, spindle::static_partitioner{});
  EXPECT_EQ(fixed.size(), 3U);
  expect_tiling(fixed, huge);
  spindle::blocked_range2d<std::uint8_t> const bytes{0, 255, 0, 255, 0, 0};
  expect_tiling(blocks_of(ex, bytes, spindle::adaptive_partitioner{}), bytes);
  expect_tiling(blocks_of(ex, bytes, spindle::static_partitioner{}), bytes);
  std::vector<int> v(50 * 40, 0);
  using it = std::vector<int>::iterator;
  spindle::parallel_for(
      ex, spindle::blocked_range2d<it>{v.begin(), v.begin() + 50, v.begin(), v.begin() + 40},
      [&v](spindle::blocked_range2d<it> const& b) {
        for (auto r = b.rows_first; r != b.rows_last; ++r) {
          for (auto c = b.cols_first; c != b.cols_last; ++c) {
            ++v[static_cast<std::size_t>((r - v.begin()) * 40 + (c - v.begin()))];
          }
        }
      });
  EXPECT_EQ(std::count(v.begin(), v.end(), 1), 50 * 40);
}

// An exception from one block propagates after the others finish; nested 2-D loops in workers
// and 2-D loops from outside threads all cover their rectangles.
TEST(ParallelAlgorithms, TwoDimensionalExceptionsNestingAndOutsideThreads) {
  spindle::executor ex{2};
  spindle::blocked_range2d<int> const range{0, 64, 0, 64};
  EXPECT_THROW(spindle::parallel_for(ex, range,
                                     [](spindle::blocked_range2d<int> const& b) {
                                       if (b.rows_first <= 40 && 40 < b.rows_last &&
                                           b.cols_first <= 3 && 3 < b.cols_last) {
                                         throw std::runtime_error("cell 40, 3");
                                       }
                                     }),
               std::runtime_error);
  std::atomic<int> cells{0};
  auto count = [&cells](spindle::blocked_range2d<int> const& b) {
    cells.fetch_add((b.rows_last - b.rows_first) * (b.cols_last - b.cols_first));
  };
  spindle::parallel_for(ex, 0, 10, [&](int) { spindle::parallel_for(ex, range, count); });
  EXPECT_EQ(cells.load(), 10 * 64 * 64);
  cells = 0;
  std::vector<std::thread> ts;
  for (int t = 0; t < 5; ++t) {
    ts.emplace_back(
        [&] { spindle::parallel_for(ex, range, count, spindle::static_partitioner{}); });
  }
  for (auto& t : ts) {
    t.join();
  }
  EXPECT_EQ(cells.load(), 5 * 64 * 64);
}

// A block that throws cancels the blocks not yet started. On one worker, from inside it, the
// loop is sequential: the first block throws and no other runs. On two, from outside and from
// a worker, the blocks already running finish (each at most 1/8 of the rectangle: the
// splitter halves at least three times) and the others are skipped, so well under half the
// cells are visited; before cancellation every other block ran (7/8 or more).
// The call is cancelled when the exception reaches the loop's handler, a while after the
// throw (unwinding, or a preempted thrower on a loaded machine), and a block that starts in
// that window runs: so every other block waits for the throw and then 20 ms before it
// visits anything. Half the cells would take four blocks started in a window of 60 ms or more.
TEST(ParallelAlgorithms, TwoDimensionalThrowingBlockCancelsTheBlocksNotStarted) {
  spindle::blocked_range2d<int> const range{0, 1024, 0, 1024};
  auto scenario = [&range](spindle::executor& ex) -> std::pair<int, std::int64_t> {
    std::atomic<int> calls{0};
    std::atomic<std::int64_t> cells{0};
    std::atomic<std::int64_t> odd{0};
    std::atomic<bool> thrown{false};
    // Every block but the first visits its cells one row at a time (a block takes a while).
    auto body = [&](spindle::blocked_range2d<int> const& b) {
      if (calls.fetch_add(1) == 0) {
        thrown = true;
        throw std::runtime_error("first block");
      }
      while (!thrown) {
        std::this_thread::yield();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      for (int r = b.rows_first; r < b.rows_last; ++r) {
        std::int64_t row_odd = 0;
        for (int c = b.cols_first; c < b.cols_last; ++c) {
          row_odd += (r ^ c) & 1;
        }
        odd.fetch_add(row_odd, std::memory_order_relaxed);
        cells.fetch_add(b.cols_last - b.cols_first, std::memory_order_relaxed);
      }
    };
    EXPECT_THROW(spindle::parallel_for(ex, range, body), std::runtime_error);
    return {calls.load(), cells.load()};
  };
  spindle::executor one{1};
  auto const [calls_one, cells_one] = one.spawn([&] { return scenario(one); }).join();
  EXPECT_EQ(calls_one, 1);
  EXPECT_EQ(cells_one, 0);
  spindle::executor two{2};
  EXPECT_LT(scenario(two).second, 1024 * 1024 / 2);
  EXPECT_LT(two.spawn([&] { return scenario(two); }).join().second, 1024 * 1024 / 2);
}

// ---- parallel_scan ----

// The public scan equals std::inclusive_scan at every size around its cutoffs, with and
// without init, in place and into another container.
TEST(ParallelAlgorithms, ScanMatchesInclusiveScan) {
  spindle::executor ex{3};
  std::size_t const block = spindle::detail::scan_block_min;
  for (std::size_t const n :
       {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{100},
        2 * block - 1, 2 * block, 2 * block + 1, std::size_t{1'000'003} / scale}) {
    SCOPED_TRACE(n);
    std::vector<std::int64_t> in(n);
    std::mt19937_64 rng(n);
    for (auto& x : in) {
      x = static_cast<std::int64_t>(rng() % 1000) - 500;
    }
    std::vector<std::int64_t> expected(n);
    std::inclusive_scan(in.begin(), in.end(), expected.begin());
    std::vector<std::int64_t> out(n, -1);
    auto const end = spindle::parallel_scan(ex, in.begin(), in.end(), out.begin(), std::plus<>{});
    EXPECT_EQ(end, out.end());
    EXPECT_EQ(out, expected);
    std::inclusive_scan(in.begin(), in.end(), expected.begin(), std::plus<>{}, std::int64_t{77});
    spindle::parallel_scan(ex, in.begin(), in.end(), out.begin(), std::plus<>{}, std::int64_t{77});
    EXPECT_EQ(out, expected);
    spindle::parallel_scan(ex, in.begin(), in.end(), in.begin(), std::plus<>{}, std::int64_t{77});
    EXPECT_EQ(in, expected);  // in place
  }
}

// The parallel path on tiny inputs (block length 1, so n < workers makes n blocks of one) and
// a non-commutative operation: 2x2 matrix products keep their order, strings concatenate.
TEST(ParallelAlgorithms, ScanKeepsOrderOnTinyInputsAndNonCommutativeOps) {
  spindle::executor ex{4};
  auto op = [](mat const& x, mat const& y) { return mul(x, y); };
  for (std::size_t n = 0; n <= 70; ++n) {
    SCOPED_TRACE(n);
    auto const in = make_mats(n);
    std::vector<mat> expected(n);
    std::inclusive_scan(in.begin(), in.end(), expected.begin(), op);
    std::vector<mat> out(n);
    spindle::detail::scan<mat>(ex, in.begin(), n, out.begin(), op, static_cast<mat const*>(nullptr),
                               1);
    EXPECT_EQ(out, expected);
    mat const init{1, 2, 3, 4};
    std::inclusive_scan(in.begin(), in.end(), expected.begin(), op, init);
    spindle::detail::scan<mat>(ex, in.begin(), n, out.begin(), op, &init, 1);
    EXPECT_EQ(out, expected);
  }
  std::vector<std::string> words;
  for (int i = 0; i < 300; ++i) {
    words.emplace_back(1, static_cast<char>('a' + i % 26));
  }
  std::vector<std::string> expected(words.size());
  std::inclusive_scan(words.begin(), words.end(), expected.begin());
  std::vector<std::string> out(words.size());
  auto cat = [](std::string a, std::string const& b) { return a + b; };
  spindle::detail::scan<std::string>(ex, words.begin(), words.size(), out.begin(), cat,
                                     static_cast<std::string const*>(nullptr), 7);
  EXPECT_EQ(out, expected);
  auto const big = make_mats(200'000 / scale);
  std::vector<mat> big_expected(big.size());
  std::inclusive_scan(big.begin(), big.end(), big_expected.begin(), op);
  std::vector<mat> big_out(big.size());
  spindle::parallel_scan(ex, big.begin(), big.end(), big_out.begin(), op);
  EXPECT_EQ(big_out, big_expected);
}

// Raw pointers and std::deque iterators, an init of a wider type than the elements (uint8
// elements summed into uint64), and an output of another iterator type.
TEST(ParallelAlgorithms, ScanOverPointersDequesAndAWiderInit) {
  spindle::executor ex{2};
  std::size_t const n = 100'000 / scale;
  std::deque<std::uint8_t> in(n, 255);
  std::vector<std::uint64_t> out(n);
  spindle::parallel_scan(ex, in.begin(), in.end(), out.data(), std::plus<>{}, std::uint64_t{1});
  for (std::size_t i = 0; i < n; i += 997) {
    ASSERT_EQ(out[i], 1 + 255 * (i + 1)) << i;
  }
  EXPECT_EQ(out.back(), 1 + 255 * n);
  std::deque<std::uint64_t> dout(n);
  spindle::parallel_scan(ex, out.data(), out.data() + n, dout.begin(),
                         [](std::uint64_t a, std::uint64_t b) { return std::max(a, b); });
  EXPECT_EQ(dout.back(), out.back());
}

// An exception from op propagates; every copy the scan made is destroyed (instance count).
TEST(ParallelAlgorithms, ScanPropagatesExceptionsAndLeaksNothing) {
  spindle::executor ex{3};
  auto const live = counted::live().load();
  {
    std::vector<counted> in(50'000 / scale, counted(1));
    std::vector<counted> out(in.size());
    auto const n = static_cast<std::int64_t>(in.size());
    // Every prefix value from 2 to n is computed once (pass 2), whatever the blocks.
    for (std::int64_t const fail_at : {std::int64_t{2}, std::int64_t{3}, n / 2, n}) {
      SCOPED_TRACE(fail_at);
      auto op = [fail_at](counted const& a, counted const& b) {
        if (a.v + b.v == fail_at) {
          throw std::runtime_error("op");
        }
        return counted(a.v + b.v);
      };
      EXPECT_THROW(spindle::detail::scan<counted>(ex, in.begin(), in.size(), out.begin(), op,
                                                  static_cast<counted const*>(nullptr), 64),
                   std::runtime_error);
      EXPECT_THROW(spindle::parallel_scan(ex, in.begin(), in.end(), out.begin(), op),
                   std::runtime_error);
    }
  }
  EXPECT_EQ(counted::live().load(), live);
}

// An op that throws at its 1000th call cancels the scan: blocks not started are skipped and
// running blocks stop within a check interval, in pass 1 and in pass 2, from outside and from
// a worker. Before cancellation the other blocks of the pass ran in full (nearly 2^20 calls).
TEST(ParallelAlgorithms, ThrowingOpCancelsTheRestOfTheScan) {
  spindle::executor ex{2};
  std::size_t const n = std::size_t{1} << 20;
  std::vector<std::uint64_t> in(n, 1);
  std::vector<std::uint64_t> out(n);
  std::atomic<std::uint64_t> calls{0};
  auto run = [&](std::uint64_t fail_at) {
    calls = 0;
    auto op = [&](std::uint64_t a, std::uint64_t b) {
      if (calls.fetch_add(1, std::memory_order_relaxed) == fail_at) {
        throw std::runtime_error("op");
      }
      return a + b;
    };
    EXPECT_THROW(spindle::parallel_scan(ex, in.begin(), in.end(), out.begin(), op),
                 std::runtime_error);
    return calls.load();
  };
  // Pass 1 makes about n calls, pass 2 about n more: 999 fails in pass 1; n + 999 in pass 2.
  for (std::uint64_t const fail_at : {std::uint64_t{999}, std::uint64_t{n + 999}}) {
    SCOPED_TRACE(fail_at);
    EXPECT_LT(run(fail_at), fail_at + n / 4);
    std::uint64_t inside = 0;
    ex.spawn([&] { inside = run(fail_at); }).join();
    EXPECT_LT(inside, fail_at + n / 4);
  }
}

// Scans from outside threads at once (more than the guest slots) and nested in a worker.
TEST(ParallelAlgorithms, ScanFromOutsideThreadsAndFromWorkers) {
  spindle::executor ex{2};
  std::size_t const n = 40'000 / scale;
  std::vector<std::vector<std::int64_t>> outs(5, std::vector<std::int64_t>(n));
  std::vector<std::int64_t> const ones(n, 1);
  std::vector<std::thread> ts;
  for (auto& out : outs) {
    ts.emplace_back([&ex, &ones, &out] {
      std::plus<> plus;
      spindle::detail::scan<std::int64_t>(ex, ones.begin(), ones.size(), out.begin(), plus,
                                          static_cast<std::int64_t const*>(nullptr), 100);
    });
  }
  for (auto& t : ts) {
    t.join();
  }
  for (auto const& out : outs) {
    EXPECT_EQ(out.back(), static_cast<std::int64_t>(n));
  }
  std::vector<std::vector<std::int64_t>> nested(8, std::vector<std::int64_t>(n));
  spindle::parallel_for(ex, std::size_t{0}, nested.size(), [&](std::size_t k) {
    std::plus<> plus;
    spindle::detail::scan<std::int64_t>(ex, ones.begin(), ones.size(), nested[k].begin(), plus,
                                        static_cast<std::int64_t const*>(nullptr), 100);
  });
  for (auto const& out : nested) {
    EXPECT_EQ(out.back(), static_cast<std::int64_t>(n));
    EXPECT_EQ(out[n / 2], static_cast<std::int64_t>(n / 2 + 1));
  }
}

// ---- parallel_sort ----

// Every input pattern at every size around the cutoffs sorts like std::sort, for integers and
// doubles in vectors, deques and arrays, with the default and a custom comparator.
TEST(ParallelAlgorithms, SortMatchesStdSortOnEveryPattern) {
  spindle::executor ex{3};
  // The default comparator on integers takes the std::sort leaves; a lambda, even noexcept,
  // and floating point take the guarded ones.
  static_assert(spindle::detail::trusted_order<std::uint64_t*, std::ranges::less>);
  static_assert(spindle::detail::trusted_order<std::vector<int>::iterator, std::greater<int>>);
  static_assert(!spindle::detail::trusted_order<double*, std::ranges::less>);
  static_assert(!spindle::detail::trusted_order<int*, std::ranges::less_equal>);
  auto const noexcept_less = [](int a, int b) noexcept { return a < b; };
  static_assert(!spindle::detail::trusted_order<int*, decltype(noexcept_less)>);
  for (std::size_t const n :
       {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{17},
        spindle::detail::sort_serial_cutoff, spindle::detail::sort_serial_cutoff + 1,
        std::size_t{300'001} / scale}) {
    for (pattern const p : all_patterns) {
      SCOPED_TRACE(testing::Message() << "n " << n << " pattern " << static_cast<int>(p));
      auto v = make_keys(n, p);
      auto expected = v;
      std::sort(expected.begin(), expected.end());
      spindle::parallel_sort(ex, v.begin(), v.end());
      ASSERT_EQ(v, expected);
      std::deque<double> d;
      for (auto const x : make_keys(n, p)) {
        d.push_back(static_cast<double>(x % 100'000) / 3.0);
      }
      spindle::parallel_sort(ex, d.begin(), d.end(), std::greater<>{});
      ASSERT_TRUE(std::is_sorted(d.begin(), d.end(), std::greater<>{}));
      auto w = make_keys(n, p);
      spindle::parallel_sort(ex, w.data(), w.data() + w.size(),
                             [](std::uint64_t a, std::uint64_t b) { return a < b; });
      ASSERT_EQ(w, expected);  // a comparator that may throw: the guarded leaves
    }
  }
}

// Forced parallel structure on small inputs (no serial cutoff, leaves as short as the
// partition allows: 16 elements), for integers in a vector and strings in a deque.
TEST(ParallelAlgorithms, SortTinyInputsThroughTheParallelPath) {
  spindle::executor ex{4};
  for (std::size_t n = 0; n <= 80; ++n) {
    for (pattern const p : all_patterns) {
      SCOPED_TRACE(testing::Message() << "n " << n << " pattern " << static_cast<int>(p));
      auto v = make_keys(n, p);
      auto expected = v;
      std::sort(expected.begin(), expected.end());
      std::less<> less;
      spindle::detail::sort(ex, v.begin(), v.end(), less, 1, 0);
      ASSERT_EQ(v, expected);
      std::vector<std::string> s;
      for (auto const x : make_keys(n, p)) {
        s.push_back(std::to_string(x % 1000));
      }
      auto s_expected = s;
      std::sort(s_expected.begin(), s_expected.end());
      std::deque<std::string> sd(s.begin(), s.end());
      spindle::detail::sort(ex, sd.begin(), sd.end(), less, 1, 0);
      ASSERT_TRUE(std::equal(sd.begin(), sd.end(), s_expected.begin(), s_expected.end()));
    }
  }
}

// The guarded introsort sorts on its own too, also through its heap-sort fallback (depth 0).
TEST(ParallelAlgorithms, GuardedIntrosortAndItsHeapSortFallback) {
  for (pattern const p : all_patterns) {
    for (int const depth : {0, 1, 64}) {
      auto v = make_keys(5000, p);
      auto expected = v;
      std::sort(expected.begin(), expected.end());
      auto less = [](std::uint64_t a, std::uint64_t b) { return a < b; };
      spindle::detail::guarded_introsort(v.begin(), v.end(), less, depth);
      ASSERT_EQ(v, expected) << "depth " << depth;
    }
  }
}

// Move-only, instance-counted elements with many duplicates sort by key and keep every
// identity once, through the public entry and the forced parallel path.
TEST(ParallelAlgorithms, SortMoveOnlyElementsKeepsEveryIdentityOnce) {
  spindle::executor ex{3};
  auto const live = spindle_test::tracked::live();
  {
    auto by_key = [](item const& x, item const& y) noexcept { return x.key < y.key; };
    for (std::size_t const n : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{1000},
                                std::size_t{100'000} / scale}) {
      auto v = make_items(n, 50);
      spindle::parallel_sort(ex, v.begin(), v.end(), by_key);
      EXPECT_TRUE(std::is_sorted(v.begin(), v.end(), by_key));
      EXPECT_TRUE(is_permutation_of_identities(v));
      auto w = make_items(n, 3);
      spindle::detail::sort(ex, w.begin(), w.end(), by_key, 1, 0);
      EXPECT_TRUE(std::is_sorted(w.begin(), w.end(), by_key));
      EXPECT_TRUE(is_permutation_of_identities(w));
    }
  }
  EXPECT_EQ(spindle_test::tracked::live(), live);
}

// A comparator that throws at its k-th call, in a partition at any level or in a leaf: the
// exception propagates and the range holds every element exactly once.
TEST(ParallelAlgorithms, ThrowingComparatorLosesAndDuplicatesNothing) {
  spindle::executor ex{3};
  auto const live = spindle_test::tracked::live();
  {
    std::size_t const n = 60'000 / scale;
    std::atomic<std::uint64_t> calls{0};
    // The public entry, and the detail one with the parallel path forced (leaves of at least
    // 64 elements, no serial cutoff).
    auto sort_with = [&ex](std::vector<item>& v, throwing_less cmp, bool forced) {
      if (forced) {
        spindle::detail::sort(ex, v.begin(), v.end(), cmp, 64, 0);
      } else {
        spindle::parallel_sort(ex, v.begin(), v.end(), cmp);
      }
    };
    for (bool const forced : {false, true}) {
      SCOPED_TRACE(forced ? "forced parallel" : "public");
      // A first sort, which never throws, counts the comparisons of a whole sort (the same
      // input always takes the same number).
      auto probe = make_items(n, 1000);
      calls = 0;
      sort_with(probe, throwing_less{&calls, ~0ULL}, forced);
      std::uint64_t const total = calls.load();
      for (double const at : {0.0, 0.01, 0.5, 0.8, 0.9, 0.95, 0.99, 0.999}) {
        SCOPED_TRACE(at);
        auto v = make_items(n, 1000);
        calls = 0;
        auto const k = static_cast<std::uint64_t>(at * static_cast<double>(total));
        EXPECT_THROW(sort_with(v, throwing_less{&calls, k}, forced), std::runtime_error);
        EXPECT_TRUE(is_permutation_of_identities(v));
      }
    }
    // The same on a deque with the serial path (below the cutoff).
    std::deque<item> d;
    for (auto& x : make_items(500, 10)) {
      d.push_back(std::move(x));
    }
    calls = 0;
    EXPECT_THROW(spindle::parallel_sort(ex, d.begin(), d.end(), throwing_less{&calls, 2000}),
                 std::runtime_error);
    EXPECT_TRUE(is_permutation_of_identities(d));
  }
  EXPECT_EQ(spindle_test::tracked::live(), live);
}

// A comparator that throws mid-sort cancels the sort: partitions and leaves not started are
// skipped and a running leaf stops before its next partition, so the comparisons after the
// throw are at most a few partitions' worth (below n), not the rest of the sort (n log n);
// the range keeps every element once. On two workers, from outside and from a worker.
TEST(ParallelAlgorithms, ThrowingComparatorCancelsTheRestOfTheSort) {
  spindle::executor ex{2};
  auto const live = spindle_test::tracked::live();
  {
    std::size_t const n = std::size_t{1} << 18;
    std::atomic<std::uint64_t> calls{0};
    auto probe = make_items(n, 1'000'000);
    spindle::parallel_sort(ex, probe.begin(), probe.end(), throwing_less{&calls, ~0ULL});
    std::uint64_t const total = calls.load();
    ASSERT_GT(total, 10 * n);
    for (bool const inside : {false, true}) {
      for (double const at : {0.3, 0.6}) {
        SCOPED_TRACE(testing::Message() << "inside " << inside << " at " << at);
        auto v = make_items(n, 1'000'000);
        calls = 0;
        auto const k = static_cast<std::uint64_t>(at * static_cast<double>(total));
        auto sort = [&] {
          EXPECT_THROW(spindle::parallel_sort(ex, v.begin(), v.end(), throwing_less{&calls, k}),
                       std::runtime_error);
        };
        if (inside) {
          ex.spawn(sort).join();
        } else {
          sort();
        }
        EXPECT_LT(calls.load(), k + n);
        EXPECT_TRUE(is_permutation_of_identities(v));
      }
    }
  }
  EXPECT_EQ(spindle_test::tracked::live(), live);
}

/// Sorts [pad, pad + n) of a vector with guard values on both sides by `comp`, and a vector of
/// exactly n elements (so that AddressSanitizer sees a read past either end), through the
/// public entry and through the forced parallel path; checks that the guards are untouched
/// and each range holds the same multiset of values.
template <class Comp>
void expect_bad_comparator_stays_in_range(spindle::executor& ex, std::vector<int> const& keys,
                                          Comp comp) {
  std::size_t const pad = 64;
  std::vector<int> want = keys;
  std::sort(want.begin(), want.end());
  for (bool const forced : {false, true}) {
    SCOPED_TRACE(testing::Message() << "n " << keys.size() << " forced " << forced);
    auto sort = [&](auto first, auto last) {
      if (forced) {
        spindle::detail::sort(ex, first, last, comp, 1, 0);
      } else {
        spindle::parallel_sort(ex, first, last, comp);
      }
    };
    // The lowest value on the left, the highest on the right: what a scan that ran off an end
    // would stop at and swap in.
    std::vector<int> v(pad, limits<int>::min());
    v.insert(v.end(), keys.begin(), keys.end());
    v.insert(v.end(), pad, limits<int>::max());
    auto const first = v.begin() + static_cast<std::ptrdiff_t>(pad);
    auto const last = first + static_cast<std::ptrdiff_t>(keys.size());
    sort(first, last);
    EXPECT_TRUE(std::all_of(v.begin(), first, [](int x) { return x == limits<int>::min(); }));
    EXPECT_TRUE(std::all_of(last, v.end(), [](int x) { return x == limits<int>::max(); }));
    std::vector<int> got(first, last);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want);
    std::vector<int> exact = keys;
    sort(exact.begin(), exact.end());
    std::sort(exact.begin(), exact.end());
    EXPECT_EQ(exact, want);
  }
}

// A comparator that is not a strict weak order (a <= b; a coin toss; a noexcept a <= b, which
// must not reach std::sort either) gives some order, but the range keeps its elements and
// nothing outside it is read or written: each scan is bounded by the range. The comparators
// count the values they see that are no key (a guard, read from outside the range); the
// sizes cross the serial cutoff and the small-range thresholds; the keys are all equal, few,
// or distinct.
TEST(ParallelAlgorithms, ComparatorThatIsNotAStrictWeakOrderStaysInTheRange) {
  spindle::executor ex{3};
  constexpr int key_limit = 1'000'000;
  std::atomic<std::uint64_t> outside{0};
  std::atomic<std::uint64_t> tosses{0};
  auto key = [&outside](int x) noexcept {
    if (x < 0 || x >= key_limit) {
      outside.fetch_add(1, std::memory_order_relaxed);
    }
    return x;
  };
  auto coin = [&tosses, key](int a, int b) {
    static_cast<void>(key(a) + key(b));
    return ((tosses.fetch_add(1, std::memory_order_relaxed) * 0x9e3779b97f4a7c15ULL) >> 63U) != 0;
  };
  auto less_equal = [key](int a, int b) { return key(a) <= key(b); };
  auto less_equal_noexcept = [key](int a, int b) noexcept { return key(a) <= key(b); };
  for (std::size_t const n :
       {std::size_t{2}, std::size_t{16}, std::size_t{17}, std::size_t{100}, std::size_t{1025},
        spindle::detail::sort_serial_cutoff + 1, std::size_t{100'000} / scale}) {
    for (int const distinct : {1, 3, key_limit}) {
      std::vector<int> keys(n);
      std::mt19937 rng(static_cast<unsigned>(n) + static_cast<unsigned>(distinct));
      for (auto& k : keys) {
        k = static_cast<int>(rng() % static_cast<unsigned>(distinct));
      }
      expect_bad_comparator_stays_in_range(ex, keys, less_equal);
      expect_bad_comparator_stays_in_range(ex, keys, less_equal_noexcept);
      expect_bad_comparator_stays_in_range(ex, keys, coin);
      expect_bad_comparator_stays_in_range(ex, keys, std::ranges::less_equal{});
    }
  }
  EXPECT_EQ(outside.load(), 0U) << "the comparator saw values from outside the range";
}

// Sorts from outside threads at once, and nested in workers (one sort per loop index).
TEST(ParallelAlgorithms, SortFromOutsideThreadsAndFromWorkers) {
  spindle::executor ex{2};
  std::size_t const n = 50'000 / scale;
  std::vector<std::vector<std::uint64_t>> vs(5);
  std::vector<std::thread> ts;
  for (auto& v : vs) {
    ts.emplace_back([&ex, &v] {
      v = make_keys(n, pattern::random);
      std::ranges::less less;
      spindle::detail::sort(ex, v.begin(), v.end(), less, 256, 0);
    });
  }
  for (auto& t : ts) {
    t.join();
  }
  for (auto const& v : vs) {
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  }
  std::vector<std::vector<std::uint64_t>> nested(6);
  spindle::parallel_for(ex, std::size_t{0}, nested.size(), [&](std::size_t k) {
    nested[k] = make_keys(n + k, pattern::few);
    spindle::parallel_sort(ex, nested[k].begin(), nested[k].end());
  });
  for (auto const& v : nested) {
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  }
}

// After shutdown, a parallel sort or scan called from outside throws std::logic_error before
// moving anything.
TEST(ParallelAlgorithms, AfterShutdownThrowsFromOutside) {
  spindle::executor ex{2};
  ex.shutdown();
  auto v = make_keys(100'000, pattern::random);
  auto const before = v;
  EXPECT_THROW(spindle::parallel_sort(ex, v.begin(), v.end()), std::logic_error);
  EXPECT_EQ(v, before);
  auto items = make_items(100'000, 10);
  EXPECT_THROW(
      spindle::parallel_sort(ex, items.begin(), items.end(),
                             [](item const& x, item const& y) noexcept { return x.key < y.key; }),
      std::logic_error);
  EXPECT_TRUE(is_permutation_of_identities(items));
  std::vector<std::int64_t> out(v.size());
  EXPECT_THROW(spindle::parallel_scan(ex, v.begin(), v.end(), out.begin(), std::plus<>{}),
               std::logic_error);
}

// spindle-bench algorithms: the data-parallel loops and algorithms against oneTBB and the
// serial standard library, side by side.
//
//   spindle-bench algorithms [--runs R] [--json] [--workers N] [--elements N] [--sort N]
//                            [--rows R] [--cols C] [--only scan,sort,for,2d,reduce]
//
// Scenarios (each run interleaves every implementation, so drift hits all rows alike):
//   scan    inclusive prefix sum of N int64: spindle::parallel_scan vs tbb::parallel_scan
//           (blocked_range, auto_partitioner) vs std::inclusive_scan.
//   sort    N random uint64 and N random doubles: spindle::parallel_sort vs tbb::parallel_sort
//           vs std::sort (each run sorts a fresh copy of the same input; the copy is not timed).
//   for     a trivial body over N uint32: spindle::parallel_for with the adaptive partitioner
//           (automatic grain and grain 1) and the static partitioner vs tbb::parallel_for with
//           auto_partitioner and static_partitioner.
//   2d      out(r, c) = 0.5 * in(r, c) + r - c over an R x C matrix of doubles: the 2-D
//           spindle::parallel_for (adaptive, static) vs tbb::parallel_for on a blocked_range2d
//           vs two serial loops.
//   reduce  sum of N int64: spindle::parallel_reduce with the automatic grain, grain 1, grain
//           4096 and the static partitioner vs tbb::parallel_reduce vs std::accumulate.
// Every run checks its result (the whole scan output, sortedness and equality with std::sort's
// output, checksums, exact sums) and fails loudly when it is wrong.

#include "bench_common.hpp"

#include <spindle/algorithms.hpp>
#include <spindle/executor.hpp>
#include <spindle/parallel.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "bench/support/peers.hpp"

namespace {

using spindle_bench::clock;
using spindle_bench::row;

using spindle_bench::check;
using spindle_bench::time_ms;

/// The rows oneTBB contributes exist only when it was found.
void add_tbb(std::vector<row>& rows, row const& r) {
#if defined(SPINDLE_HAVE_TBB)
  rows.push_back(r);
#else
  static_cast<void>(rows);
  static_cast<void>(r);
#endif
}

struct settings {
  int runs;
  bool json;
  std::size_t workers;
  std::size_t elements;
  std::size_t sort_elements;
  std::size_t rows;
  std::size_t cols;
};

#if defined(SPINDLE_HAVE_TBB)
#define SPINDLE_TBB_ONLY(...) __VA_ARGS__

/// The arena every oneTBB call runs in: as many threads as spindle has workers.
tbb::task_arena* tbb_arena = nullptr;

template <class Fn>
void in_arena(Fn&& fn) {
  tbb_arena->execute(std::forward<Fn>(fn));
}
#else
#define SPINDLE_TBB_ONLY(...)
#endif

void bench_scan(spindle::executor& ex, settings const& s) {
  std::size_t const n = s.elements;
  std::vector<std::int64_t> in(n);
  std::mt19937_64 rng(1);
  for (auto& x : in) {
    x = static_cast<std::int64_t>(rng() % 2001) - 1000;
  }
  std::vector<std::int64_t> expected(n);
  std::inclusive_scan(in.begin(), in.end(), expected.begin());
  std::vector<std::int64_t> out(n);
  row r_spindle{"spindle parallel_scan", "two-pass block scan (Blelloch 1990)", {}};
  row r_tbb{"oneTBB parallel_scan", "blocked_range, auto_partitioner", {}};
  row r_std{"std::inclusive_scan", "serial", {}};
  auto verify = [&](char const* who) {
    check(out == expected, std::string(who) + ": scan output differs from std::inclusive_scan");
    std::fill(out.begin(), out.end(), 0);
  };
  for (int r = 0; r < s.runs; ++r) {
    r_spindle.sample.push_back(time_ms(
        [&] { spindle::parallel_scan(ex, in.begin(), in.end(), out.begin(), std::plus<>{}); }));
    verify("spindle");
    SPINDLE_TBB_ONLY(r_tbb.sample.push_back(time_ms([&] {
      in_arena([&] {
        tbb::parallel_scan(
            tbb::blocked_range<std::size_t>(0, n), std::int64_t{0},
            [&](tbb::blocked_range<std::size_t> const& range, std::int64_t sum, bool is_final) {
              if (is_final) {
                for (std::size_t i = range.begin(); i != range.end(); ++i) {
                  sum += in[i];
                  out[i] = sum;
                }
              } else {
                for (std::size_t i = range.begin(); i != range.end(); ++i) {
                  sum += in[i];
                }
              }
              return sum;
            },
            std::plus<>{});
      });
    }));
                     verify("tbb");)
    r_std.sample.push_back(
        time_ms([&] { std::inclusive_scan(in.begin(), in.end(), out.begin()); }));
    verify("std");
  }
  std::vector<row> rows{r_spindle};
  add_tbb(rows, r_tbb);
  rows.push_back(r_std);
  spindle_bench::print_table("algorithms: inclusive scan of " + std::to_string(n) + " int64", "ms",
                             false, rows, "spindle parallel_scan", s.json);
}

template <class T>
void bench_sort_of(spindle::executor& ex, settings const& s, std::vector<T> const& input,
                   std::string const& what) {
  std::vector<T> expected = input;
  std::sort(expected.begin(), expected.end());
  std::vector<T> v;
  // Leaves use std::sort only where the comparator is known to be a strict weak order (the
  // standard less on integers, enums and pointers; not on floating point, where NaN breaks it).
  row r_spindle{"spindle parallel_sort",
                std::is_floating_point_v<T> ? "parallel quicksort, guarded introsort leaves"
                                            : "parallel quicksort, std::sort leaves",
                {}};
  row r_tbb{"oneTBB parallel_sort", "parallel quicksort", {}};
  row r_std{"std::sort", "serial", {}};
  auto verify = [&](char const* who) {
    check(v == expected, std::string(who) + ": sort output differs from std::sort's");
  };
  for (int r = 0; r < s.runs; ++r) {
    v = input;
    r_spindle.sample.push_back(time_ms([&] { spindle::parallel_sort(ex, v.begin(), v.end()); }));
    verify("spindle");
    SPINDLE_TBB_ONLY(v = input; r_tbb.sample.push_back(
        time_ms([&] { in_arena([&] { tbb::parallel_sort(v.begin(), v.end()); }); }));
                     verify("tbb");)
    v = input;
    r_std.sample.push_back(time_ms([&] { std::sort(v.begin(), v.end()); }));
    verify("std");
  }
  std::vector<row> rows{r_spindle};
  add_tbb(rows, r_tbb);
  rows.push_back(r_std);
  spindle_bench::print_table("algorithms: sort " + std::to_string(input.size()) + " random " + what,
                             "ms", false, rows, "spindle parallel_sort", s.json);
}

void bench_sort(spindle::executor& ex, settings const& s) {
  std::size_t const n = s.sort_elements;
  std::mt19937_64 rng(2);
  std::vector<std::uint64_t> keys(n);
  for (auto& x : keys) {
    x = rng();
  }
  bench_sort_of(ex, s, keys, "uint64");
  std::vector<double> doubles(n);
  std::uniform_real_distribution<double> dist(-1e6, 1e6);
  for (auto& x : doubles) {
    x = dist(rng);
  }
  bench_sort_of(ex, s, doubles, "doubles");
}

void bench_for(spindle::executor& ex, settings const& s) {
  std::size_t const n = s.elements;
  std::vector<std::uint32_t> data(n);
  std::uint64_t expected = 0;
  auto reset = [&] { std::iota(data.begin(), data.end(), std::uint32_t{0}); };
  auto verify = [&](char const* who) {
    std::uint64_t const sum = std::accumulate(data.begin(), data.end(), std::uint64_t{0});
    if (expected == 0) {
      expected = sum;
    }
    check(sum == expected, std::string(who) + ": parallel_for checksum");
  };
  auto body = [&data](std::size_t i) { data[i] = data[i] * 3 + 1; };
  row r_adaptive{"spindle parallel_for adaptive", "automatic grain, adaptive splitter", {}};
  row r_adaptive_1{"spindle parallel_for adaptive grain 1", "the adaptive splitter alone", {}};
  row r_static{"spindle parallel_for static", "one block per worker", {}};
  row r_tbb_auto{"oneTBB parallel_for auto", "blocked_range, auto_partitioner", {}};
  row r_tbb_static{"oneTBB parallel_for static", "blocked_range, static_partitioner", {}};
  row r_serial{"serial", "the same loop", {}};
  for (int r = 0; r < s.runs; ++r) {
    reset();
    r_adaptive.sample.push_back(
        time_ms([&] { spindle::parallel_for(ex, std::size_t{0}, n, body); }));
    verify("spindle adaptive");
    reset();
    r_adaptive_1.sample.push_back(
        time_ms([&] { spindle::parallel_for(ex, std::size_t{0}, n, 1, body); }));
    verify("spindle adaptive grain 1");
    reset();
    r_static.sample.push_back(time_ms([&] {
      spindle::parallel_for(ex, std::size_t{0}, n, body, spindle::static_partitioner{});
    }));
    verify("spindle static");
#if defined(SPINDLE_HAVE_TBB)
    auto tbb_body = [&](tbb::blocked_range<std::size_t> const& range) {
      for (std::size_t i = range.begin(); i != range.end(); ++i) {
        body(i);
      }
    };
    reset();
    r_tbb_auto.sample.push_back(time_ms([&] {
      in_arena([&] {
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n), tbb_body, tbb::auto_partitioner{});
      });
    }));
    verify("tbb auto");
    reset();
    r_tbb_static.sample.push_back(time_ms([&] {
      in_arena([&] {
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n), tbb_body,
                          tbb::static_partitioner{});
      });
    }));
    verify("tbb static");
#endif
    reset();
    r_serial.sample.push_back(time_ms([&] {
      for (std::size_t i = 0; i < n; ++i) {
        body(i);
      }
    }));
    verify("serial");
  }
  std::vector<row> rows{r_static, r_adaptive, r_adaptive_1};
  add_tbb(rows, r_tbb_static);
  add_tbb(rows, r_tbb_auto);
  rows.push_back(r_serial);
  spindle_bench::print_table("algorithms: parallel_for over " + std::to_string(n) +
                                 " uint32, static vs adaptive partitioner",
                             "ms", false, rows, "spindle parallel_for static", s.json);
}

void bench_2d(spindle::executor& ex, settings const& s) {
  std::size_t const rows_n = s.rows;
  std::size_t const cols_n = s.cols;
  std::vector<double> in(rows_n * cols_n);
  std::mt19937_64 rng(3);
  for (auto& x : in) {
    x = static_cast<double>(rng() % 1000);
  }
  std::vector<double> out(in.size());
  auto cell = [&](std::size_t r, std::size_t c) {
    std::size_t const k = r * cols_n + c;
    out[k] = 0.5 * in[k] + static_cast<double>(r) - static_cast<double>(c);
  };
  // A block's inner loop over contiguous columns: the loop the compiler vectorises.
  auto block = [&](std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) {
    for (std::size_t r = r0; r < r1; ++r) {
      double const* src = in.data() + r * cols_n;
      double* dst = out.data() + r * cols_n;
      auto const rd = static_cast<double>(r);
      for (std::size_t c = c0; c < c1; ++c) {
        dst[c] = 0.5 * src[c] + rd - static_cast<double>(c);
      }
    }
  };
  double expected = 0;
  bool have_expected = false;
  auto verify = [&](char const* who) {
    double const sum = std::accumulate(out.begin(), out.end(), 0.0);
    if (!have_expected) {
      expected = sum;
      have_expected = true;
    }
    check(sum == expected, std::string(who) + ": 2-D checksum");
    std::fill(out.begin(), out.end(), -1.0);
  };
  spindle::blocked_range2d<std::size_t> const range{0, rows_n, 0, cols_n, 16, 256};
  auto spindle_block = [&](spindle::blocked_range2d<std::size_t> const& b) {
    block(b.rows_first, b.rows_last, b.cols_first, b.cols_last);
  };
  row r_adaptive{"spindle 2-D adaptive", "blocks of >= 16 rows x 256 columns", {}};
  row r_static{"spindle 2-D static", "one block per worker", {}};
  row r_tbb{"oneTBB 2-D", "blocked_range2d, grains 16 x 256, auto_partitioner", {}};
  row r_serial{"serial", "two nested loops", {}};
  for (int r = 0; r < s.runs; ++r) {
    r_adaptive.sample.push_back(time_ms([&] { spindle::parallel_for(ex, range, spindle_block); }));
    verify("spindle adaptive");
    r_static.sample.push_back(time_ms(
        [&] { spindle::parallel_for(ex, range, spindle_block, spindle::static_partitioner{}); }));
    verify("spindle static");
    SPINDLE_TBB_ONLY(r_tbb.sample.push_back(time_ms([&] {
      in_arena([&] {
        tbb::parallel_for(tbb::blocked_range2d<std::size_t>(0, rows_n, 16, 0, cols_n, 256),
                          [&](tbb::blocked_range2d<std::size_t> const& b) {
                            block(b.rows().begin(), b.rows().end(), b.cols().begin(),
                                  b.cols().end());
                          });
      });
    }));
                     verify("tbb");)
    r_serial.sample.push_back(time_ms([&] {
      for (std::size_t i = 0; i < rows_n; ++i) {
        for (std::size_t j = 0; j < cols_n; ++j) {
          cell(i, j);
        }
      }
    }));
    verify("serial");
  }
  std::vector<row> rows{r_adaptive, r_static};
  add_tbb(rows, r_tbb);
  rows.push_back(r_serial);
  spindle_bench::print_table("algorithms: 2-D loop over " + std::to_string(rows_n) + " x " +
                                 std::to_string(cols_n) + " doubles",
                             "ms", false, rows, "spindle 2-D adaptive", s.json);
}

void bench_reduce(spindle::executor& ex, settings const& s) {
  std::size_t const n = s.elements;
  std::vector<std::int64_t> v(n);
  std::mt19937_64 rng(4);
  for (auto& x : v) {
    x = static_cast<std::int64_t>(rng() % 1'000'000);
  }
  std::int64_t const expected = std::accumulate(v.begin(), v.end(), std::int64_t{0});
  auto map = [&v](std::size_t i) { return v[i]; };
  row r_auto{"spindle parallel_reduce", "automatic grain, adaptive splitter", {}};
  row r_g1{"spindle parallel_reduce grain 1", "adaptive splitter alone", {}};
  row r_g4k{"spindle parallel_reduce grain 4096", "", {}};
  row r_static{"spindle parallel_reduce static", "one block per worker", {}};
  row r_tbb{"oneTBB parallel_reduce", "blocked_range, auto_partitioner", {}};
  row r_serial{"std::accumulate", "serial", {}};
  auto run_one = [&](row& into, char const* who, auto&& fn) {
    std::int64_t got = 0;
    into.sample.push_back(time_ms([&] { got = fn(); }));
    check(got == expected, std::string(who) + ": reduce sum");
  };
  for (int r = 0; r < s.runs; ++r) {
    run_one(r_auto, "spindle", [&] {
      return spindle::parallel_reduce(ex, std::size_t{0}, n, std::int64_t{0}, map, std::plus<>{});
    });
    run_one(r_g1, "spindle grain 1", [&] {
      return spindle::parallel_reduce(ex, std::size_t{0}, n, 1, std::int64_t{0}, map,
                                      std::plus<>{});
    });
    run_one(r_g4k, "spindle grain 4096", [&] {
      return spindle::parallel_reduce(ex, std::size_t{0}, n, 4096, std::int64_t{0}, map,
                                      std::plus<>{});
    });
    run_one(r_static, "spindle static", [&] {
      return spindle::parallel_reduce(ex, std::size_t{0}, n, std::int64_t{0}, map, std::plus<>{},
                                      spindle::static_partitioner{});
    });
    SPINDLE_TBB_ONLY(run_one(r_tbb, "tbb", [&] {
                       std::int64_t sum = 0;
                       in_arena([&] {
                         sum = tbb::parallel_reduce(
                             tbb::blocked_range<std::size_t>(0, n), std::int64_t{0},
                             [&](tbb::blocked_range<std::size_t> const& range, std::int64_t acc) {
                               for (std::size_t i = range.begin(); i != range.end(); ++i) {
                                 acc += v[i];
                               }
                               return acc;
                             },
                             std::plus<>{});
                       });
                       return sum;
                     });)
    run_one(r_serial, "std::accumulate",
            [&] { return std::accumulate(v.begin(), v.end(), std::int64_t{0}); });
  }
  std::vector<row> rows{r_auto, r_g1, r_g4k, r_static};
  add_tbb(rows, r_tbb);
  rows.push_back(r_serial);
  spindle_bench::print_table("algorithms: sum of " + std::to_string(n) + " int64 with a grain",
                             "ms", false, rows, "spindle parallel_reduce", s.json);
}

auto run_algorithms(std::span<char const* const> args) -> int {
  spindle_bench::options const opt(args);
  auto const hw = std::thread::hardware_concurrency();
  settings const s{
      static_cast<int>(opt.get_int("runs", 5)),
      opt.flag("json"),
      static_cast<std::size_t>(opt.get_int("workers", hw == 0 ? 2 : hw)),
      static_cast<std::size_t>(opt.get_int("elements", 10'000'000)),
      static_cast<std::size_t>(opt.get_int("sort", 10'000'000)),
      static_cast<std::size_t>(opt.get_int("rows", 2000)),
      static_cast<std::size_t>(opt.get_int("cols", 2000)),
  };
  std::string const only = opt.get_string("only", "scan,sort,for,2d,reduce");
  auto const want = [&only](char const* name) { return only.find(name) != std::string::npos; };

  spindle::executor ex{s.workers};
#if defined(SPINDLE_HAVE_TBB)
  tbb::global_control tbb_threads(tbb::global_control::max_allowed_parallelism, s.workers);
  tbb::task_arena arena(static_cast<int>(s.workers));
  tbb_arena = &arena;
#endif
  // Both libraries are called from the main thread, outside their pools.
  if (want("scan")) {
    bench_scan(ex, s);
  }
  if (want("sort")) {
    bench_sort(ex, s);
  }
  if (want("for")) {
    bench_for(ex, s);
  }
  if (want("2d")) {
    bench_2d(ex, s);
  }
  if (want("reduce")) {
    bench_reduce(ex, s);
  }
  return 0;
}

spindle_bench::registrar const algorithms_cmd{
    {"algorithms",
     "parallel_scan, parallel_sort, partitioners, 2-D parallel_for and parallel_reduce with a "
     "grain vs oneTBB and the serial standard library [--runs R] [--json] [--workers N] "
     "[--elements N] [--sort N] [--rows R] [--cols C] [--only scan,sort,for,2d,reduce]",
     run_algorithms}};

}  // namespace

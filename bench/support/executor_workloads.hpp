#pragma once
// The executor workloads shared by `spindle-bench executor` (tools/spindle-bench) and the
// Google Benchmark file bench/executor_bench.cpp: fib(n) forking at every call with each
// fork-join API (spindle join, join with a serial cutoff, task_group, oneTBB task_group, OpenMP
// tasks) and the process CPU clock the idle scenarios read. fib_join and fib_serial are the
// ones tests/executor_test.cpp checks (tests/support/fib.hpp). The peers' versions exist only
// when cmake/spindle_peers.cmake found them (SPINDLE_HAVE_TBB, SPINDLE_HAVE_OPENMP).

#include <spindle/executor.hpp>
#include <spindle/task_group.hpp>

#include <sys/resource.h>

#include <cstdint>

#include "bench/support/peers.hpp"
#include "tests/support/fib.hpp"

namespace spindle_bench {

using spindle_test::fib_join;
using spindle_test::fib_serial;

/// As fib_join, serial below n = 20.
inline auto fib_join_cutoff(spindle::executor& ex, int n) -> std::uint64_t {
  if (n < 20) {
    return fib_serial(n);
  }
  auto [a, b] = spindle::join(
      ex, [&] { return fib_join_cutoff(ex, n - 1); }, [&] { return fib_join_cutoff(ex, n - 2); });
  return a + b;
}

/// Forks with a spindle::task_group at every call (one task node per spawn).
inline auto fib_group(spindle::executor& ex, int n) -> std::uint64_t {
  if (n < 2) {
    return static_cast<std::uint64_t>(n);
  }
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  spindle::task_group g{ex};
  g.spawn([&] { a = fib_group(ex, n - 1); });
  b = fib_group(ex, n - 2);
  g.wait();
  return a + b;
}

#if defined(SPINDLE_HAVE_TBB)
/// Forks with a tbb::task_group at every call; run it inside the arena under test.
inline auto fib_tbb(int n) -> std::uint64_t {
  if (n < 2) {
    return static_cast<std::uint64_t>(n);
  }
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  tbb::task_group g;
  g.run([&] { a = fib_tbb(n - 1); });
  b = fib_tbb(n - 2);
  g.wait();
  return a + b;
}
#endif

#if defined(SPINDLE_HAVE_OPENMP)
/// Forks with an OpenMP task at every call; call it inside `omp parallel` + `omp single`.
inline auto fib_omp_task(int n) -> std::uint64_t {
  if (n < 2) {
    return static_cast<std::uint64_t>(n);
  }
  std::uint64_t a = 0;
  std::uint64_t b = 0;
#pragma omp task shared(a)
  a = fib_omp_task(n - 1);
  b = fib_omp_task(n - 2);
#pragma omp taskwait
  return a + b;
}

/// fib_omp_task on a parallel region of `threads` threads.
inline auto fib_omp(int n, int threads) -> std::uint64_t {
  std::uint64_t r = 0;
#pragma omp parallel num_threads(threads)
#pragma omp single
  r = fib_omp_task(n);
  return r;
}
#endif

/// CPU time (user + system) the whole process has used, in milliseconds.
inline auto process_cpu_ms() -> double {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3) +
         (static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3);
}

}  // namespace spindle_bench

#pragma once
// fib(n) forking at every call with spindle::join, and its serial value: a fork-join workload
// whose result is known, deep enough that workers steal from each other at every level.
// tests/executor_test.cpp checks the executor with it, and the benchmarks
// (bench/support/executor_workloads.hpp) time the same recursion, so the figures come from the
// code the tests check.

#include <spindle/executor.hpp>

#include <cstdint>

namespace spindle_test {

inline auto fib_serial(int n) -> std::uint64_t {
  return n < 2 ? static_cast<std::uint64_t>(n) : fib_serial(n - 1) + fib_serial(n - 2);
}

/// Forks with spindle::join at every call (no allocation).
inline auto fib_join(spindle::executor& ex, int n) -> std::uint64_t {
  if (n < 2) {
    return static_cast<std::uint64_t>(n);
  }
  auto [a, b] = spindle::join(
      ex, [&] { return fib_join(ex, n - 1); }, [&] { return fib_join(ex, n - 2); });
  return a + b;
}

}  // namespace spindle_test

// Fork-join with spindle::join: the classic recursive Fibonacci, forking at every level above
// a cutoff. join() puts the second half on this worker's deque, where an idle worker may steal
// it; if nobody does, the caller pops it back and runs it inline, with no allocation.

#include <spindle/executor.hpp>
#include <spindle/parallel.hpp>
#include <spindle/task_group.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

auto fib(spindle::executor& ex, int n) -> std::uint64_t {
  if (n < 15) {  // below the cutoff, forking costs more than it gains
    return n < 2 ? static_cast<std::uint64_t>(n) : fib(ex, n - 1) + fib(ex, n - 2);
  }
  auto [a, b] = spindle::join(
      ex, [&] { return fib(ex, n - 1); }, [&] { return fib(ex, n - 2); });
  return a + b;
}

}  // namespace

auto main() -> int {
  spindle::executor ex;  // one worker per hardware thread

  // join: called from outside, it runs as one injected task and the caller waits.
  std::uint64_t const f = fib(ex, 30);
  std::printf("fib(30) = %llu\n", static_cast<unsigned long long>(f));

  // spawn and join_handle: a result or an exception comes back through join().
  auto handle = ex.spawn([] { return 6 * 7; });
  std::printf("spawned task returned %d\n", handle.join());

  // task_group: structured fork-join over several tasks.
  std::vector<int> squares(8);
  {
    spindle::task_group group{ex};
    for (int i = 0; i < 8; ++i) {
      group.spawn([&squares, i] { squares[static_cast<std::size_t>(i)] = i * i; });
    }
    group.wait();
  }

  // parallel_for / parallel_reduce: recursive splitting on top of join.
  std::vector<double> v(100000, 0.5);
  spindle::parallel_for(ex, std::size_t{0}, v.size(), [&](std::size_t i) { v[i] *= 2; });
  double const sum = spindle::parallel_reduce(
      ex, std::size_t{0}, v.size(), 0.0, [&](std::size_t i) { return v[i]; },
      [](double a, double b) { return a + b; });
  std::printf("sum = %.1f, squares[7] = %d\n", sum, squares[7]);

  return f == 832040 && sum == 100000.0 && squares[7] == 49 ? 0 : 1;
}

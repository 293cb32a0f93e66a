// Benchmarks for <spindle/executor.hpp>, <spindle/task_group.hpp> and <spindle/parallel.hpp>,
// with oneTBB (SPINDLE_HAVE_TBB) and OpenMP (SPINDLE_HAVE_OPENMP) side by side in the same run:
//   - fib(N) forking at every call: spindle::join, spindle::task_group, spindle::join with a
//     cutoff, tbb::task_group, OpenMP tasks, and serial fib as the floor;
//   - one outside thread submitting many empty tasks and waiting for all of them: spindle
//     post / task_group, tbb::task_group::run, tbb::task_arena::enqueue;
//   - parallel_for over 10,000,000 elements of a trivial body: spindle, tbb::parallel_for,
//     `omp parallel for`, serial;
//   - CPU time of an idle executor of 2 workers over a fixed interval (getrusage).
// Every benchmark checks its result and calls SkipWithError instead of reporting a figure when
// it is wrong. The scenario CLI `spindle-bench executor` prints the same comparisons as
// Markdown tables with medians and ratios.
//
// Run: executor_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include <spindle/executor.hpp>
#include <spindle/parallel.hpp>
#include <spindle/task_group.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "bench/support/executor_workloads.hpp"
#include "bench/support/peers.hpp"

namespace {

constexpr int fib_n = 30;
constexpr std::size_t spawn_tasks = 200'000;
constexpr std::size_t elements = 10'000'000;

auto workers() -> std::size_t {
  auto const hw = std::thread::hardware_concurrency();
  return hw == 0 ? 2 : hw;
}

auto shared_executor() -> spindle::executor& {
  static spindle::executor ex{workers()};
  return ex;
}

#if defined(SPINDLE_HAVE_TBB)
auto shared_arena() -> tbb::task_arena& {
  static tbb::task_arena arena(static_cast<int>(workers()));
  return arena;
}
#endif

// The fib_* workloads and process_cpu_ms (bench/support/executor_workloads.hpp); this file
// declares none of those names itself.
using namespace spindle_bench;

template <class Fn>
void fib_bench(benchmark::State& state, Fn&& fn) {
  auto const expected = fib_serial(fib_n);
  for (auto _ : state) {
    auto const v = fn();
    if (v != expected) {
      state.SkipWithError("wrong fib value");
      return;
    }
    benchmark::DoNotOptimize(v);
  }
}

void BM_FibSerial(benchmark::State& state) {
  fib_bench(state, [] {
    int n = fib_n;
    benchmark::DoNotOptimize(n);
    return fib_serial(n);
  });
}

void BM_FibSpindleJoin(benchmark::State& state) {
  fib_bench(state, [] { return fib_join(shared_executor(), fib_n); });
}

void BM_FibSpindleJoinCutoff(benchmark::State& state) {
  fib_bench(state, [] { return fib_join_cutoff(shared_executor(), fib_n); });
}

void BM_FibSpindleTaskGroup(benchmark::State& state) {
  fib_bench(state, [] { return fib_group(shared_executor(), fib_n); });
}

#if defined(SPINDLE_HAVE_TBB)
void BM_FibTbbTaskGroup(benchmark::State& state) {
  fib_bench(state, [] {
    std::uint64_t v = 0;
    shared_arena().execute([&] { v = fib_tbb(fib_n); });
    return v;
  });
}
#endif

#if defined(SPINDLE_HAVE_OPENMP)
void BM_FibOpenMpTask(benchmark::State& state) {
  fib_bench(state, [] { return fib_omp(fib_n, static_cast<int>(workers())); });
}
#endif

void BM_SpawnSpindlePost(benchmark::State& state) {
  auto& ex = shared_executor();
  for (auto _ : state) {
    std::latch left(static_cast<std::ptrdiff_t>(spawn_tasks));
    for (std::size_t i = 0; i < spawn_tasks; ++i) {
      ex.post([&left] { left.count_down(); });
    }
    left.wait();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * spawn_tasks));
}

void BM_SpawnSpindleTaskGroup(benchmark::State& state) {
  auto& ex = shared_executor();
  for (auto _ : state) {
    std::atomic<std::size_t> count{0};
    spindle::task_group g{ex};
    for (std::size_t i = 0; i < spawn_tasks; ++i) {
      g.spawn([&count] { count.fetch_add(1, std::memory_order_relaxed); });
    }
    g.wait();
    if (count.load() != spawn_tasks) {
      state.SkipWithError("lost or duplicated tasks");
      return;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * spawn_tasks));
}

#if defined(SPINDLE_HAVE_TBB)
void BM_SpawnTbbTaskGroup(benchmark::State& state) {
  for (auto _ : state) {
    std::atomic<std::size_t> count{0};
    tbb::task_group g;
    for (std::size_t i = 0; i < spawn_tasks; ++i) {
      g.run([&count] { count.fetch_add(1, std::memory_order_relaxed); });
    }
    g.wait();
    if (count.load() != spawn_tasks) {
      state.SkipWithError("lost or duplicated tasks");
      return;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * spawn_tasks));
}

void BM_SpawnTbbArenaEnqueue(benchmark::State& state) {
  auto& arena = shared_arena();
  for (auto _ : state) {
    std::latch left(static_cast<std::ptrdiff_t>(spawn_tasks));
    for (std::size_t i = 0; i < spawn_tasks; ++i) {
      arena.enqueue([&left] { left.count_down(); });
    }
    left.wait();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * spawn_tasks));
}
#endif

struct loop_data {
  std::vector<std::uint32_t> v = std::vector<std::uint32_t>(elements);
  void reset() {
    for (std::size_t i = 0; i < v.size(); ++i) {
      v[i] = static_cast<std::uint32_t>(i);
    }
  }
  [[nodiscard]] auto ok() const -> bool {
    for (std::size_t i = 0; i < v.size(); i += 9973) {
      if (v[i] != static_cast<std::uint32_t>(i) * 3 + 1) {
        return false;
      }
    }
    return true;
  }
};

template <class Run>
void for_bench(benchmark::State& state, Run&& run) {
  loop_data d;
  auto body = [&d](std::size_t i) { d.v[i] = d.v[i] * 3 + 1; };
  for (auto _ : state) {
    state.PauseTiming();
    d.reset();
    state.ResumeTiming();
    run(body);
    benchmark::ClobberMemory();
  }
  if (!d.ok()) {
    state.SkipWithError("parallel_for missed or repeated an index");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * elements));
}

void BM_ForSerial(benchmark::State& state) {
  for_bench(state, [](auto& body) {
    for (std::size_t i = 0; i < elements; ++i) {
      body(i);
    }
  });
}

void BM_ForSpindle(benchmark::State& state) {
  for_bench(state, [](auto& body) {
    spindle::parallel_for(shared_executor(), std::size_t{0}, elements, body);
  });
}

#if defined(SPINDLE_HAVE_TBB)
void BM_ForTbb(benchmark::State& state) {
  for_bench(state, [](auto& body) {
    shared_arena().execute([&] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, elements),
                        [&](tbb::blocked_range<std::size_t> const& r) {
                          for (std::size_t i = r.begin(); i != r.end(); ++i) {
                            body(i);
                          }
                        });
    });
  });
}
#endif

#if defined(SPINDLE_HAVE_OPENMP)
void BM_ForOpenMp(benchmark::State& state) {
  for_bench(state, [](auto& body) {
    auto const n = static_cast<std::int64_t>(elements);
    auto const threads = static_cast<int>(workers());
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::int64_t i = 0; i < n; ++i) {
      body(static_cast<std::size_t>(i));
    }
  });
}
#endif

// CPU milliseconds the whole process burns while an executor of 2 workers sits idle for
// 200 ms (reported as a counter; the target is well under 1 ms per 2 s).
void BM_IdleExecutorCpu(benchmark::State& state) {
  auto const cpu_ms = process_cpu_ms;
  double burned = 0;
  for (auto _ : state) {
    spindle::executor ex{2};
    ex.spawn([] {}).join();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    double const before = cpu_ms();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    burned += cpu_ms() - before;
  }
  state.counters["cpu_ms_per_200ms"] = burned / static_cast<double>(state.iterations());
}

}  // namespace

BENCHMARK(BM_FibSerial)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FibSpindleJoin)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FibSpindleJoinCutoff)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FibSpindleTaskGroup)->Unit(benchmark::kMillisecond)->UseRealTime();
#if defined(SPINDLE_HAVE_TBB)
BENCHMARK(BM_FibTbbTaskGroup)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif
#if defined(SPINDLE_HAVE_OPENMP)
BENCHMARK(BM_FibOpenMpTask)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
#endif
BENCHMARK(BM_SpawnSpindlePost)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SpawnSpindleTaskGroup)->Unit(benchmark::kMillisecond)->UseRealTime();
#if defined(SPINDLE_HAVE_TBB)
BENCHMARK(BM_SpawnTbbTaskGroup)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SpawnTbbArenaEnqueue)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif
BENCHMARK(BM_ForSerial)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ForSpindle)->Unit(benchmark::kMillisecond)->UseRealTime();
#if defined(SPINDLE_HAVE_TBB)
BENCHMARK(BM_ForTbb)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif
#if defined(SPINDLE_HAVE_OPENMP)
BENCHMARK(BM_ForOpenMp)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif
BENCHMARK(BM_IdleExecutorCpu)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

BENCHMARK_MAIN();

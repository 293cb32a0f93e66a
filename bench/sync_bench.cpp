// Benchmarks of spindle's synchronisation primitives against the standard library's, in one
// binary so that every run interleaves them: spindle::mutex against std::mutex (uncontended,
// and contended by 2-16 threads that each hold the lock for a short critical section), and
// spindle::semaphore against std::counting_semaphore (acquire/release of one permit by threads
// sharing 4 permits). spindle's are fair (FIFO hand-off); std::mutex on glibc is not, so the
// contended rows compare a fair lock against a barging one: the price of fairness is visible
// there, as it is for tokio's Mutex. A barrier's phase rate, spindle::barrier against
// std::barrier: every thread is a party and each iteration is one phase (arrive_and_wait), so
// items are phases; with more threads than cores a phase waits for a descheduled party, and the
// rate shows how each barrier sleeps and wakes. Results: docs/performance.md, "Synchronisation
// primitives".

#include <spindle/barrier.hpp>
#include <spindle/mutex.hpp>
#include <spindle/semaphore.hpp>

#include <benchmark/benchmark.h>

#include <barrier>
#include <cstdint>
#include <memory>
#include <mutex>
#include <semaphore>

namespace {

/// A critical section of a few dozen instructions, the size a lock usually guards.
inline void critical(std::uint64_t& shared) {
  for (int i = 0; i < 16; ++i) {
    shared = shared * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  benchmark::DoNotOptimize(shared);
}

std::uint64_t spindle_shared = 1;
std::uint64_t std_shared = 1;

void BM_SpindleMutex(benchmark::State& state) {
  static spindle::mutex m;
  for (auto _ : state) {
    auto g = m.lock();
    critical(spindle_shared);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_StdMutex(benchmark::State& state) {
  static std::mutex m;
  for (auto _ : state) {
    std::lock_guard g(m);
    critical(std_shared);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_SpindleMutexTryLock(benchmark::State& state) {
  static spindle::mutex m;
  for (auto _ : state) {
    if (auto g = m.try_lock()) {
      critical(spindle_shared);
    }
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_SpindleSemaphore(benchmark::State& state) {
  static spindle::semaphore s(4);
  for (auto _ : state) {
    auto p = s.acquire();
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_StdSemaphore(benchmark::State& state) {
  static std::counting_semaphore<> s(4);
  for (auto _ : state) {
    s.acquire();
    s.release();
  }
  state.SetItemsProcessed(state.iterations());
}

/// One phase per iteration, every thread a party. Thread 0 builds the barrier before the loop
/// (replacing the previous run's): the benchmark's own start and stop barriers order that
/// against every thread's loop. Every thread counts its iterations as items; the framework
/// divides the sum by the thread count, so items_per_second reads as phases per second.
template <class Barrier>
void barrier_phases(benchmark::State& state) {
  static std::unique_ptr<Barrier> b;
  if (state.thread_index() == 0) {
    b = std::make_unique<Barrier>(state.threads());
  }
  for (auto _ : state) {
    b->arrive_and_wait();
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_SpindleBarrier(benchmark::State& state) {
  barrier_phases<spindle::barrier<>>(state);
}
void BM_StdBarrier(benchmark::State& state) {
  barrier_phases<std::barrier<>>(state);
}

}  // namespace

BENCHMARK(BM_SpindleMutex)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK(BM_StdMutex)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK(BM_SpindleMutexTryLock)->Threads(1)->UseRealTime();
BENCHMARK(BM_SpindleSemaphore)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK(BM_StdSemaphore)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK(BM_SpindleBarrier)->ThreadRange(2, 8)->UseRealTime();
BENCHMARK(BM_StdBarrier)->ThreadRange(2, 8)->UseRealTime();

BENCHMARK_MAIN();

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
//
// Broadcast fan-out: one sender sends N messages as fast as it can into spindle::broadcast of
// capacity 1024 while R receivers (1-16; threads, or coroutines on a 2-worker executor) each read
// until the close. The figure is messages sent per second, from the start gate to the last
// receiver's end of stream (tokio::sync::broadcast in the same shape: bench/anchors, `anchor-rust
// bcast`). The sender never waits for a receiver, so a receiver that falls behind skips what was
// overwritten: the `delivered` counter is the share of the R x N copies that were received (the
// rest was reported lagged), which says how much of the throughput reached the receivers.
// The Paced rows measure delivered throughput instead: the sender waits whenever it is half the
// capacity ahead of the slowest receiver, so that no receiver lags (`anchor-rust coro bcast
// --paced 1` is tokio's).

#include <spindle/barrier.hpp>
#include <spindle/broadcast.hpp>
#include <spindle/executor.hpp>
#include <spindle/mutex.hpp>
#include <spindle/semaphore.hpp>
#include <spindle/task.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <latch>
#include <memory>
#include <mutex>
#include <semaphore>
#include <thread>
#include <vector>

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

/// What one receiver of the fan-out saw.
struct fan_out_tally {
  std::uint64_t received = 0;
  std::uint64_t missed = 0;
  std::uint64_t sum = 0;
  /// received + missed, published for a paced sender.
  std::atomic<std::uint64_t> progress{0};

  void count(spindle::broadcast_recv_result<std::uint64_t> const& m) {
    if (m.is_received()) {
      ++received;
      sum += *m.value;
    } else {
      missed += m.missed;
    }
    progress.store(received + missed, std::memory_order_relaxed);
  }
};

constexpr std::uint64_t fan_out_messages = 1U << 20U;
constexpr std::size_t fan_out_capacity = 1024;

/// Sends the messages; a paced sender keeps within half the capacity of the slowest receiver.
template <bool Paced>
void fan_out_send(spindle::broadcast_sender<std::uint64_t>& tx,
                  std::vector<fan_out_tally> const& tallies) {
  for (std::uint64_t i = 0; i < fan_out_messages; ++i) {
    if constexpr (Paced) {
      if (i % 64 == 0) {
        for (auto const& t : tallies) {
          while (i - t.progress.load(std::memory_order_relaxed) >= fan_out_capacity / 2) {
            std::this_thread::yield();
          }
        }
      }
    }
    benchmark::DoNotOptimize(tx.send(std::uint64_t{i}));
  }
  tx.close();
}

/// Reports one run that took `seconds` from the start to the last receiver's end of stream, and
/// checks that every receiver accounted for every message.
void fan_out_report(benchmark::State& state, std::vector<fan_out_tally> const& tallies,
                    double seconds) {
  std::uint64_t received = 0;
  std::uint64_t missed = 0;
  for (auto const& t : tallies) {
    received += t.received;
    missed += t.missed;
    if (t.received + t.missed != fan_out_messages) {
      state.SkipWithError("a receiver neither got nor was told it missed every message");
    }
  }
  state.SetIterationTime(seconds);
  // Every iteration sends fan_out_messages; the total is what items_per_second divides.
  state.SetItemsProcessed(state.items_processed() + static_cast<std::int64_t>(fan_out_messages));
  state.counters["delivered"] =
      static_cast<double>(received) / static_cast<double>(received + missed);
}

template <bool Paced>
void BM_BroadcastFanOutThreads(benchmark::State& state) {
  auto const receivers = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    auto [tx, rx] = spindle::broadcast<std::uint64_t>(fan_out_capacity);
    std::vector<fan_out_tally> tallies(receivers);
    std::vector<spindle::broadcast_receiver<std::uint64_t>> rxs;
    for (std::size_t i = 0; i < receivers; ++i) {
      rxs.push_back(tx.subscribe());
    }
    { auto first = std::move(rx); }
    std::latch gate(static_cast<std::ptrdiff_t>(receivers) + 1);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < receivers; ++i) {
      threads.emplace_back([&gate, t = &tallies[i], r = &rxs[i]] {
        gate.arrive_and_wait();
        for (;;) {
          auto m = r->recv();
          if (m.is_closed()) {
            return;
          }
          t->count(m);
        }
      });
    }
    gate.arrive_and_wait();
    auto const start = std::chrono::steady_clock::now();
    fan_out_send<Paced>(tx, tallies);
    for (auto& t : threads) {
      t.join();
    }
    std::chrono::duration<double> const elapsed = std::chrono::steady_clock::now() - start;
    fan_out_report(state, tallies, elapsed.count());
  }
}

auto fan_out_receive(spindle::broadcast_receiver<std::uint64_t> r, fan_out_tally& t)
    -> spindle::task<> {
  for (;;) {
    auto m = co_await r.async_recv();
    if (m.is_closed()) {
      co_return;
    }
    t.count(m);
  }
}

template <bool Paced>
void BM_BroadcastFanOutCoroutines(benchmark::State& state) {
  auto const receivers = static_cast<std::size_t>(state.range(0));
  spindle::executor ex(2);
  for (auto _ : state) {
    auto [tx, rx] = spindle::broadcast<std::uint64_t>(fan_out_capacity);
    std::vector<fan_out_tally> tallies(receivers);
    { auto first = std::move(rx); }
    auto const start = std::chrono::steady_clock::now();
    std::vector<spindle::join_handle<void>> handles;
    for (std::size_t i = 0; i < receivers; ++i) {
      handles.push_back(ex.spawn(fan_out_receive(tx.subscribe(), tallies[i])));
    }
    fan_out_send<Paced>(tx, tallies);
    for (auto& h : handles) {
      h.join();
    }
    std::chrono::duration<double> const elapsed = std::chrono::steady_clock::now() - start;
    fan_out_report(state, tallies, elapsed.count());
  }
}

}  // namespace

BENCHMARK(BM_SpindleMutex)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK(BM_StdMutex)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK(BM_SpindleMutexTryLock)->Threads(1)->UseRealTime();
BENCHMARK(BM_SpindleSemaphore)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK(BM_StdSemaphore)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK(BM_SpindleBarrier)->ThreadRange(2, 8)->UseRealTime();
BENCHMARK(BM_StdBarrier)->ThreadRange(2, 8)->UseRealTime();

BENCHMARK(BM_BroadcastFanOutThreads<false>)
    ->Name("BM_BroadcastFanOutThreads")
    ->RangeMultiplier(2)
    ->Range(1, 16)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BroadcastFanOutCoroutines<false>)
    ->Name("BM_BroadcastFanOutCoroutines")
    ->RangeMultiplier(2)
    ->Range(1, 16)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BroadcastFanOutThreads<true>)
    ->Name("BM_BroadcastFanOutPacedThreads")
    ->RangeMultiplier(2)
    ->Range(1, 16)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BroadcastFanOutCoroutines<true>)
    ->Name("BM_BroadcastFanOutPacedCoroutines")
    ->RangeMultiplier(2)
    ->Range(1, 16)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();

// A three-stage pipeline over spindle channels: a producer feeds numbers through a bounded
// channel (back-pressure: it waits when the workers fall behind), a pool of workers squares
// them, and a collector receives the results from an unbounded channel. Closing is implicit:
// when the last sender of a channel is gone, its receivers drain it and stop.

#include <spindle/channel.hpp>

#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

int main() {
  constexpr std::uint64_t count = 10000;
  constexpr int workers = 3;

  auto [jobs_tx, jobs_rx] = spindle::bounded<std::uint64_t>(64);
  auto [results_tx, results_rx] = spindle::unbounded<std::uint64_t>();

  std::vector<std::jthread> threads;
  threads.emplace_back([tx = std::move(jobs_tx)]() mutable {
    for (std::uint64_t i = 1; i <= count; ++i) {
      if (!tx.send(i)) {
        return;  // every receiver is gone: nobody wants the rest
      }
    }
  });  // the producer's sender dies here: the jobs channel closes once drained

  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([rx = jobs_rx, tx = results_tx]() mutable {
      for (auto n : rx) {  // until the jobs channel is closed and drained
        static_cast<void>(tx.send(n * n));
      }
    });
  }
  // Keep no handles here that would hold the channels open.
  { auto gone = std::move(jobs_rx); }
  { auto gone = std::move(results_tx); }

  std::uint64_t sum = 0;
  std::uint64_t received = 0;
  for (auto square : results_rx) {
    sum += square;
    ++received;
  }
  std::uint64_t const expected = count * (count + 1) * (2 * count + 1) / 6;
  std::printf("received %llu squares, sum %llu (expected %llu)\n",
              static_cast<unsigned long long>(received), static_cast<unsigned long long>(sum),
              static_cast<unsigned long long>(expected));
  return sum == expected && received == count ? 0 : 1;
}

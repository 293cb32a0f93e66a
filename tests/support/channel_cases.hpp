#pragma once
// Test support: scenarios that every channel flavour (bounded, unbounded, rendezvous) must pass
// the same way, and a receive loop shared by the tests. Each flavour's test file calls them
// with a channel of its own kind, so the scenario is written once and the file still says
// which flavour it checks.

#include <spindle/channel.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

namespace spindle_test {

/// The capacity that stands for an unbounded channel in the tests' tables of flavours.
inline constexpr std::size_t unbounded_capacity = SIZE_MAX;

/// The two handles of one channel, named (clang 14 cannot capture a structured binding).
template <class T>
struct endpoints {
  spindle::sender<T> tx;
  spindle::receiver<T> rx;
};

/// A channel of `capacity`: unbounded_capacity is unbounded, 0 a rendezvous.
template <class T>
auto make_endpoints(std::size_t capacity) -> endpoints<T> {
  auto ch =
      capacity == unbounded_capacity ? spindle::unbounded<T>() : spindle::bounded<T>(capacity);
  return {std::move(ch.first), std::move(ch.second)};
}

/// A receiver blocked in recv(stop_token) returns `cancelled` once the token is stopped,
/// whether it has already parked or not. `rx` is copied into the blocked thread.
template <class T>
void expect_stop_token_cancels_blocked_recv(spindle::receiver<T> const& rx) {
  std::stop_source stop;
  std::latch started(1);
  spindle::recv_status status = spindle::recv_status::empty;
  std::thread t([&, rx = rx]() mutable {
    started.count_down();
    status = rx.recv(stop.get_token()).status;
  });
  started.wait();
  stop.request_stop();  // wakes the receiver whether it is already parked or not
  t.join();
  EXPECT_EQ(status, spindle::recv_status::cancelled);
}

/// Receives from `rx` with recv_for(`timeout`) until it reports closed, passing each value to
/// `take`; a wait that timed out simply waits again.
template <class T, class Rep, class Period, class Take>
void recv_for_until_closed(spindle::receiver<T>& rx, std::chrono::duration<Rep, Period> timeout,
                           Take take) {
  for (;;) {
    auto r = rx.recv_for(timeout);
    if (r.status == spindle::recv_status::closed) {
      return;
    }
    if (r.status == spindle::recv_status::received) {
      take(std::move(*r.value));
    }
  }
}

/// `producers` threads each send 1..per_producer through copies of the channel's sender while
/// `consumers` threads drain copies of its receiver with range-for. The caller's handles are
/// dropped once the threads hold theirs, so the channel closes when the last producer is done;
/// every value must then have arrived exactly once (count and sum).
inline void expect_many_to_many_delivers_everything(
    std::pair<spindle::sender<std::uint64_t>, spindle::receiver<std::uint64_t>> channel,
    int producers, int consumers, std::uint64_t per_producer) {
  auto [tx, rx] = std::move(channel);
  std::atomic<std::uint64_t> sum{0};
  std::atomic<std::uint64_t> count{0};
  {
    std::vector<std::jthread> threads;
    for (int c = 0; c < consumers; ++c) {
      threads.emplace_back([&, rx = rx]() mutable {
        for (auto v : rx) {
          // relaxed: running totals only, read after every thread is joined.
          sum.fetch_add(v, std::memory_order_relaxed);
          count.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([per_producer, tx = tx]() mutable {
        for (std::uint64_t i = 1; i <= per_producer; ++i) {
          ASSERT_TRUE(tx.send(i));
        }
      });
    }
    { auto gone = std::move(tx); }  // the producers hold the remaining senders
    { auto gone = std::move(rx); }
  }
  auto const p = static_cast<std::uint64_t>(producers);
  EXPECT_EQ(count.load(), p * per_producer);
  EXPECT_EQ(sum.load(), p * per_producer * (per_producer + 1) / 2);
}

}  // namespace spindle_test

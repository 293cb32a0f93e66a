#pragma once
// Test support: scenarios that every channel flavour (bounded, unbounded, rendezvous, lanes, spsc)
// must pass the same way, and a receive loop shared by the tests. Each flavour's test file calls
// them with a channel of its own kind, so the scenario is written once and the file still says
// which flavour it checks. The parameterized suites name a flavour by one number, a "capacity"
// that make_endpoints turns into a channel (see lanes_capacity for the lanes flavour).

#include <spindle/channel.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <limits>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

namespace spindle_test {

/// The capacity that stands for an unbounded channel in the tests' tables of flavours.
inline constexpr std::size_t unbounded_capacity = SIZE_MAX;

/// The capacities that stand for a bounded_lanes channel in the tests' tables of flavours: the
/// top bit marks one, the 16 bits below it hold the lane count (0: one lane per processor) and
/// the bits below those the capacity of one lane. lanes_capacity() makes such a number,
/// make_endpoints() the channel it names.
inline constexpr int lanes_count_shift = std::numeric_limits<std::size_t>::digits - 17;
inline constexpr std::size_t lanes_flag = std::size_t{1}
                                          << (std::numeric_limits<std::size_t>::digits - 1);
inline constexpr std::size_t lane_capacity_mask = (std::size_t{1} << lanes_count_shift) - 1;

/// The capacity that stands for spindle::bounded_lanes(lane_capacity, lanes).
///
/// Preconditions: lane_capacity <= lane_capacity_mask, lanes < 65535 (so that the number is
/// neither unbounded_capacity nor ambiguous).
constexpr auto lanes_capacity(std::size_t lane_capacity, std::size_t lanes) -> std::size_t {
  return lanes_flag | (lanes << lanes_count_shift) | lane_capacity;
}

/// Whether `capacity` names a bounded_lanes channel (made by lanes_capacity).
constexpr auto is_lanes_capacity(std::size_t capacity) -> bool {
  return capacity != unbounded_capacity && (capacity & lanes_flag) != 0;
}

/// The lane count asked for by a lanes capacity (0: one per processor).
constexpr auto lane_count_of(std::size_t capacity) -> std::size_t {
  return (capacity & ~lanes_flag) >> lanes_count_shift;
}

/// How many values one sender handle can buffer before its next send waits: the capacity of a
/// bounded channel, the capacity of the handle's lane for a lanes channel, 0 for a rendezvous,
/// unbounded_capacity for an unbounded channel.
constexpr auto room_per_sender(std::size_t capacity) -> std::size_t {
  return is_lanes_capacity(capacity) ? capacity & lane_capacity_mask : capacity;
}

static_assert(is_lanes_capacity(lanes_capacity(1, 2)) && !is_lanes_capacity(unbounded_capacity));
static_assert(lane_count_of(lanes_capacity(3, 4096)) == 4096);
static_assert(room_per_sender(lanes_capacity(37, 0)) == 37 && room_per_sender(5) == 5);

/// The two handles of one channel, named (clang 14 cannot capture a structured binding).
template <class T>
struct endpoints {
  spindle::sender<T> tx;
  spindle::receiver<T> rx;
};

/// A channel of `capacity`: unbounded_capacity is unbounded, 0 a rendezvous, a number made by
/// lanes_capacity() a bounded_lanes channel, any other number bounded(capacity).
template <class T>
auto make_endpoints(std::size_t capacity) -> endpoints<T> {
  auto ch = capacity == unbounded_capacity ? spindle::unbounded<T>()
            : is_lanes_capacity(capacity)
                ? spindle::bounded_lanes<T>(room_per_sender(capacity), lane_count_of(capacity))
                : spindle::bounded<T>(capacity);
  return {std::move(ch.first), std::move(ch.second)};
}

/// Sends make(i), for i = 0, 1, ..., through `tx` until it reports full; returns how many it
/// sent. That fills the room of `tx` (its lane, for a lanes channel) and nothing else, so a
/// receiver that takes one value then makes room for `tx`. Nothing for an unbounded channel.
template <class T, class Make>
auto fill_room_of(spindle::sender<T>& tx, Make make) -> std::size_t {
  if (tx.capacity() == unbounded_capacity) {
    return 0;
  }
  std::size_t sent = 0;
  // At most capacity() sends: a channel that takes more is broken, and the caller's count
  // shows it.
  while (sent <= tx.capacity() && tx.try_send(make(sent))) {
    ++sent;
  }
  return sent;
}

/// Fills every slot of a bounded channel, so that a send waits whichever handle it goes
/// through: through `tx`, and for a lanes channel through copies of `tx` too, each of which
/// takes the next lane, until capacity() values are buffered (make(i) makes the i-th).
/// Returns how many it sent: capacity(), or less if the channel did not take them. Nothing
/// for an unbounded channel.
///
/// Preconditions: nothing else sends into or receives from the channel meanwhile.
template <class T, class Make>
auto fill_every_slot(spindle::sender<T>& tx, Make make) -> std::size_t {
  if (tx.capacity() == unbounded_capacity) {
    return 0;
  }
  auto const from = [&make](std::size_t first) {
    return [&make, first](std::size_t i) { return make(first + i); };
  };
  std::size_t sent = fill_room_of(tx, from(0));
  // Copies take lanes round robin, so capacity() copies visit every lane at least once.
  for (std::size_t copies = 0; sent < tx.capacity() && copies < tx.capacity(); ++copies) {
    auto copy = tx;
    sent += fill_room_of(copy, from(sent));
  }
  return sent;
}

/// A receiver blocked in recv(stop_token) on an empty channel returns `cancelled` once the
/// token is stopped, whether it was still trying or had already parked (a stop at once, and
/// one 20 ms later, when the receiver has long parked). The blocked thread uses `rx` itself,
/// so any kind of receiving handle will do (an spsc_receiver cannot be copied).
template <class T>
void expect_stop_token_cancels_blocked_recv(spindle::basic_receiver<T>& rx) {
  using namespace std::chrono_literals;
  for (auto const pause : {0ms, 20ms}) {
    std::stop_source stop;
    std::latch started(1);
    spindle::recv_status status = spindle::recv_status::empty;
    std::thread t([&] {
      started.count_down();
      status = rx.recv(stop.get_token()).status;
    });
    started.wait();
    std::this_thread::sleep_for(pause);
    stop.request_stop();  // wakes the receiver whether it is already parked or not
    t.join();
    EXPECT_EQ(status, spindle::recv_status::cancelled) << "stop after " << pause.count() << " ms";
  }
}

/// Receives from `rx` with recv_for(`timeout`) until it reports closed, passing each value to
/// `take`; a wait that timed out simply waits again.
template <class T, class Rep, class Period, class Take>
void recv_for_until_closed(spindle::basic_receiver<T>& rx,
                           std::chrono::duration<Rep, Period> timeout, Take take) {
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

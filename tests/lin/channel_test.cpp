// Channels are linearizable FIFO queues: short random histories of try_send/try_recv from three
// threads on two channels at once (each checked on its own, by locality), for bounded(1),
// bounded(2), bounded(3) and unbounded, checked against the sequential specification. The
// single-producer single-consumer flavour gets histories of its own: two threads, each the
// sender of one channel and the receiver of the other.
#include <spindle/channel.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "lin/runner.hpp"
#include "lin/wgl.hpp"

using spindle_lin::op_kind;
using spindle_lin::operation;
using spindle_lin::outcome;

namespace {

/// Records a try_send of `o.arg` through `tx` as operation `o`.
template <class Sender>
void record_try_send(spindle_lin::recorder& r, operation o, Sender& tx) {
  r.record(o, [&](operation& x) {
    auto res = tx.try_send(x.arg);
    x.result = res.status == spindle::send_status::sent   ? outcome::ok
               : res.status == spindle::send_status::full ? outcome::full
                                                          : outcome::closed;
  });
}

/// Records a try_recv through `rx` as operation `o`.
template <class Receiver>
void record_try_recv(spindle_lin::recorder& r, operation o, Receiver& rx) {
  r.record(o, [&](operation& x) {
    auto res = rx.try_recv();
    if (res.status == spindle::recv_status::received) {
      x.value = *res.value;
    } else {
      x.result = res.status == spindle::recv_status::empty ? outcome::empty : outcome::closed;
    }
  });
}

struct channel_pair {
  spindle::sender<std::int64_t> tx;
  spindle::receiver<std::int64_t> rx;
};

auto make(std::size_t capacity) -> channel_pair {
  if (capacity == std::numeric_limits<std::size_t>::max()) {
    auto [tx, rx] = spindle::unbounded<std::int64_t>();
    return {std::move(tx), std::move(rx)};
  }
  auto [tx, rx] = spindle::bounded<std::int64_t>(capacity);
  return {std::move(tx), std::move(rx)};
}

/// Runs `histories` random histories on channels of `capacity`; returns the first one that is
/// not linearizable (empty when all are).
auto check_channels(std::size_t capacity, std::uint32_t seed) -> std::vector<operation> {
  auto run_one = [capacity, seed](int h) {
    channel_pair channels[2] = {make(capacity), make(capacity)};
    std::vector<std::function<void(spindle_lin::recorder&)>> bodies;
    for (int t = 0; t < 3; ++t) {
      bodies.emplace_back([&channels, t, h, seed](spindle_lin::recorder& r) {
        std::mt19937 rng(seed * 7919U + static_cast<std::uint32_t>(h * 31 + t));
        auto tx = channels[0].tx;  // each thread uses its own handle copies
        auto rx = channels[0].rx;
        auto tx1 = channels[1].tx;
        auto rx1 = channels[1].rx;
        for (int i = 0; i < 5; ++i) {
          operation o;
          o.object = static_cast<int>(rng() % 2);
          bool const send = rng() % 2 == 0;
          auto& s = o.object == 0 ? tx : tx1;
          auto& v = o.object == 0 ? rx : rx1;
          if (send) {
            o.kind = op_kind::send;
            o.arg = t * 100 + i;
            record_try_send(r, o, s);
          } else {
            o.kind = op_kind::recv;
            record_try_recv(r, o, v);
          }
        }
      });
    }
    return spindle_lin::run_history(bodies);
  };
  return spindle_lin::first_non_linearizable(
      run_one, [capacity](int) { return spindle_lin::fifo_spec{capacity}; });
}

/// bounded_spsc(capacity): thread 0 sends on channel 0 and receives from channel 1, thread 1
/// the other way round, so each channel has one sending and one receiving thread.
auto check_spsc_channels(std::size_t capacity, std::uint32_t seed) -> std::vector<operation> {
  auto run_one = [capacity, seed](int h) {
    auto [tx0, rx0] = spindle::bounded_spsc<std::int64_t>(capacity);
    auto [tx1, rx1] = spindle::bounded_spsc<std::int64_t>(capacity);
    spindle::spsc_sender<std::int64_t>* senders[2] = {&tx0, &tx1};
    spindle::spsc_receiver<std::int64_t>* receivers[2] = {&rx1, &rx0};
    std::vector<std::function<void(spindle_lin::recorder&)>> bodies;
    for (int t = 0; t < 2; ++t) {
      bodies.emplace_back([&, t, h](spindle_lin::recorder& r) {
        std::mt19937 rng(seed * 7919U + static_cast<std::uint32_t>(h * 31 + t));
        auto& tx = *senders[t];    // channel t
        auto& rx = *receivers[t];  // channel 1 - t
        for (int i = 0; i < 6; ++i) {
          operation o;
          if (rng() % 2 == 0) {
            o.object = t;
            o.kind = op_kind::send;
            o.arg = t * 100 + i;
            record_try_send(r, o, tx);
          } else {
            o.object = 1 - t;
            o.kind = op_kind::recv;
            record_try_recv(r, o, rx);
          }
        }
      });
    }
    return spindle_lin::run_history(bodies);
  };
  return spindle_lin::first_non_linearizable(
      run_one, [capacity](int) { return spindle_lin::fifo_spec{capacity}; });
}

}  // namespace

TEST(LinChannel, Example) {
  auto const bad = check_channels(2, 1);
  EXPECT_TRUE(bad.empty()) << "bounded(2) history not linearizable:\n"
                           << spindle_lin::describe(bad);
}

TEST(LinChannel, BoundedCapacityOne) {
  auto const bad = check_channels(1, 2);
  EXPECT_TRUE(bad.empty()) << "bounded(1) history not linearizable:\n"
                           << spindle_lin::describe(bad);
}

TEST(LinChannel, BoundedCapacityThree) {
  auto const bad = check_channels(3, 3);
  EXPECT_TRUE(bad.empty()) << "bounded(3) history not linearizable:\n"
                           << spindle_lin::describe(bad);
}

// bounded(9) of 8-byte values spreads its first 8 positions over two rows of slots
// (array_channel.hpp, "Spread slots") and leaves the ninth in place.
TEST(LinChannel, BoundedCapacityNineSpreadsItsSlots) {
  auto const bad = check_channels(9, 5);
  EXPECT_TRUE(bad.empty()) << "bounded(9) history not linearizable:\n"
                           << spindle_lin::describe(bad);
}

TEST(LinChannel, Unbounded) {
  auto const bad = check_channels(std::numeric_limits<std::size_t>::max(), 4);
  EXPECT_TRUE(bad.empty()) << "unbounded history not linearizable:\n" << spindle_lin::describe(bad);
}

TEST(LinChannel, SpscCapacityOneAndTwo) {
  for (std::size_t capacity : {std::size_t{1}, std::size_t{2}}) {
    auto const bad = check_spsc_channels(capacity, 6);
    EXPECT_TRUE(bad.empty()) << "bounded_spsc(" << capacity << ") history not linearizable:\n"
                             << spindle_lin::describe(bad);
  }
}

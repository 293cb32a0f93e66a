// spindle::bounded / spindle::unbounded handles, and the bounded (array) flavour in detail.
// The unbounded and rendezvous flavours have their own files: channel_unbounded_test.cpp and
// channel_zero_test.cpp.

#include <spindle/channel.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <latch>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <vector>

#include "support/channel_cases.hpp"
#include "support/tracked.hpp"

namespace {

using namespace std::chrono_literals;
using spindle::recv_status;
using spindle::send_status;
using spindle_test::tracked;

// A producer thread sends jobs through a bounded channel; the consumer receives them with a
// range-for, which ends once the producer has closed the channel and everything is drained.
TEST(Channel, Example) {
  auto [tx, rx] = spindle::bounded<int>(16);  // at most 16 values buffered

  std::jthread producer([tx = std::move(tx)]() mutable {
    for (int i = 1; i <= 100; ++i) {
      // send blocks while the channel is full; it fails only if the channel was closed.
      auto r = tx.send(i);
      ASSERT_TRUE(r);
    }
    tx.close();  // or simply let the last sender go out of scope
  });

  int sum = 0;
  for (int v : rx) {  // receives until closed and drained
    sum += v;
  }
  EXPECT_EQ(sum, 5050);

  // Once closed, a send hands the value back instead of dropping it.
  auto [tx2, rx2] = spindle::bounded<std::unique_ptr<int>>(1);
  rx2.close();
  auto r = tx2.send(std::make_unique<int>(7));
  EXPECT_EQ(r.status, send_status::closed);
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(**r.value, 7);
}

// ---- Creating channels -------------------------------------------------------------------

TEST(Channel, CapacityReportsTheBound) {
  auto [tx, rx] = spindle::bounded<int>(5);
  EXPECT_EQ(tx.capacity(), 5U);
  EXPECT_EQ(rx.capacity(), 5U);
}

TEST(Channel, UnboundedCapacityIsSizeMax) {
  auto [tx, rx] = spindle::unbounded<int>();
  EXPECT_EQ(tx.capacity(), std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(rx.capacity(), std::numeric_limits<std::size_t>::max());
}

TEST(Channel, BoundedZeroIsARendezvous) {
  auto [tx, rx] = spindle::bounded<int>(0);
  EXPECT_EQ(tx.capacity(), 0U);
  EXPECT_EQ(tx.try_send(1).status, send_status::full);  // nobody waits to receive
}

TEST(Channel, HugeCapacityThrowsLengthError) {
  EXPECT_THROW(static_cast<void>(spindle::bounded<int>(std::numeric_limits<std::size_t>::max())),
               std::length_error);
  EXPECT_THROW(
      static_cast<void>(spindle::bounded<int>(std::numeric_limits<std::size_t>::max() / 8)),
      std::length_error);
}

TEST(Channel, ResultsConvertToBool) {
  auto [tx, rx] = spindle::bounded<int>(1);
  EXPECT_TRUE(tx.try_send(1));
  EXPECT_FALSE(tx.try_send(2));
  EXPECT_TRUE(rx.try_recv());
  EXPECT_FALSE(rx.try_recv());
}

// ---- Basic operations ----------------------------------------------------------------------

TEST(BoundedChannel, TrySendAndTryRecvReportEveryStatus) {
  auto [tx, rx] = spindle::bounded<int>(2);
  EXPECT_EQ(rx.try_recv().status, recv_status::empty);
  EXPECT_EQ(tx.try_send(1).status, send_status::sent);
  EXPECT_EQ(tx.try_send(2).status, send_status::sent);
  auto full = tx.try_send(3);
  EXPECT_EQ(full.status, send_status::full);
  ASSERT_TRUE(full.value.has_value());
  EXPECT_EQ(*full.value, 3);

  auto r = rx.try_recv();
  EXPECT_EQ(r.status, recv_status::received);
  EXPECT_EQ(*r.value, 1);
  tx.close();
  auto closed = tx.try_send(4);
  EXPECT_EQ(closed.status, send_status::closed);
  EXPECT_EQ(*closed.value, 4);
  EXPECT_EQ(*rx.try_recv().value, 2);  // still drains after close
  EXPECT_EQ(rx.try_recv().status, recv_status::closed);
}

TEST(BoundedChannel, DeliversInFifoOrder) {
  auto [tx, rx] = spindle::bounded<int>(100);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(tx.try_send(i));
  }
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(*rx.recv(), i);
  }
}

TEST(BoundedChannel, SizeCountsBufferedValues) {
  auto [tx, rx] = spindle::bounded<int>(3);
  EXPECT_EQ(tx.size(), 0U);
  ASSERT_TRUE(tx.try_send(1));
  ASSERT_TRUE(tx.try_send(2));
  EXPECT_EQ(rx.size(), 2U);
  ASSERT_TRUE(tx.try_send(3));
  EXPECT_EQ(rx.size(), 3U);
  ASSERT_TRUE(rx.try_recv());
  EXPECT_EQ(tx.size(), 2U);
  tx.close();
  EXPECT_EQ(tx.size(), 2U);  // the closed mark does not disturb the count
}

// ---- Edges: capacities, wrap-around --------------------------------------------------------

TEST(BoundedChannel, CapacityOneAlternates) {
  auto [tx, rx] = spindle::bounded<int>(1);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(tx.try_send(i));
    ASSERT_EQ(tx.try_send(-1).status, send_status::full);
    ASSERT_EQ(rx.size(), 1U);
    ASSERT_EQ(*rx.try_recv().value, i);
    ASSERT_EQ(rx.try_recv().status, recv_status::empty);
  }
}

TEST(BoundedChannel, NonPowerOfTwoCapacitiesHoldExactlyTheirBound) {
  for (std::size_t cap : {3U, 5U, 7U, 1000U}) {
    auto [tx, rx] = spindle::bounded<std::size_t>(cap);
    for (int lap = 0; lap < 5; ++lap) {
      for (std::size_t i = 0; i < cap; ++i) {
        ASSERT_TRUE(tx.try_send(i)) << "capacity " << cap;
      }
      ASSERT_EQ(tx.try_send(cap).status, send_status::full) << "capacity " << cap;
      ASSERT_EQ(tx.size(), cap);
      for (std::size_t i = 0; i < cap; ++i) {
        ASSERT_EQ(*rx.try_recv().value, i);
      }
      ASSERT_EQ(rx.try_recv().status, recv_status::empty);
    }
  }
}

TEST(BoundedChannel, WrapsAroundOverManyLaps) {
  auto [tx, rx] = spindle::bounded<std::uint64_t>(3);
  std::uint64_t next_in = 0;
  std::uint64_t next_out = 0;
  // Uneven fill levels so every index is seen at every fill level over the laps.
  for (int round = 0; round < 10000; ++round) {
    auto const burst = static_cast<std::uint64_t>(round % 3) + 1;
    for (std::uint64_t i = 0; i < burst && tx.try_send(next_in); ++i) {
      ++next_in;
    }
    auto r = rx.try_recv();
    ASSERT_TRUE(r);
    ASSERT_EQ(*r.value, next_out++);
  }
  while (auto r = rx.try_recv()) {
    ASSERT_EQ(*r.value, next_out++);
  }
  EXPECT_EQ(next_in, next_out);
}

// The ring spreads consecutive positions over different cache lines where the process may use
// more than two processors, and is contiguous on fewer (array_channel.hpp, "Spread slots"):
// spread fully for capacities of a power of two times the slots per line, partly for others,
// and not at all for slots of more than half a line. Every layout keeps FIFO order and the
// exact bound over many laps at every fill level. The public channel gets the layout of the
// machine the test runs on; the ring itself is driven with both layouts, so that both are
// covered on any machine.
template <std::size_t Bytes>
struct payload {
  std::uint64_t seq = 0;
  std::array<std::byte, Bytes - sizeof(std::uint64_t)> pad{};
};

/// Drives a ring through `try_send(payload) -> bool`, `try_recv() -> optional<payload>` and
/// `size()`, with bursts that reach every fill level, and checks order and bound.
template <std::size_t Bytes, class TrySend, class TryRecv, class Size>
void check_fifo_over_laps(std::size_t cap, TrySend try_send, TryRecv try_recv, Size size) {
  std::uint64_t next_in = 0;
  std::uint64_t next_out = 0;
  for (std::size_t round = 0; round < 40 * cap; ++round) {
    auto const burst = (round % 7) + 1;
    for (std::size_t i = 0; i < burst && try_send(payload<Bytes>{next_in, {}}); ++i) {
      ++next_in;
    }
    ASSERT_LE(size(), cap);
    if (round % 5 == 0) {
      while (try_send(payload<Bytes>{next_in, {}})) {
        ++next_in;
      }
      ASSERT_EQ(size(), cap) << "capacity " << cap << ", " << Bytes << "-byte values";
    }
    for (std::size_t i = 0; i < (round % 3) + 1 && next_out < next_in; ++i) {
      auto r = try_recv();
      ASSERT_TRUE(r) << "capacity " << cap;
      ASSERT_EQ(r->seq, next_out++) << "capacity " << cap << ", " << Bytes << "-byte values";
    }
  }
  while (auto r = try_recv()) {
    ASSERT_EQ(r->seq, next_out++);
  }
  EXPECT_EQ(next_in, next_out);
}

template <std::size_t Bytes>
void check_channel_fifo_over_laps(std::size_t cap) {
  // Named references, not a structured binding: clang 14 cannot capture a binding in a lambda.
  auto ends = spindle::bounded<payload<Bytes>>(cap);
  auto& tx = ends.first;
  auto& rx = ends.second;
  check_fifo_over_laps<Bytes>(
      cap, [&tx](payload<Bytes> p) { return static_cast<bool>(tx.try_send(p)); },
      [&rx] { return rx.try_recv().value; }, [&rx] { return rx.size(); });
}

template <std::size_t Bytes>
void check_ring_fifo_over_laps(std::size_t cap, bool spread) {
  spindle::detail::array_channel<payload<Bytes>> ring(cap, spread);
  check_fifo_over_laps<Bytes>(
      cap, [&ring](payload<Bytes> p) { return ring.try_send(p) == spindle::send_status::sent; },
      [&ring] { return ring.try_recv().value; }, [&ring] { return ring.size(); });
}

TEST(BoundedChannel, SpreadRingKeepsFifoOrderForEveryLayout) {
  for (std::size_t cap : {2U, 4U, 7U, 8U, 9U, 16U, 37U, 64U, 100U, 1024U}) {
    check_channel_fifo_over_laps<8>(cap);
    check_channel_fifo_over_laps<24>(cap);
    check_channel_fifo_over_laps<64>(cap);
    for (bool spread : {true, false}) {
      check_ring_fifo_over_laps<8>(cap, spread);
      check_ring_fifo_over_laps<24>(cap, spread);
      check_ring_fifo_over_laps<64>(cap, spread);
    }
  }
}

// ---- Move-only and counted payloads -------------------------------------------------------

TEST(BoundedChannel, CarriesMoveOnlyTypes) {
  auto [tx, rx] = spindle::bounded<std::unique_ptr<int>>(2);
  ASSERT_TRUE(tx.send(std::make_unique<int>(1)));
  ASSERT_TRUE(tx.try_send(std::make_unique<int>(2)));
  auto full = tx.try_send(std::make_unique<int>(3));
  ASSERT_EQ(full.status, send_status::full);
  EXPECT_EQ(**full.value, 3);  // handed back, not dropped
  EXPECT_EQ(**rx.recv(), 1);
  EXPECT_EQ(**rx.try_recv().value, 2);
}

TEST(BoundedChannel, DestroysEveryValueExactlyOnce) {
  auto const before = tracked::live();
  {
    auto [tx, rx] = spindle::bounded<tracked>(4);
    for (std::uint64_t i = 0; i < 4; ++i) {
      ASSERT_TRUE(tx.send(tracked(i)));
    }
    auto full = tx.try_send(tracked(99));
    EXPECT_EQ(full.value->id(), 99U);
    auto r = rx.recv();
    EXPECT_EQ(r->id(), 0U);
    // Three values stay inside when the channel dies.
  }
  EXPECT_EQ(tracked::live(), before);
}

TEST(BoundedChannel, LastReceiverDropDestroysBufferedValuesAtOnce) {
  auto const before = tracked::live();
  auto [tx, rx] = spindle::bounded<tracked>(8);
  for (std::uint64_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(tx.send(tracked(i)));
  }
  EXPECT_EQ(tracked::live(), before + 5);
  { auto gone = std::move(rx); }
  EXPECT_EQ(tracked::live(), before);  // eager discard: the sender still lives
  EXPECT_TRUE(tx.is_closed());
  auto r = tx.send(tracked(7));
  EXPECT_EQ(r.status, send_status::closed);
  EXPECT_EQ(r.value->id(), 7U);
}

// ---- Handles --------------------------------------------------------------------------------

TEST(Channel, CopiesShareTheChannel) {
  auto [tx, rx] = spindle::bounded<int>(4);
  auto tx2 = tx;
  auto rx2 = rx;
  ASSERT_TRUE(tx2.send(1));
  EXPECT_EQ(*rx.recv(), 1);
  ASSERT_TRUE(tx.send(2));
  EXPECT_EQ(*rx2.recv(), 2);
  rx2.close();
  EXPECT_TRUE(tx.is_closed());
  EXPECT_TRUE(rx.is_closed());
}

TEST(Channel, LastSenderDropClosesAfterDrain) {
  auto [tx, rx] = spindle::bounded<int>(4);
  auto tx2 = tx;
  ASSERT_TRUE(tx.send(1));
  { auto gone = std::move(tx); }
  EXPECT_FALSE(rx.is_closed());  // tx2 still lives
  ASSERT_TRUE(tx2.send(2));
  { auto gone = std::move(tx2); }
  EXPECT_TRUE(rx.is_closed());
  EXPECT_EQ(*rx.recv(), 1);
  EXPECT_EQ(*rx.recv(), 2);
  EXPECT_EQ(rx.recv(), std::nullopt);
  EXPECT_EQ(rx.try_recv().status, recv_status::closed);
}

TEST(Channel, CloseFromTheReceiverSideStillDrains) {
  auto [tx, rx] = spindle::bounded<int>(4);
  ASSERT_TRUE(tx.send(1));
  rx.close();
  EXPECT_EQ(tx.send(2).status, send_status::closed);
  EXPECT_EQ(*rx.recv(), 1);
  EXPECT_EQ(rx.recv(), std::nullopt);
}

TEST(Channel, CloseIsIdempotent) {
  auto [tx, rx] = spindle::bounded<int>(1);
  tx.close();
  tx.close();
  rx.close();
  EXPECT_TRUE(tx.is_closed());
}

TEST(Channel, HandlesCanBeMoveAndCopyAssigned) {
  auto [tx, rx] = spindle::bounded<int>(2);
  auto [tx2, rx2] = spindle::bounded<int>(2);
  tx2 = tx;  // the second channel loses its only sender: closed
  EXPECT_TRUE(rx2.is_closed());
  ASSERT_TRUE(tx2.send(5));
  rx2 = std::move(rx);
  EXPECT_EQ(*rx2.recv(), 5);
}

// Checked in every build, not only with SPINDLE_ENABLE_ASSERTS; channel_misuse_test.cpp tries
// every operation.
TEST(ChannelDeathTest, UsingAMovedFromHandleAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto [tx, rx] = spindle::bounded<int>(1);
  auto tx2 = std::move(tx);
  auto rx2 = std::move(rx);
  EXPECT_DEATH(static_cast<void>(tx.try_send(1)), "moved-from spindle::sender");   // NOLINT
  EXPECT_DEATH(static_cast<void>(rx.try_recv()), "moved-from spindle::receiver");  // NOLINT
}

// ---- Timeouts and cancellation -------------------------------------------------------------

TEST(BoundedChannel, SendForTimesOutAndHandsTheValueBack) {
  auto [tx, rx] = spindle::bounded<std::unique_ptr<int>>(1);
  ASSERT_TRUE(tx.send(std::make_unique<int>(1)));
  auto r = tx.send_for(std::make_unique<int>(2), 5ms);
  EXPECT_EQ(r.status, send_status::timed_out);
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(**r.value, 2);
  EXPECT_EQ(tx.send_for(std::make_unique<int>(3), 0ms).status, send_status::timed_out);
}

TEST(BoundedChannel, RecvForTimesOut) {
  auto [tx, rx] = spindle::bounded<int>(1);
  auto const start = std::chrono::steady_clock::now();
  auto r = rx.recv_for(10ms);
  EXPECT_EQ(r.status, recv_status::timed_out);
  EXPECT_FALSE(r.value.has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 10ms);
  ASSERT_TRUE(tx.send(3));
  EXPECT_EQ(*rx.recv_for(1h).value, 3);  // huge timeouts saturate
}

TEST(BoundedChannel, DeadlinesAcceptAnyClock) {
  auto [tx, rx] = spindle::bounded<int>(1);
  EXPECT_EQ(rx.recv_until(std::chrono::system_clock::now() + 2ms).status, recv_status::timed_out);
  ASSERT_TRUE(tx.send(1));
  EXPECT_EQ(tx.send_until(2, std::chrono::steady_clock::now() + 2ms).status,
            send_status::timed_out);
  EXPECT_EQ(tx.send_until(2, std::chrono::system_clock::now() - 1s).status, send_status::timed_out);
  tx.close();
  EXPECT_EQ(rx.recv_until(std::chrono::system_clock::now() + 1h).status, recv_status::received);
  EXPECT_EQ(rx.recv_until(std::chrono::system_clock::now() + 1h).status, recv_status::closed);
}

TEST(BoundedChannel, StopTokenCancelsABlockedRecv) {
  auto [tx, rx] = spindle::bounded<int>(1);
  spindle_test::expect_stop_token_cancels_blocked_recv(rx);
}

TEST(BoundedChannel, StopTokenRecvStillReceivesAndSeesClose) {
  auto [tx, rx] = spindle::bounded<int>(1);
  std::stop_source stop;
  ASSERT_TRUE(tx.send(4));
  stop.request_stop();
  auto r = rx.recv(stop.get_token());  // a buffered value wins over the stop request
  EXPECT_EQ(r.status, recv_status::received);
  EXPECT_EQ(rx.recv(stop.get_token()).status, recv_status::cancelled);
  tx.close();
  EXPECT_EQ(rx.recv(std::stop_token{}).status, recv_status::closed);
}

// ---- Blocking and waking -------------------------------------------------------------------

TEST(BoundedChannel, BlockedSendResumesWhenASlotFrees) {
  auto [tx, rx] = spindle::bounded<int>(1);
  ASSERT_TRUE(tx.send(1));
  std::latch started(1);
  std::thread t([&, tx = tx]() mutable {
    started.count_down();
    EXPECT_TRUE(tx.send(2));  // blocks until the main thread receives
  });
  started.wait();
  EXPECT_EQ(*rx.recv(), 1);
  EXPECT_EQ(*rx.recv(), 2);
  t.join();
}

// A sender waiting on a full channel prefers to resume once half the ring is free (it then
// works on lines the receivers left long ago, not on the ones they are reading), but one free
// slot is always enough: here the receiver frees exactly one and then waits for the sender, so a
// sender that held out for more room would never finish. Checked while the sender is still in its
// yield rounds and after it has parked.
TEST(BoundedChannel, BlockedSendNeedsOnlyOneFreeSlot) {
  for (auto const pause : {0ms, 20ms}) {
    constexpr int capacity = 64;
    auto [tx, rx] = spindle::bounded<int>(capacity);
    for (int i = 0; i < capacity; ++i) {
      ASSERT_TRUE(tx.try_send(i));
    }
    auto [done_tx, done_rx] = spindle::bounded<int>(1);
    std::thread t([tx = tx, done_tx = done_tx]() mutable {
      EXPECT_TRUE(tx.send(capacity));  // full: blocks until the receiver frees one slot
      EXPECT_TRUE(done_tx.send(1));
    });
    std::this_thread::sleep_for(pause);
    EXPECT_EQ(*rx.recv(), 0);  // one free slot, and no more until the sender reports back
    auto const done = done_rx.recv_for(10s);
    EXPECT_EQ(done.status, recv_status::received) << "pause " << pause.count() << " ms";
    if (done.status != recv_status::received) {
      rx.close();  // lets a stuck sender fail with `closed`, so the thread can be joined
    }
    t.join();
    EXPECT_EQ(rx.size(), static_cast<std::size_t>(capacity));
  }
}

TEST(BoundedChannel, BlockedRecvResumesOnSend) {
  auto [tx, rx] = spindle::bounded<int>(1);
  std::latch started(1);
  std::thread t([&, rx = rx]() mutable {
    started.count_down();
    EXPECT_EQ(*rx.recv(), 42);
  });
  started.wait();
  ASSERT_TRUE(tx.send(42));
  t.join();
}

TEST(BoundedChannel, CloseWakesBlockedSendersWithTheirValues) {
  auto [tx, rx] = spindle::bounded<std::unique_ptr<int>>(1);
  ASSERT_TRUE(tx.send(std::make_unique<int>(0)));
  constexpr int senders = 3;
  std::latch started(senders);
  std::atomic<int> handed_back{0};
  std::vector<std::thread> threads;
  for (int i = 1; i <= senders; ++i) {
    threads.emplace_back([&, i, tx = tx]() mutable {
      started.count_down();
      auto r = tx.send(std::make_unique<int>(i));
      if (r.status == send_status::closed) {
        EXPECT_EQ(**r.value, i);
        handed_back.fetch_add(1);
      }
    });
  }
  started.wait();
  rx.close();
  for (auto& t : threads) {
    t.join();
  }
  // Each blocked sender either got in before the close (then its value is in the channel)
  // or was handed its value back.
  int received = 0;
  while (rx.try_recv()) {
    ++received;
  }
  EXPECT_EQ(received + handed_back.load(), senders + 1);
}

TEST(BoundedChannel, LastSenderDropWakesBlockedReceivers) {
  auto [tx, rx] = spindle::bounded<int>(1);
  std::latch started(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, rx = rx]() mutable {
      started.count_down();
      EXPECT_EQ(rx.recv(), std::nullopt);
    });
  }
  started.wait();
  { auto gone = std::move(tx); }
  for (auto& t : threads) {
    t.join();
  }
}

TEST(BoundedChannel, RangeForStopsWhenClosedAndDrained) {
  static_assert(std::input_iterator<spindle::receiver<int>::iterator>);
  auto [tx, rx] = spindle::bounded<std::unique_ptr<int>>(8);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(tx.send(std::make_unique<int>(i)));
  }
  tx.close();
  int expected = 0;
  for (auto v : rx) {  // move-only values taken by value
    EXPECT_EQ(*v, expected++);
  }
  EXPECT_EQ(expected, 5);
}

TEST(BoundedChannel, ManyProducersManyConsumersDeliverEverything) {
  spindle_test::expect_many_to_many_delivers_everything(spindle::bounded<std::uint64_t>(7),
                                                        /*producers=*/3, /*consumers=*/3,
                                                        /*per_producer=*/20000);
}

}  // namespace

// stats(): a receive that waits for a sender counts as blocked, with at least one wait; a send
// into a full channel likewise; calls that never wait count nothing. Every flavour.
TEST(ChannelStats, CountsOnlyCallsThatSlept) {
  using namespace std::chrono_literals;
  for (std::size_t cap : {std::size_t{0}, std::size_t{1}}) {
    auto [tx, rx] = spindle::bounded<int>(cap);
    if (cap == 1) {
      ASSERT_TRUE(tx.try_send(1).is_sent());
      ASSERT_EQ(rx.try_recv().value, std::optional<int>(1));
      EXPECT_EQ(tx.stats().waits, 0U);  // nothing waited
    }
    std::thread late_sender([tx2 = tx]() mutable {
      std::this_thread::sleep_for(50ms);
      static_cast<void>(tx2.send(7));
    });
    EXPECT_EQ(rx.recv(), std::optional<int>(7));
    late_sender.join();
    auto const s = rx.stats();
    EXPECT_EQ(s.blocked_receives, 1U);
    EXPECT_GE(s.waits, 1U);
    EXPECT_EQ(tx.stats().blocked_receives, 1U);  // one channel, one set of counters
    if (cap == 1) {
      ASSERT_TRUE(tx.try_send(1).is_sent());  // full now
      std::thread late_receiver([rx2 = rx]() mutable {
        std::this_thread::sleep_for(50ms);
        static_cast<void>(rx2.recv());
        static_cast<void>(rx2.recv());
      });
      EXPECT_TRUE(tx.send(2).is_sent());
      late_receiver.join();
      EXPECT_EQ(tx.stats().blocked_sends, 1U);
    }
  }
  auto [utx, urx] = spindle::unbounded<int>();
  std::thread later([utx2 = utx]() mutable {
    std::this_thread::sleep_for(50ms);
    static_cast<void>(utx2.send(3));
  });
  EXPECT_EQ(urx.recv(), std::optional<int>(3));
  later.join();
  EXPECT_EQ(urx.stats().blocked_receives, 1U);
  EXPECT_EQ(urx.stats().blocked_sends, 0U);
}

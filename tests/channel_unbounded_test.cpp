// spindle::unbounded: the linked-block (list) flavour. Handles and common semantics are in
// channel_test.cpp.

#include <spindle/channel.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <memory>
#include <string>
#include <thread>

#include "support/channel_cases.hpp"
#include "support/tracked.hpp"

namespace {

using namespace std::chrono_literals;
using spindle::recv_status;
using spindle::send_status;
using spindle_test::tracked;

// An unbounded channel never makes a sender wait: it is a queue of work that a pool of
// receivers drains. Closing it lets the receivers finish what is queued, then stop.
TEST(UnboundedChannel, Example) {
  auto [tx, rx] = spindle::unbounded<std::string>();

  for (int i = 0; i < 1000; ++i) {
    auto r = tx.send("job " + std::to_string(i));  // never blocks; fails only when closed
    ASSERT_TRUE(r);
  }
  EXPECT_EQ(rx.size(), 1000U);
  tx.close();

  std::atomic<int> done{0};
  {
    std::jthread a([&, rx = rx]() mutable {
      for (auto job : rx) {
        done.fetch_add(1);
      }
    });
    std::jthread b([&, rx = rx]() mutable {
      while (auto job = rx.recv()) {  // the same loop without range-for
        done.fetch_add(1);
      }
    });
  }
  EXPECT_EQ(done.load(), 1000);
}

TEST(UnboundedChannel, TryOperationsReportEveryStatus) {
  auto [tx, rx] = spindle::unbounded<int>();
  EXPECT_EQ(rx.try_recv().status, recv_status::empty);
  EXPECT_EQ(tx.try_send(1).status, send_status::sent);  // never full
  EXPECT_EQ(*rx.try_recv().value, 1);
  rx.close();
  auto r = tx.try_send(2);
  EXPECT_EQ(r.status, send_status::closed);
  EXPECT_EQ(*r.value, 2);
  EXPECT_EQ(rx.try_recv().status, recv_status::closed);
}

TEST(UnboundedChannel, DeliversInFifoOrderAcrossManyBlocks) {
  auto [tx, rx] = spindle::unbounded<std::uint64_t>();
  constexpr std::uint64_t n = 31 * 100 + 7;  // blocks hold 31 values
  for (std::uint64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(tx.send(i));
  }
  EXPECT_EQ(tx.size(), n);
  for (std::uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(*rx.recv(), i);
    ASSERT_EQ(rx.size(), n - i - 1);
  }
  EXPECT_EQ(rx.try_recv().status, recv_status::empty);
}

TEST(UnboundedChannel, SizeIsExactAtEveryBlockBoundary) {
  auto [tx, rx] = spindle::unbounded<int>();
  for (std::size_t i = 1; i <= 100; ++i) {
    ASSERT_TRUE(tx.send(0));
    ASSERT_EQ(tx.size(), i);
  }
  for (std::size_t i = 0; i < 37; ++i) {
    ASSERT_TRUE(rx.try_recv());
  }
  EXPECT_EQ(rx.size(), 63U);
}

TEST(UnboundedChannel, InterleavedUseReusesBlocks) {
  auto [tx, rx] = spindle::unbounded<std::uint64_t>();
  std::uint64_t next_out = 0;
  for (std::uint64_t i = 0; i < 100000; ++i) {
    ASSERT_TRUE(tx.send(i));
    if (i % 3 != 0) {
      ASSERT_EQ(*rx.try_recv().value, next_out++);
    }
  }
  while (auto r = rx.try_recv()) {
    ASSERT_EQ(*r.value, next_out++);
  }
  EXPECT_EQ(next_out, 100000U);
}

TEST(UnboundedChannel, CarriesMoveOnlyTypes) {
  auto [tx, rx] = spindle::unbounded<std::unique_ptr<int>>();
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(tx.send(std::make_unique<int>(i)));
  }
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(**rx.recv(), i);
  }
}

TEST(UnboundedChannel, DestroysValuesLeftInsideWhenItDies) {
  auto const before = tracked::live();
  {
    auto [tx, rx] = spindle::unbounded<tracked>();
    for (std::uint64_t i = 0; i < 75; ++i) {
      ASSERT_TRUE(tx.send(tracked(i)));
    }
    for (std::uint64_t i = 0; i < 40; ++i) {
      ASSERT_EQ(rx.recv()->id(), i);
    }
  }
  EXPECT_EQ(tracked::live(), before);
}

TEST(UnboundedChannel, LastReceiverDropDestroysBufferedValuesAtOnce) {
  auto const before = tracked::live();
  auto [tx, rx] = spindle::unbounded<tracked>();
  for (std::uint64_t i = 0; i < 100; ++i) {
    ASSERT_TRUE(tx.send(tracked(i)));
  }
  EXPECT_EQ(tracked::live(), before + 100);
  { auto gone = std::move(rx); }
  EXPECT_EQ(tracked::live(), before);
  auto r = tx.send(tracked(5));
  EXPECT_EQ(r.status, send_status::closed);
  EXPECT_EQ(r.value->id(), 5U);
}

TEST(UnboundedChannel, ReceiverDropBeforeAnySendIsClean) {
  auto [tx, rx] = spindle::unbounded<tracked>();
  { auto gone = std::move(rx); }
  EXPECT_EQ(tx.send(tracked(1)).status, send_status::closed);
}

TEST(UnboundedChannel, LastSenderDropClosesAfterDrain) {
  auto [tx, rx] = spindle::unbounded<int>();
  ASSERT_TRUE(tx.send(1));
  { auto gone = std::move(tx); }
  EXPECT_TRUE(rx.is_closed());
  EXPECT_EQ(*rx.recv(), 1);
  EXPECT_EQ(rx.recv(), std::nullopt);
}

TEST(UnboundedChannel, RecvForTimesOutAndStopCancels) {
  auto [tx, rx] = spindle::unbounded<int>();
  EXPECT_EQ(rx.recv_for(2ms).status, recv_status::timed_out);
  spindle_test::expect_stop_token_cancels_blocked_recv(rx);
  // The send_ family never times out on an unbounded channel.
  EXPECT_EQ(tx.send_for(1, 0ms).status, send_status::sent);
}

TEST(UnboundedChannel, BlockedRecvResumesOnSend) {
  auto [tx, rx] = spindle::unbounded<int>();
  std::latch started(1);
  std::thread t([&, rx = rx]() mutable {
    started.count_down();
    EXPECT_EQ(*rx.recv(), 9);
    EXPECT_EQ(rx.recv(), std::nullopt);
  });
  started.wait();
  ASSERT_TRUE(tx.send(9));
  tx.close();
  t.join();
}

TEST(UnboundedChannel, ManyProducersManyConsumersDeliverEverything) {
  spindle_test::expect_many_to_many_delivers_everything(spindle::unbounded<std::uint64_t>(),
                                                        /*producers=*/3, /*consumers=*/2,
                                                        /*per_producer=*/20000);
}

}  // namespace

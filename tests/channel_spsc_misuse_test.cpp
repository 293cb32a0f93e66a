// Misuse of the spsc handles (spindle::bounded_spsc) that every build reports.
//
// A single-producer single-consumer channel has exactly one sender and one receiver handle.
// A copy of either does not compile, directly or through the basic_sender<T> /
// basic_receiver<T> base (tests/compile_fail/channel_spsc_*.cpp). What is left to report at run
// time is the use of a moved-from handle, with the same check as for the other flavours
// (channel_misuse_test.cpp): it prints "spindle: misuse: use of a moved-from spindle::sender"
// (or receiver) and aborts.
//
// Two threads using one handle at once is reported only by assertion builds:
// channel_spsc_overlap_test.cpp.
//
// This file is compiled without SPINDLE_ENABLE_ASSERTS, as a user's release build would be:
// the checks must not depend on it. (Misuse tests do not use the shared precompiled header,
// which would have read the library with the build's setting before this line:
// tests/CMakeLists.txt.)
#undef SPINDLE_ENABLE_ASSERTS

#include <spindle/channel.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <stop_token>
#include <utility>

namespace {

using namespace std::chrono_literals;

class SpscMisuseDeathTest : public testing::Test {
 protected:
  // Threadsafe: the child re-runs the test from the start instead of forking a process that
  // may hold other threads' locks.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

constexpr char const* moved_sender = "misuse: use of a moved-from spindle::sender";
constexpr char const* moved_receiver = "misuse: use of a moved-from spindle::receiver";

// Every operation on a moved-from spsc_sender aborts.
TEST_F(SpscMisuseDeathTest, EverySenderOperationAbortsOnAMovedFromHandle) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  auto kept = std::move(tx);
  EXPECT_DEATH(static_cast<void>(tx.send(1)), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.try_send(1)), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.send_for(1, 1ms)), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.send_until(1, std::chrono::steady_clock::now())), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.async_send(1)), moved_sender);
  EXPECT_DEATH(tx.close(), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.is_closed()), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.size()), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.capacity()), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.stats()), moved_sender);
  ASSERT_TRUE(kept.try_send(1));  // the handle it was moved to works
  EXPECT_EQ(rx.try_recv().value, 1);
}

// Every operation on a moved-from spsc_receiver aborts.
TEST_F(SpscMisuseDeathTest, EveryReceiverOperationAbortsOnAMovedFromHandle) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  auto kept = std::move(rx);
  std::stop_source stop;
  EXPECT_DEATH(static_cast<void>(rx.recv()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.recv(stop.get_token())), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.try_recv()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.recv_for(1ms)), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.recv_until(std::chrono::steady_clock::now())), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.async_recv()), moved_receiver);
  EXPECT_DEATH(rx.close(), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.is_closed()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.size()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.capacity()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.begin()), moved_receiver);
  EXPECT_DEATH(
      {
        for (int v : rx) {
          static_cast<void>(v);
        }
      },
      moved_receiver);
  ASSERT_TRUE(tx.try_send(2));
  EXPECT_EQ(kept.try_recv().value, 2);  // the handle it was moved to works
}

// What a moved-from spsc handle may still do: be destroyed, be assigned to (which makes it
// usable again), be moved (giving another moved-from handle).
TEST(SpscMisuse, MovedFromHandlesMayBeDestroyedAssignedAndMoved) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  auto tx2 = std::move(tx);
  auto rx2 = std::move(rx);
  auto tx3 = std::move(tx);  // a move of a moved-from handle is moved-from too
  tx = std::move(tx2);       // assigning makes a handle usable again
  rx = std::move(rx2);
  ASSERT_TRUE(tx.try_send(5));
  EXPECT_EQ(rx.try_recv().value, 5);
}  // destroying the moved-from tx2, tx3 and rx2 is fine

}  // namespace

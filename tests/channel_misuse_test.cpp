// Misuse of a channel handle that every build reports: using a moved-from sender or receiver.
//
// A moved-from handle refers to no channel. It may be destroyed, assigned to, copied or moved
// (giving another moved-from handle); any other member function prints
// "spindle: misuse: use of a moved-from spindle::sender" (or receiver) and aborts, rather than
// dereference a null pointer.
//
// This file is compiled without SPINDLE_ENABLE_ASSERTS, as a user's release build would be:
// the check must not depend on it.
#undef SPINDLE_ENABLE_ASSERTS

#include <spindle/channel.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <iterator>
#include <ranges>
#include <stop_token>
#include <utility>

namespace {

using namespace std::chrono_literals;

class ChannelMisuseDeathTest : public testing::Test {
 protected:
  // Threadsafe: the child re-runs the test from the start instead of forking a process that
  // may hold other threads' locks.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

constexpr char const* moved_sender = "misuse: use of a moved-from spindle::sender";
constexpr char const* moved_receiver = "misuse: use of a moved-from spindle::receiver";

/// The handles of one channel, moved out of `kept`: `kept` then holds a moved-from sender and
/// receiver while `tx` and `rx` keep the channel alive.
struct moved_handles {
  std::pair<spindle::sender<int>, spindle::receiver<int>> kept = spindle::bounded<int>(1);
  spindle::sender<int> tx = std::move(kept.first);
  spindle::receiver<int> rx = std::move(kept.second);
};

TEST_F(ChannelMisuseDeathTest, EverySenderOperationAbortsOnAMovedFromHandle) {
  moved_handles h;
  auto& tx = h.kept.first;  // moved from
  EXPECT_DEATH(static_cast<void>(tx.send(1)), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.try_send(1)), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.send_for(1, 1ms)), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.send_until(1, std::chrono::steady_clock::now())), moved_sender);
  EXPECT_DEATH(tx.close(), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.is_closed()), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.size()), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.capacity()), moved_sender);
}

TEST_F(ChannelMisuseDeathTest, EveryReceiverOperationAbortsOnAMovedFromHandle) {
  moved_handles h;
  auto& rx = h.kept.second;  // moved from
  std::stop_source stop;
  EXPECT_DEATH(static_cast<void>(rx.recv()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.recv(stop.get_token())), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.try_recv()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.recv_for(1ms)), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.recv_until(std::chrono::steady_clock::now())), moved_receiver);
  EXPECT_DEATH(rx.close(), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.is_closed()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.size()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.capacity()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.begin()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.end()), moved_receiver);
}

TEST_F(ChannelMisuseDeathTest, IteratingAMovedFromReceiverAborts) {
  moved_handles h;
  auto& rx = h.kept.second;  // moved from
  EXPECT_DEATH(
      {
        for (int v : rx) {
          static_cast<void>(v);
        }
      },
      moved_receiver);
#if !(defined(__clang__) && defined(__GLIBCXX__) && __clang_major__ < 16)
  // (clang before 16 cannot compile libstdc++'s range adaptors.)
  EXPECT_DEATH(
      {
        for (int v : rx | std::views::take(1)) {
          static_cast<void>(v);
        }
      },
      moved_receiver);
#endif
}

// An iterator points at its receiver; moving the receiver away under it is the same misuse.
TEST_F(ChannelMisuseDeathTest, IteratorOfAReceiverMovedAwayAborts) {
  moved_handles h;
  ASSERT_TRUE(h.tx.try_send(1));
  auto it = h.rx.begin();
  auto elsewhere = std::move(h.rx);
  EXPECT_DEATH(static_cast<void>(it == std::default_sentinel), moved_receiver);
  EXPECT_EQ(elsewhere.try_recv().value, 1);  // the message is still in the channel
}

// What a moved-from handle may still do.
TEST(ChannelMisuse, MovedFromHandlesMayBeDestroyedAssignedCopiedAndMoved) {
  auto [tx, rx] = spindle::bounded<int>(1);
  auto tx2 = std::move(tx);
  auto rx2 = std::move(rx);
  auto tx3 = tx;             // a copy of a moved-from handle is moved-from too
  auto rx3 = std::move(rx);  // and so is a move of one
  tx = tx2;                  // assigning makes a handle usable again
  rx = std::move(rx2);
  ASSERT_TRUE(tx.try_send(5));
  EXPECT_EQ(rx.try_recv().value, 5);
}  // destroying the moved-from tx3, rx2 and rx3 is fine

}  // namespace

// Two threads using one spsc handle at once, reported by builds with SPINDLE_ENABLE_ASSERTS
// (the SPINDLE_ASSERTIONS option, which the test presets turn on).
//
// A single-producer single-consumer ring relies on one thread at a time per side: two senders
// on one spsc_sender would construct values in the same slot and publish one position twice.
// The flavour does not pay for a guard in release builds (detail/channel/spsc_channel.hpp);
// with assertions, each side marks itself busy for the length of an operation, and a use that
// sees the other's mark prints "spindle: misuse: a spindle::spsc_sender used by two threads at
// once" (or spsc_receiver) and aborts. A single overlap of two short calls may slip through, so
// the threads here keep overlapping until the report comes.
//
// Unlike channel_spsc_misuse_test.cpp, this file keeps SPINDLE_ENABLE_ASSERTS as the build set
// it, and skips its tests in a build without it.

#include <spindle/channel.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace {

// Under ThreadSanitizer the overlap is also a data race on the side's plain fields, which TSan
// may report first (the test presets make it halt on the first report): either report ends the
// process, and either says what went wrong.
#if defined(SPINDLE_TSAN)
constexpr char const* sender_overlap =
    "(a spindle::spsc_sender used by two threads at once|ThreadSanitizer: data race)";
constexpr char const* receiver_overlap =
    "(a spindle::spsc_receiver used by two threads at once|ThreadSanitizer: data race)";
#else
constexpr char const* sender_overlap = "a spindle::spsc_sender used by two threads at once";
constexpr char const* receiver_overlap = "a spindle::spsc_receiver used by two threads at once";
#endif

class SpscOverlapDeathTest : public testing::Test {
 protected:
  // Threadsafe: the child re-runs the test from the start instead of forking a process that
  // may hold other threads' locks.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

/// Runs `use` on two threads at once, each calling it over and over for up to `limit` (the
/// misuse report ends the process long before that).
template <class Use>
void hammer_from_two_threads(Use use, std::chrono::seconds limit) {
  auto const until = std::chrono::steady_clock::now() + limit;
  auto loop = [&use, until] {
    while (std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 1000; ++i) {
        use();
      }
    }
  };
  std::thread a(loop);
  std::thread b(loop);
  a.join();
  b.join();
}

// Two threads calling try_send on the same spsc_sender are reported.
TEST_F(SpscOverlapDeathTest, TwoThreadsSendingThroughOneSenderAreReported) {
#if defined(SPINDLE_ENABLE_ASSERTS)
  auto [tx, rx] = spindle::bounded_spsc<int>(64);
  EXPECT_DEATH(hammer_from_two_threads([&tx = tx] { static_cast<void>(tx.try_send(1)); },
                                       std::chrono::seconds(20)),
               sender_overlap);
#else
  GTEST_SKIP() << "the overlap check needs SPINDLE_ENABLE_ASSERTS";
#endif
}

// Two threads calling try_recv on the same spsc_receiver are reported (on a full channel, so
// that the calls also take values while they overlap).
TEST_F(SpscOverlapDeathTest, TwoThreadsReceivingThroughOneReceiverAreReported) {
#if defined(SPINDLE_ENABLE_ASSERTS)
  auto [tx, rx] = spindle::bounded_spsc<int>(64);
  while (tx.try_send(1)) {
  }
  EXPECT_DEATH(hammer_from_two_threads([&rx = rx] { static_cast<void>(rx.try_recv()); },
                                       std::chrono::seconds(20)),
               receiver_overlap);
#else
  GTEST_SKIP() << "the overlap check needs SPINDLE_ENABLE_ASSERTS";
#endif
}

// One thread per side is not an overlap: a sender thread and a receiver thread busy at the
// same time on their own handles are never reported.
TEST(SpscOverlap, OneThreadPerSideIsNotReported) {
  auto [tx, rx] = spindle::bounded_spsc<int>(4);
  constexpr int count = 100000;
  std::thread producer([&tx = tx] {
    for (int i = 0; i < count; ++i) {
      while (!tx.try_send(i)) {
        std::this_thread::yield();
      }
    }
  });
  int next = 0;
  while (next < count) {
    if (auto r = rx.try_recv()) {
      ASSERT_EQ(*r.value, next++);
    } else {
      std::this_thread::yield();
    }
  }
  producer.join();
}

}  // namespace

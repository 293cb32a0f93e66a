// detail::backoff: spin, then yield, then tell the caller to park.
#include <spindle/detail/sync/backoff.hpp>

#include <gtest/gtest.h>

using spindle::detail::backoff;

TEST(Backoff, Example) {
  backoff b;
  int rounds = 0;
  while (!b.is_completed()) {
    b.snooze();
    ++rounds;
  }
  // The budget is bounded: the caller parks after a fixed, small number of snoozes.
  EXPECT_EQ(rounds, static_cast<int>(backoff::yield_limit) + 1);
}

TEST(Backoff, SpinNeverCompletes) {
  backoff b;
  for (int i = 0; i < 100; ++i) {
    b.spin();
  }
  EXPECT_FALSE(b.is_completed()) << "spin() is for CAS retries and never asks to park";
}

TEST(Backoff, ResetStartsOver) {
  backoff b;
  while (!b.is_completed()) {
    b.snooze();
  }
  b.reset();
  EXPECT_FALSE(b.is_completed());
}

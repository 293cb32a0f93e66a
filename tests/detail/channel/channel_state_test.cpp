// Tests for spindle/detail/channel/channel_state.hpp: the shared state behind a channel's handles.
// The handle counts decide when the channel closes and is freed (tests/channel_test.cpp covers
// that through the public handles); here, the other thing they decide: whether a blocked
// receiver polls before it yields (detail::recv_blocking), which it does only while the
// handles number at most the processors.
#include <spindle/channel.hpp>
#include <spindle/detail/channel/channel_state.hpp>
#include <spindle/detail/channel/tuning.hpp>
#include <spindle/detail/channel/wait_budget.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <thread>
#include <vector>

using spindle::detail::available_cpus;
using spindle::detail::channel_state;

namespace {

using state = channel_state<int>;

/// Drops the one sender and one receiver count a fresh state starts with.
void release_both(state* s) {
  state::release_sender(s);
  state::release_receiver(s);  // the second release frees the state
}

}  // namespace

TEST(ChannelCounter, Example) {
  // A fresh state counts one sender and one receiver: two users, which fit on any machine
  // with two processors or more.
  auto* s = new state(state::array_tag{}, 4);
  EXPECT_EQ(s->users_fit_cores(), available_cpus() >= 2);
  release_both(s);
}

TEST(ChannelCounter, CoreCountIsAtLeastOne) {
  EXPECT_GE(available_cpus(), 1U);
  EXPECT_EQ(available_cpus(), available_cpus());  // read once
}

TEST(ChannelCounter, MoreHandlesThanCoresStopTheFit) {
  auto* s = new state(state::list_tag{});
  // Add receivers until the handles outnumber the processors; drop them again.
  std::size_t added = 0;
  while (2 + added <= available_cpus()) {
    EXPECT_TRUE(s->users_fit_cores());
    s->acquire_receiver();
    ++added;
  }
  EXPECT_FALSE(s->users_fit_cores());
  for (std::size_t i = 0; i < added; ++i) {
    state::release_receiver(s);
  }
  EXPECT_EQ(s->users_fit_cores(), available_cpus() >= 2);
  release_both(s);
}

TEST(ChannelCounter, OnlyASoleBoundedReceiverPolls) {
  // Two handles fit wherever there are two processors; a second receiver of the bounded
  // flavour stops the polls (unless a build asks for shared polls), of the unbounded one not.
  auto* bounded = new state(state::array_tag{}, 4);
  auto* unbounded = new state(state::list_tag{});
  bool const fits_three = available_cpus() >= 3;
  EXPECT_EQ(bounded->receiver_may_poll(), available_cpus() >= 2);
  bounded->acquire_receiver();
  unbounded->acquire_receiver();
  EXPECT_EQ(bounded->receiver_may_poll(),
            spindle::detail::channel_tuning::poll_shared && fits_three);
  EXPECT_EQ(unbounded->receiver_may_poll(), fits_three);
  state::release_receiver(bounded);
  state::release_receiver(unbounded);
  EXPECT_EQ(bounded->receiver_may_poll(), available_cpus() >= 2);
  release_both(bounded);
  release_both(unbounded);
}

TEST(ChannelCounter, BlockedReceiveWorksEitherWay) {
  // However a receiver waits, it receives what is sent and sees close: one receiver with few
  // handles, then with more receiver handles than processors.
  for (bool crowd : {false, true}) {
    auto [tx, rx] = spindle::bounded<int>(1);
    std::vector<spindle::receiver<int>> extra;
    if (crowd) {
      extra.assign(available_cpus() + 1, rx);
    }
    std::thread sender([tx = std::move(tx)]() mutable {
      for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(tx.send(i));
      }
    });
    for (int i = 0; i < 100; ++i) {
      EXPECT_EQ(rx.recv(), std::optional<int>(i));
    }
    sender.join();
    EXPECT_EQ(rx.recv(), std::nullopt);  // the last sender is gone: closed and drained
  }
}

// spindle::select, spindle::select_biased, spindle::dynamic_select and the timer channels
// spindle::after and spindle::tick, used from threads (the coroutine form, async_select, has
// its own tests).

#include <spindle/select.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <limits>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/channel_cases.hpp"
#include "support/no_leak.hpp"
#include "support/tracked.hpp"

namespace {

using namespace std::chrono_literals;
using spindle::recv_status;
using spindle::send_status;
using spindle_test::tracked;
using steady = std::chrono::steady_clock;

/// What tracked::id() reports for a moved-from object.
constexpr std::uint64_t moved_from_id = ~std::uint64_t{0};

/// A channel of the given capacity; SIZE_MAX makes an unbounded one, 0 a rendezvous, and
/// spindle_test::lanes_capacity() a bounded_lanes one (spindle_test::make_endpoints).
template <class T>
auto make_channel(std::size_t capacity) -> std::pair<spindle::sender<T>, spindle::receiver<T>> {
  auto ends = spindle_test::make_endpoints<T>(capacity);
  return {std::move(ends.tx), std::move(ends.rx)};
}

using spindle_test::no_leak;

// ---- The shape of a select -----------------------------------------------------------------

// A worker waits on three things at once (a job to receive, a free slot to report a result, a
// quiet period) and exactly one of them happens; select says which by its position.
TEST(Select, Example) {
  auto [jobs_tx, jobs_rx] = spindle::bounded<int>(8);
  auto [done_tx, done_rx] = spindle::bounded<int>(1);

  int job = 0;
  int result = 100;
  bool sent = false;
  bool idle = false;
  // One turn of the worker's loop. (Structured bindings enter a lambda by init-capture.)
  auto wait_for_something = [&, &jobs_rx = jobs_rx, &done_tx = done_tx] {
    return spindle::select(
        spindle::on_recv(jobs_rx, [&](std::optional<int> j) { job = j.value_or(-1); }),
        spindle::on_send(done_tx, result, [&](spindle::send_result<int> r) { sent = r.is_sent(); }),
        spindle::on_timeout(10ms, [&] { idle = true; }));
  };

  // A job is waiting and the result channel is full: the receive is the only ready case.
  ASSERT_TRUE(jobs_tx.try_send(7));
  ASSERT_TRUE(done_tx.try_send(0));
  EXPECT_EQ(wait_for_something(), 0U);
  EXPECT_EQ(job, 7);

  // No job, but room for the result: the send is chosen and takes `result`.
  ASSERT_TRUE(done_rx.try_recv());
  EXPECT_EQ(wait_for_something(), 1U);
  EXPECT_TRUE(sent);
  EXPECT_EQ(done_rx.try_recv().value, 100);

  // Nothing can happen: after 10 ms the timeout case runs.
  ASSERT_TRUE(done_tx.try_send(0));
  EXPECT_EQ(wait_for_something(), 2U);
  EXPECT_TRUE(idle);
}

// Whatever mix of cases is ready, exactly one handler runs, and select returns its position.
TEST(Select, ExactlyOneHandlerRunsAndItsIndexIsReturned) {
  auto [in_tx, in_rx] = spindle::bounded<int>(1);
  auto [out_tx, out_rx] = spindle::bounded<int>(1);
  for (int round = 0; round < 400; ++round) {
    // Rounds cycle through: nothing but default ready; recv only; send only; all ready.
    int const mode = round % 4;
    std::stop_source stop;
    static_cast<void>(in_rx.try_recv());
    static_cast<void>(out_rx.try_recv());
    if (mode == 1 || mode == 3) {
      ASSERT_TRUE(in_tx.try_send(round));
    }
    if (mode != 2 && mode != 3) {
      ASSERT_TRUE(out_tx.try_send(-1));  // full: the send case is not ready
    }
    if (mode == 3) {
      stop.request_stop();
    }

    std::array<int, 4> ran{};
    int v = round;
    auto const i = spindle::select(spindle::on_recv(in_rx,
                                                    [&](std::optional<int> got) {
                                                      ++ran[0];
                                                      EXPECT_EQ(got, round);
                                                    }),
                                   spindle::on_send(out_tx, v,
                                                    [&](spindle::send_result<int> r) {
                                                      ++ran[1];
                                                      EXPECT_TRUE(r.is_sent());
                                                    }),
                                   spindle::on_stop(stop.get_token(), [&] { ++ran[2]; }),
                                   spindle::on_default([&] { ++ran[3]; }));
    ASSERT_LT(i, 4U);
    EXPECT_EQ(ran[0] + ran[1] + ran[2] + ran[3], 1) << "round " << round;
    EXPECT_EQ(ran[i], 1) << "round " << round;
    if (mode == 3) {
      EXPECT_NE(i, 3U) << "default chosen while other cases were ready";
    } else if (mode == 0) {
      EXPECT_EQ(i, 3U);
    } else if (mode == 1) {
      EXPECT_EQ(i, 0U);
    } else if (mode == 2) {
      EXPECT_EQ(i, 1U);
    }
  }
}

// A handler may ignore the outcome by taking no argument.
TEST(Select, HandlersMayTakeNoArgument) {
  auto [tx, rx] = spindle::bounded<int>(1);
  int v = 3;
  bool sent = false;
  EXPECT_EQ(spindle::select(spindle::on_send(tx, v, [&] { sent = true; })), 0U);
  EXPECT_TRUE(sent);
  bool received = false;
  EXPECT_EQ(spindle::select(spindle::on_recv(rx, [&] { received = true; })), 0U);
  EXPECT_TRUE(received);
}

// A handler runs after the select has withdrawn from every channel, so it may select again,
// on the same channels.
TEST(Select, AHandlerMaySelectAgain) {
  auto [tx, rx] = spindle::bounded<int>(2);
  ASSERT_TRUE(tx.try_send(1));
  ASSERT_TRUE(tx.try_send(2));
  std::vector<int> got;
  auto const i = spindle::select(
      spindle::on_recv(
          rx,
          [&got, &rx = rx](std::optional<int> v) {
            got.push_back(*v);
            EXPECT_EQ(spindle::select(
                          spindle::on_recv(rx, [&got](std::optional<int> w) { got.push_back(*w); }),
                          spindle::on_timeout(30s, [] {})),
                      0U);
          }),
      spindle::on_timeout(30s, [] {}));
  EXPECT_EQ(i, 0U);
  EXPECT_EQ(got, (std::vector<int>{1, 2}));
}

// A select with a single case of each kind works on its own.
TEST(Select, ASingleCaseIsASelect) {
  EXPECT_EQ(spindle::select(spindle::on_default([] {})), 0U);
  EXPECT_EQ(spindle::select(spindle::on_timeout(1ms, [] {})), 0U);
  EXPECT_EQ(spindle::select_biased(spindle::on_deadline(steady::now(), [] {})), 0U);
  std::stop_source stop;
  stop.request_stop();
  EXPECT_EQ(spindle::select(spindle::on_stop(stop.get_token(), [] {})), 0U);
}

// ---- Fairness --------------------------------------------------------------------------------

// With two receive cases that are always ready, select picks each about half the time: no ready
// channel starves.
TEST(Select, IsFairAmongAlwaysReadyReceives) {
  auto [a_tx, a_rx] = spindle::bounded<int>(1);
  auto [b_tx, b_rx] = spindle::bounded<int>(1);
  constexpr int rounds = 10000;
  std::array<int, 2> wins{};
  for (int n = 0; n < rounds; ++n) {
    static_cast<void>(a_tx.try_send(1));  // refill whichever was taken
    static_cast<void>(b_tx.try_send(2));
    auto const i = spindle::select(spindle::on_recv(a_rx, [](std::optional<int>) {}),
                                   spindle::on_recv(b_rx, [](std::optional<int>) {}));
    ASSERT_LT(i, 2U);
    ++wins[i];
  }
  EXPECT_GT(wins[0], rounds * 35 / 100);
  EXPECT_GT(wins[1], rounds * 35 / 100);
  EXPECT_LT(wins[0], rounds * 65 / 100);
}

// Fairness holds across kinds too: a ready send and a ready receive each win about half.
TEST(Select, IsFairBetweenASendAndAReceive) {
  auto [in_tx, in_rx] = spindle::bounded<int>(1);
  auto [out_tx, out_rx] = spindle::unbounded<int>();
  constexpr int rounds = 10000;
  std::array<int, 2> wins{};
  for (int n = 0; n < rounds; ++n) {
    static_cast<void>(in_tx.try_send(n));
    int v = n;
    auto const i = spindle::select(spindle::on_send(out_tx, v, [](spindle::send_result<int>) {}),
                                   spindle::on_recv(in_rx, [](std::optional<int>) {}));
    ASSERT_LT(i, 2U);
    ++wins[i];
    static_cast<void>(out_rx.try_recv());
  }
  EXPECT_GT(wins[0], rounds * 35 / 100);
  EXPECT_GT(wins[1], rounds * 35 / 100);
}

// select_biased always takes the first ready case in argument order.
TEST(Select, BiasedPicksTheFirstReadyCase) {
  auto [a_tx, a_rx] = spindle::bounded<int>(1);
  auto [b_tx, b_rx] = spindle::bounded<int>(1);
  auto [c_tx, c_rx] = spindle::bounded<int>(1);
  for (int n = 0; n < 2000; ++n) {
    static_cast<void>(b_tx.try_send(2));
    static_cast<void>(c_tx.try_send(3));
    // a is empty: b is the first ready case.
    auto const i = spindle::select_biased(spindle::on_recv(a_rx, [](std::optional<int>) {}),
                                          spindle::on_recv(b_rx, [](std::optional<int>) {}),
                                          spindle::on_recv(c_rx, [](std::optional<int>) {}));
    ASSERT_EQ(i, 1U) << "round " << n;
  }
  EXPECT_EQ(c_rx.try_recv().value, 3) << "c was never taken";
  ASSERT_TRUE(a_tx.try_send(1));
  ASSERT_TRUE(b_tx.try_send(2));
  int got = 0;
  EXPECT_EQ(spindle::select_biased(spindle::on_recv(a_rx, [&](std::optional<int> v) { got = *v; }),
                                   spindle::on_recv(b_rx, [](std::optional<int>) {})),
            0U);
  EXPECT_EQ(got, 1);
}

// ---- on_default --------------------------------------------------------------------------------

// With nothing ready, on_default is chosen at once: the select does not wait, not even for a
// timeout case that has time left.
TEST(Select, DefaultIsChosenAtOnceWhenNothingIsReady) {
  auto [tx, rx] = spindle::bounded<int>(1);
  auto [full_tx, full_rx] = spindle::bounded<int>(1);
  auto [rv_tx, rv_rx] = spindle::bounded<int>(0);
  ASSERT_TRUE(full_tx.try_send(0));
  int v = 1;
  int w = 2;
  std::stop_source stop;
  auto const t0 = steady::now();
  auto const i = spindle::select(
      spindle::on_recv(rx, [](std::optional<int>) {}),
      spindle::on_send(full_tx, v, [](spindle::send_result<int>) {}),
      spindle::on_send(rv_tx, w, [](spindle::send_result<int>) {}),
      spindle::on_recv(rv_rx, [](std::optional<int>) {}), spindle::on_timeout(1h, [] {}),
      spindle::on_stop(stop.get_token(), [] {}), spindle::on_default([] {}));
  EXPECT_EQ(i, 6U);
  EXPECT_LT(steady::now() - t0, 5s);
  EXPECT_EQ(v, 1);
  EXPECT_EQ(w, 2);
}

// on_default is never chosen while another case is ready, wherever it stands in the list.
TEST(Select, DefaultIsNotChosenWhenACaseIsReady) {
  auto [tx, rx] = spindle::bounded<int>(1);
  for (int n = 0; n < 1000; ++n) {
    ASSERT_TRUE(tx.try_send(n));
    auto const i = n % 2 == 0
                       ? spindle::select(spindle::on_default([] {}),
                                         spindle::on_recv(rx, [](std::optional<int>) {}))
                       : spindle::select_biased(spindle::on_default([] {}),
                                                spindle::on_recv(rx, [](std::optional<int>) {}));
    ASSERT_EQ(i, 1U) << "round " << n;
  }
}

// ---- on_timeout / on_deadline ------------------------------------------------------------------

// A timeout case is chosen once its time has passed with nothing arriving, never before.
TEST(Select, TimeoutFiresAfterItsDuration) {
  auto [tx, rx] = spindle::bounded<int>(1);
  for (auto const d : {1ms, 20ms}) {
    auto const t0 = steady::now();
    bool timed_out = false;
    auto const i = spindle::select(spindle::on_recv(rx, [](std::optional<int>) {}),
                                   spindle::on_timeout(d, [&] { timed_out = true; }));
    EXPECT_GE(steady::now() - t0, d);
    EXPECT_EQ(i, 1U);
    EXPECT_TRUE(timed_out);
  }
}

// A deadline case is chosen at its time point, on steady_clock or another clock.
TEST(Select, DeadlineFiresAtItsTimePoint) {
  auto [tx, rx] = spindle::bounded<int>(0);
  auto const t0 = steady::now();
  EXPECT_EQ(spindle::select(spindle::on_recv(rx, [](std::optional<int>) {}),
                            spindle::on_deadline(t0 + 15ms, [] {})),
            1U);
  EXPECT_GE(steady::now() - t0, 15ms);

  auto const t1 = steady::now();
  EXPECT_EQ(spindle::select(spindle::on_recv(rx, [](std::optional<int>) {}),
                            spindle::on_deadline(std::chrono::system_clock::now() + 15ms, [] {})),
            1U);
  // A system_clock deadline is re-based on steady_clock; allow the re-basing a little error.
  EXPECT_GE(steady::now() - t1, 14ms);
}

// Of several timeout cases the earliest deadline wins; a later one does not hold the select.
TEST(Select, TheEarliestTimeoutWins) {
  auto [tx, rx] = spindle::bounded<int>(1);
  auto const t0 = steady::now();
  auto const i = spindle::select(
      spindle::on_timeout(1h, [] {}), spindle::on_recv(rx, [](std::optional<int>) {}),
      spindle::on_timeout(10ms, [] {}), spindle::on_deadline(steady::time_point::max(), [] {}));
  EXPECT_EQ(i, 2U);
  EXPECT_GE(steady::now() - t0, 10ms);
}

// Zero, negative, NaN and past deadlines are immediate timeouts: the select does not wait.
TEST(Select, DeadlinesInThePastFireAtOnce) {
  auto ch = spindle::bounded<int>(0);
  auto& rx = ch.second;
  auto on_rx = [&] { return spindle::on_recv(rx, [](std::optional<int>) {}); };
  auto const t0 = steady::now();
  EXPECT_EQ(spindle::select(on_rx(), spindle::on_timeout(0ms, [] {})), 1U);
  EXPECT_EQ(spindle::select(on_rx(), spindle::on_timeout(-5s, [] {})), 1U);
  EXPECT_EQ(spindle::select(on_rx(), spindle::on_timeout(std::chrono::nanoseconds::min(), [] {})),
            1U);
  EXPECT_EQ(spindle::select(on_rx(), spindle::on_timeout(std::chrono::hours::min(), [] {})), 1U);
  EXPECT_EQ(spindle::select(
                on_rx(), spindle::on_timeout(std::chrono::duration<double>(std::nan("")), [] {})),
            1U);
  EXPECT_EQ(
      spindle::select(on_rx(), spindle::on_timeout(std::chrono::duration<double>(
                                                       -std::numeric_limits<double>::infinity()),
                                                   [] {})),
      1U);
  EXPECT_EQ(spindle::select(on_rx(), spindle::on_deadline(steady::time_point::min(), [] {})), 1U);
  EXPECT_EQ(spindle::select(
                on_rx(), spindle::on_deadline(std::chrono::system_clock::time_point::min(), [] {})),
            1U);
  EXPECT_EQ(spindle::select(on_rx(), spindle::on_deadline(steady::now() - 1h, [] {})), 1U);
  EXPECT_LT(steady::now() - t0, 5s);
}

/// Runs select(on_recv(rx), `far_case`) while another thread sends into rx after a moment;
/// the receive must be chosen, so the far deadline neither fires early nor wraps around.
template <class FarCase>
void expect_far_deadline_waits_for_the_channel(FarCase far_case) {
  auto [tx, rx] = spindle::bounded<int>(0);
  std::jthread sender([tx = std::move(tx)]() mutable {
    std::this_thread::sleep_for(10ms);
    EXPECT_TRUE(tx.send(42));
  });
  int got = 0;
  auto const i =
      spindle::select(spindle::on_recv(rx, [&](std::optional<int> v) { got = v.value_or(-1); }),
                      std::move(far_case));
  EXPECT_EQ(i, 0U);
  EXPECT_EQ(got, 42);
}

// Timeouts too long for the clock (duration::max(), +inf, time_point::max()) mean "never":
// they neither fire at once nor overflow.
TEST(Select, DeadlinesBeyondTheClockNeverFire) {
  auto never = [] { ADD_FAILURE() << "a never-reached deadline fired"; };
  expect_far_deadline_waits_for_the_channel(
      spindle::on_timeout(std::chrono::nanoseconds::max(), never));
  expect_far_deadline_waits_for_the_channel(spindle::on_timeout(std::chrono::hours::max(), never));
  expect_far_deadline_waits_for_the_channel(spindle::on_timeout(
      std::chrono::duration<double>(std::numeric_limits<double>::infinity()), never));
  expect_far_deadline_waits_for_the_channel(spindle::on_deadline(steady::time_point::max(), never));
  expect_far_deadline_waits_for_the_channel(
      spindle::on_deadline(std::chrono::system_clock::time_point::max(), never));
}

// A timeout whose deadline has already passed is not chosen over a channel that was ready
// before that deadline: "chosen when nothing else was ready before the deadline".
TEST(Select, AnExpiredTimeoutDoesNotBeatAReadyChannel) {
  auto [tx, rx] = spindle::bounded<int>(1);
  int timeouts = 0;
  for (int n = 0; n < 200; ++n) {
    ASSERT_TRUE(tx.try_send(n));
    auto const i = spindle::select(spindle::on_recv(rx, [](std::optional<int>) {}),
                                   spindle::on_timeout(0ms, [] {}));
    if (i != 0) {
      ++timeouts;
      static_cast<void>(rx.try_recv());
    }
  }
  EXPECT_EQ(timeouts, 0) << "the timeout case won over a receive that was ready all along";
}

// ---- on_stop -----------------------------------------------------------------------------------

// A stop requested before the select makes the stop case ready at once.
TEST(Select, StopRequestedBeforeIsChosenAtOnce) {
  auto [tx, rx] = spindle::bounded<int>(1);
  std::stop_source stop;
  stop.request_stop();
  bool stopped = false;
  auto const i = spindle::select(spindle::on_recv(rx, [](std::optional<int>) {}),
                                 spindle::on_stop(stop.get_token(), [&] { stopped = true; }),
                                 spindle::on_timeout(1h, [] {}));
  EXPECT_EQ(i, 1U);
  EXPECT_TRUE(stopped);
}

// A stop requested from another thread wakes a select that is waiting.
TEST(Select, StopRequestedWhileWaitingWakesTheSelect) {
  auto [tx, rx] = spindle::bounded<int>(0);
  for (auto const delay : {0ms, 1ms, 15ms}) {
    std::stop_source stop;
    std::jthread stopper([&stop, delay] {
      std::this_thread::sleep_for(delay);
      stop.request_stop();
    });
    int v = 1;
    auto const i = spindle::select(spindle::on_recv(rx, [](std::optional<int>) {}),
                                   spindle::on_send(tx, v, [](spindle::send_result<int>) {}),
                                   spindle::on_stop(stop.get_token(), [] {}));
    EXPECT_EQ(i, 2U);
    EXPECT_EQ(v, 1);
  }
}

// A token that can never be stopped (no stop_source) is a case that is never ready.
TEST(Select, ATokenWithoutSourceNeverFires) {
  EXPECT_EQ(
      spindle::select(spindle::on_stop(std::stop_token{}, [] {}), spindle::on_timeout(5ms, [] {})),
      1U);
}

// ---- Closed channels ---------------------------------------------------------------------------

// A closed channel is a ready receive case: buffered values come first, in order, then
// nullopt, again and again.
TEST(Select, ClosedChannelDeliversBufferedValuesThenNullopt) {
  no_leak check;
  for (std::size_t const capacity : {std::size_t{1}, std::size_t{3}, SIZE_MAX}) {
    auto ch = make_channel<tracked>(capacity);
    auto& tx = ch.first;
    auto& rx = ch.second;
    std::uint64_t const n = capacity == 1 ? 1 : 3;
    for (std::uint64_t id = 0; id < n; ++id) {
      ASSERT_TRUE(tx.try_send(tracked(id)));
    }
    tx.close();
    auto [other_tx, other_rx] = spindle::bounded<tracked>(1);  // never ready
    for (std::uint64_t k = 0; k < n + 2; ++k) {
      std::optional<tracked> got;
      bool ran = false;
      auto const i = spindle::select(spindle::on_recv(other_rx, [](std::optional<tracked>) {}),
                                     spindle::on_recv(rx,
                                                      [&](std::optional<tracked> v) {
                                                        ran = true;
                                                        got = std::move(v);
                                                      }),
                                     spindle::on_timeout(1h, [] {}));
      ASSERT_EQ(i, 1U);
      ASSERT_TRUE(ran);
      if (k < n) {
        ASSERT_TRUE(got.has_value()) << "capacity " << capacity << ", value " << k;
        EXPECT_EQ(got->id(), k);
      } else {
        EXPECT_FALSE(got.has_value());
      }
    }
  }
}

// A closed rendezvous channel is a ready receive case too.
TEST(Select, ClosedRendezvousReceivesNullopt) {
  auto [tx, rx] = spindle::bounded<int>(0);
  tx.close();
  bool closed = false;
  EXPECT_EQ(spindle::select(spindle::on_recv(rx, [&](std::optional<int> v) { closed = !v; }),
                            spindle::on_timeout(1h, [] {})),
            0U);
  EXPECT_TRUE(closed);
}

// A send case on a closed channel is ready: it reports closed and hands the very value back,
// for every flavour, whether the sender closed or the last receiver went away.
TEST(Select, SendOnClosedChannelHandsTheValueBack) {
  no_leak check;
  for (std::size_t const capacity : {std::size_t{0}, std::size_t{1}, std::size_t{4}, SIZE_MAX}) {
    for (bool const by_receiver : {false, true}) {
      auto ch = make_channel<tracked>(capacity);
      if (by_receiver) {
        auto gone = std::move(ch.second);
      } else {
        ch.first.close();
      }
      tracked v(77);
      std::optional<spindle::send_result<tracked>> result;
      auto const i = spindle::select(
          spindle::on_send(ch.first, v,
                           [&](spindle::send_result<tracked> r) { result.emplace(std::move(r)); }),
          spindle::on_timeout(1h, [] {}));
      ASSERT_EQ(i, 0U);
      ASSERT_TRUE(result.has_value());
      EXPECT_EQ(result->status, send_status::closed) << "capacity " << capacity;
      ASSERT_TRUE(result->value.has_value());
      EXPECT_EQ(result->value->id(), 77U);
      EXPECT_EQ(v.id(), moved_from_id) << "the value moves into the result";
    }
  }
}

// ---- The value of a send case ------------------------------------------------------------------

// A send case that is not chosen leaves its value where it was: not moved, not copied, not
// destroyed (the live count does not change).
TEST(Select, UnchosenSendLeavesTheValueUntouched) {
  no_leak check;
  auto [full_tx, full_rx] = spindle::bounded<tracked>(1);
  auto [rv_tx, rv_rx] = spindle::bounded<tracked>(0);
  auto [in_tx, in_rx] = spindle::bounded<tracked>(1);
  ASSERT_TRUE(full_tx.try_send(tracked(1)));
  tracked a(10);
  tracked b(20);
  auto const live = tracked::live();

  // Beaten by a ready receive.
  ASSERT_TRUE(in_tx.try_send(tracked(2)));
  EXPECT_EQ(spindle::select(spindle::on_send(full_tx, a, [](spindle::send_result<tracked>) {}),
                            spindle::on_send(rv_tx, b, [](spindle::send_result<tracked>) {}),
                            spindle::on_recv(in_rx, [](std::optional<tracked>) {})),
            2U);
  EXPECT_EQ(a.id(), 10U);
  EXPECT_EQ(b.id(), 20U);
  EXPECT_EQ(tracked::live(), live);

  // Beaten by the default case.
  EXPECT_EQ(spindle::select(spindle::on_send(full_tx, a, [](spindle::send_result<tracked>) {}),
                            spindle::on_send(rv_tx, b, [](spindle::send_result<tracked>) {}),
                            spindle::on_default([] {})),
            2U);
  // Beaten by a timeout, after waiting registered on both channels.
  EXPECT_EQ(spindle::select(spindle::on_send(full_tx, a, [](spindle::send_result<tracked>) {}),
                            spindle::on_send(rv_tx, b, [](spindle::send_result<tracked>) {}),
                            spindle::on_timeout(5ms, [] {})),
            2U);
  // Beaten by a stop requested while waiting.
  std::stop_source stop;
  std::jthread stopper([&stop] {
    std::this_thread::sleep_for(2ms);
    stop.request_stop();
  });
  EXPECT_EQ(spindle::select(spindle::on_send(full_tx, a, [](spindle::send_result<tracked>) {}),
                            spindle::on_send(rv_tx, b, [](spindle::send_result<tracked>) {}),
                            spindle::on_stop(stop.get_token(), [] {})),
            2U);
  EXPECT_EQ(a.id(), 10U);
  EXPECT_EQ(b.id(), 20U);
  EXPECT_EQ(tracked::live(), live);
  EXPECT_EQ(full_rx.try_recv().value->id(), 1U) << "the full channel kept only its own value";
  EXPECT_EQ(full_rx.try_recv().status, recv_status::empty);
}

// A send case that is chosen moves the value exactly once, into the channel; the receiver gets
// that very value.
TEST(Select, ChosenSendMovesTheValueExactlyOnce) {
  no_leak check;
  for (std::size_t const capacity : {std::size_t{1}, std::size_t{5}, SIZE_MAX}) {
    auto ch = make_channel<tracked>(capacity);
    tracked v(5);
    auto const live = tracked::live();
    bool sent = false;
    EXPECT_EQ(spindle::select(spindle::on_send(ch.first, v,
                                               [&](spindle::send_result<tracked> r) {
                                                 sent = r.is_sent();
                                                 EXPECT_FALSE(r.value.has_value());
                                               }),
                              spindle::on_timeout(1h, [] {})),
              0U);
    EXPECT_TRUE(sent);
    EXPECT_EQ(v.id(), moved_from_id);
    EXPECT_EQ(tracked::live(), live + 1) << "one move into the channel, no copy left behind";
    auto r = ch.second.try_recv();
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value->id(), 5U);
  }
}

// ---- Every flavour -----------------------------------------------------------------------------

struct flavour {
  std::string name;
  std::size_t capacity;  // as make_channel takes it
};

class SelectFlavour : public ::testing::TestWithParam<flavour> {};

// A receive case gets a value that a plain send on another thread makes while the select
// waits, or made before it started (for a rendezvous: a sender already blocked).
TEST_P(SelectFlavour, ReceiveCaseGetsAValueFromAnotherThread) {
  no_leak check;
  for (auto const delay : {0ms, 10ms}) {
    auto ch = make_channel<tracked>(GetParam().capacity);
    auto [idle_tx, idle_rx] = spindle::bounded<tracked>(0);
    std::jthread sender([&tx = ch.first, delay] {
      std::this_thread::sleep_for(delay);
      EXPECT_TRUE(tx.send(tracked(9)));
    });
    if (delay == 0ms) {
      std::this_thread::sleep_for(10ms);  // let the sender block first (rendezvous)
    }
    std::optional<tracked> got;
    auto const i = spindle::select(
        spindle::on_recv(idle_rx, [](std::optional<tracked>) {}),
        spindle::on_recv(ch.second, [&](std::optional<tracked> v) { got = std::move(v); }),
        spindle::on_timeout(30s, [] {}));
    EXPECT_EQ(i, 1U);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->id(), 9U);
  }
}

// A send case hands its value to a plain recv on another thread, waiting or about to wait
// (for a rendezvous the select pairs with that blocked receiver).
TEST_P(SelectFlavour, SendCaseReachesAReceiverOnAnotherThread) {
  no_leak check;
  for (auto const delay : {0ms, 10ms}) {
    auto ch = make_channel<tracked>(GetParam().capacity);
    std::optional<tracked> got;
    std::jthread receiver([&rx = ch.second, &got, delay] {
      std::this_thread::sleep_for(delay);
      got = rx.recv();
    });
    if (delay == 0ms) {
      std::this_thread::sleep_for(10ms);  // let the receiver block first
    }
    tracked v(4);
    auto const i = spindle::select(
        spindle::on_send(ch.first, v,
                         [](spindle::send_result<tracked> r) { EXPECT_TRUE(r.is_sent()); }),
        spindle::on_timeout(30s, [] {}));
    EXPECT_EQ(i, 0U);
    EXPECT_EQ(v.id(), moved_from_id);
    receiver.join();
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->id(), 4U);
  }
}

// A stream of values goes from a thread selecting on the send end to one selecting on the
// receive end: every value exactly once, in order, then closed.
TEST_P(SelectFlavour, SelectOnBothEndsDeliversEverythingInOrder) {
  no_leak check;
  constexpr std::uint64_t count = 300;
  auto ch = make_channel<tracked>(GetParam().capacity);
  std::jthread producer([&tx = ch.first] {
    std::stop_source never;
    for (std::uint64_t id = 0; id < count; ++id) {
      tracked v(id);
      auto const i = spindle::select(
          spindle::on_stop(never.get_token(), [] {}),
          spindle::on_send(tx, v, [](spindle::send_result<tracked> r) { ASSERT_TRUE(r); }));
      ASSERT_EQ(i, 1U);
    }
    tx.close();
  });
  std::uint64_t next = 0;
  for (bool open = true; open;) {
    spindle::select(spindle::on_recv(ch.second,
                                     [&](std::optional<tracked> v) {
                                       if (!v) {
                                         open = false;
                                         return;
                                       }
                                       EXPECT_EQ(v->id(), next);
                                       next = v->id() + 1;
                                     }),
                    spindle::on_timeout(30s, [&] {
                      ADD_FAILURE() << "stuck";
                      open = false;
                    }));
  }
  EXPECT_EQ(next, count);
}

// One channel named by two cases of one select: the select completes exactly one of them, as
// for two different channels, whether it waited or not.
TEST_P(SelectFlavour, TheSameChannelInTwoCasesCompletesOnce) {
  no_leak check;
  auto ch = make_channel<tracked>(GetParam().capacity);
  for (std::uint64_t round = 0; round < 20; ++round) {
    std::jthread sender([&tx = ch.first, round] {
      std::this_thread::sleep_for(std::chrono::microseconds(round % 2 * 500));
      EXPECT_TRUE(tx.send(tracked(round)));
    });
    int ran = 0;
    std::optional<tracked> got;
    auto take = [&ran, &got](std::optional<tracked> v) {
      ++ran;
      got = std::move(v);
    };
    auto const i =
        spindle::select(spindle::on_recv(ch.second, take), spindle::on_recv(ch.second, take),
                        spindle::on_timeout(30s, [] {}));
    sender.join();
    EXPECT_LT(i, 2U);
    EXPECT_EQ(ran, 1);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->id(), round);
  }
  for (std::uint64_t round = 0; round < 20; ++round) {
    std::optional<tracked> got;
    std::jthread receiver([&rx = ch.second, &got, round] {
      std::this_thread::sleep_for(std::chrono::microseconds(round % 2 * 500));
      got = rx.recv();
    });
    tracked a(round);
    tracked b(1000 + round);
    auto const i =
        spindle::select(spindle::on_send(ch.first, a, [] {}), spindle::on_send(ch.first, b, [] {}),
                        spindle::on_timeout(30s, [] {}));
    receiver.join();
    ASSERT_LT(i, 2U);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->id(), i == 0 ? round : 1000 + round);
    EXPECT_EQ((i == 0 ? a : b).id(), moved_from_id);
    EXPECT_NE((i == 0 ? b : a).id(), moved_from_id) << "the other case left its value";
    EXPECT_EQ(ch.second.try_recv().status, recv_status::empty) << "only one value was sent";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Flavours, SelectFlavour,
    ::testing::Values(flavour{"Rendezvous", 0}, flavour{"Bounded1", 1}, flavour{"Bounded4", 4},
                      flavour{"Unbounded", SIZE_MAX},
                      // bounded_lanes: lanes of capacity 1, 2 of them; of 4, 3.
                      flavour{"Lanes1x2", spindle_test::lanes_capacity(1, 2)},
                      flavour{"Lanes4x3", spindle_test::lanes_capacity(4, 3)}),
    [](auto const& info) { return info.param.name; });

// ---- Rendezvous ------------------------------------------------------------------------------

// Two threads select on opposite ends of one rendezvous channel and pair with each other.
TEST(SelectRendezvous, TwoSelectsOnOppositeEndsPair) {
  no_leak check;
  auto [tx, rx] = spindle::bounded<tracked>(0);
  for (std::uint64_t round = 0; round < 100; ++round) {
    std::optional<tracked> got;
    std::jthread receiver([&rx = rx, &got] {
      EXPECT_EQ(spindle::select(
                    spindle::on_recv(rx, [&](std::optional<tracked> v) { got = std::move(v); }),
                    spindle::on_timeout(30s, [] {})),
                0U);
    });
    tracked v(round);
    EXPECT_EQ(spindle::select(
                  spindle::on_timeout(30s, [] {}),
                  spindle::on_send(
                      tx, v, [](spindle::send_result<tracked> r) { EXPECT_TRUE(r.is_sent()); })),
              1U);
    receiver.join();
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->id(), round);
  }
}

// Two threads cross over two rendezvous channels (A sends on 1 / receives on 2, B the
// opposite): both complete, through the same channel, and exactly one value moves.
TEST(SelectRendezvous, CrossedSelectsCompleteThroughOneChannel) {
  no_leak check;
  auto [tx1, rx1] = spindle::bounded<tracked>(0);
  auto [tx2, rx2] = spindle::bounded<tracked>(0);
  for (std::uint64_t round = 0; round < 100; ++round) {
    std::size_t b_index = 9;
    tracked b_value(1000 + round);
    std::optional<tracked> b_got;
    std::jthread b([&rx1 = rx1, &tx2 = tx2, &b_index, &b_value, &b_got] {
      b_index = spindle::select(
          spindle::on_recv(rx1, [&](std::optional<tracked> v) { b_got = std::move(v); }),
          spindle::on_send(tx2, b_value, [](spindle::send_result<tracked> r) { ASSERT_TRUE(r); }),
          spindle::on_timeout(30s, [] {}));
    });
    tracked a_value(round);
    std::optional<tracked> a_got;
    auto const a_index = spindle::select(
        spindle::on_send(tx1, a_value, [](spindle::send_result<tracked> r) { ASSERT_TRUE(r); }),
        spindle::on_recv(rx2, [&](std::optional<tracked> v) { a_got = std::move(v); }),
        spindle::on_timeout(30s, [] {}));
    b.join();
    ASSERT_EQ(a_index, b_index) << "both must complete through the same channel";
    if (a_index == 0) {
      ASSERT_TRUE(b_got.has_value());
      EXPECT_EQ(b_got->id(), round);
      EXPECT_EQ(a_value.id(), moved_from_id);
      EXPECT_EQ(b_value.id(), 1000 + round) << "B's unchosen send left its value";
    } else {
      ASSERT_EQ(a_index, 1U);
      ASSERT_TRUE(a_got.has_value());
      EXPECT_EQ(a_got->id(), 1000 + round);
      EXPECT_EQ(a_value.id(), round) << "A's unchosen send left its value";
      EXPECT_EQ(b_value.id(), moved_from_id);
    }
  }
}

// A select offering both ends of one rendezvous channel does not pair with itself: with
// nobody else there it times out, its value untouched.
TEST(SelectRendezvous, BothEndsInOneSelectDoNotPairWithEachOther) {
  no_leak check;
  auto [tx, rx] = spindle::bounded<tracked>(0);
  tracked v(3);
  auto const live = tracked::live();
  auto const t0 = steady::now();
  EXPECT_EQ(spindle::select(spindle::on_send(tx, v, [](spindle::send_result<tracked>) {}),
                            spindle::on_recv(rx, [](std::optional<tracked>) {}),
                            spindle::on_timeout(30ms, [] {})),
            2U);
  EXPECT_GE(steady::now() - t0, 30ms);
  EXPECT_EQ(spindle::select_biased(spindle::on_recv(rx, [](std::optional<tracked>) {}),
                                   spindle::on_send(tx, v, [](spindle::send_result<tracked>) {}),
                                   spindle::on_default([] {})),
            2U);
  EXPECT_EQ(v.id(), 3U);
  EXPECT_EQ(tracked::live(), live);
}

// Two selects that each offer both ends of one rendezvous channel pair with each other: one
// sends, the other receives that value.
TEST(SelectRendezvous, TwoSelectsOfferingBothEndsPairWithEachOther) {
  no_leak check;
  auto [tx, rx] = spindle::bounded<tracked>(0);
  for (std::uint64_t round = 0; round < 100; ++round) {
    struct side {
      tracked value;
      std::optional<tracked> got;
      std::size_t index = 9;
    };
    side a{tracked(round), {}, 9};
    side b{tracked(1000 + round), {}, 9};
    auto run = [&tx = tx, &rx = rx](side& s) {
      s.index = spindle::select(
          spindle::on_send(tx, s.value, [](spindle::send_result<tracked> r) { ASSERT_TRUE(r); }),
          spindle::on_recv(rx, [&s](std::optional<tracked> v) { s.got = std::move(v); }),
          spindle::on_timeout(30s, [] {}));
    };
    std::jthread other([&run, &b] { run(b); });
    run(a);
    other.join();
    ASSERT_LT(a.index, 2U);
    ASSERT_LT(b.index, 2U);
    ASSERT_NE(a.index, b.index) << "one sends, the other receives";
    side& sender = a.index == 0 ? a : b;
    side& receiver = a.index == 0 ? b : a;
    ASSERT_TRUE(receiver.got.has_value());
    EXPECT_EQ(sender.value.id(), moved_from_id);
    EXPECT_NE(receiver.value.id(), moved_from_id);
    EXPECT_EQ(receiver.got->id(), &sender == &a ? round : 1000 + round);
  }
}

// ---- Waking a waiting select -------------------------------------------------------------------

// The four flavours a waiting select watches in the wake-up tests.
struct four_channels {
  std::pair<spindle::sender<tracked>, spindle::receiver<tracked>> ch[4] = {
      make_channel<tracked>(0), make_channel<tracked>(1), make_channel<tracked>(4),
      make_channel<tracked>(SIZE_MAX)};

  /// Waits on a receive from each; returns the chosen index and what it received.
  auto select_recv(std::optional<tracked>& got) -> std::size_t {
    auto take = [&got](std::optional<tracked> v) { got = std::move(v); };
    return spindle::select(spindle::on_recv(ch[0].second, take),
                           spindle::on_recv(ch[1].second, take),
                           spindle::on_recv(ch[2].second, take),
                           spindle::on_recv(ch[3].second, take), spindle::on_timeout(30s, [] {}));
  }
};

// A select waiting on several channels is woken by a send on any one of them, and receives
// from that one.
TEST(SelectWake, ASendOnAnyWatchedChannelWakesTheSelect) {
  no_leak check;
  for (std::size_t k = 0; k < 4; ++k) {
    four_channels c;
    std::jthread sender([&tx = c.ch[k].first, k] {
      std::this_thread::sleep_for(10ms);
      EXPECT_TRUE(tx.send(tracked(k)));
    });
    std::optional<tracked> got;
    EXPECT_EQ(c.select_recv(got), k);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->id(), k);
  }
}

// A select waiting on several channels is woken by the close of any one of them, and reports
// that channel closed.
TEST(SelectWake, ACloseOfAnyWatchedChannelWakesTheSelect) {
  for (std::size_t k = 0; k < 4; ++k) {
    four_channels c;
    std::jthread closer([&tx = c.ch[k].first] {
      std::this_thread::sleep_for(10ms);
      tx.close();
    });
    std::optional<tracked> got(tracked(99));
    EXPECT_EQ(c.select_recv(got), k);
    EXPECT_FALSE(got.has_value());
  }
}

// A select waiting to send into full channels is woken when a receiver makes room in one, or
// when one closes (and then gets its value back).
TEST(SelectWake, RoomOrCloseWakesAWaitingSend) {
  no_leak check;
  for (bool const by_close : {false, true}) {
    for (std::size_t k = 0; k < 2; ++k) {
      auto full = make_channel<tracked>(1);
      auto rv = make_channel<tracked>(0);
      ASSERT_TRUE(full.first.try_send(tracked(100)));
      auto& rx = k == 0 ? full.second : rv.second;
      std::jthread partner([&rx, by_close] {
        std::this_thread::sleep_for(10ms);
        if (by_close) {
          rx.close();
        } else {
          EXPECT_TRUE(rx.recv());
        }
      });
      tracked a(1);
      tracked b(2);
      std::optional<spindle::send_result<tracked>> result;
      auto keep = [&result](spindle::send_result<tracked> r) { result.emplace(std::move(r)); };
      auto const i =
          spindle::select(spindle::on_send(full.first, a, keep),
                          spindle::on_send(rv.first, b, keep), spindle::on_timeout(30s, [] {}));
      partner.join();
      ASSERT_EQ(i, k);
      ASSERT_TRUE(result.has_value());
      tracked& unchosen = k == 0 ? b : a;
      EXPECT_NE(unchosen.id(), moved_from_id);
      if (by_close) {
        EXPECT_EQ(result->status, send_status::closed);
        ASSERT_TRUE(result->value.has_value());
        EXPECT_EQ(result->value->id(), k + 1);
      } else {
        EXPECT_EQ(result->status, send_status::sent);
      }
    }
  }
}

// ---- dynamic_select ----------------------------------------------------------------------------

// dynamic_select holds cases counted at run time; repeated selects drain every channel, each
// value exactly once and in its channel's order, and then see each one closed.
TEST(DynamicSelect, DrainsAChannelCountKnownOnlyAtRunTime) {
  no_leak check;
  std::size_t const n = std::thread::hardware_concurrency() % 3 + 5;  // 5 to 7, at run time
  std::vector<std::pair<spindle::sender<tracked>, spindle::receiver<tracked>>> channels;
  for (std::size_t c = 0; c < n; ++c) {
    channels.push_back(make_channel<tracked>(c % 2 == 0 ? SIZE_MAX : c + 1));
    for (std::uint64_t k = 0; k <= c; ++k) {
      ASSERT_TRUE(channels[c].first.try_send(tracked(c * 100 + k)));
    }
    channels[c].first.close();
  }
  std::vector<std::vector<std::uint64_t>> received(n);
  std::vector<bool> closed(n, false);
  spindle::dynamic_select sel;
  for (std::size_t c = 0; c < n; ++c) {
    auto const index = sel.add(
        spindle::on_recv(channels[c].second, [&received, &closed, c](std::optional<tracked> v) {
          if (v) {
            received[c].push_back(v->id());
          } else {
            closed[c] = true;
          }
        }));
    EXPECT_EQ(index, c);
  }
  EXPECT_EQ(sel.size(), n);
  std::size_t closed_count = 0;
  for (int guard = 0; closed_count < n && guard < 100000; ++guard) {
    auto const i = sel.select();
    ASSERT_LT(i, n);
    closed_count = static_cast<std::size_t>(std::count(closed.begin(), closed.end(), true));
  }
  ASSERT_EQ(closed_count, n);
  for (std::size_t c = 0; c < n; ++c) {
    ASSERT_EQ(received[c].size(), c + 1);
    for (std::uint64_t k = 0; k <= c; ++k) {
      EXPECT_EQ(received[c][k], c * 100 + k);
    }
  }
}

// dynamic_select blocks like select until another thread sends on one of its channels.
TEST(DynamicSelect, WaitsForAnyOfItsChannels) {
  std::vector<std::pair<spindle::sender<int>, spindle::receiver<int>>> channels;
  for (int c = 0; c < 6; ++c) {
    channels.push_back(spindle::bounded<int>(c % 3));
  }
  int got = -1;
  spindle::dynamic_select sel;
  for (auto& ch : channels) {
    sel.add(spindle::on_recv(ch.second, [&got](std::optional<int> v) { got = v.value_or(-2); }));
  }
  sel.add(spindle::on_timeout(30s, [] {}));
  for (std::size_t k = 0; k < channels.size(); ++k) {
    std::jthread sender([&tx = channels[k].first, k] {
      std::this_thread::sleep_for(2ms);
      EXPECT_TRUE(tx.send(static_cast<int>(k)));
    });
    EXPECT_EQ(sel.select(), k);
    EXPECT_EQ(got, static_cast<int>(k));
  }
}

// The cases stay in the set: select may run again, and a timeout case keeps the deadline it
// was made with (once passed, it is chosen at once).
TEST(DynamicSelect, SelectsAgainAfterACaseWasChosen) {
  auto [tx, rx] = spindle::bounded<int>(2);
  spindle::dynamic_select sel;
  std::vector<int> got;
  int timeouts = 0;
  auto const t0 = steady::now();
  EXPECT_EQ(sel.add(spindle::on_recv(rx, [&got](std::optional<int> v) { got.push_back(*v); })), 0U);
  EXPECT_EQ(sel.add(spindle::on_timeout(20ms, [&timeouts] { ++timeouts; })), 1U);
  ASSERT_TRUE(tx.try_send(1));
  ASSERT_TRUE(tx.try_send(2));
  EXPECT_EQ(sel.select(), 0U);
  EXPECT_EQ(sel.select(), 0U);
  EXPECT_EQ(sel.select(), 1U);
  EXPECT_GE(steady::now() - t0, 20ms);
  auto const t1 = steady::now();
  EXPECT_EQ(sel.select(), 1U);
  EXPECT_LT(steady::now() - t1, 5s) << "the deadline was fixed when the case was made";
  EXPECT_EQ(got, (std::vector<int>{1, 2}));
  EXPECT_EQ(timeouts, 2);
}

// dynamic_select's select_biased prefers the case added first.
TEST(DynamicSelect, BiasedPrefersTheFirstAddedCase) {
  auto [a_tx, a_rx] = spindle::bounded<int>(1);
  auto [b_tx, b_rx] = spindle::bounded<int>(1);
  spindle::dynamic_select sel;
  sel.add(spindle::on_recv(a_rx, [](std::optional<int>) {}));
  sel.add(spindle::on_recv(b_rx, [](std::optional<int>) {}));
  ASSERT_TRUE(b_tx.try_send(2));
  for (int n = 0; n < 500; ++n) {
    ASSERT_TRUE(a_tx.try_send(1));
    ASSERT_EQ(sel.select_biased(), 0U);
  }
  EXPECT_EQ(sel.select_biased(), 1U);
}

// An empty dynamic_select could never complete: select throws std::invalid_argument, also
// after clear().
TEST(DynamicSelect, EmptyThrowsInvalidArgument) {
  spindle::dynamic_select sel;
  EXPECT_TRUE(sel.empty());
  EXPECT_THROW(static_cast<void>(sel.select()), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(sel.select_biased()), std::invalid_argument);
  sel.add(spindle::on_default([] {}));
  EXPECT_EQ(sel.size(), 1U);
  EXPECT_EQ(sel.select(), 0U);
  sel.clear();
  EXPECT_TRUE(sel.empty());
  EXPECT_THROW(static_cast<void>(sel.select()), std::invalid_argument);
  EXPECT_EQ(sel.add(spindle::on_default([] {})), 0U) << "indices start again after clear()";
}

// A dynamic_select may own a timer receiver passed by value.
TEST(DynamicSelect, OwnsATimerReceiverPassedByValue) {
  spindle::dynamic_select sel;
  auto const t0 = steady::now();
  sel.add(spindle::on_timeout(30s, [] {}));
  sel.add(spindle::on_recv(spindle::after(10ms), [](std::optional<steady::time_point>) {}));
  EXPECT_EQ(sel.select(), 1U);
  EXPECT_GE(steady::now() - t0, 10ms);
}

// ---- Timer channels ----------------------------------------------------------------------------

// after(d) delivers one time point, not before d has passed, and no second one.
TEST(TimerChannel, AfterDeliversOnceNotBeforeItsDelay) {
  auto const t0 = steady::now();
  auto rx = spindle::after(20ms);
  auto first = rx.recv();
  ASSERT_TRUE(first.has_value());
  EXPECT_GE(*first - t0, 20ms);
  EXPECT_GE(steady::now() - t0, 20ms);
  EXPECT_NE(rx.recv_for(50ms).status, recv_status::received) << "after() delivers only once";
}

// after() with a zero or negative delay delivers at once; a huge one never fires but may be
// dropped safely.
TEST(TimerChannel, AfterWithExtremeDelays) {
  auto const t0 = steady::now();
  EXPECT_TRUE(spindle::after(0ms).recv().has_value());
  EXPECT_TRUE(spindle::after(-1h).recv().has_value());
  EXPECT_LT(steady::now() - t0, 5s);
  auto never = spindle::after(std::chrono::nanoseconds::max());
  EXPECT_EQ(never.recv_for(5ms).status, recv_status::timed_out);
}

// tick(d) delivers again and again, at least d apart from its start each time.
TEST(TimerChannel, TickDeliversRepeatedly) {
  auto const t0 = steady::now();
  auto rx = spindle::tick(3ms);
  std::optional<steady::time_point> last;
  for (int n = 1; n <= 5; ++n) {
    auto t = rx.recv();
    ASSERT_TRUE(t.has_value());
    EXPECT_GE(*t - t0, 3ms * n) << "tick " << n;
    if (last) {
      EXPECT_GT(*t, *last);
    }
    last = t;
  }
}

// tick() needs a positive period.
TEST(TimerChannel, TickRejectsANonPositivePeriod) {
  EXPECT_THROW(static_cast<void>(spindle::tick(0ms)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(spindle::tick(-1s)), std::invalid_argument);
}

// A ticker keeps running while any copy of its receiver lives, and stops, without crashing
// the timer, once the last one is dropped; the timer keeps serving others.
TEST(TimerChannel, DroppingTheTickReceiverStopsIt) {
  {
    auto rx = spindle::tick(1ms);
    auto copy = rx;
    ASSERT_TRUE(rx.recv().has_value());
    { auto gone = std::move(rx); }
    ASSERT_TRUE(copy.recv().has_value()) << "a copy still receives";
  }
  for (int n = 0; n < 20; ++n) {
    auto dropped = spindle::tick(std::chrono::microseconds(100 + n));
  }
  std::this_thread::sleep_for(10ms);  // the dropped tickers fire once more and stop
  EXPECT_TRUE(spindle::after(1ms).recv().has_value());
}

// A timer channel is a case like any other: after() in a select with a channel that stays
// empty fires after its delay; with a ready channel, the channel wins.
TEST(TimerChannel, AfterInASelect) {
  auto [tx, rx] = spindle::bounded<int>(1);
  auto const t0 = steady::now();
  std::optional<steady::time_point> fired;
  auto const i = spindle::select(
      spindle::on_recv(rx, [](std::optional<int>) {}),
      spindle::on_recv(spindle::after(15ms),
                       [&fired](std::optional<steady::time_point> t) { fired = t; }));
  EXPECT_EQ(i, 1U);
  ASSERT_TRUE(fired.has_value());
  EXPECT_GE(*fired - t0, 15ms);
  EXPECT_GE(steady::now() - t0, 15ms);

  ASSERT_TRUE(tx.try_send(5));
  EXPECT_EQ(spindle::select(
                spindle::on_recv(spindle::after(1h), [](std::optional<steady::time_point>) {}),
                spindle::on_recv(rx, [](std::optional<int>) {})),
            1U);

  auto ticks = spindle::tick(2ms);
  int n = 0;
  for (int k = 0; k < 3; ++k) {
    n += static_cast<int>(
        spindle::select(spindle::on_recv(rx, [](std::optional<int>) {}),
                        spindle::on_recv(ticks, [](std::optional<steady::time_point>) {})));
  }
  EXPECT_EQ(n, 3) << "three ticks arrived";
}

// tick() and after() saturate periods and delays beyond steady_clock's range, as every timeout
// does: they never fire, and nothing overflows (UBSan checks the conversions).
TEST(TimerChannel, ExtremePeriodsSaturate) {
  using years = std::chrono::duration<std::int64_t, std::ratio<31556952>>;
  using std::chrono::hours;
  using std::chrono::seconds;
  std::vector<spindle::receiver<steady::time_point>> never;
  never.push_back(spindle::tick(years(1000)));
  never.push_back(spindle::tick(hours::max()));
  never.push_back(spindle::tick(seconds::max()));
  never.push_back(spindle::tick(std::chrono::duration<double>(1e300)));
  never.push_back(
      spindle::tick(std::chrono::duration<double>(std::numeric_limits<double>::infinity())));
  never.push_back(spindle::after(years(1000)));
  never.push_back(spindle::after(hours::max()));
  never.push_back(spindle::after(seconds::max()));
  never.push_back(spindle::after(std::chrono::duration<double>(1e300)));
  for (auto& rx : never) {
    EXPECT_EQ(rx.try_recv().status, recv_status::empty);
  }
  EXPECT_EQ(never.front().recv_for(2ms).status, recv_status::timed_out);
  EXPECT_THROW(static_cast<void>(spindle::tick(
                   std::chrono::duration<double>(std::numeric_limits<double>::quiet_NaN()))),
               std::invalid_argument);
  EXPECT_THROW(static_cast<void>(spindle::tick(hours::min())), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(spindle::tick(std::chrono::duration<double>(-1e300))),
               std::invalid_argument);
}

// A select loop whose timeout case is after(1h) leaves nothing behind: dropping the receiver
// (when the select returns) cancels the timer and frees the channel, so the timer's queue
// does not grow with the iterations (it grew by one entry and ~1 KB per select, held for an
// hour).
TEST(TimerChannel, DroppedAfterFreesItsTimerAtOnce) {
  auto& timer = spindle::detail::timer_service::instance();
  auto const before = timer.queued();
  auto [tx, rx] = spindle::bounded<int>(1);
  for (int n = 0; n < 20'000; ++n) {
    ASSERT_TRUE(tx.try_send(n));
    auto const i = spindle::select(
        spindle::on_recv(rx, [](std::optional<int>) {}),
        spindle::on_recv(spindle::after(1h), [](std::optional<steady::time_point>) {}));
    ASSERT_EQ(i, 0U);
  }
  EXPECT_LE(timer.queued(), before);
}

// Likewise a ticker: once its last receiver is gone, its entry leaves the timer at once.
TEST(TimerChannel, DroppedTickerFreesItsTimerAtOnce) {
  auto& timer = spindle::detail::timer_service::instance();
  auto const before = timer.queued();
  std::vector<spindle::receiver<steady::time_point>> tickers;
  for (int n = 0; n < 1'000; ++n) {
    tickers.push_back(spindle::tick(1h));
  }
  EXPECT_GE(timer.queued(), before + 1'000);
  tickers.clear();
  EXPECT_LE(timer.queued(), before);
}

// Dropping a timer channel races its fire: receivers of short after() and tick() channels
// are dropped at random moments, before, during or after the timer thread fires them.
// Nothing crashes (ASan, TSan), and every entry is gone afterwards.
TEST(TimerChannel, DroppingRacesTheFire) {
  auto& timer = spindle::detail::timer_service::instance();
  auto const before = timer.queued();
  std::uint64_t rng = 0x9E3779B97F4A7C15ULL;
  auto next = [&rng] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  auto spin = [](std::uint64_t us) {
    auto const until = steady::now() + std::chrono::microseconds(us);
    while (steady::now() < until) {
    }
  };
  int received = 0;
  for (int n = 0; n < 4'000; ++n) {
    auto const d = std::chrono::microseconds(next() % 50);
    auto rx = (n % 4 == 0) ? spindle::tick(d + 1us) : spindle::after(d);
    spin(next() % 60);
    if (next() % 2 == 0) {
      received += rx.try_recv().is_received() ? 1 : 0;
    }
  }
  EXPECT_GT(received, 0);
  auto const limit = steady::now() + 10s;
  while (timer.queued() > before && steady::now() < limit) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_LE(timer.queued(), before);
  EXPECT_TRUE(spindle::after(1ms).recv().has_value()) << "the timer still serves others";
}

// ---- Handlers that throw -----------------------------------------------------------------------

// An exception from the chosen handler leaves select; the operation completed, nothing leaks,
// and the channels work as before.
TEST(SelectHandlerThrows, TheExceptionPropagatesAndTheChannelsStayConsistent) {
  no_leak check;
  auto [tx, rx] = spindle::bounded<tracked>(2);
  auto [out_tx, out_rx] = spindle::bounded<tracked>(1);
  auto [idle_tx, idle_rx] = spindle::bounded<tracked>(1);
  ASSERT_TRUE(tx.try_send(tracked(1)));
  ASSERT_TRUE(tx.try_send(tracked(2)));

  // A receive handler throws: the value it got is destroyed with it; the next value is next.
  EXPECT_THROW(spindle::select(spindle::on_recv(rx,
                                                [](std::optional<tracked> v) {
                                                  EXPECT_EQ(v->id(), 1U);
                                                  throw std::runtime_error("handler");
                                                }),
                               spindle::on_timeout(1h, [] {})),
               std::runtime_error);
  std::optional<tracked> got;
  EXPECT_EQ(
      spindle::select(spindle::on_recv(rx, [&](std::optional<tracked> v) { got = std::move(v); }),
                      spindle::on_timeout(1h, [] {})),
      0U);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->id(), 2U);

  // A send handler throws: the value was sent all the same.
  tracked v(3);
  EXPECT_THROW(spindle::select(spindle::on_send(out_tx, v,
                                                [](spindle::send_result<tracked>) {
                                                  throw std::runtime_error("handler");
                                                }),
                               spindle::on_timeout(1h, [] {})),
               std::runtime_error);
  EXPECT_EQ(out_rx.try_recv().value->id(), 3U);

  // A handler of a send on a closed channel throws: the handed-back value dies with the result.
  out_tx.close();
  tracked w(4);
  EXPECT_THROW(spindle::select(spindle::on_send(out_tx, w,
                                                [](spindle::send_result<tracked> r) {
                                                  EXPECT_TRUE(r.is_closed());
                                                  throw std::runtime_error("handler");
                                                }),
                               spindle::on_default([] {})),
               std::runtime_error);

  // A handler throws after the select waited: it is withdrawn from every channel.
  std::jthread sender([&tx = tx] {
    std::this_thread::sleep_for(5ms);
    EXPECT_TRUE(tx.send(tracked(5)));
  });
  EXPECT_THROW(spindle::select(spindle::on_recv(rx, [](std::optional<tracked>) { throw 42; }),
                               spindle::on_recv(idle_rx, [](std::optional<tracked>) {}),
                               spindle::on_timeout(30s, [] {})),
               int);
  sender.join();
  ASSERT_TRUE(tx.try_send(tracked(6)));
  EXPECT_EQ(rx.try_recv().value->id(), 6U);
}

// A handler of a dynamic_select that throws leaves the set usable.
TEST(SelectHandlerThrows, DynamicSelectIsUsableAfterAThrow) {
  auto [tx, rx] = spindle::bounded<int>(4);
  spindle::dynamic_select sel;
  sel.add(spindle::on_recv(rx, [](std::optional<int> v) {
    if (v == 1) {
      throw std::runtime_error("one");
    }
  }));
  ASSERT_TRUE(tx.try_send(1));
  ASSERT_TRUE(tx.try_send(2));
  EXPECT_THROW(sel.select(), std::runtime_error);
  EXPECT_EQ(sel.select(), 0U);
  EXPECT_EQ(rx.try_recv().status, recv_status::empty);
}

// ---- Misuse ------------------------------------------------------------------------------------

class SelectMisuseDeathTest : public testing::Test {
 protected:
  // Threadsafe: the child re-runs the test from the start instead of forking a process that
  // may hold other threads' locks (the timer thread).
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

constexpr char const* moved_sender = "misuse: use of a moved-from spindle::sender";
constexpr char const* moved_receiver = "misuse: use of a moved-from spindle::receiver";

/// A channel whose handles were moved out of `kept` into `tx` and `rx`.
struct moved_handles {
  std::pair<spindle::sender<int>, spindle::receiver<int>> kept = spindle::bounded<int>(1);
  spindle::sender<int> tx = std::move(kept.first);
  spindle::receiver<int> rx = std::move(kept.second);
};

void select_on_moved_receiver(moved_handles& h) {
  static_cast<void>(
      spindle::select(spindle::on_recv(h.kept.second, [] {}), spindle::on_default([] {})));
}

void select_on_moved_sender(moved_handles& h) {
  int v = 1;
  static_cast<void>(
      spindle::select(spindle::on_send(h.kept.first, v, [] {}), spindle::on_default([] {})));
}

void select_on_moved_owned_receiver(moved_handles& h) {
  static_cast<void>(spindle::select(spindle::on_recv(std::move(h.kept.second), [] {}),
                                    spindle::on_default([] {})));
}

void dynamic_select_on_moved_receiver(moved_handles& h) {
  spindle::dynamic_select sel;
  sel.add(spindle::on_default([] {}));
  sel.add(spindle::on_recv(h.kept.second, [] {}));
  static_cast<void>(sel.select());
}

// A case on a moved-from sender or receiver is reported and aborts, rather than dereference
// a null channel.
TEST_F(SelectMisuseDeathTest, ACaseOnAMovedFromHandleAborts) {
  moved_handles h;
  EXPECT_DEATH(select_on_moved_receiver(h), moved_receiver);
  EXPECT_DEATH(select_on_moved_sender(h), moved_sender);
  EXPECT_DEATH(select_on_moved_owned_receiver(h), moved_receiver);
  EXPECT_DEATH(dynamic_select_on_moved_receiver(h), moved_receiver);
}

}  // namespace

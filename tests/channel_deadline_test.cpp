// Timeouts and deadlines at the edges of their types, on every channel flavour.
//
// The contract: a timeout or deadline means what it says for every value a caller can write.
//   - At or before now (time_point::min(), duration::min(), zero, -inf): an immediate timeout.
//     The call tries once: it still sends into free room and receives a buffered value.
//   - Beyond what steady_clock represents (time_point::max() on any clock and duration type,
//     duration::max(), +inf): no timeout; the call waits until it succeeds or the channel
//     closes.
//   - NaN: an immediate timeout.
// Every blocking call here runs under a time limit, so a regression fails instead of hanging.

#include <spindle/channel.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <limits>
#include <optional>
#include <ostream>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;
using spindle::recv_status;
using spindle::send_status;
using steady = std::chrono::steady_clock;
using sys = std::chrono::system_clock;
using fseconds = std::chrono::duration<double>;

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// `lanes` is bounded_lanes with two lanes of one slot: every test sends through one handle, so
// the bound it sees is that handle's lane (the helpers' copies of the sender only close it).
enum class flavour { bounded, unbounded, rendezvous, lanes };

auto make_channel(flavour f) -> std::pair<spindle::sender<int>, spindle::receiver<int>> {
  switch (f) {
    case flavour::bounded:
      return spindle::bounded<int>(1);
    case flavour::unbounded:
      return spindle::unbounded<int>();
    case flavour::lanes:
      return spindle::bounded_lanes<int>(1, 2);
    case flavour::rendezvous:
      break;
  }
  return spindle::bounded<int>(0);
}

auto to_string(flavour f) -> std::string {
  switch (f) {
    case flavour::bounded:
      return "Bounded";
    case flavour::unbounded:
      return "Unbounded";
    case flavour::lanes:
      return "Lanes";
    case flavour::rendezvous:
      break;
  }
  return "Rendezvous";
}

auto flavour_name(testing::TestParamInfo<flavour> const& info) -> std::string {
  return to_string(info.param);
}

void PrintTo(flavour f, std::ostream* os) {
  *os << to_string(f);
}

/// How long a call that should return at once, or after its partner acted, may take before the
/// test calls it stuck. Generous: sanitizer builds on a loaded machine are slow.
constexpr auto limit = 10s;

/// Runs `call` on a thread and returns what it returned. If it has not returned within
/// `limit`, the test fails and the channel is closed (which ends every blocked call) so that
/// the test ends.
template <class Call>
auto within_limit(spindle::sender<int> tx, Call call) -> decltype(call()) {
  std::packaged_task<decltype(call())()> task(std::move(call));
  auto result = task.get_future();
  std::thread t(std::move(task));
  if (result.wait_for(limit) != std::future_status::ready) {
    ADD_FAILURE() << "still blocked after " << limit.count() << " s";
    tx.close();
  }
  t.join();
  return result.get();
}

/// Runs `call` on a thread, checks that it is still blocked a little later, then runs
/// `release` (which lets it succeed, or closes the channel) and returns what `call` returned.
/// The pause is a check that something does not happen, so it has to be a time; a call that
/// wrongly timed out at once fails it on any machine.
template <class Call, class Release>
auto blocked_until_released(spindle::sender<int> tx, Call call, Release release)
    -> decltype(call()) {
  std::atomic<bool> returned{false};
  std::packaged_task<decltype(call())()> task([&] {
    auto r = call();
    returned.store(true);
    return r;
  });
  auto result = task.get_future();
  std::thread t(std::move(task));
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(returned.load()) << "returned before it was released";
  release();
  if (result.wait_for(limit) != std::future_status::ready) {
    ADD_FAILURE() << "still blocked " << limit.count() << " s after it was released";
    tx.close();
  }
  t.join();
  return result.get();
}

/// Whether the flavour keeps a sent value until it is received (so a test can look for it).
auto buffers(flavour f) -> bool {
  return f == flavour::bounded || f == flavour::lanes;
}

/// Fills the channel so that a send through `tx` has to wait: the bounded channel's one slot,
/// or the one slot of tx's lane; nothing for a rendezvous (no receiver waits). An unbounded
/// channel can never be made full.
void make_full(flavour f, spindle::sender<int>& tx) {
  if (buffers(f)) {
    ASSERT_TRUE(tx.try_send(-1));
  }
}

/// Makes room for one blocked send (receives the filler, or takes the rendezvous value).
void make_room(spindle::receiver<int>& rx) {
  auto r = rx.recv_for(limit);
  EXPECT_EQ(r.status, recv_status::received);
}

/// Delivers one value to a blocked receive (a rendezvous needs a send that waits for it).
void deliver(spindle::sender<int>& tx, int value) {
  EXPECT_EQ(tx.send_for(value, limit).status, send_status::sent);
}

// ---- The deadlines under test ---------------------------------------------------------------

/// A send or receive with one kind of deadline: `send(tx, v)` and `recv(rx)` call the channel.
struct deadline_case {
  std::string name;
  std::function<spindle::send_result<int>(spindle::sender<int>&, int)> send;
  std::function<spindle::recv_result<int>(spindle::receiver<int>&)> recv;
};

template <class Deadline>
auto until(std::string name, Deadline deadline) -> deadline_case {
  return {std::move(name),
          [deadline](spindle::sender<int>& tx, int v) { return tx.send_until(v, deadline); },
          [deadline](spindle::receiver<int>& rx) { return rx.recv_until(deadline); }};
}

template <class Timeout>
auto for_(std::string name, Timeout timeout) -> deadline_case {
  return {std::move(name),
          [timeout](spindle::sender<int>& tx, int v) { return tx.send_for(v, timeout); },
          [timeout](spindle::receiver<int>& rx) { return rx.recv_for(timeout); }};
}

using steady_seconds = std::chrono::time_point<steady, std::chrono::seconds>;
using steady_fseconds = std::chrono::time_point<steady, fseconds>;
using system_seconds = std::chrono::time_point<sys, std::chrono::seconds>;
using system_fseconds = std::chrono::time_point<sys, fseconds>;
using steady_nanos =
    std::chrono::time_point<steady, std::chrono::duration<std::int64_t, std::nano>>;

/// Deadlines at or before now, and NaN: each is an immediate timeout.
auto past_deadlines() -> std::vector<deadline_case> {
  return {
      until("system_clock min", sys::time_point::min()),
      until("steady_clock min", steady::time_point::min()),
      until("steady seconds min", steady_seconds::min()),
      until("steady nanoseconds min", steady_nanos::min()),
      until("system seconds min", system_seconds::min()),
      until("steady double lowest", steady_fseconds::min()),
      until("system double lowest", system_fseconds::min()),
      until("steady -inf", steady_fseconds(fseconds(-inf))),
      until("system -inf", system_fseconds(fseconds(-inf))),
      until("steady NaN", steady_fseconds(fseconds(nan))),
      until("system NaN", system_fseconds(fseconds(nan))),
      until("steady now", steady::now()),
      until("system an hour ago", sys::now() - 1h),
      for_("nanoseconds min", std::chrono::nanoseconds::min()),
      for_("seconds min", std::chrono::seconds::min()),
      for_("hours min", std::chrono::hours::min()),
      for_("double lowest", fseconds::min()),
      for_("-inf", fseconds(-inf)),
      for_("NaN", fseconds(nan)),
      for_("zero", 0ns),
      for_("unsigned zero", std::chrono::duration<std::uint64_t, std::milli>(0)),
  };
}

/// Deadlines too far away to reach: each waits until the call can complete.
auto endless_deadlines() -> std::vector<deadline_case> {
  return {
      until("system_clock max", sys::time_point::max()),
      until("steady_clock max", steady::time_point::max()),
      until("steady seconds max", steady_seconds::max()),
      until("steady nanoseconds max", steady_nanos::max()),
      until("system seconds max", system_seconds::max()),
      until("steady double max", steady_fseconds::max()),
      until("system double max", system_fseconds::max()),
      until("steady +inf", steady_fseconds(fseconds(inf))),
      until("system +inf", system_fseconds(fseconds(inf))),
      for_("nanoseconds max", std::chrono::nanoseconds::max()),
      for_("seconds max", std::chrono::seconds::max()),
      for_("hours max", std::chrono::hours::max()),
      for_("double max", fseconds::max()),
      for_("+inf", fseconds(inf)),
      for_("unsigned max", std::chrono::duration<std::uint64_t, std::milli>::max()),
  };
}

class ChannelDeadline : public testing::TestWithParam<flavour> {
 protected:
  /// Runs `check(c, tx, rx)` for each case, on a fresh channel of the flavour under test, with
  /// the case's name on every failure.
  template <class Check>
  void for_each_case(std::vector<deadline_case> const& cases, Check check) {
    for (auto const& c : cases) {
      SCOPED_TRACE(c.name);
      auto [tx, rx] = make_channel(GetParam());
      check(c, tx, rx);
    }
  }

  /// The case's receive, which must return within the limit.
  static auto recv_in_time(deadline_case const& c, spindle::sender<int>& tx,
                           spindle::receiver<int>& rx) -> spindle::recv_result<int> {
    return within_limit(tx, [&] { return c.recv(rx); });
  }
  /// The case's send of 7, which must return within the limit.
  static auto send_in_time(deadline_case const& c, spindle::sender<int>& tx)
      -> spindle::send_result<int> {
    return within_limit(tx, [&] { return c.send(tx, 7); });
  }
};

INSTANTIATE_TEST_SUITE_P(Flavours, ChannelDeadline,
                         testing::Values(flavour::bounded, flavour::unbounded, flavour::rendezvous,
                                         flavour::lanes),
                         flavour_name);

// ---- Past deadlines: one try, no wait -------------------------------------------------------

TEST_P(ChannelDeadline, PastDeadlineRecvTimesOutAtOnce) {
  for_each_case(past_deadlines(), [](auto const& c, auto& tx, auto& rx) {
    EXPECT_EQ(recv_in_time(c, tx, rx).status, recv_status::timed_out);
  });
}

TEST_P(ChannelDeadline, PastDeadlineRecvStillTakesABufferedValue) {
  if (GetParam() == flavour::rendezvous) {
    GTEST_SKIP() << "a rendezvous buffers nothing";
  }
  for_each_case(past_deadlines(), [](auto const& c, auto& tx, auto& rx) {
    ASSERT_TRUE(tx.try_send(7));
    auto r = recv_in_time(c, tx, rx);
    EXPECT_EQ(r.status, recv_status::received);
    EXPECT_EQ(r.value, 7);
  });
}

TEST_P(ChannelDeadline, PastDeadlineSendToAFullChannelTimesOutAndHandsTheValueBack) {
  for_each_case(past_deadlines(), [f = GetParam()](auto const& c, auto& tx, auto& /*rx*/) {
    make_full(f, tx);
    auto r = send_in_time(c, tx);
    if (f == flavour::unbounded) {
      EXPECT_EQ(r.status, send_status::sent);  // never full: the one try succeeds
    } else {
      EXPECT_EQ(r.status, send_status::timed_out);
      EXPECT_EQ(r.value, 7);
    }
  });
}

TEST_P(ChannelDeadline, PastDeadlineOnAClosedChannelReportsClosed) {
  for_each_case(past_deadlines(), [](auto const& c, auto& tx, auto& rx) {
    tx.close();
    EXPECT_EQ(recv_in_time(c, tx, rx).status, recv_status::closed);
    EXPECT_EQ(send_in_time(c, tx).status, send_status::closed);
  });
}

// ---- Endless deadlines: wait for the partner or the close -----------------------------------

TEST_P(ChannelDeadline, EndlessDeadlineRecvWaitsForAValue) {
  for_each_case(endless_deadlines(), [](auto const& c, auto& tx, auto& rx) {
    auto r = blocked_until_released(
        tx, [&] { return c.recv(rx); }, [&] { deliver(tx, 7); });
    EXPECT_EQ(r.status, recv_status::received);
    EXPECT_EQ(r.value, 7);
  });
}

TEST_P(ChannelDeadline, EndlessDeadlineRecvWaitsForTheClose) {
  for_each_case(endless_deadlines(), [](auto const& c, auto& tx, auto& rx) {
    auto r = blocked_until_released(
        tx, [&] { return c.recv(rx); }, [&] { tx.close(); });
    EXPECT_EQ(r.status, recv_status::closed);
  });
}

/// What releases a send blocked on a full channel, and what it then returns: room lets it
/// send (and a bounded channel then holds its value), the receivers' close hands it back.
struct send_release {
  std::string name;
  void (*release)(spindle::receiver<int>& rx);
  send_status expected;
};

TEST_P(ChannelDeadline, EndlessDeadlineSendWaitsForRoomOrTheClose) {
  if (GetParam() == flavour::unbounded) {
    GTEST_SKIP() << "an unbounded channel is never full";
  }
  send_release const releases[] = {
      {"room", [](spindle::receiver<int>& rx) { make_room(rx); }, send_status::sent},
      {"close", [](spindle::receiver<int>& rx) { rx.close(); }, send_status::closed},
  };
  for (auto const& how : releases) {
    SCOPED_TRACE(how.name);
    for_each_case(endless_deadlines(), [&, f = GetParam()](auto const& c, auto& tx, auto& rx) {
      make_full(f, tx);
      auto r = blocked_until_released(
          tx, [&] { return c.send(tx, 7); }, [&] { how.release(rx); });
      EXPECT_EQ(r.status, how.expected);
      if (how.expected == send_status::closed) {
        EXPECT_EQ(r.value, 7);
      } else if (buffers(f)) {
        EXPECT_EQ(rx.try_recv().value, 7);
      }
    });
  }
}

TEST_P(ChannelDeadline, EndlessDeadlineSendToAnUnboundedChannelSendsAtOnce) {
  if (GetParam() != flavour::unbounded) {
    GTEST_SKIP() << "only an unbounded channel always has room";
  }
  for_each_case(endless_deadlines(), [](auto const& c, auto& tx, auto& rx) {
    EXPECT_EQ(send_in_time(c, tx).status, send_status::sent);
    EXPECT_EQ(rx.try_recv().value, 7);
  });
}

// ---- Ordinary deadlines still time out ------------------------------------------------------

TEST_P(ChannelDeadline, NearDeadlinesOnEveryClockTimeOut) {
  std::vector<deadline_case> const near = {
      until("steady +20ms", steady::now() + 20ms),
      until("system +20ms", sys::now() + 20ms),
      until("steady double +20ms", steady_fseconds(steady::now().time_since_epoch()) + 20ms),
      for_("20ms", 20ms),
      for_("double 0.02 s", fseconds(0.02)),
  };
  for_each_case(near, [f = GetParam()](auto const& c, auto& tx, auto& rx) {
    EXPECT_EQ(recv_in_time(c, tx, rx).status, recv_status::timed_out);
    if (f != flavour::unbounded) {
      make_full(f, tx);
      EXPECT_EQ(send_in_time(c, tx).status, send_status::timed_out);
    }
  });
}

// ---- Stop tokens ------------------------------------------------------------------------------

// send(v, stop) on a channel where the send must wait: a stop requested before the call, or
// while it waits, ends it with `cancelled` and the value handed back; nothing else moved.
TEST_P(ChannelDeadline, SendWithAStopTokenIsCancelledWithTheValueBack) {
  auto const f = GetParam();
  if (f == flavour::unbounded) {
    GTEST_SKIP() << "an unbounded channel is never full";
  }
  auto [tx, rx] = make_channel(f);
  make_full(f, tx);
  std::stop_source stopped;
  stopped.request_stop();
  auto r = within_limit(tx, [&, &tx = tx] { return tx.send(7, stopped.get_token()); });
  EXPECT_EQ(r.status, send_status::cancelled);
  EXPECT_TRUE(r.is_cancelled());
  EXPECT_EQ(r.value, 7);

  std::stop_source later;
  r = blocked_until_released(
      tx, [&, &tx = tx] { return tx.send(8, later.get_token()); }, [&] { later.request_stop(); });
  EXPECT_EQ(r.status, send_status::cancelled);
  EXPECT_EQ(r.value, 8);
  if (buffers(f)) {
    EXPECT_EQ(rx.try_recv().value, -1) << "the filler is still there, alone";
  }
  EXPECT_EQ(rx.try_recv().status, recv_status::empty) << "a cancelled send sent nothing";
}

// send(v, stop) completes as send() does while no stop is requested: sent once there is room
// (or a receiver), closed with the value back on close; a channel with room takes the value
// even when stop was requested.
TEST_P(ChannelDeadline, SendWithAStopTokenSendsOrSeesTheClose) {
  auto const f = GetParam();
  std::stop_source never;
  if (f != flavour::rendezvous) {
    auto [tx, rx] = make_channel(f);
    std::stop_source stopped;
    stopped.request_stop();
    auto r = tx.send(5, stopped.get_token());
    EXPECT_EQ(r.status, send_status::sent) << "room wins over a requested stop";
    EXPECT_EQ(rx.try_recv().value, 5);
  }
  if (f == flavour::unbounded) {
    return;
  }
  {
    auto [tx, rx] = make_channel(f);
    make_full(f, tx);
    auto r = blocked_until_released(
        tx, [&, &tx = tx] { return tx.send(6, never.get_token()); },
        [&, &rx = rx] { make_room(rx); });
    EXPECT_EQ(r.status, send_status::sent);
    if (buffers(f)) {
      EXPECT_EQ(rx.try_recv().value, 6);
    }
  }
  {
    auto [tx, rx] = make_channel(f);
    make_full(f, tx);
    auto r = blocked_until_released(
        tx, [&, &tx = tx] { return tx.send(9, never.get_token()); }, [&, &rx = rx] { rx.close(); });
    EXPECT_EQ(r.status, send_status::closed);
    EXPECT_EQ(r.value, 9);
  }
}

}  // namespace

// Stress tests of coroutines on channels: a hundred thousand coroutines suspended at once on a
// two-worker executor (none of them holding a worker), and coroutines and threads sending and
// receiving on shared channels of every flavour while a close or the last receiver's drop
// races them. Every value is a spindle_test::tracked, so each test also checks that every value
// is destroyed exactly once.

#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/channel_cases.hpp"
#include "support/receipts.hpp"
#include "support/sizes.hpp"
#include "support/tracked.hpp"

namespace {

using namespace std::chrono_literals;
using spindle::recv_status;
using spindle::send_status;
using spindle_test::tracked;
using clock_type = std::chrono::steady_clock;

constexpr bool sanitized =
    spindle_test::under_thread_sanitizer || spindle_test::under_address_sanitizer;

using spindle_test::unbounded_capacity;

template <class T>
auto make_channel(std::size_t capacity) -> spindle_test::endpoints<T> {
  return spindle_test::make_endpoints<T>(capacity);
}

using spindle_test::wait_until;
using ledger = spindle_test::id_ledger;

// ---- (a) Many suspended coroutines -----------------------------------------------------------

auto send_one(spindle::sender<tracked> tx, std::uint64_t id, std::atomic<std::uint64_t>* started)
    -> spindle::task<bool> {
  started->fetch_add(1, std::memory_order_relaxed);
  auto r = co_await tx.async_send(tracked(id));
  co_return r.is_sent();
}

auto recv_one(spindle::receiver<tracked> rx, ledger* book, std::atomic<std::uint64_t>* started)
    -> spindle::task<bool> {
  started->fetch_add(1, std::memory_order_relaxed);
  auto v = co_await rx.async_recv();
  if (!v) {
    co_return false;
  }
  book->record(v->id());
  co_return true;
}

}  // namespace

// 100,000 coroutines (10,000 under sanitizers) wait at once on a two-worker executor: half in
// async_send into a full bounded(1) channel, half in async_recv on an empty one. While they wait
// the workers are free: a plain task and a coroutine spawned then finish promptly. Threads then
// drain the full channel and feed the empty one; every value arrives exactly once.
TEST(CoroStress, HundredThousandSuspendedCoroutinesHoldNoWorker) {
  constexpr std::uint64_t half = sanitized ? 5'000 : 50'000;
  auto const before = tracked::live();
  ledger drained(half + 1);  // the senders' ids [0, half) and the value filled in first, `half`
  ledger fed(half);
  {
    spindle::executor ex{2};
    auto full = make_channel<tracked>(1);
    auto empty = make_channel<tracked>(1);
    ASSERT_TRUE(full.tx.try_send(tracked(half)));
    std::atomic<std::uint64_t> started{0};
    std::vector<spindle::join_handle<bool>> senders;
    std::vector<spindle::join_handle<bool>> receivers;
    senders.reserve(half);
    receivers.reserve(half);
    for (std::uint64_t i = 0; i < half; ++i) {
      senders.push_back(ex.spawn(send_one(full.tx, i, &started)));
      receivers.push_back(ex.spawn(recv_one(empty.rx, &fed, &started)));
    }
    wait_until([&] { return started.load(std::memory_order_relaxed) == 2 * half; }, 120s,
               "every coroutine started");
    std::this_thread::sleep_for(50ms);

    // Nothing can have finished: the channels are untouched.
    std::uint64_t finished = 0;
    for (std::uint64_t i = 0; i < half; ++i) {
      finished += (senders[i].is_ready() ? 1 : 0) + (receivers[i].is_ready() ? 1 : 0);
    }
    EXPECT_EQ(finished, 0U);

    // No worker is blocked: both take new work at once while the coroutines wait.
    auto const probe_start = clock_type::now();
    auto plain = ex.spawn([] { return 7; });
    auto coro = ex.spawn([]() -> spindle::task<int> { co_return 8; }());
    wait_until([&] { return plain.is_ready() && coro.is_ready(); }, 30s,
               "a task spawned while 100,000 coroutines wait");
    EXPECT_LT(clock_type::now() - probe_start, 5s);
    EXPECT_EQ(plain.join(), 7);
    EXPECT_EQ(coro.join(), 8);

    // Threads drain the full channel (waking the senders) and feed the empty one (waking the
    // receivers), two of each.
    std::atomic<std::int64_t> to_drain{static_cast<std::int64_t>(half + 1)};
    std::atomic<std::uint64_t> next_feed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&drained, &to_drain, rx = full.rx]() mutable {
        // Claim one value at a time, so that no thread waits for a value another will take.
        while (to_drain.fetch_sub(1, std::memory_order_relaxed) > 0) {
          auto v = rx.recv();
          if (!v) {
            std::fprintf(stderr, "the full channel closed while draining\n");
            std::abort();
          }
          drained.record(v->id());
        }
      });
      threads.emplace_back([&next_feed, tx = empty.tx]() mutable {
        for (;;) {
          auto const id = next_feed.fetch_add(1, std::memory_order_relaxed);
          if (id >= half) {
            return;
          }
          if (!tx.send(tracked(id))) {
            std::fprintf(stderr, "the empty channel closed while feeding\n");
            std::abort();
          }
        }
      });
    }
    for (auto& t : threads) {
      t.join();
    }
    std::uint64_t sent = 0;
    std::uint64_t received = 0;
    for (std::uint64_t i = 0; i < half; ++i) {
      sent += senders[i].join() ? 1 : 0;
      received += receivers[i].join() ? 1 : 0;
    }
    EXPECT_EQ(sent, half);
    EXPECT_EQ(received, half);
    EXPECT_TRUE(full.rx.try_recv().is_empty());
    EXPECT_TRUE(empty.rx.try_recv().is_empty());
  }
  EXPECT_EQ(drained.count(), half + 1);
  EXPECT_EQ(drained.wrong(half + 1), 0U);
  EXPECT_EQ(drained.sum(), half * (half + 1) / 2);
  EXPECT_EQ(fed.count(), half);
  EXPECT_EQ(fed.wrong(half), 0U);
  EXPECT_EQ(fed.sum(), half * (half - 1) / 2);
  EXPECT_EQ(tracked::live(), before);
}

// ---- (b) Coroutines and threads with closes racing -------------------------------------------

namespace {

/// One round's bookkeeping: per id, whether its send succeeded or handed it back, and how often
/// it was received.
class round_book {
 public:
  round_book(std::uint64_t ids, std::uint64_t stop_after)
      : fate_(ids), got_(ids), stop_after_(stop_after) {}

  static constexpr std::uint8_t sent = 1;
  // Distinct bits, so that two fates for one id add up to neither.
  static constexpr std::uint8_t handed_back = 16;

  void send_ended(std::uint64_t id, std::uint8_t how) {
    // relaxed: read after every party is joined; a second fate for one id is a failure.
    fate_.at(id).fetch_add(how, std::memory_order_relaxed);
  }
  void received(tracked const& v) { got_.record(v.id()); }
  /// Whether enough was received for the race to start (the close, or the receivers leaving).
  [[nodiscard]] auto enough() const -> bool { return got_.count() >= stop_after_; }

  [[nodiscard]] auto fate(std::uint64_t id) const -> std::uint8_t {
    return fate_.at(id).load(std::memory_order_relaxed);
  }
  [[nodiscard]] auto got() const -> ledger const& { return got_; }

 private:
  std::vector<std::atomic<std::uint8_t>> fate_;
  ledger got_;
  std::uint64_t stop_after_;
};

/// How the receivers end in a round.
enum class ending : std::uint8_t {
  close,          // a thread closes the channel; receivers drain it to the end
  drop_receivers  // receivers leave once enough arrived; the last one's drop closes the channel
};

/// One send, timed (a short timeout: `timed_out` hands the value back) or not. A helper rather
/// than `timed ? co_await a : co_await b`: g++ 12 destroys one temporary too many in a
/// conditional expression whose operands are co_awaits yielding a class type.
auto send_attempt(spindle::sender<tracked>& tx, tracked v, bool timed)
    -> spindle::task<spindle::send_result<tracked>> {
  if (timed) {
    co_return co_await tx.async_send_for(std::move(v), 1ms);
  }
  co_return co_await tx.async_send(std::move(v));
}

/// Sends ids [first, first + count) until the channel closes; `timed` retries async_send_for
/// with a short timeout, handing the value back into the next try.
auto coro_producer(spindle::sender<tracked> tx, std::uint64_t first, std::uint64_t count,
                   round_book* book, bool timed) -> spindle::task<> {
  for (std::uint64_t id = first; id < first + count; ++id) {
    tracked v(id);
    for (;;) {
      auto r = co_await send_attempt(tx, std::move(v), timed);
      if (r.is_sent()) {
        book->send_ended(id, round_book::sent);
        break;
      }
      if (r.is_timed_out()) {
        v = std::move(*r.value);
        continue;
      }
      book->send_ended(r.value->id(), round_book::handed_back);
      co_return;
    }
  }
}

/// Receives until the channel closes (or, when `leave` is set, until enough arrived); `select`
/// receives through async_select with a short timeout case.
auto coro_consumer(spindle::receiver<tracked> rx, round_book* book, bool select, bool leave)
    -> spindle::task<> {
  for (;;) {
    std::optional<tracked> v;
    if (select) {
      bool timed_out = false;
      static_cast<void>(co_await spindle::async_select(
          spindle::on_recv(rx, [&v](std::optional<tracked> x) { v = std::move(x); }),
          spindle::on_timeout(1ms, [&timed_out] { timed_out = true; })));
      if (timed_out) {
        continue;
      }
    } else {
      v = co_await rx.async_recv();
    }
    if (!v) {
      co_return;
    }
    book->received(*v);
    if (leave && book->enough()) {
      co_return;
    }
  }
}

void thread_producer(spindle::sender<tracked> tx, std::uint64_t first, std::uint64_t count,
                     round_book* book) {
  for (std::uint64_t id = first; id < first + count; ++id) {
    auto r = tx.send(tracked(id));
    if (!r) {
      book->send_ended(r.value->id(), round_book::handed_back);
      return;
    }
    book->send_ended(id, round_book::sent);
  }
}

void thread_consumer(spindle::receiver<tracked> rx, round_book* book, bool timed, bool leave) {
  for (;;) {
    std::optional<tracked> v;
    if (timed) {
      auto r = rx.recv_for(1ms);
      if (r.is_timed_out()) {
        continue;
      }
      v = std::move(r.value);
    } else {
      v = rx.recv();
    }
    if (!v) {
      return;
    }
    book->received(*v);
    if (leave && book->enough()) {
      return;
    }
  }
}

struct round_setup {
  std::size_t capacity;
  ending how;
  std::uint64_t stop_after_percent;
};

auto describe(round_setup const& r) -> std::string {
  std::string const cap = r.capacity == unbounded_capacity
                              ? "unbounded"
                              : "bounded(" + std::to_string(r.capacity) + ")";
  return cap + (r.how == ending::close ? ", close" : ", receivers drop") + " after " +
         std::to_string(r.stop_after_percent) + "%";
}

}  // namespace

// Rounds over every flavour: 2 producer threads and 4 producer coroutines (two of them with
// timed sends) send into one channel that 2 consumer threads and 4 consumer coroutines (two of
// them through async_select) receive from, on a two-worker executor. Part-way through, a
// thread closes the channel, or the receivers leave and the last one's drop closes it. Every
// id ends exactly one way: sent or handed back (or never tried after the close); each sent id
// is received at most once, and exactly once when the channel was closed rather than dropped
// (a drop may discard at most what the channel buffers).
TEST(CoroStress, CoroutinesAndThreadsMixWhileClosesRace) {
  constexpr std::uint64_t producers = 6;  // 2 threads, 4 coroutines
  std::uint64_t const per_producer = 10'000 / spindle_test::tsan_divisor(std::uint64_t{20});
  std::uint64_t const total = producers * per_producer;
  std::vector<round_setup> const rounds = {{1, ending::close, 20},
                                           {8, ending::close, 50},
                                           {unbounded_capacity, ending::close, 80},
                                           {0, ending::close, 50},
                                           {1, ending::drop_receivers, 30},
                                           {8, ending::drop_receivers, 60},
                                           {unbounded_capacity, ending::drop_receivers, 40},
                                           {0, ending::drop_receivers, 70}};
  constexpr std::size_t repeats = 3;
  for (std::size_t n = 0; n < repeats * rounds.size(); ++n) {
    auto const& setup = rounds[n % rounds.size()];
    SCOPED_TRACE(describe(setup) + ", repeat " + std::to_string(n / rounds.size()));
    auto const before = tracked::live();
    bool const leave = setup.how == ending::drop_receivers;
    round_book book(total, total * setup.stop_after_percent / 100);
    {
      spindle::executor ex{2};
      auto ch = make_channel<tracked>(setup.capacity);
      std::vector<spindle::join_handle<void>> coroutines;
      std::vector<std::thread> threads;
      for (int c = 0; c < 4; ++c) {
        coroutines.push_back(ex.spawn(coro_consumer(ch.rx, &book, c % 2 == 1, leave)));
      }
      for (int c = 0; c < 2; ++c) {
        threads.emplace_back(thread_consumer, ch.rx, &book, c == 1, leave);
      }
      for (std::uint64_t p = 0; p < 4; ++p) {
        coroutines.push_back(
            ex.spawn(coro_producer(ch.tx, p * per_producer, per_producer, &book, p % 2 == 1)));
      }
      for (std::uint64_t p = 4; p < producers; ++p) {
        threads.emplace_back(thread_producer, ch.tx, p * per_producer, per_producer, &book);
      }
      std::atomic<bool> producers_done{false};
      if (!leave) {
        threads.emplace_back([&book, &producers_done, tx = ch.tx]() mutable {
          while (!book.enough() && !producers_done.load(std::memory_order_acquire)) {
            std::this_thread::sleep_for(50us);
          }
          tx.close();
        });
      }
      // From here the threads and coroutines hold every handle.
      { auto gone = std::move(ch); }
      for (std::size_t i = 4; i < coroutines.size(); ++i) {
        wait_until([&] { return coroutines[i].is_ready(); }, 120s, "a producer coroutine");
        coroutines[i].join();
      }
      // The producer threads are threads[2] and threads[3].
      threads[2].join();
      threads[3].join();
      producers_done.store(true, std::memory_order_release);
      for (std::size_t i = 0; i < 4; ++i) {
        wait_until([&] { return coroutines[i].is_ready(); }, 120s, "a consumer coroutine");
        coroutines[i].join();
      }
      threads[0].join();
      threads[1].join();
      if (threads.size() > 4) {
        threads[4].join();
      }
    }
    std::uint64_t sent = 0;
    std::uint64_t handed_back = 0;
    std::uint64_t twice = 0;
    std::uint64_t sent_not_received = 0;
    std::uint64_t received_not_sent = 0;
    std::uint64_t sent_sum = 0;
    for (std::uint64_t id = 0; id < total; ++id) {
      auto const fate = book.fate(id);
      auto const times = book.got().times(id);
      sent += fate == round_book::sent ? 1 : 0;
      sent_sum += fate == round_book::sent ? id : 0;
      handed_back += fate == round_book::handed_back ? 1 : 0;
      bool const one_fate =
          fate == 0 || fate == round_book::sent || fate == round_book::handed_back;
      twice += (times > 1 || !one_fate) ? 1 : 0;
      sent_not_received += (fate == round_book::sent && times == 0) ? 1 : 0;
      received_not_sent += (fate != round_book::sent && times > 0) ? 1 : 0;
    }
    EXPECT_EQ(twice, 0U) << "an id received or ended twice";
    EXPECT_EQ(received_not_sent, 0U);
    EXPECT_LE(sent + handed_back, total);
    EXPECT_LE(handed_back, producers);  // each producer hands back at most its last value
    if (setup.how == ending::close) {
      EXPECT_EQ(sent_not_received, 0U) << "a value sent before the close was lost";
      EXPECT_EQ(book.got().sum(), sent_sum);
    } else if (setup.capacity != unbounded_capacity) {
      // Only what the channel buffered when the last receiver left is discarded.
      EXPECT_LE(sent_not_received, setup.capacity);
    }
    EXPECT_EQ(tracked::live(), before);
  }
}

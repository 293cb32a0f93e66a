// Tests for spindle::broadcast (broadcast.hpp): every receiver gets every message in order, a
// receiver that falls behind is told exactly how many it lost, send never blocks and reports
// how many receivers it reached, close semantics, every value destroyed exactly once, threads
// and coroutines mixed, the select case beside a channel, and misuse.

#include <spindle/async.hpp>
#include <spindle/broadcast.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "support/eventually.hpp"

namespace {

using namespace std::chrono_literals;

/// A copyable value that counts its live instances and aborts on a double destroy.
class counted {
 public:
  explicit counted(std::uint64_t id) noexcept : id_(id) { live().fetch_add(1); }
  counted(counted const& other) noexcept : id_(other.id()) { live().fetch_add(1); }
  counted(counted&& other) noexcept : id_(other.id()) { live().fetch_add(1); }
  auto operator=(counted const&) -> counted& = delete;
  auto operator=(counted&&) -> counted& = delete;
  ~counted() {
    if (guard_ != alive) {
      std::abort();
    }
    guard_ = 0;
    live().fetch_sub(1);
  }
  [[nodiscard]] auto id() const noexcept -> std::uint64_t {
    if (guard_ != alive) {
      std::abort();
    }
    return id_;
  }
  static auto live() noexcept -> std::atomic<std::int64_t>& {
    static std::atomic<std::int64_t> n{0};
    return n;
  }

 private:
  static constexpr std::uint64_t alive = 0x4252434153542121;
  std::uint64_t id_;
  std::uint64_t guard_ = alive;
};

TEST(Broadcast, Example) {
  auto [tx, rx] = spindle::broadcast<std::string>(4);
  auto rx2 = tx.subscribe();
  auto r = tx.send("hello");
  ASSERT_TRUE(r);
  EXPECT_EQ(r.receivers, 2U);
  EXPECT_EQ(*rx.recv().value, "hello");
  EXPECT_EQ(*rx2.recv().value, "hello");
  EXPECT_TRUE(rx.try_recv().is_empty());
}

TEST(Broadcast, EveryReceiverGetsEveryMessageInOrder) {
  auto [tx, rx] = spindle::broadcast<int>(8);
  auto rx2 = tx.subscribe();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(tx.send(int{i}).receivers, 2U);
  }
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(*rx.try_recv().value, i);
  }
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(*rx2.recv().value, i);
  }
  EXPECT_TRUE(rx.try_recv().is_empty());
  EXPECT_TRUE(rx2.try_recv().is_empty());
}

TEST(Broadcast, SubscribeStartsAtTheNextMessageAndACloneWhereTheOriginalIs) {
  auto [tx, rx] = spindle::broadcast<int>(8);
  static_cast<void>(tx.send(1));
  static_cast<void>(tx.send(2));
  auto late = tx.subscribe();
  EXPECT_EQ(*rx.recv().value, 1);
  auto clone = rx;  // at message 2
  auto again = rx.subscribe();
  static_cast<void>(tx.send(3));
  EXPECT_EQ(*clone.recv().value, 2);
  EXPECT_EQ(*clone.recv().value, 3);
  EXPECT_EQ(*late.recv().value, 3);
  EXPECT_EQ(*again.recv().value, 3);
  EXPECT_EQ(*rx.recv().value, 2);
  EXPECT_EQ(*rx.recv().value, 3);
}

TEST(Broadcast, ASlowReceiverIsToldExactlyHowManyItMissed) {
  auto [tx, rx] = spindle::broadcast<int>(4);
  for (int i = 0; i < 10; ++i) {
    static_cast<void>(tx.send(int{i}));
  }
  // The ring holds 6, 7, 8, 9: messages 0 to 5 were overwritten.
  auto r = rx.try_recv();
  ASSERT_TRUE(r.is_lagged());
  EXPECT_EQ(r.missed, 6U);
  for (int i = 6; i < 10; ++i) {
    EXPECT_EQ(*rx.recv().value, i);
  }
  EXPECT_TRUE(rx.try_recv().is_empty());
  // Exactly one more than the capacity behind: one missed.
  for (int i = 10; i < 15; ++i) {
    static_cast<void>(tx.send(int{i}));
  }
  auto r2 = rx.recv();
  ASSERT_TRUE(r2.is_lagged());
  EXPECT_EQ(r2.missed, 1U);
  EXPECT_EQ(*rx.recv().value, 11);
}

TEST(Broadcast, CapacityOneAndWrapAround) {
  auto [tx, rx] = spindle::broadcast<int>(1);
  for (int i = 0; i < 100; ++i) {
    static_cast<void>(tx.send(int{i}));
    EXPECT_EQ(*rx.try_recv().value, i);
  }
  static_cast<void>(tx.send(100));
  static_cast<void>(tx.send(101));
  auto r = rx.try_recv();
  ASSERT_TRUE(r.is_lagged());
  EXPECT_EQ(r.missed, 1U);
  EXPECT_EQ(*rx.try_recv().value, 101);
}

TEST(Broadcast, SendWithNoReceiverHandsTheValueBack) {
  auto [tx, rx] = spindle::broadcast<std::string>(2);
  { auto gone = std::move(rx); }
  auto r = tx.send("lost?");
  ASSERT_TRUE(r.is_no_receivers());
  EXPECT_EQ(*r.value, "lost?");
  auto rx2 = tx.subscribe();
  EXPECT_EQ(tx.receiver_count(), 1U);
  EXPECT_TRUE(tx.send("found"));
  EXPECT_EQ(*rx2.recv().value, "found");
}

TEST(Broadcast, CloseDeliversWhatIsHeldThenReportsClosed) {
  auto [tx, rx] = spindle::broadcast<int>(4);
  auto rx2 = rx;
  static_cast<void>(tx.send(1));
  static_cast<void>(tx.send(2));
  tx.close();
  EXPECT_TRUE(tx.is_closed());
  EXPECT_TRUE(rx.is_closed());
  auto refused = tx.send(3);
  ASSERT_TRUE(refused.is_closed());
  EXPECT_EQ(*refused.value, 3);
  EXPECT_EQ(*rx.recv().value, 1);
  EXPECT_EQ(*rx.recv().value, 2);
  EXPECT_TRUE(rx.recv().is_closed());
  EXPECT_TRUE(rx.try_recv().is_closed());
  EXPECT_EQ(*rx2.try_recv().value, 1);
}

TEST(Broadcast, TheLastSenderGoneClosesAndWakesAWaitingReceiver) {
  auto [tx, rx] = spindle::broadcast<int>(2);
  auto tx2 = tx;
  std::optional<spindle::broadcast_recv_result<int>> got;
  std::thread t([&, r = &rx] { got.emplace(r->recv()); });
  ASSERT_TRUE(spindle_test::eventually([&, r = &rx] { return r->waiting() == 1; }));
  { auto gone = std::move(tx); }
  EXPECT_FALSE(tx2.is_closed());
  { auto gone = std::move(tx2); }
  t.join();
  EXPECT_TRUE(got->is_closed());
}

TEST(Broadcast, LaggedReceiverThenCloseReportsLagMessagesAndClosed) {
  auto [tx, rx] = spindle::broadcast<int>(2);
  for (int i = 0; i < 5; ++i) {
    static_cast<void>(tx.send(int{i}));
  }
  tx.close();
  auto r = rx.recv();
  ASSERT_TRUE(r.is_lagged());
  EXPECT_EQ(r.missed, 3U);
  EXPECT_EQ(*rx.recv().value, 3);
  EXPECT_EQ(*rx.recv().value, 4);
  EXPECT_TRUE(rx.recv().is_closed());
}

TEST(Broadcast, EveryValueIsDestroyedExactlyOnce) {
  auto const before = counted::live().load();
  {
    auto [tx, rx] = spindle::broadcast<counted>(3);
    auto rx2 = tx.subscribe();
    for (std::uint64_t i = 0; i < 10; ++i) {
      static_cast<void>(tx.send(counted(i)));
      // The ring holds at most 3 messages: older ones were destroyed when overwritten.
      EXPECT_LE(counted::live().load() - before, 3);
    }
    auto r = rx.recv();
    ASSERT_TRUE(r.is_lagged());
    EXPECT_EQ(r.value, std::nullopt);
    auto v = rx.recv();
    EXPECT_EQ(v.value->id(), 7U);
    auto refused = tx.send(counted(99));
    static_cast<void>(refused);
    { auto gone = std::move(rx2); }
  }
  EXPECT_EQ(counted::live().load(), before);
}

TEST(Broadcast, TimedAndStopFormsEndAWait) {
  auto [tx, rx] = spindle::broadcast<int>(2);
  EXPECT_TRUE(rx.recv_for(1ms).is_timed_out());
  EXPECT_TRUE(rx.recv_until(std::chrono::system_clock::now() + 1ms).is_timed_out());
  std::stop_source source;
  source.request_stop();
  EXPECT_TRUE(rx.recv(source.get_token()).is_cancelled());
  static_cast<void>(tx.send(5));
  // A message that is there wins over a stop already requested or an expired deadline.
  EXPECT_EQ(*rx.recv(source.get_token()).value, 5);
  static_cast<void>(tx.send(6));
  EXPECT_EQ(*rx.recv_for(0ms).value, 6);
}

TEST(Broadcast, AWaitingThreadIsWokenBySend) {
  auto [tx, rx] = spindle::broadcast<int>(2);
  std::vector<std::thread> threads;
  std::atomic<int> sum{0};
  std::vector<spindle::broadcast_receiver<int>> rxs;
  for (int i = 0; i < 3; ++i) {
    rxs.push_back(tx.subscribe());
  }
  for (auto& r : rxs) {
    threads.emplace_back([&sum, p = &r] { sum += *p->recv().value; });
  }
  ASSERT_TRUE(spindle_test::eventually([&, t = &tx] { return t->waiting() == 3; }));
  EXPECT_EQ(tx.send(7).receivers, 4U);
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(sum.load(), 21);
}

TEST(Broadcast, CoroutinesAndThreadsReceiveEveryMessage) {
  constexpr int messages = 2000;
  spindle::executor ex(2);
  // Every receiver counts what it got; the sender never gets more than half the capacity ahead
  // of the slowest, so none lags.
  auto [tx, rx] = spindle::broadcast<int>(64);
  std::atomic<long> delivered{0};
  std::vector<spindle::join_handle<long>> coros;
  for (int i = 0; i < 3; ++i) {
    coros.push_back(ex.spawn(
        [](spindle::broadcast_receiver<int> r, std::atomic<long>& d) -> spindle::task<long> {
          long sum = 0;
          for (;;) {
            auto m = co_await r.async_recv();
            if (m.is_closed()) {
              co_return sum;
            }
            EXPECT_TRUE(m.is_received());
            sum += m.value.value_or(0);
            d.fetch_add(1);
          }
        }(tx.subscribe(), delivered)));
  }
  std::atomic<long> thread_sum{0};
  std::thread t([&thread_sum, &delivered, r = tx.subscribe()]() mutable {
    for (;;) {
      auto m = r.recv();
      if (m.is_closed()) {
        return;
      }
      EXPECT_TRUE(m.is_received());
      thread_sum += m.value.value_or(0);
      delivered.fetch_add(1);
    }
  });
  { auto first = std::move(rx); }
  for (int i = 0; i < messages; ++i) {
    auto r = tx.send(int{i});
    EXPECT_EQ(r.receivers, 4U);
    if (i % 32 == 31) {
      long const want = 4L * (i + 1);
      ASSERT_TRUE(spindle_test::eventually([&] { return delivered.load() == want; }));
    }
  }
  { auto gone = std::move(tx); }
  t.join();
  long const expected = static_cast<long>(messages) * (messages - 1) / 2;
  for (auto& h : coros) {
    EXPECT_EQ(h.join(), expected);
  }
  EXPECT_EQ(thread_sum.load(), expected);
}

TEST(Broadcast, CoroutineTimedAndStopForms) {
  auto [tx, rx] = spindle::broadcast<int>(2);
  auto const score =
      spindle::sync_wait([](spindle::broadcast_sender<int>& s,
                            spindle::broadcast_receiver<int>& r) -> spindle::task<int> {
        int n = 0;
        auto a = co_await r.async_recv_for(1ms);
        n += a.is_timed_out() ? 1 : 0;
        auto b = co_await r.async_recv_until(std::chrono::steady_clock::now() + 1ms);
        n += b.is_timed_out() ? 1 : 0;
        std::stop_source st;
        st.request_stop();
        auto c = co_await r.async_recv(st.get_token());
        n += c.is_cancelled() ? 1 : 0;
        static_cast<void>(s.send(3));
        auto d = co_await r.async_recv_for(1h);
        n += d.is_received() && *d.value == 3 ? 1 : 0;
        co_return n;
      }(tx, rx));
  EXPECT_EQ(score, 4);
}

TEST(Broadcast, ConcurrentSendersAndSlowReceiversLoseNothingSilently) {
  // Two senders, three receivers reading as fast as they can: each receiver sees every
  // message exactly once or counts it as missed, and in each sender's order.
  constexpr int per_sender = 20000;
  auto [tx, rx] = spindle::broadcast<std::uint64_t>(16);
  std::vector<spindle::broadcast_receiver<std::uint64_t>> rxs;
  for (int i = 0; i < 3; ++i) {
    rxs.push_back(tx.subscribe());
  }
  { auto first = std::move(rx); }
  std::vector<std::thread> readers;
  std::vector<std::uint64_t> totals(rxs.size(), 0);
  for (std::size_t k = 0; k < rxs.size(); ++k) {
    readers.emplace_back([&totals, k, p = &rxs[k]] {
      std::uint64_t last[2] = {0, 0};
      std::uint64_t count = 0;
      for (;;) {
        auto m = p->recv();
        if (m.is_closed()) {
          break;
        }
        if (m.is_lagged()) {
          count += m.missed;
          continue;
        }
        ++count;
        std::uint64_t const who = *m.value >> 32U;
        std::uint64_t const seq = *m.value & 0xffffffffU;
        EXPECT_GT(seq + 1, last[who]);
        last[who] = seq + 1;
      }
      totals[k] = count;
    });
  }
  std::vector<std::thread> senders;
  for (std::uint64_t who = 0; who < 2; ++who) {
    senders.emplace_back([who, s = tx]() mutable {
      for (std::uint64_t i = 0; i < per_sender; ++i) {
        static_cast<void>(s.send((who << 32U) | i));
      }
    });
  }
  { auto gone = std::move(tx); }
  for (auto& t : senders) {
    t.join();
  }
  for (auto& t : readers) {
    t.join();
  }
  for (auto const total : totals) {
    EXPECT_EQ(total, 2U * per_sender);
  }
}

TEST(Broadcast, MoreSendersThanCoresAllGetThrough) {
  // Eight senders on a machine of a few cores take turns at the senders' lock; every send
  // completes and the receiver accounts for every message.
  constexpr int senders = 8;
  constexpr int per_sender = 5000;
  auto [tx, rx] = spindle::broadcast<int>(64);
  std::uint64_t accounted = 0;
  std::thread reader([&accounted, r = std::move(rx)]() mutable {
    for (;;) {
      auto m = r.recv();
      if (m.is_closed()) {
        return;
      }
      accounted += m.is_lagged() ? m.missed : 1;
    }
  });
  std::atomic<int> sent{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < senders; ++k) {
    threads.emplace_back([&sent, s = tx]() mutable {
      for (int i = 0; i < per_sender; ++i) {
        if (s.send(int{i})) {
          sent.fetch_add(1);
        }
      }
    });
  }
  { auto gone = std::move(tx); }
  for (auto& t : threads) {
    t.join();
  }
  reader.join();
  EXPECT_EQ(sent.load(), senders * per_sender);
  EXPECT_EQ(accounted, static_cast<std::uint64_t>(senders) * per_sender);
}

TEST(Broadcast, ReceiversNeverCopyAValueBeingOverwritten) {
  // Strings long enough to live on the heap, a ring of 2 and receivers that lag all the time:
  // the sender overwrites the slots the receivers copy from. Every copy must be whole (its
  // text matches its number) and every string is freed once (ASan/TSan builds check that).
  constexpr int messages = 20000;
  auto text = [](int i) {
    return std::string(40, static_cast<char>('a' + i % 26)) + std::to_string(i);
  };
  auto [tx, rx] = spindle::broadcast<std::string>(2);
  std::vector<spindle::broadcast_receiver<std::string>> rxs;
  for (int i = 0; i < 3; ++i) {
    rxs.push_back(tx.subscribe());
  }
  { auto first = std::move(rx); }
  std::atomic<int> torn{0};
  std::vector<std::thread> readers;
  for (auto& r : rxs) {
    readers.emplace_back([&torn, &text, p = &r] {
      for (;;) {
        auto m = p->recv();
        if (m.is_closed()) {
          return;
        }
        if (m.is_received()) {
          auto const& v = *m.value;
          int const i = std::stoi(v.substr(40));
          if (v != text(i)) {
            torn.fetch_add(1);
          }
        }
      }
    });
  }
  for (int i = 0; i < messages; ++i) {
    static_cast<void>(tx.send(text(i)));
  }
  { auto gone = std::move(tx); }
  for (auto& t : readers) {
    t.join();
  }
  EXPECT_EQ(torn.load(), 0);
}

TEST(Broadcast, SelectBesideAChannel) {
  auto [btx, brx] = spindle::broadcast<int>(2);
  auto [ctx, crx] = spindle::bounded<int>(1);
  std::thread t([s = btx]() mutable { static_cast<void>(s.send(42)); });
  int got = 0;
  auto const i = spindle::select(
      spindle::on_recv(crx, [](std::optional<int>) {}),
      spindle::on_recv(brx, [&](spindle::broadcast_recv_result<int> r) { got = *r.value; }));
  t.join();
  EXPECT_EQ(i, 1U);
  EXPECT_EQ(got, 42);
  // The channel case wins when it is the one ready.
  static_cast<void>(ctx.send(1));
  int from_channel = 0;
  auto const j =
      spindle::select(spindle::on_recv(crx, [&](std::optional<int> v) { from_channel = *v; }),
                      spindle::on_recv(brx, [](spindle::broadcast_recv_result<int>) {}));
  EXPECT_EQ(j, 0U);
  EXPECT_EQ(from_channel, 1);
  // A lag is an outcome of the case too.
  for (int k = 0; k < 3; ++k) {
    static_cast<void>(btx.send(int{k}));
  }
  std::uint64_t missed = 0;
  static_cast<void>(spindle::select(
      spindle::on_recv(brx, [&](spindle::broadcast_recv_result<int> r) { missed = r.missed; })));
  EXPECT_EQ(missed, 1U);
}

TEST(Broadcast, ACopyThatThrowsLeavesTheMessageUnread) {
  struct fragile {
    explicit fragile(int v) : value(v) {}
    fragile(fragile const& other) : value(other.value) {
      if (other.value < 0) {
        throw std::runtime_error("copy failed");
      }
    }
    fragile(fragile&&) noexcept = default;
    auto operator=(fragile const&) -> fragile& = default;
    auto operator=(fragile&&) noexcept -> fragile& = default;
    ~fragile() = default;
    int value;
  };
  auto [tx, rx] = spindle::broadcast<fragile>(2);
  static_cast<void>(tx.send(fragile(-1)));
  EXPECT_THROW(static_cast<void>(rx.try_recv()), std::runtime_error);
  EXPECT_THROW(static_cast<void>(rx.try_recv()), std::runtime_error);
  // The slot's lock was released: the sender can overwrite it.
  static_cast<void>(tx.send(fragile(1)));
  static_cast<void>(tx.send(fragile(2)));
  EXPECT_TRUE(rx.try_recv().is_lagged());
  EXPECT_EQ(rx.try_recv().value->value, 1);
}

TEST(Broadcast, MisuseIsAClearError) {
  EXPECT_THROW(static_cast<void>(spindle::broadcast<int>(0)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(spindle::broadcast<int>(spindle::broadcast_max_capacity + 1)),
               std::invalid_argument);
  auto [tx, rx] = spindle::broadcast<int>(1);
  auto moved_tx = std::move(tx);
  auto moved_rx = std::move(rx);
  // NOLINTBEGIN(bugprone-use-after-move): the misuse under test.
  EXPECT_THROW(static_cast<void>(tx.send(1)), std::logic_error);
  EXPECT_THROW(static_cast<void>(rx.try_recv()), std::logic_error);
  EXPECT_THROW(static_cast<void>(tx.subscribe()), std::logic_error);
  // NOLINTEND(bugprone-use-after-move)
  EXPECT_TRUE(moved_tx.send(1));
}

}  // namespace

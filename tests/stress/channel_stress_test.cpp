// Stress tests of every channel flavour with more threads than cores: exactly-once delivery,
// per-producer order as each consumer sees it, and close / last-receiver drop racing sends.

#include <spindle/channel.hpp>
#include <spindle/detail/sync/config.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/channel_cases.hpp"

namespace {

using spindle::recv_status;
using spindle::send_status;

#if defined(SPINDLE_TSAN)
constexpr std::uint64_t scale = 1;
#else
constexpr std::uint64_t scale = 10;
#endif

// A channel factory for a test parameter: name and maker.
struct flavour {
  std::string name;
  std::size_t capacity;  // as spindle_test::make_endpoints takes it (SIZE_MAX = unbounded)
};

template <class T>
auto make_channel(flavour const& f) -> std::pair<spindle::sender<T>, spindle::receiver<T>> {
  auto ends = spindle_test::make_endpoints<T>(f.capacity);
  return {std::move(ends.tx), std::move(ends.rx)};
}

auto messages_for(flavour const& f) -> std::uint64_t {
  // With no room to buffer, nearly every message costs a wake-up (a hand-shake for a
  // rendezvous); keep those runs as short as the others'. A lanes channel's room is a
  // producer's lane.
  auto const room = spindle_test::room_per_sender(f.capacity);
  if (room <= 1) {
    return 1000 * scale;
  }
  return (room < 16 ? 3000 : 20000) * scale;
}

// Encodes (producer, sequence) in one word.
constexpr auto tag(std::uint64_t producer, std::uint64_t seq) -> std::uint64_t {
  return (producer << 48) | seq;
}

// Producers tag messages; every message is received exactly once, and for each producer each
// consumer sees strictly increasing sequence numbers (the channel is FIFO; a lanes channel is
// FIFO per sender handle, and every producer sends through its own copy).
class ChannelStress : public ::testing::TestWithParam<flavour> {};

// The usage the stress test is about: 4 producers and 3 consumers on a 2-core machine, each
// consumer checking the order of what it receives; the last sender to finish closes the
// channel for the consumers by going away.
TEST_P(ChannelStress, Example) {
  constexpr std::uint64_t producers = 4;
  constexpr std::uint64_t consumers = 3;
  auto const per_producer = messages_for(GetParam());
  auto [tx, rx] = make_channel<std::uint64_t>(GetParam());

  std::vector<std::atomic<std::uint8_t>> seen(producers * per_producer);
  std::atomic<bool> order_ok{true};
  std::latch start(producers + consumers);
  {
    std::vector<std::jthread> threads;
    for (std::uint64_t c = 0; c < consumers; ++c) {
      threads.emplace_back([&, rx = rx]() mutable {
        std::vector<std::uint64_t> next(producers, 0);
        start.arrive_and_wait();
        for (auto v : rx) {
          auto const p = v >> 48;
          auto const s = v & ((std::uint64_t{1} << 48) - 1);
          if (s < next[p]) {
            order_ok.store(false);
          }
          next[p] = s + 1;
          seen[p * per_producer + s].fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    for (std::uint64_t p = 0; p < producers; ++p) {
      threads.emplace_back([&, p, tx = tx]() mutable {
        start.arrive_and_wait();
        for (std::uint64_t s = 0; s < per_producer; ++s) {
          if (!tx.send(tag(p, s))) {
            std::fprintf(stderr, "send failed on an open channel\n");
            std::abort();
          }
        }
      });
    }
    { auto gone = std::move(tx); }
    { auto gone = std::move(rx); }
  }
  EXPECT_TRUE(order_ok.load());
  std::uint64_t wrong = 0;
  for (auto& n : seen) {
    wrong += n.load() == 1 ? 0 : 1;
  }
  EXPECT_EQ(wrong, 0U) << "messages lost or duplicated";
}

// A payload that records, per id, how many times a live (not moved-from) value was
// destroyed, so each id's fate can be checked: destroyed exactly once, wherever that happened.
class fated {
 public:
  fated(std::uint64_t id, std::vector<std::atomic<std::uint32_t>>* fates) noexcept
      : id_(id), fates_(fates) {}
  fated(fated&& other) noexcept : id_(std::exchange(other.id_, none)), fates_(other.fates_) {}
  fated(fated const&) = delete;
  auto operator=(fated const&) -> fated& = delete;
  auto operator=(fated&&) -> fated& = delete;
  ~fated() {
    if (id_ != none) {
      (*fates_)[id_].fetch_add(1, std::memory_order_relaxed);
    }
  }
  [[nodiscard]] auto id() const noexcept -> std::uint64_t { return id_; }

 private:
  static constexpr std::uint64_t none = ~std::uint64_t{0};
  std::uint64_t id_;
  std::vector<std::atomic<std::uint32_t>>* fates_;
};

// The race tests' setup: 4 producers, 2 consumers, and per value the count of its
// destructions (fates), receptions and hand-backs by a failed send.
constexpr std::uint64_t race_producers = 4;
constexpr std::uint64_t race_consumers = 2;

struct race_ledger {
  explicit race_ledger(flavour const& f)
      : per_producer(messages_for(f) / 4),
        fates(race_producers * per_producer),
        received(race_producers * per_producer),
        handed_back(race_producers * per_producer) {}

  // Producer `p` sends its values; a send that fails must report closed and hand that very
  // value back.
  void produce(spindle::sender<fated>& tx, std::uint64_t p) {
    for (std::uint64_t s = 0; s < per_producer; ++s) {
      auto const id = p * per_producer + s;
      auto r = tx.send(fated(id, &fates));
      if (r) {
        // relaxed: a running count (read by the closer as a hint) and per-value counts, read
        // exactly after every thread is joined.
        sent.fetch_add(1, std::memory_order_relaxed);
      } else if (r.status != send_status::closed || !r.value || r.value->id() != id) {
        std::fprintf(stderr, "a failed send did not hand its value back\n");
        std::abort();
      } else {
        handed_back[id].fetch_add(1, std::memory_order_relaxed);
      }
    }
  }

  std::uint64_t per_producer;
  std::atomic<std::uint64_t> sent{0};
  std::vector<std::atomic<std::uint32_t>> fates;
  std::vector<std::atomic<std::uint8_t>> received;
  std::vector<std::atomic<std::uint8_t>> handed_back;
};

// close() races with sends and receives: every send reports sent (and the value is then
// received or, never here, destroyed by the channel) or hands the value back; every value is
// destroyed exactly once.
TEST_P(ChannelStress, CloseRacingWithSendsLosesNothing) {
  race_ledger ledger(GetParam());
  auto const per_producer = ledger.per_producer;
  auto& sent = ledger.sent;
  std::atomic<std::uint64_t> got{0};
  {
    auto [tx, rx] = make_channel<fated>(GetParam());
    std::latch start(race_producers + race_consumers + 1);
    std::vector<std::jthread> threads;
    for (std::uint64_t c = 0; c < race_consumers; ++c) {
      threads.emplace_back([&, rx = rx]() mutable {
        start.arrive_and_wait();
        for (auto v : rx) {
          ledger.received[v.id()].fetch_add(1, std::memory_order_relaxed);
          got.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    for (std::uint64_t p = 0; p < race_producers; ++p) {
      threads.emplace_back([&, p, tx = tx]() mutable {
        start.arrive_and_wait();
        ledger.produce(tx, p);
      });
    }
    threads.emplace_back([&, tx = tx]() mutable {
      start.arrive_and_wait();
      // Close once some traffic has flowed, while producers are still sending.
      while (got.load(std::memory_order_relaxed) < per_producer / 2 &&
             sent.load(std::memory_order_relaxed) < race_producers * per_producer / 2) {
        std::this_thread::yield();
      }
      tx.close();
    });
  }
  EXPECT_EQ(sent.load(), got.load()) << "receivers outlive the close, so they get every sent value";
  std::uint64_t bad = 0;
  for (std::size_t id = 0; id < ledger.fates.size(); ++id) {
    auto const r = ledger.received[id].load();
    auto const h = ledger.handed_back[id].load();
    bad += (ledger.fates[id].load() == 1 && r + h == 1) ? 0 : 1;
  }
  EXPECT_EQ(bad, 0U);
}

// The last receiver goes away while producers send: every sent value is either received or
// destroyed by the channel's eager discard, every other one is handed back, and each is
// destroyed exactly once.
TEST_P(ChannelStress, LastReceiverDropRacingWithSendsLosesNothing) {
  race_ledger ledger(GetParam());
  auto const per_producer = ledger.per_producer;
  std::atomic<std::uint64_t> got{0};
  {
    auto [tx, rx] = make_channel<fated>(GetParam());
    std::latch start(race_producers + race_consumers);
    std::vector<std::jthread> threads;
    for (std::uint64_t c = 0; c < race_consumers; ++c) {
      threads.emplace_back([&, c, rx = rx]() mutable {
        start.arrive_and_wait();
        // Each consumer takes a share, then drops its receiver; the second drop discards.
        auto const quota = per_producer / (c + 2);
        for (std::uint64_t i = 0; i < quota; ++i) {
          if (!rx.recv()) {
            break;
          }
          got.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    { auto gone = std::move(rx); }
    for (std::uint64_t p = 0; p < race_producers; ++p) {
      threads.emplace_back([&, p, tx = tx]() mutable {
        start.arrive_and_wait();
        ledger.produce(tx, p);
      });
    }
    { auto gone = std::move(tx); }
  }
  std::uint64_t bad = 0;
  for (std::size_t id = 0; id < ledger.fates.size(); ++id) {
    bad += ledger.fates[id].load() == 1 ? 0 : 1;
  }
  EXPECT_EQ(bad, 0U) << "a value was lost or destroyed twice";
}

INSTANTIATE_TEST_SUITE_P(
    Flavours, ChannelStress,
    ::testing::Values(flavour{"Bounded1024", 1024}, flavour{"Bounded1", 1}, flavour{"Bounded3", 3},
                      flavour{"Bounded37", 37}, flavour{"Unbounded", SIZE_MAX},
                      flavour{"Rendezvous", 0},
                      // bounded_lanes, lanes of capacity C, L of them:
                      // fewer lanes than producers (shared round robin),
                      // and more lanes than handles.
                      flavour{"Lanes1x3", spindle_test::lanes_capacity(1, 3)},
                      flavour{"Lanes37x2", spindle_test::lanes_capacity(37, 2)},
                      flavour{"Lanes3x16", spindle_test::lanes_capacity(3, 16)}),
    [](auto const& info) { return info.param.name; });

}  // namespace

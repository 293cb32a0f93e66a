// Stress tests of spindle::select with more threads than cores: 16 threads select over the same
// 4 small channels (a rendezvous among them), sending and receiving, while the channels close
// in the middle of the run; every value is received exactly once or handed back exactly once,
// and no value outlives the channels.

#include <spindle/select.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <optional>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include "support/sizes.hpp"
#include "support/tracked.hpp"

namespace {

using namespace std::chrono_literals;
using spindle_test::tracked;

constexpr std::size_t thread_count = 16;
constexpr std::size_t channel_count = 4;
// One rendezvous, capacity one, and two small buffers.
constexpr std::size_t capacities[channel_count] = {0, 1, 2, 4};
// Values each thread makes; fewer under ThreadSanitizer, which runs this about 10 times slower.
constexpr std::uint64_t per_thread = 4000 / spindle_test::tsan_divisor<std::uint64_t>(4);
constexpr std::uint64_t total = thread_count * per_thread;

using channel = std::pair<spindle::sender<tracked>, spindle::receiver<tracked>>;

[[noreturn]] void fail(char const* what) {
  std::fprintf(stderr, "select stress: %s\n", what);
  std::abort();
}

/// What happened to each value, by id: made, received by some thread, handed back by a send
/// case on a closed channel, or kept by a thread that stopped with it unsent.
struct ledger {
  std::vector<std::atomic<std::uint8_t>> made = std::vector<std::atomic<std::uint8_t>>(total);
  std::vector<std::atomic<std::uint8_t>> received = std::vector<std::atomic<std::uint8_t>>(total);
  std::vector<std::atomic<std::uint8_t>> handed_back =
      std::vector<std::atomic<std::uint8_t>>(total);
  std::vector<std::atomic<std::uint8_t>> kept = std::vector<std::atomic<std::uint8_t>>(total);
  // relaxed everywhere: running counts read by the main thread as hints, and per-value counts
  // read exactly after every thread is joined.
  std::atomic<std::uint64_t> received_count{0};
  std::atomic<std::uint64_t> timeouts{0};

  void count_received(tracked const& v) {
    if (v.id() >= total) {
      fail("received a value with an unknown id");
    }
    received[v.id()].fetch_add(1, std::memory_order_relaxed);
    received_count.fetch_add(1, std::memory_order_relaxed);
  }

  /// Waits until `n` values were received or `limit` passed; false on the limit.
  auto wait_received(std::uint64_t n, std::chrono::seconds limit) const -> bool {
    auto const until = std::chrono::steady_clock::now() + limit;
    while (received_count.load(std::memory_order_relaxed) < n) {
      if (std::chrono::steady_clock::now() > until) {
        return false;
      }
      std::this_thread::sleep_for(200us);
    }
    return true;
  }
};

/// The optional cases a worker adds to its select (the second test).
struct extras {
  bool timeouts = false;
  std::stop_token stop;  // no stop_source: never stops
};

/// One thread: sends its values into channel t % 4 and receives from the next two channels,
/// all through one select per step, until the channels are closed and drained (or its stop
/// token is requested).
void worker(std::size_t t, std::vector<channel>& channels, ledger& book, extras const& ex) {
  auto& tx = channels[t % channel_count].first;
  auto& rx1 = channels[(t + 1) % channel_count].second;
  auto& rx2 = channels[(t + 2) % channel_count].second;
  std::optional<tracked> pending;
  std::uint64_t next = 0;
  bool send_closed = false;
  bool rx1_closed = false;
  bool rx2_closed = false;
  bool stopped = false;
  std::uint32_t rng = 0x9e3779b9U ^ static_cast<std::uint32_t>(t * 7919);

  auto on_value = [&book](bool& closed) {
    return [&book, &closed](std::optional<tracked> v) {
      if (v) {
        book.count_received(*v);
      } else {
        closed = true;
      }
    };
  };
  auto on_sent = [&book, &pending, &send_closed](spindle::send_result<tracked> r) {
    if (r.is_sent()) {
      if (r.value || pending->id() != ~std::uint64_t{0}) {
        fail("a sent value was not moved exactly once");
      }
    } else {
      if (!r.is_closed() || !r.value) {
        fail("a failed send case did not hand its value back");
      }
      book.handed_back[r.value->id()].fetch_add(1, std::memory_order_relaxed);
      send_closed = true;
    }
    pending.reset();
  };
  auto on_timeout = [&book] { book.timeouts.fetch_add(1, std::memory_order_relaxed); };
  auto on_stop = [&stopped] { stopped = true; };

  while (!stopped) {
    if (!pending && !send_closed && next < per_thread) {
      auto const id = t * per_thread + next++;
      book.made[id].store(1, std::memory_order_relaxed);
      pending.emplace(id);
    }
    if (!pending && rx1_closed && rx2_closed) {
      break;  // nothing left to send, and both inputs are closed and drained
    }
    rng ^= rng << 13U;
    rng ^= rng >> 17U;
    rng ^= rng << 5U;
    auto const wait = std::chrono::microseconds(rng % 200);
    if (pending && ex.timeouts) {
      static_cast<void>(spindle::select(
          spindle::on_recv(rx1, on_value(rx1_closed)), spindle::on_timeout(wait, on_timeout),
          spindle::on_send(tx, *pending, on_sent), spindle::on_stop(ex.stop, on_stop),
          spindle::on_recv(rx2, on_value(rx2_closed))));
    } else if (pending) {
      static_cast<void>(spindle::select(
          spindle::on_recv(rx1, on_value(rx1_closed)), spindle::on_send(tx, *pending, on_sent),
          spindle::on_recv(rx2, on_value(rx2_closed)), spindle::on_stop(ex.stop, on_stop)));
    } else if (ex.timeouts) {
      static_cast<void>(spindle::select(
          spindle::on_timeout(wait, on_timeout), spindle::on_recv(rx1, on_value(rx1_closed)),
          spindle::on_stop(ex.stop, on_stop), spindle::on_recv(rx2, on_value(rx2_closed))));
    } else {
      static_cast<void>(spindle::select(spindle::on_recv(rx1, on_value(rx1_closed)),
                                        spindle::on_recv(rx2, on_value(rx2_closed))));
    }
  }
  if (pending) {
    // Stopped with a value not yet sent: it stays with the thread and dies here.
    book.kept[pending->id()].fetch_add(1, std::memory_order_relaxed);
  }
}

auto make_channels() -> std::vector<channel> {
  std::vector<channel> channels;
  for (auto const c : capacities) {
    channels.push_back(spindle::bounded<tracked>(c));
  }
  return channels;
}

/// Closes every channel, from a sender handle for some and a receiver handle for others.
void close_all(std::vector<channel>& channels) {
  for (std::size_t c = 0; c < channels.size(); ++c) {
    if (c % 2 == 0) {
      channels[c].first.close();
    } else {
      channels[c].second.close();
    }
  }
}

// 16 threads send and receive through selects on 4 shared channels; the channels close when
// half the values have been received. Every value made is received exactly once or handed
// back exactly once, nothing stays buffered, and every value is destroyed.
TEST(SelectStress, CloseInTheMiddleLosesAndDuplicatesNothing) {
  auto const live = tracked::live();
  ledger book;
  {
    auto channels = make_channels();
    extras const ex{};
    std::latch start(thread_count + 1);
    {
      std::vector<std::jthread> threads;
      for (std::size_t t = 0; t < thread_count; ++t) {
        threads.emplace_back([&, t] {
          start.arrive_and_wait();
          worker(t, channels, book, ex);
        });
      }
      start.arrive_and_wait();
      EXPECT_TRUE(book.wait_received(total / 2, 30s)) << "no progress";
      close_all(channels);
    }
    std::uint64_t made = 0;
    std::uint64_t received = 0;
    std::uint64_t handed_back = 0;
    std::uint64_t wrong = 0;
    for (std::uint64_t id = 0; id < total; ++id) {
      auto const m = book.made[id].load();
      auto const r = book.received[id].load();
      auto const h = book.handed_back[id].load();
      made += m;
      received += r;
      handed_back += h;
      wrong += (m == 0 ? r + h == 0 : r + h == 1) && book.kept[id].load() == 0 ? 0 : 1;
    }
    EXPECT_EQ(wrong, 0U) << "values lost or duplicated";
    EXPECT_EQ(received + handed_back, made);
    EXPECT_GE(received, total / 2);
    for (auto const& ch : channels) {
      EXPECT_EQ(ch.second.size(), 0U) << "receivers drain every channel after close";
    }
  }
  EXPECT_EQ(tracked::live(), live) << "a value outlived the channels";
}

// As above, with timeout and stop cases in every select: half the threads are stopped a third
// of the way in, the rest at half way, and the channels close right after, racing their
// last selects. A value is received, handed back, kept by a stopped thread, or left buffered,
// exactly one of these; the buffered ones are destroyed with the channels.
TEST(SelectStress, TimeoutsAndStopsMixedInLoseNothing) {
  auto const live = tracked::live();
  ledger book;
  {
    auto channels = make_channels();
    std::stop_source early;
    std::stop_source late;
    std::vector<extras> ex(thread_count);
    for (std::size_t t = 0; t < thread_count; ++t) {
      ex[t].timeouts = true;
      ex[t].stop = t % 2 == 0 ? early.get_token() : late.get_token();
    }
    std::latch start(thread_count + 1);
    {
      std::vector<std::jthread> threads;
      for (std::size_t t = 0; t < thread_count; ++t) {
        threads.emplace_back([&, t] {
          start.arrive_and_wait();
          worker(t, channels, book, ex[t]);
        });
      }
      start.arrive_and_wait();
      EXPECT_TRUE(book.wait_received(total / 3, 30s)) << "no progress";
      early.request_stop();
      // The odd threads still receive from every channel, so progress continues.
      EXPECT_TRUE(book.wait_received(total / 2, 30s)) << "no progress after the first stop";
      late.request_stop();
      close_all(channels);
    }
    std::uint64_t unaccounted = 0;
    std::uint64_t wrong = 0;
    for (std::uint64_t id = 0; id < total; ++id) {
      auto const fates =
          book.received[id].load() + book.handed_back[id].load() + book.kept[id].load();
      if (book.made[id].load() == 0) {
        wrong += fates == 0 ? 0 : 1;
      } else if (fates == 0) {
        ++unaccounted;  // must still be buffered in a channel
      } else {
        wrong += fates == 1 ? 0 : 1;
      }
    }
    EXPECT_EQ(wrong, 0U) << "values duplicated, or fates for values never made";
    std::uint64_t buffered = 0;
    for (auto const& ch : channels) {
      buffered += ch.second.size();
    }
    EXPECT_EQ(unaccounted, buffered) << "every value without a fate is still in a channel";
  }
  EXPECT_EQ(tracked::live(), live) << "the channels destroy what they still buffer";
}

}  // namespace

// Soak test: for a given duration, rounds of every operation on every structure with random
// thread counts (more threads than cores), checking exactly-once delivery, per-producer FIFO
// order, and that every payload is gone once a round has drained (tracked instance count back
// to its baseline). A watchdog aborts a round that makes no progress for 60 s (a lost wake-up
// or a deadlock). Not a ctest test: run `soak_mixed --seconds N` (CI: .ci/fuzz-smoke, 60 s
// under AddressSanitizer).
//
// Rounds:
//   channel  bounded(0..4) or unbounded; 1-4 producers mixing send, try_send and send_for;
//            1-4 consumers mixing recv, try_recv, recv_for and the receive iterator; some rounds
//            close the channel midway, some drop every receiver while values are buffered.
//   deque    one owner pushing and popping (LIFO or FIFO, initial capacity 1-8); 1-4 thieves
//            mixing steal and steal_batch_and_pop into their own deques.
#include <spindle/channel.hpp>
#include <spindle/deque.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/tracked.hpp"

namespace {

using namespace std::chrono_literals;
using spindle_test::tracked;

[[noreturn]] void fail(std::string const& what) {
  std::fprintf(stderr, "soak: FAILED: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

/// Aborts the process when a round does not finish in time.
class watchdog {
 public:
  explicit watchdog(std::chrono::seconds limit) : limit_(limit), thread_([this] { run(); }) {}
  watchdog(watchdog const&) = delete;
  auto operator=(watchdog const&) -> watchdog& = delete;
  ~watchdog() {
    {
      std::lock_guard lk(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void round_started(std::string what) {
    std::lock_guard lk(m_);
    what_ = std::move(what);
    ++round_;
  }

 private:
  void run() {
    std::unique_lock lk(m_);
    while (!stop_) {
      auto const seen = round_;
      if (!cv_.wait_for(lk, limit_, [&] { return stop_ || round_ != seen; }) && !stop_) {
        fail("round made no progress for " + std::to_string(limit_.count()) + " s: " + what_);
      }
    }
  }

  std::chrono::seconds limit_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::uint64_t round_ = 0;
  std::string what_;
  std::thread thread_;
};

/// Counts deliveries per id so each can be checked to happen exactly once.
class ledger {
 public:
  explicit ledger(std::size_t n)
      : counts_(std::make_unique<std::atomic<std::uint32_t>[]>(n)), n_(n) {}
  void mark(std::uint64_t id) {
    if (id >= n_) {
      fail("delivered an id that was never sent: " + std::to_string(id));
    }
    counts_[id].fetch_add(1, std::memory_order_relaxed);
  }
  void expect_each_once(std::size_t n, char const* what) const {
    for (std::size_t i = 0; i < n; ++i) {
      auto const c = counts_[i].load(std::memory_order_relaxed);
      if (c != 1) {
        fail(std::string(what) + ": id " + std::to_string(i) + " delivered " + std::to_string(c) +
             " times");
      }
    }
  }

 private:
  std::unique_ptr<std::atomic<std::uint32_t>[]> counts_;
  std::size_t n_;
};

struct totals {
  std::uint64_t rounds = 0;
  std::uint64_t messages = 0;
  std::uint64_t items = 0;
};

void channel_round(std::mt19937_64& rng, totals& sum, watchdog& dog) {
  int const flavour = static_cast<int>(rng() % 6);  // 0..4 bounded(n), 5 unbounded
  int const producers = 1 + static_cast<int>(rng() % 4);
  int const consumers = 1 + static_cast<int>(rng() % 4);
  int const per_producer = 200 + static_cast<int>(rng() % 2000);
  int const ending = static_cast<int>(rng() % 4);  // 0,1 drain; 2 close midway; 3 drop receivers
  dog.round_started("channel flavour " + std::to_string(flavour) + ", " +
                    std::to_string(producers) + "P/" + std::to_string(consumers) + "C, ending " +
                    std::to_string(ending));
  auto const n = static_cast<std::size_t>(producers) * static_cast<std::size_t>(per_producer);
  ledger delivered(n);
  std::atomic<std::uint64_t> handed_back{0};
  std::atomic<std::uint64_t> received{0};
  {
    auto [tx, rx] = flavour == 5 ? spindle::unbounded<tracked>()
                                 : spindle::bounded<tracked>(static_cast<std::size_t>(flavour));
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p, s = tx, seed = rng()]() mutable {
        std::mt19937_64 r(seed);
        for (int i = 0; i < per_producer; ++i) {
          auto const id = static_cast<std::uint64_t>(p) * static_cast<std::uint64_t>(per_producer) +
                          static_cast<std::uint64_t>(i);
          spindle::send_result<tracked> res{spindle::send_status::full, std::nullopt};
          switch (r() % 3) {
            case 0:
              res = s.send(tracked(id));
              break;
            case 1:
              res = s.try_send(tracked(id));
              while (res.status == spindle::send_status::full) {
                std::this_thread::yield();
                res = s.try_send(std::move(*res.value));
              }
              break;
            default:
              res = s.send_for(tracked(id), 1ms);
              while (res.status == spindle::send_status::timed_out) {
                res = s.send_for(std::move(*res.value), 1ms);
              }
              break;
          }
          if (res.status != spindle::send_status::sent) {
            if (res.status != spindle::send_status::closed || !res.value || res.value->id() != id) {
              fail("a failed send did not hand its value back");
            }
            delivered.mark(id);
            handed_back.fetch_add(1, std::memory_order_relaxed);
          }
        }
      });
    }
    for (int c = 0; c < consumers; ++c) {
      threads.emplace_back([&, rxc = rx, seed = rng()]() mutable {
        std::mt19937_64 r(seed);
        std::vector<std::int64_t> last(static_cast<std::size_t>(producers), -1);
        auto take = [&](tracked const& v) {
          auto const id = v.id();
          delivered.mark(id);
          received.fetch_add(1, std::memory_order_relaxed);
          auto const p = static_cast<std::size_t>(id / static_cast<std::uint64_t>(per_producer));
          auto const seq = static_cast<std::int64_t>(id % static_cast<std::uint64_t>(per_producer));
          if (seq <= last[p]) {
            fail("values of one producer arrived out of order");
          }
          last[p] = seq;
        };
        for (;;) {
          auto const how = r() % 4;
          if (how == 0) {
            auto v = rxc.recv();
            if (!v) {
              break;
            }
            take(*v);
          } else if (how == 1) {
            auto res = rxc.try_recv();
            if (res.status == spindle::recv_status::closed) {
              break;
            }
            if (res.status == spindle::recv_status::received) {
              take(*res.value);
            } else {
              std::this_thread::yield();
            }
          } else if (how == 2) {
            auto res = rxc.recv_for(1ms);
            if (res.status == spindle::recv_status::closed) {
              break;
            }
            if (res.status == spindle::recv_status::received) {
              take(*res.value);
            }
          } else {
            int k = 0;
            for (auto&& v : rxc) {
              take(v);
              if (++k == 8) {
                break;
              }
            }
            if (k < 8) {
              break;  // the iterator ended: closed and drained
            }
          }
          if (ending == 3 && r() % 64 == 0) {
            break;  // this consumer drops its receiver early
          }
        }
      });
    }
    if (ending == 2) {
      for (auto k = rng() % 500; k > 0; --k) {
        std::this_thread::yield();  // let some values through first
      }
      tx.close();
    }
    if (ending == 3) {
      auto drop = std::move(rx);  // the main thread's receiver dies now
    }
    { auto drop = std::move(tx); }  // the last senders die with the producers
    for (auto& t : threads) {
      t.join();
    }
  }
  // Everything is gone: received, handed back, or destroyed with the channel.
  if (tracked::live() != 0) {
    fail("tracked values alive after the channel died: " + std::to_string(tracked::live()));
  }
  if (ending != 3) {
    delivered.expect_each_once(n, "channel");
  }
  sum.messages += received.load() + handed_back.load();
}

void deque_round(std::mt19937_64& rng, totals& sum, watchdog& dog) {
  bool const fifo = rng() % 2 == 0;
  int const thieves = 1 + static_cast<int>(rng() % 4);
  std::size_t const capacity = std::size_t{1} << (rng() % 4);
  int const items = 1000 + static_cast<int>(rng() % 20000);
  dog.round_started(std::string("deque ") + (fifo ? "fifo" : "lifo") + ", " +
                    std::to_string(thieves) + " thieves");
  ledger taken(static_cast<std::size_t>(items));
  std::atomic<bool> owner_done{false};
  std::atomic<std::uint64_t> count{0};
  spindle::deque_owner<std::uint32_t> w(
      fifo ? spindle::deque_order::fifo : spindle::deque_order::lifo, capacity);
  std::vector<std::thread> threads;
  for (int t = 0; t < thieves; ++t) {
    threads.emplace_back([&, s = w.stealer(), seed = rng()]() mutable {
      std::mt19937_64 r(seed);
      spindle::deque_owner<std::uint32_t> mine(spindle::deque_order::lifo, 1);
      for (;;) {
        bool const done = owner_done.load(std::memory_order_acquire);
        auto res = r() % 3 == 0 ? s.steal_batch_and_pop(mine) : s.steal();
        if (res.is_stolen()) {
          taken.mark(*res.value);
          count.fetch_add(1, std::memory_order_relaxed);
        }
        while (auto v = mine.pop()) {
          taken.mark(*v);
          count.fetch_add(1, std::memory_order_relaxed);
        }
        if (res.is_empty() && done) {
          break;
        }
        if (!res.is_stolen()) {
          std::this_thread::yield();
        }
      }
    });
  }
  for (int i = 0; i < items; ++i) {
    w.push(static_cast<std::uint32_t>(i));
    if (rng() % 3 == 0) {
      if (auto v = w.pop()) {
        taken.mark(*v);
        count.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  while (auto v = w.pop()) {
    taken.mark(*v);
    count.fetch_add(1, std::memory_order_relaxed);
  }
  owner_done.store(true, std::memory_order_release);
  for (auto& t : threads) {
    t.join();
  }
  taken.expect_each_once(static_cast<std::size_t>(items), "deque");
  sum.items += count.load();
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  std::uint64_t seed = std::random_device{}();
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = std::strtod(argv[++i], nullptr);
    } else if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 0);
    } else {
      std::fprintf(stderr, "usage: %s [--seconds N] [--seed S]\n", argv[0]);
      return 2;
    }
  }
  std::printf("soak: %.0f s, seed %llu\n", seconds, static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  totals sum;
  auto const baseline = tracked::live();
  auto const end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  {
    watchdog dog(60s);
    while (std::chrono::steady_clock::now() < end) {
      if (rng() % 2 == 0) {
        channel_round(rng, sum, dog);
      } else {
        deque_round(rng, sum, dog);
      }
      ++sum.rounds;
      if (tracked::live() != baseline) {
        fail("tracked instances did not return to the baseline");
      }
    }
  }
  std::printf("soak: passed: %llu rounds, %llu channel messages, %llu deque items\n",
              static_cast<unsigned long long>(sum.rounds),
              static_cast<unsigned long long>(sum.messages),
              static_cast<unsigned long long>(sum.items));
  return 0;
}

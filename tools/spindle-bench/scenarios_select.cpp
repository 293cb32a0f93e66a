// spindle-bench select: one receiver selecting over several channels (C3).
//
//   spindle-bench select [--runs R] [--json] [--messages N] [--workers W]
//
// Four producers each send --messages u64 (default 1,000,000) into a bounded(1024) channel of
// their own and then drop their sender; one receiver selects over the four channels until
// every one is closed and drained. Result: million messages per second (higher is better),
// from the release of a start gate (or the first spawn, for coroutine producers) to the
// receiver's end.
//
// Rows:
//   spindle::select, thread          the receiver is a thread in spindle::select; producer threads.
//   spindle::dynamic_select, thread  the same with a dynamic_select, rebuilt without a channel
//                                    once it is closed; producer threads.
//   async_select, all coroutines     the receiver is a coroutine in co_await async_select, and
//                                    the producers are coroutines (async_send), all on one
//                                    executor of W workers (--workers, default 2).
//   async_select, producer threads   the receiving coroutine alone on an executor of 1 worker;
//                                    producer threads with blocking send.
//   try_recv polling, thread         baseline: the receiver polls try_recv round-robin and,
//                                    when all four are empty, spins a little then yields;
//                                    producer threads.
// A closed channel is always ready (its case delivers nullopt), so the variadic selects swap a
// closed channel's receiver for one of a channel that stays open and empty: a case on it is
// never ready (Go's nil channel in a select).
//
// Anchors. crossbeam-channel (a crossbeam_channel::Select over four bounded channels, producer
// and receiver threads), tokio (tokio::select! over four mpsc channels, all tasks on a runtime
// of W workers) and Go (select over four channels, all goroutines, GOMAXPROCS W) run the same
// workload in the same interleaving, a process of their own per run (bench/anchors, found as
// anchors.hpp says). Where one is not found, the figure measured elsewhere stands in for it as
// a row marked "anchor (not run)". The target is 1.5x the best of them.
//
// Exactly once: a message is (producer << 32) | sequence. The receiver checks that each
// channel's sequences rise by one from 1, and the run fails loudly (exit status 2, no figure)
// unless every producer's count and sum match what it sent. Rows run interleaved: run r runs
// every row once, starting at a different row each run.

#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <latch>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "anchors.hpp"
#include "bench_common.hpp"
#include "channel_peers.hpp"

namespace spindle_bench::select_bench {
namespace {

using u64 = std::uint64_t;

constexpr std::size_t producers = 4;
constexpr std::size_t capacity = 1024;

using receivers = std::vector<spindle::receiver<u64>>;

auto encode(u64 producer, u64 seq) -> u64 {
  return (producer << 32) | seq;
}

/// What the receiver saw, per producer.
struct tally {
  std::array<u64, producers> next{1, 1, 1, 1};  // the sequence expected next
  std::array<u64, producers> sum{};
  bool wrong = false;
  clock::time_point end;

  void see(std::size_t channel, u64 v) {
    auto const p = v >> 32;
    auto const seq = v & 0xffff'ffffULL;
    if (p != channel || seq != next[channel]) {
      wrong = true;
    }
    ++next[channel];
    sum[channel] += seq;
  }

  void verify(std::string const& who, u64 n) const {
    for (std::size_t p = 0; p < producers; ++p) {
      auto const count = next[p] - 1;
      if (wrong || count != n || sum[p] != n * (n + 1) / 2) {
        fail(who + ": producer " + std::to_string(p) + " sent " + std::to_string(n) +
             " messages, the receiver got " + std::to_string(count) + " (sum " +
             std::to_string(sum[p]) + ")" + (wrong ? ", some out of order or misrouted" : ""));
      }
    }
  }
};

/// Four channels, their senders kept apart from their receivers, and one never-ready channel.
struct channels {
  channels() {
    for (std::size_t p = 0; p < producers; ++p) {
      auto ch = spindle::bounded<u64>(capacity);
      tx.push_back(std::move(ch.first));
      rx.push_back(std::move(ch.second));
    }
  }
  std::vector<spindle::sender<u64>> tx;
  receivers rx;
  // Stays open (never_tx lives as long as this object) and empty.
  std::pair<spindle::sender<u64>, spindle::receiver<u64>> never = spindle::bounded<u64>(1);
};

/// Starts one producer thread per channel behind a gate; the caller opens the gate.
class producer_threads {
 public:
  producer_threads(std::vector<spindle::sender<u64>> tx, u64 n) : ready_(producers) {
    for (std::size_t p = 0; p < producers; ++p) {
      threads_.emplace_back([this, n, p, own = std::move(tx[p])]() mutable {
        auto sender = std::move(own);  // dropped when this thread's work is done: closes
        ready_.count_down();
        go_.wait();
        for (u64 s = 1; s <= n; ++s) {
          if (!sender.send(encode(p, s))) {
            failed_.store(true, std::memory_order_relaxed);
            return;
          }
        }
      });
    }
    ready_.wait();
  }
  producer_threads(producer_threads const&) = delete;
  auto operator=(producer_threads const&) -> producer_threads& = delete;
  ~producer_threads() { join(); }

  /// Opens the gate; returns the time it did.
  auto start() -> clock::time_point {
    auto const t0 = clock::now();
    go_.count_down();
    return t0;
  }

  void join() {
    for (auto& t : threads_) {
      if (t.joinable()) {
        t.join();
      }
    }
    if (failed_.load()) {
      fail("select: a producer's send failed on an open channel");
    }
  }

 private:
  std::latch ready_;
  std::latch go_{1};
  std::atomic<bool> failed_{false};
  std::vector<std::thread> threads_;
};

auto mps(u64 n, clock::time_point t0, clock::time_point t1) -> double {
  auto const total = static_cast<double>(n * producers);
  return total / std::chrono::duration<double>(t1 - t0).count() / 1e6;
}

// ---- spindle::select from a thread ----

auto run_select_thread(u64 n) -> double {
  channels ch;
  producer_threads prod(std::move(ch.tx), n);
  tally t;
  auto const t0 = prod.start();
  std::size_t open = producers;
  receivers& rx = ch.rx;
  while (open > 0) {
    std::optional<std::size_t> closed;
    auto on = [&](std::size_t k) {
      return [&t, &closed, k](std::optional<u64> v) {
        if (v) {
          t.see(k, *v);
        } else {
          closed = k;
        }
      };
    };
    static_cast<void>(
        spindle::select(spindle::on_recv(rx[0], on(0)), spindle::on_recv(rx[1], on(1)),
                        spindle::on_recv(rx[2], on(2)), spindle::on_recv(rx[3], on(3))));
    if (closed) {
      rx[*closed] = ch.never.second;  // never ready from now on
      --open;
    }
  }
  t.end = clock::now();
  prod.join();
  t.verify("spindle::select", n);
  return mps(n, t0, t.end);
}

// ---- spindle::dynamic_select from a thread ----

auto run_dynamic_select_thread(u64 n) -> double {
  channels ch;
  producer_threads prod(std::move(ch.tx), n);
  tally t;
  auto const t0 = prod.start();
  std::array<bool, producers> live{true, true, true, true};
  std::optional<std::size_t> closed;
  spindle::dynamic_select sel;
  auto rebuild = [&] {
    sel.clear();
    for (std::size_t k = 0; k < producers; ++k) {
      if (live[k]) {
        sel.add(spindle::on_recv(ch.rx[k], [&t, &closed, k](std::optional<u64> v) {
          if (v) {
            t.see(k, *v);
          } else {
            closed = k;
          }
        }));
      }
    }
  };
  rebuild();
  while (!sel.empty()) {
    static_cast<void>(sel.select());
    if (closed) {
      live[*closed] = false;
      closed.reset();
      rebuild();
    }
  }
  t.end = clock::now();
  prod.join();
  t.verify("spindle::dynamic_select", n);
  return mps(n, t0, t.end);
}

// ---- async_select from a coroutine ----

/// Selects over `rx` until all four are closed and drained; `never` replaces a closed one.
auto select_receiver(receivers rx, spindle::receiver<u64> never, tally* out)
    -> spindle::task<void> {
  tally t;
  std::size_t open = producers;
  while (open > 0) {
    std::optional<std::size_t> closed;
    auto on = [&](std::size_t k) {
      return [&t, &closed, k](std::optional<u64> v) {
        if (v) {
          t.see(k, *v);
        } else {
          closed = k;
        }
      };
    };
    co_await spindle::async_select(spindle::on_recv(rx[0], on(0)), spindle::on_recv(rx[1], on(1)),
                                   spindle::on_recv(rx[2], on(2)), spindle::on_recv(rx[3], on(3)));
    if (closed) {
      rx[*closed] = never;
      --open;
    }
  }
  t.end = clock::now();
  *out = t;
}

auto select_producer(spindle::sender<u64> tx, u64 p, u64 n, std::atomic<bool>* failed)
    -> spindle::task<void> {
  for (u64 s = 1; s <= n; ++s) {
    auto sent = co_await tx.async_send(encode(p, s));
    if (!sent.is_sent()) {
      failed->store(true, std::memory_order_relaxed);
      co_return;
    }
  }
}

auto run_async_select_coroutines(u64 n, std::size_t workers) -> double {
  tally t;
  std::atomic<bool> failed{false};
  clock::time_point t0;
  {
    channels ch;
    spindle::executor ex{workers};
    t0 = clock::now();
    auto receiving = ex.spawn(select_receiver(std::move(ch.rx), ch.never.second, &t));
    std::vector<spindle::join_handle<void>> sending;
    for (std::size_t p = 0; p < producers; ++p) {
      sending.push_back(ex.spawn(select_producer(std::move(ch.tx[p]), p, n, &failed)));
    }
    receiving.join();
    for (auto& h : sending) {
      h.join();
    }
  }
  if (failed.load()) {
    fail("async_select: a producer's async_send failed on an open channel");
  }
  t.verify("async_select (coroutines)", n);
  return mps(n, t0, t.end);
}

auto run_async_select_threads(u64 n) -> double {
  tally t;
  clock::time_point t0;
  {
    channels ch;
    spindle::executor ex{1};
    producer_threads prod(std::move(ch.tx), n);
    t0 = prod.start();
    ex.spawn(select_receiver(std::move(ch.rx), ch.never.second, &t)).join();
    prod.join();
  }
  t.verify("async_select (producer threads)", n);
  return mps(n, t0, t.end);
}

// ---- baseline: try_recv round-robin ----

auto run_polling(u64 n) -> double {
  channels ch;
  producer_threads prod(std::move(ch.tx), n);
  tally t;
  auto const t0 = prod.start();
  std::array<bool, producers> live{true, true, true, true};
  std::size_t open = producers;
  channel::spin_then_yield idle;
  while (open > 0) {
    bool got = false;
    for (std::size_t k = 0; k < producers; ++k) {
      if (!live[k]) {
        continue;
      }
      auto r = ch.rx[k].try_recv();
      if (r) {
        t.see(k, *r.value);
        got = true;
      } else if (r.is_closed()) {
        live[k] = false;
        --open;
      }
    }
    if (got) {
      idle = channel::spin_then_yield{};
    } else {
      idle.wait();
    }
  }
  t.end = clock::now();
  prod.join();
  t.verify("try_recv polling", n);
  return mps(n, t0, t.end);
}

// ---------------------------------------------------------------------------------------------

struct measured {
  row r;
  std::function<double()> run;
};

auto run_select(std::span<char const* const> args) -> int {
  options const o(args);
  auto const runs = static_cast<int>(o.get_int("runs", 5));
  if (runs < 1) {
    throw std::invalid_argument("--runs must be at least 1");
  }
  bool const json = o.flag("json");
  auto const n = static_cast<u64>(o.get_int("messages", 1'000'000));
  if (n < 1 || n >= (1ULL << 32)) {
    throw std::invalid_argument("--messages must be in [1, 2^32)");
  }
  auto const workers = static_cast<std::size_t>(o.get_int("workers", 2));
  if (workers < 1) {
    throw std::invalid_argument("--workers must be at least 1");
  }
  auto const w = std::to_string(workers);

  std::vector<measured> m;
  m.push_back({{"spindle::select, thread", "receiver thread in select; 4 producer threads", {}},
               [n] { return run_select_thread(n); }});
  m.push_back({{"spindle::dynamic_select, thread",
                "rebuilt without a closed channel; 4 producer threads",
                {}},
               [n] { return run_dynamic_select_thread(n); }});
  m.push_back({{"async_select, all coroutines",
                "receiver + 4 producer coroutines on executor{" + w + "}; includes spawning",
                {}},
               [n, workers] { return run_async_select_coroutines(n, workers); }});
  m.push_back({{"async_select, producer threads",
                "receiver coroutine on executor{1}; 4 producer threads",
                {}},
               [n] { return run_async_select_threads(n); }});
  m.push_back({{"try_recv polling, thread",
                "baseline: round-robin try_recv, spin then yield when all empty; 4 producer "
                "threads",
                {}},
               [n] { return run_polling(n); }});

  // The anchors, where found; each replaces its figure measured elsewhere. Every row from
  // first_anchor on is an anchor's.
  auto const first_anchor = m.size();
  using anchors::program;
  std::vector<std::string> const workload{"--msgs", std::to_string(n), "--capacity",
                                          std::to_string(capacity)};
  auto add_anchor = [&m, &workload, n](program p, std::string name, std::string note,
                                       std::vector<std::string> command) {
    command.insert(command.end(), workload.begin(), workload.end());
    m.push_back({{std::move(name), std::move(note), {}}, [p, command, n] {
                   return anchors::rate(p, command, static_cast<double>(n * producers));
                 }});
  };
  bool const rust = anchors::available(program::rust);
  bool const go = anchors::available(program::go);
  if (rust) {
    add_anchor(program::rust, "crossbeam Select, thread",
               anchors::describe(program::rust, "crossbeam-channel") +
                   "; receiver thread in a Select; 4 producer threads",
               {"chan", "select"});
    add_anchor(program::rust, "tokio::select!, all tasks",
               anchors::describe(program::rust, "tokio") +
                   "; receiver + 4 producer tasks on a runtime of " + w +
                   " workers; includes spawning",
               {"coro", "select", "--threads", w});
  }
  if (go) {
    add_anchor(program::go, "Go select, all goroutines",
               anchors::describe(program::go, "") +
                   "; receiver + 4 producer goroutines, GOMAXPROCS " + w +
                   "; includes starting them",
               {"coro", "select", "--threads", w});
  }

  auto const count = m.size();
  for (int r = 0; r < runs; ++r) {
    for (std::size_t k = 0; k < count; ++k) {
      auto& one = m[(k + static_cast<std::size_t>(r)) % count];
      one.r.sample.push_back(one.run());
    }
  }
  std::vector<row> rows;
  for (auto& one : m) {
    rows.push_back(std::move(one.r));
  }
  std::string const elsewhere =
      "measured elsewhere, not on this machine; the project depends on none of these";
  if (!go) {
    rows.push_back({"Go select (anchor, not run)", elsewhere, {6.3}});
  }
  if (!rust) {
    rows.push_back({"tokio::select! (anchor, not run)", elsewhere, {7.7}});
    rows.push_back({"crossbeam select! (anchor, not run)", elsewhere, {7.7}});
  }

  double best_anchor = 0;
  for (auto k = first_anchor; k < rows.size(); ++k) {
    best_anchor = std::max(best_anchor, summarize(rows[k].sample).median);
  }
  std::ostringstream title;
  title << "select C3: 4 producers x " << n
        << " u64, each into its own bounded(1024) channel, one receiver selecting over the 4; "
        << runs << " interleaved runs; target 1.5x the best anchor ("
        << std::round(best_anchor * 150) / 100 << " M msg/s)";
  print_table(title.str(), "M msg/s", true, rows, "spindle::select, thread", json);
  return 0;
}

registrar const select_cmd({"select",
                            "select over 4 channels (C3): spindle::select, dynamic_select, "
                            "async_select, try_recv polling: --runs R [--json] [--messages N] "
                            "[--workers W]",
                            run_select});

}  // namespace
}  // namespace spindle_bench::select_bench

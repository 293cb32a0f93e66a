// spindle-bench coro: coroutines over spindle channels, on a spindle::executor.
//
//   spindle-bench coro [--scenario pingpong|fanin|memory|all] [--runs R] [--json]
//                      [--rounds N] [--senders S --per-sender M] [--suspended K] [--workers W]
//
// --workers W (default 2) sets the executor of the ping-pong and fan-in rows, and the tokio
// runtime's workers and Go's GOMAXPROCS of their anchors, so that a many-core machine can run
// them at one worker per processor.
//
// Scenarios:
//   pingpong (C1)  two coroutines on an executor of W workers pass a counter back and forth
//                  over two channels of capacity 1, --rounds round trips (default 1,000,000):
//                  nanoseconds per round trip (lower is better). Rows: the coroutines on
//                  executor{W} and on executor{1}; two plain threads with blocking send/recv
//                  as the baseline. The time runs inside the pinging side, from its first send
//                  to its last receive.
//   fanin (C2)     --senders coroutines (default 10,000) each send --per-sender messages
//                  (default 100) into one bounded(1024) channel, one coroutine receives them
//                  all, on an executor of W workers: million messages per second (higher is
//                  better). The time runs from the first spawn to the receiver's end of
//                  stream, so it includes spawning the senders.
//   memory         --suspended coroutines (default 100,000) each suspended in async_send on one
//                  full bounded(1) channel: bytes per suspended coroutine, as the growth of
//                  the resident set (/proc/self/statm) and of the heap in use (mallinfo2),
//                  divided by the count (lower is better; the target is 512 B at most).
//
// Anchors. tokio (tasks and tokio::sync::mpsc, a runtime of W workers) and Go (goroutines and
// channels, GOMAXPROCS W) run the ping-pong and fan-in workloads in the same interleaving, a
// process of their own per run (anchor-rust coro and anchor-go coro, bench/anchors; found as
// anchors.hpp says). Where one is not found, the figure measured elsewhere, on another machine,
// stands in for it as a row marked "anchor (not run)", only to place spindle's figures. The
// memory anchor is the 2 KiB stack a goroutine starts with.
//
// Rows run interleaved: run r runs every row once, starting at a different row each run. The
// table shows median, min and max over the runs. Every run checks what arrived (count, sum and
// xor of the values, the echo of every round trip) and fails loudly (exit status 2, no figure)
// when a message was lost, duplicated or changed.

#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/task.hpp>

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
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

namespace spindle_bench::coro {
namespace {

using u64 = std::uint64_t;

auto seconds_between(clock::time_point t0, clock::time_point t1) -> double {
  return std::chrono::duration<double>(t1 - t0).count();
}

/// A row and the function that measures it once.
struct measured {
  row r;
  std::function<double()> run;
};

/// Runs every row `runs` times, interleaved and rotated, and returns the rows.
auto interleave(std::vector<measured> m, int runs) -> std::vector<row> {
  auto const n = m.size();
  for (int r = 0; r < runs; ++r) {
    for (std::size_t k = 0; k < n; ++k) {
      auto& one = m[(k + static_cast<std::size_t>(r)) % n];
      one.r.sample.push_back(one.run());
    }
  }
  std::vector<row> rows;
  rows.reserve(n);
  for (auto& one : m) {
    rows.push_back(std::move(one.r));
  }
  return rows;
}

/// A figure measured elsewhere, shown for comparison only.
auto anchor(std::string name, double value) -> row {
  return {std::move(name) + " (anchor, not run)",
          "measured elsewhere, not on this machine; the project depends on neither Go nor tokio",
          {value}};
}

/// Which anchors run live in a scenario.
struct live_anchors {
  bool tokio = false;
  bool go = false;
};

/// Appends to `m` the rows of `anchor-rust coro <workload>` (tokio) and `anchor-go coro
/// <workload>` where they are found, each run with `args` and --threads `workers`; `figure`
/// turns a run into the row's figure, and `shape` is what the notes add to the program's name.
auto add_anchors(std::vector<measured>& m, std::string const& workload, std::size_t workers,
                 std::vector<std::string> const& args,
                 std::function<double(anchors::program, std::vector<std::string> const&)> figure,
                 std::string const& tokio_shape, std::string const& go_shape) -> live_anchors {
  using anchors::program;
  live_anchors live;
  auto add = [&](program p, std::string name, std::string note) {
    std::vector<std::string> full{"coro", workload};
    full.insert(full.end(), args.begin(), args.end());
    full.insert(full.end(), {"--threads", std::to_string(workers)});
    m.push_back(
        {{std::move(name), std::move(note), {}}, [p, full, figure] { return figure(p, full); }});
  };
  if (anchors::available(program::rust)) {
    add(program::rust, "tokio tasks",
        anchors::describe(program::rust, "tokio") + "; " + tokio_shape);
    live.tokio = true;
  }
  if (anchors::available(program::go)) {
    add(program::go, "Go goroutines", anchors::describe(program::go, "") + "; " + go_shape);
    live.go = true;
  }
  return live;
}

// ---------------------------------------------------------------------------------------------
// C1 ping-pong

/// Result of one ping-pong run, written by the coroutines, read after they were joined.
struct pingpong_result {
  clock::time_point start;
  clock::time_point end;
  bool wrong = false;
  u64 echoed = 0;
};

/// Sends 1..rounds on `tx` and expects each back on `rx` before sending the next. `Tx` and
/// `Rx`: the handles of bounded() or of bounded_spsc().
template <class Tx, class Rx>
auto ping(Tx tx, Rx rx, u64 rounds, pingpong_result* out) -> spindle::task<void> {
  out->start = clock::now();
  for (u64 i = 1; i <= rounds; ++i) {
    auto sent = co_await tx.async_send(i);
    if (!sent.is_sent()) {
      out->wrong = true;
      break;
    }
    auto back = co_await rx.async_recv();
    if (!back || *back != i) {
      out->wrong = true;
      break;
    }
  }
  out->end = clock::now();
}  // tx dies with the frame: the echo sees the end of the stream

/// Sends back everything it receives on `rx`, until `rx` is closed and drained.
template <class Rx, class Tx>
auto echo(Rx rx, Tx tx, pingpong_result* out) -> spindle::task<void> {
  for (;;) {
    auto v = co_await rx.async_recv();
    if (!v) {
      break;
    }
    auto sent = co_await tx.async_send(*v);
    if (!sent.is_sent()) {
      out->wrong = true;
      break;
    }
    ++out->echoed;
  }
}

void check_pingpong(pingpong_result const& r, u64 rounds, std::string const& who) {
  if (r.wrong || r.echoed != rounds) {
    fail(who + ": ping-pong lost, duplicated or changed a message (echoed " +
         std::to_string(r.echoed) + " of " + std::to_string(rounds) + ")");
  }
}

/// The coroutines on an executor of `workers`, over bounded(1) channels or, with `spsc`,
/// bounded_spsc(1) (whose move-only handles the coroutines take by move); nanoseconds per
/// round trip.
template <bool Spsc = false>
auto pingpong_coroutines(std::size_t workers, u64 rounds) -> double {
  pingpong_result r;
  {
    spindle::executor ex{workers};
    auto make = [] {
      if constexpr (Spsc) {
        return spindle::bounded_spsc<u64>(1);
      } else {
        return spindle::bounded<u64>(1);
      }
    };
    auto there = make();
    auto back = make();
    auto e = ex.spawn(echo(std::move(there.second), std::move(back.first), &r));
    auto p = ex.spawn(ping(std::move(there.first), std::move(back.second), rounds, &r));
    p.join();
    e.join();
  }
  check_pingpong(r, rounds, "coroutine ping-pong");
  return seconds_between(r.start, r.end) * 1e9 / static_cast<double>(rounds);
}

/// Two threads with blocking send and recv; nanoseconds per round trip.
auto pingpong_threads(u64 rounds) -> double {
  pingpong_result r;
  auto there = spindle::bounded<u64>(1);
  auto back = spindle::bounded<u64>(1);
  std::latch ready(2);
  std::thread echo_thread(
      [&r, &ready, rx = std::move(there.second), tx = std::move(back.first)]() mutable {
        ready.count_down();
        while (auto v = rx.recv()) {
          if (!tx.send(*v)) {
            r.wrong = true;
            break;
          }
          ++r.echoed;
        }
      });
  std::thread ping_thread(
      [&r, &ready, rounds, tx = std::move(there.first), rx = std::move(back.second)]() mutable {
        ready.arrive_and_wait();
        r.start = clock::now();
        for (u64 i = 1; i <= rounds; ++i) {
          if (!tx.send(i)) {
            r.wrong = true;
            break;
          }
          auto v = rx.recv();
          if (!v || *v != i) {
            r.wrong = true;
            break;
          }
        }
        r.end = clock::now();
        auto done = std::move(tx);  // closes `there`: the echo thread ends
      });
  ping_thread.join();
  echo_thread.join();
  check_pingpong(r, rounds, "thread ping-pong");
  return seconds_between(r.start, r.end) * 1e9 / static_cast<double>(rounds);
}

/// "executor{W}", the name of the rows that run on the scenario's executor.
auto on_executor(std::string const& what, std::size_t workers) -> std::string {
  return what + ", executor{" + std::to_string(workers) + "}";
}

void pingpong_scenario(u64 rounds, std::size_t workers, int runs, bool json) {
  std::vector<measured> m;
  auto const main_row = on_executor("spindle coroutines", workers);
  m.push_back({{main_row, "async_send/async_recv; the scenario's configuration", {}},
               [rounds, workers] { return pingpong_coroutines(workers, rounds); }});
  m.push_back({{"spindle coroutines, executor{1}", "both coroutines on one worker", {}},
               [rounds] { return pingpong_coroutines(1, rounds); }});
  m.push_back({{on_executor("spindle coroutines over bounded_spsc", workers),
                "every wait is a select-style watch: see the fence switch in spsc_channel.hpp",
                {}},
               [rounds, workers] { return pingpong_coroutines<true>(workers, rounds); }});
  m.push_back({{"spindle threads, blocking send/recv", "baseline: two std::threads", {}},
               [rounds] { return pingpong_threads(rounds); }});
  auto const live = add_anchors(
      m, "pingpong", workers, {"--rounds", std::to_string(rounds)},
      [](anchors::program p, std::vector<std::string> const& args) {
        return anchors::figure(p, args, "ns_per_rtt");
      },
      "two tasks, two mpsc::channel(1), a runtime of " + std::to_string(workers) + " workers",
      "two goroutines, two channels of capacity 1, GOMAXPROCS " + std::to_string(workers));
  auto rows = interleave(std::move(m), runs);
  if (!live.go) {
    rows.push_back(anchor("Go goroutines", 435));
  }
  if (!live.tokio) {
    rows.push_back(anchor("tokio tasks", 360));
  }
  std::ostringstream title;
  title << "coro C1 ping-pong: " << rounds << " round trips over two capacity-1 channels, " << runs
        << " interleaved runs";
  print_table(title.str(), "ns/round trip", false, rows, main_row, json);
}

// ---------------------------------------------------------------------------------------------
// C2 fan-in

/// What the receiver saw.
struct fanin_tally {
  u64 count = 0;
  u64 sum = 0;
  u64 bits = 0;
  clock::time_point end;
};

/// Sends first, first + 1, ..., first + count - 1; records a failed send in `failed`.
auto fan_sender(spindle::sender<u64> tx, u64 first, u64 count, std::atomic<bool>* failed)
    -> spindle::task<void> {
  for (u64 k = 0; k < count; ++k) {
    auto sent = co_await tx.async_send(first + k);
    if (!sent.is_sent()) {
      failed->store(true, std::memory_order_relaxed);
      co_return;
    }
  }
}

/// Receives until every sender is gone and the channel is drained.
auto fan_receiver(spindle::receiver<u64> rx, fanin_tally* out) -> spindle::task<void> {
  fanin_tally t;
  for (;;) {
    auto v = co_await rx.async_recv();
    if (!v) {
      break;
    }
    ++t.count;
    t.sum += *v;
    t.bits ^= *v;
  }
  t.end = clock::now();
  *out = t;
}

/// Million messages per second.
auto fanin_run(u64 senders, u64 per_sender, std::size_t workers) -> double {
  auto const total = senders * per_sender;
  fanin_tally t;
  std::atomic<bool> failed{false};
  clock::time_point t0;
  {
    spindle::executor ex{workers};
    auto ch = spindle::bounded<u64>(1024);
    auto receiving = ex.spawn(fan_receiver(std::move(ch.second), &t));
    std::vector<spindle::join_handle<void>> sending;
    sending.reserve(senders);
    t0 = clock::now();
    for (u64 s = 0; s < senders; ++s) {
      sending.push_back(ex.spawn(fan_sender(ch.first, s * per_sender + 1, per_sender, &failed)));
    }
    { auto gone = std::move(ch.first); }  // the last sender coroutine to end closes the channel
    receiving.join();
    for (auto& h : sending) {
      h.join();
    }
  }
  u64 expected_bits = 0;
  for (u64 v = 1; v <= total; ++v) {
    expected_bits ^= v;
  }
  if (failed.load() || t.count != total || t.sum != total * (total + 1) / 2 ||
      t.bits != expected_bits) {
    fail("coroutine fan-in: sent " + std::to_string(total) + " messages, received " +
         std::to_string(t.count) + " (sum " + std::to_string(t.sum) + ", expected " +
         std::to_string(total * (total + 1) / 2) + ")");
  }
  return static_cast<double>(total) / seconds_between(t0, t.end) / 1e6;
}

void fanin_scenario(u64 senders, u64 per_sender, std::size_t workers, int runs, bool json) {
  std::vector<measured> m;
  auto const main_row = on_executor("spindle coroutines", workers);
  m.push_back({{main_row, "async_send/async_recv; includes spawning the senders", {}},
               [=] { return fanin_run(senders, per_sender, workers); }});
  auto const live = add_anchors(
      m, "fanin", workers,
      {"--tasks", std::to_string(senders), "--msgs", std::to_string(per_sender), "--capacity",
       "1024"},
      [total = static_cast<double>(senders * per_sender)](anchors::program p,
                                                          std::vector<std::string> const& args) {
        return anchors::rate(p, args, total);
      },
      "as many tasks into one mpsc::channel(1024), a runtime of " + std::to_string(workers) +
          " workers; includes spawning the senders",
      "as many goroutines into one channel of capacity 1024, GOMAXPROCS " +
          std::to_string(workers) + "; includes starting the senders");
  auto rows = interleave(std::move(m), runs);
  if (!live.go) {
    rows.push_back(anchor("Go goroutines", 8.5));
  }
  if (!live.tokio) {
    rows.push_back(anchor("tokio tasks", 3.8));
  }
  std::ostringstream title;
  title << "coro C2 fan-in: " << senders << " coroutines x " << per_sender
        << " messages into one bounded(1024) channel, one receiving coroutine, " << runs << " runs";
  print_table(title.str(), "M msg/s", true, rows, main_row, json);
}

// ---------------------------------------------------------------------------------------------
// Memory per suspended coroutine

auto resident_bytes() -> double {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) {
    fail("cannot open /proc/self/statm");
  }
  unsigned long size = 0;
  unsigned long resident = 0;
  int const got = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (got != 2) {
    fail("cannot read /proc/self/statm");
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

auto heap_in_use() -> double {
  return static_cast<double>(mallinfo2().uordblks);
}

/// Announces itself, then waits in async_send on a full channel until the receiver drains it.
auto stuck_sender(spindle::sender<u64> tx, u64 v, std::atomic<u64>* arrived,
                  std::atomic<bool>* failed) -> spindle::task<void> {
  arrived->fetch_add(1, std::memory_order_relaxed);
  auto sent = co_await tx.async_send(v);
  if (!sent.is_sent()) {
    failed->store(true, std::memory_order_relaxed);
  }
}

struct memory_figures {
  double rss = 0;   // bytes per coroutine
  double heap = 0;  // bytes per coroutine
};

auto memory_run(u64 count) -> memory_figures {
  spindle::executor ex{2};
  ex.spawn([] {}).join();  // the workers are up and have touched their stacks
  auto ch = spindle::bounded<u64>(1);
  if (!ch.first.send(count + 1)) {  // the channel is now full
    fail("memory: the first send failed");
  }
  std::atomic<u64> arrived{0};
  std::atomic<bool> failed{false};
  // Return what earlier runs freed to the system, so that this run's growth is its own. The
  // executor's node pool still holds the nodes of earlier runs (at most 896 KiB per spawning
  // thread), so later runs may count up to about 9 B per coroutine less than the first.
  malloc_trim(0);
  double const rss0 = resident_bytes();
  double const heap0 = heap_in_use();
  for (u64 i = 1; i <= count; ++i) {
    // The handle is dropped at once: the coroutine runs on, detached.
    static_cast<void>(ex.spawn(stuck_sender(ch.first, i, &arrived, &failed)));
  }
  // Every coroutine has started once `arrived` reaches count; the last one or two may still be
  // on their way into the channel's wait list, which allocates nothing.
  while (arrived.load(std::memory_order_relaxed) < count) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  double const rss1 = resident_bytes();
  double const heap1 = heap_in_use();

  // Drain: every suspended sender completes, and the channel closes after the last one.
  { auto gone = std::move(ch.first); }
  u64 received = 0;
  u64 sum = 0;
  while (auto v = ch.second.recv()) {
    ++received;
    sum += *v;
  }
  auto const n = count + 1;
  if (failed.load() || received != n || sum != n * (n + 1) / 2) {
    fail("memory: " + std::to_string(n) + " values sent, " + std::to_string(received) +
         " received");
  }
  auto const per = static_cast<double>(count);
  return {(rss1 - rss0) / per, (heap1 - heap0) / per};
}

void memory_scenario(u64 count, int runs, bool json) {
  row rss{"spindle coroutine: resident set growth",
          "/proc/self/statm; frame + awaiter + spawn node; target <= 512 B",
          {}};
  row heap{"spindle coroutine: heap in use growth", "mallinfo2().uordblks", {}};
  for (int r = 0; r < runs; ++r) {
    auto const f = memory_run(count);
    rss.sample.push_back(f.rss);
    heap.sample.push_back(f.heap);
  }
  if (std::all_of(heap.sample.begin(), heap.sample.end(), [](double v) { return v == 0; })) {
    heap.note = "mallinfo2() reports nothing under this allocator (a sanitizer build)";
  }
  std::vector<row> rows{rss, heap};
  rows.push_back({"Go goroutine initial stack (anchor, not run)",
                  "2 KiB stack per goroutine at start; not measured here",
                  {2048}});
  std::ostringstream title;
  title << "coro memory: " << count << " coroutines suspended in async_send on one full channel, "
        << runs << " runs";
  print_table(title.str(), "B/coroutine", false, rows, rss.name, json);
}

// ---------------------------------------------------------------------------------------------

auto run_coro(std::span<char const* const> args) -> int {
  options const o(args);
  auto const runs = static_cast<int>(o.get_int("runs", 5));
  if (runs < 1) {
    throw std::invalid_argument("--runs must be at least 1");
  }
  bool const json = o.flag("json");
  auto const scenario = o.get_string("scenario", "all");
  auto const rounds = static_cast<u64>(o.get_int("rounds", 1'000'000));
  auto const senders = static_cast<u64>(o.get_int("senders", 10'000));
  auto const per_sender = static_cast<u64>(o.get_int("per-sender", 100));
  auto const suspended = static_cast<u64>(o.get_int("suspended", 100'000));
  auto const workers = static_cast<std::size_t>(o.get_int("workers", 2));
  if (rounds < 1 || senders < 1 || per_sender < 1 || suspended < 1 || workers < 1) {
    throw std::invalid_argument(
        "--rounds, --senders, --per-sender, --suspended and --workers must be >= 1");
  }
  bool const all = scenario == "all";
  if (!all && scenario != "pingpong" && scenario != "fanin" && scenario != "memory") {
    throw std::invalid_argument("unknown --scenario " + scenario +
                                " (pingpong, fanin, memory, all)");
  }
  // Memory first, while the process's heap is still small and unfragmented.
  if (all || scenario == "memory") {
    memory_scenario(suspended, runs, json);
  }
  if (all || scenario == "pingpong") {
    pingpong_scenario(rounds, workers, runs, json);
  }
  if (all || scenario == "fanin") {
    fanin_scenario(senders, per_sender, workers, runs, json);
  }
  return 0;
}

registrar const coro_cmd({"coro",
                          "coroutines over channels: --scenario pingpong|fanin|memory|all "
                          "--runs R [--json] [--rounds N] [--senders S --per-sender M] "
                          "[--suspended K] [--workers W]",
                          run_coro});

}  // namespace
}  // namespace spindle_bench::coro

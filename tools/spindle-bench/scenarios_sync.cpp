// SPDX-License-Identifier: BSL-1.0
// spindle-bench sync: spindle's mutex, semaphore and notify against the standard library's
// (threads) and against tokio::sync and Go (coroutines, tasks, goroutines).
//
//   spindle-bench sync [--scenario uncontended|mutex|semaphore|notify|broadcast|all] [--runs R]
//                      [--json] [--ops N] [--lock-ops N] [--contenders 2,4,8,16]
//                      [--sem-ops N] [--parties W] [--permits P] [--rounds N]
//                      [--msgs N] [--receivers 1,4,16] [--capacity K] [--workers W]
//
// --workers W (default 2) sets the executor of the coroutine rows, the tokio runtime's workers
// and Go's GOMAXPROCS.
//
// The critical section. A step of a linear congruential generator on a shared 64-bit state
// (the same constants in the three languages); the state after n steps does not depend on the
// order the parties took the lock in, so every run checks it against a serial run: an update
// lost to a broken mutual exclusion shows there. Every run also counts its critical sections.
//
// Scenarios:
//   uncontended   one party locks and unlocks --ops times (default 10,000,000), one step of
//                 the generator each time: nanoseconds per lock/unlock pair (lower is better).
//                 Rows: spindle::mutex lock() and try_lock() from a thread, async_lock() from
//                 a coroutine on executor{1}, std::mutex; tokio::sync::Mutex in one task, Go's
//                 sync.Mutex in one goroutine. The target: spindle's lock() no slower
//                 than std::mutex.
//   mutex         for each C of --contenders (default 2, 4, 8, 16), C parties share --lock-ops
//                 lock/unlock pairs (default 1,000,000), each holding the lock for 16 steps of
//                 the generator: million lock hand-offs per second (higher is better). Two
//                 tables per C: C threads (spindle::mutex lock() against std::mutex), and C
//                 coroutines on executor{W} (async_lock()) against C tokio tasks on a runtime
//                 of W workers (tokio::sync::Mutex) and C goroutines at GOMAXPROCS W
//                 (sync.Mutex). The target: spindle's coroutines at least tokio's throughput.
//                 spindle's and tokio's mutexes are fair (FIFO hand-off); std::mutex on glibc
//                 and Go's sync.Mutex let a running party take the lock before a woken waiter.
//   semaphore     --parties W (default 8) share --sem-ops acquire/release pairs (default
//                 1,000,000) of a semaphore of --permits (default 4); each holder counts
//                 itself in and out of a shared counter, and the run checks that no more than
//                 the permits were ever held at once: million acquire/release pairs per second.
//                 Threads: spindle::semaphore acquire() against std::counting_semaphore;
//                 coroutines: async_acquire() against tokio::sync::Semaphore and a Go channel
//                 of capacity P (a send acquires, a receive releases).
//   notify        two parties and two notifications, --rounds round trips (default 200,000):
//                 one writes i into a cell and notifies the other, which checks the cell,
//                 writes -i and notifies back: nanoseconds per round trip (lower is better).
//                 spindle::notify between two coroutines on executor{W} and between two
//                 threads; std::binary_semaphore between two threads; tokio::sync::Notify
//                 between two tasks; Go: a channel of capacity 1 with a non-blocking send
//                 (one stored wake-up, as Notify's).
//   broadcast     for each R of --receivers (default 1, 4, 16), one sender sends --msgs
//                 messages (default 1,000,000) to R receivers: million messages per second.
//                 spindle::broadcast and tokio::sync::broadcast of --capacity (default 1024),
//                 the sender and receivers coroutines (tasks) on W workers; neither sender
//                 waits for a receiver, so the sender takes credits from a semaphore of a
//                 capacity per receiver, a quarter at a time, which the receiver gives back as
//                 it reads (so none lags); Go: a channel of that capacity per receiver.
//
// Anchors run as separate processes, one per run (anchor-rust sync and anchor-go sync,
// bench/anchors; found as anchors.hpp says); where one is not found its rows are left out.
// Rows run interleaved: run r runs every row once, starting at a different row each run.

#include <spindle/broadcast.hpp>
#include <spindle/executor.hpp>
#include <spindle/mutex.hpp>
#include <spindle/notify.hpp>
#include <spindle/semaphore.hpp>
#include <spindle/task.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <semaphore>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "anchors.hpp"
#include "bench_common.hpp"

namespace spindle_bench::sync {
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

/// How an anchor run becomes a figure: the value of a key, or a rate over `secs`.
using anchor_figure = std::function<double(anchors::program, std::vector<std::string> const&)>;

auto by_key(std::string key) -> anchor_figure {
  return [key = std::move(key)](anchors::program p, std::vector<std::string> const& args) {
    return anchors::figure(p, args, key);
  };
}

auto by_rate(u64 count) -> anchor_figure {
  return [count](anchors::program p, std::vector<std::string> const& args) {
    return anchors::rate(p, args, static_cast<double>(count));
  };
}

/// Appends the row of `program sync <workload> <args> --threads workers` where the program is
/// found; `what` is the row's name, `shape` what the note adds to the program's description.
void add_anchor(std::vector<measured>& m, anchors::program p, std::string const& workload,
                std::vector<std::string> const& args, std::size_t workers, anchor_figure figure,
                std::string what, std::string const& shape) {
  if (!anchors::available(p)) {
    return;
  }
  std::vector<std::string> full{"sync", workload};
  full.insert(full.end(), args.begin(), args.end());
  full.insert(full.end(), {"--threads", std::to_string(workers)});
  auto note = anchors::describe(p, p == anchors::program::rust ? "tokio" : "") + "; " + shape;
  m.push_back(
      {{std::move(what), std::move(note), {}},
       [p, full = std::move(full), figure = std::move(figure)] { return figure(p, full); }});
}

// ---------------------------------------------------------------------------------------------
// The critical section

/// One step of the generator: the same constants as anchor-rust's and anchor-go's.
constexpr auto step(u64 x) noexcept -> u64 {
  return x * 6364136223846793005ULL + 1442695040888963407ULL;
}

/// The state after `n` steps from 1: what a correct run ends with.
auto serial(u64 n) -> u64 {
  u64 x = 1;
  for (u64 i = 0; i < n; ++i) {
    x = step(x);
  }
  return x;
}

/// What a lock guards.
struct guarded {
  u64 x = 1;
  u64 count = 0;

  void enter(int steps) noexcept {
    for (int s = 0; s < steps; ++s) {
      x = step(x);
    }
    ++count;
  }
};

void check_guarded(guarded const& g, u64 ops, int steps, std::string const& who) {
  if (g.count != ops || g.x != serial(ops * static_cast<u64>(steps))) {
    fail(who + ": " + std::to_string(g.count) + " of " + std::to_string(ops) +
         " critical sections, or an update lost (mutual exclusion broken)");
  }
}

/// How many of `ops` party `t` of `parties` does.
auto share(u64 ops, u64 parties, u64 t) -> u64 {
  return ops / parties + (t < ops % parties ? 1 : 0);
}

/// Runs `body(t)` on `parties` threads that start together; seconds from the gate to the last
/// one's end. The clock is read before the gate opens (every thread is waiting at it by then),
/// so a measuring thread descheduled at the wrong moment cannot start the clock after the
/// work.
template <class Body>
auto on_threads(u64 parties, Body body) -> double {
  std::latch ready(static_cast<std::ptrdiff_t>(parties));
  std::latch gate(1);
  std::vector<std::thread> threads;
  threads.reserve(parties);
  for (u64 t = 0; t < parties; ++t) {
    threads.emplace_back([&ready, &gate, &body, t] {
      ready.count_down();
      gate.wait();
      body(t);
    });
  }
  ready.wait();
  auto const t0 = clock::now();
  gate.count_down();
  for (auto& th : threads) {
    th.join();
  }
  return seconds_between(t0, clock::now());
}

/// Spawns `make(t)` for t < parties on an executor of `workers` and joins them; seconds from
/// the first spawn to the last join (the executor is up before).
template <class Make>
auto on_coroutines(std::size_t workers, u64 parties, Make make) -> double {
  spindle::executor ex{workers};
  ex.spawn([] {}).join();  // the workers are up
  auto const t0 = clock::now();
  std::vector<spindle::join_handle<void>> handles;
  handles.reserve(parties);
  for (u64 t = 0; t < parties; ++t) {
    handles.push_back(ex.spawn(make(t)));
  }
  for (auto& h : handles) {
    h.join();
  }
  return seconds_between(t0, clock::now());
}

// ---------------------------------------------------------------------------------------------
// Uncontended

/// Nanoseconds per lock/unlock of one thread, `lock_one(g)` locking, stepping and unlocking.
template <class LockOne>
auto uncontended_thread(u64 ops, std::string const& who, LockOne lock_one) -> double {
  guarded g;
  auto const t0 = clock::now();
  for (u64 i = 0; i < ops; ++i) {
    lock_one(g);
  }
  auto const secs = seconds_between(t0, clock::now());
  check_guarded(g, ops, 1, who);
  return secs * 1e9 / static_cast<double>(ops);
}

auto uncontended_coroutine(spindle::mutex& m, guarded& g, u64 ops, double& secs)
    -> spindle::task<void> {
  auto const t0 = clock::now();
  for (u64 i = 0; i < ops; ++i) {
    auto lock = co_await m.async_lock();
    g.enter(1);
  }
  secs = seconds_between(t0, clock::now());
}

void uncontended_scenario(u64 ops, std::size_t workers, int runs, bool json) {
  std::vector<measured> m;
  std::string const main_row = "spindle::mutex lock()";
  m.push_back({{main_row, "a thread; one compare-and-swap to lock, one to unlock", {}}, [ops] {
                 spindle::mutex mu;
                 return uncontended_thread(ops, "spindle::mutex lock()", [&mu](guarded& g) {
                   auto lock = mu.lock();
                   g.enter(1);
                 });
               }});
  m.push_back({{"spindle::mutex try_lock()", "a thread", {}}, [ops] {
                 spindle::mutex mu;
                 return uncontended_thread(ops, "spindle::mutex try_lock()", [&mu](guarded& g) {
                   if (auto lock = mu.try_lock()) {
                     g.enter(1);
                   }
                 });
               }});
  m.push_back({{"spindle::mutex co_await async_lock()", "a coroutine on executor{1}", {}}, [ops] {
                 spindle::mutex mu;
                 guarded g;
                 double secs = 0;
                 {
                   spindle::executor ex{1};
                   ex.spawn(uncontended_coroutine(mu, g, ops, secs)).join();
                 }
                 check_guarded(g, ops, 1, "spindle::mutex async_lock()");
                 return secs * 1e9 / static_cast<double>(ops);
               }});
  m.push_back({{"std::mutex", "a thread; std::lock_guard", {}}, [ops] {
                 std::mutex mu;
                 return uncontended_thread(ops, "std::mutex", [&mu](guarded& g) {
                   std::lock_guard lock(mu);
                   g.enter(1);
                 });
               }});
  std::vector<std::string> const args{"--ops", std::to_string(ops)};
  add_anchor(m, anchors::program::rust, "uncontended", args, workers, by_key("ns_per_op"),
             "tokio::sync::Mutex", "lock().await in one task");
  add_anchor(m, anchors::program::go, "uncontended", args, workers, by_key("ns_per_op"),
             "Go sync.Mutex", "Lock/Unlock in one goroutine");
  auto rows = interleave(std::move(m), runs);
  std::ostringstream title;
  title << "sync uncontended: " << ops << " lock/unlock pairs by one party, " << runs
        << " interleaved runs";
  print_table(title.str(), "ns/lock+unlock", false, rows, main_row, json);
}

// ---------------------------------------------------------------------------------------------
// Contended mutex

constexpr int contended_steps = 16;

auto contender(spindle::mutex& m, guarded& g, u64 mine) -> spindle::task<void> {
  for (u64 i = 0; i < mine; ++i) {
    auto lock = co_await m.async_lock();
    g.enter(contended_steps);
  }
}

void mutex_scenario(u64 ops, u64 parties, std::size_t workers, int runs, bool json) {
  auto const count = static_cast<double>(ops);
  std::string const c = std::to_string(parties);

  // Threads.
  {
    std::vector<measured> m;
    std::string const main_row = "spindle::mutex lock(), " + c + " threads";
    m.push_back({{main_row, "fair: FIFO hand-off", {}}, [=] {
                   spindle::mutex mu;
                   guarded g;
                   auto const secs = on_threads(parties, [&](u64 t) {
                     for (u64 i = share(ops, parties, t); i > 0; --i) {
                       auto lock = mu.lock();
                       g.enter(contended_steps);
                     }
                   });
                   check_guarded(g, ops, contended_steps, main_row);
                   return count / secs / 1e6;
                 }});
    m.push_back(
        {{"std::mutex, " + c + " threads", "glibc: not FIFO, a running thread may barge", {}}, [=] {
           std::mutex mu;
           guarded g;
           auto const secs = on_threads(parties, [&](u64 t) {
             for (u64 i = share(ops, parties, t); i > 0; --i) {
               std::lock_guard lock(mu);
               g.enter(contended_steps);
             }
           });
           check_guarded(g, ops, contended_steps, "std::mutex");
           return count / secs / 1e6;
         }});
    auto rows = interleave(std::move(m), runs);
    std::ostringstream title;
    title << "sync mutex, threads: " << c << " threads share " << ops
          << " lock/unlock pairs (16 generator steps held), " << runs << " interleaved runs";
    print_table(title.str(), "M locks/s", true, rows, main_row, json);
  }

  // Coroutines, tasks, goroutines.
  {
    std::vector<measured> m;
    std::string const w = std::to_string(workers);
    std::string const main_row = "spindle::mutex async_lock(), " + c + " coroutines";
    m.push_back(
        {{main_row, "executor{" + w + "}; fair: FIFO hand-off; includes spawning", {}}, [=] {
           spindle::mutex mu;
           guarded g;
           auto const secs = on_coroutines(
               workers, parties, [&](u64 t) { return contender(mu, g, share(ops, parties, t)); });
           check_guarded(g, ops, contended_steps, main_row);
           return count / secs / 1e6;
         }});
    std::vector<std::string> const args{"--tasks", c, "--ops", std::to_string(ops)};
    add_anchor(m, anchors::program::rust, "mutex", args, workers, by_rate(ops),
               "tokio::sync::Mutex, " + c + " tasks",
               "a runtime of " + w + " workers; fair: FIFO hand-off; includes spawning");
    add_anchor(m, anchors::program::go, "mutex", args, workers, by_rate(ops),
               "Go sync.Mutex, " + c + " goroutines",
               "GOMAXPROCS " + w + "; not FIFO (barging, starvation mode after 1 ms)");
    auto rows = interleave(std::move(m), runs);
    std::ostringstream title;
    title << "sync mutex, coroutines: " << c << " coroutines share " << ops
          << " lock/unlock pairs (16 generator steps held), " << runs << " interleaved runs";
    print_table(title.str(), "M locks/s", true, rows, main_row, json);
  }
}

// ---------------------------------------------------------------------------------------------
// Semaphore

/// Counts the holders of a permit; remembers the most at once.
struct holders {
  std::atomic<u64> now{0};
  std::atomic<u64> most{0};
  std::atomic<u64> done{0};

  void hold() noexcept {
    auto const n = now.fetch_add(1, std::memory_order_relaxed) + 1;
    auto m = most.load(std::memory_order_relaxed);
    while (n > m && !most.compare_exchange_weak(m, n, std::memory_order_relaxed)) {
    }
    now.fetch_sub(1, std::memory_order_relaxed);
    done.fetch_add(1, std::memory_order_relaxed);
  }

  void check(u64 ops, u64 permits, std::string const& who) const {
    if (done.load() != ops || most.load() > permits) {
      fail(who + ": " + std::to_string(done.load()) + " of " + std::to_string(ops) +
           " acquisitions, " + std::to_string(most.load()) + " permits held at once of " +
           std::to_string(permits));
    }
  }
};

auto acquirer(spindle::semaphore& sem, holders& h, u64 mine) -> spindle::task<void> {
  for (u64 i = 0; i < mine; ++i) {
    auto permit = co_await sem.async_acquire();
    h.hold();
  }
}

void semaphore_scenario(u64 ops, u64 parties, u64 permits, std::size_t workers, int runs,
                        bool json) {
  auto const count = static_cast<double>(ops);
  std::string const c = std::to_string(parties);
  std::string const p = std::to_string(permits);
  {
    std::vector<measured> m;
    std::string const main_row = "spindle::semaphore acquire(), " + c + " threads";
    m.push_back({{main_row, "fair; the permit returns with its guard", {}}, [=] {
                   spindle::semaphore sem(permits);
                   holders h;
                   auto const secs = on_threads(parties, [&](u64 t) {
                     for (u64 i = share(ops, parties, t); i > 0; --i) {
                       auto permit = sem.acquire();
                       h.hold();
                     }
                   });
                   h.check(ops, permits, main_row);
                   return count / secs / 1e6;
                 }});
    m.push_back({{"std::counting_semaphore, " + c + " threads", "acquire(), release()", {}}, [=] {
                   std::counting_semaphore<> sem(static_cast<std::ptrdiff_t>(permits));
                   holders h;
                   auto const secs = on_threads(parties, [&](u64 t) {
                     for (u64 i = share(ops, parties, t); i > 0; --i) {
                       sem.acquire();
                       h.hold();
                       sem.release();
                     }
                   });
                   h.check(ops, permits, "std::counting_semaphore");
                   return count / secs / 1e6;
                 }});
    auto rows = interleave(std::move(m), runs);
    std::ostringstream title;
    title << "sync semaphore, threads: " << c << " threads share " << ops
          << " acquire/release pairs of " << p << " permits, " << runs << " interleaved runs";
    print_table(title.str(), "M acquires/s", true, rows, main_row, json);
  }
  {
    std::vector<measured> m;
    std::string const w = std::to_string(workers);
    std::string const main_row = "spindle::semaphore async_acquire(), " + c + " coroutines";
    m.push_back({{main_row, "executor{" + w + "}; fair; includes spawning", {}}, [=] {
                   spindle::semaphore sem(permits);
                   holders h;
                   auto const secs = on_coroutines(workers, parties, [&](u64 t) {
                     return acquirer(sem, h, share(ops, parties, t));
                   });
                   h.check(ops, permits, main_row);
                   return count / secs / 1e6;
                 }});
    std::vector<std::string> const args{"--tasks", c, "--permits", p, "--ops", std::to_string(ops)};
    add_anchor(m, anchors::program::rust, "semaphore", args, workers, by_rate(ops),
               "tokio::sync::Semaphore, " + c + " tasks",
               "a runtime of " + w + " workers; fair; includes spawning");
    add_anchor(m, anchors::program::go, "semaphore", args, workers, by_rate(ops),
               "Go chan struct{} of " + p + ", " + c + " goroutines",
               "GOMAXPROCS " + w + "; a send acquires, a receive releases");
    auto rows = interleave(std::move(m), runs);
    std::ostringstream title;
    title << "sync semaphore, coroutines: " << c << " coroutines share " << ops
          << " acquire/release pairs of " << p << " permits, " << runs << " interleaved runs";
    print_table(title.str(), "M acquires/s", true, rows, main_row, json);
  }
}

// ---------------------------------------------------------------------------------------------
// Notify ping-pong

/// The cell the two sides pass; its ordering comes from the notification (relaxed here).
struct notify_result {
  std::atomic<u64> cell{0};
  bool wrong = false;
  u64 echoed = 0;
  double secs = 0;
};

void check_notify(notify_result const& r, u64 rounds, std::string const& who) {
  if (r.wrong || r.echoed != rounds) {
    fail(who + ": a round trip saw the wrong value (echoed " + std::to_string(r.echoed) + " of " +
         std::to_string(rounds) + ")");
  }
}

auto notify_ping(spindle::notify& there, spindle::notify& back, notify_result& r, u64 rounds)
    -> spindle::task<void> {
  auto const t0 = clock::now();
  for (u64 i = 1; i <= rounds; ++i) {
    r.cell.store(i, std::memory_order_relaxed);
    there.notify_one();
    co_await back.async_wait();
    if (r.cell.load(std::memory_order_relaxed) != u64{0} - i) {
      r.wrong = true;
    }
  }
  r.secs = seconds_between(t0, clock::now());
}

auto notify_pong(spindle::notify& there, spindle::notify& back, notify_result& r, u64 rounds)
    -> spindle::task<void> {
  for (u64 i = 1; i <= rounds; ++i) {
    co_await there.async_wait();
    if (r.cell.load(std::memory_order_relaxed) == i) {
      ++r.echoed;
    }
    r.cell.store(u64{0} - i, std::memory_order_relaxed);
    back.notify_one();
  }
}

/// Two threads; `wait(k)` and `signal(k)` act on notification k (0: there, 1: back).
template <class Wait, class Signal>
auto notify_threads(u64 rounds, std::string const& who, Wait wait, Signal signal) -> double {
  notify_result r;
  std::thread pong([&] {
    for (u64 i = 1; i <= rounds; ++i) {
      wait(0);
      if (r.cell.load(std::memory_order_relaxed) == i) {
        ++r.echoed;
      }
      r.cell.store(u64{0} - i, std::memory_order_relaxed);
      signal(1);
    }
  });
  auto const t0 = clock::now();
  for (u64 i = 1; i <= rounds; ++i) {
    r.cell.store(i, std::memory_order_relaxed);
    signal(0);
    wait(1);
    if (r.cell.load(std::memory_order_relaxed) != u64{0} - i) {
      r.wrong = true;
    }
  }
  r.secs = seconds_between(t0, clock::now());
  pong.join();
  check_notify(r, rounds, who);
  return r.secs * 1e9 / static_cast<double>(rounds);
}

void notify_scenario(u64 rounds, std::size_t workers, int runs, bool json) {
  std::vector<measured> m;
  std::string const w = std::to_string(workers);
  std::string const main_row = "spindle::notify, coroutines";
  m.push_back({{main_row, "async_wait/notify_one, executor{" + w + "}", {}}, [=] {
                 spindle::notify there;
                 spindle::notify back;
                 notify_result r;
                 {
                   spindle::executor ex{workers};
                   auto b = ex.spawn(notify_pong(there, back, r, rounds));
                   auto a = ex.spawn(notify_ping(there, back, r, rounds));
                   a.join();
                   b.join();
                 }
                 check_notify(r, rounds, main_row);
                 return r.secs * 1e9 / static_cast<double>(rounds);
               }});
  m.push_back({{"spindle::notify, threads", "wait/notify_one", {}}, [=] {
                 std::array<spindle::notify, 2> n;
                 return notify_threads(
                     rounds, "spindle::notify threads", [&n](int k) { n[k].wait(); },
                     [&n](int k) { n[k].notify_one(); });
               }});
  m.push_back({{"std::binary_semaphore, threads", "baseline: acquire/release", {}}, [=] {
                 std::binary_semaphore a(0);
                 std::binary_semaphore b(0);
                 return notify_threads(
                     rounds, "std::binary_semaphore", [&](int k) { (k == 0 ? a : b).acquire(); },
                     [&](int k) { (k == 0 ? a : b).release(); });
               }});
  std::vector<std::string> const args{"--rounds", std::to_string(rounds)};
  add_anchor(m, anchors::program::rust, "notify", args, workers, by_key("ns_per_rtt"),
             "tokio::sync::Notify, tasks",
             "notified().await/notify_one, a runtime of " + w + " workers");
  add_anchor(m, anchors::program::go, "notify", args, workers, by_key("ns_per_rtt"),
             "Go chan struct{} of 1, goroutines",
             "a non-blocking send stores one wake-up; GOMAXPROCS " + w);
  auto rows = interleave(std::move(m), runs);
  std::ostringstream title;
  title << "sync notify ping-pong: " << rounds << " round trips over two notifications, " << runs
        << " interleaved runs";
  print_table(title.str(), "ns/round trip", false, rows, main_row, json);
}

// ---------------------------------------------------------------------------------------------
// Broadcast fan-out

/// One receiving coroutine: checks it reads 1..msgs in order, none lagged, and gives its
/// sender `batch` credits back each time it has read `batch` messages.
auto bcast_receiver(spindle::broadcast_receiver<u64> rx, spindle::semaphore& credits, u64 batch,
                    u64 msgs, std::atomic<bool>& wrong) -> spindle::task<void> {
  u64 last = 0;
  for (;;) {
    auto got = co_await rx.async_recv();
    if (got.is_closed()) {
      break;
    }
    if (!got.is_received() || *got.value != last + 1) {
      wrong.store(true, std::memory_order_relaxed);
      break;
    }
    last = *got.value;
    if (last % batch == 0) {
      credits.release(batch);
    }
  }
  if (last != msgs) {
    wrong.store(true, std::memory_order_relaxed);
  }
}

/// The sending coroutine: before each batch of messages it takes that many credits from every
/// receiver's semaphore, so that no receiver falls a capacity behind; closes at the end.
auto bcast_sender(spindle::broadcast_sender<u64> tx,
                  std::vector<std::unique_ptr<spindle::semaphore>>& credits, u64 batch, u64 msgs,
                  std::atomic<bool>& wrong) -> spindle::task<void> {
  for (u64 i = 1; i <= msgs; ++i) {
    if ((i - 1) % batch == 0) {
      auto const n = std::min(batch, msgs - i + 1);
      for (auto& c : credits) {
        auto taken = co_await c->async_acquire(n);
        static_cast<void>(taken.forget());
      }
    }
    auto sent = tx.send(i);
    if (!sent.is_sent()) {
      wrong.store(true, std::memory_order_relaxed);
    }
  }
  tx.close();
}

/// spindle::broadcast, the sender and the receivers coroutines on executor{workers}: million
/// messages sent per second.
auto broadcast_spindle(u64 msgs, u64 receivers, u64 capacity, std::size_t workers) -> double {
  auto const batch = std::max<u64>(capacity / 4, 1);
  std::vector<std::unique_ptr<spindle::semaphore>> credits;
  std::vector<spindle::broadcast_receiver<u64>> rxs;
  auto made = spindle::broadcast<u64>(capacity);
  auto tx = std::move(made.first);
  for (u64 r = 0; r < receivers; ++r) {
    credits.push_back(std::make_unique<spindle::semaphore>(capacity));
    rxs.push_back(r == 0 ? std::move(made.second) : tx.subscribe());
  }
  std::atomic<bool> wrong{false};
  auto const secs = on_coroutines(workers, receivers + 1, [&](u64 t) {
    if (t == receivers) {
      return bcast_sender(std::move(tx), credits, batch, msgs, wrong);
    }
    return bcast_receiver(std::move(rxs[t]), *credits[t], batch, msgs, wrong);
  });
  if (wrong.load()) {
    fail("spindle::broadcast: a receiver lost, lagged or reordered a message");
  }
  return static_cast<double>(msgs) / secs / 1e6;
}

void broadcast_scenario(u64 msgs, u64 receivers, u64 capacity, std::size_t workers, int runs,
                        bool json) {
  std::vector<measured> m;
  std::string const w = std::to_string(workers);
  std::string const r = std::to_string(receivers);
  std::string const k = std::to_string(capacity);
  std::string const main_row = "spindle::broadcast, " + r + " receivers";
  m.push_back({{main_row,
                "coroutines on executor{" + w + "}; flow control by a spindle::semaphore of " + k +
                    " credits per receiver (none lags)",
                {}},
               [=] { return broadcast_spindle(msgs, receivers, capacity, workers); }});
  std::vector<std::string> const args{"--receivers", r, "--msgs", std::to_string(msgs),
                                      "--capacity",  k};
  add_anchor(m, anchors::program::rust, "broadcast", args, workers, by_rate(msgs),
             "tokio::sync::broadcast, " + r + " receivers",
             "channel(" + k + "), flow control by a Semaphore of " + k +
                 " credits per receiver (none lags); a runtime of " + w + " workers");
  add_anchor(m, anchors::program::go, "broadcast", args, workers, by_rate(msgs),
             "Go chan per receiver, " + r + " receivers",
             "capacity " + k + " each, blocking sends in turn; GOMAXPROCS " + w);
  auto rows = interleave(std::move(m), runs);
  std::ostringstream title;
  title << "sync broadcast fan-out: " << msgs << " messages to " << r << " receivers each, " << runs
        << " interleaved runs";
  print_table(title.str(), "M msg/s", true, rows, main_row, json);
}

// ---------------------------------------------------------------------------------------------

/// "2,4,8" -> {2, 4, 8}; each at least 1.
auto counts(std::string const& list, std::string const& key) -> std::vector<u64> {
  std::vector<u64> out;
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    std::size_t used = 0;
    unsigned long long v = 0;
    try {
      v = std::stoull(item, &used);
    } catch (std::exception const&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || v < 1) {
      throw std::invalid_argument("--" + key + " takes a comma-separated list of counts >= 1");
    }
    out.push_back(v);
  }
  if (out.empty()) {
    throw std::invalid_argument("--" + key + " is empty");
  }
  return out;
}

auto run_sync(std::span<char const* const> args) -> int {
  options const o(args);
  auto const runs = static_cast<int>(o.get_int("runs", 5));
  bool const json = o.flag("json");
  auto const scenario = o.get_string("scenario", "all");
  auto const ops = static_cast<u64>(o.get_int("ops", 10'000'000));
  auto const lock_ops = static_cast<u64>(o.get_int("lock-ops", 1'000'000));
  auto const contenders = counts(o.get_string("contenders", "2,4,8,16"), "contenders");
  auto const sem_ops = static_cast<u64>(o.get_int("sem-ops", 1'000'000));
  auto const parties = static_cast<u64>(o.get_int("parties", 8));
  auto const permits = static_cast<u64>(o.get_int("permits", 4));
  auto const rounds = static_cast<u64>(o.get_int("rounds", 200'000));
  auto const msgs = static_cast<u64>(o.get_int("msgs", 1'000'000));
  auto const receivers = counts(o.get_string("receivers", "1,4,16"), "receivers");
  auto const capacity = static_cast<u64>(o.get_int("capacity", 1024));
  auto const workers = static_cast<std::size_t>(o.get_int("workers", 2));
  if (runs < 1 || ops < 1 || lock_ops < 1 || sem_ops < 1 || parties < 1 || permits < 1 ||
      rounds < 1 || msgs < 1 || capacity < 1 || workers < 1) {
    throw std::invalid_argument(
        "--runs, --ops, --lock-ops, --sem-ops, --parties, --permits, --rounds, --msgs, "
        "--capacity and --workers must be >= 1");
  }
  bool const all = scenario == "all";
  if (!all && scenario != "uncontended" && scenario != "mutex" && scenario != "semaphore" &&
      scenario != "notify" && scenario != "broadcast") {
    throw std::invalid_argument("unknown --scenario " + scenario +
                                " (uncontended, mutex, semaphore, notify, broadcast, all)");
  }
  if (all || scenario == "uncontended") {
    uncontended_scenario(ops, workers, runs, json);
  }
  if (all || scenario == "mutex") {
    for (auto const c : contenders) {
      mutex_scenario(lock_ops, c, workers, runs, json);
    }
  }
  if (all || scenario == "semaphore") {
    semaphore_scenario(sem_ops, parties, permits, workers, runs, json);
  }
  if (all || scenario == "notify") {
    notify_scenario(rounds, workers, runs, json);
  }
  if (all || scenario == "broadcast") {
    for (auto const r : receivers) {
      broadcast_scenario(msgs, r, capacity, workers, runs, json);
    }
  }
  return 0;
}

registrar const sync_cmd(
    {"sync",
     "mutex, semaphore, notify (and the broadcast anchors) against std, tokio and Go: "
     "--scenario uncontended|mutex|semaphore|notify|broadcast|all --runs R [--json] [--ops N] "
     "[--lock-ops N] [--contenders 2,4,8,16] [--sem-ops N] [--parties W] [--permits P] "
     "[--rounds N] [--msgs N] [--receivers 1,4,16] [--capacity K] [--workers W]",
     run_sync});

}  // namespace
}  // namespace spindle_bench::sync

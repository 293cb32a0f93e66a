// spindle-bench channel: MPMC channel scenarios, spindle and its peers side by side.
//
//   spindle-bench channel [--scenario seed|spsc|2p2c|pingpong|idle|all] [--runs R] [--json]
//                         [--producers P --consumers C --messages N --capacity K]
//                         [--only NAME[,NAME...]] [--idle-ms MS]
//   spindle-bench channel-idle [--runs R] [--idle-ms MS] [--only NAME] [--json]
//
// Throughput scenarios (seed, spsc, 2p2c, or a custom one given by --producers/--consumers/
// --messages/--capacity): P producers each send N u64 messages through one queue of capacity
// K to C consumers. Threads wait on a start gate; the time runs from the release of the gate
// to the moment the last consumer has seen the end of the stream. Result: million messages
// per second (higher is better). A second table gives, from the same runs, the CPU time all
// producer and consumer threads used per message (CLOCK_THREAD_CPUTIME_ID from the gate to each
// thread's end, summed over the threads, divided by the messages; lower is better). While
// every thread is busy it says what the throughput says; where threads wait it tells the work
// of a message from the waiting, and it shows what a spinning peer burns while it waits.
//
// Ping-pong: two queues of capacity 1 (or the peer's smallest); one thread sends i on the
// first and waits for it on the second, an echo thread sends back what it receives. Result:
// nanoseconds per round trip (lower is better).
//
// Idle: a consumer waits in its blocking (or spinning) receive on an empty queue for
// --idle-ms; it measures its own CPU time (CLOCK_THREAD_CPUTIME_ID) around the receive.
// Result: microseconds of CPU burnt while idle (lower is better).
//
// spindle's rows: bounded(K), bounded_lanes (one lane per producer, each producer with its own
// copy of the sender, the capacity K split over the lanes so that the channel holds K in all;
// channel_peers.hpp), unbounded, and bounded_spsc where there is one producer and one
// consumer. The lanes row is left out where the workload has one producer and one consumer
// (one lane: the bounded ring behind a scan) and of the ping-pong, for the same reason; the
// idle scenario keeps it (its receiver waits on every lane at once).
//
// Every implementation runs the same workload, interleaved: run r runs every implementation
// once, starting at a different one each run, so that a slow phase of a shared machine does
// not land on one row. The table shows median, min and max over the runs and spindle's
// advantage over each row.
//
// Anchors. Where bench/anchors built them (or SPINDLE_ANCHORS_DIR holds them; anchors.hpp),
// crossbeam-channel (anchor-rust, --only crossbeam) and Go channels (anchor-go, --only go) run
// the throughput and ping-pong scenarios in the same interleaving, a process of their own per
// run that checks its own messages the same way. They report no CPU time and have no idle
// scenario, so they have no rows in those tables.
//
// Exactly once. A message is (producer << 32) | sequence, sequences counting from 1. Each
// consumer counts, sums and xors what it receives per producer and, for queues that keep
// per-producer FIFO order (all but moodycamel and atomic_queue), checks that each producer's
// sequence rises strictly. The run fails loudly (exit status 2, no figure) unless every producer's
// count, sum and xor match what it sent. The checksum idea follows atomic_queue's throughput
// benchmark (max0x7ba/atomic_queue: src/benchmarks.cc), which caught a lost message in a peer
// (cameron314/concurrentqueue#157).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <functional>
#include <latch>
#include <limits>
#include <memory>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "anchors.hpp"
#include "bench_common.hpp"
#include "channel_peers.hpp"
#include "channel_scenarios.hpp"

namespace spindle_bench::channel {
namespace {

struct workload {
  int producers = 4;
  int consumers = 2;
  u64 messages = 1'000'000;  // per producer
  std::size_t capacity = 1024;
};

void verify(std::string_view impl, workload const& w, std::vector<tally> const& tallies) {
  channel::verify(impl, w.producers, w.messages, tallies);
}

auto seconds_since(clock::time_point t0, clock::time_point t1) -> double {
  return std::chrono::duration<double>(t1 - t0).count();
}

/// What one throughput run measured.
struct throughput_sample {
  double msgs_per_s = 0;      // million messages per second
  double cpu_ns_per_msg = 0;  // CPU of every producer and consumer thread, per message
};

/// P producers, C consumers, N messages each.
template <class Q>
auto run_throughput(workload const& w) -> throughput_sample {
  auto const total = static_cast<u64>(w.producers) * w.messages;
  auto q = make_queue<Q>(w.capacity, total, w.producers);
  auto const threads = static_cast<std::ptrdiff_t>(w.producers + w.consumers);
  std::latch ready(threads);
  std::latch go(1);
  std::vector<tally> tallies(static_cast<std::size_t>(w.consumers), tally(w.producers));
  std::vector<clock::time_point> finished(static_cast<std::size_t>(w.consumers));
  // One entry per thread, each written once by its own thread: its CPU time from the gate on.
  std::vector<std::chrono::nanoseconds> cpu(static_cast<std::size_t>(threads));
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));

  for (int c = 0; c < w.consumers; ++c) {
    pool.emplace_back([&, c, rx = q->make_consumer()]() mutable {
      // Allocated by this thread and written back once: no line shared with another consumer.
      tally t(w.producers);
      ready.count_down();
      go.wait();
      auto const c0 = thread_cpu_now();
      u64 v = 0;
      while (rx.pop(v)) {
        t.see(v, Q::fifo);
      }
      finished[static_cast<std::size_t>(c)] = clock::now();
      cpu[static_cast<std::size_t>(c)] = thread_cpu_now() - c0;
      tallies[static_cast<std::size_t>(c)] = std::move(t);
    });
  }
  for (int p = 0; p < w.producers; ++p) {
    pool.emplace_back([&, p, handle = q->make_producer()]() mutable {
      auto tx = std::move(handle);  // destroyed at the end of this thread's work: "done"
      ready.count_down();
      go.wait();
      auto const c0 = thread_cpu_now();
      auto const id = static_cast<u64>(p);
      for (u64 s = 1; s <= w.messages; ++s) {
        tx.push(encode(id, s));
      }
      cpu[static_cast<std::size_t>(w.consumers + p)] = thread_cpu_now() - c0;
    });
  }
  q->seal();
  ready.wait();
  auto const t0 = clock::now();
  go.count_down();
  for (auto& t : pool) {
    t.join();
  }
  verify(Q::name, w, tallies);
  auto const t1 = *std::max_element(finished.begin(), finished.end());
  std::chrono::nanoseconds used{0};
  for (auto const c : cpu) {
    used += c;
  }
  return {static_cast<double>(total) / seconds_since(t0, t1) / 1e6,
          static_cast<double>(used.count()) / static_cast<double>(total)};
}

/// Round trips through two queues; returns nanoseconds per round trip.
template <class Q>
auto run_pingpong(u64 rounds) -> double {
  auto const there_queue = make_queue<Q>(1, rounds, 1);
  auto const back_queue = make_queue<Q>(1, rounds, 1);
  auto& there = *there_queue;
  auto& back = *back_queue;
  std::latch ready(2);
  std::latch go(1);
  clock::time_point finished;
  bool echoed_wrong = false;
  u64 echoed = 0;

  std::thread echo([&, rx = there.make_consumer(), handle = back.make_producer()]() mutable {
    auto tx = std::move(handle);
    ready.count_down();
    go.wait();
    u64 v = 0;
    while (rx.pop(v)) {
      tx.push(v);
      ++echoed;
    }
  });
  std::thread ping([&, rx = back.make_consumer(), handle = there.make_producer()]() mutable {
    {
      auto tx = std::move(handle);
      ready.count_down();
      go.wait();
      for (u64 i = 1; i <= rounds; ++i) {
        tx.push(i);
        u64 v = 0;
        if (!rx.pop(v) || v != i) {
          echoed_wrong = true;
          break;
        }
      }
      finished = clock::now();
    }
  });
  there.seal();
  back.seal();
  ready.wait();
  auto const t0 = clock::now();
  go.count_down();
  ping.join();
  echo.join();
  if (echoed_wrong || echoed != rounds) {
    fail(std::string(Q::name) + ": ping-pong lost, duplicated or reordered a message");
  }
  return seconds_since(t0, finished) * 1e9 / static_cast<double>(rounds);
}

template <class Q>
auto run_idle(std::chrono::milliseconds idle) -> double {
  auto const queue = make_queue<Q>(1, 1, 1);
  auto& q = *queue;
  std::latch ready(1);
  std::chrono::nanoseconds used{};
  u64 got = 0;
  auto tx = q.make_producer();
  std::thread waiter([&, rx = q.make_consumer()]() mutable {
    ready.count_down();
    auto const c0 = thread_cpu_now();
    if (!rx.pop(got)) {
      got = 0;
    }
    used = thread_cpu_now() - c0;
  });
  q.seal();
  ready.wait();
  std::this_thread::sleep_for(idle);
  tx.push(42);
  waiter.join();
  if (got != 42) {
    fail(std::string(Q::name) + ": the idle receiver did not get the message");
  }
  return std::chrono::duration<double, std::micro>(used).count();
}

struct impl {
  std::string key;
  std::string name;
  std::function<std::string(std::size_t)> note;
  std::function<throughput_sample(workload const&)> throughput;
  std::function<double(u64)> pingpong;
  std::function<double(std::chrono::milliseconds)> idle;
  bool spsc_only = false;  // a queue for one producer and one consumer only
  // Listed only where some side has more than one thread (several_producers in
  // channel_peers.hpp); no ping-pong.
  bool several_producers = false;
};

template <class Q>
auto make_impl() -> impl {
  constexpr bool several = several_producers<Q>();
  return {std::string(Q::key),
          std::string(Q::name),
          &Q::note,
          &run_throughput<Q>,
          several ? std::function<double(u64)>() : &run_pingpong<Q>,
          &run_idle<Q>,
          single_producer_single_consumer<Q>(),
          several};
}

/// The implementations that fit a workload of `producers` and `consumers` threads.
auto fitting(std::vector<impl> impls, int producers, int consumers) -> std::vector<impl> {
  if (producers == 1 && consumers == 1) {
    std::erase_if(impls, [](impl const& i) { return i.several_producers; });
    return impls;
  }
  std::erase_if(impls, [](impl const& i) { return i.spsc_only; });
  return impls;
}

/// The Rust and Go anchors (anchors.hpp) where they are found: `anchor-rust chan`
/// (crossbeam-channel) and `anchor-go chan` (Go channels), a process of their own for every run.
/// They take the messages in all where the workload counts them per producer, report no CPU
/// time (so they have no row in the CPU table) and have no idle scenario.
auto anchor_impls() -> std::vector<impl> {
  std::vector<impl> v;
  // `queue` names the channel up to its capacity: "bounded(" for bounded(K).
  auto add = [&v](anchors::program p, std::string key, std::string name, std::string about,
                  std::string queue) {
    if (!anchors::available(p)) {
      return;
    }
    auto note = [about, queue](std::size_t capacity) {
      return about + "; " + queue + std::to_string(capacity) + ")" +
             (capacity == 0 ? ", rendezvous" : "") +
             ", blocking send/recv; close by the last producer";
    };
    auto throughput = [p](workload const& w) -> throughput_sample {
      auto const total = static_cast<u64>(w.producers) * w.messages;
      return {anchors::rate(p,
                            {"chan", "mpmc", "--producers", std::to_string(w.producers),
                             "--consumers", std::to_string(w.consumers), "--messages",
                             std::to_string(total), "--capacity", std::to_string(w.capacity)},
                            static_cast<double>(total)),
              std::numeric_limits<double>::quiet_NaN()};
    };
    auto pingpong = [p](u64 rounds) {
      return anchors::figure(p, {"chan", "pingpong", "--rounds", std::to_string(rounds)},
                             "ns_per_rtt");
    };
    v.push_back({std::move(key), std::move(name), note, throughput, pingpong, nullptr, false});
  };
  add(anchors::program::rust, "crossbeam", "crossbeam-channel",
      anchors::describe(anchors::program::rust, "crossbeam-channel"), "bounded(");
  add(anchors::program::go, "go", "Go channel",
      anchors::describe(anchors::program::go, "") + ", GOMAXPROCS = every CPU",
      "make(chan uint64, ");
  return v;
}

auto all_impls() -> std::vector<impl> {
  std::vector<impl> v;
  for_each_channel_impl([&v]<class Q>() { v.push_back(make_impl<Q>()); });
  for (auto& a : anchor_impls()) {
    v.push_back(std::move(a));
  }
  return v;
}

/// --only: as keep_only, except that naming an anchor that is not found here is no error: its
/// rows are absent, as they are without --only (a script may name them on every machine).
auto select_impls(std::string const& only) -> std::vector<impl> {
  auto all = all_impls();
  std::string kept;
  std::stringstream keys(only);
  for (std::string k; std::getline(keys, k, ',');) {
    bool const absent_anchor =
        (k == "crossbeam" || k == "go") &&
        std::none_of(all.begin(), all.end(), [&k](impl const& i) { return i.key == k; });
    if (!absent_anchor) {
      kept += (kept.empty() ? "" : ",") + k;
    }
  }
  if (!only.empty() && kept.empty()) {
    return {};
  }
  return keep_only(std::move(all), kept);
}

/// Runs `measure` on every implementation `runs` times, interleaved and rotated.
auto interleave(std::vector<impl> const& impls, int runs, std::size_t capacity,
                std::function<double(impl const&)> const& measure) -> std::vector<row> {
  std::vector<row> rows;
  for (auto const& i : impls) {
    rows.push_back({i.name, i.note(capacity), {}});
  }
  auto const n = impls.size();
  for (int r = 0; r < runs; ++r) {
    for (std::size_t k = 0; k < n; ++k) {
      auto const idx = (k + static_cast<std::size_t>(r)) % n;
      rows[idx].sample.push_back(measure(impls[idx]));
    }
  }
  return rows;
}

auto reference_name() -> std::string {
  return "spindle bounded";
}

struct settings {
  int runs = 7;
  bool json = false;
  std::string only;
  std::chrono::milliseconds idle{1000};
};

void throughput_scenario(std::string const& label, workload const& w, settings const& s) {
  auto impls = fitting(select_impls(s.only), w.producers, w.consumers);
  // The CPU figures of each run, by implementation, in the order of `impls`.
  std::vector<std::vector<double>> cpu(impls.size());
  auto rows = interleave(impls, s.runs, w.capacity, [&](impl const& i) {
    auto const sample = i.throughput(w);
    cpu[static_cast<std::size_t>(&i - impls.data())].push_back(sample.cpu_ns_per_msg);
    return sample.msgs_per_s;
  });
  std::ostringstream title;
  title << "channel " << label << ": " << w.producers << " producers / " << w.consumers
        << " consumers, " << w.messages << " u64 per producer, capacity " << w.capacity << ", "
        << s.runs << " interleaved runs";
  print_table(title.str(), "M msg/s", true, rows, reference_name(), s.json);
  // The anchors measure no CPU time: their figures are all NaN, and their rows are left out.
  std::vector<row> cpu_rows;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (!std::all_of(cpu[k].begin(), cpu[k].end(), [](double v) { return std::isnan(v); })) {
      cpu_rows.push_back({rows[k].name, rows[k].note, cpu[k]});
    }
  }
  print_table(title.str() + ", CPU per message (all threads)", "CPU ns/msg", false, cpu_rows,
              reference_name(), s.json);
}

void pingpong_scenario(u64 rounds, settings const& s) {
  auto impls = select_impls(s.only);
  std::erase_if(impls, [](impl const& i) { return !i.pingpong; });  // several_producers rows
  auto rows = interleave(impls, s.runs, 1, [&](impl const& i) { return i.pingpong(rounds); });
  std::ostringstream title;
  title << "channel pingpong: " << rounds << " round trips over two capacity-1 queues, " << s.runs
        << " interleaved runs";
  print_table(title.str(), "ns/round trip", false, rows, reference_name(), s.json);
}

void idle_scenario(int runs, settings const& s) {
  auto impls = select_impls(s.only);
  std::erase_if(impls, [](impl const& i) { return !i.idle; });  // the anchors have none
  auto rows = interleave(impls, runs, 1, [&](impl const& i) { return i.idle(s.idle); });
  std::ostringstream title;
  title << "channel idle: CPU time of a receiver waiting " << s.idle.count()
        << " ms on an empty queue, " << runs << " interleaved runs";
  print_table(title.str(), "us CPU", false, rows, reference_name(), s.json);
}

auto read_settings(options const& o, int default_runs) -> settings {
  settings s;
  s.runs = static_cast<int>(o.get_int("runs", default_runs));
  if (s.runs < 1) {
    throw std::invalid_argument("--runs must be at least 1");
  }
  s.json = o.flag("json");
  s.only = o.get_string("only", "");
  s.idle = std::chrono::milliseconds(o.get_int("idle-ms", 1000));
  return s;
}

auto run_channel(std::span<char const* const> args) -> int {
  options const o(args);
  auto const s = read_settings(o, 7);
  bool const custom =
      o.flag("producers") || o.flag("consumers") || o.flag("messages") || o.flag("capacity");
  auto const scenario = o.get_string("scenario", custom ? "custom" : "seed");

  // A named scenario's defaults; explicit options override them (not under "all").
  auto with_options = [&](workload w) {
    w.producers = static_cast<int>(o.get_int("producers", w.producers));
    w.consumers = static_cast<int>(o.get_int("consumers", w.consumers));
    w.messages = static_cast<u64>(o.get_int("messages", static_cast<std::int64_t>(w.messages)));
    w.capacity =
        static_cast<std::size_t>(o.get_int("capacity", static_cast<std::int64_t>(w.capacity)));
    if (w.producers < 1 || w.consumers < 1 || w.messages < 1 || w.messages >= (1ULL << 32)) {
      throw std::invalid_argument(
          "--producers and --consumers must be >= 1, --messages in [1, 2^32)");
    }
    return w;
  };
  workload const seed{4, 2, 1'000'000, 1024};
  workload const spsc{1, 1, 10'000'000, 1024};
  workload const two{2, 2, 1'000'000, 1024};
  u64 const rounds = 100'000;

  if (scenario == "seed") {
    throughput_scenario("seed", with_options(seed), s);
  } else if (scenario == "spsc") {
    throughput_scenario("spsc", with_options(spsc), s);
  } else if (scenario == "2p2c") {
    throughput_scenario("2p2c", with_options(two), s);
  } else if (scenario == "custom") {
    throughput_scenario("custom", with_options(seed), s);
  } else if (scenario == "pingpong") {
    pingpong_scenario(static_cast<u64>(o.get_int("messages", rounds)), s);
  } else if (scenario == "idle") {
    idle_scenario(s.runs, s);
  } else if (scenario == "all") {
    throughput_scenario("seed", seed, s);
    throughput_scenario("spsc", spsc, s);
    throughput_scenario("2p2c", two, s);
    pingpong_scenario(rounds, s);
    idle_scenario(static_cast<int>(o.get_int("idle-runs", 1)), s);
  } else {
    throw std::invalid_argument("unknown --scenario " + scenario +
                                " (seed, spsc, 2p2c, pingpong, idle, all)");
  }
  return 0;
}

auto run_channel_idle(std::span<char const* const> args) -> int {
  options const o(args);
  auto const s = read_settings(o, 1);
  idle_scenario(s.runs, s);
  return 0;
}

registrar const channel_cmd({"channel",
                             "MPMC channel scenarios, peers side by side: --scenario "
                             "seed|spsc|2p2c|pingpong|idle|all --runs R [--json] [--only a,b] "
                             "[--producers P --consumers C --messages N --capacity K]",
                             run_channel});
registrar const channel_idle_cmd({"channel-idle",
                                  "CPU burnt by a receiver waiting on an empty channel: "
                                  "--idle-ms MS --runs R [--json] [--only a,b]",
                                  run_channel_idle});

}  // namespace

// The sweep's view of the implementations above (channel_scenarios.hpp).
auto channel_impls_for_sweep(std::size_t capacity) -> std::vector<channel_impl_ref> {
  std::vector<channel_impl_ref> refs;
  for (auto const& i : all_impls()) {
    if (i.spsc_only) {
      continue;  // the sweep draws every row at every thread count, most with several producers
    }
    // A several_producers row (spindle lanes) stays, so that its line has a point at every
    // thread count: at the points with one producer it runs one lane.
    auto run = i.throughput;
    refs.push_back({i.key, i.name, i.note(capacity),
                    [run](int producers, int consumers, u64 messages, std::size_t cap) {
                      return run(workload{producers, consumers, messages, cap}).msgs_per_s;
                    }});
  }
  return refs;
}

}  // namespace spindle_bench::channel

// spindle-bench sweep: scaling curves. One scenario runs at a list of thread counts, spindle and
// every peer built, and the figures come out as a Markdown table (and, with --out, as JSON for
// tools/plot/plot.py beside it).
//
//   spindle-bench sweep [--scenario channel|fib|for|spawn|deque|all|A,B] [--threads 1,2,4,8]
//                       [--runs R] [--budget-s S] [--max-run-s S] [--quick] [--out DIR]
//                       [--messages N] [--capacity K] [--fib N] [--tasks N] [--elements N]
//                       [--items N]
//
// Scenarios, at each thread count n of the list (default 1, 2, 4, ... up to twice the CPUs, and
// the number of CPUs itself, so the oversubscribed side always shows):
//   channel  the seed load with producers = consumers = n/2 (n = 1: one producer and one
//            consumer, the point at 2 threads; an odd n gives the extra thread to the
//            producers): --messages u64 in all (default 2,000,000), capacity 1024, every
//            message checked exactly once (scenarios_channel.cpp, whose implementations all
//            run). Million messages per second.
//   fib      fib(--fib, default 25) forking at every call on n workers: spindle join and
//            task_group, oneTBB task_group in a task_arena of n threads, OpenMP tasks with
//            num_threads(n), serial as the floor (scenarios_executor.cpp). Milliseconds.
//   for      a trivial loop over --elements (default 10,000,000) on n workers, checksummed.
//            Milliseconds.
//   spawn    --tasks empty tasks (default 200,000) submitted from one outside thread to n
//            workers, every one counted. Million tasks per second.
//            (for and spawn: the same implementations as fib.)
//   deque    one owner pushes --items indices (default 1,000,000) into a work-stealing deque,
//            64 at a time, popping half of each batch back, then pops the rest; n thieves steal
//            meanwhile (at most 2^21 items), each yielding after a take that got nothing (empty
//            or a lost race): spindle's deque, xenium's chase_work_stealing_deque, a std::deque
//            under a std::mutex. Every index must be taken exactly once. Million items per
//            second.
// The Rust and Go anchors (anchors.hpp), where found, run as peers in the same interleaving, a
// process of their own per run: crossbeam-channel and Go channels in channel; rayon and Go in
// fib; rayon in for; rayon, tokio and Go in spawn; crossbeam-deque in deque (`deque steal`, a
// shape of its own: the owner pops one item after every fourth push, and a thief spins on an
// empty deque). A run of theirs that fails gives no figure, and the table names it.
// The workload sizes stay the same at every thread count, so the figures compare along a line.
// --quick makes them smaller (channel 400,000 messages, fib(22), 50,000 tasks, 2,000,000
// elements, 200,000 items) and the default runs 3 instead of 5. A thread count that lands on
// a point measured before (channel: 1 and 2 both run one producer and one consumer) is
// measured once.
//
// At each thread count every implementation runs once per run, interleaved, starting at a
// different one each run (so that a slow phase of the shared machine does not land on one
// row); executor implementations first run once untimed, so that no timed run pays for
// starting threads. --budget-s S divides S seconds among the thread counts: a thread count
// stops after the run that passes its share of what is left (at least one run each; a quick
// count leaves its time to the next ones), and --max-run-s S stops
// running an implementation (at that thread count and above) once one of its runs took more
// than S seconds, as a spinning peer can when the threads outnumber the CPUs: together they
// time-box a sweep on a big machine. The JSON records the runs each point got; the Markdown
// names the implementations stopped.
//
// --out DIR writes DIR/sweep-<scenario>.json (format: tools/plot/README.md) and
// DIR/sweep-<scenario>.md; the Markdown table is printed either way.

#include <spindle/deque.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "anchors.hpp"
#include "bench/support/peers.hpp"
#include "bench_common.hpp"
#include "channel_scenarios.hpp"
#include "sweep.hpp"

namespace spindle_bench {
namespace {

// ---------------------------------------------------------------------------------------------
// The deque scenario: one owner, n thieves.

/// spindle's deque: the owner pops LIFO; a steal that lost a race counts as a failed take, as
/// xenium's try_steal does (it cannot tell the two apart), so every thief yields after any
/// failed take. An earlier version retried spindle's lost races at once: that thief kept the
/// top index's line away from the owner, and spindle's row read 0.37-0.51x xenium's where the
/// deques differ by 0.88x under one policy (docs/performance.md, "Fork-join fast path").
class spindle_deque_peer {
 public:
  static constexpr char const* name = "spindle deque";
  static constexpr char const* note = "LIFO owner; a lost steal race yields, as xenium's";

  explicit spindle_deque_peer(std::uint32_t /*items*/) {}
  void push(std::uint32_t v) { owner_.push(v); }
  auto pop() -> std::optional<std::uint32_t> { return owner_.pop(); }
  auto thief() -> spindle::stealer<std::uint32_t> { return owner_.stealer(); }
  static auto take(spindle::stealer<std::uint32_t>& s) -> std::optional<std::uint32_t> {
    return s.steal().value;
  }

 private:
  spindle::deque_owner<std::uint32_t> owner_{spindle::deque_order::lifo};
};

/// A std::deque under a std::mutex: the owner takes from the back, thieves from the front.
class mutex_deque_peer {
 public:
  static constexpr char const* name = "std::mutex+std::deque";
  static constexpr char const* note = "one lock for owner and thieves";

  explicit mutex_deque_peer(std::uint32_t /*items*/) {}
  void push(std::uint32_t v) {
    std::lock_guard guard(lock_);
    items_.push_back(v);
  }
  auto pop() -> std::optional<std::uint32_t> {
    std::lock_guard guard(lock_);
    if (items_.empty()) {
      return std::nullopt;
    }
    auto v = items_.back();
    items_.pop_back();
    return v;
  }
  auto thief() -> mutex_deque_peer* { return this; }
  static auto take(mutex_deque_peer* self) -> std::optional<std::uint32_t> {
    std::lock_guard guard(self->lock_);
    if (self->items_.empty()) {
      return std::nullopt;
    }
    auto v = self->items_.front();
    self->items_.pop_front();
    return v;
  }

 private:
  std::mutex lock_;
  std::deque<std::uint32_t> items_;
};

/// The most items a deque run takes: xenium's deque below has this fixed capacity.
constexpr std::uint32_t max_deque_items = std::uint32_t{1} << 21;

#if defined(SPINDLE_HAVE_XENIUM)
/// xenium's chase_work_stealing_deque holds pointers: pointers into a table of the indices,
/// decoded back by their offset. Fixed-size storage of max_deque_items, so that a run never
/// fills it: its growable storage (the default) lost or duplicated items in this scenario's
/// exactly-once check.
class xenium_deque_peer {
 public:
  static constexpr char const* name = "xenium chase_work_stealing_deque";
  static constexpr char const* note =
      "fixed-size storage; try_steal: false when empty or on a lost race";

  explicit xenium_deque_peer(std::uint32_t items) : table_(items) {}
  void push(std::uint32_t v) {
    while (!q_.try_push(table_.data() + v)) {
    }
  }
  auto pop() -> std::optional<std::uint32_t> {
    std::uint32_t* p = nullptr;
    if (!q_.try_pop(p)) {
      return std::nullopt;
    }
    return decode(p);
  }
  auto thief() -> xenium_deque_peer* { return this; }
  static auto take(xenium_deque_peer* self) -> std::optional<std::uint32_t> {
    std::uint32_t* p = nullptr;
    if (!self->q_.try_steal(p)) {
      return std::nullopt;
    }
    return self->decode(p);
  }

 private:
  // A pointer outside the table decodes to an index the exactly-once check rejects.
  [[nodiscard]] auto decode(std::uint32_t* p) const -> std::uint32_t {
    auto const d = p - table_.data();
    return d >= 0 && static_cast<std::size_t>(d) < table_.size() ? static_cast<std::uint32_t>(d)
                                                                 : ~std::uint32_t{0};
  }

  std::vector<std::uint32_t> table_;
  xenium::chase_work_stealing_deque<
      std::uint32_t, xenium::policy::container<
                         xenium::detail::fixed_size_circular_array<std::uint32_t, max_deque_items>>>
      q_;
};
#endif

/// One owner (this thread) and `thieves` threads take `items` indices; returns million items
/// per second from the start gate to the last taker's end, after checking that every index
/// was taken exactly once.
template <class Peer>
auto run_deque(int thieves, std::uint32_t items) -> double {
  auto const holder = std::make_unique<Peer>(items);  // xenium's fixed storage is 16 MiB
  auto& peer = *holder;
  std::atomic<bool> done{false};
  std::latch ready(thieves);
  std::latch go(1);
  std::vector<std::vector<std::uint32_t>> taken(static_cast<std::size_t>(thieves) + 1);
  std::vector<clock::time_point> finished(static_cast<std::size_t>(thieves) + 1);
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(thieves));
  for (int t = 1; t <= thieves; ++t) {
    pool.emplace_back([&, t, handle = peer.thief()]() mutable {
      std::vector<std::uint32_t> mine;
      ready.count_down();
      go.wait();
      for (;;) {
        if (auto v = Peer::take(handle)) {
          mine.push_back(*v);
          continue;
        }
        // The owner drains the deque before it sets done: nothing is left once done is seen.
        if (done.load(std::memory_order_acquire)) {
          break;
        }
        std::this_thread::yield();
      }
      finished[static_cast<std::size_t>(t)] = clock::now();
      taken[static_cast<std::size_t>(t)] = std::move(mine);
    });
  }
  std::vector<std::uint32_t> mine;
  mine.reserve(items);
  ready.wait();
  auto const t0 = clock::now();
  go.count_down();
  constexpr std::uint32_t batch = 64;
  for (std::uint32_t i = 0; i < items;) {
    auto const end = std::min(items, i + batch);
    for (; i < end; ++i) {
      peer.push(i);
    }
    for (std::uint32_t k = 0; k < batch / 2; ++k) {
      if (auto v = peer.pop()) {
        mine.push_back(*v);
      }
    }
  }
  while (auto v = peer.pop()) {
    mine.push_back(*v);
  }
  done.store(true, std::memory_order_release);  // pairs with the thieves' acquire load
  finished[0] = clock::now();
  for (auto& t : pool) {
    t.join();
  }
  taken[0] = std::move(mine);
  std::vector<std::uint8_t> seen(items, 0);
  std::size_t total = 0;
  for (auto const& list : taken) {
    total += list.size();
    for (auto const v : list) {
      if (v >= items || seen[v]++ != 0) {
        fail(std::string(Peer::name) + ": index " + std::to_string(v) +
             " taken twice or never pushed");
      }
    }
  }
  if (total != items) {
    fail(std::string(Peer::name) + ": " + std::to_string(items) + " indices pushed, " +
         std::to_string(total) + " taken");
  }
  auto const t1 = *std::max_element(finished.begin(), finished.end());
  return static_cast<double>(items) / std::chrono::duration<double>(t1 - t0).count() / 1e6;
}

template <class Peer>
auto deque_impl(sweep_family family, int thieves, std::uint32_t items) -> sweep_impl {
  return {Peer::name, Peer::note, family,
          [thieves, items] { return run_deque<Peer>(thieves, items); }};
}

// ---------------------------------------------------------------------------------------------
// The sweep.

/// The sizes of every scenario, from the options.
struct sizes {
  std::uint64_t messages = 2'000'000;  // channel: in all, split among the producers
  std::size_t capacity = 1024;
  executor_sweep_sizes executor;
  std::uint32_t items = 1'000'000;  // deque
};

/// A scenario: its figure, and its implementations at a thread count.
struct scenario {
  std::string key;
  std::string title;
  std::string unit;
  bool higher_is_better = true;
  std::string x_label;
  bool warmup = false;
  std::string params_json;
  /// The implementations for thread count n of the list, what they run ("2 producers + 2
  /// consumers") and the thread count the point stands at (channel: n = 1 runs 2 threads).
  std::function<std::vector<sweep_impl>(int n, std::string& detail, int& x)> build;
};

struct point {
  int threads = 0;
  std::string detail;
  std::vector<double> sample;
};

struct series {
  std::string name;
  std::string note;
  sweep_family family = sweep_family::peer;
  std::vector<point> points;
};

auto family_name(sweep_family f) -> char const* {
  switch (f) {
    case sweep_family::spindle:
      return "spindle";
    case sweep_family::peer:
      return "peer";
    case sweep_family::baseline:
      return "baseline";
  }
  return "peer";
}

auto make_scenario(std::string const& key, sizes const& z) -> scenario {
  scenario s;
  s.key = key;
  std::ostringstream params;
  if (key == "channel") {
    s.title = "channel: producers = consumers = n/2, " + std::to_string(z.messages) +
              " u64 in all, capacity " + std::to_string(z.capacity);
    s.unit = "M msg/s";
    s.x_label = "threads (producers + consumers, half each)";
    params << "{\"messages\": " << z.messages << ", \"capacity\": " << z.capacity << "}";
    s.build = [z](int n, std::string& detail, int& x) {
      int const producers = n == 1 ? 1 : (n + 1) / 2;
      int const consumers = n == 1 ? 1 : n / 2;
      x = producers + consumers;
      detail = std::to_string(producers) + (producers == 1 ? " producer + " : " producers + ") +
               std::to_string(consumers) + (consumers == 1 ? " consumer" : " consumers");
      auto const per_producer = z.messages / static_cast<std::uint64_t>(producers);
      std::vector<sweep_impl> v;
      for (auto& c : channel::channel_impls_for_sweep(z.capacity)) {
        auto const family =
            c.key.starts_with("spindle") ? sweep_family::spindle : sweep_family::peer;
        auto run = c.throughput;
        auto const capacity = z.capacity;
        v.push_back({c.name, c.note, family, [run, producers, consumers, per_producer, capacity] {
                       return run(producers, consumers, per_producer, capacity);
                     }});
      }
      return v;
    };
  } else if (key == "fib" || key == "for" || key == "spawn") {
    auto const& e = z.executor;
    s.warmup = true;
    s.x_label = "worker threads";
    if (key == "fib") {
      s.title = "executor: fib(" + std::to_string(e.fib) + ") forking at every call";
      s.unit = "ms";
      s.higher_is_better = false;
      params << "{\"fib\": " << e.fib << "}";
    } else if (key == "for") {
      s.title = "executor: parallel_for over " + std::to_string(e.elements) + " elements";
      s.unit = "ms";
      s.higher_is_better = false;
      params << "{\"elements\": " << e.elements << "}";
    } else {
      s.title = "executor: " + std::to_string(e.tasks) + " empty tasks from one outside thread";
      s.unit = "M tasks/s";
      params << "{\"tasks\": " << e.tasks << "}";
    }
    s.build = [key, e](int n, std::string& detail, int& x) {
      x = n;
      detail = std::to_string(n) + (n == 1 ? " worker" : " workers");
      return executor_sweep_impls(key, static_cast<std::size_t>(n), e);
    };
  } else if (key == "deque") {
    s.title = "deque: one owner, n thieves, " + std::to_string(z.items) + " items";
    s.unit = "M items/s";
    s.x_label = "thieves (plus one owner thread)";
    params << "{\"items\": " << z.items << "}";
    s.build = [items = z.items](int n, std::string& detail, int& x) {
      x = n;
      detail = "1 owner + " + std::to_string(n) + (n == 1 ? " thief" : " thieves");
      std::vector<sweep_impl> v;
      v.push_back(deque_impl<spindle_deque_peer>(sweep_family::spindle, n, items));
#if defined(SPINDLE_HAVE_XENIUM)
      v.push_back(deque_impl<xenium_deque_peer>(sweep_family::peer, n, items));
#endif
      v.push_back(deque_impl<mutex_deque_peer>(sweep_family::peer, n, items));
      if (anchors::available(anchors::program::rust)) {
        auto const args = std::vector<std::string>{
            "deque", "steal", "--items", std::to_string(items), "--thieves", std::to_string(n)};
        v.push_back({"crossbeam-deque",
                     anchors::describe(anchors::program::rust, "crossbeam-deque") +
                         "; deque steal: the owner pops one item after every fourth push (the "
                         "others: 32 after every 64), and a thief spins on an empty deque and "
                         "retries a lost race at once (the others yield)",
                     sweep_family::peer,
                     [args, items] { return anchors::rate(anchors::program::rust, args, items); },
                     false});
      }
      return v;
    };
  } else {
    throw std::invalid_argument("unknown --scenario " + key +
                                " (channel, fib, for, spawn, deque, all)");
  }
  s.params_json = params.str();
  return s;
}

/// A figure for the table: three significant digits, no exponent.
auto figure(double v) -> std::string {
  char buf[32];
  if (v >= 100) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (v >= 10) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
  } else if (v >= 1) {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  }
  return buf;
}

auto find_point(series const& s, int threads) -> point const* {
  for (auto const& p : s.points) {
    if (p.threads == threads) {
      return &p;
    }
  }
  return nullptr;
}

/// spindle's first row against the best peer at `threads`: how many times better spindle's
/// median is (> 1: spindle wins), and which peer; 0 when either is missing.
auto advantage(scenario const& sc, std::vector<series> const& all, int threads)
    -> std::pair<double, std::string> {
  point const* ref = nullptr;
  double best = 0;
  std::string best_name;
  for (auto const& s : all) {
    auto const* p = find_point(s, threads);
    if (p == nullptr || p->sample.empty()) {
      continue;
    }
    double const m = summarize(p->sample).median;
    if (s.family == sweep_family::spindle && ref == nullptr) {
      ref = p;
    } else if (s.family == sweep_family::peer &&
               (best_name.empty() || (sc.higher_is_better ? m > best : m < best))) {
      best = m;
      best_name = s.name;
    }
  }
  if (ref == nullptr || best_name.empty() || best <= 0) {
    return {0, ""};
  }
  double const r = summarize(ref->sample).median;
  return {sc.higher_is_better ? r / best : best / r, best_name};
}

auto markdown(scenario const& sc, std::vector<series> const& all, std::vector<int> const& threads,
              machine_info const& m) -> std::string {
  std::ostringstream md;
  md << "### sweep " << sc.key << " -- " << sc.title << ", " << sc.unit << " ("
     << (sc.higher_is_better ? "higher" : "lower") << " is better)\n\n";
  md << m.cpu_model << ", " << m.cpus << " CPUs, " << m.compiler << ", commit " << m.commit << ", "
     << m.date << ". Cells: median [min, max] over the interleaved runs; columns: " << sc.x_label
     << ".\n\n";
  md << "| implementation |";
  for (int const n : threads) {
    md << " " << n << " |";
  }
  md << "\n|---|";
  for (std::size_t i = 0; i < threads.size(); ++i) {
    md << "---:|";
  }
  md << "\n";
  for (auto const& s : all) {
    md << "| " << s.name << " |";
    for (int const n : threads) {
      auto const* p = find_point(s, n);
      if (p == nullptr || p->sample.empty()) {
        md << " - |";
        continue;
      }
      auto const x = summarize(p->sample);
      md << " " << figure(x.median) << " [" << figure(x.min) << ", " << figure(x.max) << "] |";
    }
    md << "\n";
  }
  md << "| **spindle vs best peer** |";
  for (int const n : threads) {
    auto const [ratio, who] = advantage(sc, all, n);
    if (ratio <= 0) {
      md << " - |";
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2fx", ratio);
      md << " " << buf << " (" << who << ") |";
    }
  }
  md << "\n\nRuns per point and what a thread count means:";
  for (int const n : threads) {
    std::size_t most = 0;
    std::string detail;
    for (auto const& s : all) {
      if (auto const* p = find_point(s, n)) {
        most = std::max(most, p->sample.size());
        detail = p->detail;
      }
    }
    md << " " << n << ": " << detail << ", " << most << (most == 1 ? " run;" : " runs;");
  }
  md << " spindle vs best peer: how many times better spindle's first row is than the best "
        "peer's median (> 1: spindle wins).\n";
  return md.str();
}

auto to_json(scenario const& sc, std::vector<series> const& all, int runs,
             std::string const& machine) -> std::string {
  std::ostringstream js;
  js << "{\n  \"format\": \"spindle-bench-sweep\",\n  \"version\": 1,\n"
     << "  \"scenario\": " << json_string(sc.key) << ",\n"
     << "  \"title\": " << json_string(sc.title) << ",\n"
     << "  \"unit\": " << json_string(sc.unit) << ",\n"
     << "  \"higher_is_better\": " << (sc.higher_is_better ? "true" : "false") << ",\n"
     << "  \"x_label\": " << json_string(sc.x_label) << ",\n"
     << "  \"runs\": " << runs << ",\n"
     << "  \"params\": " << sc.params_json << ",\n"
     << "  \"machine\": " << machine << ",\n"
     << "  \"series\": [";
  for (std::size_t i = 0; i < all.size(); ++i) {
    auto const& s = all[i];
    js << (i == 0 ? "\n" : ",\n") << "    {\"impl\": " << json_string(s.name) << ", \"family\": \""
       << family_name(s.family) << "\", \"note\": " << json_string(s.note) << ", \"points\": [";
    for (std::size_t k = 0; k < s.points.size(); ++k) {
      auto const& p = s.points[k];
      auto const x = summarize(p.sample);
      char buf[160];
      std::snprintf(buf, sizeof buf, "\"median\": %.6g, \"min\": %.6g, \"max\": %.6g", x.median,
                    x.min, x.max);
      js << (k == 0 ? "\n" : ",\n") << "      {\"threads\": " << p.threads
         << ", \"detail\": " << json_string(p.detail) << ", " << buf << ", \"samples\": [";
      for (std::size_t j = 0; j < p.sample.size(); ++j) {
        std::snprintf(buf, sizeof buf, "%s%.6g", j == 0 ? "" : ", ", p.sample[j]);
        js << buf;
      }
      js << "]}";
    }
    js << "\n    ]}";
  }
  js << "\n  ]\n}\n";
  return js.str();
}

auto seconds_since(clock::time_point t0) -> double {
  return std::chrono::duration<double>(clock::now() - t0).count();
}

/// How long a sweep may take: `runs` per thread count at most; with `budget_s` > 0, a thread
/// count stops after the run that passes its share of what is left of the budget (at least
/// one run each); with `max_run_s` > 0, an implementation one of whose runs took longer is not
/// run again, at this thread count or a higher one.
struct limits {
  int runs = 5;
  double budget_s = 0;
  double max_run_s = 0;
};

/// Runs one scenario over `threads`; prints its table and, with `out`, writes its files.
void sweep(scenario const& sc, std::vector<int> const& threads, limits const& lim,
           std::string const& out) {
  std::vector<series> all;
  std::vector<int> measured;
  std::vector<std::string> dropped;  // "name (after n threads)"
  std::vector<std::string> dropped_names;
  std::vector<std::string> failures;  // "name (runs at n threads)"
  auto const started = clock::now();
  for (std::size_t point = 0; point < threads.size(); ++point) {
    int const n = threads[point];
    // This thread count's share: what is left of the budget over the counts left to run.
    double const share =
        (lim.budget_s - seconds_since(started)) / static_cast<double>(threads.size() - point);
    auto const point_started = clock::now();
    std::string detail;
    int x = n;
    auto impls = sc.build(n, detail, x);
    if (std::find(measured.begin(), measured.end(), x) != measured.end()) {
      std::fprintf(stderr, "sweep %s: n = %d (%s) lands at %d, measured already: skipped\n",
                   sc.key.c_str(), n, detail.c_str(), x);
      continue;
    }
    std::erase_if(impls, [&](sweep_impl const& i) {
      return std::find(dropped_names.begin(), dropped_names.end(), i.name) != dropped_names.end();
    });
    measured.push_back(x);
    auto const m = impls.size();
    std::vector<std::vector<double>> samples(m);
    std::vector<bool> slow(m, false);
    // One run of implementation idx; marks it slow when the run passed --max-run-s.
    auto timed = [&](std::size_t idx) {
      auto const t = clock::now();
      double const v = impls[idx].measure();
      if (lim.max_run_s > 0 && seconds_since(t) > lim.max_run_s) {
        slow[idx] = true;
      }
      return v;
    };
    if (sc.warmup) {
      for (std::size_t idx = 0; idx < m; ++idx) {
        if (impls[idx].warmup) {
          static_cast<void>(timed(idx));
        }
      }
    }
    std::vector<int> failed(m, 0);  // runs that gave NaN: an anchor process that failed
    auto const t0 = clock::now();
    int done = 0;
    for (int r = 0; r < lim.runs; ++r) {
      if (r > 0 && lim.budget_s > 0 && seconds_since(point_started) > share) {
        break;
      }
      for (std::size_t k = 0; k < m; ++k) {
        auto const idx = (k + static_cast<std::size_t>(r)) % m;
        if (!slow[idx]) {
          auto const v = timed(idx);
          if (std::isnan(v)) {
            ++failed[idx];
          } else {
            samples[idx].push_back(v);
          }
        }
      }
      ++done;
    }
    for (std::size_t idx = 0; idx < m; ++idx) {
      auto const& i = impls[idx];
      auto it =
          std::find_if(all.begin(), all.end(), [&i](series const& x) { return x.name == i.name; });
      if (it == all.end()) {
        all.push_back({i.name, i.note, i.family, {}});
        it = all.end() - 1;
      }
      if (!samples[idx].empty()) {
        it->points.push_back({x, detail, std::move(samples[idx])});
      }
      if (failed[idx] > 0) {
        failures.push_back(i.name + " (" + std::to_string(failed[idx]) + " at " +
                           std::to_string(x) + (x == 1 ? " thread)" : " threads)"));
      }
      if (slow[idx]) {
        dropped_names.push_back(i.name);
        dropped.push_back(i.name + " (from " + std::to_string(x) +
                          (x == 1 ? " thread" : " threads") + " on)");
      }
    }
    std::fprintf(stderr, "sweep %s at %d (%s): %d run%s, %.1f s\n", sc.key.c_str(), x,
                 detail.c_str(), done, done == 1 ? "" : "s", seconds_since(t0));
  }
  auto const m = machine();
  auto table = markdown(sc, all, measured, m);
  if (!dropped.empty()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", lim.max_run_s);
    table += "\nNot run further once a run took more than " + std::string(buf) + " s:";
    for (auto const& d : dropped) {
      table += " " + d + ";";
    }
    table += "\n";
  }
  if (!failures.empty()) {
    table += "\nRuns that FAILED and gave no figure (standard error says why):";
    for (auto const& f : failures) {
      table += " " + f + ";";
    }
    table += "\n";
  }
  std::printf("\n%s\n", table.c_str());
  std::fflush(stdout);
  if (!out.empty()) {
    std::filesystem::create_directories(out);
    auto const base = std::filesystem::path(out) / ("sweep-" + sc.key);
    std::ofstream(base.string() + ".md") << table;
    std::ofstream(base.string() + ".json") << to_json(sc, all, lim.runs, machine_json());
    std::printf("wrote %s.json and %s.md (%.0f s)\n", base.string().c_str(), base.string().c_str(),
                seconds_since(started));
  }
}

/// 1, 2, 4, ... up to twice the CPUs, with the number of CPUs and its double in the list.
auto default_threads() -> std::vector<int> {
  auto const hw = std::thread::hardware_concurrency();
  int const cpus = hw == 0 ? 2 : static_cast<int>(hw);
  std::vector<int> v;
  for (int n = 1; n < 2 * cpus; n *= 2) {
    v.push_back(n);
  }
  v.push_back(cpus);
  v.push_back(2 * cpus);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

auto parse_list(std::string const& text) -> std::vector<std::string> {
  std::vector<std::string> v;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) {
      v.push_back(item);
    }
  }
  return v;
}

auto parse_threads(std::string const& text) -> std::vector<int> {
  std::vector<int> v;
  for (auto const& item : parse_list(text)) {
    std::size_t used = 0;
    int const n = std::stoi(item, &used);
    if (used != item.size() || n < 1 || n > 4096) {
      throw std::invalid_argument("--threads takes a list of counts in [1, 4096], e.g. 1,2,4,8");
    }
    v.push_back(n);
  }
  if (v.empty()) {
    throw std::invalid_argument("--threads takes a list of counts, e.g. 1,2,4,8");
  }
  return v;
}

auto run_sweep(std::span<char const* const> args) -> int {
  options const o(args);
  bool const quick = o.flag("quick");
  limits lim;
  lim.runs = static_cast<int>(o.get_int("runs", quick ? 3 : 5));
  if (lim.runs < 1) {
    throw std::invalid_argument("--runs must be at least 1");
  }
  lim.budget_s = static_cast<double>(o.get_int("budget-s", 0));
  lim.max_run_s = static_cast<double>(o.get_int("max-run-s", 0));
  auto const threads =
      o.flag("threads") ? parse_threads(o.get_string("threads", "")) : default_threads();
  auto const out = o.get_string("out", "");

  sizes z;
  if (quick) {
    z.messages = 400'000;
    z.executor = {22, 50'000, 2'000'000};
    z.items = 200'000;
  }
  z.messages =
      static_cast<std::uint64_t>(o.get_int("messages", static_cast<std::int64_t>(z.messages)));
  z.capacity =
      static_cast<std::size_t>(o.get_int("capacity", static_cast<std::int64_t>(z.capacity)));
  z.executor.fib = static_cast<int>(o.get_int("fib", z.executor.fib));
  z.executor.tasks =
      static_cast<std::size_t>(o.get_int("tasks", static_cast<std::int64_t>(z.executor.tasks)));
  z.executor.elements = static_cast<std::size_t>(
      o.get_int("elements", static_cast<std::int64_t>(z.executor.elements)));
  auto const items = o.get_int("items", z.items);
  if (z.messages < 1 || z.messages >= (1ULL << 32) || items < 1 || items > max_deque_items ||
      z.executor.fib > 40 || z.executor.tasks < 1 || z.executor.elements < 1) {
    throw std::invalid_argument(
        "--messages in [1, 2^32), --items in [1, 2^21], --fib at most 40, --tasks and "
        "--elements >= 1");
  }
  z.items = static_cast<std::uint32_t>(items);

  auto keys = parse_list(o.get_string("scenario", "all"));
  if (keys.size() == 1 && keys.front() == "all") {
    keys = {"channel", "fib", "for", "spawn", "deque"};
  }
  std::vector<scenario> scenarios;
  for (auto const& k : keys) {
    scenarios.push_back(make_scenario(k, z));
  }
  for (auto const& sc : scenarios) {
    sweep(sc, threads, lim, out);
  }
  return 0;
}

registrar const sweep_cmd({"sweep",
                           "scaling curves over thread counts, spindle and its peers: --scenario "
                           "channel|fib|for|spawn|deque|all [--threads 1,2,4,8] [--runs R] "
                           "[--budget-s S] [--max-run-s S] [--quick] [--out DIR] [--messages N "
                           "--capacity K "
                           "--fib N --tasks N --elements N --items N]",
                           run_sweep});

}  // namespace
}  // namespace spindle_bench

// spindle-bench executor: the work-stealing executor against oneTBB and OpenMP, side by side.
//
//   spindle-bench executor [--runs R] [--json] [--workers N] [--fib N]
//
// Scenarios (each run interleaves every implementation, so drift hits all rows alike):
//   fib       fib(N) forking at every call: spindle::join (on a default executor and on one
//             with private joins; each also on workers - 1 workers, so that with the joining
//             caller spindle runs as many threads as oneTBB's arena), spindle::task_group,
//             spindle::join with a serial cutoff, tbb::task_group, OpenMP tasks; serial fib in
//             the same run.
//   spawn     one outside thread submits 1,000,000 empty tasks and waits for all of them:
//             spindle post / task_group / spawn+join vs tbb::task_group::run and
//             tbb::task_arena::enqueue.
//   for       a trivial loop body over 10,000,000 elements: spindle::parallel_for (its
//             automatic grain, grain 1, grain 4096, also with private joins) vs
//             tbb::parallel_for and `omp parallel for`; serial in the same run.
//   idle      CPU time burned by an idle executor of 2 workers over 2 s (getrusage).
// Every scenario checks its result (fib value, task count, element checksum) and fails loudly
// when it is wrong.
//
// Anchors (anchors.hpp), where found, a process of their own per run with --workers threads:
// rayon (fib, spawn, for), tokio (spawn) and Go (fib, spawn). tokio has no fib or for row and
// Go no for row (bench/anchors/README.md says why).
//
// executor_sweep_impls (sweep.hpp) hands the fib, spawn and for workloads to `spindle-bench
// sweep`, built for a given worker count, the anchors among them.

#include "anchors.hpp"
#include "bench/support/executor_workloads.hpp"
#include "bench_common.hpp"
#include "sweep.hpp"

#include <spindle/executor.hpp>
#include <spindle/executor_options.hpp>
#include <spindle/parallel.hpp>
#include <spindle/task_group.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/support/peers.hpp"

namespace {

using spindle_bench::clock;
using spindle_bench::fib_group;
using spindle_bench::fib_join;
using spindle_bench::fib_join_cutoff;
using spindle_bench::fib_serial;
using spindle_bench::row;
#if defined(SPINDLE_HAVE_TBB)
using spindle_bench::fib_tbb;
#endif
#if defined(SPINDLE_HAVE_OPENMP)
using spindle_bench::fib_omp;
#endif

using spindle_bench::check;
using spindle_bench::time_ms;
using spindle_bench::anchors::program;

// ---- the Rust and Go anchors (anchors.hpp): one process per run, with `workers` threads ----

/// What the anchor rows say of their workloads, shared by the tables and the sweep.
namespace anchor_notes {

auto rayon_fib() -> std::string {
  return spindle_bench::anchors::describe(program::rust, "rayon") +
         "; rayon::join at every call, in ThreadPool::install";
}

auto go_fib() -> std::string {
  return spindle_bench::anchors::describe(program::go, "") +
         "; a goroutine for one half at every call, joined through a channel; GOMAXPROCS = "
         "workers";
}

auto rayon_for() -> std::string {
  return spindle_bench::anchors::describe(program::rust, "rayon") + "; par_iter_mut, the same body";
}

auto rayon_spawn() -> std::string {
  return spindle_bench::anchors::describe(program::rust, "rayon") +
         "; ThreadPool::spawn from outside the pool, count down a shared counter";
}

auto tokio_spawn() -> std::string {
  return spindle_bench::anchors::describe(program::rust, "tokio") +
         "; Runtime::spawn from outside the runtime, count down a shared counter";
}

auto go_spawn() -> std::string {
  return spindle_bench::anchors::describe(program::go, "") +
         "; a goroutine per task, sync.WaitGroup; GOMAXPROCS = workers";
}

}  // namespace anchor_notes

/// Milliseconds of fib(n) (`exec fib`) or of the parallel loop over `elements` (`exec pfor`),
/// or million tasks per second of `exec spawn` (with --runtime unless empty), all from the secs
/// of one run of `p` with `workers` threads; NaN when the run failed.
auto anchor_fib_ms(program p, int n, std::size_t workers) -> double {
  return spindle_bench::anchors::figure(
      p, {"exec", "fib", "--n", std::to_string(n), "--threads", std::to_string(workers)}, "secs",
      1e3);
}

auto anchor_for_ms(std::size_t elements, std::size_t workers) -> double {
  return spindle_bench::anchors::figure(
      program::rust,
      {"exec", "pfor", "--n", std::to_string(elements), "--threads", std::to_string(workers)},
      "secs", 1e3);
}

auto anchor_spawn_mtasks(program p, std::string const& runtime, std::size_t tasks,
                         std::size_t workers) -> double {
  std::vector<std::string> args{
      "exec", "spawn", "--tasks", std::to_string(tasks), "--threads", std::to_string(workers)};
  if (!runtime.empty()) {
    args.insert(args.end(), {"--runtime", runtime});
  }
  return spindle_bench::anchors::rate(p, args, static_cast<double>(tasks));
}

// ---- spawn: one outside thread submits `tasks` empty tasks and waits for all of them; each
// returns the milliseconds it took and checks that every task ran ----

auto spawn_post(spindle::executor& ex, std::size_t tasks) -> double {
  std::latch left(static_cast<std::ptrdiff_t>(tasks));
  return time_ms([&] {
    for (std::size_t i = 0; i < tasks; ++i) {
      ex.post([&left] { left.count_down(); });
    }
    left.wait();
  });
}

auto spawn_group(spindle::executor& ex, std::size_t tasks) -> double {
  std::atomic<std::size_t> count{0};
  double const ms = time_ms([&] {
    spindle::task_group g{ex};
    for (std::size_t i = 0; i < tasks; ++i) {
      g.spawn([&count] { count.fetch_add(1, std::memory_order_relaxed); });
    }
    g.wait();
  });
  check(count.load() == tasks, "spindle task_group spawn count");
  return ms;
}

auto spawn_join(spindle::executor& ex, std::size_t tasks) -> double {
  std::vector<spindle::join_handle<void>> hs;
  hs.reserve(tasks);
  return time_ms([&] {
    for (std::size_t i = 0; i < tasks; ++i) {
      hs.push_back(ex.spawn([] {}));
    }
    for (auto& h : hs) {
      h.join();
    }
  });
}

#if defined(SPINDLE_HAVE_TBB)
// tbb::task_group::run from a thread outside any arena: the tasks go to that thread's implicit
// arena, whose concurrency the active tbb::global_control limits.
auto spawn_tbb_group(std::size_t tasks) -> double {
  std::atomic<std::size_t> count{0};
  double const ms = time_ms([&] {
    tbb::task_group g;
    for (std::size_t i = 0; i < tasks; ++i) {
      g.run([&count] { count.fetch_add(1, std::memory_order_relaxed); });
    }
    g.wait();
  });
  check(count.load() == tasks, "tbb task_group spawn count");
  return ms;
}

auto spawn_tbb_enqueue(tbb::task_arena& arena, std::size_t tasks) -> double {
  std::latch left(static_cast<std::ptrdiff_t>(tasks));
  return time_ms([&] {
    for (std::size_t i = 0; i < tasks; ++i) {
      arena.enqueue([&left] { left.count_down(); });
    }
    left.wait();
  });
}
#endif

// ---- parallel_for: a trivial body, data[i] = data[i] * 3 + 1 over data[i] = i ----

class loop_data {
 public:
  explicit loop_data(std::size_t elements) : data_(elements) {
    for (std::size_t i = 0; i < elements; ++i) {
      expected_sum_ += static_cast<std::uint32_t>(static_cast<std::uint32_t>(i) * 3U + 1U);
    }
  }

  /// Refills the data, times `loop(size, body)`, and checks every element was updated once.
  template <class Loop>
  auto timed(char const* who, Loop&& loop) -> double {
    for (std::size_t i = 0; i < data_.size(); ++i) {
      data_[i] = static_cast<std::uint32_t>(i);
    }
    auto body = [this](std::size_t i) { data_[i] = data_[i] * 3 + 1; };
    double const ms = time_ms([&] { loop(data_.size(), body); });
    std::uint64_t sum = 0;
    for (auto const v : data_) {
      sum += v;
    }
    check(sum == expected_sum_, std::string(who) + " parallel_for checksum");
    return ms;
  }

 private:
  std::vector<std::uint32_t> data_;
  std::uint64_t expected_sum_ = 0;
};

auto for_serial(loop_data& d) -> double {
  return d.timed("serial", [](std::size_t n, auto const& body) {
    for (std::size_t i = 0; i < n; ++i) {
      body(i);
    }
  });
}

auto for_spindle(spindle::executor& ex, loop_data& d) -> double {
  return d.timed("spindle", [&ex](std::size_t n, auto const& body) {
    spindle::parallel_for(ex, std::size_t{0}, n, body);
  });
}

auto for_spindle_grain(spindle::executor& ex, loop_data& d, std::size_t grain) -> double {
  return d.timed("spindle grain", [&ex, grain](std::size_t n, auto const& body) {
    spindle::parallel_for(ex, std::size_t{0}, n, grain, body);
  });
}

#if defined(SPINDLE_HAVE_TBB)
auto for_tbb(tbb::task_arena& arena, loop_data& d) -> double {
  return d.timed("tbb", [&arena](std::size_t n, auto const& body) {
    arena.execute([&] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n),
                        [&](tbb::blocked_range<std::size_t> const& range) {
                          for (std::size_t i = range.begin(); i != range.end(); ++i) {
                            body(i);
                          }
                        });
    });
  });
}
#endif

#if defined(SPINDLE_HAVE_OPENMP)
auto for_omp(int threads, loop_data& d) -> double {
  return d.timed("omp", [threads](std::size_t size, auto const& body) {
    auto const n = static_cast<std::int64_t>(size);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::int64_t i = 0; i < n; ++i) {
      body(static_cast<std::size_t>(i));
    }
  });
}
#endif

auto run_executor(std::span<char const* const> args) -> int {
  spindle_bench::options const opt(args);
  auto const runs = static_cast<int>(opt.get_int("runs", 5));
  bool const json = opt.flag("json");
  auto const hw = std::thread::hardware_concurrency();
  auto const workers = static_cast<std::size_t>(opt.get_int("workers", hw == 0 ? 2 : hw));
  auto const fib_n = static_cast<int>(opt.get_int("fib", 30));
  auto const tasks = static_cast<std::size_t>(opt.get_int("tasks", 1'000'000));
  auto const elems = static_cast<std::size_t>(opt.get_int("elements", 10'000'000));
  bool const skip_slow = opt.flag("quick");
  // --only idle,fib,spawn,for: run only the named scenarios (default: all of them).
  std::string const only = opt.get_string("only", "idle,fib,spawn,for");
  auto const want = [&only](char const* name) { return only.find(name) != std::string::npos; };

  spindle::executor ex{workers};
#if defined(SPINDLE_HAVE_TBB)
  tbb::global_control tbb_threads(tbb::global_control::max_allowed_parallelism, workers);
  tbb::task_arena arena(static_cast<int>(workers));
#endif
  auto const threads = static_cast<int>(workers);
  static_cast<void>(threads);

  // ---- idle CPU ----
  row idle{"spindle executor{2}",
           "CPU time of the whole process over 2 s idle (measured first, before any peer starts "
           "threads)",
           {}};
  auto const cpu_ms = spindle_bench::process_cpu_ms;
  int const idle_runs = !want("idle") ? 0 : skip_slow ? 1 : (runs < 3 ? runs : 3);
  for (int r = 0; r < idle_runs; ++r) {
    spindle::executor two{2};
    two.spawn([] {}).join();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    double const before = cpu_ms();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    idle.sample.push_back(cpu_ms() - before);
  }
  if (idle_runs > 0) {
    spindle_bench::print_table("executor: idle CPU over 2 s", "ms CPU", false, {idle},
                               "spindle executor{2}", json);
  }
  // ---- fib ----
  std::uint64_t const fib_expected = fib_serial(fib_n);
  row f_join{"spindle join", "fork at every call, no allocation", {}};
  row f_private{"spindle join, private joins",
                "as spindle join, on an executor with executor_options::private_joins",
                {}};
  // The two rows above join from this thread, which takes a guest slot beside all `workers`
  // workers: one thread more than oneTBB's arena, which reserves one of its `workers` slots
  // for the thread that calls execute(). These two give spindle the same thread count.
  row f_join_fair{"spindle join, N-1 workers + caller",
                  "as spindle join, on an executor of workers - 1: as many threads as oneTBB's "
                  "arena",
                  {}};
  row f_private_fair{"spindle join, private joins, N-1 workers + caller",
                     "as spindle join, private joins, on an executor of workers - 1",
                     {}};
  row f_group{"spindle task_group", "fork at every call, one node per spawn", {}};
  row f_cut{"spindle join, cutoff n<20", "serial below 20", {}};
  row f_serial{"serial", "the floor", {}};
  row f_tbb{"oneTBB task_group", "fork at every call", {}};
  row f_omp{"OpenMP task", "fork at every call (at most 3 runs)", {}};
  row f_rayon{"rayon join", anchor_notes::rayon_fib(), {}};
  row f_go{"Go goroutines", anchor_notes::go_fib(), {}};
  int const fib_runs = want("fib") ? runs : 0;
  // The anchors, where found; asked only when a scenario that has them runs.
  bool const rust = (want("fib") || want("spawn") || want("for")) &&
                    spindle_bench::anchors::available(program::rust);
  bool const go = (want("fib") || want("spawn")) && spindle_bench::anchors::available(program::go);
  int const for_runs = want("for") ? runs : 0;
  // join and parallel_for again on an executor with private joins (executor_options.hpp).
  std::optional<spindle::executor> ex_private;
  if (fib_runs > 0 || for_runs > 0) {
    ex_private.emplace(spindle::executor_options().workers(workers).private_joins(true));
  }
  // fib on workers - 1 workers plus the joining caller (only when that leaves a worker).
  std::optional<spindle::executor> ex_fair;
  std::optional<spindle::executor> ex_private_fair;
  if (fib_runs > 0 && workers >= 2) {
    ex_fair.emplace(workers - 1);
    ex_private_fair.emplace(spindle::executor_options().workers(workers - 1).private_joins(true));
  }
  for (int r = 0; r < fib_runs; ++r) {
    std::uint64_t v = 0;
    f_join.sample.push_back(time_ms([&] { v = fib_join(ex, fib_n); }));
    check(v == fib_expected, "spindle join fib");
    f_private.sample.push_back(time_ms([&] { v = fib_join(*ex_private, fib_n); }));
    check(v == fib_expected, "spindle private joins fib");
    if (ex_fair) {
      f_join_fair.sample.push_back(time_ms([&] { v = fib_join(*ex_fair, fib_n); }));
      check(v == fib_expected, "spindle join fib, workers - 1");
      f_private_fair.sample.push_back(time_ms([&] { v = fib_join(*ex_private_fair, fib_n); }));
      check(v == fib_expected, "spindle private joins fib, workers - 1");
    }
    f_serial.sample.push_back(time_ms([&] { v = fib_serial(fib_n); }));
    check(v == fib_expected, "serial fib");
    f_cut.sample.push_back(time_ms([&] { v = fib_join_cutoff(ex, fib_n); }));
    check(v == fib_expected, "spindle cutoff fib");
    f_group.sample.push_back(time_ms([&] { v = fib_group(ex, fib_n); }));
    check(v == fib_expected, "spindle task_group fib");
#if defined(SPINDLE_HAVE_TBB)
    f_tbb.sample.push_back(time_ms([&] { arena.execute([&] { v = fib_tbb(fib_n); }); }));
    check(v == fib_expected, "tbb fib");
#endif
#if defined(SPINDLE_HAVE_OPENMP)
    // OpenMP's fork at every call takes seconds: at most 3 runs keep the headline short.
    if (!skip_slow && r < 3) {
      f_omp.sample.push_back(time_ms([&] { v = fib_omp(fib_n, threads); }));
      check(v == fib_expected, "omp fib");
    }
#endif
    if (rust) {
      f_rayon.sample.push_back(anchor_fib_ms(program::rust, fib_n, workers));
    }
    if (go) {
      f_go.sample.push_back(anchor_fib_ms(program::go, fib_n, workers));
    }
  }
  std::vector<row> fib_rows{f_join, f_private};
  if (ex_fair) {
    fib_rows.push_back(f_join_fair);
    fib_rows.push_back(f_private_fair);
  }
  fib_rows.insert(fib_rows.end(), {f_group, f_cut, f_serial});
#if defined(SPINDLE_HAVE_TBB)
  fib_rows.push_back(f_tbb);
#endif
  if (!f_omp.sample.empty()) {
    fib_rows.push_back(f_omp);
  }
  if (rust) {
    fib_rows.push_back(f_rayon);
  }
  if (go) {
    fib_rows.push_back(f_go);
  }
  if (fib_runs > 0) {
    spindle_bench::print_table(
        "executor: fib(" + std::to_string(fib_n) + ") with " + std::to_string(workers) + " workers",
        "ms", false, fib_rows, "spindle join", json);
  }

  // ---- spawn throughput from one outside thread ----
  row s_post{"spindle post", "count down a latch per task", {}};
  row s_group{"spindle task_group", "spawn + wait", {}};
  row s_spawn{"spindle spawn+join", "one join_handle per task, joined in order", {}};
  row s_tbb{"oneTBB task_group run", "run + wait, from outside the arena", {}};
  row s_tbb_enq{"oneTBB arena enqueue", "count down a latch per task", {}};
  row s_rayon{"rayon spawn", anchor_notes::rayon_spawn(), {}};
  row s_tokio{"tokio spawn", anchor_notes::tokio_spawn(), {}};
  row s_go{"Go goroutines", anchor_notes::go_spawn(), {}};
  auto const per_s = [&](double ms) { return static_cast<double>(tasks) / ms / 1e3; };
  int const spawn_runs = want("spawn") ? runs : 0;
  for (int r = 0; r < spawn_runs; ++r) {
    s_post.sample.push_back(per_s(spawn_post(ex, tasks)));
    s_group.sample.push_back(per_s(spawn_group(ex, tasks)));
    s_spawn.sample.push_back(per_s(spawn_join(ex, tasks)));
#if defined(SPINDLE_HAVE_TBB)
    s_tbb.sample.push_back(per_s(spawn_tbb_group(tasks)));
    s_tbb_enq.sample.push_back(per_s(spawn_tbb_enqueue(arena, tasks)));
#endif
    if (rust) {
      s_rayon.sample.push_back(anchor_spawn_mtasks(program::rust, "rayon", tasks, workers));
      s_tokio.sample.push_back(anchor_spawn_mtasks(program::rust, "tokio", tasks, workers));
    }
    if (go) {
      s_go.sample.push_back(anchor_spawn_mtasks(program::go, "", tasks, workers));
    }
  }
  std::vector<row> spawn_rows{s_post, s_group, s_spawn};
#if defined(SPINDLE_HAVE_TBB)
  spawn_rows.push_back(s_tbb);
  spawn_rows.push_back(s_tbb_enq);
#endif
  if (rust) {
    spawn_rows.push_back(s_rayon);
    spawn_rows.push_back(s_tokio);
  }
  if (go) {
    spawn_rows.push_back(s_go);
  }
  if (spawn_runs > 0) {
    spindle_bench::print_table(
        "executor: " + std::to_string(tasks) + " empty tasks from one outside thread", "M tasks/s",
        true, spawn_rows, "spindle post", json);
  }

  // ---- parallel_for ----
  loop_data data(for_runs > 0 ? elems : 0);
  row p_spindle{"spindle parallel_for", "automatic grain, adaptive splitting", {}};
  row p_private{"spindle parallel_for, private joins",
                "automatic grain, on an executor with executor_options::private_joins",
                {}};
  row p_spindle_1{"spindle parallel_for grain 1", "the adaptive splitter alone", {}};
  row p_spindle_g{"spindle parallel_for grain 4096", "", {}};
  row p_serial{"serial", "the same loop", {}};
  row p_tbb{"oneTBB parallel_for", "blocked_range, auto_partitioner", {}};
  row p_omp{"OpenMP parallel for", "schedule(static)", {}};
  row p_rayon{"rayon par_iter_mut", anchor_notes::rayon_for(), {}};
  for (int r = 0; r < for_runs; ++r) {
    p_serial.sample.push_back(for_serial(data));
    p_spindle.sample.push_back(for_spindle(ex, data));
    p_private.sample.push_back(for_spindle(*ex_private, data));
    p_spindle_1.sample.push_back(for_spindle_grain(ex, data, 1));
    p_spindle_g.sample.push_back(for_spindle_grain(ex, data, 4096));
#if defined(SPINDLE_HAVE_TBB)
    p_tbb.sample.push_back(for_tbb(arena, data));
#endif
#if defined(SPINDLE_HAVE_OPENMP)
    p_omp.sample.push_back(for_omp(threads, data));
#endif
    if (rust) {
      p_rayon.sample.push_back(anchor_for_ms(elems, workers));
    }
  }
  ex_private.reset();
  std::vector<row> for_rows{p_spindle, p_private, p_spindle_1, p_spindle_g, p_serial};
#if defined(SPINDLE_HAVE_TBB)
  for_rows.push_back(p_tbb);
#endif
#if defined(SPINDLE_HAVE_OPENMP)
  for_rows.push_back(p_omp);
#endif
  if (rust) {
    for_rows.push_back(p_rayon);
  }
  if (for_runs > 0) {
    spindle_bench::print_table("executor: parallel_for over " + std::to_string(elems) + " elements",
                               "ms", false, for_rows, "spindle parallel_for", json);
  }

  return 0;
}

spindle_bench::registrar const executor_cmd{
    {"executor",
     "work-stealing executor vs oneTBB, OpenMP, rayon, tokio and Go: fib(30), 1M spawns, "
     "parallel_for, idle CPU "
     "[--runs R] [--json] [--workers N] [--quick] [--only idle,fib,spawn,for]",
     run_executor}};

/// Everything the executor sweep's implementations share at one worker count. TBB's
/// global_control lets its arena have `workers` threads even past the number of CPUs; it is
/// made before the arena and outlives it.
struct sweep_context {
  explicit sweep_context(std::size_t workers, std::size_t elements)
      : ex{workers},
#if defined(SPINDLE_HAVE_TBB)
        tbb_threads(tbb::global_control::max_allowed_parallelism, workers),
        arena(static_cast<int>(workers)),
#endif
        threads(static_cast<int>(workers)),
        data(elements) {
  }

  spindle::executor ex;
  std::optional<spindle::executor> ex_private;  // executor_options::private_joins; fib only
#if defined(SPINDLE_HAVE_TBB)
  tbb::global_control tbb_threads;
  tbb::task_arena arena;
#endif
  int threads;
  loop_data data;
};

}  // namespace

namespace spindle_bench {

auto executor_sweep_impls(std::string_view scenario, std::size_t workers,
                          executor_sweep_sizes const& sizes) -> std::vector<sweep_impl> {
  auto const ctx = std::make_shared<sweep_context>(workers, scenario == "for" ? sizes.elements : 0);
  std::vector<sweep_impl> impls;
  auto add = [&impls](std::string name, std::string note, sweep_family family,
                      std::function<double()> measure) {
    impls.push_back({std::move(name), std::move(note), family, std::move(measure)});
  };
  if (scenario == "fib") {
    int const n = sizes.fib;
    auto const expected = fib_serial(n);
    add("spindle join", "fork at every call", sweep_family::spindle, [ctx, n, expected] {
      std::uint64_t v = 0;
      double const ms = time_ms([&] { v = fib_join(ctx->ex, n); });
      check(v == expected, "spindle join fib");
      return ms;
    });
    ctx->ex_private.emplace(spindle::executor_options().workers(workers).private_joins(true));
    add("spindle join, private joins", "fork at every call, executor_options::private_joins",
        sweep_family::spindle, [ctx, n, expected] {
          std::uint64_t v = 0;
          double const ms = time_ms([&] { v = fib_join(*ctx->ex_private, n); });
          check(v == expected, "spindle private joins fib");
          return ms;
        });
    add("spindle task_group", "fork at every call, one node per spawn", sweep_family::spindle,
        [ctx, n, expected] {
          std::uint64_t v = 0;
          double const ms = time_ms([&] { v = fib_group(ctx->ex, n); });
          check(v == expected, "spindle task_group fib");
          return ms;
        });
#if defined(SPINDLE_HAVE_TBB)
    add("oneTBB task_group", "fork at every call, in a task_arena", sweep_family::peer,
        [ctx, n, expected] {
          std::uint64_t v = 0;
          double const ms = time_ms([&] { ctx->arena.execute([&] { v = fib_tbb(n); }); });
          check(v == expected, "tbb fib");
          return ms;
        });
#endif
#if defined(SPINDLE_HAVE_OPENMP)
    add("OpenMP task", "fork at every call, num_threads(workers)", sweep_family::peer,
        [ctx, n, expected] {
          std::uint64_t v = 0;
          double const ms = time_ms([&] { v = fib_omp(n, ctx->threads); });
          check(v == expected, "omp fib");
          return ms;
        });
#endif
    if (anchors::available(program::rust)) {
      impls.push_back({"rayon join", anchor_notes::rayon_fib(), sweep_family::peer,
                       [n, workers] { return anchor_fib_ms(program::rust, n, workers); }, false});
    }
    if (anchors::available(program::go)) {
      impls.push_back({"Go goroutines", anchor_notes::go_fib(), sweep_family::peer,
                       [n, workers] { return anchor_fib_ms(program::go, n, workers); }, false});
    }
    add("serial", "the floor, one thread", sweep_family::baseline, [n, expected] {
      std::uint64_t v = 0;
      double const ms = time_ms([&] { v = fib_serial(n); });
      check(v == expected, "serial fib");
      return ms;
    });
  } else if (scenario == "spawn") {
    std::size_t const tasks = sizes.tasks;
    auto per_s = [tasks](double ms) { return static_cast<double>(tasks) / ms / 1e3; };
    add("spindle post", "count down a latch per task", sweep_family::spindle,
        [ctx, tasks, per_s] { return per_s(spawn_post(ctx->ex, tasks)); });
    add("spindle task_group", "spawn + wait", sweep_family::spindle,
        [ctx, tasks, per_s] { return per_s(spawn_group(ctx->ex, tasks)); });
#if defined(SPINDLE_HAVE_TBB)
    add("oneTBB task_group run", "run + wait, from outside the arena", sweep_family::peer,
        [tasks, per_s] { return per_s(spawn_tbb_group(tasks)); });
    add("oneTBB arena enqueue", "count down a latch per task", sweep_family::peer,
        [ctx, tasks, per_s] { return per_s(spawn_tbb_enqueue(ctx->arena, tasks)); });
#endif
    if (anchors::available(program::rust)) {
      impls.push_back(
          {"rayon spawn", anchor_notes::rayon_spawn(), sweep_family::peer,
           [tasks, workers] { return anchor_spawn_mtasks(program::rust, "rayon", tasks, workers); },
           false});
      impls.push_back(
          {"tokio spawn", anchor_notes::tokio_spawn(), sweep_family::peer,
           [tasks, workers] { return anchor_spawn_mtasks(program::rust, "tokio", tasks, workers); },
           false});
    }
    if (anchors::available(program::go)) {
      impls.push_back(
          {"Go goroutines", anchor_notes::go_spawn(), sweep_family::peer,
           [tasks, workers] { return anchor_spawn_mtasks(program::go, "", tasks, workers); },
           false});
    }
  } else if (scenario == "for") {
    add("spindle parallel_for", "automatic grain, adaptive splitting", sweep_family::spindle,
        [ctx] { return for_spindle(ctx->ex, ctx->data); });
#if defined(SPINDLE_HAVE_TBB)
    add("oneTBB parallel_for", "blocked_range, auto_partitioner", sweep_family::peer,
        [ctx] { return for_tbb(ctx->arena, ctx->data); });
#endif
#if defined(SPINDLE_HAVE_OPENMP)
    add("OpenMP parallel for", "schedule(static)", sweep_family::peer,
        [ctx] { return for_omp(ctx->threads, ctx->data); });
#endif
    if (anchors::available(program::rust)) {
      auto const elements = sizes.elements;
      impls.push_back({"rayon par_iter_mut", anchor_notes::rayon_for(), sweep_family::peer,
                       [elements, workers] { return anchor_for_ms(elements, workers); }, false});
    }
    add("serial", "the same loop, one thread", sweep_family::baseline,
        [ctx] { return for_serial(ctx->data); });
  } else {
    throw std::invalid_argument("executor sweep: no scenario " + std::string(scenario));
  }
  return impls;
}

}  // namespace spindle_bench

#pragma once
// The scaling sweeps of `spindle-bench sweep` (scenarios_sweep.cpp): what a scenario file hands
// the sweep for one thread count. The sweep builds the implementations of a scenario once per
// thread count, measures them interleaved and rotated, and writes the figures as Markdown and
// JSON (tools/plot/README.md describes the JSON).

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace spindle_bench {

/// Where an implementation stands in the ratio plots: spindle's rows, a peer library's, or a
/// baseline that is no contender (the serial loop).
enum class sweep_family { spindle, peer, baseline };

/// One implementation at one thread count: `measure` runs the workload once, checks its result
/// (failing the process loudly when it is wrong) and returns the figure in the scenario's unit,
/// or NaN for a run that failed without stopping the sweep (an anchor process, anchors.hpp).
/// `warmup`: whether the scenario's untimed first run applies; an anchor, a new process every
/// run, has nothing to warm.
struct sweep_impl {
  std::string name;
  std::string note;
  sweep_family family = sweep_family::peer;
  std::function<double()> measure;
  bool warmup = true;
};

/// The workload sizes of the executor sweeps; they do not change with the thread count, so
/// that times at different thread counts compare.
struct executor_sweep_sizes {
  int fib = 25;
  std::size_t tasks = 200'000;
  std::size_t elements = 10'000'000;
};

/// The executor implementations of `scenario` ("fib": time of fib(N) forking at every call;
/// "spawn": tasks per second submitted from one outside thread; "for": time of a parallel loop),
/// each with `workers` worker threads: spindle::executor{workers}, a oneTBB task_arena of
/// `workers` threads, OpenMP with num_threads(workers), where those peers are built.
auto executor_sweep_impls(std::string_view scenario, std::size_t workers,
                          executor_sweep_sizes const& sizes) -> std::vector<sweep_impl>;

}  // namespace spindle_bench

#pragma once
// Shared plumbing of spindle-bench: subcommand registry, option parsing, statistics and the
// Markdown/JSON result table. Scenario files (scenarios_*.cpp) register their subcommands with
// a static `registrar` and report rows through `result_table`.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace spindle_bench {

using clock = std::chrono::steady_clock;

struct subcommand {
  std::string name;
  std::string help;
  std::function<int(std::span<char const* const>)> run;
};

auto subcommands() -> std::map<std::string, subcommand>&;

struct registrar {
  explicit registrar(subcommand cmd);
};

/// `--key value` and `--flag` options after the subcommand name.
class options {
 public:
  explicit options(std::span<char const* const> args);

  [[nodiscard]] auto get_int(std::string const& key, std::int64_t fallback) const -> std::int64_t;
  [[nodiscard]] auto get_string(std::string const& key, std::string fallback) const -> std::string;
  [[nodiscard]] auto flag(std::string const& key) const -> bool;

 private:
  std::map<std::string, std::string> values_;
};

/// Median, minimum and maximum of a sample, its NaNs (failed runs) left out.
struct summary {
  double median = 0;
  double min = 0;
  double max = 0;
};

auto summarize(std::vector<double> sample) -> summary;

/// One row per implementation; `higher_is_better` decides how ratios read. A NaN in `sample`
/// is a run that failed without stopping the benchmark (an anchor process, anchors.hpp):
/// summarize() leaves it out and print_table() counts it in the note.
struct row {
  std::string name;
  std::string note;  // e.g. "spin-then-yield receive (no blocking receive)"
  std::vector<double> sample;
};

/// Prints rows as a Markdown table (or JSON with `json`): median, min, max, and each row's
/// ratio to the reference row (spindle), so that ratio > 1 means "better than spindle" never
/// needs guessing: the header says what the ratio is.
void print_table(std::string const& title, std::string const& unit, bool higher_is_better,
                 std::vector<row> const& rows, std::string const& reference, bool json);

/// Fails the process loudly: a benchmark that lost or duplicated an item reports no figure.
[[noreturn]] void fail(std::string const& what);

/// Fails the process (fail()) unless `ok`: a benchmark's result check.
inline void check(bool ok, std::string const& what) {
  if (!ok) {
    fail(what);
  }
}

/// Wall time of one call of `fn`, in milliseconds.
template <class Fn>
auto time_ms(Fn&& fn) -> double {
  auto const t0 = clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
}

/// Where a figure was measured, for the JSON files: the CPU model (/proc/cpuinfo "model
/// name"), the number of CPUs, the compiler (__VERSION__), the commit spindle-bench was
/// configured at (SPINDLE_BENCH_COMMIT, "unknown" without git) and the UTC date and time.
struct machine_info {
  std::string cpu_model;
  unsigned cpus = 0;
  std::string compiler;
  std::string commit;
  std::string date;
};

auto machine() -> machine_info;

/// `s` as a JSON string literal, quotes included.
auto json_string(std::string_view s) -> std::string;

/// machine() as a JSON object.
auto machine_json() -> std::string;

}  // namespace spindle_bench

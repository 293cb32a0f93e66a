// spindle-bench: scenario benchmarks that run spindle and its peers side by side.
//   spindle-bench <subcommand> [--option value ...]
//   spindle-bench help

#include "bench_common.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iostream>
#include <thread>

namespace spindle_bench {

auto subcommands() -> std::map<std::string, subcommand>& {
  static std::map<std::string, subcommand> all;
  return all;
}

registrar::registrar(subcommand cmd) {
  auto name = cmd.name;
  subcommands().emplace(std::move(name), std::move(cmd));
}

options::options(std::span<char const* const> args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (!arg.starts_with("--")) {
      throw std::invalid_argument("unexpected argument: " + std::string(arg));
    }
    std::string key(arg.substr(2));
    if (auto eq = key.find('='); eq != std::string::npos) {
      values_[key.substr(0, eq)] = key.substr(eq + 1);
    } else if (i + 1 < args.size() && !std::string_view(args[i + 1]).starts_with("--")) {
      values_[key] = args[++i];
    } else {
      values_[key] = "";
    }
  }
}

auto options::get_int(std::string const& key, std::int64_t fallback) const -> std::int64_t {
  auto it = values_.find(key);
  if (it == values_.end()) {
    return fallback;
  }
  std::size_t used = 0;
  auto value = std::stoll(it->second, &used);
  if (used != it->second.size() || value < 0) {
    throw std::invalid_argument("--" + key + " takes a non-negative integer");
  }
  return value;
}

auto options::get_string(std::string const& key, std::string fallback) const -> std::string {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

auto options::flag(std::string const& key) const -> bool {
  return values_.contains(key);
}

auto summarize(std::vector<double> sample) -> summary {
  std::erase_if(sample, [](double v) { return std::isnan(v); });  // failed runs
  if (sample.empty()) {
    return {};
  }
  std::sort(sample.begin(), sample.end());
  auto const n = sample.size();
  double const median = n % 2 == 1 ? sample[n / 2] : (sample[n / 2 - 1] + sample[n / 2]) / 2;
  return {median, sample.front(), sample.back()};
}

void print_table(std::string const& title, std::string const& unit, bool higher_is_better,
                 std::vector<row> const& rows, std::string const& reference, bool json) {
  double ref = 0;
  for (auto const& r : rows) {
    if (r.name == reference) {
      ref = summarize(r.sample).median;
    }
  }
  // A NaN in a sample is a run that failed (an anchor process, anchors.hpp): the figures leave
  // it out, and the note says how many there were.
  auto failed_runs = [](row const& r) {
    return static_cast<std::size_t>(
        std::count_if(r.sample.begin(), r.sample.end(), [](double v) { return std::isnan(v); }));
  };
  auto note = [&failed_runs](row const& r) {
    auto const failed = failed_runs(r);
    if (failed == 0) {
      return r.note;
    }
    return r.note + (r.note.empty() ? "" : "; ") + "FAILED in " + std::to_string(failed) + " of " +
           std::to_string(r.sample.size()) + " runs (stderr says why)";
  };
  if (json) {
    std::printf("{\"scenario\": \"%s\", \"unit\": \"%s\", \"rows\": [", title.c_str(),
                unit.c_str());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      auto s = summarize(rows[i].sample);
      std::printf(
          "%s{\"name\": \"%s\", \"median\": %.6g, \"min\": %.6g, \"max\": %.6g, "
          "\"runs\": %zu, \"note\": \"%s\"}",
          i == 0 ? "" : ", ", rows[i].name.c_str(), s.median, s.min, s.max,
          rows[i].sample.size() - failed_runs(rows[i]), note(rows[i]).c_str());
    }
    std::printf("]}\n");
    return;
  }
  std::printf("\n### %s\n\n", title.c_str());
  std::printf("| implementation | median %s | min | max | spindle advantage | note |\n",
              unit.c_str());
  std::printf("|---|---:|---:|---:|---:|---|\n");
  for (auto const& r : rows) {
    if (failed_runs(r) == r.sample.size()) {
      std::printf("| %s | - | - | - | - | %s |\n", r.name.c_str(), note(r).c_str());
      continue;
    }
    auto s = summarize(r.sample);
    // Advantage: how many times better spindle's median is than this row's (>1: spindle wins).
    double adv = 0;
    if (s.median > 0 && ref > 0) {
      adv = higher_is_better ? ref / s.median : s.median / ref;
    }
    std::printf("| %s | %.3f | %.3f | %.3f | %.2fx | %s |\n", r.name.c_str(), s.median, s.min,
                s.max, adv, note(r).c_str());
  }
  std::printf("\n");
  std::fflush(stdout);
}

void fail(std::string const& what) {
  std::fprintf(stderr, "spindle-bench: FAILED: %s\n", what.c_str());
  std::exit(2);
}

auto machine() -> machine_info {
  machine_info m;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.starts_with("model name")) {
      if (auto colon = line.find(':'); colon != std::string::npos) {
        auto const first = line.find_first_not_of(" \t", colon + 1);
        m.cpu_model = first == std::string::npos ? "" : line.substr(first);
      }
      break;
    }
  }
  if (m.cpu_model.empty()) {
    m.cpu_model = "unknown CPU";
  }
  m.cpus = std::thread::hardware_concurrency();
  m.compiler = __VERSION__;
#if defined(__clang__)
  m.compiler = "clang " + m.compiler;
#elif defined(__GNUC__)
  m.compiler = "g++ " + m.compiler;
#endif
#if defined(SPINDLE_BENCH_COMMIT)
  m.commit = SPINDLE_BENCH_COMMIT;
#else
  m.commit = "unknown";
#endif
  auto const now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  m.date = buf;
  return m;
}

auto json_string(std::string_view s) -> std::string {
  std::string out = "\"";
  for (char const c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

auto machine_json() -> std::string {
  auto const m = machine();
  return "{\"cpu_model\": " + json_string(m.cpu_model) + ", \"cpus\": " + std::to_string(m.cpus) +
         ", \"compiler\": " + json_string(m.compiler) + ", \"commit\": " + json_string(m.commit) +
         ", \"date\": " + json_string(m.date) + "}";
}

}  // namespace spindle_bench

auto main(int argc, char** argv) -> int {
  auto& cmds = spindle_bench::subcommands();
  std::string_view const cmd = argc > 1 ? argv[1] : "help";
  auto it = cmds.find(std::string(cmd));
  if (it == cmds.end()) {
    std::cout << "usage: spindle-bench <subcommand> [--option value ...]\n\nsubcommands:\n";
    for (auto const& [name, c] : cmds) {
      std::cout << "  " << name << "\n      " << c.help << "\n";
    }
    return cmd == "help" ? 0 : 1;
  }
  try {
    return it->second.run(
        std::span<char const* const>(argv + 2, static_cast<std::size_t>(argc - 2)));
  } catch (std::exception const& e) {
    std::cerr << "spindle-bench " << cmd << ": " << e.what() << "\n";
    return 1;
  }
}

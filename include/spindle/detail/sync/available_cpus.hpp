// SPDX-License-Identifier: BSL-1.0
#pragma once
// How many processors this process may use: the one answer behind an executor's default
// worker count and a channel's "do the users fit the cores" spin decision.
//
// std::thread::hardware_concurrency() counts the machine's processors, which is too many for a
// process pinned to some of them (taskset, a container's cpuset) or limited by a CPU quota (a
// container with `--cpus`, a systemd CPUQuota): threads beyond what the process can run at once
// only take turns, and spinning threads then steal time from the thread they wait for. So:
//   1. the processors in the affinity mask (sched_getaffinity of the calling thread, which is
//      the process's unless the thread was pinned apart; Linux), or
//      hardware_concurrency() where there is no such call or it fails;
//   2. capped by the cgroup v2 CPU quota of /sys/fs/cgroup/cpu.max, "<quota> <period>" in
//      microseconds: quota / period processors, rounded up; "max" means no quota, and a file
//      that is missing or does not parse counts as no quota (cgroup v1 is not read);
//   3. at least 1.
// Go's runtime (GOMAXPROCS, since Go 1.25) and .NET's Environment.ProcessorCount also take
// both the affinity mask and the cgroup quota into account.
//
// Read once per process, at first use: a later change of the mask or quota is not seen.

#include <spindle/detail/sync/config.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string_view>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// The processors a cgroup v2 `cpu.max` line grants: nullopt for "max <period>" (no quota) or
/// for text that is not "<quota> <period>" with two positive integers; otherwise
/// quota / period rounded up, at least 1.
inline auto parse_cpu_max(std::string_view text) noexcept -> std::optional<std::size_t> {
  auto const read_number = [&text]() -> std::optional<std::uint64_t> {
    std::size_t digits = 0;
    std::uint64_t value = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
      if (value > (UINT64_MAX - 9) / 10) {
        return std::nullopt;  // too long to be a quota
      }
      value = value * 10 + static_cast<std::uint64_t>(text[digits] - '0');
      ++digits;
    }
    if (digits == 0) {
      return std::nullopt;
    }
    text.remove_prefix(digits);
    return value;
  };
  auto const quota = read_number();
  if (!quota || text.empty() || text.front() != ' ') {
    return std::nullopt;  // "max ..." lands here too: no quota
  }
  text.remove_prefix(1);
  auto const period = read_number();
  if (!period || *quota == 0 || *period == 0) {
    return std::nullopt;
  }
  if (!text.empty() && text != "\n") {
    return std::nullopt;
  }
  return static_cast<std::size_t>(std::max<std::uint64_t>(1, (*quota + *period - 1) / *period));
}

/// The processors the cgroup v2 quota of this process grants, or nullopt when there is none
/// (or it cannot be read).
inline auto cgroup_cpu_quota() noexcept -> std::optional<std::size_t> {
#if defined(__linux__)
  std::FILE* const file = std::fopen("/sys/fs/cgroup/cpu.max", "r");
  if (file == nullptr) {
    return std::nullopt;
  }
  char line[64] = {};
  bool const got = std::fgets(line, sizeof line, file) != nullptr;
  std::fclose(file);
  return got ? parse_cpu_max(line) : std::nullopt;
#else
  return std::nullopt;
#endif
}

/// The processors in the calling thread's affinity mask, or hardware_concurrency() where that
/// cannot be read; at least 1.
inline auto affinity_cpu_count() noexcept -> std::size_t {
#if defined(__linux__)
  // A mask sized for more processors than the kernel supports is fine; a smaller one fails
  // with EINVAL, so grow until it fits (cpu_set_t covers 1024).
  for (std::size_t cpus = 1024; cpus <= (std::size_t{1} << 20); cpus *= 2) {
    cpu_set_t* const set = CPU_ALLOC(cpus);
    if (set == nullptr) {
      break;
    }
    std::size_t const bytes = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(bytes, set);
    bool const ok = sched_getaffinity(0, bytes, set) == 0;
    int const count = ok ? CPU_COUNT_S(bytes, set) : 0;
    CPU_FREE(set);
    if (ok) {
      return count > 0 ? static_cast<std::size_t>(count) : 1;
    }
  }
#endif
  auto const n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<std::size_t>(n);
}

/// The number of processors this process may use (the rule in the file comment), read once.
inline auto available_cpus() noexcept -> std::size_t {
  static std::size_t const cpus = [] {
    std::size_t n = affinity_cpu_count();
    if (auto const quota = cgroup_cpu_quota()) {
      n = std::min(n, *quota);
    }
    return std::max<std::size_t>(n, 1);
  }();
  return cpus;
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

#pragma once
// Shared helpers of the model-checking tests: budgets that shrink under sanitizers and a line
// per exploration that says how many schedules were run.
#include <spindle/detail/sync/config.hpp>
#include <spindle/model/atomic.hpp>

#include <cstdint>
#include <cstdio>

namespace spindle_test {

#if defined(SPINDLE_TSAN) || defined(__SANITIZE_ADDRESS__)
inline constexpr std::uint64_t model_budget_divisor = 4;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr std::uint64_t model_budget_divisor = 4;
#else
inline constexpr std::uint64_t model_budget_divisor = 1;
#endif
#else
inline constexpr std::uint64_t model_budget_divisor = 1;
#endif

/// `n` executions, fewer under sanitizers (each execution runs real threads).
inline constexpr auto budget(std::uint64_t n) -> std::uint64_t {
  return n / model_budget_divisor > 0 ? n / model_budget_divisor : 1;
}

inline void print_stats(char const* name, spindle::model::report const& r) {
  std::printf("[model] %-44s %6llu executions, %4llu choice points max%s\n", name,
              static_cast<unsigned long long>(r.executions),
              static_cast<unsigned long long>(r.max_choices),
              r.exhausted ? ", every schedule within the preemption bound" : "");
}

}  // namespace spindle_test

#pragma once
// Test support for the model-checking tests: run an exploration and report it the same way in
// every test, switch on x86-TSO store buffers, check that a payload written before a hand-over
// is visible to its taker, and that each value of a scenario was taken exactly once.

#include <spindle/model/atomic.hpp>
#include <spindle/model/scheduler.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "model/support.hpp"

namespace spindle_test {

/// Explores `body` under `o`, fails the running test with the checker's message (the failure,
/// the threads' state and the replay line) if a schedule breaks it, and prints a line of
/// statistics under `name`. Returns the report for further checks (e.g. `exhausted`).
inline auto explore_and_report(char const* name, spindle::model::options const& o,
                               std::function<void()> const& body) -> spindle::model::report {
  auto r = spindle::model::explore(o, body);
  EXPECT_TRUE(r) << name << ": " << r.message;
  print_stats(name, r);
  return r;
}

/// `o` with x86-TSO store buffers (options::store_buffering).
inline auto tso(spindle::model::options o) -> spindle::model::options {
  o.store_buffering = true;
  return o;
}

/// The options `o` in the C++ memory model's weak mode (options::weak_memory).
inline auto weak(spindle::model::options o) -> spindle::model::options {
  o.weak_memory = true;
  return o;
}

/// explore_and_report() of `o` with x86-TSO store buffers, then of `o` (its seed moved on) in
/// the weak memory mode: the two explorations in which a weaker memory than sequential
/// consistency can break the body.
inline void explore_tso_then_weak(char const* name, spindle::model::options o,
                                  std::function<void()> const& body) {
  explore_and_report(name, tso(o), body);
  o.seed += 7919;
  explore_and_report((std::string(name) + " [weak memory]").c_str(), weak(o), body);
}

/// The explorations most hand-written model tests run, one per memory model: `executions`
/// random schedules and as many PCT schedules of depth 3 under sequential consistency, as many
/// PCT schedules with x86-TSO store buffers, and as many in the C++ memory model's weak mode,
/// seeded from `seed` (fewer under sanitizers, see budget()).
inline void explore_three(char const* name, std::uint64_t seed, std::uint64_t executions,
                          std::function<void()> const& body) {
  explore_and_report(name, spindle::model::random_schedules(seed, budget(executions)), body);
  explore_and_report(name, spindle::model::pct_schedules(seed + 1, budget(executions), 3), body);
  explore_and_report(name, tso(spindle::model::pct_schedules(seed + 2, budget(executions), 3)),
                     body);
  explore_and_report(name, weak(spindle::model::pct_schedules(seed + 3, budget(executions), 3)),
                     body);
}

/// `o` for an exploration that is expected to fail (a seeded bug): no report on stderr, and no
/// SPINDLE_MODEL_* environment overrides.
inline auto quiet(spindle::model::options o) -> spindle::model::options {
  o.quiet = true;
  o.use_environment = false;
  return o;
}

/// Bound of the indices the helpers below count.
inline constexpr std::size_t max_index = 48;

/// Payloads written (as plain memory the race detector sees) before their index is handed to
/// another thread, through the structure under test; whoever takes the index must see the
/// payload, or the hand-over did not publish it.
class payload_ledger {
 public:
  /// Writes the payload of `index`; returns the index, to be handed over.
  auto make(int index) -> int {
    payload_[static_cast<std::size_t>(index)].set(1000 + index);
    return index;
  }
  /// Inside an execution: checks that the payload of `index` is visible here and records the
  /// index in `into`.
  void take(std::vector<int>& into, int index) {
    spindle::model::check(payload_[static_cast<std::size_t>(index)].get() == 1000 + index,
                          "the taker saw a payload the writer had not written");
    into.push_back(index);
  }

 private:
  std::array<spindle::model::plain<int>, max_index> payload_{};
};

/// Inside an execution: each of `values` appears exactly once across `lists` (every value in
/// them is below max_index), or the execution fails.
inline void expect_each_of_once(std::vector<std::vector<int>> const& lists,
                                std::vector<int> const& values) {
  std::array<int, max_index> seen{};
  for (auto const& list : lists) {
    for (int v : list) {
      ++seen[static_cast<std::size_t>(v)];
    }
  }
  for (int v : values) {
    spindle::model::check(seen[static_cast<std::size_t>(v)] == 1,
                          "a value was lost or taken twice");
  }
}

/// Inside an execution: each index in [0, count) appears exactly once across `lists`.
inline void expect_each_once(std::vector<std::vector<int>> const& lists, int count) {
  std::vector<int> indices(static_cast<std::size_t>(count));
  std::iota(indices.begin(), indices.end(), 0);
  expect_each_of_once(lists, indices);
}

}  // namespace spindle_test

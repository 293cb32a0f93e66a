#pragma once
// The operation matrix of the model tests: for one structure, a table of its public operations
// (close, drop of the last handle, timeouts included), and one model test per unordered pair
// of them, an operation against itself included. Each pair runs on a fresh fixture built for
// that pair: operation `a` on a new model thread, operation `b` on the body's thread, then the
// body joins and calls the fixture's `finish()`, which checks the structure's invariants and
// that every value or task was delivered or destroyed exactly once.
//
//   struct my_fixture {
//     my_fixture(std::string_view a, std::string_view b);  // state both operations need
//     void finish();                                        // invariants, exactly-once
//   };
//   auto my_ops() -> std::vector<spindle_test::operation<my_fixture>> const& {
//     static std::vector<spindle_test::operation<my_fixture>> const ops{
//         {"send", [](my_fixture& f, int side) { ... }},
//         {"recv", [](my_fixture& f, int side) { ... }},
//     };
//     return ops;
//   }
//   SPINDLE_OPERATION_MATRIX(MyPairs, my_fixture, my_ops(), spindle_test::pair_schedules())
//
// registers the GoogleTest tests `Pairs/MyPairs.Explore/send_x_send`, `.../send_x_recv` and
// `.../recv_x_recv`: the names docs/design.md's matrix cites, and the names a failure prints.
// The fixture decides from the two names what state lets both operations finish without a
// third party (e.g. a buffered value for each of two receivers), so that a thread still
// blocked at the end is a lost wake-up the checker reports as a deadlock, not a test artefact.
// `side` (0 for `a`, 1 for `b`) lets the two copies of one operation use different values.
// A fixture may declare `static auto skip(std::string_view a, std::string_view b) -> char
// const*`: a non-null result is the written reason why the pair is not a valid use (e.g. two
// threads parking on one single-owner parker), and the test is reported as skipped with it.

#include <spindle/model/scheduler.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "model/support.hpp"

namespace spindle_test {

/// One row (and column) of a structure's operation matrix.
template <class Fixture>
struct operation {
  char const* name;
  std::function<void(Fixture&, int side)> run;
};

/// Two operations of a table, by index, a <= b.
struct op_pair {
  std::size_t a = 0;
  std::size_t b = 0;
};

/// GoogleTest prints a failing pair's parameter with this.
inline void PrintTo(op_pair const& p, std::ostream* os) {
  *os << "(" << p.a << ", " << p.b << ")";
}

/// Every unordered pair of `n` operations, each with itself included: n(n+1)/2 pairs.
inline auto all_pairs(std::size_t n) -> std::vector<op_pair> {
  std::vector<op_pair> out;
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a; b < n; ++b) {
      out.push_back({a, b});
    }
  }
  return out;
}

/// The schedules each pair runs by default: every schedule within one preemption (up to a
/// budget), then PCT of depth 3, then random schedules on x86-TSO store buffers, then random
/// schedules in the C++ memory model's weak mode (options::weak_memory). Fewer under
/// sanitizers (budget()). Seeds are offset per pair by explore_pair().
inline auto pair_schedules(std::uint64_t executions = 300) -> std::vector<spindle::model::options> {
  auto dfs = spindle::model::exhaustive(1, budget(executions * 4));
  auto pct = spindle::model::pct_schedules(1, budget(executions), 3);
  auto tso = spindle::model::random_schedules(2, budget(executions));
  tso.store_buffering = true;
  auto weak = spindle::model::random_schedules(3, budget(executions));
  weak.weak_memory = true;
  return {dfs, pct, tso, weak};
}

/// Runs the pair under every option set of `schedules` and fails the running test with the
/// checker's message (which carries the replay line) on the first failing schedule.
template <class Fixture>
void explore_pair(char const* suite, std::vector<operation<Fixture>> const& ops, op_pair p,
                  std::vector<spindle::model::options> const& schedules) {
  operation<Fixture> const& a = ops.at(p.a);
  operation<Fixture> const& b = ops.at(p.b);
  if constexpr (requires { Fixture::skip(std::string_view{}, std::string_view{}); }) {
    if (char const* why = Fixture::skip(a.name, b.name)) {
      GTEST_SKIP() << why;
    }
  }
  auto body = [&a, &b] {
    Fixture f(std::string_view{a.name}, std::string_view{b.name});
    spindle::model::thread other([&f, &a] { a.run(f, 0); });
    b.run(f, 1);
    other.join();
    f.finish();
  };
  std::string const label = std::string(suite) + ": " + a.name + " x " + b.name;
  for (auto o : schedules) {
    // A different stream of schedules for every pair, reproducible from its position.
    o.seed = o.seed * 1000003 + p.a * 101 + p.b;
    auto const r = spindle::model::explore(o, body);
    EXPECT_TRUE(r) << label << " (" << spindle::model::impl::strategy_name(o.kind)
                   << (o.store_buffering ? ", store buffers" : "")
                   << (o.weak_memory ? ", weak memory" : "") << "): " << r.message;
    print_stats(label.c_str(), r);
    if (!r) {
      return;
    }
  }
}

/// GoogleTest's name for a pair: "<a>_x_<b>" (operation names use [A-Za-z0-9_] only).
template <class Fixture>
auto pair_name(std::vector<operation<Fixture>> const& ops, op_pair p) -> std::string {
  return std::string(ops.at(p.a).name) + "_x_" + ops.at(p.b).name;
}

}  // namespace spindle_test

/// Registers one model test per unordered pair of `ops` (an expression yielding a
/// `std::vector<spindle_test::operation<Fixture>> const&`), run under `schedules`.
#define SPINDLE_OPERATION_MATRIX(Suite, Fixture, ops, schedules)                               \
  class Suite : public ::testing::TestWithParam<::spindle_test::op_pair> {};                   \
  TEST_P(Suite, Explore) {                                                                     \
    ::spindle_test::explore_pair<Fixture>(#Suite, ops, GetParam(), schedules);                 \
  }                                                                                            \
  INSTANTIATE_TEST_SUITE_P(Pairs, Suite,                                                       \
                           ::testing::ValuesIn(::spindle_test::all_pairs((ops).size())),       \
                           [](::testing::TestParamInfo<::spindle_test::op_pair> const& info) { \
                             return ::spindle_test::pair_name<Fixture>(ops, info.param);       \
                           })

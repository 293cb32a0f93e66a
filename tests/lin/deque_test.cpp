// The work-stealing deque is linearizable: short random histories of push/pop by the owner and
// steal by two thieves, LIFO and FIFO, from a small initial capacity so that histories cross a
// growth, checked against the sequential specification (a steal may report retry).
#include <spindle/deque.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "lin/runner.hpp"
#include "lin/wgl.hpp"

using spindle_lin::op_kind;
using spindle_lin::operation;
using spindle_lin::outcome;

namespace {

auto check_deque(spindle::deque_order order, std::uint32_t seed) -> std::vector<operation> {
  bool const lifo = order == spindle::deque_order::lifo;
  auto run_one = [order, seed](int h) {
    spindle::deque_owner<std::int64_t> w(order, 2);
    std::vector<std::function<void(spindle_lin::recorder&)>> bodies;
    bodies.emplace_back([&w, h, seed](spindle_lin::recorder& r) {
      std::mt19937 rng(seed * 7919U + static_cast<std::uint32_t>(h));
      for (int i = 0; i < 6; ++i) {
        operation o;
        if (rng() % 3 != 0) {
          o.kind = op_kind::push;
          o.arg = i;
          r.record(o, [&](operation& x) { w.push(x.arg); });
        } else {
          o.kind = op_kind::pop;
          r.record_take(o, [&] { return w.pop(); });
        }
      }
    });
    for (int t = 0; t < 2; ++t) {
      bodies.emplace_back([s = w.stealer()](spindle_lin::recorder& r) mutable {
        for (int i = 0; i < 4; ++i) {
          operation o;
          o.kind = op_kind::steal;
          r.record(o, [&](operation& x) {
            auto res = s.steal();
            if (res.is_stolen()) {
              x.value = *res.value;
            } else {
              x.result = res.is_empty() ? outcome::empty : outcome::retry;
            }
          });
        }
      });
    }
    return spindle_lin::run_history(bodies);
  };
  return spindle_lin::first_non_linearizable(run_one,
                                             [lifo](int) { return spindle_lin::deque_spec{lifo}; });
}

}  // namespace

TEST(LinDeque, Example) {
  auto const bad = check_deque(spindle::deque_order::lifo, 1);
  EXPECT_TRUE(bad.empty()) << "lifo deque history not linearizable:\n"
                           << spindle_lin::describe(bad);
}

TEST(LinDeque, Fifo) {
  auto const bad = check_deque(spindle::deque_order::fifo, 2);
  EXPECT_TRUE(bad.empty()) << "fifo deque history not linearizable:\n"
                           << spindle_lin::describe(bad);
}

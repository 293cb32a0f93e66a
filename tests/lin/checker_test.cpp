// The linearizability checker itself: hand-written histories it must accept and reject, and a
// deliberately non-linearizable queue (two internal lanes) that it must catch under real
// threads.
#include <spindle/detail/sync/config.hpp>

#include <gtest/gtest.h>

#include <deque>
#include <latch>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include "lin/runner.hpp"
#include "lin/wgl.hpp"

using spindle_lin::op_kind;
using spindle_lin::operation;
using spindle_lin::outcome;

namespace {

auto op(op_kind k, std::int64_t arg, outcome r, std::int64_t value, std::uint64_t call,
        std::uint64_t ret, int object = 0) -> operation {
  operation o;
  o.object = object;
  o.kind = k;
  o.arg = arg;
  o.result = r;
  o.value = value;
  o.call = call;
  o.ret = ret;
  return o;
}

auto queue(std::size_t cap) {
  return [cap](int /*object*/) { return spindle_lin::fifo_spec{cap}; };
}

/// Not linearizable: each sender thread has a lane, and a receiver always looks at lane 0
/// first, so a value sent later on lane 0 overtakes one sent earlier on lane 1.
class two_lane_queue {
 public:
  void send(int lane, std::int64_t v) {
    std::lock_guard lk(m_);
    lanes_[lane].push_back(v);
  }
  auto recv() -> std::optional<std::int64_t> {
    std::lock_guard lk(m_);
    for (auto& lane : lanes_) {
      if (!lane.empty()) {
        auto v = lane.front();
        lane.pop_front();
        return v;
      }
    }
    return std::nullopt;
  }

 private:
  std::mutex m_;
  std::deque<std::int64_t> lanes_[2];
};

}  // namespace

TEST(LinChecker, Example) {
  // send(1) overlaps recv() -> 1: linearizable (send first). A recv that starts after send(1)
  // returned but reports empty is not.
  std::vector<operation> ok = {op(op_kind::send, 1, outcome::ok, 0, 0, 3),
                               op(op_kind::recv, 0, outcome::ok, 1, 1, 2)};
  EXPECT_TRUE(spindle_lin::linearizable(ok, queue(4)));
  std::vector<operation> bad = {op(op_kind::send, 1, outcome::ok, 0, 0, 1),
                                op(op_kind::recv, 0, outcome::empty, 0, 2, 3)};
  EXPECT_FALSE(spindle_lin::linearizable(bad, queue(4)));
}

TEST(LinChecker, FifoOrderAcrossRealTime) {
  // send(1) then send(2) (sequential), then recv -> 2: rejected.
  std::vector<operation> h = {op(op_kind::send, 1, outcome::ok, 0, 0, 1),
                              op(op_kind::send, 2, outcome::ok, 0, 2, 3),
                              op(op_kind::recv, 0, outcome::ok, 2, 4, 5)};
  EXPECT_FALSE(spindle_lin::linearizable(h, queue(4)));
  // If the two sends overlap, either order is possible: accepted.
  h[0].ret = 3;
  h[1].call = 1;
  EXPECT_TRUE(spindle_lin::linearizable(h, queue(4)));
}

TEST(LinChecker, CapacityAndFull) {
  std::vector<operation> h = {op(op_kind::send, 1, outcome::ok, 0, 0, 1),
                              op(op_kind::send, 2, outcome::full, 0, 2, 3)};
  EXPECT_TRUE(spindle_lin::linearizable(h, queue(1)));
  EXPECT_FALSE(spindle_lin::linearizable(h, queue(2)));
}

TEST(LinChecker, DequeSpec) {
  auto lifo = [](int) { return spindle_lin::deque_spec{true}; };
  // push 1, push 2, pop -> 2, steal -> 1: fine. steal -> 2 after pop -> 2: rejected.
  std::vector<operation> h = {
      op(op_kind::push, 1, outcome::ok, 0, 0, 1), op(op_kind::push, 2, outcome::ok, 0, 2, 3),
      op(op_kind::pop, 0, outcome::ok, 2, 4, 5), op(op_kind::steal, 0, outcome::ok, 1, 6, 7)};
  EXPECT_TRUE(spindle_lin::linearizable(h, lifo));
  h[3].value = 2;
  EXPECT_FALSE(spindle_lin::linearizable(h, lifo));
  // A retry changes nothing and is always allowed.
  h[3].result = outcome::retry;
  EXPECT_TRUE(spindle_lin::linearizable(h, lifo));
}

TEST(LinChecker, ObjectsAreCheckedSeparately) {
  // Each object alone is fine; mixing their values in one queue would not be.
  std::vector<operation> h = {
      op(op_kind::send, 1, outcome::ok, 0, 0, 1, 0), op(op_kind::send, 2, outcome::ok, 0, 2, 3, 1),
      op(op_kind::recv, 0, outcome::ok, 2, 4, 5, 1), op(op_kind::recv, 0, outcome::ok, 1, 6, 7, 0)};
  EXPECT_TRUE(spindle_lin::linearizable(h, queue(4)));
}

TEST(LinChecker, RejectsATwoLaneQueueUnderRealThreads) {
  // Lane 1's sender finishes before lane 0's starts, and the receiver starts after both (the
  // latches order them in real time), so FIFO demands lane 1's values first; the two-lane
  // queue returns lane 0's first and every such history must be rejected.
  int rejected = 0;
  int const runs = 20;
  for (int h = 0; h < runs; ++h) {
    two_lane_queue q;
    std::latch first_done(1);
    std::latch second_done(1);
    auto sender = [&q](int lane, std::latch* wait_for, std::latch* done) {
      return [&q, lane, wait_for, done](spindle_lin::recorder& r) {
        if (wait_for != nullptr) {
          wait_for->wait();
        }
        for (int i = 0; i < 3; ++i) {
          operation o;
          o.kind = op_kind::send;
          o.arg = lane * 100 + i;
          r.record(o, [&](operation& x) { q.send(lane, x.arg); });
        }
        done->count_down();
      };
    };
    auto receiver = [&q, &second_done](spindle_lin::recorder& r) {
      second_done.wait();
      for (int i = 0; i < 6; ++i) {
        operation o;
        o.kind = op_kind::recv;
        r.record_take(o, [&] { return q.recv(); });
      }
    };
    auto history = spindle_lin::run_history(
        {sender(1, nullptr, &first_done), sender(0, &first_done, &second_done), receiver});
    if (!spindle_lin::linearizable(history, queue(100))) {
      ++rejected;
    }
  }
  EXPECT_EQ(rejected, runs) << "the two-lane queue was not caught";
}

TEST(LinChecker, AcceptsALockedQueueUnderRealThreads) {
  // The same harness with one lane is a correct locked FIFO: every history is accepted.
  for (int h = 0; h < 50; ++h) {
    two_lane_queue q;
    auto sender = [&q](int id) {
      return [&q, id](spindle_lin::recorder& r) {
        for (int i = 0; i < 4; ++i) {
          operation o;
          o.kind = i % 2 == 0 ? op_kind::send : op_kind::recv;
          o.arg = id * 100 + i;
          r.record(o, [&](operation& x) {
            if (x.kind == op_kind::send) {
              q.send(0, x.arg);
            } else if (auto v = q.recv()) {
              x.value = *v;
            } else {
              x.result = outcome::empty;
            }
          });
        }
      };
    };
    auto history = spindle_lin::run_history({sender(0), sender(1), sender(2)});
    ASSERT_TRUE(spindle_lin::linearizable(history, queue(100))) << spindle_lin::describe(history);
  }
}

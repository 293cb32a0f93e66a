// The coherence cost meter (spindle/model/coherence.hpp): its directory on operations fed by
// hand, and on tiny programs run by the model checker, where what each thread holds is known:
// a line handed from writer to writer costs one transfer per hand-over; readers share a line
// at no cost until a write invalidates each copy; two atomics on one line pass it back and
// forth (false sharing), on two lines they do not; a prefetch for write takes the line like a
// store; and with no meter set nothing is counted.
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/model/coherence.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace model = spindle::model;
using model::coherence_meter;
using model::coherence_op;

namespace {

struct alignas(64) line {
  std::uint64_t words[8] = {};
};

/// One model execution of `body`: every choice is forced or irrelevant in these programs.
auto run_once(coherence_meter* meter, std::function<void()> body) -> model::report {
  auto opts = model::random_schedules(7, 1);
  opts.meter = meter;
  return model::explore(opts, body);
}

}  // namespace

TEST(CoherenceDirectory, ReadersShareThenOneWriteInvalidatesEachCopy) {
  coherence_meter m;
  m.begin_execution();
  line l;
  m.record(0, coherence_op::store, &l.words[0], 8);  // cold: a write miss, nothing to take
  for (int t = 1; t <= 3; ++t) {
    m.record(t, coherence_op::load, &l.words[1], 8);
    m.record(t, coherence_op::load, &l.words[2], 8);  // same line: a hit
  }
  EXPECT_EQ(m.counts(0).write_misses, 1U);
  EXPECT_EQ(m.counts(1).misses, 1U);
  EXPECT_EQ(m.counts(1).transfers, 1U);  // thread 0 held it modified
  EXPECT_EQ(m.counts(2).transfers, 0U);  // shared since thread 1's read
  EXPECT_EQ(m.counts(3).transfers, 0U);
  EXPECT_EQ(m.total().invalidations, 0U);
  // Thread 0 kept a shared copy: its write is no miss, and drops the three readers' copies.
  m.record(0, coherence_op::store, &l.words[3], 8);
  EXPECT_EQ(m.counts(0).write_misses, 1U);
  EXPECT_EQ(m.counts(0).invalidations, 1U);
  EXPECT_EQ(m.counts(0).copies_invalidated, 3U);
  EXPECT_EQ(m.counts(0).transfers, 0U);
  EXPECT_EQ(m.total().loads, 6U);
  EXPECT_EQ(m.total().stores, 2U);
}

TEST(CoherenceDirectory, FailedCasAndPrefetchAreWriteIntents) {
  coherence_meter m;
  m.begin_execution();
  line l;
  m.record(0, coherence_op::rmw, &l, 8);
  m.record(1, coherence_op::cas_failure, &l, 8);
  EXPECT_EQ(m.counts(1).transfers, 1U);
  EXPECT_EQ(m.counts(1).invalidations, 1U);
  m.record(0, coherence_op::prefetch_for_write, &l, 1);
  EXPECT_EQ(m.counts(0).transfers, 1U);
  EXPECT_EQ(m.counts(0).prefetches, 1U);
  m.record(0, coherence_op::store, &l, 8);  // already exclusive: free
  EXPECT_EQ(m.counts(0).transfers, 1U);
  EXPECT_EQ(m.counts(0).invalidations, 1U);
  EXPECT_EQ(m.counts(0).rmws, 1U);
  EXPECT_EQ(m.counts(1).cas_failures, 1U);
}

TEST(CoherenceDirectory, AnAccessAcrossALineBoundaryTouchesBoth) {
  coherence_meter m;
  m.begin_execution();
  line l[2];
  m.record(0, coherence_op::payload_write, &l[0].words[6], 32);
  m.record(1, coherence_op::payload_read, &l[0].words[4], 64);
  EXPECT_EQ(m.counts(0).write_misses, 2U);
  EXPECT_EQ(m.counts(1).misses, 2U);
  EXPECT_EQ(m.counts(1).transfers, 2U);
  EXPECT_EQ(m.lines(), 2U);
  m.begin_execution();
  EXPECT_EQ(m.lines(), 0U);
  EXPECT_EQ(m.executions(), 2U);
  EXPECT_EQ(m.total().transfers, 2U);  // counts stay across executions
}

TEST(CoherenceDirectory, TheBusiestLineCountsItsMovesPerExecution) {
  coherence_meter m;
  m.begin_execution();
  line a;
  line b;
  m.record(0, coherence_op::store, &a, 8);  // cold: no move
  m.record(1, coherence_op::store, &a, 8);  // move 1
  m.record(0, coherence_op::load, &a, 8);   // move 2 (a transfer, the writer keeps a copy)
  m.record(0, coherence_op::store, &a, 8);  // move 3 (an invalidation of that copy)
  m.record(1, coherence_op::store, &b, 8);
  m.record(0, coherence_op::rmw, &b, 8);  // b: one move
  EXPECT_EQ(m.hottest_line_moves(), 3U);
  m.begin_execution();
  m.record(0, coherence_op::store, &b, 8);
  m.record(1, coherence_op::store, &b, 8);
  EXPECT_EQ(m.hottest_line_moves(), 4U);  // 3 from the first execution, 1 from this one
}

// Writers take turns on one line, each after the previous one finished (join): every
// hand-over is one transfer of the modified line and one invalidation.
TEST(CoherenceModel, OneTransferPerHandOver) {
  coherence_meter m;
  auto const r = run_once(&m, [] {
    auto x = std::make_unique<model::atomic<std::uint64_t>>(0);
    x->store(1);  // thread 0
    for (int round = 0; round < 3; ++round) {
      model::thread t([&] { x->store(2); });  // threads 1, 2, 3
      t.join();
      x->store(3);  // thread 0 takes it back
    }
  });
  ASSERT_TRUE(r) << r.message;
  EXPECT_EQ(m.total().transfers, 6U);
  EXPECT_EQ(m.total().invalidations, 6U);
  EXPECT_EQ(m.counts(0).transfers, 3U);
  for (int t = 1; t <= 3; ++t) {
    EXPECT_EQ(m.counts(t).transfers, 1U);
    EXPECT_EQ(m.counts(t).stores, 1U);
  }
}

TEST(CoherenceModel, ReadersShareUntilAWrite) {
  coherence_meter m;
  auto const r = run_once(&m, [] {
    auto x = std::make_unique<model::atomic<std::uint64_t>>(0);
    x->store(1);
    std::vector<std::unique_ptr<model::thread>> readers;
    for (int i = 0; i < 3; ++i) {
      readers.push_back(std::make_unique<model::thread>([&] {
        for (int k = 0; k < 5; ++k) {
          static_cast<void>(x->load());  // a spin on a line held shared: hits
        }
      }));
    }
    for (auto& t : readers) {
      t->join();
    }
    x->store(2);
  });
  ASSERT_TRUE(r) << r.message;
  auto const readers = m.sum(1, 4);
  EXPECT_EQ(readers.loads, 15U);
  EXPECT_EQ(readers.misses, 3U);
  EXPECT_EQ(readers.transfers, 1U);  // the first reader takes it from the writer
  EXPECT_EQ(readers.invalidations, 0U);
  EXPECT_EQ(m.counts(0).invalidations, 1U);
  EXPECT_EQ(m.counts(0).copies_invalidated, 3U);
}

// Two threads add to two counters at once, each to its own: on one line the line passes back
// and forth whenever the schedule switches thread; on two lines it never moves.
TEST(CoherenceModel, FalseSharingCostsTransfersSeparateLinesDoNot) {
  struct same_line {
    model::atomic<std::uint64_t> a{0};
    model::atomic<std::uint64_t> b{0};
  };
  struct two_lines {
    alignas(64) model::atomic<std::uint64_t> a{0};
    alignas(64) model::atomic<std::uint64_t> b{0};
  };
  auto counters = [](auto* c) {
    model::thread t([c] {
      for (int i = 0; i < 20; ++i) {
        c->b.fetch_add(1);
      }
    });
    for (int i = 0; i < 20; ++i) {
      c->a.fetch_add(1);
    }
    t.join();
  };
  coherence_meter shared;
  auto opts = model::random_schedules(11, 10);
  opts.meter = &shared;
  ASSERT_TRUE(model::explore(opts, [&] {
    auto c = std::make_unique<same_line>();
    counters(c.get());
  }));
  coherence_meter apart;
  opts.meter = &apart;
  ASSERT_TRUE(model::explore(opts, [&] {
    auto c = std::make_unique<two_lines>();
    counters(c.get());
  }));
  EXPECT_EQ(shared.total().rmws, 400U);
  EXPECT_EQ(apart.total().rmws, 400U);
  EXPECT_GT(shared.total().transfers, 10U * 4);  // random schedules switch often
  EXPECT_LE(shared.total().transfers, 400U);
  EXPECT_EQ(apart.total().transfers, 0U);
  EXPECT_EQ(apart.total().invalidations, 0U);
}

TEST(CoherenceModel, PrefetchForWriteTakesTheLine) {
  coherence_meter m;
  auto const r = run_once(&m, [] {
    auto x = std::make_unique<model::atomic<std::uint64_t>>(0);
    x->store(1);
    model::thread t([&] {
      spindle::detail::prefetch_for_write(x.get());
      x->store(2);  // exclusive already: no further cost
    });
    t.join();
  });
  ASSERT_TRUE(r) << r.message;
  EXPECT_EQ(m.counts(1).prefetches, 1U);
  EXPECT_EQ(m.counts(1).transfers, 1U);
  EXPECT_EQ(m.counts(1).invalidations, 1U);
  EXPECT_EQ(m.counts(1).stores, 1U);
}

TEST(CoherenceModel, FencesAndFutexCallsAreCounted) {
  coherence_meter m;
  auto const r = run_once(&m, [] {
    model::fence(std::memory_order_seq_cst);
    model::heavy_fence();
    model::atomic<std::uint32_t> word{0};
    model::futex_wake_one(word);
  });
  ASSERT_TRUE(r) << r.message;
  EXPECT_EQ(m.counts(0).fences, 1U);
  EXPECT_EQ(m.counts(0).heavy_fences, 1U);
  EXPECT_EQ(m.counts(0).futex_wakes, 1U);
  EXPECT_EQ(m.counts(0).transfers, 0U);
}

TEST(CoherenceModel, NoMeterNothingCounted) {
  coherence_meter m;
  auto body = [] {
    auto x = std::make_unique<model::atomic<std::uint64_t>>(0);
    model::thread t([&] { x->fetch_add(1); });
    x->fetch_add(1);
    t.join();
  };
  ASSERT_TRUE(run_once(nullptr, body));
  EXPECT_EQ(m.executions(), 0U);
  EXPECT_EQ(m.total().rmws, 0U);
  ASSERT_TRUE(run_once(&m, body));
  EXPECT_EQ(m.executions(), 1U);
  EXPECT_EQ(m.total().rmws, 2U);
  m.reset();
  EXPECT_EQ(m.total().rmws, 0U);
  EXPECT_EQ(m.executions(), 0U);
}

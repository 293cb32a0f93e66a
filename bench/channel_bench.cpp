// Micro-benchmarks of spindle's channels next to their peers, in one process.
//
// TrySendRecv: one thread, a try_send immediately followed by a try_recv on a queue that is
// otherwise empty: the uncontended cost of one message's two fast paths (slot claim, stamp
// publication, wake-up check). Peers use their own non-blocking pair. SendRecv: the same with
// spindle's blocking send and recv, which find room and a value at once.
// Spsc: one producer thread and one consumer thread, both at full speed; the producer uses
// the blocking send (or the peer's waiting push) and the consumer the blocking receive, and
// time is wall-clock (UseRealTime). Items per second counts messages.
// The lanes flavour (bounded_lanes) runs with one lane of `capacity`: one sender handle sends
// into one lane, and the receiver's scan has that one lane to look at, so its rows show what
// the lanes' dispatch and scan add to a bounded ring of the same capacity.
//
// Every benchmark checks what comes out: the pair compares the value, the SPSC consumer checks
// that the sequence arrives complete and in order, and a mismatch aborts the process.
// The scenario CLI (tools/spindle-bench, `spindle-bench channel`) is the place for the
// many-producer headline figures; these are the building blocks.

#include <benchmark/benchmark.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <spindle/channel.hpp>

#include "bench/support/peers.hpp"

namespace {

using u64 = std::uint64_t;
constexpr std::size_t capacity = 1024;

[[noreturn]] void fail(char const* what) {
  std::fprintf(stderr, "channel_bench: FAILED: %s\n", what);
  std::abort();
}

void check(bool ok, char const* what) {
  if (!ok) {
    fail(what);
  }
}

// ---------------------------------------------------------------------------------------------
// Single-thread try_send + try_recv.

void spindle_try_pair(benchmark::State& state,
                      std::pair<spindle::sender<u64>, spindle::receiver<u64>> ends) {
  auto& [tx, rx] = ends;
  u64 i = 1;
  for (auto _ : state) {
    check(static_cast<bool>(tx.try_send(i)), "spindle try_send failed on an empty channel");
    auto r = rx.try_recv();
    check(r && r.value && *r.value == i, "spindle try_recv did not return the value sent");
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}

void TrySendRecvSpindleBounded(benchmark::State& state) {
  spindle_try_pair(state, spindle::bounded<u64>(capacity));
}
BENCHMARK(TrySendRecvSpindleBounded);

void TrySendRecvSpindleUnbounded(benchmark::State& state) {
  spindle_try_pair(state, spindle::unbounded<u64>());
}
BENCHMARK(TrySendRecvSpindleUnbounded);

void TrySendRecvSpindleLanes(benchmark::State& state) {
  spindle_try_pair(state, spindle::bounded_lanes<u64>(capacity, 1));
}
BENCHMARK(TrySendRecvSpindleLanes);

// The blocking pair on the same queue: send + recv where the value is always there, so
// neither waits. The difference to the try pair is what the blocking calls add before their
// first attempt.
void spindle_blocking_pair(benchmark::State& state,
                           std::pair<spindle::sender<u64>, spindle::receiver<u64>> ends) {
  auto& [tx, rx] = ends;
  u64 i = 1;
  for (auto _ : state) {
    check(static_cast<bool>(tx.send(i)), "spindle send failed on an open channel");
    auto v = rx.recv();
    check(v && *v == i, "spindle recv did not return the value sent");
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}

void SendRecvSpindleBounded(benchmark::State& state) {
  spindle_blocking_pair(state, spindle::bounded<u64>(capacity));
}
BENCHMARK(SendRecvSpindleBounded);

void SendRecvSpindleUnbounded(benchmark::State& state) {
  spindle_blocking_pair(state, spindle::unbounded<u64>());
}
BENCHMARK(SendRecvSpindleUnbounded);

void SendRecvSpindleLanes(benchmark::State& state) {
  spindle_blocking_pair(state, spindle::bounded_lanes<u64>(capacity, 1));
}
BENCHMARK(SendRecvSpindleLanes);

void TrySendRecvMutexDeque(benchmark::State& state) {
  std::mutex m;
  std::deque<u64> q;
  u64 i = 1;
  for (auto _ : state) {
    {
      std::lock_guard lock(m);
      check(q.size() < capacity, "mutex deque full");
      q.push_back(i);
    }
    u64 v = 0;
    {
      std::lock_guard lock(m);
      check(!q.empty(), "mutex deque empty");
      v = q.front();
      q.pop_front();
    }
    check(v == i, "mutex deque returned another value");
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(TrySendRecvMutexDeque);

#if defined(SPINDLE_HAVE_MOODYCAMEL)
void TrySendRecvMoodycamel(benchmark::State& state) {
  moodycamel::BlockingConcurrentQueue<u64> q;
  moodycamel::ProducerToken ptok(q);
  moodycamel::ConsumerToken ctok(q);
  u64 i = 1;
  for (auto _ : state) {
    check(q.enqueue(ptok, i), "moodycamel enqueue failed");
    u64 v = 0;
    check(q.try_dequeue(ctok, v) && v == i, "moodycamel try_dequeue did not return the value");
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(TrySendRecvMoodycamel);
#endif

#if defined(SPINDLE_HAVE_BOOST_LOCKFREE)
void TrySendRecvBoostLockfree(benchmark::State& state) {
  boost::lockfree::queue<u64, boost::lockfree::fixed_sized<true>> q(capacity + 1);
  u64 i = 1;
  for (auto _ : state) {
    check(q.bounded_push(i), "boost bounded_push failed on an empty queue");
    u64 v = 0;
    check(q.pop(v) && v == i, "boost pop did not return the value");
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(TrySendRecvBoostLockfree);
#endif

#if defined(SPINDLE_HAVE_ATOMIC_QUEUE)
void TrySendRecvAtomicQueue(benchmark::State& state) {
  atomic_queue::AtomicQueueB<u64> q(capacity);
  u64 i = 1;
  for (auto _ : state) {
    check(q.try_push(i), "atomic_queue try_push failed on an empty queue");
    u64 v = 0;
    check(q.try_pop(v) && v == i, "atomic_queue try_pop did not return the value");
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(TrySendRecvAtomicQueue);
#endif

#if defined(SPINDLE_HAVE_TBB)
void TrySendRecvTbb(benchmark::State& state) {
  tbb::concurrent_bounded_queue<u64> q;
  q.set_capacity(capacity);
  u64 i = 1;
  for (auto _ : state) {
    check(q.try_push(i), "tbb try_push failed on an empty queue");
    u64 v = 0;
    check(q.try_pop(v) && v == i, "tbb try_pop did not return the value");
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(TrySendRecvTbb);
#endif

// ---------------------------------------------------------------------------------------------
// SPSC throughput: thread 0 sends 1..n, thread 1 receives and checks the order. The queue is
// made by thread 0 before the timed loop and destroyed after it: Google Benchmark holds every
// thread at a barrier on entering and on leaving the loop, which orders both.

template <class Q>
class spsc_fixture {
 public:
  void run(benchmark::State& state) {
    if (state.thread_index() == 0) {
      queue_ = std::make_unique<Q>();
    }
    u64 i = 1;
    if (state.thread_index() == 0) {
      for (auto _ : state) {
        queue_->push(i++);
      }
    } else {
      for (auto _ : state) {
        check(queue_->pop() == i++, "SPSC consumer received a message out of order");
      }
    }
    if (state.thread_index() == 0) {
      queue_.reset();
    }
    state.SetItemsProcessed(state.iterations());
  }

 private:
  std::unique_ptr<Q> queue_;
};

struct spindle_spsc {
  std::pair<spindle::sender<u64>, spindle::receiver<u64>> ends = spindle::bounded<u64>(capacity);
  void push(u64 v) { check(static_cast<bool>(ends.first.send(v)), "spindle send failed"); }
  auto pop() -> u64 {
    auto v = ends.second.recv();
    check(v.has_value(), "spindle recv returned nullopt on an open channel");
    return *v;
  }
};
spsc_fixture<spindle_spsc> spindle_spsc_fixture;
void SpscSpindleBounded(benchmark::State& state) {
  spindle_spsc_fixture.run(state);
}
BENCHMARK(SpscSpindleBounded)->Threads(2)->UseRealTime();

struct spindle_lanes_spsc {
  std::pair<spindle::sender<u64>, spindle::receiver<u64>> ends =
      spindle::bounded_lanes<u64>(capacity, 1);
  void push(u64 v) { check(static_cast<bool>(ends.first.send(v)), "spindle send failed"); }
  auto pop() -> u64 {
    auto v = ends.second.recv();
    check(v.has_value(), "spindle recv returned nullopt on an open channel");
    return *v;
  }
};
spsc_fixture<spindle_lanes_spsc> spindle_lanes_spsc_fixture;
void SpscSpindleLanes(benchmark::State& state) {
  spindle_lanes_spsc_fixture.run(state);
}
BENCHMARK(SpscSpindleLanes)->Threads(2)->UseRealTime();

struct mutex_spsc {
  std::mutex m;
  std::condition_variable not_full;
  std::condition_variable not_empty;
  std::deque<u64> q;
  void push(u64 v) {
    std::unique_lock lock(m);
    not_full.wait(lock, [&] { return q.size() < capacity; });
    q.push_back(v);
    lock.unlock();
    not_empty.notify_one();
  }
  auto pop() -> u64 {
    std::unique_lock lock(m);
    not_empty.wait(lock, [&] { return !q.empty(); });
    auto v = q.front();
    q.pop_front();
    lock.unlock();
    not_full.notify_one();
    return v;
  }
};
spsc_fixture<mutex_spsc> mutex_spsc_fixture;
void SpscMutexDeque(benchmark::State& state) {
  mutex_spsc_fixture.run(state);
}
BENCHMARK(SpscMutexDeque)->Threads(2)->UseRealTime();

#if defined(SPINDLE_HAVE_ATOMIC_QUEUE)
struct atomic_queue_spsc {
  atomic_queue::AtomicQueueB<u64> q{capacity};
  void push(u64 v) { q.push(v); }
  auto pop() -> u64 { return q.pop(); }
};
spsc_fixture<atomic_queue_spsc> atomic_queue_spsc_fixture;
void SpscAtomicQueueSpinning(benchmark::State& state) {
  atomic_queue_spsc_fixture.run(state);
}
BENCHMARK(SpscAtomicQueueSpinning)->Threads(2)->UseRealTime();
#endif

#if defined(SPINDLE_HAVE_TBB)
struct tbb_spsc {
  tbb::concurrent_bounded_queue<u64> q;
  tbb_spsc() { q.set_capacity(capacity); }
  void push(u64 v) { q.push(v); }
  auto pop() -> u64 {
    u64 v = 0;
    q.pop(v);
    return v;
  }
};
spsc_fixture<tbb_spsc> tbb_spsc_fixture;
void SpscTbb(benchmark::State& state) {
  tbb_spsc_fixture.run(state);
}
BENCHMARK(SpscTbb)->Threads(2)->UseRealTime();
#endif

#if defined(SPINDLE_HAVE_MOODYCAMEL)
struct moodycamel_spsc {
  moodycamel::BlockingConcurrentQueue<u64> q;
  void push(u64 v) { check(q.enqueue(v), "moodycamel enqueue failed"); }
  auto pop() -> u64 {
    u64 v = 0;
    q.wait_dequeue(v);
    return v;
  }
};
spsc_fixture<moodycamel_spsc> moodycamel_spsc_fixture;
void SpscMoodycamelUnbounded(benchmark::State& state) {
  moodycamel_spsc_fixture.run(state);
}
BENCHMARK(SpscMoodycamelUnbounded)->Threads(2)->UseRealTime();
#endif

}  // namespace

BENCHMARK_MAIN();

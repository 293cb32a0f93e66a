// Tests for spindle/detail/executor/task_pool.hpp: pooled task records, freed by the allocating
// thread or by any other, including after the allocating thread has exited. ASan's leak check and
// TSan run these too: every node and every heap must be freed exactly once.
#include <spindle/detail/executor/task_pool.hpp>
#include <spindle/detail/sync/config.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/tracked.hpp"

using spindle::detail::delete_node;
using spindle::detail::new_node;
using spindle::detail::node_ptr;
using spindle::detail::pool_limit;
using spindle::detail::pool_payload;
using spindle::detail::pooled_v;
using spindle::detail::remote_batch_size;

namespace {

struct small_record {
  explicit small_record(std::uint64_t v) : value(v) {}
  std::uint64_t value;
  std::array<std::uint64_t, 4> pad{};
};

struct big_record {
  explicit big_record(std::uint64_t v) : value(v) {}
  std::uint64_t value;
  std::array<std::byte, 2 * pool_payload> pad{};
};

struct throwing_record {
  explicit throwing_record(bool fail) {
    if (fail) {
      throw std::runtime_error("constructor failed");
    }
  }
  std::uint64_t value = 0;
};

}  // namespace

TEST(TaskPool, Example) {
  // A record that fits is pooled; it can be destroyed on any thread.
  static_assert(pooled_v<small_record>);
  auto* r = new_node<small_record>(42);
  EXPECT_EQ(r->value, 42U);
  std::thread other([r] { delete_node(r); });
  other.join();
}

TEST(TaskPool, BigRecordsUseOperatorNew) {
  static_assert(!pooled_v<big_record>);
  auto* r = new_node<big_record>(7);
  EXPECT_EQ(r->value, 7U);
  delete_node(r);
}

TEST(TaskPool, SameThreadReusesNodes) {
  auto* a = new_node<small_record>(1);
  void* const first = a;
  delete_node(a);
  auto* b = new_node<small_record>(2);
  EXPECT_EQ(static_cast<void*>(b), first) << "a node freed locally is reused first";
  delete_node(b);
}

TEST(TaskPool, RemoteFreesComeBack) {
  std::vector<small_record*> nodes;
  for (std::uint64_t i = 0; i < 64; ++i) {
    nodes.push_back(new_node<small_record>(i));
  }
  std::thread other([&nodes] {
    for (auto* n : nodes) {
      delete_node(n);
    }
  });
  other.join();
  // The next allocations take the returned nodes (the local list was empty).
  auto* again = new_node<small_record>(0);
  bool reused = false;
  for (auto* n : nodes) {
    reused = reused || static_cast<void*>(n) == static_cast<void*>(again);
  }
  EXPECT_TRUE(reused);
  delete_node(again);
}

TEST(TaskPool, ABatchHeldByAnExitingThreadComesBack) {
  // Fewer nodes than a batch: the freeing thread holds them until it exits, then returns them
  // all at once, and the owner (a fresh thread, whose heap has no other free node) reuses
  // every one of them.
  static constexpr auto n = static_cast<std::size_t>(remote_batch_size / 2);
  std::thread owner([] {
    std::vector<small_record*> nodes;
    for (std::uint64_t i = 0; i < n; ++i) {
      nodes.push_back(new_node<small_record>(i));
    }
    std::thread other([&nodes] {
      for (auto* r : nodes) {
        delete_node(r);
      }
    });
    other.join();
    std::vector<small_record*> again;
    for (std::uint64_t i = 0; i < n; ++i) {
      again.push_back(new_node<small_record>(i));
    }
    std::size_t reused = 0;
    for (auto* a : again) {
      for (auto* r : nodes) {
        reused += static_cast<void*>(a) == static_cast<void*>(r) ? 1 : 0;
      }
    }
    EXPECT_EQ(reused, n);
    for (auto* a : again) {
      delete_node(a);
    }
  });
  owner.join();
}

TEST(TaskPool, FreesOfTwoHeapsAlternatingReachTheirOwners) {
  // Nodes of two owners freed alternately by a third thread: each change of heap returns the
  // batch of the other, and the thread's exit returns the last one. The owners then exit with
  // everything returned (ASan reports a leak or a double free otherwise).
  std::vector<small_record*> first;
  std::vector<small_record*> second;
  std::barrier made(3);
  std::barrier freed(3);
  auto owner = [&](std::vector<small_record*>& mine) {
    for (std::uint64_t i = 0; i < 40; ++i) {
      mine.push_back(new_node<small_record>(i));
    }
    made.arrive_and_wait();
    freed.arrive_and_wait();
  };
  std::thread a(owner, std::ref(first));
  std::thread b(owner, std::ref(second));
  made.arrive_and_wait();
  std::thread freer([&] {
    for (std::size_t i = 0; i < 40; ++i) {
      EXPECT_EQ(first[i]->value, i);
      delete_node(first[i]);
      EXPECT_EQ(second[i]->value, i);
      delete_node(second[i]);
    }
  });
  freer.join();
  freed.arrive_and_wait();
  a.join();
  b.join();
}

TEST(TaskPool, OwnerExitsWhileItsNodesWaitInABatch) {
  // The freeing thread still holds part of a batch when the owner exits: the batch's return
  // finds the heap abandoned, frees the nodes and, being the last, deletes the heap.
  std::vector<small_record*> nodes;
  std::barrier step(2);
  std::thread owner([&] {
    for (std::uint64_t i = 0; i < 10; ++i) {
      nodes.push_back(new_node<small_record>(i));
    }
    step.arrive_and_wait();  // nodes made
    step.arrive_and_wait();  // nodes freed into the other thread's batch
  });
  std::thread freer([&] {
    step.arrive_and_wait();
    for (auto* r : nodes) {
      delete_node(r);
    }
    step.arrive_and_wait();
    owner.join();
    // The batch goes back when this thread exits, after its owner's heap was abandoned.
  });
  freer.join();
}

TEST(TaskPool, NodePtrFreesUnlessReleased) {
  auto const before = spindle_test::tracked::live();
  {
    node_ptr<spindle_test::tracked> p(new_node<spindle_test::tracked>(5));
    EXPECT_EQ(p.get()->id(), 5U);
  }
  EXPECT_EQ(spindle_test::tracked::live(), before);
  node_ptr<spindle_test::tracked> q(new_node<spindle_test::tracked>(6));
  auto* raw = q.release();
  EXPECT_EQ(spindle_test::tracked::live(), before + 1);
  delete_node(raw);
  EXPECT_EQ(spindle_test::tracked::live(), before);
}

TEST(TaskPool, ConstructorThrowReturnsTheNode) {
  EXPECT_THROW(static_cast<void>(new_node<throwing_record>(true)), std::runtime_error);
  auto* ok = new_node<throwing_record>(false);
  delete_node(ok);
}

TEST(TaskPool, BurstBeyondTheLimit) {
  // More records out at once than one heap pools: the excess comes from operator new and is
  // freed with operator delete, wherever it is freed.
  std::vector<small_record*> nodes;
  nodes.reserve(pool_limit + 100);
  for (std::uint64_t i = 0; i < pool_limit + 100; ++i) {
    nodes.push_back(new_node<small_record>(i));
  }
  std::thread other([&nodes] {
    for (std::size_t i = 0; i < nodes.size(); i += 2) {
      delete_node(nodes[i]);
    }
  });
  other.join();
  for (std::size_t i = 1; i < nodes.size(); i += 2) {
    EXPECT_EQ(nodes[i]->value, i);
    delete_node(nodes[i]);
  }
}

TEST(TaskPool, OwnerExitsWithNodesOutstanding) {
  // The allocating thread exits first: its heap is abandoned, and the last late free deletes
  // it (ASan reports a leak or a double free otherwise).
  std::vector<small_record*> nodes;
  std::thread owner([&nodes] {
    for (std::uint64_t i = 0; i < 100; ++i) {
      nodes.push_back(new_node<small_record>(i));
    }
    // Some come back before the exit, through the local list.
    for (int i = 0; i < 10; ++i) {
      delete_node(nodes.back());
      nodes.pop_back();
    }
  });
  owner.join();
  std::uint64_t sum = 0;
  for (auto* n : nodes) {
    sum += n->value;
    delete_node(n);
  }
  EXPECT_EQ(sum, 89U * 90U / 2U);
}

TEST(TaskPool, OwnerExitsWhileOthersFree) {
  // Late frees race the owner's exit: some land on the remote stack before the mark, some
  // after it.
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<small_record*> nodes(64);
    std::barrier sync(3);
    std::thread owner([&] {
      for (std::uint64_t i = 0; i < nodes.size(); ++i) {
        nodes[i] = new_node<small_record>(i);
      }
      sync.arrive_and_wait();
    });
    std::thread a([&] {
      sync.arrive_and_wait();
      for (std::size_t i = 0; i < nodes.size(); i += 2) {
        delete_node(nodes[i]);
      }
    });
    std::thread b([&] {
      sync.arrive_and_wait();
      for (std::size_t i = 1; i < nodes.size(); i += 2) {
        delete_node(nodes[i]);
      }
    });
    owner.join();
    a.join();
    b.join();
  }
}

TEST(TaskPool, ProducerAndConsumersConcurrently) {
  // One producer hands records to three consumers (more threads than cores) through a
  // lock-free slot array; every record is freed exactly once, by a thread that did not make
  // it, while the producer keeps allocating from the nodes that came back.
  // Fewer records under TSan, which runs this about 10 times slower.
  std::size_t rounds = 200'000;
#if defined(SPINDLE_TSAN)
  rounds /= 10;
#endif
  constexpr std::size_t slots = 256;
  std::array<std::atomic<small_record*>, slots> ring{};
  std::atomic<std::uint64_t> consumed_sum{0};
  std::atomic<std::size_t> consumed{0};
  std::atomic<bool> done{false};
  auto consumer = [&](std::size_t first) {
    std::size_t i = first;
    for (;;) {
      small_record* r = ring[i % slots].exchange(nullptr, std::memory_order_acquire);
      if (r != nullptr) {
        consumed_sum.fetch_add(r->value, std::memory_order_relaxed);
        consumed.fetch_add(1, std::memory_order_relaxed);
        delete_node(r);
      } else if (done.load(std::memory_order_acquire) &&
                 consumed.load(std::memory_order_relaxed) == rounds) {
        return;
      } else {
        std::this_thread::yield();
      }
      i += 3;
    }
  };
  std::thread c0(consumer, 0);
  std::thread c1(consumer, 1);
  std::thread c2(consumer, 2);
  std::uint64_t produced_sum = 0;
  std::size_t next = 0;
  for (std::uint64_t v = 1; v <= rounds; ++v) {
    auto* r = new_node<small_record>(v);
    produced_sum += v;
    for (;;) {
      small_record* expected = nullptr;
      if (ring[next % slots].compare_exchange_strong(expected, r, std::memory_order_release,
                                                     std::memory_order_relaxed)) {
        break;
      }
      ++next;
    }
    ++next;
  }
  done.store(true, std::memory_order_release);
  c0.join();
  c1.join();
  c2.join();
  EXPECT_EQ(consumed.load(), rounds);
  EXPECT_EQ(consumed_sum.load(), produced_sum);
}

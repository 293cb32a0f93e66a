// spindle-coherence: the coherence cost meter's driver. Runs each scenario with N model threads
// under the model checker's random strategy (every scheduling point hands the token to a
// runnable thread drawn at random, the closest a one-thread-at-a-time model comes to threads
// that all run at once) and prints, per message (or per task), per side, what the meter of
// include/spindle/model/coherence.hpp counted: line transfers, invalidations and the copies
// they dropped, read and write misses, read-modify-writes, failed compare-exchanges, fences
// and futex calls. docs/performance.md ("Coherence cost meter (issue 31)") says how to read it.
//
//   spindle-coherence [--only NAME[,NAME...]] [--messages N] [--executions N] [--seed N]
//                     [--max-side N] [--smoke]
//
// Scenarios: bounded (the channel's array flavour, capacity 64), lanes (bounded_lanes, a lane
// per producer, the 64 slots split over them: "lanes(PxK)" is P lanes of K), vyukov (a plain
// bounded MPMC ring written here, the baseline), ticket (atomic_queue's fetch_add ring, written
// here), unbounded, rendezvous, spsc, select (over 4 channels), coroutine (a wake through
// async_recv), deque, executor (spawn + join). The "hot" column is the busiest line's moves.
// The build setting of the channel (spread or contiguous ring, prefetch) is the executable's:
// spindle-coherence and its -contig, -pf-always and -pf-never variants (tools/coherence/
// CMakeLists.txt).
#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/deque.hpp>
#include <spindle/detail/channel/spread_layout.hpp>
#include <spindle/detail/channel/tuning.hpp>
#include <spindle/executor.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/model/coherence.hpp>
#include <spindle/model/track_allocations.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#ifndef SPINDLE_COHERENCE_BUILD
#define SPINDLE_COHERENCE_BUILD "custom"
#endif

namespace {

namespace model = spindle::model;
using model::coherence_counts;
using model::coherence_meter;

struct config {
  std::uint64_t messages = 960;  // divisible by 1, 2, 4, 8, 16, 32 (and 3, 5: 960 = 64 * 15)
  std::uint64_t executions = 10;
  std::uint64_t seed = 1;
  int max_side = 16;
  std::vector<std::string> only;
  bool smoke = false;
};

struct shape {
  int producers;
  int consumers;
};

/// A row of a table: one side of one shape, per unit (message, task).
void print_header(char const* unit) {
  std::printf("%-22s %-6s %-10s %8s %8s %8s %8s %8s %7s %7s %7s %7s %6s\n", "scenario", "shape",
              "side", "xfer", "inval", "copies", "rmiss", "wmiss", "rmw", "casfail", "fence",
              "futex", "hot");
  std::printf("%-22s %-6s %-10s (per %s)\n", "", "", "", unit);
}

/// `hot`: the moves of the busiest line (coherence_meter::hottest_line_moves), on the row of
/// the whole only (negative: not printed).
void print_row(char const* scenario, char const* shape_name, char const* side,
               coherence_counts const& c, double units, double hot = -1) {
  auto per = [units](std::uint64_t v) { return static_cast<double>(v) / units; };
  std::printf("%-22s %-6s %-10s %8.2f %8.2f %8.2f %8.2f %8.2f %7.2f %7.2f %7.2f %7.2f", scenario,
              shape_name, side, per(c.transfers), per(c.invalidations), per(c.copies_invalidated),
              per(c.misses), per(c.write_misses), per(c.rmws), per(c.cas_failures),
              per(c.fences + c.heavy_fences), per(c.futex_waits + c.futex_wakes));
  if (hot >= 0) {
    std::printf(" %6.2f", hot / units);
  }
  std::printf("\n");
}

auto base_options(config const& cfg, coherence_meter& m) -> model::options {
  auto o = model::random_schedules(cfg.seed, cfg.executions);
  o.meter = &m;
  o.max_steps = std::uint64_t{1} << 40U;
  o.spin_limit = 1000000;
  o.use_environment = false;
  return o;
}

/// Runs `body` (which starts side a as threads 1 .. a, side b as a+1 .. a+b) and prints the
/// two sides (and the body's thread 0 as `side_0`, if named) and the whole per unit; exits on
/// a model failure.
void measure(config const& cfg, char const* scenario, shape s, char const* side_a,
             char const* side_b, std::uint64_t units, std::function<void()> const& body,
             char const* side_0 = nullptr) {
  coherence_meter m;
  auto const r = model::explore(base_options(cfg, m), body);
  if (!r) {
    std::fprintf(stderr, "spindle-coherence: %s %dx%d failed:\n%s\n", scenario, s.producers,
                 s.consumers, r.message.c_str());
    std::exit(1);
  }
  char name[32];
  std::snprintf(name, sizeof name, "%dx%d", s.producers, s.consumers);
  auto const n = static_cast<double>(units * m.executions());
  if (side_0 != nullptr) {
    print_row(scenario, name, side_0, m.counts(0), n);
  }
  print_row(scenario, name, side_a, m.sum(1, 1 + s.producers), n);
  if (s.consumers > 0) {
    print_row(scenario, name, side_b, m.sum(1 + s.producers, 1 + s.producers + s.consumers), n);
  }
  print_row(scenario, name, "all", m.total(), n, static_cast<double>(m.hottest_line_moves()));
}

auto shapes(config const& cfg) -> std::vector<shape> {
  std::vector<shape> out;
  for (shape s : {shape{1, 1}, shape{2, 2}, shape{4, 2}, shape{8, 8}, shape{16, 16}}) {
    if (s.producers <= cfg.max_side && s.consumers <= cfg.max_side) {
      out.push_back(s);
    }
  }
  return out;
}

using threads = std::vector<std::unique_ptr<model::thread>>;

void join_all(threads& ts) {
  for (auto& t : ts) {
    t->join();
  }
}

// ---- channels --------------------------------------------------------------------------------

/// P producers send messages / P values each; C consumers receive until the channel closes
/// (the last producer's handle dies with its thread). Each producer sends through a copy of
/// the sender of its own (for bounded_lanes: a lane of its own).
template <class Make>
void channel_scenario(config const& cfg, char const* name, Make make, shape s) {
  auto const per_producer = cfg.messages / static_cast<std::uint64_t>(s.producers);
  measure(cfg, name, s, "producers", "consumers", cfg.messages, [&] {
    std::vector<std::uint64_t> got(static_cast<std::size_t>(s.consumers));
    threads ts;
    {
      auto ch = make();
      for (int p = 0; p < s.producers; ++p) {
        ts.push_back(std::make_unique<model::thread>([tx = ch.first, per_producer]() mutable {
          for (std::uint64_t i = 0; i < per_producer; ++i) {
            auto const r = tx.send(i);
            model::check(r.status == spindle::send_status::sent, "send failed");
          }
        }));
      }
      for (int c = 0; c < s.consumers; ++c) {
        auto* mine = &got[static_cast<std::size_t>(c)];
        ts.push_back(std::make_unique<model::thread>([rx = ch.second, mine]() mutable {
          while (rx.recv()) {
            ++*mine;
          }
        }));
      }
    }
    join_all(ts);
    std::uint64_t total = 0;
    for (auto g : got) {
      total += g;
    }
    model::check(total == per_producer * static_cast<std::uint64_t>(s.producers),
                 "a message was lost or duplicated");
  });
}

void spsc_scenario(config const& cfg) {
  measure(cfg, "spsc(64)", shape{1, 1}, "producers", "consumers", cfg.messages, [&] {
    auto ch = spindle::bounded_spsc<std::uint64_t>(64);
    auto tx = std::make_shared<decltype(ch.first)>(std::move(ch.first));
    auto rx = std::make_shared<decltype(ch.second)>(std::move(ch.second));
    std::uint64_t got = 0;
    auto const n = cfg.messages;
    model::thread producer([tx = std::move(tx), n]() mutable {
      for (std::uint64_t i = 0; i < n; ++i) {
        static_cast<void>(tx->send(i));
      }
      tx.reset();
    });
    model::thread consumer([rx = std::move(rx), &got]() mutable {
      while (rx->recv()) {
        ++got;
      }
      rx.reset();
    });
    producer.join();
    consumer.join();
    model::check(got == n, "a message was lost or duplicated");
  });
}

// ---- the baseline: Vyukov's bounded MPMC queue ----------------------------------------------

/// What both baseline rings below are made of: a stamp and a value per slot (the stamp starts
/// at the slot's index), contiguous, and the two positions on lines of their own.
template <std::size_t Capacity>
struct stamped_slots {
  static_assert((Capacity & (Capacity - 1)) == 0, "a power of two");

  struct slot {
    model::atomic<std::uint64_t> stamp{0};
    std::uint64_t value = 0;
  };

  stamped_slots() {
    for (std::size_t i = 0; i < Capacity; ++i) {
      // relaxed: made before the threads that use it start (the start orders it).
      slots[i].stamp.store(i, std::memory_order_relaxed);
    }
  }

  auto at(std::uint64_t pos) noexcept -> slot& { return slots[pos & (Capacity - 1)]; }

  alignas(64) model::atomic<std::uint64_t> head{0};
  alignas(64) model::atomic<std::uint64_t> tail{0};
  alignas(64) std::array<slot, Capacity> slots{};
};

/// D. Vyukov's bounded MPMC queue (1024cores.net, "Bounded MPMC queue"), the shape of
/// crossbeam-channel's array flavour: a stamp per slot, the positions on their own lines.
/// Written here on the model's atomics; a full or empty queue makes the caller spin.
template <std::size_t Capacity>
class vyukov_ring {
 public:
  auto try_push(std::uint64_t v) -> bool {
    // relaxed: a stale position only fails the CAS; the stamp's acquire guards the slot.
    auto pos = r_.tail.load(std::memory_order_relaxed);
    for (;;) {
      auto& s = r_.at(pos);
      // acquire: pairs with the release stamp store of the pop that emptied the slot.
      auto const stamp = s.stamp.load(std::memory_order_acquire);
      auto const diff = static_cast<std::int64_t>(stamp - pos);
      if (diff == 0) {
        // relaxed: the claim orders nothing; the stamp store publishes.
        if (r_.tail.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          model::note_write(&s.value, sizeof s.value);
          s.value = v;
          // release: pairs with the acquire stamp load of the pop.
          s.stamp.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;
      } else {
        pos = r_.tail.load(std::memory_order_relaxed);  // relaxed: as above
      }
    }
  }

  auto try_pop(std::uint64_t& v) -> bool {
    // relaxed: as in try_push.
    auto pos = r_.head.load(std::memory_order_relaxed);
    for (;;) {
      auto& s = r_.at(pos);
      // acquire: pairs with the release stamp store of the push that filled the slot.
      auto const stamp = s.stamp.load(std::memory_order_acquire);
      auto const diff = static_cast<std::int64_t>(stamp - (pos + 1));
      if (diff == 0) {
        // relaxed: the claim orders nothing; the stamp load above acquired the value.
        if (r_.head.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          model::note_read(&s.value, sizeof s.value);
          v = s.value;
          // release: pairs with the acquire stamp load of the push one lap later.
          s.stamp.store(pos + Capacity, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;
      } else {
        pos = r_.head.load(std::memory_order_relaxed);  // relaxed: as above
      }
    }
  }

 private:
  stamped_slots<Capacity> r_;
};

/// The ticket ring of atomic_queue (max0x7ba/atomic_queue, the shape of its AtomicQueueB): a
/// fetch_add on the position hands each side its slot, and a thread whose slot is not ready
/// spins on that slot's stamp rather than on the shared position. No claim is ever retried.
/// Written here on the model's atomics; the queue is contiguous, as the Vyukov ring above.
template <std::size_t Capacity>
class ticket_ring {
 public:
  void push(std::uint64_t v) {
    // relaxed: the ticket only names the slot; its stamp orders the slot's use.
    auto const pos = r_.tail.fetch_add(1, std::memory_order_relaxed);
    auto& s = r_.at(pos);
    // acquire: pairs with the release stamp store of the pop that emptied the slot.
    while (s.stamp.load(std::memory_order_acquire) != pos) {
      model::spin_pause();
    }
    model::note_write(&s.value, sizeof s.value);
    s.value = v;
    // release: pairs with the acquire stamp load of the pop.
    s.stamp.store(pos + 1, std::memory_order_release);
  }

  auto pop() -> std::uint64_t {
    // relaxed: as in push.
    auto const pos = r_.head.fetch_add(1, std::memory_order_relaxed);
    auto& s = r_.at(pos);
    // acquire: pairs with the release stamp store of the push that filled the slot.
    while (s.stamp.load(std::memory_order_acquire) != pos + 1) {
      model::spin_pause();
    }
    model::note_read(&s.value, sizeof s.value);
    auto const v = s.value;
    // release: pairs with the acquire stamp load of the push one lap later.
    s.stamp.store(pos + Capacity, std::memory_order_release);
    return v;
  }

 private:
  stamped_slots<Capacity> r_;
};

void ticket_scenario(config const& cfg, shape s) {
  auto const per_producer = cfg.messages / static_cast<std::uint64_t>(s.producers);
  auto const per_consumer = cfg.messages / static_cast<std::uint64_t>(s.consumers);
  measure(cfg, "ticket(64)", s, "producers", "consumers", cfg.messages, [&] {
    auto q = std::make_unique<ticket_ring<64>>();
    threads ts;
    for (int p = 0; p < s.producers; ++p) {
      ts.push_back(std::make_unique<model::thread>([&q, per_producer] {
        for (std::uint64_t i = 0; i < per_producer; ++i) {
          q->push(i);
        }
      }));
    }
    for (int c = 0; c < s.consumers; ++c) {
      ts.push_back(std::make_unique<model::thread>([&q, per_consumer] {
        for (std::uint64_t i = 0; i < per_consumer; ++i) {
          static_cast<void>(q->pop());
        }
      }));
    }
    join_all(ts);
  });
}

void vyukov_scenario(config const& cfg, shape s) {
  auto const per_producer = cfg.messages / static_cast<std::uint64_t>(s.producers);
  auto const per_consumer = cfg.messages / static_cast<std::uint64_t>(s.consumers);
  measure(cfg, "vyukov(64)", s, "producers", "consumers", cfg.messages, [&] {
    auto q = std::make_unique<vyukov_ring<64>>();
    threads ts;
    for (int p = 0; p < s.producers; ++p) {
      ts.push_back(std::make_unique<model::thread>([&q, per_producer] {
        for (std::uint64_t i = 0; i < per_producer; ++i) {
          while (!q->try_push(i)) {
            model::spin_pause();
          }
        }
      }));
    }
    for (int c = 0; c < s.consumers; ++c) {
      ts.push_back(std::make_unique<model::thread>([&q, per_consumer] {
        std::uint64_t v = 0;
        for (std::uint64_t i = 0; i < per_consumer; ++i) {
          while (!q->try_pop(v)) {
            model::spin_pause();
          }
        }
      }));
    }
    join_all(ts);
  });
}

// ---- the deque -------------------------------------------------------------------------------

/// The owner pushes `tasks` items in rounds of 8 and pops until empty after each round, as a
/// fork-join worker does; `thieves` threads steal (or steal a batch into their own deque and
/// pop it) until the owner is done. Units: tasks pushed.
void deque_scenario(config const& cfg, int thieves, bool batch) {
  auto const tasks = cfg.messages;
  char const* name = batch ? "deque steal_batch" : "deque steal";
  measure(cfg, name, shape{1, thieves}, "owner", "thieves", tasks, [&] {
    spindle::deque_owner<std::uint64_t> owner;
    auto done = std::make_unique<model::atomic<bool>>(false);
    std::vector<std::uint64_t> took(static_cast<std::size_t>(thieves) + 1);
    std::vector<spindle::stealer<std::uint64_t>> stealers;
    for (int t = 0; t < thieves; ++t) {
      stealers.push_back(owner.stealer());
    }
    threads ts;
    // The owner is model thread 1 (side a), the thieves 2 .. thieves + 1.
    ts.push_back(std::make_unique<model::thread>([&] {
      for (std::uint64_t i = 0; i < tasks; i += 8) {
        for (std::uint64_t k = 0; k < 8 && i + k < tasks; ++k) {
          owner.push(i + k);
        }
        while (owner.pop()) {
          ++took[0];
        }
      }
      // release: pairs with the thieves' acquire loads.
      done->store(true, std::memory_order_release);
    }));
    for (int t = 0; t < thieves; ++t) {
      auto* mine = &took[static_cast<std::size_t>(t) + 1];
      auto* thief_of = &stealers[static_cast<std::size_t>(t)];
      ts.push_back(std::make_unique<model::thread>([thief_of, &done, mine, batch] {
        auto& thief = *thief_of;
        spindle::deque_owner<std::uint64_t> own;
        // acquire: pairs with the owner's release store of done (the last item was taken).
        while (!done->load(std::memory_order_acquire)) {
          auto r = batch ? thief.steal_batch_and_pop(own) : thief.steal();
          if (r.is_stolen()) {
            ++*mine;
            while (own.pop()) {
              ++*mine;
            }
          } else {
            model::spin_pause();
          }
        }
      }));
    }
    join_all(ts);
    std::uint64_t total = 0;
    for (auto t : took) {
      total += t;
    }
    model::check(total == tasks, "a task was lost or taken twice");
  });
}

// ---- the executor and coroutines -----------------------------------------------------------

/// A task spawned from outside spawns `tasks` children in rounds of 8 and joins each round,
/// on `workers` workers (model threads 1 .. workers). Units: child tasks.
void executor_scenario(config const& cfg, int workers) {
  auto const tasks = cfg.messages;
  measure(
      cfg, "executor spawn+join", shape{workers, 0}, "workers", "", tasks,
      [&] {
        spindle::executor ex(static_cast<std::size_t>(workers));
        auto root = ex.spawn([&ex, tasks] {
          std::uint64_t sum = 0;
          for (std::uint64_t i = 0; i < tasks; i += 8) {
            auto child = [](std::uint64_t v) { return v; };
            auto h0 = ex.spawn([=] { return child(i); });
            auto h1 = ex.spawn([=] { return child(i + 1); });
            auto h2 = ex.spawn([=] { return child(i + 2); });
            auto h3 = ex.spawn([=] { return child(i + 3); });
            auto h4 = ex.spawn([=] { return child(i + 4); });
            auto h5 = ex.spawn([=] { return child(i + 5); });
            auto h6 = ex.spawn([=] { return child(i + 6); });
            auto h7 = ex.spawn([=] { return child(i + 7); });
            sum += h7.join() + h6.join() + h5.join() + h4.join() + h3.join() + h2.join() +
                   h1.join() + h0.join();
          }
          return sum;
        });
        auto const want = (tasks + 7) / 8 * 8 * ((tasks + 7) / 8 * 8 - 1) / 2;
        model::check(root.join() == want, "a child's result was lost");
      },
      "outside");
}

auto receive_all(spindle::receiver<std::uint64_t> rx, std::uint64_t n)
    -> spindle::task<std::uint64_t> {
  std::uint64_t got = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    auto v = co_await rx.async_recv();
    got += v ? 1 : 0;
  }
  co_return got;
}

/// A coroutine on a one-worker executor awaits recv on a bounded(1) channel; the body's thread
/// sends, so most sends find the coroutine suspended and wake it. Units: messages.
void coroutine_scenario(config const& cfg) {
  auto const n = cfg.messages;
  measure(
      cfg, "coroutine wake", shape{1, 0}, "worker", "", n,
      [&] {
        auto ch = spindle::bounded<std::uint64_t>(1);
        spindle::executor ex(1);
        auto h = ex.spawn(receive_all(ch.second, n));
        for (std::uint64_t i = 0; i < n; ++i) {
          static_cast<void>(ch.first.send(i));
        }
        model::check(h.join() == n, "a message was lost");
      },
      "sender");
}

/// Four senders (threads 1-4), each on its own bounded(1) channel; one thread (5) selects over
/// the four receivers until every message arrived. Units: messages.
void select_scenario(config const& cfg) {
  auto const per_sender = cfg.messages / 4;
  measure(cfg, "select over 4", shape{4, 1}, "senders", "selector", per_sender * 4, [&] {
    // The body keeps a sender of each channel until the end, so that no channel closes: a
    // select would find a closed channel ready at every try.
    threads ts;
    std::uint64_t got = 0;
    {
      auto c0 = spindle::bounded<std::uint64_t>(1);
      auto c1 = spindle::bounded<std::uint64_t>(1);
      auto c2 = spindle::bounded<std::uint64_t>(1);
      auto c3 = spindle::bounded<std::uint64_t>(1);
      for (auto* tx : {&c0.first, &c1.first, &c2.first, &c3.first}) {
        ts.push_back(std::make_unique<model::thread>([tx = *tx, per_sender]() mutable {
          for (std::uint64_t i = 0; i < per_sender; ++i) {
            static_cast<void>(tx.send(i));
          }
        }));
      }
      ts.push_back(std::make_unique<model::thread>([r0 = c0.second, r1 = c1.second, r2 = c2.second,
                                                    r3 = c3.second, &got,
                                                    want = per_sender * 4]() mutable {
        auto take = [&got](std::optional<std::uint64_t> v) { got += v ? 1 : 0; };
        while (got < want) {
          static_cast<void>(spindle::select(spindle::on_recv(r0, take), spindle::on_recv(r1, take),
                                            spindle::on_recv(r2, take),
                                            spindle::on_recv(r3, take)));
        }
      }));
      join_all(ts);
    }
    model::check(got == per_sender * 4, "a message was lost");
  });
}

auto async_select_receiver(std::array<spindle::receiver<std::uint64_t>, 4> rx, std::uint64_t want)
    -> spindle::task<std::uint64_t> {
  std::uint64_t got = 0;
  auto take = [&got](std::optional<std::uint64_t> v) { got += v ? 1 : 0; };
  while (got < want) {
    co_await spindle::async_select(spindle::on_recv(rx[0], take), spindle::on_recv(rx[1], take),
                                   spindle::on_recv(rx[2], take), spindle::on_recv(rx[3], take));
  }
  co_return got;
}

auto send_all(spindle::sender<std::uint64_t> tx, std::uint64_t first, std::uint64_t n)
    -> spindle::task<void> {
  for (std::uint64_t i = 0; i < n; ++i) {
    auto const sent = co_await tx.async_send(first + i);
    model::check(sent.is_sent(), "an async_send failed on an open channel");
  }
}

/// spindle-bench's all-coroutine select on `workers` workers (model threads 1 .. workers):
/// four producer coroutines, each on its own bounded(64) channel, and one receiving coroutine
/// in async_select over the four, all spawned from the body (model thread 0). Units: messages.
void coroutine_select_scenario(config const& cfg, int workers) {
  auto const per_sender = cfg.messages / 4;
  measure(
      cfg, "coroutine select", shape{workers, 0}, "workers", "", per_sender * 4,
      [&] {
        std::array<std::pair<spindle::sender<std::uint64_t>, spindle::receiver<std::uint64_t>>, 4>
            ch{spindle::bounded<std::uint64_t>(64), spindle::bounded<std::uint64_t>(64),
               spindle::bounded<std::uint64_t>(64), spindle::bounded<std::uint64_t>(64)};
        spindle::executor ex(static_cast<std::size_t>(workers));
        auto receiving = ex.spawn(async_select_receiver(
            {ch[0].second, ch[1].second, ch[2].second, ch[3].second}, per_sender * 4));
        std::vector<spindle::join_handle<void>> sending;
        for (std::size_t p = 0; p < 4; ++p) {
          sending.push_back(ex.spawn(send_all(ch[p].first, p * per_sender, per_sender)));
        }
        model::check(receiving.join() == per_sender * 4, "a message was lost");
        for (auto& h : sending) {
          h.join();
        }
      },
      "outside");
}

/// spindle-bench's coroutine fan-in on `workers` workers: 96 sender coroutines send 10
/// messages each (960 by default) into one bounded(16) channel, whose receiving coroutine
/// takes them all: about six senders per slot, as the bench's 10,000 senders over 1024 slots
/// keep most of them waiting. Units: messages.
void coroutine_fanin_scenario(config const& cfg, int workers) {
  std::uint64_t const senders = 96;
  auto const per_sender = std::max<std::uint64_t>(cfg.messages / senders, 1);
  measure(
      cfg, "coroutine fan-in", shape{workers, 0}, "workers", "", senders * per_sender,
      [&] {
        auto ch = spindle::bounded<std::uint64_t>(16);
        spindle::executor ex(static_cast<std::size_t>(workers));
        auto receiving = ex.spawn(receive_all(ch.second, senders * per_sender));
        std::vector<spindle::join_handle<void>> sending;
        for (std::uint64_t s = 0; s < senders; ++s) {
          sending.push_back(ex.spawn(send_all(ch.first, s * per_sender, per_sender)));
        }
        model::check(receiving.join() == senders * per_sender, "a message was lost");
        for (auto& h : sending) {
          h.join();
        }
      },
      "outside");
}

auto wanted(config const& cfg, char const* name) -> bool {
  if (cfg.only.empty()) {
    return true;
  }
  for (auto const& o : cfg.only) {
    if (o == name) {
      return true;
    }
  }
  return false;
}

void run(config const& cfg) {
  std::printf(
      "spindle-coherence: build %s (ring %s, prefetch %d), %llu messages, %llu "
      "executions per shape, random schedules from seed %llu\n",
      SPINDLE_COHERENCE_BUILD, spindle::detail::spread_pays() ? "spread" : "contiguous",
      spindle::detail::channel_tuning::prefetch, static_cast<unsigned long long>(cfg.messages),
      static_cast<unsigned long long>(cfg.executions), static_cast<unsigned long long>(cfg.seed));
  print_header("message");
  if (wanted(cfg, "bounded")) {
    for (auto s : shapes(cfg)) {
      channel_scenario(
          cfg, "bounded(64)", [] { return spindle::bounded<std::uint64_t>(64); }, s);
    }
  }
  if (wanted(cfg, "lanes")) {
    for (auto s : shapes(cfg)) {
      // The bounded row's 64 slots split over one lane per producer, so that both buffer as
      // many messages: the producers' copies of the sender take lanes 1 .. P-1 and then 0
      // (round robin), one each, while the body's own handle, which sends nothing, holds 0.
      // Each model thread keeps its receive hint as a thread does (lanes_channel.hpp,
      // hint()), so consumers start spread over the lanes. The lanes' rings are contiguous
      // whatever this build's setting for bounded(64) is.
      auto const lanes = static_cast<std::size_t>(s.producers);
      auto const lane_capacity = std::max<std::size_t>(64 / lanes, 1);
      char name[32];
      std::snprintf(name, sizeof name, "lanes(%zux%zu)", lanes, lane_capacity);
      channel_scenario(
          cfg, name,
          [lanes, lane_capacity] {
            return spindle::bounded_lanes<std::uint64_t>(lane_capacity, lanes);
          },
          s);
    }
  }
  if (wanted(cfg, "vyukov")) {
    for (auto s : shapes(cfg)) {
      vyukov_scenario(cfg, s);
    }
  }
  if (wanted(cfg, "ticket")) {
    for (auto s : shapes(cfg)) {
      ticket_scenario(cfg, s);
    }
  }
  if (wanted(cfg, "unbounded")) {
    for (auto s : shapes(cfg)) {
      channel_scenario(
          cfg, "unbounded", [] { return spindle::unbounded<std::uint64_t>(); }, s);
    }
  }
  if (wanted(cfg, "rendezvous")) {
    for (auto s : shapes(cfg)) {
      channel_scenario(
          cfg, "bounded(0)", [] { return spindle::bounded<std::uint64_t>(0); }, s);
    }
  }
  if (wanted(cfg, "spsc")) {
    spsc_scenario(cfg);
  }
  if (wanted(cfg, "select")) {
    select_scenario(cfg);
  }
  if (wanted(cfg, "coroutine")) {
    coroutine_scenario(cfg);
  }
  if (wanted(cfg, "coroutines")) {
    // The coroutine scenarios of spindle-bench on 1 to 16 workers: how the executor's waking
    // and stealing scale when a few coroutines pass messages and the other workers are idle.
    for (int workers : {1, 2, 4, 8, 16}) {
      if (workers <= cfg.max_side) {
        coroutine_select_scenario(cfg, workers);
      }
    }
    for (int workers : {1, 2, 4, 8, 16}) {
      if (workers <= cfg.max_side) {
        coroutine_fanin_scenario(cfg, workers);
      }
    }
  }
  if (wanted(cfg, "deque")) {
    print_header("task");
    for (int thieves : {0, 1, 2, 4, 8, 16}) {
      if (thieves <= cfg.max_side) {
        deque_scenario(cfg, thieves, false);
      }
    }
    for (int thieves : {1, 4, 16}) {
      if (thieves <= cfg.max_side) {
        deque_scenario(cfg, thieves, true);
      }
    }
  }
  if (wanted(cfg, "executor")) {
    print_header("child task");
    // Workers are one side: up to twice --max-side, as many threads as the widest channel
    // shape (16P/16C) runs.
    for (int workers : {1, 2, 4, 8, 16, 32}) {
      if (workers <= 2 * cfg.max_side) {
        executor_scenario(cfg, workers);
      }
    }
  }
}

auto parse_number(char const* s) -> std::uint64_t {
  char* end = nullptr;
  auto const v = std::strtoull(s, &end, 10);
  if (end == s || *end != '\0') {
    std::fprintf(stderr, "spindle-coherence: not a number: %s\n", s);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  config cfg;
  for (int i = 1; i < argc; ++i) {
    std::string const a = argv[i];
    auto value = [&]() -> char const* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "spindle-coherence: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--messages") {
      cfg.messages = parse_number(value());
    } else if (a == "--executions") {
      cfg.executions = parse_number(value());
    } else if (a == "--seed") {
      cfg.seed = parse_number(value());
    } else if (a == "--max-side") {
      cfg.max_side = static_cast<int>(parse_number(value()));
    } else if (a == "--only") {
      std::string list = value();
      std::size_t start = 0;
      while (start <= list.size()) {
        auto const comma = list.find(',', start);
        auto const end = comma == std::string::npos ? list.size() : comma;
        cfg.only.push_back(list.substr(start, end - start));
        start = end + 1;
      }
    } else if (a == "--smoke") {
      cfg.smoke = true;
      cfg.messages = 64;
      cfg.executions = 1;
      cfg.max_side = 4;
    } else {
      std::fprintf(
          stderr,
          "usage: spindle-coherence [--only bounded,lanes,vyukov,ticket,unbounded,rendezvous,"
          "spsc,select,coroutine,coroutines,deque,executor] [--messages N] [--executions N] "
          "[--seed N] "
          "[--max-side N] "
          "[--smoke]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  if (cfg.messages == 0 || cfg.executions == 0 || cfg.max_side < 1) {
    std::fprintf(stderr, "spindle-coherence: messages, executions and max-side must be > 0\n");
    return 2;
  }
  run(cfg);
  return 0;
}

// Fuzz target: bytes choose the interleaving. Built with SPINDLE_MODEL_CHECK, it runs one small
// concurrent scenario (chosen by the first byte) under the model checker with strategy::bytes,
// so every later byte picks the next thread (or store-buffer flush) at a scheduling point. Any
// failure the checker reports (lost item, race, deadlock, livelock) aborts with the schedule.
#include <spindle/channel.hpp>
#include <spindle/deque.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/parker.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/model/track_allocations.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <vector>

namespace model = spindle::model;

namespace {

void deque_scenario() {
  spindle::deque_owner<int> w(spindle::deque_order::lifo, 1);
  auto s = w.stealer();
  w.push(1);
  w.push(2);
  int got[2] = {0, 0};
  model::thread thief([&] {
    for (int i = 0; i < 2; ++i) {
      auto r = s.steal();
      if (r.is_stolen()) {
        ++got[*r.value - 1];
      }
    }
  });
  w.push(3);
  int mine[3] = {0, 0, 0};
  while (auto v = w.pop()) {
    ++mine[*v - 1];
  }
  thief.join();
  model::check(got[0] + mine[0] == 1 && got[1] + mine[1] == 1 && mine[2] <= 1,
               "deque lost or duplicated an item");
}

void channel_scenario(std::size_t capacity) {
  auto [tx, rx] = spindle::bounded<int>(capacity);
  model::thread producer([tx = tx]() mutable {
    for (int i = 0; i < 3; ++i) {
      static_cast<void>(tx.send(i));
    }
  });
  model::thread closer([tx = tx]() mutable { tx.close(); });
  int expected = 0;
  while (auto v = rx.recv()) {
    model::check(*v == expected, "channel reordered or duplicated a value");
    ++expected;
  }
  producer.join();
  closer.join();
}

void unbounded_scenario() {
  auto [tx, rx] = spindle::unbounded<int>();
  model::thread a([tx = tx]() mutable {
    for (int i = 0; i < 2; ++i) {
      static_cast<void>(tx.send(i));
    }
  });
  model::thread b([tx = tx]() mutable {
    for (int i = 10; i < 12; ++i) {
      static_cast<void>(tx.send(i));
    }
  });
  int count = 0;
  for (; count < 4; ++count) {
    auto v = rx.recv();
    model::check(v.has_value(), "unbounded recv failed while senders are alive");
  }
  a.join();
  b.join();
}

void mutex_scenario() {
  spindle::detail::mutex m;
  model::plain<int> counter;
  auto work = [&] {
    for (int i = 0; i < 2; ++i) {
      std::lock_guard lk(m);
      counter.set(counter.get() + 1);
    }
  };
  model::thread a(work);
  model::thread b(work);
  a.join();
  b.join();
  model::check(counter.get() == 4, "mutex lost an increment");
}

void parker_scenario() {
  spindle::detail::parker p;
  model::plain<int> payload;
  model::thread t([&] {
    payload.set(1);
    p.unpark();
  });
  p.park();
  model::check(payload.get() == 1, "parker returned before the unpark");
  t.join();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  model::options o;
  o.kind = model::strategy::bytes;
  o.bytes.assign(data + 1, data + size);
  o.store_buffering = (data[0] & 0x80U) != 0;
  o.quiet = true;
  o.use_environment = false;
  std::function<void()> body;
  switch (data[0] % 7) {
    case 0:
      body = deque_scenario;
      break;
    case 1:
      body = [] { channel_scenario(0); };
      break;
    case 2:
      body = [] { channel_scenario(1); };
      break;
    case 3:
      body = [] { channel_scenario(2); };
      break;
    case 4:
      body = unbounded_scenario;
      break;
    case 5:
      body = mutex_scenario;
      break;
    default:
      body = parker_scenario;
      break;
  }
  auto const r = model::explore(o, body);
  if (!r) {
    std::fprintf(stderr, "schedule_fuzz: scenario %d: %s", data[0] % 7, r.message.c_str());
    std::abort();
  }
  return 0;
}

// Fuzz target: bytes decode into operations on two work-stealing deques driven from one thread
// (push, pop, steal, steal_batch_and_pop from one into the other, steal_batch into a span,
// copying stealers), checked step by step against a sequential model of both deques.
// Capacities start small so growth happens often.
#include <spindle/deque.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <span>
#include <vector>

#include "fuzz/byte_reader.hpp"

namespace {

[[noreturn]] void fail(char const* what) {
  std::fprintf(stderr, "deque_fuzz: %s\n", what);
  std::abort();
}

void expect(bool cond, char const* what) {
  if (!cond) {
    fail(what);
  }
}

struct side {
  spindle::deque_owner<std::uint32_t> w;
  std::vector<spindle::stealer<std::uint32_t>> thieves;
  std::deque<std::uint32_t> model;
  bool lifo;

  side(spindle::deque_order order, std::size_t capacity)
      : w(order, capacity), lifo(order == spindle::deque_order::lifo) {
    thieves.push_back(w.stealer());
  }

  auto model_pop() -> std::uint32_t {
    std::uint32_t v = 0;
    if (lifo) {
      v = model.back();
      model.pop_back();
    } else {
      v = model.front();
      model.pop_front();
    }
    return v;
  }
};

void run(spindle_fuzz::byte_reader& in) {
  auto const config = in.next();
  side sides[2] = {side(config & 1U ? spindle::deque_order::fifo : spindle::deque_order::lifo,
                        std::size_t{1} << ((config >> 1U) % 4)),
                   side(config & 16U ? spindle::deque_order::fifo : spindle::deque_order::lifo,
                        std::size_t{1} << ((config >> 5U) % 3))};
  std::uint32_t next_value = 1;
  for (int steps = 0; steps < 4096 && !in.done(); ++steps) {
    auto const op = in.next();
    auto& me = sides[op & 1U];
    auto& other = sides[1U - (op & 1U)];
    auto& thief = me.thieves[(op >> 1U) % me.thieves.size()];
    switch ((op >> 3U) % 9) {
      case 0:
      case 1:
      case 2: {
        std::uint32_t const count = 1U + (op >> 6U) * 7U;  // sometimes a burst, to grow
        for (std::uint32_t i = 0; i < count; ++i) {
          me.w.push(next_value);
          me.model.push_back(next_value++);
        }
        break;
      }
      case 3:
      case 4: {
        auto v = me.w.pop();
        if (me.model.empty()) {
          expect(!v, "pop from an empty deque returned an item");
        } else {
          expect(v && *v == me.model_pop(), "pop returned the wrong item");
        }
        break;
      }
      case 5: {
        auto r = thief.steal();
        if (me.model.empty()) {
          expect(r.is_empty(), "steal from an empty deque did not report empty");
        } else {
          expect(r.is_stolen() && *r.value == me.model.front(),
                 "steal did not take the oldest item (no race is possible here)");
          me.model.pop_front();
        }
        break;
      }
      case 6: {
        // Steal about half of `me` into `other`, returning the oldest.
        auto r = thief.steal_batch_and_pop(other.w);
        if (me.model.empty()) {
          expect(r.is_empty(), "batch steal from an empty deque did not report empty");
          break;
        }
        expect(r.is_stolen() && *r.value == me.model.front(), "batch did not return the oldest");
        auto const n = static_cast<std::int64_t>(me.model.size());
        auto const claim =
            std::min<std::int64_t>((n + 1) / 2, std::int64_t{33});  // "at most 33", documented
        me.model.pop_front();
        for (std::int64_t i = 1; i < claim; ++i) {
          other.model.push_back(me.model.front());
          me.model.pop_front();
        }
        break;
      }
      case 7: {
        // Steal about half of `me`, at most the span's 1 to 40 items, into a plain array.
        std::uint32_t out[40] = {};
        auto const room = std::size_t{1} + in.next() % 40U;
        auto const r = thief.steal_batch(std::span(out, room));
        if (me.model.empty()) {
          expect(r.is_empty() && r.count == 0, "span batch from an empty deque took something");
          break;
        }
        auto const want = std::min((me.model.size() + 1) / 2, room);
        expect(r.is_stolen() && r.count == want, "span batch took the wrong number of items");
        for (std::size_t i = 0; i < r.count; ++i) {
          expect(out[i] == me.model.front(), "span batch did not take the oldest, in order");
          me.model.pop_front();
        }
        break;
      }
      default:
        if (me.thieves.size() < 3) {
          me.thieves.push_back(me.thieves.front());
        } else {
          me.thieves.pop_back();
        }
        break;
    }
    for (auto& s : sides) {
      expect(s.w.size() == s.model.size(), "size() disagrees with the model");
    }
  }
  // Drain both through stealers and the owner: everything left comes out in model order.
  for (auto& s : sides) {
    while (!s.model.empty()) {
      auto v = s.w.pop();
      expect(v && *v == s.model_pop(), "draining returned the wrong item");
    }
    expect(!s.w.pop() && s.thieves.front().steal().is_empty(), "drained deque not empty");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  spindle_fuzz::byte_reader in(data, size);
  run(in);
  return 0;
}

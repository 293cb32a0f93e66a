// A consumer of spindle::model: the library built on the model checker's atomics, explored
// over a few schedules of one send and one receive.
#include <spindle/channel.hpp>
#include <spindle/model/scheduler.hpp>
#include <spindle/model/track_allocations.hpp>

#include <cstdio>

#if !defined(SPINDLE_MODEL_CHECK)
#error "spindle::model must define SPINDLE_MODEL_CHECK for its users"
#endif

namespace model = spindle::model;

auto main() -> int {
  auto const r = model::explore(model::random_schedules(1, 20), [] {
    // Named handles, not a structured binding: clang 14 cannot capture a binding in a lambda.
    auto channel = spindle::bounded<int>(1);
    auto& tx = channel.first;
    auto& rx = channel.second;
    model::thread sender([&tx] { model::check(static_cast<bool>(tx.send(42)), "send failed"); });
    auto v = rx.recv();
    model::check(v && *v == 42, "recv did not return the value sent");
    sender.join();
  });
  if (!r) {
    std::fprintf(stderr, "%s\n", r.message.c_str());
    return 1;
  }
  return 0;
}

// Broadcasting configuration updates with spindle::broadcast: every listener (a thread and a
// coroutine here) gets every update; a listener that falls too far behind is told how many
// updates it missed and goes on from the oldest one still held; the publisher never waits.

#include <spindle/broadcast.hpp>
#include <spindle/executor.hpp>
#include <spindle/task.hpp>

#include <cstdio>
#include <string>
#include <thread>

namespace {

/// Reads updates until the publisher is gone; returns how many it saw or was told it missed.
auto listen(spindle::broadcast_receiver<std::string> updates) -> spindle::task<int> {
  int accounted = 0;
  for (;;) {
    auto u = co_await updates.async_recv();
    if (u.is_closed()) {
      co_return accounted;
    }
    if (u.is_lagged()) {
      std::printf("coroutine: missed %llu updates\n", static_cast<unsigned long long>(u.missed));
      accounted += static_cast<int>(u.missed);
      continue;
    }
    std::printf("coroutine: %s\n", u.value->c_str());
    ++accounted;
  }
}

}  // namespace

int main() {
  constexpr int updates = 5;
  spindle::executor ex(2);
  auto [publisher, first] = spindle::broadcast<std::string>(8);

  // A coroutine listener, subscribed before the first update.
  auto coroutine = ex.spawn(listen(publisher.subscribe()));

  // A thread listener, on the first receiver.
  int thread_accounted = 0;
  std::thread thread_listener([&thread_accounted, rx = std::move(first)]() mutable {
    for (;;) {
      auto u = rx.recv();
      if (u.is_closed()) {
        return;
      }
      thread_accounted += u.is_lagged() ? static_cast<int>(u.missed) : 1;
      if (u.is_received()) {
        std::printf("thread: %s\n", u.value->c_str());
      }
    }
  });

  for (int i = 1; i <= updates; ++i) {
    auto sent = publisher.send("config v" + std::to_string(i));
    std::printf("publisher: v%d reached %zu listeners\n", i, sent.receivers);
  }
  publisher.close();  // listeners read what is left, then see `closed`

  thread_listener.join();
  int const coroutine_accounted = coroutine.join();
  // Every update was received or reported missed, by each listener.
  return thread_accounted == updates && coroutine_accounted == updates ? 0 : 1;
}

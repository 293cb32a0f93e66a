// A coroutine pipeline on a spindle::executor: parse -> transform -> sink.
//
//   parse      turns text lines into numbers and sends them on;
//   transform  squares each number; it also listens on a shutdown channel with async_select,
//              so that it can be told to stop early (here nobody does: the input ends first);
//   sink       adds up what arrives.
// Each stage is a coroutine: while its channel is empty (or full) it is suspended and holds no
// worker, so three stages share an executor of two workers. A stage ends when its input channel
// is closed and drained; its output sender dies with it, which closes the next channel.

#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/task.hpp>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace {

// Coroutine parameters are taken by value: the coroutine keeps its own handles, which die when
// it ends. (A lambda with captures would be a trap here: the lambda object may be gone while
// the coroutine still runs.)
spindle::task<void> parse(std::vector<std::string> lines, spindle::sender<std::int64_t> out) {
  for (auto const& line : lines) {
    auto const n = std::stoll(line);
    // Suspends while `out` is full; fails only if every receiver is gone.
    auto sent = co_await out.async_send(n);
    if (!sent) {
      co_return;
    }
  }
}  // `out` is destroyed here: the next stage sees the end once it has drained the channel

spindle::task<void> transform(spindle::receiver<std::int64_t> in, spindle::receiver<int> shutdown,
                              spindle::sender<std::int64_t> out) {
  for (;;) {
    std::optional<std::int64_t> got;
    bool stop = false;
    // Exactly one case runs: a number (or nullopt: the input is closed and drained), or a
    // shutdown request (a message, or nullopt: every shutdown sender is gone).
    co_await spindle::async_select(
        spindle::on_recv(in,
                         [&](std::optional<std::int64_t> n) {
                           if (n) {
                             got = *n;
                           } else {
                             stop = true;
                           }
                         }),
        spindle::on_recv(shutdown, [&](std::optional<int>) { stop = true; }));
    if (stop) {
      co_return;
    }
    // A handler cannot co_await, so the value is sent after the select: this suspends while
    // the sink falls behind.
    auto sent = co_await out.async_send(*got * *got);
    if (!sent) {
      co_return;
    }
  }
}

spindle::task<std::int64_t> sink(spindle::receiver<std::int64_t> in) {
  std::int64_t sum = 0;
  // async_recv returns std::nullopt once the channel is closed and drained.
  while (auto v = co_await in.async_recv()) {
    sum += *v;
  }
  co_return sum;
}

}  // namespace

int main() {
  std::vector<std::string> lines;
  for (int i = 1; i <= 1000; ++i) {
    lines.push_back(std::to_string(i));
  }

  spindle::executor ex{2};
  auto [numbers_tx, numbers_rx] = spindle::bounded<std::int64_t>(16);  // back-pressure on parse
  auto [squares_tx, squares_rx] = spindle::bounded<std::int64_t>(16);
  // Shutdown: a send on stop_tx (or destroying it) stops transform early. It stays alive, and
  // silent, until the pipeline has finished on its own.
  auto [stop_tx, stop_rx] = spindle::bounded<int>(1);

  // spawn starts each coroutine on a worker. The handles passed in are moved, so that the
  // coroutines own the only senders and the channels close when the stages end.
  auto total = ex.spawn(sink(std::move(squares_rx)));
  auto middle =
      ex.spawn(transform(std::move(numbers_rx), std::move(stop_rx), std::move(squares_tx)));
  auto first = ex.spawn(parse(std::move(lines), std::move(numbers_tx)));

  first.join();
  middle.join();
  std::int64_t const sum = total.join();  // a thread joins; a coroutine would co_await instead
  std::int64_t const expected = 1000LL * 1001 * 2001 / 6;
  std::printf("sum of squares 1..1000: %lld (expected %lld)\n", static_cast<long long>(sum),
              static_cast<long long>(expected));
  return sum == expected ? 0 : 1;
}

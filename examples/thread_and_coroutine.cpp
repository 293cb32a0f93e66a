// A plain thread and a coroutine talking over spindle channels, in both directions.
//
// The same channel serves both worlds: the thread uses the blocking send() and recv(), the
// coroutine co_awaits async_send() and async_recv(). A thread's send wakes a suspended
// coroutine (which then continues on its executor's worker), and a coroutine's send wakes a
// blocked thread.
//
// Here the main thread sends words to a coroutine (thread -> coroutine); the coroutine answers
// each with its length (coroutine -> thread).

#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/task.hpp>

#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace {

// The coroutine: receives until the thread closes the words channel, answers each word. It
// owns its handles (parameters by value), so its answers channel closes when it ends.
spindle::task<int> measure(spindle::receiver<std::string> words,
                           spindle::sender<std::size_t> lengths) {
  int answered = 0;
  for (;;) {
    // Suspended, holding no worker, until the thread sends or closes.
    auto word = co_await words.async_recv();
    if (!word) {
      break;  // closed and drained: the thread has nothing more
    }
    // Suspended while the thread has not taken the previous answer (capacity 1).
    auto sent = co_await lengths.async_send(word->size());
    if (!sent) {
      break;  // the thread stopped listening
    }
    ++answered;
  }
  co_return answered;
}

}  // namespace

int main() {
  spindle::executor ex{1};  // one worker is enough: a waiting coroutine holds none
  auto [words_tx, words_rx] = spindle::bounded<std::string>(1);
  auto [lengths_tx, lengths_rx] = spindle::bounded<std::size_t>(1);

  auto handle = ex.spawn(measure(std::move(words_rx), std::move(lengths_tx)));

  std::vector<std::string> const words{"spindle", "thread", "coroutine", "channel"};
  int failures = 0;
  for (auto const& w : words) {
    // thread -> coroutine: blocks while the channel is full.
    if (!words_tx.send(w)) {
      ++failures;
      break;
    }
    // coroutine -> thread: blocks until the coroutine has answered.
    auto length = lengths_rx.recv();
    std::printf("%-10s %zu\n", w.c_str(), length.value_or(0));
    if (!length || *length != w.size()) {
      ++failures;
    }
  }
  words_tx.close();  // the coroutine's async_recv returns nullopt once drained

  int const answered = handle.join();
  failures += answered == static_cast<int>(words.size()) ? 0 : 1;
  std::printf("%s\n", failures == 0 ? "all good" : "something went wrong");
  return failures == 0 ? 0 : 1;
}

// A two-stage pipeline with one thread per stage: a reader splits text into words and a
// counter tallies them. With exactly one sending and one receiving thread, bounded_spsc is the
// channel to use: its handles are move-only, so each stage owns its end, and a message costs
// no locked instruction. Everything else is a channel's: the receiver blocks while the ring is
// empty, the reader blocks while it is full, and dropping the sender closes the channel once
// the counter has drained it.

#include <spindle/channel.hpp>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

int main() {
  std::string const text =
      "the quick brown fox jumps over the lazy dog the dog sleeps the fox runs";

  auto [words_tx, words_rx] = spindle::bounded_spsc<std::string>(8);

  // The reader takes the sender by move: no other thread can send on this channel.
  std::jthread reader([tx = std::move(words_tx), &text]() mutable {
    std::istringstream in(text);
    std::string word;
    while (in >> word) {
      if (auto r = tx.send(std::move(word)); !r) {
        return;  // the counter is gone; r.value holds the word
      }
    }
  });  // the sender dies with the reader: the channel closes once drained

  // The counter is this thread: it owns the receiver and iterates until the channel is closed.
  std::map<std::string, int> counts;
  int total = 0;
  for (auto word : words_rx) {
    ++counts[word];
    ++total;
  }
  reader.join();

  for (auto const& [word, n] : counts) {
    std::printf("%-6s %d\n", word.c_str(), n);
  }
  std::printf("%d words, %zu distinct\n", total, counts.size());
  return total == 15 && counts["the"] == 4 ? 0 : 1;
}

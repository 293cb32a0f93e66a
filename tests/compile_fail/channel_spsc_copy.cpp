// expect-error: (use of deleted function|call to deleted constructor)[^@]*spsc_sender
// A single-producer channel has exactly one sender: spindle::spsc_sender deletes its copy
// constructor, so a second sender cannot be made by copying. (A copy made through sender<T>&
// compiles, and aborts when it runs: channel_spsc_misuse_test.cpp.)
#include <spindle/channel.hpp>

int main() {
  auto channel = spindle::bounded_spsc<int>(4);
  auto copy = channel.first;
  static_cast<void>(copy);
}

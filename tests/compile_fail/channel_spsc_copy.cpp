// expect-error: (use of deleted function|call to deleted constructor)[^@]*spsc_sender
// A single-producer channel has exactly one sender: spindle::spsc_sender deletes its copy
// constructor, so a second sender cannot be made by copying (nor through its base:
// channel_spsc_copy_through_base.cpp).
#include <spindle/channel.hpp>

int main() {
  auto channel = spindle::bounded_spsc<int>(4);
  auto copy = channel.first;
  static_cast<void>(copy);
}

// expect-error: (use of deleted function|call to deleted constructor)[^@]*spsc_receiver
// A single-consumer channel has exactly one receiver: spindle::spsc_receiver deletes its copy
// constructor, so a second receiver cannot be made by copying.
#include <spindle/channel.hpp>

int main() {
  auto channel = spindle::bounded_spsc<int>(4);
  auto copy = channel.second;
  static_cast<void>(copy);
}

// expect-error: basic_sender\(const[^@]*is protected|protected constructor[^@]*basic_sender
// An spsc_sender is a basic_sender<T>, the reference type that select's on_send and the
// functions that send take; the base's copy constructor is protected, so a copy of the one
// sender cannot be made through that reference either (it compiled, and aborted at run time,
// while spsc_sender derived from the copyable sender<T>).
#include <spindle/channel.hpp>

int main() {
  auto [tx, rx] = spindle::bounded_spsc<int>(4);
  spindle::basic_sender<int>& base = tx;
  auto copy = base;
  static_cast<void>(copy);
}

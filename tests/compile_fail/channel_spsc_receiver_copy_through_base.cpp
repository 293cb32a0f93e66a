// expect-error: basic_receiver\(const[^@]*is protected|protected constructor[^@]*basic_receiver
// An spsc_receiver is a basic_receiver<T>, the reference type that select's on_recv and the
// functions that receive take; the base's copy constructor is protected, so a second receiver
// of a single-consumer channel cannot be made through that reference.
#include <spindle/channel.hpp>

int main() {
  auto [tx, rx] = spindle::bounded_spsc<int>(4);
  spindle::basic_receiver<int>& base = rx;
  auto copy = base;
  static_cast<void>(copy);
}

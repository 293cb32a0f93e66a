// expect-error: basic_sender<T>::operator=[^@]*protected|operator=. is a protected[^@]*basic_sender
// Assigning through a basic_sender<T>& would copy one handle over another: an spsc_sender
// onto a plain sender gives the single-producer channel a second sender, and a plain sender
// onto an spsc_sender makes a move-only handle of a copyable channel. The base's assignment is
// protected, so neither compiles.
#include <spindle/channel.hpp>

int main() {
  auto [tx, rx] = spindle::bounded_spsc<int>(4);
  auto [other_tx, other_rx] = spindle::bounded<int>(4);
  spindle::basic_sender<int>& base = other_tx;
  base = tx;
}

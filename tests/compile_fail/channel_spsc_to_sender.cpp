// expect-error: (could not convert|no known conversion from)[^@]*spsc_sender<int>[^@]*sender<int>
// An spsc_sender is not a sender<T>: a function that takes a (copyable) sender<T> could copy
// it, so passing the one sender of a single-producer channel to it does not compile. Take a
// basic_sender<T>& to accept both kinds of handle.
#include <spindle/channel.hpp>

void send_one(spindle::sender<int> tx) {
  static_cast<void>(tx.try_send(1));
}

int main() {
  auto [tx, rx] = spindle::bounded_spsc<int>(4);
  send_one(tx);
}

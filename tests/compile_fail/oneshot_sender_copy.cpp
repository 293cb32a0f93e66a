// expect-error: (use of deleted function|call to deleted constructor)[^@]*oneshot_sender
// A oneshot sends at most one value: spindle::oneshot_sender is move-only, so a second sender
// that could send another value cannot be made by copying.
#include <spindle/oneshot.hpp>

int main() {
  auto pair = spindle::oneshot<int>();
  auto copy = pair.first;
  static_cast<void>(copy);
}

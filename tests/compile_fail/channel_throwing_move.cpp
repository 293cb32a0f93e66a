// expect-error: is_nothrow_move_constructible
// A channel claims a slot before the value moves in, so a move that may throw would leave a
// claimed slot that no value fills: spindle::transferable rejects such types.
#include <spindle/channel.hpp>

struct throwing_move {
  throwing_move() = default;
  throwing_move(throwing_move&&) noexcept(false) {}
};

int main() {
  auto channel = spindle::bounded<throwing_move>(4);
  static_cast<void>(channel);
}

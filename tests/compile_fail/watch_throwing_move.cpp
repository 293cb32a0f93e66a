// expect-error: is_nothrow_move_constructible
// A watch replaces its value in place under the lock, destroying the old one and moving the new
// one in: a move that may throw would leave no value at all, so spindle::transferable rejects
// such types.
#include <spindle/watch.hpp>

struct throwing_move {
  throwing_move() = default;
  throwing_move(throwing_move&&) noexcept(false) {}
};

int main() {
  auto w = spindle::watch(throwing_move{});
  static_cast<void>(w);
}

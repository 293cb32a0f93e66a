// expect-error: transferable
// Each value is destroyed exactly once, possibly by the channel while it discards what is
// buffered; a destructor that may throw would leak the rest: spindle::transferable rejects it
// (its nothrow-move clause already fails, since a move constructor expression destroys too).
#include <spindle/channel.hpp>

struct throwing_destructor {
  throwing_destructor() = default;
  throwing_destructor(throwing_destructor&&) noexcept = default;
  ~throwing_destructor() noexcept(false) {}
};

int main() {
  auto channel = spindle::unbounded<throwing_destructor>();
  static_cast<void>(channel);
}

// expect-error: is_object
// A channel carries objects, not references: spindle::transferable requires an object type.
#include <spindle/channel.hpp>

int main() {
  auto channel = spindle::bounded<int&>(4);
  static_cast<void>(channel);
}
